"""One AgentDojo suite as Proctor runs it: its functions with their committed facts, and a fresh
copy of its environment per scenario.

AgentDojo builds an environment by formatting its YAML text with the injections and parsing it
(~90 ms for workspace). A suite run needs one per scenario, so the default environment is
parsed once, and once more with a canary in every injection vector to find the string fields
each vector lands in; a scenario then gets a deep copy of the default with only those fields
rewritten (~2 ms for workspace). The default environment is exactly AgentDojo's; an injection's
text is placed as written (AgentDojo formats it into its YAML source, where a quoted scalar
would fold its line breaks: the words are the same).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.agentdojo._mapping import (
    AgentDojoMapping,
    AgentDojoMappingError,
    load_agentdojo_mapping,
    mapping_path,
)
from governance.core._contracts import ToolDescriptor
from governance.core._errors import ExtraUnavailable

INSTALL_HINT = "pip install 'proctor[agentdojo]'"
SOURCE_NAME = "agentdojo"


class AgentDojoUnavailable(ExtraUnavailable):
    """The optional `agentdojo` package is missing, or does not know a suite/version/task."""


def _canary(vector: str) -> str:
    # Letters, digits and '_' only: it goes into AgentDojo's YAML text before parsing.
    return f"PROCTOR_CANARY_{vector}_END"


def import_suites(benchmark_version: str) -> Mapping[str, Any]:
    """AgentDojo's suites of one benchmark version (the package is imported here, lazily)."""
    try:
        from agentdojo.task_suite.load_suites import get_suites
    except ImportError as exc:
        raise AgentDojoUnavailable(
            f"AgentDojo is not installed ({exc}); install it with: {INSTALL_HINT}"
        ) from None
    try:
        suites = dict(get_suites(benchmark_version))
    except (KeyError, ValueError):
        suites = {}
    if not suites:
        raise AgentDojoUnavailable(
            f"AgentDojo has no benchmark version {benchmark_version!r} (v1.2.2 is the latest "
            "this Proctor was built against)"
        )
    return suites


_Step = tuple[str, Any]  # ("attr", name) | ("key", key) | ("index", i)


