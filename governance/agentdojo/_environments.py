"""A suite's environment with any injections, without parsing AgentDojo's YAML for each.

AgentDojo's `load_and_inject_default_environment` formats the suite's environment YAML with the
injections and parses it again on every call, with PyYAML's pure-Python loader (~50 ms for
the workspace suite: ~1,000 pairs would take most of a minute). Here the suite is parsed once
with a canary string in every vector; an injection text is parsed once (in every vector at once)
to learn what each string holding a vector becomes (YAML may fold the text and the words around
it); an environment with some injections is then the canary parse with those strings replaced,
validated into the suite's model. That is exact only if a text changes nothing but the strings
holding its vector, so it is checked for every text (the parse with the text everywhere must
equal the canary parse with the strings replaced); a text that fails the check takes AgentDojo's
own route (format, parse, validate).
A test pins the result against `load_and_inject_default_environment`. The importer (which
scripts each pair on it) and the runner (which runs the pair on it) share this one reading.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import yaml


def canaries(vectors: Sequence[str]) -> dict[str, str]:
    """A string per vector that no environment holds otherwise (AgentDojo's own spelling)."""
    return {vector: f"<CANARY---{vector}--->" for vector in vectors}


KEPT = 32  # environments kept (a workspace one is a few hundred kB of objects)
CANARY_START = "<CANARY---"
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's


class SuiteEnvironments:
    """The environments of one AgentDojo suite (`TaskSuite`), keyed by their injections."""

    def __init__(self, suite: Any) -> None:
        from agentdojo.task_suite.task_suite import read_suite_file

        self._suite = suite
        self._template: str = read_suite_file(suite.name, "environment.yaml", suite.data_path)
        self.defaults: dict[str, str] = dict(suite.get_injection_vector_defaults())
        self.marks = canaries(list(self.defaults))
        self._canary_data = self._parse(self.marks)
        self._canary = suite.environment_type.model_validate(self._canary_data)
        # text: vector: {string holding the vector's canary: that string once YAML read the
        # text there}; None when the text did more than change those strings.
        self._learnt: dict[str, dict[str, dict[str, str]] | None] = {}
        self._defaults_placed = self._learn(self.defaults)
        self._kept: OrderedDict[tuple[tuple[str, str], ...], Any] = OrderedDict()

    def load(self, injections: Mapping[str, str]) -> Any:
        """A fresh copy of the environment with `injections` (vector id: text) in place of
        their defaults: what `suite.load_and_inject_default_environment(injections)` returns."""
        return self.shared(injections).model_copy(deep=True)

    def canary(self) -> Any:
        """A fresh copy of the environment with every vector's canary (`self.marks`)."""
        return self._canary.model_copy(deep=True)

    def shared(self, injections: Mapping[str, str]) -> Any:
        """`load`, without the copy: the one kept instance, for code that only reads it (a
        task's ground truth)."""
        unknown = sorted(set(injections) - set(self.defaults))
        if unknown:
            raise ValueError(f"{self._suite.name} has no injection vector(s) {unknown}")
        key = tuple(sorted(injections.items()))
        environment = self._kept.get(key)
        if environment is None:
            environment = self._build(injections)
            self._kept[key] = environment
            if len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        return environment

    def _build(self, injections: Mapping[str, str]) -> Any:
        swaps: dict[str, str] = {}
        for vector in self.defaults:
            placed = (
                self._placed(injections[vector]) if vector in injections else self._defaults_placed
            )
            if placed is None:
                return self._parse_and_validate(injections)
            swaps.update(placed[vector])
        # Validated again rather than patched: a model may derive fields from the text (a
        # file's size from its content).
        return self._suite.environment_type.model_validate(_substituted(self._canary_data, swaps))

    def placed(self, text: str) -> dict[str, dict[str, str]] | None:
        """What `text` becomes in each vector's strings (None: only a full parse can tell);
        raises what AgentDojo's own load would raise for it."""
        placed = self._placed(text)
        if placed is None:  # the slow route must still parse: try it once, for its error
            self._parse_and_validate(dict.fromkeys(self.defaults, text))
        return placed

    def _placed(self, text: str) -> dict[str, dict[str, str]] | None:
        if text not in self._learnt:
            self._learnt[text] = self._learn(dict.fromkeys(self.defaults, text))
        return self._learnt[text]

    def _learn(self, everywhere: Mapping[str, str]) -> dict[str, dict[str, str]] | None:
        """What each string holding a canary becomes with the vectors' texts (`everywhere`:
        vector: text) in place, per vector; None unless that is all the texts change."""
        parsed = self._parse(everywhere)
        learnt: dict[str, dict[str, str]] = {vector: {} for vector in self.marks}
        if not _align(self._canary_data, parsed, self.marks, learnt):
            return None
        swaps = {held: became for strings in learnt.values() for held, became in strings.items()}
        if _substituted(self._canary_data, swaps) != parsed:
            return None
        return learnt

    def _parse(self, injections: Mapping[str, str]) -> Any:
        text = self._template.format(**{**self.defaults, **injections})
        return yaml.load(text, Loader=_Loader)  # a safe loader: libyaml's or PyYAML's

    def _parse_and_validate(self, injections: Mapping[str, str]) -> Any:
        return self._suite.environment_type.model_validate(self._parse(injections))


def _align(
    canary: Any, parsed: Any, marks: Mapping[str, str], learnt: dict[str, dict[str, str]]
) -> bool:
    """Walk the canary parse and another side by side, noting what each string holding a
    canary became. False when their shapes differ, a string holds two canaries (its text would
    depend on two vectors) or one string became two."""
    if isinstance(canary, dict):
        if not isinstance(parsed, dict) or list(canary) != list(parsed):
            return False
        return all(_align(canary[key], parsed[key], marks, learnt) for key in canary)
    if isinstance(canary, list):
        if not isinstance(parsed, list) or len(canary) != len(parsed):
            return False
        return all(_align(a, b, marks, learnt) for a, b in zip(canary, parsed, strict=True))
    if not isinstance(canary, str) or CANARY_START not in canary:
        return True  # the rest is compared whole afterwards
    found = [vector for vector, mark in marks.items() if mark in canary]
    if len(found) != 1 or not isinstance(parsed, str):
        return False
    return learnt[found[0]].setdefault(canary, parsed) == parsed


def _substituted(data: Any, swaps: Mapping[str, str]) -> Any:
    if isinstance(data, dict):
        return {key: _substituted(value, swaps) for key, value in data.items()}
    if isinstance(data, list):
        return [_substituted(value, swaps) for value in data]
    return swaps.get(data, data) if isinstance(data, str) else data
