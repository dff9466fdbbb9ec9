"""Trace and span ids derived from a run id, so every process that touches one run (the one
that held a call, the one that resumed it later) puts its spans in the same trace."""

from __future__ import annotations

import hashlib


def run_trace_id(run_id: str) -> int:
    """The first 16 bytes of sha256("proctor.run\\0" + run_id), as OpenTelemetry's int id."""
    value = int.from_bytes(_sha256("proctor.run\0" + run_id)[:16], "big")
    return value or 1  # an all-zero id is invalid


def run_span_id(run_id: str, drive: str) -> int:
    """The run span of one drive of the agent loop: `drive` is "start" for the drive that began
    the run, else the approval id whose decision resumed it (unique per run, known to the
    process that resumes, and known before the run span itself is started)."""
    value = int.from_bytes(_sha256(f"proctor.run.span\0{run_id}\0{drive}")[:8], "big")
    return value or 1


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
