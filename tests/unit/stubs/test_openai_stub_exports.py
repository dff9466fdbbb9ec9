"""The vendor stub's public surface changes only on purpose."""

from __future__ import annotations

import stubs.openai_stub


def test_the_vendor_stub_exports_exactly_the_curated_names() -> None:
    assert sorted(stubs.openai_stub.__all__) == sorted(
        [
            "CREATED", "DEFAULT_MODEL", "DELAY_HEADER", "FAULTS", "FAULT_HEADER", "Fault",
            "STUB_PORT",
            "StubError", "StubStartError", "VendorError", "create_app", "model_variants",
            "run_stub", "running_stub",
        ]
    )  # fmt: skip
    missing = [name for name in stubs.openai_stub.__all__ if not hasattr(stubs.openai_stub, name)]
    assert missing == []
