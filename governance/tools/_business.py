"""Demo business tools over one SQLite file: orders, refund drafts, tickets, an email outbox.

Real but inert: every call leaves a row a test can look for, and nothing leaves the machine
(`email.send` only queues a row in `outbox`). The tools keep one connection per database file
(opening one cost ~200 µs of a ~5 µs lookup), reopened whenever the path stops naming the file
it was opened on (see `_KeptConnection`); `db.query` opens its own read-only one per call.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from governance.tools._local import LocalTool, ToolExecutionError, local_tool
from governance.tools._readonly_sql import run_read_only_query

# (order_id, customer, email, status, total, placed_on): fixed, so every workspace is identical.
SEED_ORDERS: tuple[tuple[str, str, str, str, float, str], ...] = (
    ("ORD-0001", "Ada Lovelace", "ada@example.com", "shipped", 129.5, "2025-07-02"),
    ("ORD-0002", "Grace Hopper", "grace@example.com", "delivered", 42.0, "2025-07-09"),
    ("ORD-0003", "Alan Turing", "alan@example.com", "processing", 310.25, "2025-08-14"),
    ("ORD-0004", "Katherine Johnson", "katherine@example.com", "delivered", 18.99, "2025-08-21"),
    ("ORD-0005", "Edsger Dijkstra", "edsger@example.com", "cancelled", 75.0, "2025-08-30"),
    ("ORD-0006", "Barbara Liskov", "barbara@example.com", "shipped", 1249.0, "2025-09-03"),
    ("ORD-0007", "Donald Knuth", "donald@example.com", "refunded", 64.1, "2025-09-11"),
    ("ORD-0008", "Margaret Hamilton", "margaret@example.com", "delivered", 220.0, "2025-09-27"),
)

_SCHEMA = """
CREATE TABLE orders (
    order_id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    email TEXT NOT NULL,
    status TEXT NOT NULL,
    total REAL NOT NULL,
    placed_on TEXT NOT NULL
);
CREATE TABLE refund_drafts (
    id INTEGER PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    amount REAL NOT NULL CHECK (amount > 0),
    reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'draft'
);
CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    priority TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high'))
);
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY,
    to_addr TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL
);
"""

TABLES: tuple[str, ...] = ("orders", "refund_drafts", "tickets", "outbox")
_ORDER_KEY = {"orders": "order_id", "refund_drafts": "id", "tickets": "id", "outbox": "id"}


def _open(db_path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    # mode=rw: a missing database is an error, never a silently created empty one.
    conn = sqlite3.connect(
        db_path.resolve().as_uri() + "?mode=rw",
        uri=True,
        timeout=5.0,
        check_same_thread=check_same_thread,
    )
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def connect(db_path: Path) -> Iterator[sqlite3.Connection]:
    """One short-lived connection to an existing database; commits on success, always closes."""
    conn = _open(db_path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _identity(db_path: Path) -> tuple[int, ...]:
    """What names the file's bytes from outside SQLite: a replaced file (new inode) or one
    rewritten behind SQLite's back (size, mtime, ctime) gives another identity."""
    st = os.stat(db_path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _KeptConnection:
    """One connection to `db_path`, kept between tool calls and used under a lock.

    Writes made through SQLite by other connections (the suite's backup-API restore, another
    process) are seen by SQLite itself at the next transaction. What SQLite cannot see is the
    path being pointed at another file (`os.replace`, delete and re-create) or the file's bytes
    rewritten outside SQLite: so the file is stat'ed before every use and the connection is
    reopened when its identity changed. The identity is taken on both sides of opening, and a
    connection opened while it changed is never kept. A missing file is an error, as before.
    """

    def __init__(self, db_path: Path) -> None:
        self._path = db_path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, ...] | None = None

    @contextmanager
    def session(self) -> Iterator[sqlite3.Connection]:
        """The kept connection in one transaction: committed on success, rolled back on error."""
        with self._lock:
            conn = self._current()
            try:
                with conn:
                    yield conn
            except ToolExecutionError:
                raise  # a refusal the tool itself raised: the connection is fine
            except BaseException:
                self._drop()  # anything else may have left it unusable: start afresh next time
                raise

    def _current(self) -> sqlite3.Connection:
        identity = _identity(self._path)  # FileNotFoundError for a missing database
        if self._conn is not None and identity == self._identity:
            return self._conn
        self._drop()
        conn = _open(self._path, check_same_thread=False)
        try:
            # Our own WAL checkpoints also move mtime: that only costs a reopen, never a read.
            if _identity(self._path) != identity:
                raise sqlite3.OperationalError(f"{self._path} changed while it was opened")
        except BaseException:
            conn.close()
            raise
        self._conn, self._identity = conn, identity
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            conn, self._conn, self._identity = self._conn, None, None
            conn.close()


