"""A native store that mirrors another system's memory store (source.py), so that every panel,
the engine and the presets work on it unchanged.

The mirror is an SQLite file in the user cache (`mirrors/`), one per source. Opening a source
reuses its mirror when the source's token has not moved (fast reopen), and otherwise syncs it:
every record is read from the source and compared with the mirror by a fingerprint, and only
what differs is written (new rows inserted, changed rows updated and audited as the system's
change, rows the system deleted marked retired: nothing is physically removed). The first build
is one bulk load into the new mirror (store/bulk.py), the source read in a thread meanwhile,
committed without an fsync (a cache: a mirror damaged by a system crash fails its quick_check
and is rebuilt); the columns written are kept for the first read (arrays.WrittenColumns), so
the window's first look at a new mirror scans nothing. What the first read does not need — the
full-text and vector indexes and the fingerprints — is written in a second transaction; for the
window (`later`) and a large source, in a thread once the window has read the store: until it
has committed, edits and syncs wait (`indexing`, read_only_reason INDEXING) and the searches
that read those indexes (the hybrid preset's full text, vec_search) wait for it. A mirror left
with that step undone (`mirror.pending` in its meta: a crash, a cancel, a close) is rebuilt at
its next open. The live
window's change watcher asks `data_version()` and `changes_since()`, which sync first and then
answer from the mirror's own change log, so a busy agent's writes arrive as deltas.

Writes from memviz go to the source first (Source.write, the way the system's own client
writes), then to the mirror; the source stays the truth, and the next sync repairs a mirror
that missed one. The cache file is memviz's own: it is rebuilt when damaged or when the
mapping of a system changes (MIRROR_VERSION).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator

import apsw
import numpy as np

from ..background import gc_paused, in_thread, read_ahead
from ..store import ReadOnlyError, StoreError, ValidationError
from ..store import create as create_store
from ..store import open_store as open_native
from ..store.arrays import MemoryArrays
from ..store.boundary import ErrorBoundary
from ..store.bulk import bulk_load, fill_indexes
from ..store.common import StoreCommon, check_expected
from ..store.connection import connect, immediate
from ..store.errors import ASKED_READ_ONLY, store_errors
from ..store.judged import SAVE_JUDGED, SAVE_PARAMETERS, UNCHECKED, AgentQuery, JudgedRow, SavedParameters, records_read_only
from ..store.records import normalize_many
from ..store.schema import MEMORY_COLUMNS
from ..store.store import Store
from ..tasks import Task
from ..userdirs import user_cache_dir, user_data_dir
from .source import Source

#: bump when a system's mapping to memviz records (or the fingerprint of one) changes: every mirror
#: is then rebuilt (what each bump was for is in git's history of this line)
MIRROR_VERSION = 6
_FP_TABLE = "memviz_mirror"
#: meta key: [embedding_model, dimension] most of the mirror's vectors carry ([null, 0]: none); absent
#: or null when not known (a mirror from before it, or a change that may have moved it): counted again
_MODEL = "mirror.model"
_BATCH = 5000
#: a first build for the window of this many memories or more writes its indexes after the first read
INDEX_LATER_ROWS = 20_000
INDEXING = "memviz is building the mirror's full-text and vector indexes; edits wait until they are built"
_PENDING = "mirror.pending"  # meta: the rowid up to which the indexes and fingerprints are still to be written


def _file_name(source: Source) -> str:
    key = hashlib.sha1(f"{source.system}\0{source.label}".encode()).hexdigest()[:20]
    return f"{source.system}-{key}.db"


def mirror_path(source: Source) -> str:
    folder = user_cache_dir() / "mirrors"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / _file_name(source))


def records_path(source: Source) -> str:
    """Where memviz keeps its own records about a framework store (judged queries, parameter
    sets): a small native store of their own, in the user *data* folder, named like the mirror.
    Not in the mirror, which a MIRROR_VERSION bump, damage or an unfinished build
    (`mirror.pending`) deletes and rebuilds, nor beside it in the cache, which a user may clear:
    these are the user's work, not a copy of the source."""
    return str(user_data_dir() / "judged" / _file_name(source))


class _Records(Store):
    """The records file of a framework store (records_path): judged queries name the memories
    of the mirror, so those are what a saved query's ids are checked against."""

    def __init__(self, label: str, native: Store, memories: Store):
        super().__init__(label, native.conn, report=native.report, conn_path=native.conn_path)
        self._memories = memories

    def _memory_ids_missing(self, c, ids):
        found = {r["id"] for r in self._memories.get_many(ids, fields=("kind",))}
        return [m for m in ids if m not in found]


