"""PgStore: a memory store on a PostgreSQL server, behind the same interface as the SQLite Store.

Every write is one short transaction (the row, its vector column, its audit row); a read
holds no transaction open, so no lock is kept while the window shows a row or a dialog.
Conflict detection is the SQLite store's: the row is read `FOR UPDATE` inside the write and
compared with the values the caller showed (`expected`).

A dropped connection (server restarted, backend terminated) is made again on the next use,
a bounded number of times: a read is then simply run again; a write is whole or absent, as
the server's own record of its transaction says (`pg_xact_status`), and when absent it is
raised as ConnectionLostError (a BusyError, written=False) so the edit queue keeps it.
"""
from __future__ import annotations

import functools
import json
import re
import struct
import threading
import time
from contextlib import contextmanager, nullcontext

import numpy as np

from ..arrays import MemoryArrays
from ..boundary import ErrorBoundary
from ..common import SCALAR_COLUMNS, Provenance, StoreCommon, audit_dump, audit_load, check_expected, decode_row, pick_fields, supersede_ids
from ..errors import UNKNOWN, ConnectionLostError, ReadOnlyError, StoreError, _written_text
from ..judged import PgRecords
from ..records import decode_json, embedding_blob, has_direction
from ..schema import MEMORY_COLUMNS
from . import arrays as pg_arrays
from . import schema
from .changes import PgChangeLog
from .connect import PgVector, _psycopg, connect, scrub_first_line, translate
from .dsn import label, redact
from .queries import PgQueries

RECONNECT_ATTEMPTS = 3
RECONNECT_PAUSE_S = 0.25  # then 0.5, 0.75: a restarting server gets about 1.5 s


def vector_bytes(sent) -> bytes | None:
    """float32 little-endian bytes from pgvector's binary form (`vector_send`)."""
    if sent is None:
        return None
    sent = bytes(sent)
    dim = struct.unpack(">H", sent[:2])[0]
    return np.frombuffer(sent, dtype=">f4", count=dim, offset=4).astype("<f4").tobytes()


class _NoSide(Exception):
    """The snapshot could not be exported for other connections (PgStore._sides_in)."""


