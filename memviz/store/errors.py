"""Errors the store raises. Each carries a message meant for the user."""


class StoreError(Exception):
    """A store could not be opened or used; the message says why and what to do."""


class NotAStoreError(StoreError):
    """The file is not SQLite, or is SQLite with a schema that is not a memory store."""


class CorruptStoreError(StoreError):
    """The file is damaged (truncated, bad pages)."""


class ReadOnlyError(StoreError):
    """A write was attempted on a store opened read-only; the message says why it is read-only."""


class ValidationError(StoreError):
    """A record was rejected before any write (bad embedding, bad JSON, bad field)."""


class BusyError(StoreError):
    """Another process held the write lock for longer than the bounded wait."""


class ConflictError(StoreError):
    """The row changed since it was read; `current` holds its present state and `expected`
    the fields as they were shown, so a dialog can keep both versions."""

    def __init__(self, message, current=None, expected=None):
        super().__init__(message)
        self.current = current
        self.expected = expected
