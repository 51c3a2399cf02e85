"""MemoryArrays from PostgreSQL in bulk: not a Python object per cell.

One statement returns every column as an array in one row (numbers sent in binary and read
by numpy from the wire format, texts as text[] read by psycopg in C). The vectors of the
chosen (model, dim) come by binary COPY: every row has the same width (rowid, then the vector
in pgvector's binary form), so numpy reads the stream a batch of rows at a time, straight
into the matrix (vector_copy.py). Nothing is sorted on the server (a sort of every row spills
to disk beyond work_mem): each statement also sends the rowids, and numpy puts everything in
rowid order; the vectors come in that order already where the rowid index gives it.

With `sides` (more connections in the same snapshot, PgStore._sides_in) the vectors are read on
one while the columns are read on the first: server processes and the client's decoding at
once (psycopg waits without the GIL). A large table's columns, or its TOASTed vectors, are
further cut in two ranges, one per connection (load_arrays). bench/postgres.py measures the
read, with the CPU of the server processes and of the client.
"""
from __future__ import annotations

import json
from itertools import chain

import numpy as np

from ...background import in_thread
from ..arrays import NUMERIC_COLUMNS, MemoryArrays, normalize_rows, one_line, pick_model, rows_with_room, small_pages, spare_rows
from ..errors import StoreError
from ..records import read_typed_columns
from .schema import vec_column
from .vector_copy import VectorCopy

_JSON_OK = ("(source_ids = '[]' OR pg_input_is_valid(source_ids, 'json')) "
            "AND (entity_ids = '[]' OR pg_input_is_valid(entity_ids, 'json')) "
            "AND (tags = '[]' OR pg_input_is_valid(tags, 'json')) "
            "AND (attributes = '{}' OR pg_input_is_valid(attributes, 'json'))")


def dim_expr(dims: list[int]) -> str:
    """SQL: the dimension of the row's vector (NULL when it has none)."""
    if not dims:
        return "NULL::integer"
    return "CASE " + " ".join(f"WHEN {vec_column(d)} IS NOT NULL THEN {d}" for d in dims) + " END"


def _float8s(raw) -> np.ndarray:
    """A one-dimensional float8[] without NULLs, from PostgreSQL's binary array format."""
    if raw is None or int.from_bytes(raw[0:4], "big") == 0:  # NULL (no rows) or an empty array
        return np.zeros(0)
    # header: ndim, has-null flag, element type, then (size, lower bound); each element: length, value
    body = np.frombuffer(raw, dtype=np.dtype([("len", ">i4"), ("v", ">f8")]), offset=20)
    return body["v"].astype(np.float64)


def _raw_cursor(conn):
    """A binary cursor that hands float8[] over as bytes, for _float8s."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY

        def load(self, data):
            return bytes(data)

    cur = conn.cursor(binary=True)
    cur.adapters.register_loader(1022, Raw)  # 1022 = float8[]
    return cur


SPLIT_ROWS = 250_000  # a table about this large has its columns read in two halves, on two connections
WIDE_SPLIT_ROWS = 20_000  # one this large with only TOASTed vectors has them read in two halves


def table_size(conn) -> tuple[int, int]:
    """(rows, pages) of `memories` when it is a table (not a stand-in view), else (0, 0); the rows
    are the planner's estimate now (its rows per page then, times the pages now)."""
    row = conn.execute(
        "SELECT c.reltuples / greatest(c.relpages, 1), pg_relation_size(c.oid) / current_setting('block_size')::int8 "
        "FROM pg_class c WHERE c.oid = to_regclass('memories') AND c.relkind = 'r'").fetchone()
    if row is None or row[0] <= 0:  # (never analyzed: as small)
        return 0, 0
    return int(row[0] * row[1]), int(row[1])


def sides_for(size: tuple[int, int], dims: list[int]) -> int:
    """Connections wanted beside the first (load_arrays' `sides`) for a table of `size`."""
    return 2 if size[0] >= SPLIT_ROWS or (size[0] >= WIDE_SPLIT_ROWS and _wide(dims)) else 1


def _wide(dims: list[int]) -> bool:
    return len(dims) == 1 and dims[0] >= _INDEX_ORDER_DIM


