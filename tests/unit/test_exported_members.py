"""The public surface changes only on purpose: every exported name is pinned here."""

import importlib

import pytest

import governance
import harness.cli

GOVERNANCE_API = """
    ActionType AddressUnavailable ArgumentRefused McpSourceView PathRefused PreparedArguments
    SchemaRefused
    canonical_path local_validator prepare_arguments
    ApprovalConflict ApprovalError ApprovalNotFound ApprovalRequest ApprovalStatus
    ApprovalStore ApprovalStoreError AuditEvent AuditLog AuditWriteError Budget BudgetDenial
    BudgetReservation BudgetReset BudgetResetRefused BudgetStatus BudgetStore BudgetStoreError
    ChainVerdict Clock ConfigError Decision EditRefused Effect Explanation ExtraUnavailable
    Firewall Gateway
    GovernanceError Impact LifecycleEvent LocalTool LocalToolSource ManualClock McpConfig
    McpConfigError McpLockError McpToolSource Outcome PinSet Policy PolicyContext PolicyError
    PolicyFile Principal REDACTED RegistryError Risk RunUsage SelfApprovalError StaticPolicy
    SystemClock ToolCall ToolDescriptor ToolExecutionError ToolInputError ToolRegistry
    ToolResult ToolSource build_mcp_server canonical_json digest effective_impact evaluate
    explain keyed_digest load_mcp_config load_pins load_policy local_tool locked_sources
    neutralise_description open_mcp_sources parse_policy policy_json_schema redact write_pins
    ApprovalBackend AuditBackend BudgetBackend Durability StoreSpec StoreUrlError parse_store_url
    DEFAULT_STATE_DIR McpServerError RESUME_TOOL describe_tools is_loopback serve_http serve_stdio
    StartedServer bind_socket serving_in_thread decide_call
""".split()

# Each governance folder's public names: what code outside governance may import from it.
FOLDER_API = {
    "core": """ActionType AddressUnavailable AuditWriteError Clock ConfigError Decision Effect
        ExtraUnavailable GovernanceError Impact
        ManualClock Outcome PolicyContext PolicyError Principal RegistryError Risk RunUsage
        SystemClock ToolCall ToolDescriptor ToolInputError ToolResult ToolSource canonical_json
        digest effective_impact keyed_digest lazy_attributes""",
    "config": """JsonDocument Loc data_loc decode_text did_you_mean first_and_rest format_loc
        load_json load_yaml_with_lines pydantic_message read_capped render_json schema_document
        write_atomic""",
    "arguments": """ArgumentRefused PathRefused PreparedArguments SchemaChecks SchemaRefused
        UrlRefused canonical_path local_validator parse_http_url prepare_arguments
        schema_checks""",
    "screening": "CLAIMS_MODES DEFAULT_CLAIMS_MODE REDACTED ActionClaim CallEvidence ClaimFinding "
    "ClaimsMode ClaimsReport Finding FindingKind HeuristicScreener Screener action_claims "
    "check_claims effect_classes findings identifiers_in redact redact_text screen_request",
    "policy": """Explanation MAX_BUDGET_LIMIT Policy PolicyFile check_policy_tool_names
        check_tool_names evaluate explain
        load_policy
        parse_policy policy_json_schema read_policy write_policy_schema""",
    "stores": """APPROVAL_STATUSES ApprovalBackend ApprovalConflict ApprovalError
        ApprovalNotFound ApprovalRequest ApprovalStatus ApprovalStore ApprovalStoreError
        AuditBackend AuditEvent AuditLog Budget BudgetBackend BudgetDenial BudgetReservation
        BudgetReset BudgetResetRefused BudgetScope BudgetStatus BudgetStore BudgetStoreError
        CHECKPOINT_KEY_ENV CHECKPOINT_PUBLIC_KEY_ENV ChainVerdict CheckpointBody CheckpointError
        CheckpointFileError CheckpointKeyError CheckpointOverwriteRefused CheckpointReport
        CheckpointSchedule
        CheckpointSignatureError CheckpointingAuditLog checkpoint_schedule_from_env
        Durability KEY_ENV MemoryApprovalStore MemoryAuditLog MemoryBudgetLedger RunFinding
        SelfApprovalError StoreSpec
        PostgresApprovalStore PostgresAuditLog PostgresBudgetLedger PostgresTarget
        PostgresUnavailable SchemaStatus StoreSchemaError check_postgres_server
        migrate_postgres postgres_schema_status
        StoreUrlError generate_checkpoint_keys load_checkpoint_private_key
        load_checkpoint_public_key parse_store_url read_checkpoint verify_checkpoint
        write_checkpoint""",
    "agentdojo": """AGENTDOJO_SUITES INSTALL_HINT AgentDojoMapping AgentDojoMappingError
        AgentDojoSuite AgentDojoToolSource AgentDojoUnavailable ReceivedCall SuiteEnvironments
        SuiteTools ToolFacts Verdict canaries copy_environment import_suites injection_task judge
        load_agentdojo_mapping mapping_path render_result suite_tools user_task""",
    "tools": """HttpFetcher LocalTool LocalToolSource SEED_FILES Sandbox ToolExecutionError
        ToolRegistry Workspace builtin_registry builtin_tools business_tools database_dump file_tree
        fs_tools
        local_tool orders outbox_rows refund_drafts run_read_only_query tickets""",
    "mcp": """HINTS McpConfig McpConfigError McpLockError McpSession McpToolInfo McpToolSource
        PinSet SessionKey StartedProcess load_mcp_config load_pins locked_sources
        neutralise_description open_mcp_sources pins_for session_key start_stdio_process
        write_mcp_schema write_pins""",
    "telemetry": """INSTALL_HINT Telemetry TelemetryConfig TelemetryConfigError TurnRecord
        telemetry_config""",
    "litellm": """BrokeredCall GoAhead GuardrailSettings ProctorGuardrail Refused
        ToolCallGovernor settings_from""",
}
# Names that load an optional extra when first touched (`make litellm`): checked where it is in.
NEEDS_EXTRA = {("governance.litellm", "ProctorGuardrail"): "litellm"}


