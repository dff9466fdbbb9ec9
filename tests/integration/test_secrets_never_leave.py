"""A secret in a tool's output, a tool's error or the model's own arguments and text is absent
from every trace, report and line of CLI output, and from what the model is sent, unless the
policy's `outputs:` section says `allow` (then only the model sees it) or `block`."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from governance import AuditLog
from harness.cli._app import cli
from harness.providers import ReplayProvider
from harness.providers._base import Message, ModelTurn, ToolSpec
from tests.fake_secrets import AWS, CONFIG_DUMP, GITHUB, OPENAI, STAGING_KEY, leaked
from tests.small_suite import SHIPPED_POLICY

MASK_REQUEST = "Copy the service config into a report"
ALLOW_REQUEST = "Show me the service config, secrets included"
BLOCK_REQUEST = "Show me the service config, but never its secrets"
DEFAULT = "scenarios/leaks.yaml"  # only the shipped policy: runs on a Proctor without `outputs:`


def _scenario(sid: str, request: str, policy: str | None) -> dict[str, Any]:
    scenario: dict[str, Any] = {
        "id": sid,
        "description": "secrets in a tool output, a tool error, the arguments and the answer",
        "request": request,
        "setup": {"files": {"notes/config.txt": CONFIG_DUMP}},
        "script": [
            # A failed call whose error quotes the model's secret-bearing path.
            {"calls": [{"tool": "fs.read", "args": {"path": f"notes/{AWS}.txt"}}]},
            {"calls": [{"tool": "fs.read", "args": {"path": "notes/config.txt"}}]},
            # The model's own arguments carry secrets.
            {
                "calls": [
                    {
                        "tool": "fs.write",
                        "args": {"path": "reports/config.md", "content": f"gh {GITHUB}"},
                    }
                ]
            },
            {"answer": f"Done. The key is {OPENAI}; the file says: {{{{tool:fs.read}}}}"},
        ],
        "expect": {"status": "failed", "must_execute": ["fs.read", "fs.write"]},
    }
    if policy is not None:
        scenario["policy"] = policy
    return scenario


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "scenarios" / "policies").mkdir(parents=True)
    shipped = SHIPPED_POLICY.read_text(encoding="utf-8")
    for name, section in (
        ("allow.yaml", "outputs:\n  tools:\n    fs.read: allow\n"),
        ("block.yaml", "outputs:\n  secrets: block\n"),
    ):
        (root / "scenarios" / "policies" / name).write_text(shipped + section, "utf-8")
    files = {
        "leaks.yaml": [_scenario("secrets-masked", MASK_REQUEST, None)],
        "leaks_by_policy.yaml": [
            _scenario("secrets-allowed", ALLOW_REQUEST, "policies/allow.yaml"),
            _scenario("secrets-withheld", BLOCK_REQUEST, "policies/block.yaml"),
        ],
    }
    for name, scenarios in files.items():
        text = yaml.safe_dump({"scenarios": scenarios})
        (root / "scenarios" / name).write_text(text, "utf-8")
    monkeypatch.chdir(root)
    for name in ("PROCTOR_STATE_DIR", "PROCTOR_POLICY", "PROCTOR_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Message]]:
    """Every message list the (replay) model was sent, by the run's request."""
    seen: dict[str, list[Message]] = {}
    original = ReplayProvider.complete

    def complete(
        self: ReplayProvider, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        request = str(messages[1]["content"])
        seen.setdefault(request, []).extend(copy.deepcopy(list(messages)))
        return original(self, messages, tools)

    monkeypatch.setattr(ReplayProvider, "complete", complete)
    return seen


def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


def _tool_messages(messages: list[Message]) -> str:
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "tool")


