"""Filling a brand-new, empty store with many memories at once (a mirror's first build, an import).

`Store.insert_memories` keeps the full-text and vector indexes through per-row triggers, which
cost most of a 100k load (FTS5 and vec0 take one row at a time). Here the insert triggers are
dropped inside the one transaction, the rows written in large batches, and then each index is
built in one statement: FTS5's 'rebuild' from the memories table, and one INSERT ... SELECT per
vec0 table with the trigger's own condition. The triggers are recreated with the same SQL
before COMMIT, so the store is the one the per-row path makes (schema.inspect accepts it,
`memviz check` is clean); a failure or a cancel rolls everything back, triggers included.
Nothing is audited: these are the store's first contents, as with insert_memories(audit=False).
The change log needs nothing (its triggers are on UPDATE and DELETE).
"""
from __future__ import annotations

from contextlib import contextmanager
from operator import itemgetter

import apsw

from .errors import StoreError, ValidationError
from .records import normalize_many
from .schema import MEMORY_COLUMNS
from .vectors import VEC_PREFIX, vec_ddl, vec_table

_INSERT = (f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})")
_FTS_INSERT = "memories_fts_ai"
_ROW = itemgetter(*MEMORY_COLUMNS)


class BulkLoad:
    """What `bulk_load` yields: `add(records)` validates and writes a batch (a bad record raises
    ValidationError and nothing of its batch is written); `conn` is the open transaction, for
    the caller's own tables (a mirror's fingerprints)."""

    def __init__(self, conn: apsw.Connection, model_dims: dict[str, int]):
        self.conn = conn
        self.model_dims = model_dims
        self.dims: set[int] = set()        # vec0 tables to fill at the end
        self.new_tables: set[int] = set()  # made here: their triggers come at the end
        self.count = 0

    def add(self, records) -> list[str]:
        rows = normalize_many(records, model_dims=dict(self.model_dims))
        if not rows:
            return []
        dims = {len(r["embedding"]) // 4 for r in rows if r["embedding"] is not None}
        self.conn.execute("SAVEPOINT memviz_bulk_batch")
        try:
            for dim in dims - self.dims:
                if not _has_table(self.conn, vec_table(dim)):
                    self.conn.execute(vec_ddl(dim)[0])
                    self.new_tables.add(dim)
                self.dims.add(dim)
            self.conn.executemany(_INSERT, map(_ROW, rows))
        except BaseException as e:
            self.conn.execute("ROLLBACK TO memviz_bulk_batch")
            self.conn.execute("RELEASE memviz_bulk_batch")
            if isinstance(e, apsw.ConstraintError):
                raise ValidationError(f"cannot insert: {e} (is an id already in the store?)") from None
            raise
        self.conn.execute("RELEASE memviz_bulk_batch")
        for r in rows:  # the first vectors of a model set its dimension for the later batches
            if r["embedding"] is not None:
                self.model_dims.setdefault(r["embedding_model"], len(r["embedding"]) // 4)
        self.count += len(rows)
        return [r["id"] for r in rows]


@contextmanager
def bulk_load(store):
    """`with bulk_load(store) as load: load.add(batch) ...` into `store`, which must hold no
    memories yet; everything is one transaction, committed with the indexes built at the end."""
    with store.transaction() as c:
        if c.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is not None:
            raise StoreError(f"{store.path} already holds memories; a bulk load fills only a new, empty store.")
        dropped = _insert_triggers(c)
        for name in dropped:
            c.execute(f'DROP TRIGGER "{name}"')
        load = BulkLoad(c, {})
        yield load
        _build_indexes(c, load.dims)
        for sql in dropped.values():
            c.execute(sql)  # FTS5's and the existing vec0 tables' insert triggers, as they were
        for dim in load.new_tables:
            for sql in vec_ddl(dim)[1:]:
                c.execute(sql)


def _insert_triggers(c) -> dict[str, str]:
    """The AFTER INSERT triggers on memories (FTS5, each vec0 table): name -> SQL."""
    return {name: sql for name, sql in c.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories' "
        "AND (name = ? OR (name LIKE ? AND name LIKE '%\\_ai' ESCAPE '\\'))", (_FTS_INSERT, VEC_PREFIX + "%"))}


def _build_indexes(c, dims) -> None:
    c.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    for dim in sorted(dims):
        # the condition of the vec0 insert trigger (vectors.vec_ddl), over every row at once
        c.execute(f"INSERT INTO {vec_table(dim)}(memory_id, embedding) SELECT id, embedding FROM memories "
                  f"WHERE embedding IS NOT NULL AND length(embedding) = {4 * int(dim)} ORDER BY rowid")


def _has_table(c, name: str) -> bool:
    return c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None
