"""Copy a whole store between backends (SQLite file <-> PostgreSQL database). No Qt here.

Everything is copied as stored, not re-validated: rowids (store order), ids, texts, JSON text
byte for byte, vectors bit for bit, provenance (it lives in those columns), the audit log
with its ids, layouts, entities and meta, and memviz's own records about the store (judged
queries, parameter sets: read through the store, as a framework store keeps them beside its
mirror). The target is written in ONE transaction: a
failed or cancelled copy leaves it as it was (an SQLite target is built in a temp file
beside it and renamed into place at the end; a PostgreSQL target's schema is made inside
the same transaction as the rows, so an empty database stays empty).

A PostgreSQL target's HNSW indexes are built after that commit, with the server's progress
reported (`postgres.index`): building them takes most of a copy (bench/pg_index.py;
schema.HNSW_OPTIONS), and inside the copy's transaction nothing could be used until the graph
was done. The store is complete and
answers exactly without them (memviz ranks in memory; pgvector's own search is then exact).
The build is a plain CREATE INDEX, not CONCURRENTLY: the target is new, no agent writes to it
yet (reads go on; a write waits for the build), and CONCURRENTLY's validation scan and its
wait for every older transaction on the server buy nothing here (bench/pg_index.py). Nor is
the index made before the rows: then each row is put into the graph as it is inserted, by this
one process without parallel workers, several times the CPU of a build (bench/pg_index.py's
before-0). A build that is cancelled or cut off leaves the index absent,
and `memviz index DST` (or the window, CONCURRENTLY, on a writable open) builds it.
"""
from __future__ import annotations

import itertools
import json
import os
import tempfile
import time
from contextlib import ExitStack

from ..tasks import Cancelled, Task
from .errors import StoreError
from .postgres.dsn import is_dsn, redact
from .schema import MEMORY_COLUMNS

BATCH = 2000
_TABLES = {  # table -> columns copied, besides memories
    "entities": ("id", "canonical_name", "type", "aliases", "summary", "embedding", "mention_count", "protected"),
    "memviz_audit": ("id", "at", "action", "memory_id", "before", "after", "actor", "note"),
    "memviz_layouts": ("key", "method", "model", "params", "created_at", "ids", "coords"),
    "memviz_meta": ("key", "value"),
}
MEMORY_ROW = ("rowid",) + MEMORY_COLUMNS  # embedding: float32 little-endian bytes on both sides
#: memviz's own records (judged.py), read through the store (a framework store keeps them beside its mirror)
JUDGED_ROW = ("set_name", "query_id", "position", "query", "judged_by", "judged_at")
PARAMETERS_ROW = ("name", "preset", "values_json", "description", "created_at")


def _records(store) -> tuple[list[tuple], list[tuple]]:
    """The judged queries and parameter sets of `store`, as rows of JUDGED_ROW and PARAMETERS_ROW."""
    judged = [(name, r.query_id, r.position, r.query, r.judged_by, r.judged_at)
              for name, _n in store.judged_sets() for r in store.judged_queries(name)]
    params = [(p.name, p.preset, p.values, p.description, p.created_at) for p in store.parameter_sets()]
    return judged, params


def copy_store(src: str, dst: str, task: Task | None = None, opener=None) -> int:
    """Copy the store at `src` (path or DSN) to `dst` (a path that does not exist, or an empty
    PostgreSQL database). Returns the number of memories copied. `opener(src, read_only=True)`
    opens the source (default: memviz.store.open_store; the commands pass the one that also
    opens other frameworks' stores, whose mirrors are SQLite stores)."""
    from . import open_store  # the dispatching open of memviz.store
    task = task or Task("copy")
    with (opener or open_store)(src, read_only=True) as source:
        reader = _SqliteReader(source) if source.backend == "sqlite" else _PgReader(source)
        with reader:
            total = reader.count()
            task.progress(0.0, f"copying {total} memories from {redact(src)} to {redact(dst)}")
            if is_dsn(dst):
                _write_pg(dst, reader, total, task.part(0.0, 0.4))
            else:
                _write_sqlite(dst, reader, total, task)
    if is_dsn(dst):
        from .postgres.index import build_missing_indexes  # noqa: PLC0415
        try:
            build_missing_indexes(dst, task.part(0.4, 1.0))
        except Cancelled:
            raise Cancelled(f"Cancelled while building the vector index: the {total} memories are copied to "
                            f"{redact(dst)} and usable (pgvector's own search is exact until the index is there); "
                            f"`memviz index {redact(dst)}` builds it.") from None
    task.progress(1.0, f"copied {total} memories")
    return total


