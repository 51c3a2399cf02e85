"""The Store: one memory database, opened safely, read into arrays, written by one writer.

Every write is one short `BEGIN IMMEDIATE` transaction covering the row, its FTS and
vector index (kept by triggers) and its audit entry, so a crash leaves each action
wholly there or wholly absent. Nothing here deletes a memory physically.
"""
from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext
from typing import TypeVar

import apsw

from ..background import in_thread
from ..words import count
from . import changes, schema
from . import snapshot as snapshots
from .arrays import MemoryArrays, load_arrays
from .boundary import ErrorBoundary
from .changes import ChangeToken
from .common import TEXT_COLUMNS, Provenance, StoreCommon, audit_dump, audit_load, check_expected, decode_row, pick_fields, supersede_ids
from .connection import connect, whole_file_mapped
from .errors import (
    ASKED_READ_ONLY,
    UNKNOWN,
    BusyError,
    CorruptStoreError,
    NotAStoreError,
    ReadOnlyError,
    StoreError,
    ValidationError,
    store_errors,
    translate,
    wal_hint,
)
from .fileheader import check_header
from .judged import SqliteRecords
from .read_only_media import detour, needs_detour, release_copy, share_copy
from .records import MS_ABOVE, decode_json, decode_text, embedding_blob, has_direction, read_time
from .schema import MEMORY_COLUMNS
from .sqlite_queries import SqliteQueries
from .vectors import NOT_REPAIRABLE_VECTORS, misdeclared_text, vec_ddl, vec_table

T = TypeVar("T")

#: how long the main thread waits for a worker's call on the connection before going on without its turn (_turn)
MAIN_THREAD_WAIT_S = 0.25

_SELECT_ROW = "SELECT " + ", ".join(
    f"CAST({c} AS BLOB)" if c in TEXT_COLUMNS else c for c in MEMORY_COLUMNS
) + " FROM memories"
_INSERT_ROW = f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})"


class _Row(dict):
    """A row read for an edit; `raw` holds the bytes of text columns that are not valid UTF-8."""

    def __init__(self, *a):
        super().__init__(*a)
        self.raw: dict[str, bytes] = {}


def _at_boundary(fn):
    """Translate apsw errors escaping a Store method (the store's public surface) into StoreErrors.
    Damage met by any read makes the store read-only: quick_check at open does not see every
    kind (an index out of step with its table), and no edit may be written over it."""
    @functools.wraps(fn)
    def guarded(self, *args, **kwargs):
        try:
            with self._turn(), store_errors(self.path):
                return fn(self, *args, **kwargs)
        except CorruptStoreError:
            if self._read_only_reason is None:
                self.read_only_reason = "damage was found while reading; run `memviz check`"
            raise
    return guarded


