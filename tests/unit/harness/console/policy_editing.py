"""What the policy editor tests share: a policy with markup in a rule description, and a call
the firewall judges under it."""

from __future__ import annotations

from governance import Gateway, Principal, ToolCall

# fs.read of notes/ is allowed; a rule description carries markup that must round-trip as is.
POLICY = """\
# The team's policy. Comments are kept by a save.
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: read-notes
    description: Reading notes is fine <script>alert(1)</script> "><img src=x onerror=alert(2)>
    effect: allow
    match:
      tool: fs.read
    when:
      - arg: path
        path_prefix: notes/
"""

ANN = Principal("ann", "helper", "ops")


def read_notes(gateway: Gateway, call_id: str) -> str:
    """Propose fs.read of a note through the firewall; the call's outcome."""
    call = ToolCall(call_id, "fs.read", {"path": "notes/todo.txt"}, "run-1", ANN)
    return gateway.firewall.call(call).outcome
