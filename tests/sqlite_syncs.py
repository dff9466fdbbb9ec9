"""Count the syncs SQLite asks of the disk, without strace: a VFS shim over the default one.

`counting_syncs()` registers, as the default VFS, a copy of the platform VFS whose files report
each `xSync` (one fsync/fdatasync of that file) before doing it, and restores the previous
default on exit. Connections opened inside the block use it; others are not affected. It needs
the `sqlite3` module to share the process's libsqlite3 (dynamically linked, as on Debian):
`available()` says whether it does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

_P = ctypes.c_void_p
_XOPEN = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P, _P, ctypes.c_int, _P)
_XSYNC = ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.c_int)


class _Vfs(ctypes.Structure):
    _fields_ = [
        ("iVersion", ctypes.c_int), ("szOsFile", ctypes.c_int), ("mxPathname", ctypes.c_int),
        ("pNext", _P), ("zName", ctypes.c_char_p), ("pAppData", _P), ("xOpen", _P),
        ("xDelete", _P), ("xAccess", _P), ("xFullPathname", _P), ("xDlOpen", _P),
        ("xDlError", _P), ("xDlSym", _P), ("xDlClose", _P), ("xRandomness", _P), ("xSleep", _P),
        ("xCurrentTime", _P), ("xGetLastError", _P), ("xCurrentTimeInt64", _P),
        ("xSetSystemCall", _P), ("xGetSystemCall", _P), ("xNextSystemCall", _P),
    ]  # fmt: skip


class _IoMethods(ctypes.Structure):
    _fields_ = [
        ("iVersion", ctypes.c_int), ("xClose", _P), ("xRead", _P), ("xWrite", _P),
        ("xTruncate", _P), ("xSync", _P), ("xFileSize", _P), ("xLock", _P), ("xUnlock", _P),
        ("xCheckReservedLock", _P), ("xFileControl", _P), ("xSectorSize", _P),
        ("xDeviceCharacteristics", _P), ("xShmMap", _P), ("xShmLock", _P), ("xShmBarrier", _P),
        ("xShmUnmap", _P), ("xFetch", _P), ("xUnfetch", _P),
    ]  # fmt: skip


def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    lib.sqlite3_vfs_find.restype = ctypes.POINTER(_Vfs)
    lib.sqlite3_vfs_find.argtypes = [ctypes.c_char_p]
    lib.sqlite3_vfs_register.argtypes = [ctypes.POINTER(_Vfs), ctypes.c_int]
    lib.sqlite3_vfs_unregister.argtypes = [ctypes.POINTER(_Vfs)]
    return lib


@dataclass
class SyncLog:
    """The file name of every sync, in order (`.../audit.sqlite-wal`)."""

    syncs: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)


def available() -> bool:
    """True when the shim reaches the library the `sqlite3` module uses."""
    lib = _library()
    if lib is None or lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
        return False
    with tempfile.TemporaryDirectory() as tmp, counting_syncs() as log:
        conn = sqlite3.connect(Path(tmp) / "probe.sqlite")
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    return bool(log.opened)


@contextmanager
def counting_syncs() -> Iterator[SyncLog]:
    lib = _library()
    assert lib is not None, "no libsqlite3 to instrument"
    base_ptr = lib.sqlite3_vfs_find(None)
    base = base_ptr.contents
    log = SyncLog()
    record = log.syncs.append
    names: dict[int, str] = {}
    patched: dict[int, _IoMethods] = {}
    keep: list[object] = []

    def methods_for(original: int) -> int:
        copy = patched.get(original)
        if copy is None:
            copy = _IoMethods()
            ctypes.memmove(ctypes.addressof(copy), original, ctypes.sizeof(_IoMethods))
            real_sync = _XSYNC(copy.xSync)

            def x_sync(file: int, flags: int) -> int:
                try:
                    record(names.get(file, "?"))
                except BaseException:  # at interpreter exit: never stand between SQLite and disk
                    pass
                return int(real_sync(file, flags))

            callback = _XSYNC(x_sync)
            keep.append(callback)
            copy.xSync = ctypes.cast(callback, _P).value
            patched[original] = copy
        return ctypes.addressof(copy)

    real_open = _XOPEN(base.xOpen)

    def x_open(vfs: int, name: int, file: int, flags: int, out_flags: int) -> int:
        rc = int(real_open(ctypes.addressof(base), name, file, flags, out_flags))
        methods = ctypes.c_void_p.from_address(file)
        if rc == 0 and methods.value:
            label = ctypes.string_at(name).decode() if name else "(temp)"
            names[file] = label
            log.opened.append(label)
            methods.value = methods_for(methods.value)
        return rc

    open_callback = _XOPEN(x_open)
    shim = _Vfs()
    ctypes.memmove(ctypes.addressof(shim), ctypes.addressof(base), ctypes.sizeof(_Vfs))
    shim.zName = b"proctor-sync-counter"
    shim.xOpen = ctypes.cast(open_callback, _P).value
    if lib.sqlite3_vfs_register(ctypes.byref(shim), 1) != 0:
        raise RuntimeError("cannot register the sync-counting VFS")
    try:
        yield log
    finally:
        lib.sqlite3_vfs_register(base_ptr, 1)  # the platform VFS is the default again
        lib.sqlite3_vfs_unregister(ctypes.byref(shim))
        keep.extend((open_callback, shim))
        _RETIRED.append((keep, patched))  # files still open may call these: never free them


_RETIRED: list[tuple[list[object], dict[int, _IoMethods]]] = []
