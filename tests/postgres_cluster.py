"""A throwaway PostgreSQL cluster for the tests, started by the tests themselves.

`initdb` into a temporary directory, `pg_ctl start` on a free loopback port (and a Unix socket
in that directory), trust authentication for the superuser `proctor`, torn down at the end. The
binaries come from Debian's `postgresql` package (found on PATH or under
/usr/lib/postgresql/<version>/bin). As root, the server runs as the `postgres` system user the
package creates (PostgreSQL refuses to run as root).

Locally, a missing server skips the test with the install command; with
`PROCTOR_REQUIRE_POSTGRES=1` (set by `.ci/run`) it fails instead, so CI can never go green by
quietly not running the Postgres tests.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE_ENV = "PROCTOR_REQUIRE_POSTGRES"
INSTALL_COMMAND = "apt-get install -y postgresql"
SUPERUSER = "proctor"
_names = itertools.count(1)


def postgres_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def unavailable(why: str) -> NoReturn:
    if postgres_required():
        pytest.fail(f"{why} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(f"{why}; install the server with `{INSTALL_COMMAND}`")


def find_binary(name: str) -> Path | None:
    """`initdb`/`pg_ctl` from PATH, else the newest /usr/lib/postgresql/<major>/bin."""
    found = shutil.which(name)
    if found:
        return Path(found)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for bin_dir in reversed(versions):
        if (bin_dir / name).exists():
            return bin_dir / name
    return None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresCluster:
    """One server: `url(dbname)`, `create_database()`, and faults (`kill()`, `stop()`,
    `start()`) for the chaos tests. The data directory survives a kill; `start()` recovers it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self.log = root / "server.log"
        self.port = _free_port()
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            unavailable("PostgreSQL's initdb/pg_ctl are not installed")
        self._initdb, self._pg_ctl = initdb, pg_ctl
        self._as_user: list[str] = []
        if os.geteuid() == 0:  # the server refuses root: run it as the package's user
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root and there is no `postgres` user to run the server")
            self._as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(root, "postgres")
        self.socket_dir.mkdir()
        if self._as_user:
            shutil.chown(self.socket_dir, "postgres")
        self._run(
            [
                str(self._initdb), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                "--no-sync", "-E", "UTF8", "--locale=C.UTF-8",
            ]
        )  # fmt: skip

    def _run(self, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as_user, *argv], capture_output=True, text=True, check=check, timeout=120
        )

    def start(self) -> None:
        """Start (or restart after a kill) and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off -c max_connections=300 "
            "-c shared_buffers=32MB"
        )
        done = self._run(
            [str(self._pg_ctl), "start", "-w", "-t", "60", "-D", str(self.data),
             "-l", str(self.log), "-o", options],
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{log}")

    def stop(self, mode: str = "fast") -> None:
        self._run(
            [str(self._pg_ctl), "stop", "-w", "-t", "60", "-m", mode, "-D", str(self.data)],
            check=False,
        )

    def postmaster_pid(self) -> int | None:
        pid_file = self.data / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int(pid_file.read_text().splitlines()[0])
        return None

    def kill(self) -> None:
        """SIGKILL the postmaster and its backends: a crash, not a shutdown."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        # Backends notice the dead postmaster and exit; wait until nobody listens and the
        # postmaster is reaped (a zombie's pid in the socket lock file refuses the restart).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (self._accepting() or _exists(pid)):
            time.sleep(0.05)
        for stale in (self.data / "postmaster.pid", self.socket_dir / f".s.PGSQL.{self.port}.lock"):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()

    def _accepting(self) -> bool:
        with socket.socket() as sock:
            sock.settimeout(0.2)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t", template: str | None = None) -> str:
        """A new empty database (or a copy of `template`); its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(_names)}"
        clause = f" TEMPLATE {template}" if template else ""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{clause}')
        return self.url(name)


@contextlib.contextmanager
def running_cluster() -> Iterator[PostgresCluster]:
    root = Path(tempfile.mkdtemp(prefix="proctor-pg-"))
    cluster = None
    try:
        cluster = PostgresCluster(root)
        cluster.start()
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
