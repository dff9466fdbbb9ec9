"""`scenarios/policies/mutants.yaml`: mutants accepted as equivalent, each with a reason.

It lives under `policies/` because it is about policies, and because every other YAML file
below `scenarios/` is read as a scenario file.

An equivalent mutant changes no behaviour any input could show (e.g. a block rule that an
allow rule's own condition already makes redundant). Each entry names the policy file (as
coverage names it), the target, the mutation and why; a malformed file is a suite error
(exit 3) naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance.config import decode_text, load_yaml_with_lines
from harness._errors import ScenarioError

DEFAULT_MUTANTS_FILE = (
    Path(__file__).resolve().parent.parent / "scenarios" / "policies" / "mutants.yaml"
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EquivalentModel(_Model):
    policy: str = Field(min_length=1, description="Policy file, relative to the project root.")
    target: str = Field(pattern=r"^(rule|budget):[a-z0-9][a-z0-9_.-]*$")
    mutation: str = Field(min_length=1, description="As `proctor mutate` names it.")
    reason: str = Field(min_length=10, description="Why no input could tell them apart.")


class MutantsFileModel(_Model):
    equivalent: list[EquivalentModel] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Equivalent:
    policy: str
    target: str
    mutation: str
    reason: str
    line: int
    source: str  # the file, for messages


def load_equivalents(path: Path) -> dict[tuple[str, str, str], Equivalent]:
    """Entries keyed by (policy, target, mutation); a missing file means none."""
    if not path.is_file():
        return {}
    shown = str(path)
    text = decode_text(path.read_bytes(), shown, ScenarioError, subject="mutants file")
    data, lines = load_yaml_with_lines(text, shown, ScenarioError, subject="mutants file")
    if data is None:
        return {}
    try:
        model = MutantsFileModel.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), 1)
        where = ".".join(str(part) for part in loc) or "the file"
        raise ScenarioError(
            shown,
            line,
            f"{where}: {error['msg']} (each entry: policy, target `rule:<id>` or "
            "`budget:<id>`, mutation, reason)",
        ) from None
    found: dict[tuple[str, str, str], Equivalent] = {}
    for index, entry in enumerate(model.equivalent):
        line = lines.get(("equivalent", index), 1)
        key = (entry.policy, entry.target, entry.mutation)
        if key in found:
            raise ScenarioError(
                shown, line, f"duplicate entry for {entry.target} {entry.mutation}: keep one"
            )
        found[key] = Equivalent(
            entry.policy, entry.target, entry.mutation, entry.reason, line, shown
        )
    return found
