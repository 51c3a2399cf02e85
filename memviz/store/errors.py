"""Errors the store raises. Each carries a message meant for the user.

This is also the store's one error boundary: `translate` turns any `apsw.Error` into the
StoreError subclass that says what happened and what the user can do, and `store_errors` is
the context manager each entry (open, a Store method, a transaction, a CLI command, a window
job) wraps itself in, so no raw SQLite error reaches the rest of the program.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import apsw

from . import connection


class StoreError(Exception):
    """A store could not be opened or used; the message says why and what to do.
    `written` is set for a failed write: False (nothing written), True (the change is in the
    file despite the error), None (not a write, or not known). An error of a step of
    memviz.edits.History carries the edit (`action`) and whether it was being done, undone or
    redone (`step`)."""

    written: bool | None = None
    action: object | None = None
    step: str = "do"


class NotAStoreError(StoreError):
    """The file is not SQLite, or is SQLite with a schema that is not a memory store."""


class CorruptStoreError(StoreError):
    """The file is damaged (truncated, bad pages, an index out of step with its table)."""


class ReadOnlyError(StoreError):
    """A write was attempted on a store opened read-only, or the file, its folder or the medium
    it is on cannot be written; the message says which."""


#: the read-only reason of a store opened read-only on request; always first among its reasons
ASKED_READ_ONLY = "opened with --read-only"


def reasons_besides_asking(reason: str | None) -> str | None:
    """A read-only reason without the request itself: why the store would be read-only opened to
    edit (a command that opens read-only for its own safety tells the user only these)."""
    if reason is None or reason == ASKED_READ_ONLY:
        return None
    return reason.removeprefix(ASKED_READ_ONLY + "; ")


class ValidationError(StoreError):
    """A record was rejected before any write (bad embedding, bad JSON, bad field)."""


class BusyError(StoreError):
    """Another process held the store (a long write, or exclusive use) past the bounded wait."""


class ConnectionLostError(BusyError):
    """The connection to a database server dropped and could not be made again within the
    bounded attempts. Raised for a write only when nothing was written (`written` False), so,
    like a busy store, the edit can be kept and retried (edits.pending keeps BusyErrors)."""


class DiskFullError(StoreError):
    """The disk (or the file size the system allows) is full."""


class OutOfMemoryError(StoreError):
    """SQLite could not get the memory it needed."""


class StoreIOError(StoreError):
    """The operating system reported a read or write error on the store's files."""


class ConflictError(StoreError):
    """The row changed since it was read; `current` holds its present state and `expected`
    the fields as they were shown, so a dialog can keep both versions."""

    def __init__(self, message, current=None, expected=None):
        super().__init__(message)
        self.current = current
        self.expected = expected


IN_USE = "in exclusive use by another process, or another process is writing to it"

# (apsw classes, StoreError class, what happened, what the user can do)
_KINDS = (
    ((apsw.BusyError, apsw.LockedError), BusyError, "it is " + IN_USE,
     "wait until that process (probably the agent) is done, then try again"),
    ((apsw.CorruptError, apsw.NotADBError, apsw.FormatError, apsw.MismatchError), CorruptStoreError,
     "it is damaged", "open it read-only to see what can still be read, and run `memviz check` on it"),
    ((apsw.FullError,), DiskFullError, "the disk is full (or the file reached the size the system allows)",
     "free some space and try again"),
    ((apsw.NoMemError,), OutOfMemoryError, "SQLite ran out of memory",
     "close other programs, or ask for less at once (a narrower query), and try again"),
    ((apsw.ReadOnlyError, apsw.PermissionsError, apsw.AuthError), ReadOnlyError,
     "the file, its folder or the medium it is on cannot be written",
     "open it read-only, or work on a copy in a writable folder"),
    ((apsw.CantOpenError,), ReadOnlyError, "SQLite cannot open it (a missing folder, a read-only medium "
     "without its -shm file, or no permission)", "check the path and permissions, or work on a copy"),
    ((apsw.IOError,), StoreIOError, "the system reported a disk read or write error (or the file reached the "
     "size the system allows)",
     "check the disk or network share it is on, then try again; `memviz check` tells whether it is intact"),
)