def _at_boundary(fn):
    """psycopg errors escaping a PgStore method become StoreErrors. Its reads and writes translate
    their own (`_read`, `_transaction`: a dropped connection is made again there); this is the
    boundary for whatever else reaches the server."""
    @functools.wraps(fn)
    def guarded(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except StoreError:
            raise
        except Exception as e:
            if isinstance(e, _psycopg().Error):
                raise translate(e, self.dsn, write=False) from None
            raise
    return guarded


class PgStore(StoreCommon, PgQueries, PgChangeLog, PgRecords, ErrorBoundary):
    """Use `memviz.store.open("postgresql://…")` or `memviz.store.create(...)` rather than this.
    Every public method, inherited ones too, translates psycopg's errors (boundary.py)."""

    backend = "postgresql"
    guard = staticmethod(_at_boundary)

    def __init__(self, dsn: str, conn, *, read_only_reason: str | None = None, on_connect=None,
                 need_vector: bool = True):
        self.dsn = dsn
        self.on_connect = on_connect  # foreign.install for a table memviz did not make: per session
        self.need_vector = need_vector
        self.path = redact(dsn)  # what titles and messages show: never the password
        self.conn = conn
        self.read_only_reason = read_only_reason
        self.report = None
        self._lock = threading.RLock()
        self._listen_lock = threading.Lock()  # the LISTEN connection (changes.py), polled on the GUI thread
        self._has_log = None
        self._sides = []  # more connections, for reading vectors and columns beside `conn` (_sides_in)
        self._dims = schema.vector_dims(conn)

    # ----------------------------------------------------------------- basics
    @property
    def location(self) -> str:
        return self.dsn

    def describe(self) -> str:
        """The database and host (a DSN's query string, e.g. a socket folder, would push the rest of
        a message out of sight)."""
        return label(self.path)

    def close(self) -> None:
        self.close_listener()
        for side in self._sides:
            side.close()
        self.conn.close()

    def reopen(self) -> PgStore:
        conn = connect(self.dsn, need_vector=self.need_vector)
        if self.on_connect:
            self.on_connect(conn)
        return PgStore(self.dsn, conn, read_only_reason=self.read_only_reason, on_connect=self.on_connect,
                       need_vector=self.need_vector)

    def _q(self, sql, params=()):
        """Run one read statement (its rows are fetched with it); again on a new connection if
        the connection had dropped."""
        return self._read(lambda conn: conn.execute(sql, params))

    def _read(self, fn):
        """fn(conn), a read, run once more on a new connection if the connection dropped."""
        import psycopg
        with self._lock:
            for attempt in (0, 1):
                if self.conn.closed:
                    self._reconnect()
                try:
                    return fn(self.conn)
                except psycopg.Error as e:
                    if attempt == 1 or not self._lost(e):
                        raise translate(e, self.dsn, write=False) from None

    def _vector_dims(self) -> list[int]:
        return self._read(schema.vector_dims)

    def _lost(self, e) -> bool:
        import psycopg
        return isinstance(e, psycopg.OperationalError) and (self.conn.closed or self.conn.broken)

    def _reconnect(self) -> None:
        """A new connection in place of a dropped one; ConnectionLostError after the bounded attempts."""
        import psycopg
        last = None
        for attempt in range(RECONNECT_ATTEMPTS):
            try:
                conn = connect(self.dsn, need_vector=self.need_vector)
                if self.on_connect:
                    self.on_connect(conn)
            except (StoreError, psycopg.Error) as e:
                last = translate(e, self.dsn) if isinstance(e, psycopg.Error) else e
                time.sleep(RECONNECT_PAUSE_S * (attempt + 1))
                continue
            old, self.conn = self.conn, conn
            old.close()
            return
        err = ConnectionLostError(f"The connection to {self.path} dropped and memviz could not connect again "
                                  f"({RECONNECT_ATTEMPTS} attempts): {last}")
        err.written = False
        raise err

    def _translated(self, e):
        import psycopg
        return translate(e, self.dsn) if isinstance(e, psycopg.Error) else e

    def meta(self, key: str, default=None):
        row = self._q("SELECT value FROM memviz_meta WHERE key = %s", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO memviz_meta(key, value) VALUES (%s, %s) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, json.dumps(value)))

    def transaction(self):
        """One short transaction; yields the connection (its SQL is PostgreSQL's, `%s` params).
        If the connection drops, the write is whole (the commit reached the server: returns as
        written) or absent (ConnectionLostError, written=False; the next use reconnects)."""
        return self._transaction(pipeline=False)

    @contextmanager
    def _transaction(self, *, pipeline: bool):
        """transaction(); `pipeline`: psycopg's pipeline mode, statements are sent without waiting for each
        answer and a round trip happens only where the body fetches a result (and at the
        commit); errors of unfetched statements are raised there. An edit is then two round
        trips instead of seven: each one costs milliseconds on a loaded server."""
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open read-only: {self.read_only_reason}")
        import psycopg
        with self._lock:
            if self.conn.closed or self.conn.broken:
                self._reconnect()
            xid, body_done = None, False
            try:
                with self.conn.pipeline() if pipeline else nullcontext(), self.conn.transaction():
                    asked = self.conn.execute("SELECT pg_current_xact_id()::text")
                    if not pipeline:
                        xid = asked.fetchone()[0]
                    yield self.conn
                    if pipeline:  # came with the body's first fetch (else one round trip before the commit)
                        xid = asked.fetchone()[0]
                    body_done = True
            except psycopg.Error as e:
                if not self._lost(e):
                    raise self._translated(e) from None
                written = self._outcome(xid) if body_done else False
                if written is True:
                    return  # the commit reached the server before the connection dropped
                err = (ConnectionLostError if written is False else StoreError)(
                    f"The connection to {self.path} dropped during a write "
                    f"({scrub_first_line(e, self.dsn)}).{_written_text(written)}"
                    + (" memviz connects again on the next use; the edit can be retried." if written is False else ""))
                err.written = written if isinstance(written, bool) else None
                raise err from None

    def _outcome(self, xid: str):
        """Whether the transaction `xid` committed (True/False), asked on a new connection;
        UNKNOWN when the server cannot be reached."""
        try:
            self._reconnect()
            status = self.conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()[0]
        except Exception:  # noqa: BLE001 - any failure here leaves the outcome unknown, said as such
            return UNKNOWN
        return True if status == "committed" else False if status == "aborted" else UNKNOWN

    # ----------------------------------------------------------------- reads
    def _vec_select(self, conn=None) -> str:
        """SQL: the row's vector in pgvector's binary form (NULL when it has none). `conn`: the
        connection of an open transaction (never reconnected under it)."""
        self._dims = schema.vector_dims(conn) if conn is not None else self._vector_dims()
        return self._vec_expr(self._dims)

    @staticmethod
    def _vec_expr(dims: list[int]) -> str:
        if not dims:
            return "NULL::bytea"
        return "coalesce(" + ", ".join(f"vector_send({schema.vec_column(d)})" for d in dims) + ")"

    def embedding_models(self) -> list[tuple[str, int, int]]:
        self._dims = self._vector_dims()
        if not self._dims:
            return []
        rows = self._q(f"SELECT coalesce(embedding_model, ''), d, count(*) FROM (SELECT embedding_model, "
                       f"{pg_arrays.dim_expr(self._dims)} AS d FROM memories) s WHERE d IS NOT NULL "
                       "GROUP BY 1, 2 ORDER BY 3 DESC, 1").fetchall()
        return [(m, int(d), int(n)) for m, d, n in rows]

    def vector_index_notes(self) -> list[str]:
        wide = [f"vectors of {d} dimensions are searched exactly: pgvector indexes at most {schema.HNSW_MAX_DIM}"
                for d in self._vector_dims() if d > schema.HNSW_MAX_DIM]
        return wide + [f"vectors of {d} dimensions have no HNSW index yet (a copy stopped before building it), so "
                       f"pgvector's own search of them is exact and slower: `memviz index {self.path}` builds it"
                       for d in ([] if self.on_connect else self._read(schema.missing_vector_indexes))]

    def model_dim(self, model: str | None) -> int | None:
        self._dims = self._vector_dims()
        for d in self._dims:
            if self._q(f"SELECT 1 FROM memories WHERE embedding_model = %s AND {schema.vec_column(d)} IS NOT NULL "
                       "LIMIT 1", (model,)).fetchone():
                return d
        return None

    def arrays(self, model: str | None = None, preview: int = 0, snapshot: bool = False) -> MemoryArrays:
        """Every memory as columns, read in bulk inside one read-only snapshot (`snapshot` is a
        SQLite file cache and means nothing here)."""
        def read(conn):
            for beside in (True, False):
                try:
                    with conn.transaction():
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        size = pg_arrays.table_size(conn)
                        want = pg_arrays.sides_for(size, self._dims) if beside else 0
                        with self._sides_in(conn, want) if beside else nullcontext(()) as sides:
                            self._dims = schema.vector_dims(conn)
                            return pg_arrays.load_arrays(conn, self._dims, model, preview=preview, sides=sides,
                                                         size=size)
                except _NoSide:
                    continue  # read again on `conn` alone
        return self._read(read)

    @contextmanager
    def _sides_in(self, conn, count: int):
        """Up to `count` more connections in the snapshot of `conn`'s transaction (exported, as
        pg_dump's workers do), for reading beside `conn` (pg_arrays.load_arrays); as many as
        could be had (too many connections: fewer). _NoSide when the snapshot cannot be exported
        (a server that exports none): the caller then reads on `conn` alone, only slower; its
        transaction is aborted then, so call this before reading anything in it."""
        import psycopg
        try:
            snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        except psycopg.Error:
            raise _NoSide() from None
        joined = []
        for k in range(count):
            kept = self._sides[k] if k < len(self._sides) else None
            side = self._join(kept, snapshot) or (kept is not None and self._join(None, snapshot))
            if not side:
                break  # (a role's connection limit: the ones had are used)
            joined.append(side)
        for extra in self._sides[len(joined):]:
            extra.close()
        self._sides = list(joined)
        try:
            yield joined
        finally:
            for side in joined:
                try:
                    side.execute("ROLLBACK")
                except psycopg.Error:
                    side.close()

    def _join(self, side, snapshot: str):
        """`side` (a new connection if None, or if it was lost) in the transaction of `snapshot`; None if it failed."""
        import psycopg
        from psycopg import sql
        try:
            if side is None or side.closed or side.broken:
                side = connect(self.dsn, need_vector=self.need_vector)
                if self.on_connect:
                    self.on_connect(side)
            side.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            side.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
            return side
        except (psycopg.Error, StoreError):
            if side is not None:
                side.close()
            return None

    def arrays_of(self, rowids, model: str | None, dim: int, preview: int = 0) -> MemoryArrays:
        """The rows of `rowids` only, vectors of (`model`, `dim`): what a live refresh reads."""
        wanted = [int(r) for r in rowids]

        def read(conn):
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                self._dims = schema.vector_dims(conn)
                return pg_arrays.load_arrays(conn, self._dims, model, preview=preview, rowids=wanted, dim=dim)
        return self._read(read)

    def links_of(self, rowids) -> list[tuple[str, list[str], list[str]]]:
        """As the SQLite store's: (id, source ids, superseded ids) of those of `rowids` with links."""
        rows = self._q(f"SELECT id, source_ids, {self._SUPERSEDES} FROM memories WHERE rowid = ANY(%s) "
                       "AND (source_ids NOT IN ('[]', '') OR attributes LIKE '%%supersedes%%') ORDER BY rowid",
                       ([int(r) for r in rowids],)).fetchall()
        return [(mid, [str(x) for x in decode_json(src, "source_ids")[0]], supersede_ids(sup)) for mid, src, sup in rows]

    def _select_rows(self, where: str, params) -> list[dict]:
        cols = ", ".join(SCALAR_COLUMNS)
        rows = self._q(f"SELECT {cols}, {self._vec_select()} FROM memories {where}", params).fetchall()
        return [self._row(r) for r in rows]

    @staticmethod
    def _row(r) -> dict:
        d = dict(zip(SCALAR_COLUMNS, r))
        d["embedding"] = vector_bytes(r[-1])
        return {c: d[c] for c in MEMORY_COLUMNS}

    def get(self, memory_id: str) -> dict | None:
        rows = self._select_rows("WHERE id = %s", (memory_id,))
        return decode_row(tuple(rows[0].values())) if rows else None

    def get_many(self, ids, fields=None) -> list[dict]:
        if fields is not None:  # only these columns (no vector): as the SQLite store's
            cols = ("id", *pick_fields(fields))
            rows = self._q(f"SELECT {', '.join(cols)} FROM memories WHERE id = ANY(%s) ORDER BY rowid",
                           (list(ids),)).fetchall()
            return [decode_row(r, cols) for r in rows]
        rows = self._select_rows("WHERE id = ANY(%s) ORDER BY rowid", (list(ids),))
        return [decode_row(tuple(r.values())) for r in rows]

    def counts(self) -> dict:
        rows = self._q("SELECT kind, agent, valid_until IS NULL, count(*) FROM memories GROUP BY 1, 2, 3").fetchall()
        by_kind, by_agent, total, live = {}, {}, 0, 0
        for kind, agent, is_live, n in rows:
            by_kind.setdefault(kind, [0, 0])[0 if is_live else 1] += n
            by_agent.setdefault(agent, [0, 0])[0 if is_live else 1] += n
            total += n
            live += n if is_live else 0
        return {"total": total, "live": live, "retired": total - live, "by_kind": by_kind, "by_agent": by_agent}

    def time_span(self):
        row = self._q("SELECT min(event_time), max(event_time) FROM memories").fetchone()
        return row[0], row[1]

    _SUPERSEDES = ("CASE WHEN pg_input_is_valid(attributes, 'json') AND json_typeof(attributes::json) = 'object' "
                   "THEN attributes::json->>'supersedes' END")

    def provenance(self) -> Provenance:
        rows = self._q(f"SELECT id, source_ids, {self._SUPERSEDES} FROM memories "
                       "WHERE source_ids NOT IN ('[]', '') OR attributes LIKE '%%supersedes%%'").fetchall()
        known = {r[0] for r in self._q("SELECT id FROM memories")}
        prov = Provenance()
        for mid, src, sup in rows:
            prov.add(mid, map(str, decode_json(src, "source_ids")[0]), supersede_ids(sup), known.__contains__)
        return prov

    def supersede_links(self) -> list[tuple[str, str]]:
        return [(mid, o) for mid, sup in self._q(
            f"SELECT id, {self._SUPERSEDES} FROM memories WHERE attributes LIKE '%%supersedes%%'")
            for o in supersede_ids(sup)]

    def entities(self) -> list[dict]:
        return [{"id": eid, "canonical_name": name, "type": typ, "aliases": decode_json(aliases, "tags")[0],
                 "summary": summary, "mention_count": mentions, "protected": bool(prot)}
                for eid, name, typ, aliases, summary, mentions, prot in self._q(
                    "SELECT id, canonical_name, type, aliases, summary, mention_count, protected FROM entities "
                    "ORDER BY canonical_name")]

    def history(self, memory_id: str) -> list[dict]:
        rows = self._q("SELECT id, at, action, before, after, actor, note FROM memviz_audit WHERE memory_id = %s "
                       "ORDER BY id", (memory_id,))
        return [{"id": i, "at": at, "action": a, "before": audit_load(b), "after": audit_load(af), "actor": actor,
                 "note": note} for i, at, a, b, af, actor, note in rows]

    def fts_search(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(id, -ts_rank) best first: any of the query's words, as plain terms (the 'simple'
        configuration: lower-cased, no stemming; unlike FTS5's unicode61 it keeps diacritics).
        ts_rank weighs term frequency without BM25's length normalisation, so the order can
        differ from SQLite's; the hybrid preset fuses ranks, not these scores."""
        words = re.findall(r"\w+", query, flags=re.UNICODE)
        if not words:
            return []
        q = " || ".join(["plainto_tsquery('simple', %s)"] * len(words))
        rows = self._q(f"SELECT id, ts_rank(content_tsv, q) AS r FROM memories, ({'SELECT ' + q} AS q) qq "
                       "WHERE content_tsv @@ q ORDER BY r DESC, rowid LIMIT %s", (*words, int(limit)))
        return [(i, -float(r)) for i, r in rows]

    def vec_search(self, vector, k: int = 50) -> list[tuple[str, float]]:
        """(id, cosine distance) nearest first: pgvector's HNSW index (d <= 2000), else exact."""
        blob = embedding_blob(vector, what="query vector")
        dim = len(blob) // 4
        if not has_direction(blob) or dim not in self._vector_dims():
            return []
        col = schema.vec_column(dim)

        def read(conn):
            with conn.transaction():
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(schema.EF_SEARCH, k))),))
                return conn.execute(f"SELECT id, {col} <=> %s AS d FROM memories WHERE {col} IS NOT NULL "
                                    "ORDER BY d LIMIT %s", (PgVector(blob), int(k))).fetchall()
        rows = self._read(read)
        return [(i, float(d)) for i, d in rows]

    def integrity(self) -> list[str]:
        missing = self._read(schema.missing_parts)
        return [f"the native schema lacks {', '.join(missing)}"] if missing else []

    # ----------------------------------------------------------------- writes
    def _ensure_vec_column(self, c, dim: int) -> None:
        if dim not in schema.vector_dims(c):
            for sql in schema.vec_ddl(dim):
                c.execute(sql)
            self._dims = schema.vector_dims(c)

    def _insert(self, c, rows: list[dict]) -> None:
        by_dim: dict[int | None, list[dict]] = {}
        for r in rows:
            by_dim.setdefault(None if r["embedding"] is None else len(r["embedding"]) // 4, []).append(r)
        for dim, group in by_dim.items():
            cols = list(SCALAR_COLUMNS) + ([schema.vec_column(dim)] if dim else [])
            if dim:
                self._ensure_vec_column(c, dim)
            sql = f"INSERT INTO memories ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
            with c.cursor() as cur:
                cur.executemany(sql, [tuple(r[k] for k in SCALAR_COLUMNS) + ((PgVector(r["embedding"]),) if dim else ())
                                      for r in group])

    def insert_memories(self, records, *, audit: bool = True, actor: str = "memviz", note: str | None = None) -> list[str]:
        rows, now = self._normalized(records)
        if not rows:
            return []
        with self.transaction() as c:  # a duplicate id becomes ValidationError (connect.translate)
            self._insert(c, rows)
            if audit:
                with c.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [(now, "insert", r["id"], None, audit_dump(r), actor, note) for r in rows])
        return [r["id"] for r in rows]

    def _current(self, c, memory_id: str) -> dict:
        """The row, locked for this transaction. Read with the vector columns last seen and,
        in the same round trip (a pipeline), the columns there are now: read again only if
        another session added one meanwhile."""
        def locked(dims):
            return c.execute(f"SELECT {', '.join(SCALAR_COLUMNS)}, {self._vec_expr(dims)} FROM memories WHERE id = %s "
                             "FOR UPDATE", (memory_id,))
        columns, asked = c.execute(schema.VECTOR_COLUMNS_SQL), locked(self._dims)
        row = asked.fetchone()
        dims = schema.dims_of(columns.fetchall())
        if dims != self._dims:
            self._dims = dims
            row = locked(dims).fetchone()
        if row is None:
            raise StoreError(f"No memory with id {memory_id!r} in this store.")
        return self._row(row)

    def update_rows(self, changes: dict[str, dict], *, action: str = "update", expected: dict[str, dict] | None = None,
                    actor: str = "memviz", note: str | None = None) -> dict[str, tuple[dict, dict]]:
        cleaned = self._cleaned(changes)
        expected = expected or {}
        done = {}
        with self._transaction(pipeline=True) as c:
            for memory_id, clean in cleaned.items():
                cur = self._current(c, memory_id)
                check_expected(memory_id, cur, expected.get(memory_id))
                before = {k: cur[k] for k in clean}
                sets, params = [], []
                for k, v in clean.items():
                    if k != "embedding":
                        sets.append(f"{k} = %s")
                        params.append(v)
                        continue
                    dim = None if v is None else len(v) // 4
                    if dim:
                        self._ensure_vec_column(c, dim)
                    for d in self._dims:  # one vector column holds the row's vector; the others are NULL
                        sets.append(f"{schema.vec_column(d)} = %s")
                        params.append(PgVector(v) if d == dim else None)
                if sets:
                    c.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = %s", (*params, memory_id))
                self.audit(c, action, memory_id, before, clean, actor, note)
                done[memory_id] = (before, clean)
        return done

    def _supersede_write(self):
        return self._transaction(pipeline=True)

    def _retire(self, c, memory_id: str, when: int) -> None:
        c.execute("UPDATE memories SET valid_until = %s WHERE id = %s", (when, memory_id))

    @staticmethod
    def audit(c, action, memory_id, before, after, actor, note):
        """One audit row, inside the caller's open transaction (`with store.transaction() as c`)."""
        c.execute("INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) "
                  "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                  (time.time(), action, memory_id, audit_dump(before), audit_dump(after), actor, note))
