"""The policy: its file model, the loader (YAML with lines, hot reload by digest) and the
compiled, indexed evaluator.
"""

from __future__ import annotations

from governance.policy._compile import Policy
from governance.policy._eval import Explanation, evaluate, explain
from governance.policy._load import PolicyFile, load_policy, parse_policy, read_policy
from governance.policy._model import MAX_BUDGET_LIMIT, policy_json_schema, write_policy_schema
from governance.policy._tool_names import check_policy_tool_names, check_tool_names

__all__ = [
    "write_policy_schema",
    "Explanation",
    "MAX_BUDGET_LIMIT",
    "Policy",
    "check_policy_tool_names",
    "check_tool_names",
    "PolicyFile",
    "evaluate",
    "explain",
    "load_policy",
    "read_policy",
    "parse_policy",
    "policy_json_schema",
]
