"""The OpenTelemetry SDK, set up from a TelemetryConfig: providers of Proctor's own (never the
global ones), OTLP/HTTP exporters given every setting explicitly, and failures reduced to one
warning line. Imported only on the background thread of a started Telemetry."""

from __future__ import annotations

# The SDK imports it lazily while building providers, and it registers fork hooks as it loads:
# loaded here (by Telemetry.start, on the caller's thread), never in the middle of a fork.
import concurrent.futures.thread  # noqa: F401
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from governance.telemetry import _names as n
from governance.telemetry._config import TelemetryConfig
from governance.telemetry._metrics import Instruments
from governance.telemetry._records import Record
from governance.telemetry._spans import RunIds, SpanBuilder
from governance.telemetry._warning import warn_once


class Telemetry(Protocol):
    """What the exporting side reads of governance.telemetry.Telemetry."""

    config: TelemetryConfig
    service_role: str

    def pending_readers(self) -> list[Callable[[], int]]: ...

    def budget_readers(self) -> list[Callable[[], Iterable[tuple[str, str, int]]]]: ...


# The SDK's loggers report every failed batch; Proctor reports the first failure once, itself.
_SDK_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk")
_COMPRESSION = {"none": Compression.NoCompression, "gzip": Compression.Gzip,
                "deflate": Compression.Deflate}  # fmt: skip
# Per thread: the SDK's last complaint (for the one warning line), and whether the thread is
# doing Proctor's export right now (`own`).
_last_problem = threading.local()
_T = TypeVar("_T")


class _DropOwnRecords(logging.Filter):
    """Drops only the records Proctor's own export produces (keeping the last one's text), so an
    embedding application's OpenTelemetry logging reaches its handlers untouched: no logger's
    propagate or level is changed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(_last_problem, "own", False):
            return True
        if record.levelno >= logging.WARNING:
            try:
                _last_problem.text = record.getMessage().splitlines()[0]
            except Exception:
                _last_problem.text = record.msg if isinstance(record.msg, str) else "unknown error"
        return False


_FILTER = _DropOwnRecords()


def _filter_sdk_loggers() -> None:
    """A logger's filters see only the records logged on it (not its children's), so the filter
    goes on every SDK logger that exists once the exporters are imported: they are module-level."""
    names = [
        name
        for name in list(logging.Logger.manager.loggerDict)
        if any(name == root or name.startswith(root + ".") for root in _SDK_LOGGERS)
    ]
    for name in (*_SDK_LOGGERS, *names):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


@contextmanager
def _own_export() -> Iterator[None]:
    """Marks this thread as doing Proctor's export, for the filter above."""
    outer = getattr(_last_problem, "own", False)
    _last_problem.own = True
    try:
        yield
    finally:
        _last_problem.own = outer


def _problem(default: str) -> str:
    text = getattr(_last_problem, "text", None)
    _last_problem.text = None
    return text or default


