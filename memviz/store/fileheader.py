"""Checks on the raw SQLite header, made before SQLite parses the file.

They let a 0-byte, foreign or truncated file get a precise message instead of SQLite's
generic "file is not a database". The bytes are read through SQLite's own VFS, never with
open(): on POSIX, closing any descriptor of a file drops every lock this process holds on
it, so a plain open()/close() while a connection is open would let another process write in
the middle of memviz's read transaction. SQLite's unix VFS keeps such a descriptor open
until the file's locks are released.
"""
from __future__ import annotations

import os
import struct

import apsw

from .errors import CorruptStoreError, NotAStoreError, StoreError

MAGIC = b"SQLite format 3\x00"


def check_header(path: str) -> None:
    if os.path.isdir(path):
        raise NotAStoreError(f"{path} is a folder, not a memory store (to bring in a folder, use `memviz import`).")
    try:
        size = os.path.getsize(path)
        head = read_head(path, 100)
    except FileNotFoundError:
        raise StoreError(f"No such file: {path}") from None
    except (PermissionError, apsw.CantOpenError):
        raise StoreError(f"Cannot read {path}: permission denied.") from None
    if size == 0:
        raise NotAStoreError(f"{path} is empty (0 bytes): it is not a memory store.")
    if not head.startswith(MAGIC):
        raise NotAStoreError(f"{path} is not an SQLite database (its first bytes are {head[:16]!r}).")
    if len(head) < 100:
        raise CorruptStoreError(f"{path} is truncated: only {size} bytes, shorter than an SQLite header.")
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise CorruptStoreError(f"{path} has a damaged header (page size {page_size}).")
    change_counter, pages = struct.unpack(">II", head[24:32])
    valid_for = struct.unpack(">I", head[92:96])[0]
    if size % page_size:
        raise CorruptStoreError(
            f"{path} is truncated or damaged: {size} bytes is not a whole number of {page_size}-byte pages."
        )
    # The in-header page count is trustworthy only when its version matches, and only without a
    # -wal holding frames: a checkpoint cut short (a full disk) leaves pages there, not yet here.
    if valid_for == change_counter and pages and size < pages * page_size and not _wal_has_frames(path):
        raise CorruptStoreError(
            f"{path} is truncated: the header says {pages} pages ({pages * page_size} bytes) but the file has {size} bytes."
        )


def _wal_has_frames(path: str) -> bool:
    try:
        return os.path.getsize(path + "-wal") > 32  # more than its header
    except OSError:
        return False


def read_head(path: str, n: int) -> bytes:
    """The first `n` bytes of a database file (fewer if it is shorter), read through SQLite's
    VFS so that no lock this process holds on it is lost (see the module's note)."""
    f = _vfs_file(path)
    try:
        return bytes(f.xRead(n, 0))
    finally:
        f.xClose()


def _vfs_file(path: str) -> apsw.VFSFile:
    return apsw.VFSFile("", os.path.abspath(path), [apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_MAIN_DB, 0])


def copy_through_sqlite(path: str, dst: str, chunk: int = 1 << 20) -> None:
    """A byte copy of a database file read through SQLite's VFS (see read_head)."""
    f = _vfs_file(path)
    try:
        size = f.xFileSize()
        with open(dst, "wb") as out:
            for at in range(0, size, chunk):
                out.write(f.xRead(min(chunk, size - at), at))
    finally:
        f.xClose()
