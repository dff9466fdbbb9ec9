"""Whether to export, and where: `--otel` and the environment, read once into a frozen value.

Pure: imports no OpenTelemetry and reads no environment of its own (the caller hands it one), so
the CLI can reject a bad variable as a usage error before anything starts. The variables are the
standard OTLP exporter ones, resolved the way the Python SDK resolves them (signal-specific
before general; the timeout in seconds, as that SDK reads it), plus `PROCTOR_OTEL_ENDPOINT`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar
from urllib.parse import unquote, urlsplit

ENDPOINT_ENV = "PROCTOR_OTEL_ENDPOINT"
DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_SERVICE_NAME = "proctor"
PROTOCOL = "http/protobuf"
# Events waiting for the background thread; past this they are dropped and counted.
DEFAULT_QUEUE_LIMIT = 16_384
# Bounds on numeric variables: past these a value is a typo (or `inf`), not a setting.
MAX_TIMEOUT_SECONDS = 3_600.0
MAX_WHOLE = 2**31 - 1
# RFC 9110 token characters: what an HTTP client accepts as a header name.
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

_Number = TypeVar("_Number", int, float)

Compression = Literal["none", "gzip", "deflate"]


class TelemetryConfigError(ValueError):
    """A telemetry variable is wrong: a usage error. The message names the variable (never its
    value when it may hold a credential, as headers do)."""


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    """Where and how to export, fully resolved (no environment is read after this)."""

    traces_endpoint: str
    metrics_endpoint: str
    headers: tuple[tuple[str, str], ...] = ()
    traces_headers: tuple[tuple[str, str], ...] | None = None
    metrics_headers: tuple[tuple[str, str], ...] | None = None
    timeout_seconds: float = 10.0
    compression: Compression = "none"
    # Per signal, resolved signal-specific first; None: the general value above.
    traces_timeout_seconds: float | None = None
    metrics_timeout_seconds: float | None = None
    traces_compression: Compression | None = None
    metrics_compression: Compression | None = None
    service_name: str = DEFAULT_SERVICE_NAME
    resource_attributes: tuple[tuple[str, str], ...] = ()
    schedule_delay_ms: int = 5_000
    max_queue_size: int = 2_048
    max_export_batch_size: int = 512
    export_timeout_ms: int = 30_000
    metric_export_interval_ms: int = 60_000
    queue_limit: int = DEFAULT_QUEUE_LIMIT
    traces: bool = True  # OTEL_TRACES_EXPORTER=none: metrics only
    metrics: bool = True  # OTEL_METRICS_EXPORTER=none: traces only (a traces-only backend)


def telemetry_config(*, flag: bool, environ: Mapping[str, str]) -> TelemetryConfig | None:
    """None when export is off: neither `--otel` (`flag`) nor PROCTOR_OTEL_ENDPOINT asks for
    it, or OTEL_SDK_DISABLED=true. Raises TelemetryConfigError naming a bad variable."""
    base = environ.get(ENDPOINT_ENV, "").strip()
    if not (flag or base):
        return None
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    for name in (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ):
        value = environ.get(name, "").strip()
        if value and value != PROTOCOL:
            raise TelemetryConfigError(
                f"{name}={value!r} is not supported: Proctor exports OTLP over HTTP only "
                f"({PROTOCOL}); unset it or set it to {PROTOCOL}"
            )
    traces = _exporter(environ, "OTEL_TRACES_EXPORTER")
    metrics = _exporter(environ, "OTEL_METRICS_EXPORTER")
    if not (traces or metrics):
        return None
    if base:
        general, general_name = base, ENDPOINT_ENV
    else:
        general_name = "OTEL_EXPORTER_OTLP_ENDPOINT"
        general = environ.get(general_name, "").strip() or DEFAULT_ENDPOINT
    _check_url(general_name, general)
    return TelemetryConfig(
        traces_endpoint=_signal_endpoint(environ, "TRACES", general, "v1/traces"),
        metrics_endpoint=_signal_endpoint(environ, "METRICS", general, "v1/metrics"),
        headers=_headers(environ, "OTEL_EXPORTER_OTLP_HEADERS") or (),
        traces_headers=_headers(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
        metrics_headers=_headers(environ, "OTEL_EXPORTER_OTLP_METRICS_HEADERS"),
        timeout_seconds=_timeout(environ, "OTEL_EXPORTER_OTLP_TIMEOUT", 10.0),
        compression=_compression(environ, "OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
        traces_timeout_seconds=_signal_timeout(environ, "TRACES"),
        metrics_timeout_seconds=_signal_timeout(environ, "METRICS"),
        traces_compression=_signal_compression(environ, "TRACES"),
        metrics_compression=_signal_compression(environ, "METRICS"),
        service_name=environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME,
        resource_attributes=_resource_attributes(environ),
        schedule_delay_ms=_whole(environ, "OTEL_BSP_SCHEDULE_DELAY", 5_000),
        max_queue_size=_whole(environ, "OTEL_BSP_MAX_QUEUE_SIZE", 2_048),
        max_export_batch_size=_whole(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
        export_timeout_ms=_whole(environ, "OTEL_BSP_EXPORT_TIMEOUT", 30_000),
        metric_export_interval_ms=_whole(environ, "OTEL_METRIC_EXPORT_INTERVAL", 60_000),
        traces=traces,
        metrics=metrics,
    )


def _exporter(environ: Mapping[str, str], name: str) -> bool:
    """`otlp` (the default) exports the signal, `none` does not; nothing else is offered."""
    value = environ.get(name, "").strip().lower()
    if value in ("", "otlp"):
        return True
    if value == "none":
        return False
    raise TelemetryConfigError(f"{name}={value!r} is not supported: use otlp or none")


def _signal_endpoint(environ: Mapping[str, str], signal: str, general: str, path: str) -> str:
    """A signal's own variable is its full URL; else the general base URL with `/v1/<signal>`."""
    name = f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"
    own = environ.get(name, "").strip()
    if own:
        _check_url(name, own)
        return own
    return f"{general.removesuffix('/')}/{path}"


