"""Live changes on a PostgreSQL store: what changed since the last look, read as a delta, and
LISTEN/NOTIFY so the window learns of a commit without querying the table. No Qt here.

The server's answer to memviz.store.changes (same `Changes`): the change log `memviz_changes`
(schema migration 2, schema.py) holds per memory rowid the transaction that last inserted,
updated or deleted it. A token is the snapshot the last look saw (`pg_current_snapshot()`:
which transactions had committed) and the highest rowid then. What changed since is every log
row whose transaction that snapshot did not see: one index range (xid >= the snapshot's xmin),
whatever order the transactions committed in, and transactions still running now are seen
next time. Rows above the last rowid are also read directly (a write with the triggers
disabled, e.g. a logical-replication apply, is still found).

A row inserted below the last rowid seen (two agents' transactions committing out of rowid
order) is reported as changed: the refresh patches it if it was loaded, else re-reads the
whole store (session/live/delta.py: it does not fit the arrays). A store without the log (opened
read-only before its migration, or a table memviz did not make) keeps the coarse token:
anything moved, read it all again.

`data_version()` (what the window's live poll asks every POLL_MS, off the GUI thread) runs no
query when the log is there: a second connection LISTENs on `memviz_changes`, and a poll only
drains the notifications already on its socket.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..changes import Changes
from .schema import CHANGE_CHANNEL, CHANGE_LOG


@dataclass(frozen=True)
class PgChangeToken:
    """Where the last look ended (opaque to callers)."""

    snapshot: str | None  # pg_current_snapshot() as text (None: the store keeps no change log)
    max_rowid: int
    count: int            # rows then (at the load; carried forward by the rows added since)
    coarse: tuple = ()    # without a log: (newest row version, max rowid, count), any move = re-read all


class PgChangeLog:
    """Mixed into `PgStore` (needs `_q`, `_read`, `dsn`, and `_listen_lock`, `_has_log` set
    in its __init__)."""

    _listener = None
    _notes = 0

    def has_change_log(self) -> bool:
        return self._q("SELECT to_regclass(%s) IS NOT NULL", (CHANGE_LOG,)).fetchone()[0]

    def change_token(self) -> PgChangeToken:
        if not self.has_change_log():
            return PgChangeToken(None, 0, 0, self._coarse_token())
        snap, max_rowid, count = self._q("SELECT pg_current_snapshot()::text, coalesce(max(rowid), 0), count(*) "
                                         "FROM memories").fetchone()
        return PgChangeToken(snap, int(max_rowid), int(count))

    def _coarse_token(self) -> tuple:
        """xmin is the id of the transaction that wrote a row version, so an update raises the max
        (a stand-in view of a table memviz did not make has none: rows added or removed only)."""
        view = self._q("SELECT relkind = 'v' FROM pg_class WHERE oid = to_regclass('memories')").fetchone()[0]
        newest = "0" if view else "coalesce(max(xmin::text::bigint), 0)"
        return tuple(int(v) for v in self._q(
            f"SELECT {newest}, coalesce(max(rowid), 0), count(*) FROM memories").fetchone())

    def changes_since(self, token: PgChangeToken, max_share: float) -> Changes:
        """Rows added and changed since `token`, read in one snapshot (module docstring)."""
        if token.snapshot is None or not self.has_change_log():
            new = self.change_token()
            if new == token:
                return Changes(new)
            return Changes(new, full="the store keeps no change log (opened read-only before its migration, "
                                     "or a table memviz did not make): changes are read as a whole")

        def read(conn):
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                snap, max_rowid = conn.execute(
                    "SELECT pg_current_snapshot()::text, (SELECT coalesce(max(rowid), 0) FROM memories)").fetchone()
                logged = conn.execute(
                    f"SELECT c.memory_rowid, m.rowid IS NOT NULL FROM {CHANGE_LOG} c "
                    "LEFT JOIN memories m ON m.rowid = c.memory_rowid "
                    "WHERE c.xid >= pg_snapshot_xmin(%s::pg_snapshot) AND NOT pg_visible_in_snapshot(c.xid, %s::pg_snapshot)",
                    (token.snapshot, token.snapshot)).fetchall()
                above = conn.execute("SELECT rowid FROM memories WHERE rowid > %s", (token.max_rowid,)).fetchall()
                return snap, int(max_rowid), logged, above
        snap, max_rowid, logged, above = self._read(read)
        if any(r == -1 for r, _ in logged):
            return Changes(PgChangeToken(snap, max_rowid, 0), full="the memories table was emptied (TRUNCATE)")
        gone = sum(1 for _, present in logged if not present)
        added = sorted({int(r) for r, present in logged if present and r > token.max_rowid} | {int(r) for (r,) in above})
        changed = sorted(int(r) for r, present in logged if present and r <= token.max_rowid)
        new = PgChangeToken(snap, max_rowid, token.count + len(added))
        if gone:
            return Changes(new, full=f"{gone} rows were physically deleted")
        if len(added) + len(changed) > max(50, max_share * max(new.count, 1)):
            return Changes(new, full=f"{len(added) + len(changed):,} of {new.count:,} rows changed")
        return Changes(new, added, changed)

    # ------------------------------------------------------------ LISTEN/NOTIFY
    def data_version(self):
        """Changes when anyone commits a change to the memories. With the change log: the count
        of notifications received (no query; the first look after (re)subscribing counts as a
        change too, so a commit just before the LISTEN is read). Without: the coarse token, a
        scan of the table per look (what a store without the log costs)."""
        if not self._logs_changes():
            return self._coarse_token()
        import psycopg
        with self._listen_lock:
            conn = self._listener
            if conn is None or conn.closed or conn.broken:
                self._listen()
                self._notes += 1
                return ("notified", self._notes - 1)
            try:
                for _ in conn.notifies(timeout=0):
                    self._notes += 1
            except psycopg.Error:
                conn.close()  # subscribe again at the next look, which then counts as a change
            return ("notified", self._notes)

    def _logs_changes(self) -> bool:
        if self._has_log is None:
            self._has_log = self.has_change_log()
        return self._has_log

    def _listen(self) -> None:
        from .connect import connect
        conn = connect(self.dsn, need_vector=False)
        conn.execute(f"LISTEN {CHANGE_CHANNEL}")
        self._listener = conn

    def close_listener(self) -> None:
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
