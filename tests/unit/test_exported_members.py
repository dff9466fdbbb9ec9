"""The public surface changes only on purpose: every exported name is pinned here."""

import governance
import governance.tools
import harness.cli

GOVERNANCE_API = """
    ActionType ApprovalConflict ApprovalError ApprovalNotFound ApprovalRequest ApprovalStatus
    ApprovalStore ApprovalStoreError AuditEvent AuditLog AuditWriteError Budget BudgetDenial
    BudgetReservation BudgetReset BudgetResetRefused BudgetStatus BudgetStore BudgetStoreError
    ChainVerdict Clock ConfigError Decision EditRefused Effect Explanation Firewall Gateway
    GovernanceError Impact LifecycleEvent LocalTool LocalToolSource ManualClock Outcome Policy
    PolicyContext PolicyError PolicyFile Principal REDACTED RegistryError Risk RunUsage
    SelfApprovalError StaticPolicy SystemClock ToolCall ToolDescriptor ToolExecutionError
    ToolInputError ToolRegistry ToolResult ToolSource canonical_json digest effective_impact
    evaluate explain keyed_digest load_policy local_tool parse_policy policy_json_schema redact
""".split()


def test_governance_exports_exactly_the_curated_names() -> None:
    assert sorted(governance.__all__) == sorted(GOVERNANCE_API)


def test_every_exported_name_exists() -> None:
    for module in (governance, governance.tools, harness.cli):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], f"{module.__name__} exports names it does not define: {missing}"