def _check_url(name: str, url: str) -> None:
    """The message shows scheme://host only: the URL may carry a password or a token."""
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        scheme, host = "", None
    if scheme not in ("http", "https") or not host:
        shown = f"{scheme or '?'}://{host or '?'}"
        raise TelemetryConfigError(
            f"{name} ({shown}, rest not shown) is not an http(s) URL with a host "
            f"(e.g. {DEFAULT_ENDPOINT})"
        )


def _headers(environ: Mapping[str, str], name: str) -> tuple[tuple[str, str], ...] | None:
    """`key=value,key2=value2` (values URL-encoded), as the OTLP exporter variables spell them."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    pairs: list[tuple[str, str]] = []
    for position, item in enumerate(raw.split(","), start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # Never echo the entry: a header value is often a credential.
            raise TelemetryConfigError(
                f"{name}: entry {position} is not key=value (comma-separated, URL-encoded values)"
            )
        header = (unquote(key.strip()).lower(), unquote(value.strip()))
        if not _sendable(*header):
            # Checked after decoding (`%0D%0A` is CR LF): an HTTP client refuses such a header
            # and quotes it in its error. The entry is not echoed, for the same reason as above.
            raise TelemetryConfigError(
                f"{name}: entry {position} decodes to a header no HTTP client can send (a name "
                "that is not a token, or a control character such as CR or LF)"
            )
        pairs.append(header)
    return tuple(pairs)


def _sendable(key: str, value: str) -> bool:
    return set(key) <= _TOKEN and not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value)


def _numeric(
    environ: Mapping[str, str],
    name: str,
    default: _Number,
    parse: Callable[[str], _Number],
    *,
    most: _Number,
    kind: str,
) -> _Number:
    """Every numeric variable is read here: any value that does not parse, or falls outside
    (0, most], is a usage error naming the variable, never a crash."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
        accepted = 0 < value <= most
    except (ValueError, ArithmeticError):
        accepted = False
    if not accepted:
        raise TelemetryConfigError(f"{name}={raw!r} must be a {kind} above 0 and at most {most}")
    return value


def _ascii_whole(raw: str) -> int:
    # int() also reads other scripts' digits (`٣`); str.isdigit() also passes `²`, which int()
    # refuses. Only ASCII digits are a whole number here.
    if not (raw.isascii() and raw.isdigit()):
        raise ValueError(raw)
    return int(raw)


def _finite(raw: str) -> float:
    value = float(raw)  # `1e400` parses, to inf
    if not math.isfinite(value):
        raise ValueError(raw)
    return value


def _whole(environ: Mapping[str, str], name: str, default: int) -> int:
    return _numeric(environ, name, default, _ascii_whole, most=MAX_WHOLE, kind="whole number")


def _timeout(environ: Mapping[str, str], name: str, default: float) -> float:
    return _numeric(
        environ, name, default, _finite, most=MAX_TIMEOUT_SECONDS, kind="finite number of seconds"
    )


def _signal_timeout(environ: Mapping[str, str], signal: str) -> float:
    general = _timeout(environ, "OTEL_EXPORTER_OTLP_TIMEOUT", 10.0)
    return _timeout(environ, f"OTEL_EXPORTER_OTLP_{signal}_TIMEOUT", general)


def _signal_compression(environ: Mapping[str, str], signal: str) -> Compression:
    general = _compression(environ, "OTEL_EXPORTER_OTLP_COMPRESSION", "none")
    return _compression(environ, f"OTEL_EXPORTER_OTLP_{signal}_COMPRESSION", general)


def _compression(environ: Mapping[str, str], name: str, default: Compression) -> Compression:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw == "gzip":
        return "gzip"
    if raw == "deflate":
        return "deflate"
    if raw == "none":
        return "none"
    raise TelemetryConfigError(f"{name}={raw!r} must be gzip, deflate or none")


def _resource_attributes(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    raw = environ.get("OTEL_RESOURCE_ATTRIBUTES", "").strip()
    pairs: list[tuple[str, str]] = []
    for position, item in enumerate(raw.split(",") if raw else [], start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TelemetryConfigError(
                f"OTEL_RESOURCE_ATTRIBUTES: entry {position} is not key=value"
            )
        pairs.append((unquote(key.strip()), unquote(value.strip())))
    return tuple(pairs)
