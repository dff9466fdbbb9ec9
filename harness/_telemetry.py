"""OpenTelemetry export for one command: switched on, started once per process, shut down
(flushed, within its timeout) before the command's exit code.

A `-j` worker exports its own spans: it starts an exporter of its own from the same plan (a
picklable value) and flushes it before it exits. The parent's exporter starts no thread until
its first event, and a parent that forks workers records none, so it stays single-threaded.
Nothing here imports opentelemetry; `governance.telemetry` does, and only once started.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness._errors import UsageProblem

if TYPE_CHECKING:
    from governance import Gateway
    from governance.telemetry import Telemetry, TelemetryConfig


@dataclass(frozen=True, slots=True)
class TelemetryPlan:
    """Where to export and as which role (`proctor.role`): a -j worker starts from it."""

    config: TelemetryConfig
    role: str

    @classmethod
    def of(cls, telemetry: Telemetry) -> TelemetryPlan:
        """The plan `telemetry` was started from: another process starts the same export."""
        return cls(telemetry.config, telemetry.service_role)

    def start(self) -> Telemetry:
        """Raises ExtraUnavailable (exit 64, with the install line) without the otel extra."""
        from governance.telemetry import Telemetry

        return Telemetry.start(self.config, service_role=self.role)


def telemetry_plan(*, flag: bool, environ: Mapping[str, str], role: str) -> TelemetryPlan | None:
    """None when export is off (no --otel, no PROCTOR_OTEL_ENDPOINT, or OTEL_SDK_DISABLED);
    a bad OTEL_* variable is a usage error naming it."""
    from governance.telemetry import TelemetryConfigError, telemetry_config

    try:
        config = telemetry_config(flag=flag, environ=environ)
    except TelemetryConfigError as exc:
        raise UsageProblem(str(exc)) from None
    return None if config is None else TelemetryPlan(config, role)


@contextmanager
def exporting(plan: TelemetryPlan | None) -> Iterator[Telemetry | None]:
    """The telemetry for the `with` block, shut down when it ends however it ends (an error,
    Ctrl-C): what was recorded is flushed, bounded by the telemetry's own timeout."""
    if plan is None:
        yield None
        return
    telemetry = plan.start()
    try:
        yield telemetry
    finally:
        telemetry.shutdown()


def observe_scenario(
    telemetry: Telemetry, gateway: Gateway, scenario_id: str, eval_run_id: str
) -> None:
    """Export a scenario's run: its firewall's events, its span labelled with the scenario and
    the suite run (the loop's run id is the scenario id, so that traces are byte-identical from
    run to run).

    The firewall observer only, not `Gateway(telemetry=)`: that also lends the gateway's stores
    to the pending-approvals and budget-usage gauges, and a scenario's stores are a sandbox (a
    budget scenario drives its budget to the limit): a dashboard must not read them as the
    state of real gateways. Decisions, latencies and token usage are exported as ever."""
    gateway.firewall.add_observer(telemetry.observe)
    telemetry.run_attributes(
        scenario_id,
        {"proctor.scenario.id": scenario_id, "proctor.eval.run_id": eval_run_id},
        trace_key=f"{eval_run_id}\0{scenario_id}",  # each suite run (each repeat) its own trace
    )