def test_governance_exports_exactly_the_curated_names() -> None:
    assert sorted(governance.__all__) == sorted(GOVERNANCE_API)


@pytest.mark.parametrize("folder", sorted(FOLDER_API))
def test_each_governance_folder_exports_exactly_its_curated_names(folder: str) -> None:
    module = importlib.import_module(f"governance.{folder}")
    assert sorted(module.__all__) == sorted(FOLDER_API[folder].split())


def test_every_exported_name_exists() -> None:
    folders = [importlib.import_module(f"governance.{folder}") for folder in FOLDER_API]
    for module in (governance, *folders, harness.cli):
        missing = [
            name
            for name in module.__all__
            if (module.__name__, name) not in NEEDS_EXTRA and not hasattr(module, name)
        ]
        assert missing == [], f"{module.__name__} exports names it does not define: {missing}"


def test_names_that_need_an_extra_load_where_it_is_installed() -> None:
    """In a child process: importing LiteLLM would otherwise reach for the network (its model
    price list) and stay loaded in the test process."""
    import os
    import subprocess
    import sys
    from importlib.util import find_spec

    for (module, name), extra in sorted(NEEDS_EXTRA.items()):
        if find_spec(extra) is None:
            continue  # tests/integration/litellm says how to install it, or fails in CI
        probe = f"import {module} as m; print(hasattr(m, {name!r}))"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.stdout.strip() == "True", done.stderr[-2000:]


def test_the_litellm_folder_loads_litellm_only_for_the_guardrail_itself() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from governance.litellm import ToolCallGovernor, settings_from; "
        "print('litellm' in sys.modules, 'fastapi' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


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
    assert "governance.core._errors" in loaded and "governance.core._canonical" in loaded
    for heavy in (
        "governance._firewall",
        "governance._gateway",
        "governance._approval_flow",
        "governance.stores._approvals",
        "governance.stores._budgets",
        "governance.stores._audit",
        "governance.policy._eval",
        "governance.policy._compile",
        "governance.mcp._client",
    ):
        assert heavy not in loaded
