"""Filling a brand-new, empty store with many memories at once (a mirror's first build, an import).

`Store.insert_memories` keeps the full-text and vector indexes through per-row triggers, which
cost most of a 100k load (FTS5 and vec0 take one row at a time). Here the insert triggers are
dropped inside the one transaction, the rows written in large batches, each batch's vectors
copied into vec0 by one INSERT ... SELECT with the trigger's own condition, and the full-text
index built at the end in one statement (FTS5's 'rebuild' from the memories table). The triggers are recreated with the same SQL
before COMMIT, so the store is the one the per-row path makes (schema.inspect accepts it,
`memviz check` is clean); a failure or a cancel rolls everything back, triggers included.
Nothing is audited: these are the store's first contents, as with insert_memories(audit=False).
The change log needs nothing (its triggers are on UPDATE and DELETE).
`indexes=False` (a framework mirror's first build for the window) leaves both indexes empty, to
be filled by `fill_indexes` in a later transaction: the store must not be written in between
(an FTS5 'delete' of a row its index lacks would damage the index), which the caller ensures.
"""
from __future__ import annotations

from contextlib import contextmanager
from itertools import chain
from math import isfinite
from operator import itemgetter

import apsw
import orjson

from .arrays import WrittenColumns
from .errors import StoreError, ValidationError
from .records import normalize_many
from .schema import MEMORY_COLUMNS, READ_INDEX
from .vectors import VEC_PREFIX, vec_ddl, vec_table

_INSERT = (f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})")
#: a batch in one statement: the rows as one JSON array of objects (?1), each embedding a
#: [start, length] into the batch's vectors joined (?2). See _insert_batch.
_INSERT_JSON = (f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) SELECT "
                + ", ".join("substr(?2, value ->> '$.embedding[0]', value ->> '$.embedding[1]')" if col == "embedding"
                            else f"value ->> '{col}'" for col in MEMORY_COLUMNS)
                + " FROM jsonb_each(?1)")
_FLOATS = itemgetter("importance", "confidence", "decay_rate")
_FTS_INSERT = "memories_fts_ai"
_ROW = itemgetter(*MEMORY_COLUMNS)
_CACHE_KIB = 512 * 1024


class BulkLoad:
    """What `bulk_load` yields: `add(records)` validates and writes a batch (a bad record raises
    ValidationError and nothing of its batch is written); or `prepare` (validation, pure Python:
    it may run in another thread, one batch after another) and then `write` here, so that the
    next batch is validated while SQLite writes this one. `conn` is the open transaction, for the
    caller's own tables (a mirror's fingerprints)."""

    def __init__(self, conn: apsw.Connection, written: WrittenColumns | None = None, indexes: bool = True):
        self.conn = conn
        self.indexes = indexes  # False: vec0 and FTS5 are filled later (fill_indexes)
        self.written = written  # the columns written, kept for the store's first read (arrays.WrittenColumns)
        self.model_dims: dict[str, int] = {}  # a model's first vectors set its dimension for the rest
        self.dims: set[int] = set()           # vec0 tables written to
        self.new_tables: set[int] = set()     # made here: their triggers come at the end
        self.count = 0

    def add(self, records) -> list[str]:
        return self.write(self.prepare(records))

    def prepare(self, records) -> list[dict]:
        dims = dict(self.model_dims)
        rows = normalize_many(records, model_dims=dims)
        self.model_dims = dims  # only once the whole batch is valid
        return rows

    def write(self, rows: list[dict]) -> list[str]:
        """Rows of `prepare` into memories and their vectors into vec0 (one INSERT ... SELECT per
        dimension over the batch, with the insert trigger's condition); the full-text index is
        built once at the end."""
        if not rows:
            return []
        dims = {len(r["embedding"]) // 4 for r in rows if r["embedding"] is not None}
        last = self.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
        self.conn.execute("SAVEPOINT memviz_bulk_batch")
        try:
            for dim in dims - self.dims:
                if not _has_table(self.conn, vec_table(dim)):
                    self.conn.execute(vec_ddl(dim)[0])
                    self.new_tables.add(dim)
                self.dims.add(dim)
            _insert_batch(self.conn, rows)
            for dim in sorted(dims) if self.indexes else ():
                _vectors_into_vec0(self.conn, dim, "rowid > ?", last)
        except BaseException as e:
            self.conn.execute("ROLLBACK TO memviz_bulk_batch")
            self.conn.execute("RELEASE memviz_bulk_batch")
            if isinstance(e, apsw.ConstraintError):
                raise ValidationError(f"cannot insert: {e} (is an id already in the store?)") from None
            raise
        self.conn.execute("RELEASE memviz_bulk_batch")
        if self.written is not None:
            self.written.add(rows, last + 1)  # an empty table's rowids follow on: last + 1, last + 2, ...
        self.count += len(rows)
        return [r["id"] for r in rows]


@contextmanager
def bulk_load(store, *, durable: bool = True, keep: bool = False, indexes: bool = True):
    """`with bulk_load(store) as load: load.add(batch) ...` into `store`, which must hold no
    memories yet; everything is one transaction, committed with the indexes built at the end.
    `durable` False (a cache memviz rebuilds when damaged: a framework's mirror) commits without
    waiting for the disk (synchronous = OFF): a large mirror's fsync can take longer than the rest
    of its commit. An application crash still leaves the store whole (SQLite has
    written every page when COMMIT returns); only a crash of the system within the next seconds
    can damage it, and a damaged mirror fails its quick_check at the next open and is rebuilt.
    `keep`: `load.written` keeps the columns written (arrays.WrittenColumns), so that the store's
    first read is made from them rather than a scan of what was just written.
    `indexes` False: the full-text and vector indexes are left for `fill_indexes` (see above)."""
    cache = store.conn.execute("PRAGMA cache_size").fetchone()[0]
    sync = store.conn.execute("PRAGMA synchronous").fetchone()[0]
    # one large transaction: with SQLite's default 2 MB page cache its pages spill to the WAL and
    # are read back, slowing a large load; the cache is a bound, used as needed
    store.conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
    # a new store's pages are written straight into the file under a rollback journal (which
    # holds only the few pages that existed), not twice through the WAL.
    # SQLite keeps WAL when another connection is open; WAL comes back after the load either way
    wal = store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    if wal:
        store.conn.execute("PRAGMA journal_mode = DELETE")
    if not durable:
        store.conn.execute("PRAGMA synchronous = OFF")
    try:
        with _loaded(store, WrittenColumns() if keep else None, indexes) as load:
            yield load
    finally:
        store.conn.execute(f"PRAGMA cache_size = {int(cache)}")
        store.conn.execute(f"PRAGMA synchronous = {int(sync)}")
        if wal:
            store.conn.execute("PRAGMA journal_mode = WAL")


@contextmanager
def _loaded(store, written, indexes):
    with store.transaction() as c:
        if c.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None:
            raise StoreError(f"{store.path} already holds memories; a bulk load fills only a new, empty store.")
        dropped = _insert_triggers(c)
        for name in dropped:
            c.execute(f'DROP TRIGGER "{name}"')
        # the read index made again at the end: one sort of the loaded rows, not an insert per row
        read_index = c.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (READ_INDEX,)).fetchone()
        if read_index:
            c.execute(f"DROP INDEX {READ_INDEX}")
        load = BulkLoad(c, written, indexes)
        yield load
        if read_index:
            c.execute(read_index[0])
        if indexes:
            c.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        for sql in dropped.values():
            c.execute(sql)  # FTS5's and the existing vec0 tables' insert triggers, as they were
        for dim in load.new_tables:
            for sql in vec_ddl(dim)[1:]:
                c.execute(sql)