def database_refusal(dst: str) -> str | None:
    """Why the database of `dst` cannot receive a copy (it holds a store already), asked before
    a long job that ends in one (an import); None: it can. Unreachable: StoreError."""
    import psycopg

    from .postgres.connect import connect, translate
    conn = connect(dst, need_vector=False)
    try:
        taken = conn.execute("SELECT to_regclass('memories')").fetchone()[0] is not None
    except psycopg.Error as e:
        raise translate(e, dst) from None
    finally:
        conn.close()
    return f"{redact(dst)} already has a `memories` table; write into an empty database." if taken else None


def _progress(task: Task, done: int, total: int) -> None:
    task.check()
    task.progress(0.95 * done / max(total, 1), f"{done}/{total} memories")


# ------------------------------------------------------------------ readers
class _SqliteReader:
    def __init__(self, store):
        self.store = store
        self.conn = store.conn

    def __enter__(self):
        self.conn.execute("BEGIN")  # one read snapshot for the whole copy
        return self

    def __exit__(self, *exc):
        self.conn.execute("COMMIT")

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def memories(self):
        cur = self.conn.execute(f"SELECT {', '.join(MEMORY_ROW)} FROM memories ORDER BY rowid")
        while batch := list(itertools.islice(cur, BATCH)):
            yield batch

    def table(self, name: str):
        return self.conn.execute(f"SELECT {', '.join(_TABLES[name])} FROM {name}").fetchall()


class _PgReader:
    def __init__(self, store):
        self.store = store
        self.conn = store.conn
        self._tx = None

    def __enter__(self):
        self._tx = self.conn.transaction()
        self._tx.__enter__()
        self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return self

    def __exit__(self, *exc):
        self._tx.__exit__(*exc)

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def memories(self):
        from .postgres.store import vector_bytes
        cols = ", ".join(c if c != "embedding" else self.store._vec_select() for c in MEMORY_ROW)
        emb = MEMORY_ROW.index("embedding")
        with self.conn.cursor(name="memviz_copy") as cur:
            cur.itersize = BATCH
            cur.execute(f"SELECT {cols} FROM memories ORDER BY rowid")
            while batch := cur.fetchmany(BATCH):
                yield [r[:emb] + (vector_bytes(r[emb]),) + r[emb + 1:] for r in batch]

    def table(self, name: str):
        return self.conn.execute(f"SELECT {', '.join(_TABLES[name])} FROM {name}").fetchall()


