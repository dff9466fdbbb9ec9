"""What a scenario *is*: its inputs, and their digest (the gate diffs two of them).

Pure. A scenario's inputs are everything that is fed to the run: its definition minus what is
judged (`expect`) and minus what only names or documents it (`id`, `description`, `tags`), with
the policy and MCP config it names replaced by the digests of their contents (so moving a file
changes nothing, editing it changes the inputs), plus the digest of the tool registry it runs
with and the provider that drives it (the replay script, or a live model). Defaults are filled
in by the model and left out, so spelling out a default is not a change, and neither is a new
scenario field whose default keeps the old behaviour.

The digest covers the inputs in clear; the form stored in the baseline and shown in diffs is
redacted (nothing secret leaves in clear), so two inputs that differ only inside a secret show
no line of diff but still different digests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from governance import canonical_json, redact
from harness._scenario import Scenario

# Never fed to the run: the key, documentation, selection, and what the run is judged against.
NOT_INPUTS = frozenset({"id", "description", "tags", "expect"})
# Named by path in the scenario file; the inputs hold the digest of what the path points at.
BY_DIGEST = frozenset({"policy", "mcp_config"})


@dataclass(frozen=True, slots=True)
class ScenarioInputs:
    """One scenario's inputs: the digest of the clear form, and the redacted form to show.

    The redacted form is built when asked (a diff, a baseline record): a suite run needs only
    the digest of every scenario, and redacting each definition would cost more than running it.
    """

    scenario_id: str
    digest: str
    clear: bytes = field(compare=False, repr=False)  # canonical JSON: compact, kept per scenario

    @property
    def shown(self) -> Mapping[str, Any]:
        shown: Mapping[str, Any] = redact(json.loads(self.clear))
        return shown


def scenario_inputs(
    scenario: Scenario,
    *,
    provider: Mapping[str, Any],
    policy_digest: str,
    registry_digest: str,
    mcp_config_digest: str | None,
) -> ScenarioInputs:
    """The inputs of `scenario` run by `provider` ({name, model, live}) with that policy,
    registry and MCP config."""
    clear: dict[str, Any] = scenario.model_dump(
        mode="json", exclude=set(NOT_INPUTS | BY_DIGEST), exclude_defaults=True
    )
    clear["provider"] = dict(provider)
    clear["policy_digest"] = policy_digest
    clear["registry_digest"] = registry_digest
    if mcp_config_digest is not None:
        clear["mcp_config_digest"] = mcp_config_digest
    raw = canonical_json(clear)  # encoded once, for the digest (as `digest` labels it) and kept
    return ScenarioInputs(scenario.id, "sha256:" + hashlib.sha256(raw).hexdigest(), raw)