def fill_indexes(conn: apsw.Connection, upto: int, dims) -> None:
    """The full-text and vector indexes of the rows up to rowid `upto` that a bulk load with
    indexes=False wrote (nothing written since; `dims`: the vec0 tables it wrote to, its
    `load.dims`): FTS5's 'rebuild' from the memories table, and each vec0 table's vectors.
    Inside the caller's transaction."""
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    for dim in sorted(dims):
        _vectors_into_vec0(conn, dim, "rowid <= ?", upto)


def _insert_batch(conn: apsw.Connection, rows: list[dict]) -> None:
    """`rows` into memories by one statement: SQLite reads them from JSON without the GIL. An
    executemany releases and takes the GIL back at each row, and while another thread runs Python
    (a mirror's source mapped beside its writes) each take waits for that thread's switch
    interval, which makes a load beside its reader several times slower. Values come back as
    bound: JSON text, integers and finite floats exactly (SQLite 3.54 parses floats correctly
    rounded; the tests compare every column). What JSON cannot carry
    as it is goes by executemany: a non-finite float (orjson writes null), text orjson refuses
    (a lone surrogate), an integer over 64 bits, a value of another type."""
    if all(map(isfinite, chain.from_iterable(map(_FLOATS, rows)))):
        blobs: list[bytes] = []
        at = 1  # substr counts from 1

        def blob(value):
            nonlocal at
            if type(value) is not bytes:
                raise TypeError(type(value).__name__)
            blobs.append(value)
            at += len(value)
            return (at - len(value), len(value))
        try:
            batch = orjson.dumps(rows, default=blob)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            conn.execute(_INSERT_JSON, (batch, b"".join(blobs)))
            return
    conn.executemany(_INSERT, map(_ROW, rows))


def _vectors_into_vec0(conn: apsw.Connection, dim: int, rows: str, bound: int) -> None:
    """The vectors of `dim` of the memories whose rowid passes `rows` ("rowid > ?" …, with
    `bound`) into its vec0 table, by one INSERT ... SELECT with its insert trigger's condition."""
    conn.execute(f"INSERT INTO {vec_table(dim)}(memory_id, embedding) SELECT id, embedding FROM memories "
                 f"WHERE {rows} AND embedding IS NOT NULL AND length(embedding) = {4 * int(dim)} ORDER BY rowid",
                 (bound,))


def _insert_triggers(c) -> dict[str, str]:
    """The AFTER INSERT triggers on memories (FTS5, each vec0 table): name -> SQL."""
    return {name: sql for name, sql in c.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories' "
        "AND (name = ? OR (name LIKE ? AND name LIKE '%\\_ai' ESCAPE '\\'))", (_FTS_INSERT, VEC_PREFIX + "%"))}


def _has_table(c, name: str) -> bool:
    return c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None
