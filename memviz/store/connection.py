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
# SQLite can read a page through a read-only memory map of the file instead of a read() into its
# page cache (it maps read-only and keeps the usual path for pages in the WAL, so writes and crash
# safety are unchanged by it). A map counts every page it has touched in the process's resident
# memory for as long as the connection lives, so an open store keeps none (MMAP_BYTES). The scan
# that reads a whole store does not map it either: side by side, a map saved it nothing measurable
# and counted the whole file in the peak resident memory (bench/scale.py's read rows,
# docs: performance). sqlite-vec's KNN and the integrity check, which read every page of a table
# or file in one statement, map the file while they last (whole_file_mapped).
MMAP_BYTES = 0
SCAN_MMAP_BYTES = 1 << 40   # "the whole file": SQLite maps no more than the file holds


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
def whole_file_mapped(conn: apsw.Connection):
    """The file memory-mapped whole for the block (a read of every row), then as before: SQLite
    unmaps it once no statement holds a page of it, so its pages leave the resident memory. Where
    SQLite maps nothing (an in-memory database, a build without mmap) the read goes on through its
    page cache."""
    try:
        before = conn.execute("PRAGMA mmap_size").fetchone()   # None: no file to map
        if before is not None:
            conn.execute(f"PRAGMA mmap_size={SCAN_MMAP_BYTES}")
    except apsw.Error:
        before = None
    try:
        yield
    finally:
        if before is not None:
            try:
                conn.execute(f"PRAGMA mmap_size={before[0]}")
            except apsw.Error:
                pass  # a connection SQLite could not set back keeps its map until it is closed


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
