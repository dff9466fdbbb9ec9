"""With no credential the console's agent talks to the bundled OpenAI stub over real HTTP,
through the same OpenAI provider a live endpoint uses."""

from __future__ import annotations

import threading

import pytest

from harness._errors import HarnessError
from harness.console._providers import LiveProviders, StubProviders
from tests.unit.harness.console.conftest import Console, wait_for

pytestmark = pytest.mark.slow


def test_a_turn_against_the_bundled_stub_runs_a_governed_call_and_answers(
    console: Console,
) -> None:
    stub = StubProviders()
    try:
        sessions = console.open(stub)
        run_id = sessions.start("list the workspace files", "alice")
        view = wait_for(console, run_id, {"completed", "blocked", "failed", "provider_error"})
        assert view["status"] == "completed", view["final_answer"]
        models = [e for e in view["events"] if e["name"] == "model.turn"]
        assert models[0]["data"]["tool_calls"][0]["name"] == "fs.list"
        assert "execution.completed" in [e["name"] for e in view["events"]]
        assert view["final_answer"]
        spec = console.gateway.state_dir / "runs" / f"{run_id}.json"
        assert '"api_key"' not in spec.read_text(encoding="utf-8")
    finally:
        stub.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("openai-stub")]
    with pytest.raises(HarnessError, match="stopped"):
        stub()


def test_the_live_provider_without_a_credential_is_refused_with_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    for name in ("PROCTOR_LLM_API_KEY", "PROCTOR_LLM_BASE_URL", "PROCTOR_LLM_MODEL",
                 "OPENAI_API_KEY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(str(tmp_path))  # no .env here
    with pytest.raises(HarnessError, match="PROCTOR_LLM_API_KEY"):
        LiveProviders.from_environment()