def load_arrays(conn, dims: list[int], model: str | None = None, preview: int = 0, rowids: list[int] | None = None,
                dim: int | None = None, sides=(), size: tuple[int, int] = (0, 0)) -> MemoryArrays:
    """Every memory (or those of `rowids`: a live refresh; pass `model` and `dim` too). `sides`:
    connections in the same snapshot as `conn`, to read on meanwhile (`size`: table_size). The
    vectors, when their column is known beforehand (a single vector column, or `dim`), on the
    first. A table of SPLIT_ROWS has its columns read in two page ranges (TID range scans, no
    index needed), the second on the second side: the columns' statement is one server
    process's work, its binary output made element by element. Else a table
    of WIDE_SPLIT_ROWS with TOASTed vectors has them read in two rowid ranges, one per side."""
    early = second = None
    guess = dim if dim is not None else dims[0] if len(dims) == 1 else None
    whole = rowids is None
    split = size[1] // 2 if whole and size[0] >= SPLIT_ROWS and size[1] >= 2 else None
    if sides and guess:
        if len(sides) > 1 and not split and whole and size[0] >= WIDE_SPLIT_ROWS and _wide([guess]):
            early = in_thread(lambda: _vector_halves(sides[0], sides[1], guess), "memviz-pg-vectors")
        else:
            early = in_thread(lambda: _read_vectors(sides[0], guess, None, rowids), "memviz-pg-vectors")
    # numbers: NULL is sent as NaN so every element has the same width on the wire
    nums = ["rowid::float8"] + [f"coalesce({c}::float8, 'NaN')" for c in NUMERIC_COLUMNS] + [
        f"CASE WHEN {_JSON_OK} THEN 1 ELSE 0 END::float8", f"coalesce({dim_expr(dims)}, -1)::float8"]
    texts_sql = ["id", "kind", "agent", "coalesce(embedding_model, '')",
                 f"left(content, {int(preview)})" if preview > 0 else "NULL::text"]
    select = "SELECT " + ", ".join(f"array_agg({c})" for c in nums + texts_sql) + " FROM memories"
    halves = [""]
    if split:
        halves = [f" WHERE ctid < '({int(split)},0)'", f" WHERE ctid >= '({int(split)},0)'"]
        if len(sides) > 1:
            second = in_thread(lambda: _columns(sides[1], select + halves[1]), "memviz-pg-columns")
    try:
        if rowids is None:
            parts = [_columns(conn, select + halves[0])]
        else:
            parts = [_columns(conn, select + " WHERE rowid = ANY(%s)", (rowids,))]
        if len(halves) > 1:
            got = _result(second)
            parts.append(got if got is not None else _columns(conn, select + halves[1]))  # the side was lost
    finally:
        vectors = _result(early)  # waited for whatever happened: the side connections are free again
        _result(second)
    row = [_joined([p[i] for p in parts], i < len(nums)) for i in range(len(nums) + len(texts_sql))]
    rowid = row[0].astype(np.int64)
    order = np.argsort(rowid, kind="stable")
    rowid = rowid[order]
    n = len(rowid)
    col = [row[i][order] for i in range(1, len(nums))]
    num = dict(zip(NUMERIC_COLUMNS, col))
    json_ok, dim_of = col[len(NUMERIC_COLUMNS)], col[len(NUMERIC_COLUMNS) + 1].astype(np.int64)

    def texts(values):
        out = np.empty(n, dtype=object)
        if n:
            out[:] = values
        return out[order]
    first = len(nums)
    ids, kind, agent, models = (texts(row[first + i]) for i in range(4))
    listed = models.tolist()
    seen = {m: i for i, m in enumerate(dict.fromkeys(listed))}  # C passes, as session.state.factorize
    names = {m.encode("utf-8"): i for m, i in seen.items()}
    model_code = np.fromiter(map(seen.__getitem__, listed), np.int64, count=n)
    size = np.where(dim_of >= 0, dim_of * 4, -1)
    key, dim = pick_model(list(names), model_code, size, None if model is None else model.encode("utf-8"), dim)
    has = (model_code == names.get(key, -1)) & (size == 4 * dim) & (size > 0)
    # the matrix of a whole read (`whole`) gets spare rows: a live refresh appends below it
    emb = np.zeros((0, dim), np.float32) if has.all() else rows_with_room(n, (dim,)) if whole \
        else np.zeros((n, dim), np.float32)
    if dim and has.any():
        if vectors is None or guess != dim:  # the column was not known beforehand: read it now
            vectors = _read_vectors(conn, dim, None if key is None else key.decode("utf-8"), rowids)
        emb = _place(vectors, rowid, has, emb, room=whole)
        emb = normalize_rows(emb, has)
    elif not len(emb):
        emb = np.zeros((n, dim), dtype=np.float32)
    bad_value = read_typed_columns(num)  # a double may hold inf or NaN, a bigint time milliseconds
    return MemoryArrays(
        ids=ids, rowid=rowid, kind=kind, agent=agent,
        importance=num["importance"], event_time=num["event_time"], created_at=num["created_at"],
        last_accessed=num["last_accessed"], valid_until=num["valid_until"], confidence=num["confidence"],
        decay_rate=num["decay_rate"], access_count=np.nan_to_num(num["access_count"]).astype(np.int64),
        protected=np.nan_to_num(num["protected"]).astype(bool), embedding=emb, has_embedding=has,
        embedding_model=None if key is None else key.decode("utf-8"),
        bad_json=~json_ok.astype(bool), bad_text=np.zeros(n, bool),
        bad_value=bad_value,
        preview=texts(one_line(row[first + 4] or [])) if preview > 0 else None,
    )


