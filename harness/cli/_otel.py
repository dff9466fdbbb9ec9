"""`--otel` on the commands that drive the governed loop (run, ask, serve, console, smoke)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

OTEL_HELP = (
    "Export runs, model turns, tool calls and decisions as OpenTelemetry traces and metrics "
    "(OTLP over HTTP) to OTEL_EXPORTER_OTLP_ENDPOINT [default http://localhost:4318]: a "
    "collector, Jaeger, Grafana Tempo, Arize Phoenix or Langfuse. PROCTOR_OTEL_ENDPOINT=URL "
    "turns it on without the flag; the other OTEL_* variables apply (OTEL_SDK_DISABLED=true "
    "turns it off). Nothing secret leaves: attributes are redacted as the audit log is, and "
    "arguments and outputs go only as digests, never message text. Decisions, audit, traces "
    "and exit codes are the same with or without it, also with the endpoint down. Needs "
    "pip install 'proctor[otel]'."
)


def otel_option(role: str) -> Callable[[F], F]:
    """Adds `--otel`; the command receives `telemetry` (a `Telemetry`, or None when export is
    off), shut down before its exit code. `role` is the `proctor.role` its spans carry."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def with_export(*args: Any, otel: bool, **kwargs: Any) -> Any:
            from harness._telemetry import exporting, telemetry_plan

            plan = telemetry_plan(flag=otel, environ=os.environ, role=role)
            with exporting(plan) as telemetry:
                return func(*args, telemetry=telemetry, **kwargs)

        option = click.option("--otel", is_flag=True, help=OTEL_HELP)
        return option(with_export)  # type: ignore[return-value]

    return decorate