#: apsw errors about how the program uses a connection, not about the store: left as they are
#: (a window job reading on a connection an edit wants is retried by the edit controller).
_NOT_THE_STORE = (apsw.ThreadingViolationError, apsw.ConnectionClosedError, apsw.CursorClosedError,
                  apsw.ExecutionCompleteError, apsw.BindingsError, apsw.IncompleteExecutionError)


# An extension (sqlite-vec's vec0, FTS5) reports SQLite's own failure inside an SQLError or a
# constraint error with SQLite's text: read the kind from the text then.
_WRAPPED = (apsw.SQLError, apsw.ConstraintError, apsw.InternalError, apsw.Error)
_WRAPPED_TEXT = {apsw.BusyError: "database is locked", apsw.CorruptError: "malformed", apsw.FullError: "is full",
                 apsw.NoMemError: "out of memory", apsw.ReadOnlyError: "readonly database",
                 apsw.CantOpenError: "unable to open", apsw.IOError: "disk I/O error"}


#: `written` of a write whose outcome could not be read back (the disk failed again)
UNKNOWN = "unknown"


def _written_text(written) -> str:
    return {False: " Nothing was written.", True: " The change was written before the error.", None: "",
            UNKNOWN: " It is not known whether the change was written: reopen the store to see."}[written]


def translate(err: BaseException, path: str | None = None, *, doing: str | None = None,
              written: bool | None | str = None) -> BaseException:
    """The StoreError for an apsw error (anything else is returned unchanged). `written`: for a
    failed write, False / True / UNKNOWN; None when it was not a write."""
    if isinstance(err, StoreError) or not isinstance(err, apsw.Error) or isinstance(err, _NOT_THE_STORE):
        return err
    what = f"{path}" if path else "the store"
    cls, happened, todo = StoreError, "SQLite reported an error", "run `memviz check` on it"
    for kinds, kind_cls, kind_happened, kind_todo in _KINDS:
        if isinstance(err, kinds) or (type(err) in _WRAPPED and _WRAPPED_TEXT[kinds[0]] in str(err)):
            cls, happened, todo = kind_cls, kind_happened, kind_todo
            break
    if cls is BusyError:
        happened += f" (memviz waited {connection.BUSY_TIMEOUT_MS / 1000:g} s)"
    if cls is CorruptStoreError:
        todo += wal_hint(path)
    during = f" while {doing}" if doing else ""
    out = cls(f"Cannot use {what}{during}: {happened} ({type(err).__name__}: {err}).{_written_text(written)} "
              f"What to do: {todo}.")
    out.written = written if isinstance(written, bool) else None
    return out


def wal_hint(path: str | None) -> str:
    """For damage: a -wal with content beside the file may be another copy's (a backup restored
    next to an old -wal), which SQLite cannot tell from its own."""
    wal = f"{path}-wal" if path else ""
    try:
        size = os.path.getsize(wal) if wal else 0
    except OSError:
        return ""
    return (f". A -wal file lies beside it ({size} bytes): if it belongs to another copy of the store (a backup "
            "restored next to an old -wal), move that -wal aside and open again (memviz never deletes it)") if size else ""


@contextmanager
def store_errors(path: str | None = None, doing: str | None = None):
    """Raise any apsw.Error inside as its StoreError (the original kept as __cause__)."""
    try:
        yield
    except apsw.Error as e:
        out = translate(e, path, doing=doing)
        if out is e:
            raise
        raise out from e


def user_message(err: BaseException, expected: tuple[type, ...] = ()) -> str:
    """The text a user is shown for a failed job: the error's own message when it is one memviz
    (or the OS) words for users, else a plain statement that this is memviz's own fault, never a
    bare exception dump. `expected`: further error classes whose text is meant for users."""
    if isinstance(err, (StoreError, OSError, ValueError, *expected)):
        return str(err)
    detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return (f"memviz ran into a fault of its own ({detail}). Your data was not changed by it; "
            "please report this message (Help ▸ About shows where).")