def _columns(conn, query: str, params=()) -> tuple:
    """The columns' one row of arrays: float8[] as bytes (_float8s), text[] as lists."""
    cur = _raw_cursor(conn)
    cur.execute(query, params)
    return cur.fetchone()


def _joined(parts: list, number: bool):
    """One column from the arrays of its parts (a part with no rows has NULL)."""
    if len(parts) == 1:
        return _float8s(parts[0]) if number else parts[0]
    if number:
        return np.concatenate([_float8s(p) for p in parts])
    return list(chain.from_iterable(p or () for p in parts))


def _result(early):
    """The side connection's vectors; None if it was not asked, or failed (a dropped
    connection: the caller then reads them on its own, and the store makes the side again)."""
    import psycopg
    if early is None:
        return None
    try:
        return early.result()
    except psycopg.Error:
        return None


def _vector_halves(first, second, dim: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """_read_vectors(first, dim, None, None) in two rowid ranges of as many rows, the second on
    `second` (same snapshot) meanwhile, each written straight into its part of one matrix (with
    the spare rows of a whole read): wide vectors are TOASTed, and fetching them is most of the
    work of one server process; two share it. A lost `second`: its half is read on `first` after."""
    from psycopg import sql
    col = sql.Identifier(vec_column(dim))
    n = first.execute(sql.SQL("SELECT count(*) FROM memories WHERE {} IS NOT NULL").format(col)).fetchone()[0]
    mid = first.execute(sql.SQL("SELECT rowid FROM memories WHERE {} IS NOT NULL ORDER BY rowid OFFSET %s LIMIT 1")
                        .format(col), (n // 2,)).fetchone()
    if n < 2 or mid is None:
        return _read_vectors(first, dim, None, None)
    half = n // 2
    matrix = small_pages(np.empty((n + spare_rows(n), dim), np.float32))
    later = in_thread(lambda: _read_vectors(second, dim, None, None, (mid[0], None), matrix[half:n]),
                      "memviz-pg-vectors")
    try:
        ids, parts = _read_vectors(first, dim, None, None, (None, mid[0]), matrix[:half])
    finally:
        tail = _result(later)
    ids2, parts2 = tail if tail is not None else _read_vectors(first, dim, None, None, (mid[0], None), matrix[half:n])
    if (len(ids), len(ids2), len(parts), len(parts2)) == (half, n - half, 1, 1):
        return np.concatenate([ids, ids2]), [matrix[:n]]  # each half filled its part, as counted
    return np.concatenate([ids, ids2]), parts + parts2


def _read_vectors(conn, dim: int, model: str | None, rowids: list[int] | None, bounds: tuple = (None, None),
                  block: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """(rowids, float32 blocks of rows) of the rows with a `dim` vector (of `model` when given,
    else of any model: the caller keeps the rows it wants), by binary COPY (vector_copy.VectorCopy;
    its matrix sized by the planner's estimate of the rows). In rowid order, the matrix is the one
    the arrays keep; out of it, _place copies it into order, costing about as much as the rest of
    the read. So the scan starts at the table's first page, not where the columns' scan is (a
    synchronized scan's rows came as a rotation): rowid order unless edits moved rows. Wide
    vectors (TOASTed: fetching them dominates) come in the rowid index's order, which costs the
    server nothing more there and keeps edited rows in order too; narrow ones would pay for the
    index walk.
    `bounds`: rowids from, and before; `block`: the matrix to write into, as many rows as will
    come (_vector_halves). Must run inside a transaction (SET LOCAL)."""
    from psycopg import sql
    col = sql.Identifier(vec_column(dim))
    where = [sql.SQL("{} IS NOT NULL").format(col)]
    if model:  # said so that the planner's estimate of the rows uses the column's statistics
        where.append(sql.SQL("embedding_model = {}").format(sql.Literal(model)))
    elif model is not None:
        where.append(sql.SQL("(embedding_model IS NULL OR embedding_model = '')"))
    if rowids is not None:
        where.append(sql.SQL("rowid = ANY({}::bigint[])").format(sql.Literal("{" + ",".join(map(str, map(int, rowids))) + "}")))
    if bounds[0] is not None:
        where.append(sql.SQL("rowid >= {}").format(sql.Literal(int(bounds[0]))))
    if bounds[1] is not None:
        where.append(sql.SQL("rowid < {}").format(sql.Literal(int(bounds[1]))))
    select = sql.SQL("SELECT rowid::int8, {} FROM memories WHERE {}").format(col, sql.SQL(" AND ").join(where))
    query = sql.SQL("{} ORDER BY rowid").format(select)
    conn.execute("SET LOCAL synchronize_seqscans = off")
    conn.execute("SET LOCAL enable_sort = off")  # an index's order, or none (a sort spills to disk)
    plan = _plan(conn, query) if _wide([dim]) else None
    if plan is None or _sorts(plan):  # the scan's order (a stand-in view has no index on rowid)
        plan, query = _plan(conn, select), select
    expected = len(rowids) if rowids is not None else max(0, int(plan["Plan Rows"]))
    hint = expected + expected // 20 + 64  # a margin: rows written since the last ANALYZE
    # a whole read's matrix is the one the arrays keep: it gets the spare rows rows_with_room gives
    stream = VectorCopy(dim, hint, spare=spare_rows(hint) if rowids is None else 0, block=block)
    with conn.cursor().copy(sql.SQL("COPY ({}) TO STDOUT (FORMAT BINARY)").format(query)) as cp:
        got = stream.read(cp)
    conn.execute("RESET enable_sort")
    conn.execute("RESET synchronize_seqscans")
    return got


_INDEX_ORDER_DIM = 512  # about where a vector (4 * dim bytes) is TOASTed: stored apart from its row


def _plan(conn, query) -> dict:
    """The planner's plan of `query` (its estimate of the rows is free, and follows the table's
    growth since its statistics: the pages now, times the rows per page then)."""
    from psycopg import sql
    plan = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) {}").format(query)).fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def _sorts(plan: dict) -> bool:
    return "Sort" in plan["Node Type"] or any(_sorts(p) for p in plan.get("Plans", ()))


def _place(vectors, rowid: np.ndarray, has: np.ndarray, emb: np.ndarray, room: bool = False) -> np.ndarray:
    """The matrix aligned with the sorted `rowid`: `vectors` (rowids, list of row blocks) put
    in the rows marked by `has`; rows it holds for others (another model in the same column)
    are left out. `emb` is the zero matrix to fill, or empty when every row has a vector (then
    `room`: the one made has spare rows, memviz.store.arrays.rows_with_room).
    The scan's order is rowid order in runs (a synchronized scan starts where another one is;
    an edit moves a row), so runs are copied as blocks, not row by row."""
    got, parts = vectors
    at = np.minimum(np.searchsorted(rowid, got), max(len(rowid) - 1, 0))
    keep = (rowid[at] == got) & has[at] if len(rowid) else np.zeros(len(got), bool)
    if int(keep.sum()) != int(has.sum()):
        raise StoreError("the store changed while its vectors were read; open it again")
    dim = parts[0].shape[1]
    bounds = np.cumsum([0] + [len(p) for p in parts])
    if not len(emb):  # every row has a vector
        if len(parts) == 1 and (np.diff(at) > 0).all():
            return parts[0]
        emb = rows_with_room(len(rowid), (dim,)) if room else small_pages(np.empty((len(rowid), dim), np.float32))
    runs = np.union1d(np.flatnonzero((np.diff(at) != 1) | ~keep[1:] | ~keep[:-1]) + 1, bounds[1:-1])
    if len(runs) > max(64, len(at) // 64):  # scattered: row by row, a block at a time
        for p, block in enumerate(parts):
            sel = keep[bounds[p]:bounds[p + 1]]
            emb[at[bounds[p]:bounds[p + 1]][sel]] = block[sel]
        return emb
    starts, ends = np.concatenate([[0], runs]).astype(np.int64), np.concatenate([runs, [len(at)]]).astype(np.int64)
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e > s and keep[s]:
            p = int(np.searchsorted(bounds, s, side="right")) - 1
            emb[at[s]:at[s] + e - s] = parts[p][s - bounds[p]:e - bounds[p]]
    return emb
