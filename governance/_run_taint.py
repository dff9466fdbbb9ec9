"""Which runs have read untrusted text, as the firewall itself saw it.

Taint is the firewall's own finding: it screens every tool output (and a failed call's error
text) before anyone reads it. The agent loop keeps taint in its run state and reports it in
`RunUsage.tainted`, but callers that keep no run state report nothing: an MCP client through
`proctor serve`, the LiteLLM guardrail, an application embedding the firewall. Trusting the
caller's word would let those runs call past every `tainted: true` rule. So the firewall
remembers: once a run's call returned untrusted text, every later decision of that run is made
as tainted, whatever the caller reports. A caller can add taint, never clear it.

The memory is this process's (a set of run ids that only grows: forgetting would fail open).
A held call approved and resumed by another process - or after a restart - finds its run's
taint on the audit chain instead (`guardrail.flagged` at stage `tool_output`); a chain that
cannot be read counts as tainted (fail closed). Reviews are human-paced, so reading one run's
chain there costs nothing that matters; the hot path only looks at the set.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from governance.core._contracts import RunUsage

# The audit record of what the output screen found, written with the call's outcome.
FLAGGED_KIND = "guardrail.flagged"
TOOL_OUTPUT_STAGE = "tool_output"


class _Event(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def data(self) -> Mapping[str, Any]: ...


class RunTaint:
    """The runs this firewall saw read untrusted text; `usage()` applies it to a decision."""

    def __init__(self, chain: Callable[[str], Sequence[_Event]] | None = None) -> None:
        """`chain(run_id)`: the run's audit events, read when a review resumes a call (None:
        the sink cannot be read back, so only this process's memory counts)."""
        self._runs: set[str] = set()
        self._lock = threading.Lock()
        self._chain = chain

    def mark(self, run_id: str) -> None:
        with self._lock:
            self._runs.add(run_id)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def usage(
        self, run_id: str, usage: RunUsage | None, *, read_chain: bool = False
    ) -> RunUsage | None:
        """`usage` as the decision must see it: tainted when the caller says so or the run is
        known tainted (from memory, or with `read_chain` from its audit chain)."""
        if usage is not None and usage.tainted:
            return usage
        if run_id not in self._runs and not (read_chain and self._tainted_on_chain(run_id)):
            return usage
        return replace(usage, tainted=True) if usage is not None else RunUsage(tainted=True)

    def _tainted_on_chain(self, run_id: str) -> bool:
        if self._chain is None:
            return False
        try:
            events = self._chain(run_id)
        except Exception:  # the chain cannot be read: decide as the stricter case
            return True
        for event in events:
            if event.kind == FLAGGED_KIND and event.data.get("stage") == TOOL_OUTPUT_STAGE:
                self.mark(run_id)
                return True
        return False
