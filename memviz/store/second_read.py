"""A second read-only connection that sees what the caller's sees, for work beside its scan.

A whole read scans the rows on one core; a second connection reads other parts of the same state
on the other (SQLite releases Python's lock while it steps). It must see exactly the caller's
state. SQLite counts, per connection, the changes it finds when a read begins (data_version): a
read started before the caller's read began and one started after it that count the same number
saw no commit between them, so the second one's state is the caller's, and it is held (a read
transaction) for as long as the work lasts.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import apsw

from ..background import in_thread


def second_reader(conn):
    """A read-only connection to `conn`'s file and the change count it has seen, opened before
    `conn`'s read state begins (then `read_beside`); None where there can be none: an in-memory
    or URI-named database, a connection whose read state has begun already (or that has writes of
    its own pending)."""
    try:
        path = conn.filename
        if not path or conn.open_flags & apsw.SQLITE_OPEN_URI or conn.txn_state("main") != apsw.SQLITE_TXN_NONE:
            return None
        other = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY, vfs=conn.open_vfs)
    except apsw.Error:
        return None
    try:
        other.set_busy_timeout(1000)
        other.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return other, other.data_version()
    except apsw.Error:
        other.close()
        return None


def read_beside(conn, second, work: Callable, name: str = "memviz-beside") -> Future | None:
    """Once `conn`'s read state has begun (inside a savepoint or transaction): `work(other)` on
    `second` (second_reader's connection, in a read transaction seeing `conn`'s state) in a
    thread, a Future of what it returns; the connection is closed after. None at once (and
    `second` closed) where it would see another state: a commit landed between the two reads'
    beginnings."""
    other, seen = second
    try:
        if conn.txn_state("main") != apsw.SQLITE_TXN_READ:
            raise LookupError
        other.execute("BEGIN")
        other.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        if other.data_version() != seen:
            raise LookupError
    except (apsw.Error, LookupError):
        other.close()
        return None

    def run():
        try:
            return work(other)
        finally:
            other.close()
    return in_thread(run, name)
