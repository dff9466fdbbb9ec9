"""One LiteLLM guardrail in a process of its own, driven over stdin/stdout (JSON lines), for the
tests of several proxy replicas sharing one store.

The guardrail is built exactly as a LiteLLM proxy builds it from its config
(`ProctorGuardrail(**litellm_params)`: the `proctor_*` settings, PROCTOR_* environment); the
test then plays LiteLLM's hooks on its governor: the pre-MCP-call hook, and on a go-ahead the
post-call hook with the tool's output. Commands, one per line:
    {"calls": [{"tool": "big", "arguments": {...}}, ...]}  -> one result per call
Each result is {"status": "executed"} or the refusal's detail (status, reason, approval_id).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from typing import Any

from governance.core._contracts import Principal
from governance.litellm import BrokeredCall, Refused, ToolCallGovernor

ANN = Principal("ann", "key-ann", "support")
_ids = itertools.count(1)


async def _one(governor: ToolCallGovernor, tool: str, arguments: dict[str, Any]) -> Any:
    n = f"{os.getpid()}-{next(_ids)}"
    call = BrokeredCall(
        server="demo",
        tool=tool,
        arguments=arguments,
        principal=ANN,
        run_id=f"litellm-{n}",
        call_id=f"c-{n}",
        correlation=f"corr-{n}",
    )
    try:
        await governor.before(call)
    except Refused as refused:
        return refused.detail()
    await governor.after(call.correlation, f"ran {tool}", is_error=False)
    return {"status": "executed"}


def main() -> None:
    from governance.litellm import ProctorGuardrail

    params = json.loads(sys.argv[1])
    guardrail = ProctorGuardrail(
        guardrail_name="proctor", event_hook=["pre_mcp_call"], default_on=True, **params
    )
    governor = guardrail._governor
    assert governor is not None, "the guardrail could not open its stores"
    print(json.dumps({"ready": governor.gateway.store.kind}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        results = [
            asyncio.run(_one(governor, call["tool"], call["arguments"]))
            for call in command["calls"]
        ]
        print(json.dumps(results), flush=True)
    governor.close()


if __name__ == "__main__":
    main()
