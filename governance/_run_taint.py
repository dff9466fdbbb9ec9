"""Which runs have read untrusted text, as the firewall itself saw it.

Taint is the firewall's own finding: it screens every tool output (and a failed call's error
text) before anyone reads it. The agent loop keeps taint in its run state and reports it in
`RunUsage.tainted`, but callers that keep no run state report nothing: an MCP client through
`proctor serve`, the LiteLLM guardrail, an application embedding the firewall. Trusting the
caller's word would let those runs call past every `tainted: true` rule. So the firewall
remembers: once a run's call returned untrusted text, every later decision of that run is made
as tainted, whatever the caller reports. A caller can add taint, never clear it.

The memory is this process's (run ids only ever added: forgetting would fail open), shared by
the firewalls that judge one run's calls over one audit log (the LiteLLM guardrail's MCP and
response firewalls). The first time this process decides a call of a run, it reads the run's
audit chain for `guardrail.flagged` at stage `tool_output`: a run tainted by another process
(another proxy worker, a server restarted on the same stores) stays tainted here. A review (a
held call resumed or edited, maybe much later) reads the chain again; a chain that cannot be read
counts as tainted (fail closed). Not covered: two processes driving the SAME run at the SAME time,
each having read the chain before the other's taint (a run is driven by one process at a time:
the loop, one MCP session, one client conversation).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from governance.core._contracts import RunUsage

# The audit record of what the output screen found, written with the call's outcome.
FLAGGED_KIND = "guardrail.flagged"
TOOL_OUTPUT_STAGE = "tool_output"
READ_RUNS_KEPT = 65_536  # clean runs remembered as read (see RunTaint._read)


class _Event(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def data(self) -> Mapping[str, Any]: ...


class RunTaint:
    """The runs this firewall saw read untrusted text; `usage()` applies it to a decision."""

    def __init__(self, chain: Callable[[str], Sequence[_Event]] | None = None) -> None:
        """`chain(run_id)`: the run's audit events, read the first time this process decides a
        call of the run and on every review (None: the sink cannot be read back, so only this
        process's memory counts)."""
        self._runs: set[str] = set()
        # Runs whose chain was read and found clean: bounded (a server makes a run per session,
        # a stateless MCP request one per request); forgetting one only costs a read again.
        self._read: OrderedDict[str, None] = OrderedDict()
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
        known tainted (from memory; from its audit chain the first time this process sees the
        run, and again on every `read_chain`)."""
        if usage is not None and usage.tainted:
            return usage
        if run_id not in self._runs:
            if not read_chain and run_id in self._read:
                return usage
            # Read before remembering it as read: a call of the same run decided meanwhile on
            # another thread reads the chain too, instead of taking "read" for "clean".
            tainted = self._tainted_on_chain(run_id)
            with self._lock:
                self._read[run_id] = None
                self._read.move_to_end(run_id)
                while len(self._read) > READ_RUNS_KEPT:
                    self._read.popitem(last=False)
            if not tainted:
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
