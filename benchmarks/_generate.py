"""A big replay suite for benchmarks: the shipped non-MCP scenarios, replicated with new ids.

Run: .venv/bin/python benchmarks/_generate.py DEST --count 1000
The copies keep their file's neighbours (policies/, scripts/), so each runs exactly as the
original does; ids get a `-rNNNN` suffix so the suite has no duplicates.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import yaml

SHIPPED = Path(__file__).resolve().parent.parent / "scenarios"
PER_FILE = 100
# The files issue 11 measured its 1,000-scenario figures on (before issue 13 added kb, http,
# claims and checkpoint scenarios): `--issue-11-mix` replicates only these, for like with like.
ISSUE_11_FILES = (
    "approvals.yaml", "blocks.yaml", "budgets.yaml", "failures.yaml", "guardrails.yaml",
    "reads.yaml", "sql.yaml", "writes.yaml",
)  # fmt: skip


def shipped_scenarios(
    source: Path = SHIPPED, only: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """Every scenario of the top-level files (scenarios/mcp/ starts servers: left out), or of
    the files named in `only`."""
    found: list[dict[str, Any]] = []
    for path in sorted(source.glob("*.yaml")):
        if only is not None and path.name not in only:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        found.extend(data["scenarios"])
    return found


def _renamed(value: Any, old: str, new: str) -> Any:
    """A deep copy with every string equal to the old id replaced (the id itself, and the
    prior calls and budget resets that name the scenario's own run)."""
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return new if value == old else value


def generate_suite(
    dest: Path, count: int, source: Path = SHIPPED, only: tuple[str, ...] | None = None
) -> Path:
    """Write `count` scenarios into `dest` (files of PER_FILE) beside copies of the shipped
    policies/ and scripts/; returns `dest`."""
    originals = shipped_scenarios(source, only)
    dest.mkdir(parents=True, exist_ok=True)
    for folder in ("policies", "scripts"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, dest / folder, dirs_exist_ok=True)
    batch: list[dict[str, Any]] = []
    written = 0
    for n in range(count):
        original = originals[n % len(originals)]
        batch.append(_renamed(original, original["id"], f"{original['id']}-r{n:05d}"))
        if len(batch) == PER_FILE or n == count - 1:
            target = dest / f"bench-{written:03d}.yaml"
            target.write_text(
                yaml.safe_dump({"scenarios": batch}, sort_keys=False), encoding="utf-8"
            )
            written += 1
            batch = []
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    generate_suite(args.dest, args.count)
    print(f"{args.count} scenarios in {args.dest}")


if __name__ == "__main__":
    main()
