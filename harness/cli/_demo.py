"""`proctor demo`: four calls through the firewall, then the audit chain verified and tampered."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import click

from governance import Gateway, Principal, ToolCall
from governance.stores import AuditLog
from harness.cli._options import shipped_policy_path

DEMO_CALLS = (
    ("orders.lookup", {"order_id": "ORD-0003"}, "a read the policy allows"),
    ("fs.delete", {"path": "notes/todo.txt"}, "a delete a rule blocks"),
    ("shell.exec", {"command": "rm -rf /"}, "a tool nobody registered"),
    (
        "email.send",
        {"to": "cfo@example.com", "subject": "Q3", "body": "Numbers attached."},
        "an external, irreversible action",
    ),
)


@click.command("demo")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the demo's sandbox, business database and audit log go (default: a temp dir).",
)
def demo(workspace: Path | None) -> int:
    """Run four calls through the firewall with the shipped policy, then verify the audit chain."""
    workspace = workspace or Path(tempfile.mkdtemp(prefix="proctor-demo-"))
    workspace.mkdir(parents=True, exist_ok=True)
    policy_path = shipped_policy_path()
    audit_path = workspace / "audit.sqlite"
    run_id = "demo-run"
    click.echo(f"policy:    {policy_path}")
    click.echo(f"workspace: {workspace}\n")

    with Gateway(state_dir=workspace, policy_path=policy_path) as gateway:
        firewall, audit = gateway.firewall, gateway.audit
        principal = Principal(actor="demo-user", agent="demo-agent", team="support")
        for n, (tool, arguments, what) in enumerate(DEMO_CALLS, start=1):
            result = firewall.call(ToolCall(f"c{n}", tool, arguments, run_id, principal))
            decision = result.decision
            rules = ", ".join(decision.rule_ids) if decision and decision.rule_ids else "(default)"
            effect = decision.effect if decision else "block"
            reason = decision.reason if decision else result.reason
            click.echo(f"{n}. {tool} - {what}")
            click.echo(f"   decision: {effect:<16} rules: {rules:<24} reason: {reason}")
            held = f" as {result.approval_id}" if result.approval_id else ""
            click.echo(f"   outcome:  {result.outcome}{held}\n")

        verdict = audit.verify(run_id)
        click.echo(f"audit chain for {run_id}: {verdict.events} events, ok={verdict.ok}")
        events = audit.events(run_id)

    tampered_path = workspace / "audit-tampered.sqlite"
    shutil.copyfile(audit_path, tampered_path)
    victim = events[len(events) // 2]
    with sqlite3.connect(tampered_path) as conn:
        conn.execute(
            "UPDATE audit_events SET data = ? WHERE run_id = ? AND seq = ?",
            ('{"effect":"allow"}', run_id, victim.seq),
        )
    conn.close()
    with AuditLog.from_env(tampered_path) as copy:
        broken = copy.verify(run_id)
    click.echo(
        f"tampered copy (seq {victim.seq} rewritten): ok={broken.ok}, "
        f"first bad seq={broken.first_bad_seq} ({broken.reason})"
    )
    caught = verdict.ok and not broken.ok and broken.first_bad_seq == victim.seq
    click.echo("tamper detected at the exact seq." if caught else "TAMPER NOT DETECTED")
    return 0 if caught else 70
