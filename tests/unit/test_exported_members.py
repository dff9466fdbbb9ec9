"""The public surface changes only on purpose: every exported name is pinned here."""

import governance
import governance.tools
import harness.cli

GOVERNANCE_API = """
    ActionType ArgumentRefused McpSourceView PathRefused PreparedArguments SchemaRefused
    canonical_path local_validator prepare_arguments
    ApprovalConflict ApprovalError ApprovalNotFound ApprovalRequest ApprovalStatus
    ApprovalStore ApprovalStoreError AuditEvent AuditLog AuditWriteError Budget BudgetDenial
    BudgetReservation BudgetReset BudgetResetRefused BudgetStatus BudgetStore BudgetStoreError
    ChainVerdict Clock ConfigError Decision EditRefused Effect Explanation Firewall Gateway
    GovernanceError Impact LifecycleEvent LocalTool LocalToolSource ManualClock McpConfig
    McpConfigError McpLockError McpToolSource Outcome PinSet Policy PolicyContext PolicyError
    PolicyFile Principal REDACTED RegistryError Risk RunUsage SelfApprovalError StaticPolicy
    SystemClock ToolCall ToolDescriptor ToolExecutionError ToolInputError ToolRegistry
    ToolResult ToolSource build_mcp_server canonical_json digest effective_impact evaluate
    explain keyed_digest load_mcp_config load_pins load_policy local_tool locked_sources
    neutralise_description open_mcp_sources parse_policy policy_json_schema redact write_pins
    ApprovalBackend AuditBackend BudgetBackend Durability StoreSpec StoreUrlError parse_store_url
""".split()


def test_governance_exports_exactly_the_curated_names() -> None:
    assert sorted(governance.__all__) == sorted(GOVERNANCE_API)


def test_every_exported_name_exists() -> None:
    for module in (governance, governance.tools, harness.cli):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], f"{module.__name__} exports names it does not define: {missing}"


def test_importing_governance_does_not_load_the_mcp_sdk() -> None:
    import subprocess
    import sys

    probe = "import governance, sys; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_importing_one_governance_name_loads_only_the_module_that_defines_it() -> None:
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys; from governance import ConfigError, canonical_json; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('governance'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert "governance._errors" in loaded and "governance._canonical" in loaded
    heavy_modules = ("_firewall", "_gateway", "_approvals", "_budgets", "_audit", "_policy_eval")
    for heavy in (*heavy_modules, "_policy_compile", "_approval_flow"):
        assert f"governance.{heavy}" not in loaded