class _SpanExporter(OTLPSpanExporter):
    def __init__(self, telemetry: Telemetry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._telemetry = telemetry

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            with _own_export():
                result = super().export(spans)
        except Exception as exc:
            result, _last_problem.text = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        if result is not SpanExportResult.SUCCESS:
            _warn(self._telemetry, _problem(f"spans to {self._endpoint}"))
        return result


class _MetricExporter(OTLPMetricExporter):
    def __init__(self, telemetry: Telemetry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._telemetry = telemetry

    def export(
        self, metrics_data: MetricsData, timeout_millis: float | None = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        try:
            with _own_export():
                result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:
            result, _last_problem.text = MetricExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        if result is not MetricExportResult.SUCCESS:
            _warn(self._telemetry, _problem(f"metrics to {self._endpoint}"))
        return result


def _warn(telemetry: Telemetry, problem: str) -> None:
    """The warning, with every configured header value scrubbed out (an exception's text may
    quote one, and header values are credentials)."""
    config = telemetry.config
    values = [
        value
        for headers in (config.headers, config.traces_headers or (), config.metrics_headers or ())
        for _, value in headers
    ]
    warn_once(telemetry, problem, secrets=values)


class Exporting:
    """The providers and the span builder of one Telemetry (one process)."""

    def __init__(self, telemetry: Telemetry) -> None:
        config = telemetry.config
        _filter_sdk_loggers()
        resource = Resource.create(
            {
                **dict(config.resource_attributes),
                "service.name": config.service_name,
                n.ROLE: telemetry.service_role,
            }
        )
        span_exporter = _SpanExporter(
            telemetry,
            endpoint=config.traces_endpoint,
            headers=dict(_either(config.traces_headers, config.headers)),
            timeout=_either(config.traces_timeout_seconds, config.timeout_seconds),
            compression=_COMPRESSION[_either(config.traces_compression, config.compression)],
        )
        metric_exporter = _MetricExporter(
            telemetry,
            endpoint=config.metrics_endpoint,
            headers=dict(_either(config.metrics_headers, config.headers)),
            timeout=_either(config.metrics_timeout_seconds, config.timeout_seconds),
            compression=_COMPRESSION[_either(config.metrics_compression, config.compression)],
        )
        self.ids = RunIds()
        self.tracer_provider = TracerProvider(
            resource=resource, id_generator=self.ids, shutdown_on_exit=False
        )
        if config.traces:
            self.tracer_provider.add_span_processor(
                BatchSpanProcessor(
                    span_exporter,
                    max_queue_size=config.max_queue_size,
                    schedule_delay_millis=config.schedule_delay_ms,
                    max_export_batch_size=min(config.max_export_batch_size, config.max_queue_size),
                    export_timeout_millis=config.export_timeout_ms,
                )
            )
        readers = (
            [
                PeriodicExportingMetricReader(
                    metric_exporter, export_interval_millis=config.metric_export_interval_ms
                )
            ]
            if config.metrics
            else []
        )
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=readers, shutdown_on_exit=False
        )
        meter = self.meter_provider.get_meter(n.INSTRUMENTATION_SCOPE)
        self.instruments = Instruments(
            meter,
            pending=lambda options: _pending(telemetry, options),
            budgets=lambda options: _budgets(telemetry, options),
        )
        tracer = self.tracer_provider.get_tracer(n.INSTRUMENTATION_SCOPE)
        self.builder = SpanBuilder(tracer, self.ids, self.instruments, telemetry.service_role)

    def handle(self, record: Record) -> None:
        with _own_export():  # a full SDK queue complains here, on Proctor's thread
            self.builder.handle(record)

    def settle(self) -> None:
        """The queue is drained: end the spans that wait on a record that did not come."""
        with _own_export():
            self.builder.settle()

    def finish(self) -> None:
        """End what is still open, then flush and stop the providers (the final metrics go
        out here too)."""
        with _own_export():
            try:
                self.builder.close()
            finally:
                self.tracer_provider.shutdown()
                self.meter_provider.shutdown()


def _either(specific: _T | None, general: _T) -> _T:
    return general if specific is None else specific


def start_exporting(telemetry: Telemetry) -> Exporting:
    return Exporting(telemetry)


def _pending(telemetry: Telemetry, options: CallbackOptions) -> Iterable[Observation]:
    total = 0
    seen = False
    for reader in telemetry.pending_readers():
        try:
            total += reader()
            seen = True
        except Exception:  # a closed or failing store: no reading this time
            continue
    return [Observation(total)] if seen else []


def _budgets(telemetry: Telemetry, options: CallbackOptions) -> Iterable[Observation]:
    highest: dict[tuple[str, str], int] = {}
    for reader in telemetry.budget_readers():
        try:
            rows = list(reader())
        except Exception:
            continue
        for budget_id, scope, used in rows:
            key = (budget_id, scope)
            highest[key] = max(highest.get(key, 0), used)
    return [
        Observation(used, {n.BUDGET_ID: budget_id, n.BUDGET_SCOPE: scope})
        for (budget_id, scope), used in sorted(highest.items())
    ]
