"""Checks on the raw SQLite header, made before SQLite touches the file.

Reading these 100 bytes is the only time memviz reads the file outside SQLite;
it lets a 0-byte, foreign or truncated file get a precise message instead of
SQLite's generic "file is not a database".
"""
from __future__ import annotations

import os
import struct

from .errors import CorruptStoreError, NotAStoreError, StoreError

MAGIC = b"SQLite format 3\x00"


def check_header(path: str) -> None:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(100)
    except FileNotFoundError:
        raise StoreError(f"No such file: {path}") from None
    except IsADirectoryError:
        raise NotAStoreError(f"{path} is a folder, not a memory store (to bring in a folder, use `memviz import`).") from None
    except PermissionError:
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
    # The in-header page count is trustworthy only when its version matches.
    if valid_for == change_counter and pages and size < pages * page_size:
        raise CorruptStoreError(
            f"{path} is truncated: the header says {pages} pages ({pages * page_size} bytes) but the file has {size} bytes."
        )
