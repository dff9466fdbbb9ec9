"""An OpenAI-compatible vendor stub: strict like a real vendor, deterministic, faults on demand.

`proctor stub` serves it; tests use `running_stub()` (real loopback HTTP) or `create_app()`
(in-process ASGI). No credential, no network: any non-empty bearer key is accepted.
"""

from __future__ import annotations

from stubs.openai_stub._app import DEFAULT_MODEL, create_app
from stubs.openai_stub._errors import StubError, StubStartError, VendorError
from stubs.openai_stub._faults import DELAY_HEADER, FAULT_HEADER, FAULTS, Fault, model_variants
from stubs.openai_stub._server import STUB_PORT, run_stub, running_stub
from stubs.openai_stub._wire import CREATED

__all__ = [
    "CREATED",
    "DEFAULT_MODEL",
    "DELAY_HEADER",
    "FAULTS",
    "FAULT_HEADER",
    "STUB_PORT",
    "Fault",
    "StubError",
    "StubStartError",
    "VendorError",
    "create_app",
    "model_variants",
    "run_stub",
    "running_stub",
]
