"""`proctor ask --json` prints the run redacted, secrets inside a model's JSON-escaped tool-call
arguments included (the redactor only sees them once the JSON text is decoded)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness.cli._app import cli

ESCAPED = '{"path": "notes/AKIA\\u0049OSFODNN7EXAMPLE.txt"}'
DECODED = "AKIAIOSFODNN7EXAMPLE"


def _ask_json(tmp_path: Path, raw_args: str) -> str:
    """`proctor ask --json` over a script whose model calls fs.read with `raw_args`; stdout."""
    script = tmp_path / "script.yaml"
    script.write_text(
        json.dumps([{"calls": [{"tool": "fs.read", "raw_args": raw_args}]}, {"answer": "done"}]),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli,
        ["ask", "read the notes", "--script", str(script), "--json",
         "--state-dir", str(tmp_path / "state"), "--run-id", "r1"],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_a_secret_written_with_json_escapes_is_not_printed(tmp_path: Path) -> None:
    printed = _ask_json(tmp_path, ESCAPED)
    assert DECODED not in printed
    assert "u0049OSFODNN7" not in printed
    assert "[REDACTED" in printed


def test_arguments_with_nothing_to_mask_are_printed_as_the_model_wrote_them(
    tmp_path: Path,
) -> None:
    written = '{"path":   "notes/a.txt"}'  # odd spacing: kept, not re-serialised
    assert json.dumps(written) in _ask_json(tmp_path, written)
