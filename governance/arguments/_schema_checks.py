"""A tool's argument checks, per descriptor: its local-only validator and its valid-proof.

The firewall checks each governed call's arguments with these, and the scenario contract check
checks scripted arguments with the same pair: one way to read arguments, never a second judge.
The proof (`_schema_proof`) can only say "valid"; anything else is jsonschema's to judge and word.
"""

from __future__ import annotations

from typing import NamedTuple

from jsonschema import Draft202012Validator

from governance.arguments._schema_proof import Proof, valid_proof
from governance.arguments._schemas import local_validator
from governance.core._contracts import ToolDescriptor


class SchemaChecks(NamedTuple):
    validator: Draft202012Validator
    proof: Proof | None  # None: the schema is outside what the proof models


# Per descriptor object: a suite builds a firewall per scenario over the same built-in
# descriptors, and finding a validator (its schema's canonical text as the key) cost more than
# the proven check itself. A descriptor is frozen and its schema is not edited in place (an MCP
# listing builds new descriptors): the registry digest assumes the same. The entry keeps the
# descriptor alive, so its id is never reused while it is remembered.
_CHECKS: dict[int, tuple[ToolDescriptor, SchemaChecks]] = {}
_CHECKS_MAX = 1024


def schema_checks(descriptor: ToolDescriptor) -> SchemaChecks:
    """SchemaRefused when the descriptor's schema cannot be used (nothing is remembered)."""
    entry = _CHECKS.get(id(descriptor))
    if entry is not None and entry[0] is descriptor:
        return entry[1]
    validator = local_validator(descriptor.input_schema)
    checks = SchemaChecks(validator, valid_proof(validator))
    if len(_CHECKS) >= _CHECKS_MAX:
        _CHECKS.clear()
    _CHECKS[id(descriptor)] = (descriptor, checks)
    return checks
