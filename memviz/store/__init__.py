"""The native memory store (SQLite + FTS5 + sqlite-vec) behind memviz. No Qt here."""
from .arrays import MemoryArrays
from .errors import (
    BusyError, ConflictError, CorruptStoreError, DiskFullError, NotAStoreError, OutOfMemoryError, ReadOnlyError,
    StoreError, StoreIOError, ValidationError, store_errors, translate,
)
from .store import Provenance, Store, create, open_and_read, open_store
from .times import iso, parse_time, to_epoch

open = open_store  # noqa: A001 - `memviz.store.open(path)` reads best

__all__ = [
    "MemoryArrays", "Provenance", "Store", "create", "open", "open_and_read", "open_store", "iso", "parse_time", "to_epoch",
    "StoreError", "NotAStoreError", "CorruptStoreError", "ReadOnlyError", "ValidationError", "BusyError",
    "ConflictError", "DiskFullError", "OutOfMemoryError", "StoreIOError", "store_errors", "translate",
]
