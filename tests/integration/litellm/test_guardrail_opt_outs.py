"""LiteLLM lets a key's or team's admin metadata switch global guardrails off
(`disable_global_guardrails`, `opted_out_global_guardrails`): Proctor's guardrail still runs
on every MCP tool call. Checked on the real classes, in a child process (LiteLLM is heavy)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.integration import _node
from tests.integration.litellm import _proxy

PROBE = textwrap.dedent(
    """
    import json, sys
    from litellm.integrations.custom_guardrail import CustomGuardrail
    from litellm.types.guardrails import GuardrailEventHooks
    from governance.litellm import ProctorGuardrail

    policy, state = sys.argv[1], sys.argv[2]
    common = dict(guardrail_name="proctor", event_hook=["pre_mcp_call"], default_on=True)
    ours = ProctorGuardrail(proctor_policy=policy, proctor_state_dir=state, **common)
    plain = CustomGuardrail(**common)
    verdicts = {}
    for label, admin in {
        "disabled": {"disable_global_guardrails": True},
        "opted_out": {"opted_out_global_guardrails": ["proctor"]},
        "nothing": {},
    }.items():
        data = {"metadata": {"user_api_key_metadata": admin}}
        verdicts[label] = [
            bool(g.should_run_guardrail(data=data, event_type=GuardrailEventHooks.pre_mcp_call))
            for g in (ours, plain)
        ]
    print(json.dumps(verdicts))
    """
)


def test_no_key_or_team_metadata_switches_proctor_off_for_mcp_calls(tmp_path: Path) -> None:
    _proxy.require_litellm()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(_proxy.POLICY), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        env=_node.clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True"),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = json.loads(done.stdout.strip().splitlines()[-1])
    # [Proctor, a plain LiteLLM guardrail with the same settings]
    assert verdicts == {
        "disabled": [True, False],
        "opted_out": [True, False],
        "nothing": [True, True],
    }
