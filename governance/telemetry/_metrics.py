"""Proctor's metric instruments (meter `proctor`) and what each one records."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from governance.telemetry import _names as n

Callback = Callable[[CallbackOptions], Iterable[Observation]]


class Instruments:
    """Counters and histograms fed by the span builder; the two gauges read the gateway's stores
    (through the callbacks) at each collection."""

    def __init__(self, meter: Meter, *, pending: Callback, budgets: Callback) -> None:
        self.decisions = meter.create_counter(
            n.METRIC_DECISIONS,
            unit="{decision}",
            description="Firewall decisions on tool calls, by effect and reason",
        )
        self.decision_duration = meter.create_histogram(
            n.METRIC_DECISION_DURATION,
            unit="s",
            description="From a call's tool.requested to its policy decision",
            explicit_bucket_boundaries_advisory=list(n.DECISION_DURATION_BUCKETS),
        )
        self.operation_duration = meter.create_histogram(
            n.METRIC_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration (one model turn)",
            explicit_bucket_boundaries_advisory=list(n.OPERATION_DURATION_BUCKETS),
        )
        self.token_usage = meter.create_histogram(
            n.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used (one model turn)",
            explicit_bucket_boundaries_advisory=list(n.TOKEN_USAGE_BUCKETS),
        )
        meter.create_observable_gauge(
            n.METRIC_APPROVALS_PENDING,
            callbacks=[pending],
            unit="{request}",
            description="Approval requests in status pending in the gateway's approval store",
        )
        meter.create_observable_gauge(
            n.METRIC_BUDGET_USAGE,
            callbacks=[budgets],
            unit="{action}",
            description="Per budget and scope: the most any one key has used in its window",
        )

    def decided(self, effect: str, reason: str) -> None:
        self.decisions.add(1, {n.DECISION_EFFECT: effect, n.DECISION_REASON: reason})
