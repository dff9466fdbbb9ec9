"""a bad OTEL_* value on a governing command exits 64 naming it, never 70."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli


@pytest.fixture(autouse=True)
def no_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PROCTOR_OTEL_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)


def test_a_whole_number_otel_variable_with_a_superscript_digit_exits_64_naming_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps([{"answer": "done"}]), encoding="utf-8")
    args = ["ask", "hi", "--script", str(script), "--state-dir", str(tmp_path / "state"),
            "--run-id", "r1", "--otel"]  # fmt: skip
    result = CliRunner().invoke(cli, args, env={"OTEL_BSP_MAX_QUEUE_SIZE": "²"})
    assert result.exit_code == codes.USAGE, result.output
    assert "OTEL_BSP_MAX_QUEUE_SIZE" in result.stderr
