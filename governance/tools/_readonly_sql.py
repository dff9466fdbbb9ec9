"""`db.query`'s engine: one SELECT on a read-only connection, bounded in time, memory and size.

The policy's `sql_read_only` check is a text heuristic; this module does not rely on it. SQLite
itself refuses anything but reading, through an authorizer that allows only the actions a
SELECT needs (so `ATTACH`, `VACUUM INTO`, `PRAGMA`, temp objects and every write are denied
whatever the policy says), and the work a query may do is capped:

- VM steps: a progress handler counts SQLite virtual-machine instructions and stops the query
  at a fixed budget, so a runaway recursive CTE stops at the same point on every machine;
- wall clock: the same handler checks a deadline, because one instruction can move a whole
  value (a recursive CTE copying 1 MB rows ran 119 s inside a 5M-step budget);
- value size: `SQLITE_LIMIT_LENGTH` caps every string, blob and row, so a doubling `x || x`
  or a `replace()` blow-up is refused when it is built, before memory is spent;
- parse size: SQL length, expression depth, compound terms and program size are capped;
- memory: `temp_store = FILE` and a small page cache keep sorts and recursive queues off the
  heap (anonymous temp files, deleted on close). `PRAGMA hard_heap_limit` is not used: it is
  process-wide, so it would starve the audit and approval stores, and it can never be raised
  back once lowered;
- result size: at most `max_rows` rows and `max_chars` characters are fetched and returned.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance.tools._local import ToolExecutionError


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """What one `db.query` call may spend."""

    max_steps: int = 5_000_000  # ~55 ms of tight VM loop on the 2-core CI machine
    deadline_s: float = 1.0  # backstop for instructions that each move a large value
    max_value_bytes: int = 262_144  # any value the tools store (50,000 chars of UTF-8) fits
    max_sql_bytes: int = 20_000  # QueryArgs allows 5,000 characters, up to 4 bytes each
    max_expr_depth: int = 100
    max_compound_select: int = 50
    max_program_ops: int = 25_000
    max_like_pattern_bytes: int = 1_000
    max_columns: int = 200
    max_rows: int = 50
    max_chars: int = 20_000


DEFAULT_LIMITS = QueryLimits()

# Instructions between two progress-handler calls: the granularity of the step budget.
_STEP_CHUNK = 1_000

# Pure functions a read-only business query needs. Anything else (load_extension, zeroblob,
# randomblob, sqlite_* introspection, extension functions) is refused at prepare time.
ALLOWED_FUNCTIONS = frozenset(
    """
    abs char coalesce format glob hex ifnull iif instr length like likelihood likely lower
    ltrim max min nullif printf quote replace round rtrim sign substr substring trim typeof
    unicode unlikely upper concat concat_ws octet_length
    avg count group_concat string_agg sum total
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    date time datetime julianday unixepoch strftime timediff
    acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log
    log10 log2 mod pi pow power radians sin sinh sqrt tan tanh trunc
    json json_array json_array_length json_extract json_insert json_object json_patch
    json_quote json_remove json_replace json_set json_type json_valid json_group_array
    json_group_object -> ->>
    """.split()
)

# Authorizer action codes by name, for refusal messages (result codes share these numbers).
_ACTION_NAMES = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_")
    for name in """SQLITE_CREATE_INDEX SQLITE_CREATE_TABLE SQLITE_CREATE_TEMP_INDEX
    SQLITE_CREATE_TEMP_TABLE SQLITE_CREATE_TEMP_TRIGGER SQLITE_CREATE_TEMP_VIEW
    SQLITE_CREATE_TRIGGER SQLITE_CREATE_VIEW SQLITE_DELETE SQLITE_DROP_INDEX SQLITE_DROP_TABLE
    SQLITE_DROP_TEMP_INDEX SQLITE_DROP_TEMP_TABLE SQLITE_DROP_TEMP_TRIGGER SQLITE_DROP_TEMP_VIEW
    SQLITE_DROP_TRIGGER SQLITE_DROP_VIEW SQLITE_INSERT SQLITE_PRAGMA SQLITE_READ SQLITE_SELECT
    SQLITE_TRANSACTION SQLITE_UPDATE SQLITE_ATTACH SQLITE_DETACH SQLITE_ALTER_TABLE
    SQLITE_REINDEX SQLITE_ANALYZE SQLITE_CREATE_VTABLE SQLITE_DROP_VTABLE SQLITE_FUNCTION
    SQLITE_SAVEPOINT SQLITE_RECURSIVE""".split()
}


class _Guard:
    """The authorizer and progress handler of one query; remembers why it stopped it."""

    def __init__(self, limits: QueryLimits, clock: Callable[[], float]) -> None:
        self._limits = limits
        self._clock = clock
        self._deadline = clock() + limits.deadline_s
        self.steps = 0
        self.denied: str | None = None
        self.stopped: str | None = None

    def authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, _src: str | None
    ) -> int:
        """Allow-list: reading tables of `main`, recursion, and the functions above."""
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        # db is None for a window function's pseudo-read; "temp" never holds business data.
        if action == sqlite3.SQLITE_READ and db in ("main", None):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in ALLOWED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if self.denied is None:
            name = _ACTION_NAMES.get(action, str(action))
            subject = arg2 if action == sqlite3.SQLITE_FUNCTION else arg1
            self.denied = f"{name} {subject}" if subject else name
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        self.steps += _STEP_CHUNK
        if self.steps >= self._limits.max_steps:
            self.stopped = f"it ran {self._limits.max_steps:,} SQLite VM steps, the budget"
            return 1
        if self._clock() >= self._deadline:
            self.stopped = f"it ran past the {self._limits.deadline_s:g} s deadline"
            return 1
        return 0


def _open(db_path: Path, limits: QueryLimits, guard: _Guard) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    try:
        # Our own pragmas run before the authorizer, which denies every PRAGMA after them.
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute("PRAGMA cache_size = -2048")  # KiB: 2 MiB of page cache
        for limit, value in (
            (sqlite3.SQLITE_LIMIT_LENGTH, limits.max_value_bytes),
            (sqlite3.SQLITE_LIMIT_SQL_LENGTH, limits.max_sql_bytes),
            (sqlite3.SQLITE_LIMIT_EXPR_DEPTH, limits.max_expr_depth),
            (sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, limits.max_compound_select),
            (sqlite3.SQLITE_LIMIT_VDBE_OP, limits.max_program_ops),
            (sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, limits.max_like_pattern_bytes),
            (sqlite3.SQLITE_LIMIT_COLUMN, limits.max_columns),
            (sqlite3.SQLITE_LIMIT_ATTACHED, 0),
            (sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 0),
        ):
            conn.setlimit(limit, value)
        conn.set_authorizer(guard.authorize)
        conn.set_progress_handler(guard.progress, _STEP_CHUNK)
    except BaseException:
        conn.close()
        raise
    return conn


def _cell(value: object) -> object:
    """A JSON-safe cell: blobs as an SQL hex literal, infinities as text."""
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _refusal(exc: sqlite3.Error, guard: _Guard, limits: QueryLimits) -> ToolExecutionError:
    code = getattr(exc, "sqlite_errorcode", None)
    if guard.stopped is not None:
        return ToolExecutionError("query_timeout", f"the query was stopped: {guard.stopped}")
    if guard.denied is not None or code == sqlite3.SQLITE_AUTH:
        return ToolExecutionError(
            "query_not_allowed",
            f"SQLite refused {guard.denied or 'an action'}: db.query runs one read-only SELECT "
            "over the business tables with built-in functions only",
        )
    if code == sqlite3.SQLITE_TOOBIG:
        return ToolExecutionError(
            "query_too_big",
            f"the query or a value it builds is over the {limits.max_value_bytes:,}-byte limit",
        )
    return ToolExecutionError("query_failed", f"the query failed: {exc}")


def run_read_only_query(
    db_path: Path,
    sql: str,
    *,
    limits: QueryLimits = DEFAULT_LIMITS,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Run one SELECT; `truncated` says the row or character cap cut the result short."""
    guard = _Guard(limits, clock)
    conn = _open(db_path, limits, guard)
    rows: list[list[object]] = []
    truncated = False
    try:
        try:
            cursor = conn.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            budget = max(0, limits.max_chars - sum(len(c) for c in columns))
            while not truncated:
                row = cursor.fetchone()
                if row is None:
                    break
                if len(rows) == limits.max_rows:  # one row past the cap: say so, stop reading
                    truncated = True
                    break
                cells = [_cell(v) for v in row]
                for i, cell in enumerate(cells):
                    size = len(cell) if isinstance(cell, str) else len(str(cell))
                    if size > budget:
                        truncated = True
                        cells[i] = cell[:budget] if isinstance(cell, str) else None
                        cells[i + 1 :] = [None] * (len(cells) - i - 1)
                        break
                    budget -= size
                rows.append(cells)
        except sqlite3.Error as exc:
            raise _refusal(exc, guard, limits) from None
    finally:
        conn.close()
    return {"columns": columns, "rows": rows, "truncated": truncated}
