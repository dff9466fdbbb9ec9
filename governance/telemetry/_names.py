"""Every span, attribute and metric name Proctor exports, in one place.

`gen_ai.*` and `error.type` are the OpenTelemetry GenAI semantic conventions' names (status
Development: pinned here, so a revision is one edit); `proctor.*` names the governance facts the
conventions have no word for.
"""

from __future__ import annotations

from typing import Final

INSTRUMENTATION_SCOPE: Final = "proctor"

# Span names: `{gen_ai.operation.name} {target}`, as the conventions spell them.
RUN_SPAN: Final = "invoke_agent proctor"
CHAT_SPAN_PREFIX: Final = "chat"
TOOL_SPAN_PREFIX: Final = "execute_tool"

# GenAI semantic conventions.
OPERATION_NAME: Final = "gen_ai.operation.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = "error.type"

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"

# Governance facts.
ROLE: Final = "proctor.role"
RUN_ID: Final = "proctor.run.id"
RUN_STATUS: Final = "proctor.run.status"
RUN_TERMINATION: Final = "proctor.run.termination"
RUN_RESUMED_BY: Final = "proctor.run.resumed_approval_id"
SCENARIO_ID: Final = "proctor.scenario.id"
EVAL_RUN_ID: Final = "proctor.eval.run_id"
LIVE: Final = "proctor.provider.live"
TURN_TOOL_CALLS: Final = "proctor.turn.tool_calls"
DECISION_EFFECT: Final = "proctor.decision.effect"
DECISION_RULE_IDS: Final = "proctor.decision.rule_ids"
DECISION_REASON: Final = "proctor.decision.reason"
DECISION_MESSAGE: Final = "proctor.decision.message"
POLICY_DIGEST: Final = "proctor.policy.digest"
REGISTRY_DIGEST: Final = "proctor.registry.digest"
APPROVAL_ID: Final = "proctor.approval.id"
APPROVAL_STATUS: Final = "proctor.approval.status"
BUDGET_OUTCOME: Final = "proctor.budget.outcome"
BUDGET_ID: Final = "proctor.budget.id"
BUDGET_SCOPE: Final = "proctor.budget.scope"
BUDGET_LIMIT: Final = "proctor.budget.limit"
BUDGET_USED: Final = "proctor.budget.used"
ARGUMENTS_DIGEST: Final = "proctor.arguments.digest"
OUTPUT_DIGEST: Final = "proctor.output.digest"
OUTCOME: Final = "proctor.outcome"
CALL_RESUMED: Final = "proctor.call.resumed"
FINDINGS: Final = "proctor.guardrail.findings"  # what the output screen found (kinds)

# Metrics (meter `proctor`).
METRIC_DECISIONS: Final = "proctor.decisions"
METRIC_APPROVALS_PENDING: Final = "proctor.approvals.pending"
METRIC_BUDGET_USAGE: Final = "proctor.budget.usage"
METRIC_DECISION_DURATION: Final = "proctor.decision.duration"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"

# Bucket boundaries the GenAI conventions advise for their two histograms.
OPERATION_DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
TOKEN_USAGE_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
# A decision takes tens of microseconds to milliseconds (the policy, one store read).
DECISION_DURATION_BUCKETS: Final = (
    0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0,
)  # fmt: skip