def create_database(db_path: Path) -> None:
    """Create and seed the database atomically: it appears complete or not at all."""
    fd, tmp_name = tempfile.mkstemp(prefix=".business-", suffix=".sqlite", dir=db_path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.executescript(_SCHEMA)
            with conn:
                conn.executemany(
                    "INSERT INTO orders (order_id, customer, email, status, total, placed_on) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    SEED_ORDERS,
                )
            conn.execute("PRAGMA journal_mode = WAL")
        finally:
            conn.close()
        os.replace(tmp, db_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def table_rows(db_path: Path, table: str) -> list[dict[str, Any]]:
    """Every row of one table as plain dicts, in key order (for tests and the harness)."""
    if table not in _ORDER_KEY:
        raise ValueError(f"unknown table {table!r}; expected one of {', '.join(TABLES)}")
    with connect(db_path) as conn:
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY {_ORDER_KEY[table]}").fetchall()
    return [dict(row) for row in rows]


def _order(conn: sqlite3.Connection, order_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM orders WHERE order_id = ?", (order_id,)).fetchone()
    if row is None:
        # Read before anything is written (lookup, or a refund draft's first step).
        raise ToolExecutionError("not_found", f"no order {order_id!r}", before_effect=True)
    return dict(row)


def lookup_order(db: _KeptConnection, order_id: str) -> dict[str, Any]:
    with db.session() as conn:
        return _order(conn, order_id)


def create_refund_draft(
    db: _KeptConnection, order_id: str, amount: float, reason: str
) -> dict[str, Any]:
    """A draft only: no money moves. Refused for an unknown order or more than the order total."""
    with db.session() as conn:
        order = _order(conn, order_id)
        if amount > order["total"]:
            raise ToolExecutionError(
                "amount_exceeds_total",
                f"refund {amount} exceeds the total {order['total']} of order {order_id!r}",
                before_effect=True,  # checked before the draft is inserted
            )
        cursor = conn.execute(
            "INSERT INTO refund_drafts (order_id, amount, reason) VALUES (?, ?, ?)",
            (order_id, amount, reason),
        )
        draft_id = cursor.lastrowid
    return {"refund_draft_id": draft_id, "order_id": order_id, "amount": amount, "status": "draft"}


def create_ticket(db: _KeptConnection, title: str, body: str, priority: str) -> dict[str, Any]:
    with db.session() as conn:
        cursor = conn.execute(
            "INSERT INTO tickets (title, body, priority) VALUES (?, ?, ?)", (title, body, priority)
        )
        ticket_id = cursor.lastrowid
    return {"ticket_id": ticket_id, "title": title, "priority": priority}


def queue_email(db: _KeptConnection, to: str, subject: str, body: str) -> dict[str, Any]:
    """Queue the message in `outbox`. Nothing is sent: this is the demo's external effect."""
    with db.session() as conn:
        cursor = conn.execute(
            "INSERT INTO outbox (to_addr, subject, body) VALUES (?, ?, ?)", (to, subject, body)
        )
        outbox_id = cursor.lastrowid
    return {"outbox_id": outbox_id, "to": to, "status": "queued"}


# -- argument models ------------------------------------------------------------------------

# [0-9], not \d: pydantic's regex engine would let \d match any Unicode digit.
OrderId = Annotated[str, Field(pattern=r"^ORD-[0-9]{4}$", description="Order id, like ORD-0001.")]


class OrderLookupArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: OrderId


class RefundDraftArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: OrderId
    amount: float = Field(
        gt=0, le=1_000_000, allow_inf_nan=False, description="Refund amount, greater than 0."
    )
    reason: str = Field(min_length=1, max_length=1000, description="Why the refund is due.")


class TicketArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=200, description="One-line summary.")
    body: str = Field(max_length=10_000, description="Details of the ticket.")
    priority: Literal["low", "normal", "high"] = Field(
        default="normal", description="Ticket priority."
    )


class EmailArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: str = Field(
        pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=320, description="Recipient address."
    )
    subject: str = Field(max_length=300, description="Subject line.")
    body: str = Field(max_length=50_000, description="Plain-text message body.")


class QueryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=5_000, description="One SQL SELECT statement.")


def business_tools(db_path: Path) -> list[LocalTool]:
    """The orders, refunds, tickets and email tools bound to one database file."""
    db = _KeptConnection(db_path)

    @local_tool(
        "orders.lookup",
        description="Look up one order by id: customer, email, status, total and date.",
        args=OrderLookupArgs,
        action_type="read",
        risk="low",
        idempotent=True,
    )
    def orders_lookup(args: OrderLookupArgs) -> dict[str, Any]:
        return lookup_order(db, args.order_id)

    @local_tool(
        "refunds.create_draft",
        description="Create a refund draft for an order (a draft for review; no money moves).",
        args=RefundDraftArgs,
        action_type="write",
        risk="medium",
    )
    def refunds_create_draft(args: RefundDraftArgs) -> dict[str, Any]:
        return create_refund_draft(db, args.order_id, args.amount, args.reason)

    @local_tool(
        "tickets.create",
        description="Open a support ticket.",
        args=TicketArgs,
        action_type="write",
        risk="low",
    )
    def tickets_create(args: TicketArgs) -> dict[str, Any]:
        return create_ticket(db, args.title, args.body, args.priority)

    @local_tool(
        "email.send",
        description="Send an email to a recipient outside the organisation.",
        args=EmailArgs,
        action_type="external",
        risk="high",
        reversible=False,
        external_side_effect=True,
    )
    def email_send(args: EmailArgs) -> dict[str, Any]:
        return queue_email(db, args.to, args.subject, args.body)

    @local_tool(
        "db.query",
        description="Run one read-only SQL query on the business database (at most 50 rows).",
        args=QueryArgs,
        action_type="read",
        risk="medium",
        idempotent=True,
    )
    def db_query(args: QueryArgs) -> dict[str, Any]:
        return run_read_only_query(db_path, args.sql)

    return [orders_lookup, refunds_create_draft, tickets_create, email_send, db_query]
