"""The native memory store behind memviz: an SQLite file (SQLite + FTS5 + sqlite-vec) or a
PostgreSQL database (pgvector), one interface (interface.py). No Qt here."""
from .arrays import MemoryArrays
from .errors import (
    BusyError,
    ConflictError,
    ConnectionLostError,
    CorruptStoreError,
    DiskFullError,
    NotAStoreError,
    OutOfMemoryError,
    ReadOnlyError,
    StoreError,
    StoreIOError,
    ValidationError,
    store_errors,
    translate,
)
from .postgres.dsn import is_dsn, redact
from .store import Provenance, Store
from .store import create as _create_sqlite
from .store import open_and_read as _open_and_read_sqlite
from .store import open_store as _open_sqlite
from .times import iso, parse_time, to_epoch


def create(target):
    """A new, empty store: a file path, or a `postgresql://` DSN (an existing, empty database)."""
    if is_dsn(target):
        from .postgres import create as create_pg  # psycopg only for PostgreSQL
        return create_pg(target)
    return _create_sqlite(target)


def open_store(target, *, read_only: bool = False, to_repair: bool = False):
    """Open an existing store: a file path, or a `postgresql://`/`postgres://` DSN. `to_repair`
    (`memviz check --repair`): what the repair mends does not make the store read-only."""
    if is_dsn(target):
        from .postgres import open_store as open_pg
        return open_pg(target, read_only=read_only)
    return _open_sqlite(target, read_only=read_only, to_repair=to_repair)


def open_and_read(target, read, *, read_only: bool = False, check_later: bool = False):
    """open_store, then `read(store)`; (store, result). See store.open_and_read for SQLite
    (`check_later`: a PostgreSQL server checks its own pages, so it means nothing there)."""
    if is_dsn(target):
        store = open_store(target, read_only=read_only)
        try:
            return store, (read(store) if read is not None else None)
        except BaseException:
            store.close()
            raise
    return _open_and_read_sqlite(target, read, read_only=read_only, check_later=check_later)


open = open_store  # noqa: A001 - `memviz.store.open(path)` reads best

__all__ = [
    "MemoryArrays", "Provenance", "Store", "create", "open", "open_and_read", "open_store", "iso", "parse_time", "to_epoch",
    "is_dsn", "redact", "StoreError", "NotAStoreError", "CorruptStoreError", "ReadOnlyError", "ValidationError",
    "BusyError", "ConflictError", "ConnectionLostError", "DiskFullError", "OutOfMemoryError", "StoreIOError", "store_errors", "translate",
]
