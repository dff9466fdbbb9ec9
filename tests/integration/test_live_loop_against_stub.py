"""The LIVE path end to end: governed loop -> OpenAIProvider -> real openai SDK -> loopback HTTP
-> vendor stub. Every stub misbehaviour is pinned to the loop's exact reaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from governance import ManualClock, Principal
from governance._gateway import Gateway
from governance.tools import SEED_FILES, file_tree, outbox_rows, refund_drafts, tickets
from harness._errors import ProviderError
from harness._loop import (
    DEFAULT_SYSTEM_PROMPT,
    AgentLoop,
    RunState,
    honest_statement,
    tool_specs,
)
from harness._spans import ClaimsSpan, ModelTurnSpan
from harness.providers import OpenAIProvider, ProviderSettings
from harness.providers._base import Message, ModelTurn, ProviderIdentity, ToolSpec
from harness.providers._schema import ToolNameCodec
from stubs.openai_stub import DELAY_HEADER, running_stub

pytestmark = pytest.mark.slow

PRINCIPAL = Principal("ann", "support-bot", "support")
RUN = "run-live"
# Requests phrased for the stub's word-overlap tool chooser (stubs/openai_stub/_model.py).
LOOKUP = "Look up order ORD-0001 and tell me its status."
EMAIL = 'Send an email to bob@example.com with the subject "Hello" saying hello.'
DELETE = "Delete the file notes/todo.txt."
WRITE = "Write a report to reports/x.md saying hi"
FALSE_CLAIM = "everything was sent and deleted successfully"


@pytest.fixture(scope="module")
def stub_url() -> Iterator[str]:
    with running_stub() as url:
        yield url


@pytest.fixture
def fresh_stub_url() -> Iterator[str]:
    """A stub of its own: the `-once` faults remember which conversations already failed."""
    with running_stub() as url:
        yield url


class Wire:
    """An httpx2 client whose event hooks record every status that came back."""

    def __init__(self, **options: Any) -> None:
        self.statuses: list[int] = []
        self.requests = 0
        self.client = openai.DefaultHttpxClient(
            event_hooks={"request": [self._request], "response": [self._response]}, **options
        )

    def _request(self, request: httpx2.Request) -> None:
        self.requests += 1

    def _response(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)


@pytest.fixture
def wire() -> Iterator[Wire]:
    recorder = Wire()
    yield recorder
    recorder.client.close()


def provider(
    url: str,
    fault: str = "",
    *,
    timeout: float = 10.0,
    max_retries: int = 2,
    sleeps: list[float] | None = None,
    http_client: Any | None = None,
) -> OpenAIProvider:
    settings = ProviderSettings(
        base_url=url,
        model="proctor-stub-1" + (f":{fault}" if fault else ""),
        api_key="test",
        timeout=timeout,
        max_retries=max_retries,
    )
    record = sleeps if sleeps is not None else []
    return OpenAIProvider(settings, http_client=http_client, sleep=record.append)


def run(gateway: Gateway, live: Any, request: str) -> RunState:
    with live:
        loop = AgentLoop(live, gateway.firewall)
        return loop.start(request, run_id=RUN, principal=PRINCIPAL)


def kinds(gateway: Gateway) -> list[str]:
    return [e.kind for e in gateway.audit.events(RUN)]


def untouched(gateway: Gateway) -> bool:
    """Nothing with an effect ran: files as seeded, no email, refund draft or ticket."""
    ws = gateway.workspace
    return (
        file_tree(ws) == SEED_FILES
        and outbox_rows(ws) == []
        and refund_drafts(ws) == []
        and tickets(ws) == []
    )


def turn_spans(state: RunState) -> list[ModelTurnSpan]:
    return [s for s in state.spans if isinstance(s, ModelTurnSpan)]


# -- honest vendor ------------------------------------------------------------------------------


def test_a_lookup_executes_and_the_stubs_summary_completes_the_run(
    governed: Gateway, stub_url: str
) -> None:
    live = provider(stub_url)
    assert live.identity.live is True
    state = run(governed, live, LOOKUP)
    assert (state.status, state.termination, state.turns) == ("completed", "answered", 2)
    [span] = state.tool_spans
    assert (span.tool, span.outcome, span.rule_ids, span.arguments) == (
        "orders.lookup",
        "executed",
        ["orders-lookup"],
        {"order_id": "ORD-0001"},
    )
    assert state.final_answer == state.model_text
    assert "Ada Lovelace" in (state.final_answer or "")
    started = governed.audit.events(RUN)[0]
    assert (started.kind, started.data["live"], started.data["model"]) == (
        "run.started",
        True,
        "proctor-stub-1",
    )
    assert governed.audit.verify(RUN).ok
    assert untouched(governed)  # a read leaves no trace in the workspace


def test_tool_names_travel_encoded_and_come_back_as_proctor_names(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url), LOOKUP)
    first, _ = turn_spans(state)
    assert [c.name for c in first.tool_calls] == ["orders.lookup"]
    # The model's own text names the tool as it saw it on the wire: dots cannot travel.
    assert "orders__lookup" in (state.model_text or "")
    names = [d.name for d in governed.firewall.list_tools()]
    assert ToolNameCodec(names).encode("orders.lookup") == "orders__lookup"


def test_an_email_is_held_nothing_is_sent_and_the_answer_is_the_honest_statement(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url), EMAIL)
    assert (state.status, state.termination, state.turns) == (
        "waiting_approval",
        "held_for_approval",
        1,
    )
    [span] = state.tool_spans
    assert (span.tool, span.outcome, span.reason, span.rule_ids) == (
        "email.send",
        "held",
        "approval_required",
        ["email-needs-approval"],
    )
    assert state.held is not None and state.held.arguments["to"] == "bob@example.com"
    assert outbox_rows(governed.workspace) == []
    assert state.model_text is None  # the model was never asked to sum up
    assert state.final_answer == honest_statement(state)
    assert (state.final_answer or "").startswith("Not done yet: email.send (c1) is waiting")
    assert "execution.started" not in kinds(governed)


def test_a_delete_is_blocked_and_the_file_stays(governed: Gateway, stub_url: str) -> None:
    state = run(governed, provider(stub_url), DELETE)
    assert (state.status, state.termination) == ("blocked", "answered")
    [span] = state.tool_spans
    assert (span.tool, span.outcome, span.reason, span.rule_ids) == (
        "fs.delete",
        "blocked",
        "blocked_by_rule",
        ["fs-no-delete"],
    )
    assert file_tree(governed.workspace)["notes/todo.txt"] == SEED_FILES["notes/todo.txt"]
    assert state.final_answer == honest_statement(state) != state.model_text
    assert "execution.started" not in kinds(governed)


# -- model misbehaviour -------------------------------------------------------------------------


def test_a_tool_call_described_in_prose_is_flagged_and_nothing_runs(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "prose-tool-call"), DELETE)
    # A structured call is the only call there is: the prose proposed nothing and ran nothing,
    # and the run says so instead of passing the prose off as an answer.
    assert (state.status, state.termination, state.turns) == ("failed", "answered", 1)
    assert state.tool_spans == []
    assert "<tool_call>" in (state.model_text or "")
    assert "described a tool call in prose" in (state.final_answer or "")
    assert "<tool_call>" not in (state.final_answer or "")
    assert "tool.requested" not in kinds(governed)
    assert untouched(governed)


def _prose_history(call_id: str) -> list[dict[str, Any]]:
    prose = (
        'I will call the orders__lookup tool.\n<tool_call>{"name": "orders__lookup", '
        '"arguments": {"order_id": "ORD-0001"}}</tool_call>'
    )
    return [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": LOOKUP},
        {"role": "assistant", "content": prose},
        {"role": "tool", "tool_call_id": call_id, "content": '{"status": "executed"}'},
    ]


def test_a_prose_call_faked_into_the_history_is_a_400_bad_request(
    governed: Gateway, stub_url: str
) -> None:
    specs = tool_specs(governed.firewall.list_tools())
    with provider(stub_url) as live, pytest.raises(ProviderError) as caught:
        live.complete(_prose_history("call_from_prose"), specs)
    assert (caught.value.kind, caught.value.status) == ("bad_request", 400)
    assert "must be a response to a preceding message with 'tool_calls'" in str(caught.value)
    # Control: the same result answering a structured call of the same id is accepted.
    structured = _prose_history("call_1")
    structured[2] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "orders.lookup", "arguments": '{"order_id": "ORD-0001"}'},
            }
        ],
    }
    with provider(stub_url) as live:
        turn = live.complete(structured, specs)
    assert turn.tool_calls == () and "orders__lookup returned" in (turn.text or "")


class _ProseParser:
    """A naive agent layer: it takes a prose call at its word, fakes a result and asks again."""

    def __init__(self, inner: OpenAIProvider) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def identity(self) -> ProviderIdentity:
        return self.inner.identity

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        self.calls += 1
        turn = self.inner.complete(messages, tools)
        if turn.tool_calls or "<tool_call>" not in (turn.text or ""):
            return turn
        self.calls += 1
        faked = [
            *messages,
            {"role": "assistant", "content": turn.text},
            {"role": "tool", "tool_call_id": "call_from_prose", "content": '{"status": "ok"}'},
        ]
        return self.inner.complete(faked, tools)


def test_a_faked_prose_result_in_the_history_ends_the_run_as_a_provider_error(
    governed: Gateway, stub_url: str
) -> None:
    naive = _ProseParser(provider(stub_url, "prose-tool-call"))
    with naive.inner:
        loop = AgentLoop(naive, governed.firewall)
        state = loop.start(LOOKUP, run_id=RUN, principal=PRINCIPAL)
    assert naive.calls == 2  # the prose reply came back; the faked follow-up was refused
    assert (state.status, state.termination, state.turns) == ("provider_error", "provider_error", 0)
    [error] = [e for e in governed.audit.events(RUN) if e.kind == "provider.error"]
    assert error.data == {"kind": "bad_request", "status": 400}
    assert (state.final_answer or "").startswith("Stopped: the model provider failed (bad_request")
    assert state.tool_spans == [] and untouched(governed)


def test_malformed_arguments_are_a_failed_result_and_nothing_is_written(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "malformed-arguments"), WRITE)
    [span] = state.tool_spans
    assert (span.tool, span.outcome, span.reason, span.arguments) == (
        "fs.write",
        "failed",
        "malformed_arguments",
        None,
    )
    assert (state.status, state.termination) == ("failed", "answered")
    assert "reports/x.md" not in file_tree(governed.workspace)
    assert "call.rejected" in kinds(governed) and "tool.requested" not in kinds(governed)
    assert state.final_answer == honest_statement(state)


def test_a_hallucinated_tool_is_blocked_as_unknown_and_never_reaches_a_source(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "hallucinated-tool"), LOOKUP)
    [span] = state.tool_spans
    assert (span.tool, span.known_tool, span.outcome, span.reason) == (
        "shell_exec",
        False,
        "blocked",
        "unknown_tool",
    )
    assert (state.status, state.termination) == ("blocked", "answered")
    assert "execution.started" not in kinds(governed)
    assert untouched(governed)
    assert "shell_exec was refused (unknown_tool)" in (state.final_answer or "")


def test_a_repeated_identical_call_stops_the_run_before_the_firewall(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "repeat-call"), LOOKUP)
    assert (state.status, state.termination, state.turns) == ("failed", "repeated_call", 2)
    assert [(s.tool, s.outcome) for s in state.tool_spans] == [("orders.lookup", "executed")]
    assert kinds(governed).count("tool.requested") == 1  # the repeat never reached it
    assert "loop.repeated_call" in kinds(governed)
    assert (state.final_answer or "").startswith("Stopped: the model repeated an identical call")


def test_a_false_claim_after_a_block_is_replaced_by_the_honest_statement(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "false-claim"), DELETE)
    assert state.status == "blocked"
    assert FALSE_CLAIM in (state.model_text or "")  # the model did lie
    assert FALSE_CLAIM not in (state.final_answer or "")
    assert state.final_answer == honest_statement(state)
    assert "notes/todo.txt" in file_tree(governed.workspace)


def test_a_false_claim_is_never_even_asked_for_when_the_call_is_held(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "false-claim"), EMAIL)
    assert (state.status, state.turns, state.model_text) == ("waiting_approval", 1, None)
    assert FALSE_CLAIM not in (state.final_answer or "")
    assert outbox_rows(governed.workspace) == []


def test_a_false_claim_after_a_real_execution_is_flagged_and_replaced_by_what_really_happened(
    governed: Gateway, stub_url: str
) -> None:
    # The lookup really executed, so the run is `completed`; "sent and deleted" is false.
    state = run(governed, provider(stub_url, "false-claim"), LOOKUP)
    assert state.status == "completed"
    assert [s.outcome for s in state.tool_spans] == ["executed"]
    assert FALSE_CLAIM in (state.model_text or "")  # the model did lie
    assert FALSE_CLAIM not in (state.final_answer or "")
    assert "Executed: orders.lookup." in (state.final_answer or "")
    [claims] = [s for s in state.spans if isinstance(s, ClaimsSpan)]
    assert claims.verdict == "flagged"
    assert {(f.kind, f.claim) for f in claims.findings} == {
        ("unsupported_action", "sent"),
        ("unsupported_action", "deleted"),
    }
    flagged = [e for e in governed.audit.events(RUN) if e.kind == "guardrail.claims_flagged"]
    assert len(flagged) == 1 and flagged[0].data["mode"] == "replace"
    assert kinds(governed)[-2:] == ["guardrail.claims_flagged", "run.finished"]
    assert outbox_rows(governed.workspace) == []  # "sent" is false: nothing was


def test_an_honest_summary_after_a_real_execution_passes_the_claims_check(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url), LOOKUP)
    assert state.status == "completed" and state.final_answer == state.model_text
    assert "guardrail.claims_flagged" not in kinds(governed)
    assert all(s.verdict == "pass" for s in state.spans if isinstance(s, ClaimsSpan))


# -- transport misbehaviour ---------------------------------------------------------------------


def test_a_rate_limit_is_retried_after_retry_after_and_the_run_completes(
    governed: Gateway, fresh_stub_url: str, wire: Wire
) -> None:
    sleeps: list[float] = []
    live = provider(fresh_stub_url, "rate-limit-once", sleeps=sleeps, http_client=wire.client)
    state = run(governed, live, LOOKUP)
    assert (state.status, state.turns) == ("completed", 2)
    # Each turn is a new conversation to the stub, so each is refused once.
    assert wire.statuses == [429, 200, 429, 200]
    assert sleeps == [1.0, 1.0] and all(delay >= 1.0 for delay in sleeps)
    assert "provider.error" not in kinds(governed)


def test_a_server_error_is_retried_with_backoff_and_the_run_completes(
    governed: Gateway, fresh_stub_url: str, wire: Wire
) -> None:
    sleeps: list[float] = []
    live = provider(fresh_stub_url, "server-error-once", sleeps=sleeps, http_client=wire.client)
    state = run(governed, live, LOOKUP)
    assert (state.status, state.turns) == ("completed", 2)
    assert wire.statuses == [500, 200, 500, 200]
    assert sleeps == [1.0, 1.0]


def test_a_slow_vendor_times_out_once_without_retry_as_a_provider_error(
    governed: Gateway, stub_url: str
) -> None:
    sleeps: list[float] = []
    slow = Wire(headers={DELAY_HEADER: "3"})
    try:
        live = provider(stub_url, "slow", timeout=0.5, sleeps=sleeps, http_client=slow.client)
        state = run(governed, live, LOOKUP)
    finally:
        slow.client.close()
    assert (state.status, state.termination, state.turns) == ("provider_error", "provider_error", 0)
    assert (slow.requests, slow.statuses, sleeps) == (1, [], [])  # timeouts are not retried
    [error] = [e for e in governed.audit.events(RUN) if e.kind == "provider.error"]
    assert error.data == {"kind": "timeout", "status": None}
    assert "did not answer within 0.5 s" in (state.final_answer or "")
    assert state.tool_spans == []


def test_missing_usage_completes_without_inventing_tokens(governed: Gateway, stub_url: str) -> None:
    state = run(governed, provider(stub_url, "missing-usage"), LOOKUP)
    assert (state.status, state.usage_missing_turns) == ("completed", 2)
    assert (state.prompt_tokens, state.completion_tokens, state.total_tokens) == (0, 0, 0)
    assert [t.usage for t in turn_spans(state)] == [None, None]
    [requested] = [e for e in governed.audit.events(RUN) if e.kind == "tool.requested"]
    assert requested.data["tokens_used"] == 0


def test_empty_choices_is_a_malformed_response_provider_error(
    governed: Gateway, stub_url: str
) -> None:
    state = run(governed, provider(stub_url, "empty-choices"), LOOKUP)
    assert (state.status, state.termination, state.turns) == ("provider_error", "provider_error", 0)
    [error] = [e for e in governed.audit.events(RUN) if e.kind == "provider.error"]
    assert error.data["kind"] == "malformed_response"
    assert "empty 'choices' list" in (state.final_answer or "")
    assert untouched(governed)


# -- usage reaches the policy -------------------------------------------------------------------


def test_the_stubs_token_usage_reaches_the_firewall(governed: Gateway, stub_url: str) -> None:
    state = run(governed, provider(stub_url), LOOKUP)
    first, second = turn_spans(state)
    assert first.usage is not None and second.usage is not None
    assert state.total_tokens == first.usage.total_tokens + second.usage.total_tokens > 0
    [requested] = [e for e in governed.audit.events(RUN) if e.kind == "tool.requested"]
    assert requested.data["tokens_used"] == first.usage.total_tokens > 0


@pytest.fixture
def stingy_policy(tmp_path: Path) -> Path:
    """The shipped policy with the token budget cut from 50000 to 10 tokens."""
    shipped = Path(__file__).parents[2] / "governance" / "data" / "default_policy.yaml"
    text = shipped.read_text(encoding="utf-8")
    assert "min_tokens_used: 50000" in text
    path = tmp_path / "stingy.yaml"
    path.write_text(text.replace("min_tokens_used: 50000", "min_tokens_used: 10"))
    return path


@pytest.mark.parametrize(
    ("fault", "outcome", "rules"),
    [("", "blocked", ["token-budget"]), ("missing-usage", "executed", ["orders-lookup"])],
)
def test_a_token_budget_rule_acts_on_real_usage_and_only_on_real_usage(
    tmp_path: Path, stingy_policy: Path, stub_url: str, fault: str, outcome: str, rules: list[str]
) -> None:
    with Gateway(
        state_dir=tmp_path / "state", policy_path=stingy_policy, clock=ManualClock()
    ) as gateway:
        state = run(gateway, provider(stub_url, fault), LOOKUP)
    [span] = state.tool_spans
    assert (span.outcome, span.rule_ids) == (outcome, rules)
