"""A forked child never speaks on its parent's PostgreSQL connection.

`os.fork()` copies a store with its open connection (the SAME socket to the server as the
parent's), its lock (possibly held by a parent thread that does not exist in the child) and,
for the approval store, its instance id and a heartbeat thread that did not survive the fork.
Two processes writing on one socket interleave their protocol messages; a child closing the
store would end the parent's server session and delete the parent's lease.

So every Postgres store registers here; in a child, right after the fork, each store forgets
the inherited connection WITHOUT closing it (closing sends the server a Terminate on the
parent's socket: psycopg itself skips that for a connection made in another process, and so
must we) and takes a fresh lock; its next call connects again. The child's copy of the socket
is released (its descriptor closed, which the parent's session does not notice) so that a
parent who exits does not leave its server session open for as long as the child lives.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any, Protocol


class FollowsForks(Protocol):
    def _in_forked_child(self) -> None: ...


_stores: weakref.WeakSet[Any] = weakref.WeakSet()
_registered = threading.Lock()
_hooked = False
# Connections inherited from the parent, kept referenced in the child: the driver object is
# never closed here, and never collected while the interpreter runs (its finaliser warns).
_abandoned: list[Any] = []


def follow_forks(store: FollowsForks) -> None:
    """`store._in_forked_child()` runs in every child forked while the store is alive."""
    global _hooked
    with _registered:
        if not _hooked:
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _hooked = True
        _stores.add(store)


def _after_fork_in_child() -> None:
    global _registered
    _registered = threading.Lock()  # the parent may have held it while forking
    for store in list(_stores):
        with contextlib.suppress(Exception):  # one store's trouble must not break the fork
            store._in_forked_child()


def abandon(conn: Any) -> None:
    """Forget the parent's connection in a child: no Terminate, no use; our socket copy closed."""
    if conn is None:
        return
    _abandoned.append(conn)
    with contextlib.suppress(Exception):
        fd = conn.pgconn.socket
        if fd >= 0:
            os.close(fd)
