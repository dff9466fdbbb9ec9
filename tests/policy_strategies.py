"""Hypothesis strategies the policy property tests share: random calls as policy contexts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from governance import PolicyContext, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.core._contracts import ACTION_TYPES, RISKS


@st.composite
def policy_contexts(
    draw: st.DrawFn,
    tools: Sequence[str],
    args: Sequence[str],
    values: Sequence[Any],
    max_args: int,
) -> PolicyContext:
    """A call of one of `tools`, registered (random descriptor facts) or not, with up to
    `max_args` of `args` set to `values`, and random token usage and taint."""
    tool = draw(st.sampled_from(tools))
    descriptor = None
    if draw(st.booleans()):
        descriptor = ToolDescriptor(
            name=tool,
            description=tool,
            input_schema={},
            source=draw(st.sampled_from(["local", "mcp-git"])),
            action_type=draw(st.sampled_from(ACTION_TYPES)),
            risk=draw(st.sampled_from(RISKS)),
            reversible=draw(st.booleans()),
            external_side_effect=draw(st.booleans()),
            idempotent=draw(st.booleans()),
        )
    arguments = draw(
        st.dictionaries(st.sampled_from(args), st.sampled_from(values), max_size=max_args)
    )
    call = ToolCall("c1", tool, arguments, "run-1", Principal("ann", "bot", "ops"))
    usage = RunUsage(tokens_used=draw(st.integers(0, 120)), tainted=draw(st.booleans()))
    return PolicyContext.for_call(call, descriptor, registry_digest="sha256:r", usage=usage)
