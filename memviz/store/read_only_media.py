"""Reading a WAL store on read-only media (a mounted backup, a CD, a read-only share).

SQLite reads a WAL store through its -shm file, which it must be able to create beside the
store; on a medium nobody can write, with no -shm there, every open fails with "unable to
open database file". Two ways round it, chosen by what the -wal holds:

* no -wal, or an empty one: the file alone is the whole store, so it is opened with
  `immutable=1` (no -shm, no locks). The user gives up seeing changes another process makes
  meanwhile (none can be made on such a medium) and editing.
* a -wal with content: `immutable=1` would silently leave out every commit still in the WAL, so
  the file and its -wal are copied to a temporary folder and read there. The user gives up the
  same, plus the time and disk space of the copy; the copy is deleted when the store closes.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from urllib.parse import quote

from .fileheader import copy_through_sqlite, read_head

_copies: dict[str, int] = {}  # copy's path -> open Stores reading it
_lock = threading.Lock()


def is_wal(path: str) -> bool:
    head = read_head(path, 20)
    return len(head) >= 20 and head[18:20] == b"\x02\x02"


def needs_detour(path: str) -> bool:
    """A WAL store whose -shm is missing and cannot be made (its folder is not writable)."""
    folder = os.path.dirname(os.path.abspath(path))
    return (not os.path.exists(path + "-shm") and not os.access(folder, os.W_OK) and is_wal(path))


def detour(path: str) -> tuple[str, str]:
    """(what SQLite should open, why the store is read-only and what the user gives up)."""
    wal = path + "-wal"
    if not os.path.exists(wal) or os.path.getsize(wal) == 0:
        uri = "file:" + quote(os.path.abspath(path)) + "?immutable=1"
        return uri, ("it is on a read-only medium with no -shm file, so it is read as it stands (immutable): "
                     "changes made elsewhere while it is open are not seen, and it cannot be edited")
    folder = tempfile.mkdtemp(prefix="memviz-ro-")
    copy = os.path.join(folder, os.path.basename(path))
    copy_through_sqlite(path, copy)  # another Store of this process may hold locks on it (fileheader.py)
    shutil.copyfile(wal, copy + "-wal")
    with _lock:
        _copies[copy] = 1
    size = (os.path.getsize(copy) + os.path.getsize(copy + "-wal")) / 1e6
    return copy, (f"it is on a read-only medium with no -shm file and its -wal holds recent changes, so it is "
                  f"read through a temporary copy ({size:.1f} MB, deleted on close): changes made elsewhere "
                  f"while it is open are not seen, and it cannot be edited")


def share_copy(conn_path: str) -> str:
    """Another Store reads the same copy (Store.reopen): keep it until both close."""
    with _lock:
        if conn_path in _copies:
            _copies[conn_path] += 1
    return conn_path


def release_copy(conn_path: str) -> None:
    """A Store reading `conn_path` closed; the last one deletes a temporary copy."""
    with _lock:
        if conn_path not in _copies:
            return
        _copies[conn_path] -= 1
        if _copies[conn_path]:
            return
        del _copies[conn_path]
    shutil.rmtree(os.path.dirname(conn_path), ignore_errors=True)