#: the row columns a fingerprint hashes as normalize wrote them: the times are the source's own
#: (normalize fills a missing one with the time of the read), the vector is hashed apart
_FP_COLUMNS = tuple(col for col in MEMORY_COLUMNS if col not in ("embedding", "created_at", "event_time"))


def fingerprint(rec: dict, row: dict) -> bytes:
    """What identifies a record's content (equal fingerprints, nothing to write): `rec` as the
    source gave it, `row` as records.normalize_many made it. Its text columns are hashed as
    the row holds them, JSON already encoded (a json.dumps of each record would cost several times more)."""
    text = "\x1f".join([str(row[col]) for col in _FP_COLUMNS] + [str(rec.get("created_at")), str(rec.get("event_time"))])
    h = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
    if row["embedding"] is not None:
        h.update(b"\x1f")
        h.update(row["embedding"])
    return h.digest()


def fingerprints(records: list[dict], rows: list[dict]) -> list[tuple[str, bytes]]:
    """(id, fingerprint) of each record and its row."""
    return [(row["id"], fingerprint(rec, row)) for rec, row in zip(records, rows)]


def _source_times(rec: dict) -> dict:
    """What a fingerprint reads of the record beside its row (the source's own times)."""
    return {"created_at": rec.get("created_at"), "event_time": rec.get("event_time")}


class _Indexing:
    """The indexes and fingerprints of a first build still to be written (`MirroredStore.indexing`):
    rows up to `upto`, the source's times of each row in rowid order. `future` once started;
    `owner` the store that built the mirror (its close cancels `task`, a reopened one's does not;
    the writing connection registers its interrupt with the task, so a statement under way stops)."""

    def __init__(self, owner, upto: int, times: list[dict], dims: frozenset[int]):
        self.owner, self.upto, self.times, self.dims = owner, upto, times, dims  # dims: the vec0 tables written
        self.future = None
        self.task = Task("mirror indexes")
        self.lock = threading.Lock()

    def start(self):
        """The step's Future, started in a thread now if it was not yet."""
        with self.lock:
            if self.future is None:
                self.future = in_thread(lambda: self.owner._write_indexes(self), "memviz-mirror-indexes")
            return self.future

    def failure(self) -> str | None:
        """Why the step failed, once it has (the mirror then lacks its indexes: read-only)."""
        f = self.future
        if f is None or not f.done() or f.exception() is None:
            return None
        return f"its full-text and vector indexes could not be built ({f.exception()}); it is rebuilt at its next open"


def _at_boundary(fn):
    """apsw errors of the mirror's own statements become StoreErrors naming the source (what it
    asks the mirror `Store` comes back translated by that store's boundary)."""
    @functools.wraps(fn)
    def guarded(self, *args, **kwargs):
        with store_errors(self.path):
            return fn(self, *args, **kwargs)
    return guarded


