"""SQLite connections: apsw with sqlite-vec loaded before any SQL of the file runs.

apsw is the project's one driver: CPython's `sqlite3` on macOS system Python (and in
some Linux builds) cannot load extensions. The vec0 module must be registered before
SQLite parses a schema that mentions it, so it is loaded right after opening, and
extension loading is switched off again before any statement from the file runs.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import apsw
import sqlite_vec

# How long a statement waits for another process's lock before the store reports itself busy
# ("in exclusive use by another process"); MEMVIZ_BUSY_TIMEOUT_MS changes it (tests shorten it).
BUSY_TIMEOUT_MS = int(os.environ.get("MEMVIZ_BUSY_TIMEOUT_MS", "5000"))
# Pages are read through a read-only memory map instead of a read() per page: a full scan (what
# loading the arrays is) is much faster. SQLite maps read-only and keeps the usual path for pages
# in the WAL, so writes and crash safety are unchanged by it.
MMAP_BYTES = 1 << 30


def connect(path: str, *, readonly: bool = False, create: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create and not readonly:
        flags |= apsw.SQLITE_OPEN_CREATE
    flags |= apsw.SQLITE_OPEN_URI if path.startswith("file:") else 0
    conn = apsw.Connection(path, flags=flags)
    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    return conn


@contextmanager
def immediate(conn: apsw.Connection):
    """One BEGIN IMMEDIATE … COMMIT on a bare connection (a mirror's index step, a framework
    file's write); rolled back on any error unless SQLite already did (a full disk). A `Store`'s
    writes use `Store.transaction`, which also translates the errors."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