# ------------------------------------------------------------------ writers
def _write_sqlite(dst: str, reader, total: int, task: Task) -> None:
    from .store import create as create_sqlite
    from .store import new_file
    from .vectors import vec_ddl, vec_table
    dst, folder = new_file(dst)
    fd, tmp = tempfile.mkstemp(prefix=".memviz-copy-", suffix=".db", dir=folder)
    os.close(fd)
    os.unlink(tmp)
    try:
        with create_sqlite(tmp) as target:
            with target.transaction() as c:
                done, dims = 0, set()
                insert = f"INSERT INTO memories ({', '.join(MEMORY_ROW)}) VALUES ({', '.join('?' * len(MEMORY_ROW))})"
                emb = MEMORY_ROW.index("embedding")
                for batch in reader.memories():
                    for d in {len(r[emb]) // 4 for r in batch if r[emb] is not None} - dims:
                        if not c.execute("SELECT 1 FROM sqlite_master WHERE name=?", (vec_table(d),)).fetchone():
                            for sql in vec_ddl(d):
                                c.execute(sql)
                        dims.add(d)
                    c.executemany(insert, batch)
                    done += len(batch)
                    _progress(task, done, total)
                for name, cols in _TABLES.items():
                    rows = reader.table(name)
                    verb = "INSERT OR REPLACE" if name == "memviz_meta" else "INSERT"
                    if rows:
                        c.executemany(f"{verb} INTO {name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                      rows)
                    task.check()
                for name, cols, rows in zip(("memviz_judged", "memviz_parameter_sets"), (JUDGED_ROW, PARAMETERS_ROW),
                                            _records(reader.store)):
                    c.executemany(f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
            target.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if os.path.exists(dst):
            raise StoreError(f"{dst} appeared while copying; memviz will not overwrite it.")
        os.replace(tmp, dst)
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)


def _write_pg(dst: str, reader, total: int, task: Task) -> None:
    import psycopg

    from .postgres import schema as pg_schema
    from .postgres.connect import PgVector, connect, no_vector_message, register_vector, translate, vector_oid
    where = redact(dst)
    with ExitStack() as stack:
        conn = connect(dst, need_vector=False)
        stack.callback(conn.close)
        try:
            with conn.transaction():
                if conn.execute("SELECT to_regclass('memories')").fetchone()[0] is not None:
                    raise StoreError(f"{where} already has a `memories` table; copy into an empty database.")
                if vector_oid(conn) is None:
                    try:
                        conn.execute("CREATE EXTENSION vector")
                    except psycopg.errors.InsufficientPrivilege:
                        raise StoreError(no_vector_message(where) + " This role may not add it.") from None
                register_vector(conn)
                conn.execute("CREATE TABLE memviz_migrations "
                             "(version integer PRIMARY KEY, name text NOT NULL, applied_at double precision NOT NULL)")
                triggers = []  # the change log's: created after the rows (a copy is no change to log)
                for version, name, statements in pg_schema.MIGRATIONS:
                    for sql in statements:
                        (triggers.append if sql.startswith("CREATE TRIGGER") else conn.execute)(sql)
                    conn.execute("INSERT INTO memviz_migrations VALUES (%s, %s, %s)", (version, name, time.time()))
                _copy_memories_pg(conn, reader, total, task, pg_schema, PgVector, vector_oid(conn))
                for sql in triggers:
                    conn.execute(sql)
                for name, cols in _TABLES.items():
                    rows = reader.table(name)
                    if rows:
                        with conn.cursor().copy(f"COPY {name} ({', '.join(cols)}) FROM STDIN") as cp:
                            for r in rows:
                                cp.write_row(r)
                    task.check()
                for name, cols, rows in zip(("memviz_judged", "memviz_parameter_sets"), (JUDGED_ROW, PARAMETERS_ROW),
                                            _records(reader.store)):
                    with conn.cursor().copy(f"COPY {name} ({', '.join(cols)}) FROM STDIN") as cp:
                        for r in rows:
                            cp.write_row(r)
                # the planner's statistics with the rows: the open sizes its reads by them (an
                # unanalyzed table counts as small and is read on one connection)
                conn.execute("ANALYZE memories")
                if not any(k == "created_by" for k, _ in reader.table("memviz_meta")):
                    conn.execute("INSERT INTO memviz_meta VALUES ('created_by', %s)", (json.dumps("memviz"),))
                # identities continue after the copied ids
                conn.execute("SELECT setval(pg_get_serial_sequence('memories', 'rowid'), "
                             "coalesce((SELECT max(rowid) FROM memories), 0) + 1, false)")
                conn.execute("SELECT setval(pg_get_serial_sequence('memviz_audit', 'id'), "
                             "coalesce((SELECT max(id) FROM memviz_audit), 0) + 1, false)")
        except psycopg.Error as e:
            raise translate(e, dst) from None


def _copy_memories_pg(conn, reader, total, task, pg_schema, PgVector, vec_oid) -> None:
    """Binary COPY of the memories; a vector column is added for each dimension met (the
    schema change is part of the same transaction). Rows are buffered per batch so that a new
    dimension can be added before its rows are sent."""
    emb = MEMORY_ROW.index("embedding")
    scalars = [c for c in MEMORY_ROW if c != "embedding"]
    types = {"rowid": "int8", "event_time": "int8", "created_at": "int8", "valid_until": "int8",
             "access_count": "int8", "last_accessed": "int8", "protected": "int4", "importance": "float8",
             "confidence": "float8", "decay_rate": "float8"}
    dims: list[int] = []
    done = 0
    for batch in reader.memories():
        for d in sorted({len(r[emb]) // 4 for r in batch if r[emb] is not None} - set(dims)):
            for sql in pg_schema.vec_ddl(d):
                if "CREATE INDEX" not in sql:  # indexes after the commit: see the module's docstring
                    conn.execute(sql)
            dims.append(d)
        cols = scalars + [pg_schema.vec_column(d) for d in dims]
        with conn.cursor().copy(f"COPY memories ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types([types.get(c, "text") for c in scalars] + [vec_oid] * len(dims))
            for r in batch:
                v = r[emb]
                vec = [None] * len(dims)
                if v is not None:
                    vec[dims.index(len(v) // 4)] = PgVector(v)
                cp.write_row(r[:emb] + r[emb + 1:] + tuple(vec))
        done += len(batch)
        _progress(task, done, total)
    # the HNSW indexes are built after the commit (build_missing_indexes)
