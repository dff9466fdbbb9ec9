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

from governance.telemetry._config import TelemetryConfig, TelemetryConfigError, telemetry_config
from governance.telemetry._records import TurnRecord
from governance.telemetry._telemetry import INSTALL_HINT, Telemetry

__all__ = [
    "INSTALL_HINT",
    "Telemetry",
    "TelemetryConfig",
    "TelemetryConfigError",
    "TurnRecord",
    "telemetry_config",
]
