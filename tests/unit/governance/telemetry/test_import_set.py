"""OpenTelemetry is loaded only when export is switched on: importing governance, building a
gateway and governing calls without telemetry, or reading the telemetry config, import none of
it (each case in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

GOVERNED_CALL = """
import sys, tempfile
from pathlib import Path
import governance
from governance import Gateway, Principal, ToolCall
import governance.telemetry
from governance.telemetry import telemetry_config

where = Path(tempfile.mkdtemp())
(where / "policy.yaml").write_text(
    "version: 1\\ndefaults: {unknown_tool: block, no_match: block}\\n"
    "rules:\\n  - {id: r, effect: allow, match: {tool: fs.read}}\\n"
)
with Gateway(state_dir=where / "state", policy_path=where / "policy.yaml") as gateway:
    gateway.firewall.record_run_event("r1", "run.started", {})
    call = ToolCall("c1", "fs.read", {"path": "notes/todo.md"}, "r1", Principal("a", "b", "c"))
    gateway.firewall.call(call)
assert telemetry_config(flag=True, environ={}) is not None
{start}
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
"""


def _loaded(start: str = "") -> list[str]:
    probe = GOVERNED_CALL.replace("{start}", start)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: list[str] = eval(done.stdout)  # a printed list of module names
    return loaded


def test_governing_calls_without_telemetry_imports_no_opentelemetry() -> None:
    assert _loaded() == []


def test_starting_telemetry_is_what_loads_the_sdk() -> None:
    start = "from governance.telemetry import Telemetry\n" + (
        "Telemetry.start(telemetry_config(flag=True, environ={}), service_role='ask')"
    )
    loaded = _loaded(start)
    assert "opentelemetry.sdk.trace" in loaded
    assert "opentelemetry.exporter.otlp.proto.http.trace_exporter" in loaded
