"""One AgentDojo suite as Proctor runs it: its functions with their committed facts, and a fresh
copy of its environment per scenario (governance.agentdojo._environments builds it as AgentDojo
would, without re-parsing its YAML for each scenario).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Mapping
from typing import Any

from governance.agentdojo._environments import SuiteEnvironments
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
        self._environments: SuiteEnvironments | None = None

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

    def _built(self) -> SuiteEnvironments:
        if self._environments is None:
            self._environments = SuiteEnvironments(self.suite)
        return self._environments

    def vectors(self) -> dict[str, str]:
        """Injection vector id -> its default (harmless) text."""
        with self._lock:
            return dict(self._built().defaults)

    def injection_problem(self, text: str) -> str | None:
        """Why AgentDojo's environment cannot take `text` in its vectors (its YAML would not
        parse, e.g. a double quote inside a quoted scalar), or None: checked before a run."""
        with self._lock:
            try:
                self._built().placed(text)
            except Exception as exc:  # yaml's errors and anything AgentDojo's models refuse
                first = str(exc).splitlines()[0] if str(exc) else ""
                return f"{type(exc).__name__}: {first}"
        return None

    def environment(self, injections: Mapping[str, str]) -> Any:
        """A fresh environment: AgentDojo's default with `injections` placed in their vectors,
        exactly as `load_and_inject_default_environment(injections)` builds it."""
        with self._lock:
            built = self._built()
            unknown = sorted(set(injections) - set(built.defaults))
            if unknown:
                raise AgentDojoUnavailable(
                    f"suite {self.name!r} has no injection vector {', '.join(unknown)}"
                )
            return copy_environment(built.shared(injections))


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
