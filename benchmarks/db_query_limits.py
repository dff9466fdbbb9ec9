"""How fast `db.query` answers a normal query and how soon its limits stop a hostile one.

Run: .venv/bin/python benchmarks/db_query_limits.py
Results are written down in benchmarks/RESULTS.md with the command that produced them.
The hostile queries are bounded by the tool's own limits; each takes at most ~1 s.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from pathlib import Path

from governance.tools import ToolExecutionError, Workspace, run_read_only_query

QUERIES = {
    "normal SELECT (8 orders)": "SELECT * FROM orders ORDER BY total DESC",
    "runaway recursive CTE": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
    "SELECT count(*) FROM r",
    "hex(zeroblob(1e8))": "SELECT hex(zeroblob(1e8))",
    "doubling x || x": "WITH RECURSIVE r(x) AS (SELECT 'ab' UNION ALL SELECT x || x FROM r) "
    "SELECT max(length(x)) FROM r",
    "sorted 256 KB rows": "WITH RECURSIVE r(n, x) AS (SELECT 1, printf('%.*c', 260000, 'x') "
    "UNION ALL SELECT n + 1, x FROM r) SELECT n FROM r ORDER BY x, n",
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Workspace(Path(tmp)).ensure().db_path
        for label, sql in QUERIES.items():
            times, outcome = [], ""
            for _ in range(3):
                start = time.perf_counter()
                try:
                    run_read_only_query(db, sql)
                    outcome = "answered"
                except ToolExecutionError as exc:
                    outcome = exc.reason
                times.append((time.perf_counter() - start) * 1e3)
            print(f"{label}: {outcome}, median {statistics.median(times):.1f} ms")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak RSS of this process: {peak} MB")


if __name__ == "__main__":
    main()
