"""OpenTelemetry export of runs, model turns, tool calls and decisions (`--otel`,
PROCTOR_OTEL_ENDPOINT; the `otel` extra).

One span per drive of an agent run (`invoke_agent proctor`), with a child per model turn
(`chat <model>`) and per governed call (`execute_tool <tool>`), named as the OpenTelemetry
GenAI semantic conventions name them; the governance facts (decision, rule ids, reason,
approval, budget, arguments digest, outcome) as `proctor.*` attributes. Metrics: decisions by
effect and reason, pending approval requests, budget usage, decision latency, and the GenAI
client duration and token histograms. Every span of a run shares a trace id derived from the
run id, across processes.

Importing this package imports no OpenTelemetry: `telemetry_config` is pure, and only
`Telemetry.start` loads the SDK. Export never changes a call: the hot path appends to a
bounded queue and a background thread does the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core._lazy import lazy_attributes

if TYPE_CHECKING:
    from governance.telemetry._config import (
        TelemetryConfig,
        TelemetryConfigError,
        telemetry_config,
    )
    from governance.telemetry._records import TurnRecord
    from governance.telemetry._telemetry import INSTALL_HINT, Telemetry

# Each name loads its module on first use: a command without --otel asks only whether export
# is on (`telemetry_config`) and never pays for the queue, the records or the warning.
__getattr__ = lazy_attributes(
    globals(),
    {
        "INSTALL_HINT": "governance.telemetry._telemetry",
        "Telemetry": "governance.telemetry._telemetry",
        "TelemetryConfig": "governance.telemetry._config",
        "TelemetryConfigError": "governance.telemetry._config",
        "TurnRecord": "governance.telemetry._records",
        "telemetry_config": "governance.telemetry._config",
    },
)

__all__ = [
    "INSTALL_HINT",
    "Telemetry",
    "TelemetryConfig",
    "TelemetryConfigError",
    "TurnRecord",
    "telemetry_config",
]