class Store(StoreCommon, SqliteQueries, SqliteRecords, ErrorBoundary):
    """Use `memviz.store.open(path)` or `memviz.store.create(path)` rather than this constructor.
    Every public method, inherited ones too, translates SQLite's errors (boundary.py)."""

    backend = "sqlite"
    guard = staticmethod(_at_boundary)

    def __init__(self, path: str, conn: apsw.Connection, *, read_only_reason: str | None = None,
                 report: schema.SchemaReport | None = None, conn_path: str | None = None):
        self.path = path
        self.conn = conn
        self.conn_path = conn_path or path  # what SQLite opens: a URI or a copy on read-only media (read_only_media.py)
        self._read_only_reason = read_only_reason
        self.report = report
        self._lock = threading.RLock()  # one thread on the connection at a time (_turn)
        self._check: Future | None = None  # SQLite's quick_check still running (begun after the read of a large file)
        self._check_due: tuple[str, str] | None = None  # (conn_path, path): a large file opened without a read,
                                                        # checked once first read whole or once asked (_begin_check)
        self.answers_later = False          # open_and_read(check_later=True): the window follows the check's answer
        self._check_found: list[str] = []    # what that check found
        self._check_lock = threading.Lock()

    @property
    def read_only_reason(self) -> str | None:
        """Why edits are refused (None: the store may be written). While the quick check of a store
        opened with check_later runs, edits are refused with CHECKING; damage it finds stays.
        Otherwise a check not answered yet (a large file read before it is checked) is waited for."""
        fixed = self._read_only_reason
        if not self.answers_later:
            self._settle_check(wait=True)
        elif self._check is not None and not self._settle_check(wait=False):
            return CHECKING if fixed is None else f"{fixed}; {CHECKING}"
        return self._read_only_reason

    @read_only_reason.setter
    def read_only_reason(self, reason: str | None) -> None:
        self._read_only_reason = reason

    def _add_read_only_reason(self, reason: str) -> None:
        with self._check_lock:
            fixed = self._read_only_reason
            self._read_only_reason = reason if fixed is None else f"{fixed}; {reason}"

    @property
    def checking(self) -> bool:
        """The quick check of a large file has not answered yet (edits wait for it)."""
        return self._check_due is not None or (self._check is not None and not self._settle_check(wait=False))

    def checked(self) -> list[str]:
        """Wait for the quick check not answered yet, if any (a large file is checked after it is
        read); the damage it found (empty: none, or it was checked at the open). Damage makes the
        store read-only."""
        self._settle_check(wait=True)
        return list(self._check_found)

    def _begin_check(self) -> None:
        """Start the quick check of a large file opened without a read (open_store), if it is due:
        after the first whole read (arrays), so that it does not take a core from it, or when its
        answer is wanted (a write, read_only_reason, checked()). The read is done by then: the
        check reads through SQLite's page cache, not a second map of the file (_checked_in_thread)."""
        with self._check_lock:
            due, self._check_due = self._check_due, None
            if due is not None:
                self._check = _checked_in_thread(*due, mapped=False)

    def _settle_check(self, wait: bool) -> bool:
        """Fold the deferred check's answer into the read-only reason once it is there; whether it is."""
        if wait:
            self._begin_check()
        elif self._check_due is not None:
            return False
        check = self._check
        if check is None:
            return True
        if not wait and not check.done():
            return False
        try:
            damage = check.result()
        except StoreError as e:   # the file could not be checked at all: damaged beyond quick_check's list
            damage, reason = [str(e)], str(e)
        except apsw.Error as e:
            damage = [str(translate(e, self.path, doing="checking it"))]
            reason = damage[0]
        else:
            reason = _damage_reason(damage, self.path) if damage else None
        with self._check_lock:
            if self._check is not check:
                return True   # another thread folded it in
            self._check, self._check_found = None, damage
        if reason:
            self._add_read_only_reason(reason)
        return True

    @contextmanager
    def _turn(self):
        """This thread's turn on the connection. apsw refuses a second thread while one is inside
        a call ("Connection is busy in another thread"), so a worker waits for the one before it
        (a reload beside the map's labels). The main (GUI) thread waits at most
        MAIN_THREAD_WAIT_S and then goes on without its turn rather than freeze the window behind
        a long read: a call that needs no connection (refuses, describe) simply answers, one that
        does meets apsw's ThreadingViolationError, which its callers retry."""
        main = threading.current_thread() is threading.main_thread()
        held = self._lock.acquire(timeout=MAIN_THREAD_WAIT_S) if main else self._lock.acquire()
        try:
            yield
        finally:
            if held:
                self._lock.release()

    # ----------------------------------------------------------------- basics
    @property
    def location(self) -> str:
        return self.path

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            release_copy(self.conn_path)

    def reopen(self) -> Store:
        """Another connection to the same store (a writer beside a thread reading on this one).
        The checks made when this one was opened still hold, so they are not repeated."""
        self._begin_check()   # one check for both connections
        self._settle_check(wait=False)
        conn = connect(self.conn_path, readonly=self._read_only_reason is not None)
        other = Store(self.path, conn, read_only_reason=self._read_only_reason, report=self.report,
                      conn_path=share_copy(self.conn_path))
        other._check, other.answers_later = self._check, self.answers_later  # a check still running holds its edits too
        return other

    def data_version(self) -> int:
        """Changes when another connection commits (PRAGMA data_version)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def change_token(self) -> ChangeToken:
        return changes.sqlite_token(self.conn)

    def changes_since(self, token: ChangeToken, max_share: float = changes.MAX_SHARE) -> changes.Changes:
        return changes.sqlite_changes_since(self.conn, token, max_share)

    def meta(self, key: str, default=None):
        try:
            row = self.conn.execute("SELECT value FROM memviz_meta WHERE key=?", (key,)).fetchone()
        except apsw.SQLError:
            if self._has_table("memviz_meta"):
                raise
            return default  # a store memviz has not migrated (opened read-only) keeps no meta
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO memviz_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                      (key, json.dumps(value)))

    @contextmanager
    def transaction(self):
        """One short BEGIN IMMEDIATE transaction. Any SQLite error becomes the StoreError that
        says what happened and whether the change was written (`written`); no transaction is
        left open. Damage found while writing makes the store read-only for the next edits."""
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open read-only: {self.read_only_reason}")
        with self._turn():
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                mark = self._audit_mark()
            except apsw.Error as e:
                self._rollback()
                self._raise_write_failure(e, "starting a write", False)
            try:
                yield self.conn
            except BaseException as e:
                self._rollback()
                cause = e if isinstance(e, apsw.Error) else e.__cause__  # a Store method inside translated it
                if not isinstance(cause, apsw.Error) or (e is not cause and not isinstance(e, StoreError)):
                    raise
                self._raise_write_failure(cause, "writing", False)
            try:
                self.conn.execute("COMMIT")
            except apsw.Error as e:
                self._rollback()
                landed = self._landed(mark)
                self._raise_write_failure(e, "committing", UNKNOWN if landed is None else landed)

    def _rollback(self) -> None:
        """Roll back what is still open: SQLite may already have rolled back (a full disk, an I/O
        error), and ROLLBACK with no transaction would hide the real error."""
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except apsw.Error:
                pass  # SQLite rolls back the journal on the next open; the original error is what matters

    def _audit_mark(self):
        """The newest audit id, read inside the write: a later one after a failed COMMIT proves it landed."""
        return self.conn.execute("SELECT max(id) FROM memviz_audit").fetchone()[0]

    def _landed(self, mark) -> bool | None:
        """Whether a write whose COMMIT failed is nevertheless in the store (None: cannot tell)."""
        try:
            now = self.conn.execute("SELECT max(id) FROM memviz_audit").fetchone()[0]
        except apsw.Error:
            return None
        return now != mark

    def _raise_write_failure(self, err, doing: str, written):
        """Raise `err` as the StoreError of a failed write (it stays as it is if it is no store failure)."""
        out = translate(err, self.path, doing=doing + " to it", written=written)
        if out is err:
            raise err
        if isinstance(out, CorruptStoreError):
            self._add_read_only_reason("damage was found while writing; run `memviz check`")
        raise out from err

    # ----------------------------------------------------------------- reads
    def embedding_models(self) -> list[tuple[str, int, int]]:
        """(model, dim, count) of the embeddings in the store, most used first."""
        rows = self.conn.execute(
            "SELECT embedding_model, length(embedding) / 4, count(*) FROM memories "
            "WHERE embedding IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC, 1").fetchall()
        return [(m or "", int(d), int(n)) for m, d, n in rows]

    def vector_index_notes(self) -> list[str]:
        """What vector search cannot use, by the size of the embeddings (one grouped scan): blobs
        that are no float32 vector, vectors of a dimension with no vec0 table (an agent wrote them
        with plain SQL), and vec0 tables declared for another dimension than their name's. Each
        says whether `memviz check --repair` mends it. Not checked on open: it reads every row.
        The vec0 tables are the ones the file has now, not at the open (a store filled since, such
        as a framework's mirror built at its first open, has made its own)."""
        report = schema.inspect(self.conn)
        tables, misdeclared = report.vec_tables, report.misdeclared
        main, main_dim = self.main_model()
        notes = [misdeclared_text(name, dim) + " (vector search cannot use it); `memviz check --repair` makes it "
                 "again from the memories' embeddings" for name, dim in misdeclared.items()]
        for nbytes, n in self.conn.execute("SELECT length(embedding), count(*) FROM memories "
                                           "WHERE typeof(embedding) = 'blob' GROUP BY 1 ORDER BY 1"):
            verb = "holds" if n == 1 else "hold"
            if nbytes == 0 or nbytes % 4:
                notes.append(f"{count(n, 'memory')} {verb} an embedding of {nbytes} bytes, which is no float32 "
                             "vector: search and the map leave them out. " + NOT_REPAIRABLE_VECTORS)
            elif nbytes // 4 not in tables and vec_table(nbytes // 4) not in misdeclared:
                other = "" if nbytes // 4 == main_dim else (
                    f"; they are not of the store's main model ({main}, {main_dim}-d), the one the map and queries use")
                notes.append(f"{count(n, 'memory')} {verb} embeddings of {nbytes // 4} dimensions with no vector "
                             f"index (an agent wrote them with plain SQL), so vector search does not see them{other}; "
                             "`memviz check --repair` makes it")
        return notes

    def arrays(self, model: str | None = None, preview: int = 0, snapshot: bool = False) -> MemoryArrays:
        """Every memory (live and retired) as columns; the matrix holds the vectors of `model`
        (default: the most used model); rows embedded otherwise have has_embedding False.
        `preview` > 0 adds the first that many characters of each content, on one line.
        `snapshot`: use (and afterwards write) the on-disk snapshot of an unchanged store
        (snapshot.py; one of `model`'s vectors when it is the model the snapshot holds); for opening
        a store, not for re-reads after every edit.
        A large file's quick check, when it is still due (open_store), begins once this has read it."""
        try:
            hit = snapshots.load(self.path, preview) if snapshot else None
            if hit is not None and model in (None, hit.embedding_model):
                return hit
            if not snapshot or model is not None:
                return load_arrays(self.conn, model, preview=preview)  # one scan: it picks the model and dim
            state = snapshots.file_state(self.path)
            arrays = load_arrays(self.conn, None, preview=preview)
            snapshots.save_later(self.path, state, arrays, preview)
            return arrays
        finally:
            self._begin_check()

    def arrays_of(self, rowids, model: str | None, dim: int | None, preview: int = 0) -> MemoryArrays:
        """The rows of `rowids` only, vectors of (`model`, `dim`): what a live refresh reads."""
        return load_arrays(self.conn, model, dim, preview=preview, rowids=rowids)

    def get(self, memory_id: str) -> dict | None:
        row = self.conn.execute(_SELECT_ROW + " WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else decode_row(row)

    def get_many(self, ids, fields=None) -> list[dict]:
        cols = MEMORY_COLUMNS if fields is None else ("id", *pick_fields(fields))
        select = "SELECT " + ", ".join(f"CAST({c} AS BLOB)" if c in TEXT_COLUMNS else c for c in cols) + " FROM memories"
        ids = list(ids)
        out = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            q = select + f" WHERE id IN ({','.join('?' * len(chunk))})"
            out.extend(decode_row(r, cols) for r in self.conn.execute(q, chunk))
        return out

    def counts(self) -> dict:
        """Counts per (kind, agent, live); plus totals."""
        rows = self.conn.execute(
            "SELECT kind, agent, valid_until IS NULL, count(*) FROM memories GROUP BY 1, 2, 3").fetchall()
        by_kind, by_agent, total, live = {}, {}, 0, 0
        for kind, agent, is_live, n in rows:
            kind, agent = decode_text(kind)[0], decode_text(agent)[0]
            by_kind.setdefault(kind, [0, 0])[0 if is_live else 1] += n
            by_agent.setdefault(agent, [0, 0])[0 if is_live else 1] += n
            total += n
            live += n if is_live else 0
        return {"total": total, "live": live, "retired": total - live, "by_kind": by_kind, "by_agent": by_agent}

    def time_span(self) -> tuple[float | None, float | None]:
        """Earliest and latest event time. SQL's min/max over plain numbers in range; the rare
        other values (ISO text, milliseconds: an agent wrote them) through the row reader, never
        compared as text; unreadable ones are left out."""
        lo, hi = self.conn.execute(
            "SELECT min(event_time), max(event_time) FROM memories WHERE typeof(event_time) IN ('integer', 'real') "
            f"AND abs(event_time) < {MS_ABOVE:.0f}").fetchone()
        times = [t for t in (lo, hi) if t is not None]
        for (raw,) in self.conn.execute("SELECT event_time FROM memories WHERE typeof(event_time) NOT IN "
                                        f"('integer', 'real') OR abs(event_time) >= {MS_ABOVE:.0f}"):
            t, _ = read_time(raw)
            if t is not None:
                times.append(t)
        return (min(times), max(times)) if times else (None, None)

    def provenance(self) -> Provenance:
        # read as bytes: an id or JSON text that is not valid UTF-8 (an agent wrote it) is replaced, not fatal
        rows = [(_text(i), _text(src), _text(sup)) for i, src, sup in self.conn.execute(
            "SELECT CAST(id AS BLOB), CAST(source_ids AS BLOB), CAST(CASE WHEN json_valid(attributes) THEN "
            "json_extract(attributes, '$.supersedes') END AS BLOB) "
            "FROM memories WHERE source_ids NOT IN ('[]', '') OR attributes LIKE '%supersedes%'")]
        known = {_text(r[0]) for r in self.conn.execute("SELECT CAST(id AS BLOB) FROM memories")}
        prov = Provenance()
        for mid, src, sup in rows:
            prov.add(mid, map(str, decode_json(src, "source_ids")[0]), supersede_ids(sup), known.__contains__)
        return prov

    def links_of(self, rowids) -> list[tuple[str, list[str], list[str]]]:
        """(id, source ids, superseded ids) of those of `rowids` that have links (a live refresh
        adds the links of new rows to the Provenance it holds instead of reading it all again)."""
        out = []
        for mid, src, sup in self.conn.execute(
                "SELECT CAST(id AS BLOB), CAST(source_ids AS BLOB), CAST(CASE WHEN json_valid(attributes) THEN "
                "json_extract(attributes, '$.supersedes') END AS BLOB) FROM memories "
                "WHERE rowid IN (SELECT value FROM json_each(?)) "
                "AND (source_ids NOT IN ('[]', '') OR attributes LIKE '%supersedes%')",
                (json.dumps([int(r) for r in rowids]),)):
            sources, _ = decode_json(_text(src), "source_ids")
            out.append((_text(mid), [str(x) for x in sources], supersede_ids(_text(sup))))
        return out

    def supersede_links(self) -> list[tuple[str, str]]:
        """(new id, old id) of every `attributes.supersedes` link, whether the old one exists or
        not: what provenance() gives as supersedes, without its pass over every id."""
        return [(_text(mid), o) for mid, sup in self.conn.execute(
            "SELECT CAST(id AS BLOB), CAST(CASE WHEN json_valid(attributes) THEN json_extract(attributes, '$.supersedes') "
            "END AS BLOB) FROM memories WHERE attributes LIKE '%supersedes%'") for o in supersede_ids(_text(sup))]

    def entities(self) -> list[dict]:
        out = []
        for eid, name, typ, aliases, summary, mentions, prot in self.conn.execute(
                "SELECT id, canonical_name, type, aliases, summary, mention_count, protected FROM entities ORDER BY canonical_name"):
            out.append({"id": eid, "canonical_name": name, "type": typ, "aliases": decode_json(aliases, "tags")[0],
                        "summary": summary, "mention_count": mentions, "protected": bool(prot)})
        return out

    def history(self, memory_id: str) -> list[dict]:
        rows = self.conn.execute(
            "SELECT id, at, action, before, after, actor, note FROM memviz_audit WHERE memory_id=? ORDER BY id", (memory_id,))
        return [{"id": i, "at": at, "action": a, "before": audit_load(b), "after": audit_load(af), "actor": actor, "note": note}
                for i, at, a, b, af, actor, note in rows]

    def fts_search(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(id, bm25) best first; the query's words are matched as plain terms, any of them."""
        words = re.findall(r"\w+", query, flags=re.UNICODE)
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.conn.execute(
            "SELECT m.id, bm25(memories_fts) FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
            "WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT ?", (match, limit))
        return [(i, float(s)) for i, s in rows]

    def vec_search(self, vector, k: int = 50) -> list[tuple[str, float]]:
        """(id, cosine distance) nearest first, from the vec0 table of the vector's dimension."""
        blob = embedding_blob(vector, what="query vector")
        dim = len(blob) // 4
        if not has_direction(blob) or not self._has_table(vec_table(dim)):
            return []
        with whole_file_mapped(self.conn):   # sqlite-vec reads every vector of the dimension: as a scan does
            rows = self.conn.execute(
                f"SELECT memory_id, distance FROM {vec_table(dim)} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (blob, int(k)))
            return [(i, float(d)) for i, d in rows]

    def _has_table(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchone() is not None

    def integrity(self) -> list[str]:
        """Problems found by SQLite's integrity_check and the FTS5 index check (empty = fine)."""
        with whole_file_mapped(self.conn):   # every page is read
            problems = [r[0] for r in self.conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
        try:
            self.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        except apsw.ReadOnlyError:
            pass  # the check needs a writable handle; a read-only open skips it
        except apsw.Error as e:
            problems.append(f"full-text index: {e}")
        return problems

    # ----------------------------------------------------------------- writes
    def model_dim(self, model: str | None) -> int | None:
        """The dimension of `model`'s vectors in this store (None if it has none). Stops at the
        first such row, unlike embedding_models(), which reads every row: edits call it."""
        row = self.conn.execute("SELECT length(embedding) / 4 FROM memories WHERE embedding_model = ? "
                                "AND embedding IS NOT NULL LIMIT 1", (model,)).fetchone()
        return int(row[0]) if row else None

    def _ensure_vec_table(self, conn, dim: int) -> None:
        if not self._has_table(vec_table(dim)):
            for sql in vec_ddl(dim):
                conn.execute(sql)

    def insert_memories(self, records, *, audit: bool = True, actor: str = "memviz", note: str | None = None) -> list[str]:
        """Insert memories (rows, FTS and vectors) in one transaction; every record is
        validated first, so a bad one writes nothing."""
        rows, now = self._normalized(records)
        if not rows:
            return []
        with self.transaction() as c:
            self._insert(c, rows)
            if audit:
                c.executemany(
                    "INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) VALUES (?,?,?,?,?,?,?)",
                    [(now, "insert", r["id"], None, audit_dump(r), actor, note) for r in rows])
        return [r["id"] for r in rows]

    def _insert(self, c, rows: list[dict]) -> None:
        """Normalised rows into memories (their vec0 tables made first), inside `c`'s transaction."""
        for dim in {len(r["embedding"]) // 4 for r in rows if r["embedding"] is not None}:
            self._ensure_vec_table(c, dim)
        try:
            c.executemany(_INSERT_ROW, [tuple(r[k] for k in MEMORY_COLUMNS) for r in rows])
        except apsw.ConstraintError as e:
            raise ValidationError(f"cannot insert: {e} (is an id already in the store?)") from None

    def _current(self, c, memory_id: str) -> _Row:
        """The row as stored, its text columns read as bytes (as the row select does): invalid
        UTF-8 or a NUL is decoded with replacement characters for comparing and copying, and the
        original bytes kept in `.raw` so an audit `before` holds what was really there."""
        row = c.execute(_SELECT_ROW + " WHERE id=?", (memory_id,)).fetchone()
        if row is None:
            raise StoreError(f"No memory with id {memory_id!r} in this store.")
        cur = _Row(zip(MEMORY_COLUMNS, row))
        for col in TEXT_COLUMNS:
            raw = cur[col]
            cur[col], bad = decode_text(raw) if raw is not None else (None, False)
            if bad:
                cur.raw[col] = bytes(raw)
        return cur

    def update_rows(self, changes: dict[str, dict], *, action: str = "update", expected: dict[str, dict] | None = None,
                    actor: str = "memviz", note: str | None = None) -> dict[str, tuple[dict, dict]]:
        """Change fields of several memories in ONE transaction, each row audited (an undo that
        retires one row and restores another must not be split). `expected` maps id -> fields as
        shown. Returns id -> (before, after), both as stored."""
        cleaned = self._cleaned(changes)
        expected = expected or {}
        done = {}
        with self.transaction() as c:
            for memory_id, clean in cleaned.items():
                cur = self._current(c, memory_id)
                check_expected(memory_id, cur, expected.get(memory_id))
                if "embedding" in clean and clean["embedding"] is not None:
                    self._ensure_vec_table(c, len(clean["embedding"]) // 4)
                before = {k: cur.raw.get(k, cur[k]) for k in clean}
                if clean:
                    sets = ", ".join(f"{k} = ?" for k in clean)
                    c.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*clean.values(), memory_id))
                self.audit(c, action, memory_id, before, clean, actor, note)
                done[memory_id] = (before, clean)
        return done

    def _supersede_write(self):
        return self.transaction()

    def _retire(self, c, memory_id: str, when: int) -> None:
        c.execute("UPDATE memories SET valid_until = ? WHERE id = ?", (when, memory_id))

    @staticmethod
    def audit(c, action, memory_id, before, after, actor, note):
        """One audit row, written inside the caller's open transaction (`with store.transaction() as c`)."""
        c.execute("INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) VALUES (?,?,?,?,?,?,?)",
                  (time.time(), action, memory_id, audit_dump(before), audit_dump(after), actor, note))


def _text(raw):
    """Bytes SQLite returned for a CAST(... AS BLOB) column as text (None stays None)."""
    return None if raw is None else decode_text(raw)[0]


# --------------------------------------------------------------------- open / create
def new_file(path) -> tuple[str, str]:
    """(path, its folder) for a store file to be made there: StoreError if the file exists (memviz
    never overwrites one) or the folder does not."""
    path = os.fspath(path)
    if os.path.exists(path):
        raise StoreError(f"{path} already exists; memviz will not overwrite it.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise StoreError(f"The folder {folder} does not exist.")
    return path, folder


def create(path: str) -> Store:
    """Make a new, empty native store at `path` (refuses to overwrite an existing file)."""
    path, _ = new_file(path)
    with store_errors(path, doing="creating it"):
        conn = connect(path, create=True)
        conn.execute("PRAGMA journal_mode=WAL")  # our own file: WAL lets the agent and memviz work together
        schema.migrate(conn)
        conn.execute("INSERT INTO memviz_meta(key, value) VALUES ('created_by', ?)", (json.dumps("memviz"),))
        return Store(path, conn, report=schema.inspect(conn))


def open_store(path: str, *, read_only: bool = False, to_repair: bool = False) -> Store:
    """Open an existing store. Never creates a file. Checks the header and quick_check and
    recognises the schema; opens read-only (with the reason) when the file or folder is not
    writable, the checks fail, or the file holds triggers/views memviz does not know.
    `to_repair` (`memviz check --repair`): a vector table declared for another dimension, which
    the repair makes again, does not make the store read-only."""
    return open_and_read(path, None, read_only=read_only, to_repair=to_repair)[0]


def open_and_read(path: str, read: Callable[[Store], T] | None, *, read_only: bool = False,
                  check_later: bool = False, to_repair: bool = False) -> tuple[Store, T | None]:
    """open_store, then `read(store)`, with SQLite's quick_check of the file on a second connection.
    The outcome is the same as checking first: damage makes the store read-only with the reason,
    or fails the open, and no write can happen before the check has answered (nothing is written
    here; a store that needs migrating is checked before it is migrated). A small file is checked
    beside the read (or at once, with no read). A file of CHECK_LATER_BYTES and more is checked
    once the read is done (with no read: once it is first read whole, `Store.arrays`, or once the
    answer is wanted), so on two cores the check does not take a core from the read, and this
    returns before it answers; `store.checked()` waits for its answer, and damage stays as the
    read-only reason. Until then a write, `read_only` and `read_only_reason` wait for it — or,
    with `check_later` (the window, which follows the answer: `answers_later`), edits are refused
    with CHECKING as the reason. A read that fails waits for the check, which explains damage better."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StoreError(f"No such file: {path} (memviz does not create a store on open; use `memviz create`).")
    with store_errors(path, doing="opening it"):
        try:
            return _open_and_read(path, read, read_only, os.path.getsize(path) >= CHECK_LATER_BYTES, check_later,
                                  to_repair)
        except CorruptStoreError as e:  # whatever SQLite's words, a -wal with content beside the file is named
            hint = wal_hint(path)
            if not hint or hint in str(e):
                raise
            raise CorruptStoreError(str(e).rstrip(".") + hint + ".") from e


def _open_and_read(path: str, read, read_only: bool, later: bool, answers_later: bool, to_repair: bool = False):
    check_header(path)
    conn_path, media = detour(path) if needs_detour(path) else (path, None)
    try:
        conn = connect(conn_path, readonly=True)
    except BaseException:
        release_copy(conn_path)
        raise
    try:
        try:
            report = _inspect(conn, path)
        except apsw.ReadOnlyError as e:
            if e.extendedresult not in (apsw.SQLITE_READONLY_ROLLBACK, apsw.SQLITE_READONLY_RECOVERY):
                raise
            conn.close()
            conn = _recover(path, allowed=not read_only and not media)
            report = _inspect(conn, path)
        current = report.version >= schema.SCHEMA_VERSION
        if not current or (read is None and not later):
            damage = _quick_check(conn, path)  # first: nothing is migrated before the check
            check = None
        else:
            damage, check = [], None if later else _checked_in_thread(conn_path, path)
        reasons = _reasons(report, damage, path, to_repair)
    except BaseException:
        conn.close()
        release_copy(conn_path)
        raise
    folder = os.path.dirname(os.path.abspath(path))
    if media:
        reasons.insert(0, media)
    if not os.access(path, os.W_OK):
        reasons.insert(0, "the file is not writable")
    elif not os.access(folder, os.W_OK):
        reasons.insert(0, "its folder is not writable")
    if read_only:
        reasons.insert(0, ASKED_READ_ONLY)
    if reasons:
        store = Store(path, conn, read_only_reason="; ".join(reasons), report=report, conn_path=conn_path)
    else:
        rw = connect(path)
        try:
            if report.version < schema.SCHEMA_VERSION:
                schema.migrate(rw)
                report = schema.inspect(rw)
        except apsw.Error as e:
            # a store that cannot be brought to memviz's schema now (a full disk, an I/O error)
            # is still read as it is, read-only with the reason; a busy one waits like any open
            rw.close()
            err = translate(e, path, doing="updating it to memviz's current schema", written=False)
            if isinstance(err, BusyError) or not isinstance(err, StoreError):
                conn.close()
                raise err from e
            store = Store(path, conn, read_only_reason=f"it could not be updated to memviz's current schema: {err}",
                          report=report)
        else:
            conn.close()
            store = Store(path, rw, report=report)
    store.answers_later = answers_later and later and current
    if read is None:
        if later and current:
            store._check_due = (conn_path, path)
        return store, None
    result, failure = None, None
    try:
        result = read(store)
    except BaseException as e:  # noqa: BLE001 - reported after the check, which explains damage better
        failure = e
    if later and current:
        check = _checked_in_thread(conn_path, path, mapped=failure is not None)
        if failure is None:
            store._check = check
            return store, result
    if check is not None:
        try:
            damage = check.result()
        except BaseException:
            store.close()
            raise
        if damage:
            reason = _damage_reason(damage, path)
            if failure is not None:
                store.close()
                raise CorruptStoreError(f"{path} is damaged and cannot be read ({reason}).") from failure
            store._add_read_only_reason(reason)
    if failure is not None:
        store.close()
        raise failure
    return store, result


def _recover(path: str, allowed: bool) -> apsw.Connection:
    """A store left with an unfinished write by a process that stopped (a hot rollback journal, or
    a WAL whose index must be rebuilt) can be read only after SQLite has undone that write, which
    takes a writable connection. That is SQLite's own crash recovery, the same any writer (the
    agent) does on its next open, and it restores the store as it was before the unfinished write;
    done only when the user has not asked for read-only and the file can be written. Returns a
    read-only connection to the recovered store."""
    folder = os.path.dirname(os.path.abspath(path))
    if not (allowed and os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
        raise ReadOnlyError(
            f"{path} holds an unfinished write of a process that stopped (a hot journal). SQLite must undo it "
            "before the store can be read, which needs write access: open it once without --read-only, from a "
            "writable folder (or let the agent open it), then open it again.")
    rw = connect(path)
    try:
        rw.execute("SELECT count(*) FROM sqlite_master").fetchall()
    finally:
        rw.close()
    return connect(path, readonly=True)


def _checked_in_thread(conn_path: str, path: str, mapped: bool = True):
    """_quick_check on its own read-only connection, in a thread: a Future of its answer.
    `mapped` (beside a read, or after a failed one): the file is memory-mapped whole while it is
    checked; else (after a read: the window is up) every page is read through SQLite's small page
    cache, at half the speed, so that the check does not count the whole file in the process's
    resident memory meanwhile."""
    def check() -> list[str]:
        conn = connect(conn_path, readonly=True)
        try:
            with whole_file_mapped(conn) if mapped else nullcontext():
                return _quick_check(conn, path)
        finally:
            conn.close()
    return in_thread(check, "memviz-quick-check")


CHECK_LATER_BYTES = 64 << 20   # smaller files are checked quickly, beside the read
CHECKING = "SQLite's quick check of the file is still running; edits wait until it has passed"


def _quick_check(conn, path) -> list[str]:
    """What SQLite's quick_check reports as wrong (empty: fine); an unreadable file raises."""
    try:
        return [r[0] for r in conn.execute("PRAGMA quick_check(20)") if r[0] != "ok"]
    except (apsw.CorruptError, apsw.NotADBError) as e:
        raise CorruptStoreError(f"{path} is damaged and cannot be read ({e}){wal_hint(path)}.") from None
    except apsw.SQLError as e:
        raise NotAStoreError(f"{path} cannot be read: {e}") from None


def _damage_reason(damage: list[str], path: str | None = None) -> str:
    lines = [ln for d in damage for ln in d.splitlines() if ln.strip()]
    more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
    return "SQLite's quick_check found damage: " + "; ".join(lines[:3]) + more + wal_hint(path)


def _inspect(conn, path) -> schema.SchemaReport:
    try:
        report = schema.inspect(conn)
    except (apsw.CorruptError, apsw.NotADBError) as e:
        raise CorruptStoreError(f"{path} is damaged and cannot be read ({e}){wal_hint(path)}.") from None
    if report.kind != "native":
        raise NotAStoreError(f"{path} is an SQLite database but not a memviz memory store: {report.describe_difference()}.")
    return report


def _reasons(report: schema.SchemaReport, damage: list[str], path: str | None = None,
             to_repair: bool = False) -> list[str]:
    """Why the store must be opened read-only (empty: it may be written). A misdeclared vector
    table would fail every write of a vector (its triggers insert vectors of another size); the
    repair drops and makes it again, so it may open the store."""
    reasons = [_damage_reason(damage, path)] if damage else []
    if not to_repair:
        reasons += [misdeclared_text(name, dim) + "; `memviz check --repair` makes it again from the memories' "
                    "embeddings" for name, dim in report.misdeclared.items()]
    if report.version > schema.SCHEMA_VERSION:
        reasons.append(f"it was written by a newer memviz (schema {report.version}, this one knows {schema.SCHEMA_VERSION})")
    if report.version == 0:
        reasons.append("it has the memories table but not memviz's own tables (it was not made by memviz); "
                       "open a copy, or import it, to edit")
    if report.foreign_objects:
        shown = "; ".join(f"{t} {n}: {sql}" for t, n, sql in report.foreign_objects)
        reasons.append("it holds triggers or views memviz did not make, which would run on every edit: " + shown)
    reasons.extend(report.problems)
    return reasons
