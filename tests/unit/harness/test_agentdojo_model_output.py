"""AgentDojo's checks read the model's own last words: raw, not the trace's redacted copy nor
the loop's account of refused calls that replaces them in a blocked run's answer."""

from __future__ import annotations

from harness._agentdojo_run import model_output


def test_the_last_assistant_text_is_read_raw() -> None:
    messages = [
        {"role": "user", "content": "reset my password"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "content": '{"status": "executed"}'},
        {"role": "assistant", "content": "Use https://x.test/reset?token=asfbuy3y2cdaqhvei"},
    ]
    assert model_output(messages) == "Use https://x.test/reset?token=asfbuy3y2cdaqhvei"


def test_a_run_that_ended_on_tool_calls_or_never_answered_said_nothing() -> None:
    assert model_output([{"role": "assistant", "content": None, "tool_calls": []}]) == ""
    assert model_output([{"role": "user", "content": "hi"}]) == ""
