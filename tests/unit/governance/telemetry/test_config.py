"""`--otel` and the environment, read into a TelemetryConfig (or None: export off)."""

from __future__ import annotations

import pytest

from governance.telemetry import TelemetryConfigError, telemetry_config


def test_without_the_flag_or_proctors_endpoint_export_is_off() -> None:
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert telemetry_config(flag=False, environ=environ) is None


def test_the_flag_alone_exports_to_the_standard_default_endpoint() -> None:
    config = telemetry_config(flag=True, environ={})
    assert config is not None
    assert config.traces_endpoint == "http://localhost:4318/v1/traces"
    assert config.metrics_endpoint == "http://localhost:4318/v1/metrics"
    assert config.service_name == "proctor"


def test_proctors_endpoint_switches_export_on_and_is_the_base_url() -> None:
    config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": "http://tempo:4318/"})
    assert config is not None
    assert config.traces_endpoint == "http://tempo:4318/v1/traces"
    assert config.metrics_endpoint == "http://tempo:4318/v1/metrics"


def test_with_the_flag_the_standard_variables_decide_signal_specific_first() -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example:4318/base",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://metrics.example/custom/path",
        "OTEL_SERVICE_NAME": "agents-prod",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=ops%20one",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc,x-tenant=t1",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-only=traces",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_METRIC_EXPORT_INTERVAL": "15000",
    }
    config = telemetry_config(flag=True, environ=environ)
    assert config is not None
    assert config.traces_endpoint == "https://otlp.example:4318/base/v1/traces"
    assert config.metrics_endpoint == "https://metrics.example/custom/path"
    assert config.service_name == "agents-prod"
    assert config.resource_attributes == (("deployment.environment", "prod"), ("team", "ops one"))
    assert config.headers == (("authorization", "Bearer abc"), ("x-tenant", "t1"))
    assert config.traces_headers == (("x-only", "traces"),)
    assert config.metrics_headers is None
    assert (config.timeout_seconds, config.compression) == (2.5, "gzip")
    assert (config.schedule_delay_ms, config.metric_export_interval_ms) == (200, 15000)


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("disabled", ["true", "TRUE", " True "])
def test_otel_sdk_disabled_turns_export_off_whatever_asked_for_it(
    flag: bool, disabled: str
) -> None:
    environ = {"PROCTOR_OTEL_ENDPOINT": "http://tempo:4318", "OTEL_SDK_DISABLED": disabled}
    assert telemetry_config(flag=flag, environ=environ) is None


def test_otel_sdk_disabled_false_leaves_export_on() -> None:
    environ = {"OTEL_SDK_DISABLED": "false"}
    assert telemetry_config(flag=True, environ=environ) is not None


@pytest.mark.parametrize(
    "name",
    [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ],
)
@pytest.mark.parametrize("protocol", ["grpc", "http/json"])
def test_a_protocol_other_than_http_protobuf_is_an_error_naming_the_variable(
    name: str, protocol: str
) -> None:
    with pytest.raises(TelemetryConfigError, match=f"^{name}=.*http/protobuf"):
        telemetry_config(flag=True, environ={name: protocol})


def test_http_protobuf_is_accepted_and_a_bad_protocol_is_ignored_while_export_is_off() -> None:
    assert telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert telemetry_config(flag=False, environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is None


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"PROCTOR_OTEL_ENDPOINT": "tempo:4318"}, "PROCTOR_OTEL_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://x"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "-1"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
        ({"OTEL_METRIC_EXPORT_INTERVAL": "1.5"}, "OTEL_METRIC_EXPORT_INTERVAL"),
        ({"OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "novalue"}, "OTEL_RESOURCE_ATTRIBUTES"),
    ],
)
def test_a_bad_variable_is_an_error_naming_it(environ: dict[str, str], named: str) -> None:
    with pytest.raises(TelemetryConfigError, match=f"^{named}"):
        telemetry_config(flag=True, environ=environ)


def test_a_malformed_header_is_named_without_echoing_its_value() -> None:
    environ = {"OTEL_EXPORTER_OTLP_HEADERS": "x-ok=1,Bearer s3cr3t-token-value"}
    with pytest.raises(TelemetryConfigError) as raised:
        telemetry_config(flag=True, environ=environ)
    message = str(raised.value)
    assert message.startswith("OTEL_EXPORTER_OTLP_HEADERS: entry 2")
    assert "s3cr3t" not in message


def test_a_config_error_is_a_value_error_the_cli_reports_as_usage() -> None:
    assert issubclass(TelemetryConfigError, ValueError)


@pytest.mark.parametrize(
    ("environ", "traces", "metrics"),
    [
        ({}, True, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "OTLP"}, True, True),
        ({"OTEL_METRICS_EXPORTER": "none"}, True, False),  # a traces-only backend (Langfuse)
        ({"OTEL_TRACES_EXPORTER": "none"}, False, True),
    ],
)
def test_each_signal_can_be_switched_off_by_its_standard_variable(
    environ: dict[str, str], traces: bool, metrics: bool
) -> None:
    config = telemetry_config(flag=True, environ=environ)
    assert config is not None and (config.traces, config.metrics) == (traces, metrics)


def test_with_both_signals_off_export_is_off() -> None:
    environ = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    assert telemetry_config(flag=True, environ=environ) is None


@pytest.mark.parametrize("name", ["OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"])
def test_an_exporter_other_than_otlp_or_none_is_an_error_naming_the_variable(name: str) -> None:
    with pytest.raises(TelemetryConfigError, match=f"^{name}='zipkin'"):
        telemetry_config(flag=True, environ={name: "zipkin"})