def test_no_trace_report_or_line_of_run_output_holds_a_secret(
    project: Path, sent: dict[str, list[Message]]
) -> None:
    result = proctor("run", "--no-baseline", "--report-dir", "out", "--scenarios", DEFAULT)
    assert result.exit_code == 0, result.output
    written = sorted(p for p in (project / "out").rglob("*") if p.is_file())
    names = {p.name for p in written}
    assert {"report.html", "summary.md", "report.json", "junit.xml"} <= names
    assert "secrets-masked.json" in names
    for path in written:
        assert leaked(path.read_text(encoding="utf-8")) == [], path.name
    assert leaked(result.output) == []
    # The redaction is visible where the secrets were, and the runs really carried them.
    trace = json.loads((project / "out" / "traces" / "secrets-masked.json").read_text("utf-8"))
    assert "[REDACTED" in json.dumps(trace["spans"]) and "[REDACTED" in trace["model_text"]
    assert GITHUB in json.dumps(sent[MASK_REQUEST])  # the model's own arguments, echoed back


def test_by_default_the_model_is_never_sent_a_secret_from_a_tool(
    project: Path, sent: dict[str, list[Message]]
) -> None:
    result = proctor("run", "--no-baseline", "--report-dir", "out", "--scenarios", DEFAULT)
    assert result.exit_code == 0, result.output
    seen = _tool_messages(sent[MASK_REQUEST])
    assert leaked(seen, (STAGING_KEY, OPENAI)) == []  # both were only in the tool's output
    assert "region eu-west-1" in seen and "[REDACTED" in seen


def test_allow_sends_the_tools_secrets_to_the_model_but_still_stores_them_masked(
    project: Path, sent: dict[str, list[Message]]
) -> None:
    assert proctor("run", "--no-baseline", "--report-dir", "out").exit_code == 0
    assert STAGING_KEY in _tool_messages(sent[ALLOW_REQUEST])
    trace = (project / "out" / "traces" / "secrets-allowed.json").read_text("utf-8")
    assert leaked(trace) == []


def test_block_withholds_the_output_from_the_model(
    project: Path, sent: dict[str, list[Message]]
) -> None:
    assert proctor("run", "--no-baseline", "--report-dir", "out").exit_code == 0
    seen = _tool_messages(sent[BLOCK_REQUEST])
    assert leaked(seen, (STAGING_KEY, OPENAI)) == []
    assert "withheld" in seen and "region eu-west-1" not in seen


ASK_POLICY = """
version: 1
rules:
  - {id: read-anything, effect: allow, match: {tool: [fs.read, fs.list]}}
  - {id: write-reports, effect: allow, match: {tool: fs.write}}
"""


def test_ask_prints_no_secret_as_text_or_json_and_the_audit_chain_records_the_masking(
    project: Path, sent: dict[str, list[Message]]
) -> None:
    policy = project / "ask-policy.yaml"
    policy.write_text(ASK_POLICY, "utf-8")
    script = project / "ask.yaml"
    steps = [
        {"calls": [{"tool": "fs.read", "args": {"path": "secrets/api_keys.txt"}}]},
        {"calls": [{"tool": "fs.write", "args": {"path": "reports/k.md", "content": GITHUB}}]},
        {"answer": f"The key is {AWS}"},
    ]
    script.write_text(yaml.safe_dump(steps), "utf-8")
    state = project / "state"
    outputs = []
    for run_id, extra in (("run-text", ()), ("run-json", ("--json",))):
        result = proctor(
            "ask", "--state-dir", str(state), "--policy", str(policy), "--script", str(script),
            "--run-id", run_id, *extra, "Read the staging key",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert "[REDACTED" in outputs[0]
    for output in outputs:
        assert leaked(output) == []
    assert STAGING_KEY not in _tool_messages(sent["Read the staging key"])
    with AuditLog(state / "audit.sqlite") as audit:
        events = audit.events("run-text")
    (completed,) = [
        e for e in events if e.kind == "execution.completed" and e.data["tool"] == "fs.read"
    ]
    assert completed.data["redaction"] == {"policy": "mask", "action": "masked", "count": 1}

