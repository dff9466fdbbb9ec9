"""A streamed run's check results on disk, a scenario's group at a time: memory stays flat.

What stays in memory is the count and the failed checks (the reports and the exit code name
each of them; a suite that fails everywhere holds those, a passing one holds none).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from harness._results import CheckResult
from harness._spill import Spill

_Row = tuple[str, str, bool, str]  # id, kind, passed, why: pickled as plain tuples (fast)


class StoredChecks(Sequence[CheckResult]):
    """Check results in the order they were added, each scenario's together."""

    def __init__(self) -> None:
        self._groups: Spill[tuple[str, list[_Row]]] = Spill()
        self._total = 0
        self._failed: list[CheckResult] = []

    def add_group(self, scenario_id: str, checks: Iterable[CheckResult]) -> None:
        """One scenario's checks (every check passed here has that scenario id)."""
        rows: list[_Row] = []
        failed: list[CheckResult] = []
        for check in checks:
            if check.scenario_id != scenario_id:
                raise ValueError(f"check of {check.scenario_id!r} in {scenario_id!r}'s group")
            rows.append((check.id, check.kind, check.passed, check.why))
            if not check.passed:
                failed.append(check)
        self._groups.append((scenario_id, rows))
        self._total += len(rows)
        self._failed += failed

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(self._failed)

    def groups(self) -> Iterator[tuple[str, tuple[CheckResult, ...]]]:
        """(scenario id, its checks), in the order they were added."""
        for sid, rows in self._groups:
            yield sid, tuple(CheckResult(sid, *row) for row in rows)

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[CheckResult]:
        for _, checks in self.groups():
            yield from checks

    @overload
    def __getitem__(self, index: int) -> CheckResult: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[CheckResult]: ...

    def __getitem__(self, index: int | slice) -> CheckResult | Sequence[CheckResult]:
        wanted = range(self._total)[index]  # raises IndexError as a tuple would
        if isinstance(wanted, range):
            return [check for n, check in enumerate(self) if n in wanted]
        return next(check for n, check in enumerate(self) if n == wanted)
