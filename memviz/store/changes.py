"""What changed in a store since the last look: the question a live window asks at every commit.

`ChangeWatcher(store).poll()` says whether another connection committed since the last poll
(`store.data_version()`: SQLite's `PRAGMA data_version`, which moves on this connection only
when another one commits, so it is cheap and ignores this connection's own writes; PostgreSQL's
LISTEN/NOTIFY; a framework mirror's source token). `token_now(store)` marks a moment;
`changes_since(store, token)` answers with the rowids added since (rowid above the last one
seen), the rowids changed (updated, soft-deleted, restored, re-embedded: the change log below)
and a new token, or says why the change cannot be read as a delta (`full`: the schema changed
or the file was VACUUMed, rows were physically deleted or reused, too large a share changed, or
the store keeps no change log), in which case the caller re-reads everything.

The change log is `memviz_changes` (schema migration 2): triggers on `memories` record, per
memory rowid, the sequence number of its last update or delete. Triggers, not memviz's own
audit, because the agent writes with its own SQL and never touches the audit; one row per
memory (an upsert), so the log is bounded by the store's size. Another backend answers the
same question its own way (PostgreSQL: postgres/changes.py, a log of transaction ids kept by
triggers, and LISTEN/NOTIFY); tokens are backend-specific, and callers treat them as opaque.

Everything is read in one short read transaction, so the agent's WAL checkpoints as usual.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import apsw

from .arrays import one_read

LOG = "memviz_changes"
MAX_SHARE = 0.25  # more changed rows than this share of the store: one full re-read is cheaper


@dataclass(frozen=True)
class ChangeToken:
    """Where the last look ended (opaque to callers)."""

    seq: int         # highest change-log sequence number seen (-1: the store keeps no log)
    max_rowid: int   # highest rowid seen
    count: int       # rows in memories then (counted once; then the rows added, deletes being logged)
    schema: int      # PRAGMA schema_version: VACUUM and schema changes bump it


@dataclass
class Changes:
    token: ChangeToken
    added: list[int] = field(default_factory=list)    # rowids new since the token, ascending
    changed: list[int] = field(default_factory=list)  # rowids of rows present before and changed since
    full: str | None = None                           # why a delta cannot describe this (re-read all)

    @property
    def empty(self) -> bool:
        return self.full is None and not self.added and not self.changed


@dataclass
class Change:
    data_version: object
    new_ids: list[str] = field(default_factory=list)  # memories added since the last poll (by rowid)


class ChangeWatcher:
    """Notices commits of other connections (the agent) to `store`, without reading its tables."""

    def __init__(self, store):
        self.store = store
        self._version = store.data_version()
        self._max_rowid = store.max_rowid()

    def poll(self) -> Change | None:
        """None when no other connection committed since the last poll."""
        version = self.store.data_version()
        if version == self._version:
            return None
        self._version = version
        rows = self.store.memories_after(self._max_rowid)
        if rows:
            self._max_rowid = rows[-1][0]
        return Change(version, [str(i) for _, i in rows])


def _has_log(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (LOG,)).fetchone() is not None


def _read_token(conn, count: int | None = None) -> ChangeToken:
    """`count`: the rows, when the caller knows them (count(*) reads the whole table, which a
    refresh should not at every look); else counted."""
    # max(rowid) and count(*) as two statements (together they scan the table; alone, one b-tree
    # descent and a count of the smallest index's pages), in one read state
    with one_read(conn):
        max_rowid = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
        if count is None:
            count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        seq = conn.execute(f"SELECT coalesce(max(seq), 0) FROM {LOG}").fetchone()[0] if _has_log(conn) else -1
        return ChangeToken(int(seq), int(max_rowid), int(count), conn.execute("PRAGMA schema_version").fetchone()[0])


def token_now(store):
    """The token of the store as it is now (take it just before reading the arrays): the store's
    own `change_token()` (interface.py)."""
    return store.change_token()


def changes_since(store, token, max_share: float = MAX_SHARE) -> Changes:
    """Rows added and changed since `token`: the store's own `changes_since` (interface.py)."""
    return store.changes_since(token, max_share)


def sqlite_token(conn) -> ChangeToken:
    """token_now for an SQLite connection to a native store (Store.change_token)."""
    return _read_token(conn)


def sqlite_changes_since(conn, token, max_share: float = MAX_SHARE) -> Changes:
    """changes_since for an SQLite connection to a native store, in one read transaction (see the
    module docstring): Store.changes_since."""
    conn.execute("BEGIN")  # one snapshot for every read below
    try:
        return _changes(conn, token, max_share)
    finally:
        try:
            conn.execute("COMMIT")
        except apsw.Error:
            pass


def _changes(conn, token: ChangeToken, max_share: float) -> Changes:
    new = _read_token(conn, count=token.count)  # counted below: the rows then and those added since
    if new.schema != token.schema:
        return Changes(_read_token(conn), full="the schema changed or the file was compacted (VACUUM)")
    if new.seq < 0 or token.seq < 0:
        return Changes(_read_token(conn), full="the store keeps no change log (opened read-only before migrating)")
    if new.seq < token.seq or new.max_rowid < token.max_rowid:
        return Changes(_read_token(conn), full="the change log went back (the file was replaced)")
    added = [r for (r,) in conn.execute("SELECT rowid FROM memories WHERE rowid > ? ORDER BY rowid",
                                        (token.max_rowid,))]
    # a row deleted (or a rowid reused: deleted, then inserted again) is in the log, whose delete
    # trigger records it: rows then + rows added is the count now
    new = replace(new, count=token.count + len(added))
    changed, gone = [], 0
    for rowid, present in conn.execute(
            f"SELECT c.memory_rowid, m.rowid IS NOT NULL FROM {LOG} c LEFT JOIN memories m ON m.rowid = c.memory_rowid "
            "WHERE c.seq > ? ORDER BY c.memory_rowid", (token.seq,)):
        if not present:
            gone += 1
        elif rowid <= token.max_rowid:
            changed.append(rowid)
    if gone:
        return Changes(_read_token(conn), full=f"{gone} rows were physically deleted")
    if len(added) + len(changed) > max(50, max_share * max(new.count, 1)):
        return Changes(new, full=f"{len(added) + len(changed):,} of {new.count:,} rows changed")
    return Changes(new, added, changed)
