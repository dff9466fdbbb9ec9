# Everything bootstraps .venv from the machine's python3; nothing is installed by hand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.proctor-installed
# Where the CLI lives: it is not on PATH until the venv is activated.
WHERE  := @echo "proctor is installed in $(BIN)/proctor: run $(BIN)/proctor --help, or 'source $(BIN)/activate' first to type just proctor"

.PHONY: demo test lint types unit bench clean npm schemas litellm agentdojo console

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# An editable install compiles no bytecode (a wheel install does); where
	@# PYTHONDONTWRITEBYTECODE is set, every run would compile ~120 modules again.
	$(BIN)/python -m compileall -q harness governance stubs
	@touch $(STAMP)
	$(WHERE)

demo: $(STAMP)
	$(BIN)/proctor run --baseline baselines/baseline.json
	$(WHERE)

# The web console on this checkout's own state dir (git-ignored) and a writable copy of the shipped
# policy, made once and then kept: a save in the Policies page edits it, never governance/data.
# More options through CONSOLE_ARGS, e.g. make console CONSOLE_ARGS='--provider live'.
CONSOLE_DIR := .proctor-console
console: $(STAMP)
	@mkdir -p $(CONSOLE_DIR)
	@test -f $(CONSOLE_DIR)/policy.yaml || cp governance/data/default_policy.yaml $(CONSOLE_DIR)/policy.yaml
	$(BIN)/proctor console --state-dir $(CONSOLE_DIR) --policy $(CONSOLE_DIR)/policy.yaml $(CONSOLE_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint types unit

# Every committed JSON Schema (policy, MCP servers, scenario file, baseline) from its models.
schemas: $(STAMP)
	$(BIN)/python -m harness._write_schemas

# The npm MCP peers (reference server, conformance suite) for tests/integration/test_mcp_*.py;
# without them those tests skip locally (CI installs them in .ci/run and requires them).
npm:
	npm ci --prefix .ci/npm --no-audit --no-fund --ignore-scripts

# The LiteLLM proxy for tests/integration/litellm (the `litellm` extra, into this venv); without
# it those tests skip locally (CI installs it in .ci/run and requires them).
LITELLM_STAMP := $(VENV)/.proctor-litellm-installed
litellm: $(LITELLM_STAMP)
$(LITELLM_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,litellm]'
	@touch $(LITELLM_STAMP)

# AgentDojo's task suites for `proctor import agentdojo` and its tests (the `agentdojo` extra,
# into this venv); without it those tests skip locally (CI installs it and requires them).
AGENTDOJO_STAMP := $(VENV)/.proctor-agentdojo-installed
agentdojo: $(AGENTDOJO_STAMP)
$(AGENTDOJO_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,agentdojo]'
	@touch $(AGENTDOJO_STAMP)

# The peers (tollgate, toolwarden, inspect_ai) are measured in the same run: the `bench` extra.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/policy_decision.py
	$(BIN)/python benchmarks/firewall_call.py
	$(BIN)/python benchmarks/mcp_overhead.py
	$(BIN)/python benchmarks/audit_verify.py
	$(BIN)/python benchmarks/cli_cold.py
	$(BIN)/python benchmarks/suite_1000.py
	$(BIN)/python benchmarks/suite_memory.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