class MirroredStore(StoreCommon, ErrorBoundary):
    """Another system's store as memviz sees it: `mirror`, a native `Store` on the cache file
    under the source's label, answers the reads; writes go to the source first (`update_rows`).
    Implements MemoryStore and SqliteFile (store/interface.py): what it does not change is the
    mirror's, asked below one method at a time."""

    backend = "sqlite"
    guard = staticmethod(_at_boundary)
    audit = staticmethod(Store.audit)

    def __init__(self, source: Source, mirror: Store, *, read_only: bool = False):
        self.source = source
        # the mirror file read under the source's label: its messages name what the user opened
        self.mirror = Store(source.label, mirror.conn, report=mirror.report, conn_path=mirror.conn_path)
        self.path = source.label
        own = source.read_only_reason() if not source.edits else None
        self._read_only_reason = "; ".join(([ASKED_READ_ONLY] if read_only else []) + ([own] if own else [])) or None
        self._synced_token = self.mirror.meta("mirror.token")
        self._sync_lock = threading.Lock()
        self._in_step = False  # the source was told the mirror matches it (Source.in_step)
        # the first build's columns (arrays.WrittenColumns) and the write marks after it: the first
        # read is made from them, unless something was written since
        self._fresh: tuple | None = None
        self._indexing: _Indexing | None = None  # the first build's second step, until it has committed
        self._records: _Records | None = None  # memviz's own records (records_path), opened when first asked

    # ------------------------------------------------------------ identity
    @property
    def location(self) -> str:
        return self.source.target

    def describe(self) -> str:
        return self.source.describe()

    @property
    def corrects_in_place(self) -> bool:
        return self.source.corrects_in_place

    @property
    def conn(self):
        return self.mirror.conn

    @property
    def conn_path(self) -> str:
        return self.mirror.conn_path

    @property
    def report(self):
        return self.mirror.report

    @report.setter
    def report(self, report) -> None:
        self.mirror.report = report

    @property
    def read_only_reason(self) -> str | None:
        """The source's (a system memviz does not write to), the mirror's (damage), and while the
        first build's indexes are written, INDEXING (or why they could not be)."""
        extra = INDEXING if self.indexing else self.index_failure
        return "; ".join(r for r in (self._read_only_reason, self.mirror.read_only_reason, extra) if r) or None

    @read_only_reason.setter
    def read_only_reason(self, reason: str | None) -> None:
        self._read_only_reason = reason

    @property
    def checking(self) -> bool:
        return self.mirror.checking

    @property
    def answers_later(self) -> bool:
        return self.indexing

    def checked(self) -> list[str]:
        return self.mirror.checked()

    def reopen(self) -> MirroredStore:
        other = MirroredStore(self.source, open_native(self.conn_path))
        other._read_only_reason = self._read_only_reason
        other._indexing = self._indexing  # its edits wait for the same step
        return other

    def close(self) -> None:
        self._fresh = None
        job = self._indexing
        if job is not None and job.owner is self and job.future is not None and not job.future.done():
            job.task.cancel()  # a mirror left half done: rebuilt at its next open
            try:
                job.future.result()
            except BaseException:  # noqa: BLE001 - interrupted on purpose
                pass
        try:
            if self._records is not None:
                self._records.close()
            self.mirror.close()
        finally:
            self.source.close()

    # ------------------------------------------------------------ the indexes written after the first read
    @property
    def indexing(self) -> bool:
        """The full-text and vector indexes and the fingerprints of the first build are still
        being written (edits and syncs wait; searches of those indexes wait)."""
        job = self._indexing
        return job is not None and (job.future is None or not job.future.done())

    @property
    def index_failure(self) -> str | None:
        """Why the first build's indexes could not be written, once that is known (else None)."""
        job = self._indexing
        return None if job is None else job.failure()

    def index_later(self) -> None:
        """Start writing the first build's indexes in a thread, if any are still to be written."""
        if self._indexing is not None:
            self._indexing.start()

    def indexed(self) -> None:
        """Wait until the first build's indexes are written (started now if they were not yet);
        a failure to write them is raised here, as the StoreError that says why (and the store
        stays read-only with it)."""
        job = self._indexing
        if job is None:
            return
        job.start().result()
        if self._indexing is job:
            self._indexing = None

    def _write_indexes(self, job: _Indexing) -> None:
        """FTS5 and vec0 filled for the rows of the first build, and their fingerprints (rows read
        back: the mirror holds them as normalize made them), in one transaction on a connection
        of its own, so that the window's reads on this one go on meanwhile (WAL)."""
        with store_errors(self.path, doing="building the mirror's indexes"):
            conn = connect(self.conn_path)

            def interrupt() -> None:  # a close may come just after this connection's own
                with contextlib.suppress(apsw.Error):
                    conn.interrupt()
            job.task.on_cancel(interrupt)
            try:
                _stop_if(job)
                conn.execute("PRAGMA synchronous = OFF")  # a cache, as its first build (bulk_load durable=False)
                with immediate(conn):
                    fill_indexes(conn, job.upto, job.dims)
                    _stop_if(job)
                    cur = conn.execute(f"SELECT {', '.join(MEMORY_COLUMNS)} FROM memories WHERE rowid <= ? ORDER BY rowid",
                                       (job.upto,))
                    fps = [(vals[0], fingerprint(times, dict(zip(MEMORY_COLUMNS, vals))))
                           for times, vals in zip(job.times, cur)]
                    conn.executemany(f"INSERT INTO {_FP_TABLE}(id, fp) VALUES (?, ?)", fps)
                    conn.execute("DELETE FROM memviz_meta WHERE key = ?", (_PENDING,))
                    _stop_if(job)
            finally:
                conn.close()
        job.times = []

    # ------------------------------------------------------------ reading: the mirror, once it is in step
    def fts_hits(self, query: str) -> np.ndarray:
        self.indexed()
        return self.mirror.fts_hits(query)

    def fts_search(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        self.indexed()
        return self.mirror.fts_search(query, limit)

    def vec_search(self, vector, k: int = 50) -> list[tuple[str, float]]:
        self.indexed()
        return self.mirror.vec_search(vector, k)

    def integrity(self) -> list[str]:
        self.indexed()
        return self.mirror.integrity()

    def arrays(self, model: str | None = None, preview: int = 0, snapshot: bool = False) -> MemoryArrays:
        # the on-disk snapshot cache is keyed by a store file; the mirror's reopen is fast already
        fresh, self._fresh = self._fresh, None
        if fresh is not None and model is None and fresh[1] == self._write_marks():
            arrays = fresh[0].arrays(preview)  # what was just written, not read back (None: an odd value)
            if arrays is not None:
                return arrays
        return self.mirror.arrays(model, preview)

    def _write_marks(self) -> tuple[int, int]:
        """Moves when this connection or another one writes to the mirror."""
        return self.conn.total_changes(), self.mirror.data_version()

    def data_version(self):
        """Moves when the source changes (its token) or the mirror does."""
        return (_token_text(self._source_call(self.source.token)), self.mirror.data_version())

    def change_token(self):
        return self.mirror.change_token()

    def changes_since(self, token, max_share: float):
        """The mirror synced with the source first, then its own change log read."""
        self.sync()
        return self.mirror.changes_since(token, max_share)

    def meta(self, key: str, default=None):
        return self.mirror.meta(key, default)

    def embedding_models(self) -> list[tuple[str, int, int]]:
        return self.mirror.embedding_models()

    def model_dim(self, model: str | None) -> int | None:
        return self.mirror.model_dim(model)

    def vector_index_notes(self) -> list[str]:
        return self.mirror.vector_index_notes()

    def arrays_of(self, rowids, model: str | None, dim: int | None, preview: int = 0) -> MemoryArrays:
        return self.mirror.arrays_of(rowids, model, dim, preview)

    def links_of(self, rowids) -> list[tuple[str, list[str], list[str]]]:
        return self.mirror.links_of(rowids)

    def get(self, memory_id: str) -> dict | None:
        return self.mirror.get(memory_id)

    def get_many(self, ids, fields=None) -> list[dict]:
        return self.mirror.get_many(ids, fields)

    def counts(self) -> dict:
        return self.mirror.counts()

    def time_span(self):
        return self.mirror.time_span()

    def provenance(self):
        return self.mirror.provenance()

    def supersede_links(self) -> list[tuple[str, str]]:
        return self.mirror.supersede_links()

    def entities(self) -> list[dict]:
        return self.mirror.entities()

    def history(self, memory_id: str) -> list[dict]:
        return self.mirror.history(memory_id)

    def live_agent_exists(self, agent: str) -> bool:
        return self.mirror.live_agent_exists(agent)

    def importance_since_reflection(self, agent: str, now: float | None = None) -> tuple[int | None, float, int]:
        return self.mirror.importance_since_reflection(agent, now)

    def recent_ids(self, agent: str, n: int) -> list[str]:
        return self.mirror.recent_ids(agent, n)

    def row_meta_columns(self) -> list[list]:
        return self.mirror.row_meta_columns()

    def max_rowid(self) -> int:
        return self.mirror.max_rowid()

    def memories_after(self, rowid: int) -> list[tuple[int, str]]:
        return self.mirror.memories_after(rowid)

    def retired_rows(self, limit: int | None = None) -> list[tuple]:
        return self.mirror.retired_rows(limit)

    def last_retirements(self) -> dict[str, tuple]:
        return self.mirror.last_retirements()

    def layout_row(self, method: str, model: str | None, params: str):
        return self.mirror.layout_row(method, model, params)

    def decay_references(self) -> dict[str, float]:
        return self.mirror.decay_references()

    def live_texts_with_words(self, agent: str, words) -> list[tuple[str, str]]:
        return self.mirror.live_texts_with_words(agent, words)

    def missing_entities(self, entity_ids) -> list[str]:
        return self.mirror.missing_entities(entity_ids)

    def texts_and_tags(self) -> list[tuple[int, str, str | None]]:
        return self.mirror.texts_and_tags()

    def audit_entries(self, actions=None, *, with_before: bool = False) -> list[tuple]:
        return self.mirror.audit_entries(actions, with_before=with_before)

    def schema_version(self) -> int | None:
        return self.mirror.schema_version()

    def malformed_json(self, column: str) -> list[str]:
        return self.mirror.malformed_json(column)

    def entity_links(self) -> list[tuple[str, str]]:
        return self.mirror.entity_links()

    # ------------------------------------------------------------ memviz's own records, beside the mirror
    def _records_file(self, *, create: bool) -> _Records | None:
        """The records store (records_path), opened on first use; made only to be written."""
        if self._records is None:
            path = records_path(self.source)
            if not os.path.exists(path):
                if not create:
                    return None
                os.makedirs(os.path.dirname(path), exist_ok=True)
                native = create_store(path)
                native.set_meta("records.of", self.source.label)
            else:
                native = open_native(path)
            self._records = _Records(self.path, native, self.mirror)
        return self._records

    def judged_sets(self) -> list[tuple[str, int]]:
        records = self._records_file(create=False)
        return [] if records is None else records.judged_sets()

    def judged_queries(self, set_name: str) -> list[JudgedRow]:
        records = self._records_file(create=False)
        return [] if records is None else records.judged_queries(set_name)

    def parameter_sets(self) -> list[SavedParameters]:
        records = self._records_file(create=False)
        return [] if records is None else records.parameter_sets()

    def change_judged(self, set_name: str, write=(), remove=(), *, expected=UNCHECKED, action: str = SAVE_JUDGED,
                      actor: str = "memviz", note: str | None = None) -> dict[str, JudgedRow | None]:
        if self.read_only:
            raise records_read_only(self.path, self.read_only_reason)
        return self._records_file(create=True).change_judged(set_name, write, remove, expected=expected, action=action,
                                                             actor=actor, note=note)

    def change_parameter_set(self, name: str, saved: SavedParameters | None, *, expected=UNCHECKED,
                             action: str = SAVE_PARAMETERS, actor: str = "memviz",
                             note: str | None = None) -> SavedParameters | None:
        if self.read_only:
            raise records_read_only(self.path, self.read_only_reason)
        return self._records_file(create=True).change_parameter_set(name, saved, expected=expected, action=action,
                                                                    actor=actor, note=note)

    def agent_queries(self, limit: int = 100) -> list[AgentQuery]:
        return self._source_call(lambda: self.source.agent_queries(limit))

    # ------------------------------------------------------------ syncing
    def sync(self, task: Task | None = None, *, first: bool = False, later: bool = False) -> dict:
        """Bring the mirror in step with the source; returns counts of what was written.
        `later` (a first build): see _build. The mirror's own bookkeeping is written even when
        the source is read-only (Chroma): it is written to `mirror`, whose edits no source refuses."""
        with self._sync_lock:
            raw = self._source_call(self.source.token)
            token = _token_text(raw)
            if token == self._synced_token and not first:
                if not self._in_step:  # reopened unchanged: the source may note what it holds now
                    model = self._main_model()
                    self._source_call(lambda: self.source.in_step(raw, model))
                    self._in_step = True
                return {"added": 0, "changed": 0, "gone": 0}
            self.indexed()  # nothing is written before the first build's indexes are
            with gc_paused():  # every record made at once (see gc_paused)
                done = self._sync(token, task, first, later)
            self._synced_token = token
            self._in_step = True
            return done

    def _sync(self, token: str, task: Task | None, first: bool, later: bool = False) -> dict:
        if first:
            return self._build(token, task, later)
        mirror = self.mirror
        part = task.part(0.0, 0.6) if task else None
        known = dict(mirror.conn.execute(f"SELECT id, fp FROM {_FP_TABLE}"))
        seen: set[str] = set()
        new, changed = [], {}
        delta = None
        if self._synced_token is not None:  # a large source may say what moved since
            since = json.loads(self._synced_token)
            delta = self._source_call(lambda: self.source.changed_since(since, known.keys(), part))
        records, present = delta if delta is not None else (self._source_call(lambda: list(self.source.records(part))), None)
        unique = []
        for rec in records:
            rid = str(rec["id"])
            if rid not in seen:  # a system that lists a memory twice: the first wins
                seen.add(rid)
                unique.append(rec)
        for rec, (rid, fp) in zip(unique, fingerprints(unique, normalize_many(unique, model_dims={}))):
            if rid not in known:
                new.append((rec, fp))
            elif known[rid] != fp:
                changed[rid] = (rec, fp)
        present = seen if present is None else set(present)
        gone = [rid for rid in known if rid not in present]
        part = task.part(0.6, 1.0) if task else None
        actor = self.source.system
        for i in range(0, len(new), _BATCH):
            if part:
                part.check()
                part.progress(i / max(len(new), 1), f"{i:,} of {len(new):,} memories")
            chunk = new[i:i + _BATCH]
            mirror.insert_memories([r for r, _fp in chunk], actor=actor, note=f"written by {self.source.title}")
            self._remember([(str(r["id"]), fp) for r, fp in chunk])
        if changed:
            rows = {r["id"]: r for r in mirror.get_many(list(changed))}
            updates = {}
            for rid, (rec, _fp) in changed.items():
                cur = rows.get(rid) or {}
                diff = {k: v for k, v in rec.items() if k != "id" and k in MEMORY_COLUMNS and not _same(cur.get(k), v, k)}
                if diff:
                    updates[rid] = diff
            if updates:
                mirror.update_rows(updates, action="sync", actor=actor, note=f"changed by {self.source.title}")
            self._remember([(rid, fp) for rid, (_rec, fp) in changed.items()])
        if gone:
            now = int(time.time())
            live = {r["id"] for r in mirror.get_many(gone) if r.get("valid_until") is None}
            if live:
                mirror.update_rows({rid: {"valid_until": now} for rid in live}, action="sync",
                                   actor=actor, note=f"deleted by {self.source.title} (kept retired here)")
            with mirror.transaction() as c:
                c.executemany(f"DELETE FROM {_FP_TABLE} WHERE id = ?", [(rid,) for rid in gone])
        if _model_moved(mirror.meta(_MODEL), [r for r, _fp in changed.values()], [r for r, _fp in new]):
            mirror.set_meta(_MODEL, None)
        mirror.set_meta("mirror.token", token)
        return {"added": len(new), "changed": len(changed), "gone": len(gone)}

    def _build(self, token: str, task: Task | None, later: bool) -> dict:
        """The first sync, into the new, empty mirror: one bulk load (store/bulk.py) of the rows
        alone; a thread reads the source and validates each batch (Python) while this one writes
        the one before (SQLite, which lets go of the GIL). The indexes and fingerprints follow in
        a second transaction: now, or (`later`, a large source) once the window has read the
        store (index_later)."""
        read = task.part(0.0, 0.95) if task else None
        times: list[dict] = []
        models: Counter = Counter()  # (embedding_model, dimension) -> how many of the records carry it
        with bulk_load(self.mirror, durable=False, keep=True, indexes=False) as load:  # a cache: rebuilt if damaged
            def prepared():
                seen: set[str] = set()
                batch: list[dict] = []
                for rec in self._read_records(read):
                    rid = str(rec["id"])
                    if rid not in seen:  # a system that lists a memory twice: the first wins
                        seen.add(rid)
                        batch.append(rec)
                        if (m := _model_of(rec)) is not None:
                            models[m] += 1
                    if len(batch) == _BATCH:
                        yield load.prepare(batch), [_source_times(r) for r in batch]
                        batch = []
                if batch:
                    yield load.prepare(batch), [_source_times(r) for r in batch]

            for [(rows, got)] in read_ahead(prepared, 1, "memviz-mirror-read"):
                if task:
                    task.check()
                load.write(rows)
                times.extend(got)
            if task:
                task.check()
            upto = load.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
            load.conn.execute("INSERT INTO memviz_meta(key, value) VALUES (?, ?)", (_PENDING, json.dumps(upto)))
        self._import_history()
        # what embedding_models() would count, counted while reading: a reopen in step names it
        main = min(models.items(), key=lambda kv: (-kv[1], kv[0]))[0] if models else (None, 0)
        self.mirror.set_meta(_MODEL, list(main))
        self.mirror.set_meta("mirror.token", token)
        self._indexing = _Indexing(self, upto, times, frozenset(load.dims))
        if not (later and load.count >= INDEX_LATER_ROWS):
            if task:
                task.progress(0.95, f"indexing {load.count:,} memories")
            self.indexed()
        self._fresh = (load.written, self._write_marks())
        return {"added": load.count, "changed": 0, "gone": 0}

    def _main_model(self) -> tuple[str, int] | None:
        """The (embedding_model, dimension) most of the mirror's vectors carry, None when it holds
        none: kept in its meta by the read that built it; counted (one scan) and kept when not."""
        kept = _kept(self.mirror.meta(_MODEL))
        if kept is None:
            kept = self.mirror.main_model()
            self.mirror.set_meta(_MODEL, list(kept))
        return None if kept[0] is None else (kept[0], kept[1])

    def _read_records(self, task: Task | None) -> Iterator[dict]:
        """Source.records, its library's errors translated record by record (see _source_call)."""
        records = self._source_call(lambda: iter(self.source.records(task)))
        while True:
            rec = self._source_call(lambda: next(records, None))
            if rec is None:
                return
            yield rec

    def _remember(self, pairs) -> None:
        with self.mirror.transaction() as c:
            c.executemany(f"INSERT INTO {_FP_TABLE}(id, fp) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET fp = excluded.fp",
                          pairs)

    def _import_history(self) -> None:
        rows = list(self._source_call(lambda: list(self.source.history())))
        if not rows:
            return
        with self.mirror.transaction() as c:
            for h in rows:
                c.execute("INSERT INTO memviz_audit(at, action, memory_id, before, after, actor, note) VALUES (?,?,?,?,?,?,?)",
                          (float(h["at"]), str(h.get("action") or "update"), str(h["memory_id"]),
                           _json(h.get("before")), _json(h.get("after")), self.source.system, h.get("note")))

    def _source_call(self, fn):
        """Call into the source; its library's errors become StoreErrors that name the source."""
        try:
            return fn()
        except StoreError:
            raise
        except apsw.Error as e:
            with store_errors(self.path, doing=f"reading the {self.source.title} store"):
                raise e from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StoreError(f"Cannot read the {self.source.title} store at {self.path}: {e}") from e
        except Exception as e:  # a database driver's error (psycopg): translated by its backend
            from ..store.postgres.connect import translate
            out = translate(e, self.source.target) if type(e).__module__.startswith("psycopg") else None
            if out is None:
                raise
            raise out from None

    # ------------------------------------------------------------ writing: the source first
    def update_rows(self, changes: dict[str, dict], *, action: str = "update", expected: dict[str, dict] | None = None,
                    actor: str = "memviz", note: str | None = None) -> dict[str, tuple[dict, dict]]:
        self._writable()
        fields = {k for ch in changes.values() for k in ch if k not in ("embedding", "embedding_model")}
        self.source.refuse(fields)
        self.sync()  # the agent's latest writes first: a change under the edit is a conflict, not lost
        rows = {r["id"]: r for r in self.mirror.get_many(list(changes))}
        missing = [rid for rid in changes if rid not in rows]
        if missing:
            raise StoreError(f"No memory with id {missing[0]!r} in {self.path}.")
        for rid, exp in (expected or {}).items():
            check_expected(rid, self.mirror.get(rid), exp)
        landed = self._source_call(lambda: self.source.write(rows, changes))
        done = self.mirror.update_rows(landed, action=action, expected=expected, actor=actor, note=note)
        if _model_moved(self.mirror.meta(_MODEL), [ch for ch in landed.values() if "embedding" in ch]):
            self.mirror.set_meta(_MODEL, None)
        self._after_write()
        return done

    def supersede(self, memory_id: str, new_content: str, *, embedding=None, embedding_model: str | None = None,
                  when=None, new_id_: str | None = None, expected: dict | None = None,
                  actor: str = "memviz", note: str | None = None) -> str:
        """A correction. Systems that rewrite a memory in place (mem0's update, a LangGraph put)
        keep its id: returns `memory_id`, and the old text stays in the audit (and the system's
        own history). Others retire the old memory and add a new one, as the native store does."""
        if not self.source.corrects_in_place:
            self.source.refuse({"content", "valid_until", "insert"})
            self._writable()
            return self.mirror.supersede(memory_id, new_content, embedding=embedding, embedding_model=embedding_model,
                                         when=when, new_id_=new_id_, expected=expected, actor=actor, note=note)
        ch = {"content": new_content}
        if embedding is not None:
            ch.update(embedding=embedding, embedding_model=embedding_model)
        self.update_rows({memory_id: ch}, action="correct", expected={memory_id: expected} if expected else None,
                         actor=actor, note=note)
        return memory_id

    def refuses(self, field: str) -> str | None:
        return self.source.refusal([field])

    def insert_memories(self, records, *, audit: bool = True, actor: str = "memviz", note: str | None = None) -> list[str]:
        self.source.refuse({"insert"})
        raise ReadOnlyError(f"{self.path}: adding memories to a {self.source.title} store is not supported")

    def _writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open read-only: {self.read_only_reason}")

    # memviz's own tables (meta, layouts) and a rewrite in one transaction: in the mirror alone, as
    # the store is writable (not while its indexes are built, nor in a store the source keeps read-only)
    def transaction(self):
        self._writable()
        return self.mirror.transaction()

    def set_meta(self, key: str, value) -> None:
        self._writable()
        self.mirror.set_meta(key, value)

    def put_layout(self, key, method, model, params, created_at, ids_json, coords: bytes) -> None:
        self._writable()
        self.mirror.put_layout(key, method, model, params, created_at, ids_json, coords)

    def forget_layouts(self, method: str | None = None) -> None:
        self._writable()
        self.mirror.forget_layouts(method)

    def rewrite_rows(self, ids, fields, decide, *, actor: str = "memviz") -> list:
        # consolidation's rewrite (confidence decayed, rows pruned) would land in the mirror alone,
        # unseen by the agent and lost at the next rebuild: refused as its merges are, by "insert"
        self.source.refuse({"insert"})
        self._writable()
        return self.mirror.rewrite_rows(ids, fields, decide, actor=actor)

    def _after_write(self) -> None:
        """Our own write moved the source's token: record it, so the next poll does not re-read."""
        self._synced_token = _token_text(self._source_call(self.source.token))
        self.mirror.set_meta("mirror.token", self._synced_token)




def _stop_if(job: _Indexing) -> None:
    """The store was closed while its indexes were being written (close interrupts a statement
    under way; this stops between them): nothing is committed, the next open rebuilds."""
    if job.task.cancelled:
        raise StoreError("the mirror was closed before its indexes were built; it is rebuilt at its next open")


def _same(a, b, col) -> bool:
    if isinstance(b, np.ndarray):
        b = b.astype("<f4").tobytes()
    if col in ("tags", "source_ids", "entity_ids", "attributes") and isinstance(a, str):
        try:
            a = json.loads(a)
        except ValueError:
            pass
    return a == b


def _json(v):
    return None if v is None else json.dumps(v, ensure_ascii=False, default=str)


def _model_of(rec: dict) -> tuple[str, int] | None:
    """(embedding_model, dimension) of a record's vector (float32 bytes or a sequence), None without one."""
    vec = rec.get("embedding")
    if vec is None:
        return None
    return str(rec.get("embedding_model") or ""), len(vec) // 4 if isinstance(vec, bytes | bytearray | memoryview) else len(vec)


def _kept(value) -> tuple[str | None, int] | None:
    """The meta _MODEL as (embedding_model, dimension), (None, 0) for a mirror without vectors;
    None when it is not kept."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[1], int) \
            and (value[0] is None or isinstance(value[0], str)):
        return value[0], value[1]
    return None


def _model_moved(value, changed, new=()) -> bool:
    """The mirror's kept main model (meta _MODEL's `value`) may no longer be the main one once
    `changed` are written over some of its rows and `new` rows added: one of them carries
    another model's vector, or one of `changed` none. (Rows retired keep their vectors.)"""
    kept = _kept(value)
    if kept is None:
        return False  # not kept: counted at the next reopen in step
    want = None if kept[0] is None else kept
    return any(_model_of(r) != want for r in changed) or any(_model_of(r) not in (want, None) for r in new)