def _strings_with_canaries(
    value: Any, canaries: Sequence[str], path: tuple[_Step, ...] = ()
) -> Iterable[tuple[tuple[_Step, ...], str]]:
    """(path, text) of every string inside `value` that holds a canary."""
    if isinstance(value, str):
        if any(canary in value for canary in canaries):
            yield path, value
    elif hasattr(value, "__pydantic_fields__") and hasattr(value, "__dict__"):
        for name, item in value.__dict__.items():
            yield from _strings_with_canaries(item, canaries, (*path, ("attr", name)))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings_with_canaries(item, canaries, (*path, ("key", key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings_with_canaries(item, canaries, (*path, ("index", index)))


def _set_at(root: Any, path: tuple[_Step, ...], text: str) -> Any:
    """Set the string at `path`; return the innermost model holding it (to validate again)."""
    target = owner = root
    for kind, key in path[:-1]:
        target = target.__dict__[key] if kind == "attr" else target[key]
        if hasattr(target, "__pydantic_fields__"):
            owner = target
    kind, key = path[-1]
    if kind == "attr":
        target.__dict__[key] = text  # validated below, with the rest of its model
    else:
        target[key] = text
    return owner


def _validate_in_place(model: Any) -> None:
    """Run a model's validators again over its new field values (AgentDojo derives fields from
    text, e.g. a file's size from its content), keeping the object: others may share it."""
    fresh = type(model).model_validate(model.model_dump(by_alias=True))
    model.__dict__.update(fresh.__dict__)


@dataclass(frozen=True, slots=True)
class _Spot:
    path: tuple[_Step, ...]
    template: str  # the parsed string, canaries in place


class SuiteTools:
    """An AgentDojo suite's tools (descriptors built once) and its environments."""

    def __init__(
        self,
        suite: str,
        benchmark_version: str = "v1.2.2",
        *,
        mapping: AgentDojoMapping | None = None,
    ) -> None:
        suites = import_suites(benchmark_version)
        if suite not in suites:
            raise AgentDojoUnavailable(
                f"AgentDojo {benchmark_version} has no suite {suite!r} (it has "
                f"{', '.join(sorted(suites))})"
            )
        self.name = suite
        self.benchmark_version = benchmark_version
        self.suite = suites[suite]
        self.mapping = mapping or load_agentdojo_mapping(mapping_path(suite))
        if self.mapping.suite != suite:
            raise AgentDojoMappingError(
                self.mapping.path,
                None,
                f"this file maps suite {self.mapping.suite!r}, not {suite!r}",
            )
        self.functions = {function.name: function for function in self.suite.tools}
        from agentdojo.functions_runtime import FunctionsRuntime  # installed: imported above

        self.runtime = FunctionsRuntime(self.suite.tools)
        self.mapping.check_covers(self.functions)
        self.descriptors = tuple(self._descriptor(name) for name in sorted(self.functions))
        self._lock = threading.Lock()
        self._pristine: Any = None
        self._spots: tuple[_Spot, ...] = ()
        self._defaults: dict[str, str] = {}

    def _descriptor(self, function: str) -> ToolDescriptor:
        facts = self.mapping.tools[function]
        spec = self.functions[function]
        schema = dict(spec.parameters.model_json_schema())
        # AgentDojo's argument models ignore unknown fields; the firewall refuses them instead,
        # so what the policy judged is all the function receives.
        schema["additionalProperties"] = False
        return ToolDescriptor(
            name=f"{self.name}.{function}",
            description=spec.description,
            input_schema=schema,
            source=SOURCE_NAME,
            action_type=facts.action_type,
            risk=facts.risk,
            reversible=facts.reversible,
            external_side_effect=facts.external_side_effect,
            idempotent=facts.idempotent,
            untrusted_output=facts.untrusted_output,
        )

    def _load_pristine(self) -> None:
        defaults = self.suite.get_injection_vector_defaults()
        canaries = {vector: _canary(vector) for vector in defaults}
        marked = self.suite.load_and_inject_default_environment(canaries)
        spots = tuple(
            _Spot(path, text)
            for path, text in _strings_with_canaries(marked, list(canaries.values()))
        )
        self._defaults = dict(defaults)
        self._spots = spots
        # Kept pickled: unpickling is ~3x faster than copy.deepcopy of these pydantic trees (and
        # keeps the objects two fields share, e.g. a file in both `initial_files` and `files`).
        self._pristine = pickle.dumps(
            self.suite.load_and_inject_default_environment({}), protocol=pickle.HIGHEST_PROTOCOL
        )

    def vectors(self) -> dict[str, str]:
        """Injection vector id -> its default (harmless) text."""
        with self._lock:
            if self._pristine is None:
                self._load_pristine()
            return dict(self._defaults)

    def environment(self, injections: Mapping[str, str]) -> Any:
        """A fresh environment: AgentDojo's default with `injections` placed in their vectors."""
        with self._lock:
            if self._pristine is None:
                self._load_pristine()
            unknown = sorted(set(injections) - set(self._defaults))
            if unknown:
                raise AgentDojoUnavailable(
                    f"suite {self.name!r} has no injection vector {', '.join(unknown)}"
                )
            environment = pickle.loads(self._pristine)
            if not injections:
                return environment
            texts = {**self._defaults, **injections}
            owners: dict[int, Any] = {}
            for spot in self._spots:
                if not any(_canary(vector) in spot.template for vector in injections):
                    continue  # AgentDojo's own parse of the default text stands
                text = spot.template
                for vector, value in texts.items():
                    text = text.replace(_canary(vector), value)
                owner = _set_at(environment, spot.path, text)
                owners[id(owner)] = owner
            for owner in owners.values():
                if owner is not environment:
                    _validate_in_place(owner)
            return environment


def copy_environment(environment: Any) -> Any:
    """A deep copy of an environment (the pre-run state AgentDojo's checks compare with)."""
    return pickle.loads(pickle.dumps(environment, protocol=pickle.HIGHEST_PROTOCOL))


_SUITES: dict[tuple[str, str], SuiteTools] = {}
_SUITES_LOCK = threading.Lock()


def suite_tools(suite: str, benchmark_version: str = "v1.2.2") -> SuiteTools:
    """This process's `SuiteTools` of a suite (built once: AgentDojo's import and parse cost)."""
    key = (suite, benchmark_version)
    with _SUITES_LOCK:
        found = _SUITES.get(key)
        if found is None:
            found = _SUITES[key] = SuiteTools(suite, benchmark_version)
        return found
