"""Which shard directories `proctor merge` refuses, and why: pure checks over their shard.json
records and the suite the merge loaded. Every problem names the directory (or shard) it is in;
the CLI refuses with all of them at once (exit 3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from governance import ConfigError
from harness._shard import CodeRecord, ShardRecord, TreeRecord, shard_of

_MAX_SHOWN = 25


class ShardsRefused(ConfigError):
    """The shard directories do not make one run of one suite: nothing is merged (exit 3)."""


@dataclass(frozen=True, slots=True)
class ShardDir:
    where: str  # the directory as given
    record: ShardRecord


# What every shard must agree on, by name as the refusal shows it.
_AGREED: dict[str, Callable[[ShardRecord], object]] = {
    "shard count": lambda r: r.count,
    "suite (digest of the selected scenarios)": lambda r: (r.suite_digest, r.suite_size),
    "commit": lambda r: r.commit,
    "uncommitted changes": lambda r: _tree(r.tree),
    "code (Proctor, Python, dependencies, harness source)": lambda r: r.code.model_dump(),
    "baseline": lambda r: r.baseline.model_dump(),
    "options (provider, --scenarios, selectors, --fail-on-drift)": lambda r: r.options.model_dump(),
}


def record_problems(shards: Sequence[ShardDir]) -> list[str]:
    """Shards of different runs, a shard given twice, a shard missing."""
    problems: list[str] = []
    first = shards[0]
    for what, value in _AGREED.items():
        differ = [s for s in shards if value(s.record) != value(first.record)]
        if differ:
            shown = ", ".join(f"{s.where} ({_shown(value(s.record))})" for s in differ[:5])
            problems.append(
                f"{what} differs: {first.where} has {_shown(value(first.record))}, but {shown}"
            )
    if problems:
        return problems  # indexes of differently counted shards mean nothing together
    by_index: dict[int, list[str]] = {}
    for shard in shards:
        by_index.setdefault(shard.record.index, []).append(shard.where)
    count = first.record.count
    for index, where in sorted(by_index.items()):
        if len(where) > 1:
            problems.append(f"shard {index}/{count} is given twice: {', '.join(where)}")
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in by_index]
    if missing:
        problems.append(
            f"shard(s) {', '.join(missing)} missing: the merge needs all {count} shard "
            "directories of the run"
        )
    return problems


@dataclass(frozen=True, slots=True)
class CodeHere:
    """Where and with what code the merge itself runs (harness._code_state)."""

    commit: str | None
    tree: TreeRecord | None
    code: CodeRecord


def other_code_problems(shards: Sequence[ShardDir], here: CodeHere) -> list[str]:
    """How the merge's code differs from the code the shards ran (call once they agree): the
    merge scores and gates, so other code would judge their traces by other rules. Commit and
    uncommitted changes are compared only when both sides are in a git repository."""
    ran = shards[0].record
    problems: list[str] = []
    if ran.commit is not None and here.commit is not None:
        if ran.commit != here.commit:
            problems.append(f"commit: the shards ran at {ran.commit}, the merge at {here.commit}")
        elif _tree(ran.tree) != _tree(here.tree):
            problems.append(
                f"uncommitted changes: the shards ran with {_tree(ran.tree)}, the merge has "
                f"{_tree(here.tree)}"
            )
    theirs, ours = ran.code.model_dump(), here.code.model_dump()
    for field, value in theirs.items():
        if value != ours[field]:
            problems.append(f"code ({field}): the shards ran {value}, the merge runs {ours[field]}")
    return problems


def partition_problems(suite_ids: Iterable[str], shards: Sequence[ShardDir]) -> list[str]:
    """Each shard ran exactly the scenarios its index holds in the suite, in suite order; no
    scenario twice, none missing. Call only when `record_problems` found none."""
    problems: list[str] = []
    count = shards[0].record.count
    expected: dict[int, list[str]] = {i: [] for i in range(1, count + 1)}
    for sid in suite_ids:
        expected[shard_of(sid, count)].append(sid)
    owner: dict[str, str] = {}
    for shard in shards:
        record = shard.record
        for sid in record.scenario_ids:
            if sid in owner:
                problems.append(f"scenario {sid} is in two shards: {owner[sid]} and {shard.where}")
            owner[sid] = shard.where
        want = expected[record.index]
        if record.scenario_ids != want:
            extra = sorted(set(record.scenario_ids) - set(want))
            lack = sorted(set(want) - set(record.scenario_ids))
            detail = []
            if extra:
                detail.append(f"ran {_few(extra)}, which shard {record.shard} does not hold")
            if lack:
                detail.append(f"lacks {_few(lack)}")
            if not detail:
                detail.append("lists its scenarios out of the suite's order")
            problems.append(f"{shard.where} (shard {record.shard}): {'; '.join(detail)}")
    return problems


def listing(head: str, problems: Sequence[str]) -> str:
    lines = [f"{head} ({len(problems)} problem(s)):"]
    lines += [f"  {p}" for p in problems[:_MAX_SHOWN]]
    if len(problems) > _MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - _MAX_SHOWN} more")
    return "\n".join(lines)


def _tree(tree: TreeRecord | None) -> str:
    if tree is None:
        return "(no repository)"
    return f"uncommitted changes {tree.digest}" if tree.dirty else "a clean tree"


def _few(ids: Sequence[str], limit: int = 5) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _shown(value: object, limit: int = 100) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