def _token_text(token) -> str:
    return json.dumps(token, sort_keys=True, default=str)


def open_mirrored(source: Source, task: Task | None = None, *, later: bool = False,
                  read_only: bool = False) -> MirroredStore:
    """The source's mirror, synced (built the first time, with progress on `task`). `later`
    (the window): a large first build leaves its indexes to `index_later()`, called once the
    window has read the store. `read_only`: memviz writes no edit to it (the mirror is still
    brought in step)."""
    path = mirror_path(source)
    native = None
    if os.path.exists(path):
        try:
            native = open_native(path)
            ok = (native.meta("mirror.version") == MIRROR_VERSION and native.meta("mirror.of") == source.label
                  and not native.read_only and native.meta(_PENDING) is None)  # pending: its indexes never built
        except StoreError:
            ok = False
        if not ok:  # memviz's own cache, stale or damaged: rebuilt from the source
            if native is not None:
                native.close()
            native = None
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(path + suffix)
                except FileNotFoundError:
                    pass
    first = native is None
    if first:
        native = create_store(path)
        with native.transaction() as c:
            c.execute(f"CREATE TABLE {_FP_TABLE} (id TEXT PRIMARY KEY, fp BLOB NOT NULL)")
        native.set_meta("mirror.version", MIRROR_VERSION)
        native.set_meta("mirror.of", source.label)
        native.set_meta("mirror.system", source.system)
    store = MirroredStore(source, native, read_only=read_only)
    try:
        store.sync(task, first=first, later=later)
    except BaseException:
        store.close()
        if first:
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(path + suffix)
                except FileNotFoundError:
                    pass
        raise
    return store


__all__ = ["MirroredStore", "open_mirrored", "mirror_path", "records_path", "fingerprint", "fingerprints", "MIRROR_VERSION",
           "INDEXING", "INDEX_LATER_ROWS", "ValidationError"]
