"""MemoryArrays from PostgreSQL in bulk: not a Python object per cell, not a message per row.

One statement returns every column as an array in one row (numbers sent in binary and read
by numpy from the wire format, texts as text[] read by psycopg in C); then the vectors of the
chosen (model, dim) come as `string_agg(vector_send(...))` values over rowid ranges (read by
numpy as big-endian float4). Nothing is sorted on the server (a sort of every row spills to
disk beyond work_mem): the aggregates of one statement see the rows in the same order, each
statement also aggregates the rowids, and numpy puts everything in rowid order.
Measured on 100k x 256 (bench/postgres.py): binary COPY out delivers one message per row,
read one by one by psycopg (slower); all columns and vectors in one statement, or vectors in
256 MB values, were slower than 8 MB ranges (large values are slow through libpq).
"""
from __future__ import annotations

import numpy as np

from ..arrays import MemoryArrays, _normalize_rows, _pick_model
from ..errors import StoreError
from .schema import vec_column

# numeric columns: NULL is sent as NaN so every element has the same width on the wire
_NUMERIC = ("importance", "event_time", "created_at", "last_accessed", "valid_until", "confidence", "decay_rate",
            "access_count", "protected")
_JSON_OK = ("(source_ids = '[]' OR pg_input_is_valid(source_ids, 'json')) "
            "AND (entity_ids = '[]' OR pg_input_is_valid(entity_ids, 'json')) "
            "AND (tags = '[]' OR pg_input_is_valid(tags, 'json')) "
            "AND (attributes = '{}' OR pg_input_is_valid(attributes, 'json'))")
_CHUNK_BYTES = 8 << 20  # vectors per statement (measured: 8 MB chunks beat 32 and 256 MB; a bytea is limited to 1 GB)


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


def load_arrays(conn, dims: list[int], model: str | None = None, preview: int = 0, rowids: list[int] | None = None,
                dim: int | None = None) -> MemoryArrays:
    """Every memory (or those of `rowids`: a live refresh; pass `model` and `dim` too)."""
    nums = ["rowid::float8"] + [f"coalesce({c}::float8, 'NaN')" for c in _NUMERIC] + [
        f"CASE WHEN {_JSON_OK} THEN 1 ELSE 0 END::float8", f"coalesce({dim_expr(dims)}, -1)::float8"]
    texts_sql = ["id", "kind", "agent", "coalesce(embedding_model, '')",
                 f"left(content, {int(preview)})" if preview > 0 else "NULL::text"]
    cur = _raw_cursor(conn)
    where = "" if rowids is None else " WHERE rowid = ANY(%s)"
    cur.execute("SELECT " + ", ".join(f"array_agg({c})" for c in nums + texts_sql) + " FROM memories" + where,
                () if rowids is None else (rowids,))
    row = cur.fetchone()
    rowid = _float8s(row[0]).astype(np.int64)
    order = np.argsort(rowid, kind="stable")
    rowid = rowid[order]
    n = len(rowid)
    col = [_float8s(row[i])[order] for i in range(1, len(nums))]
    num = dict(zip(_NUMERIC, col))
    json_ok, dim_of = col[len(_NUMERIC)], col[len(_NUMERIC) + 1].astype(np.int64)

    def texts(values):
        out = np.empty(n, dtype=object)
        if n:
            out[:] = values
        return out[order]
    first = len(nums)
    ids, kind, agent, models = (texts(row[first + i]) for i in range(4))
    names: dict[bytes, int] = {}
    model_code = np.fromiter((names.setdefault(m.encode("utf-8"), len(names)) for m in models), np.int64, count=n)
    size = np.where(dim_of >= 0, dim_of * 4, -1)
    key, dim = _pick_model(list(names), model_code, size, None if model is None else model.encode("utf-8"), dim)
    has = (model_code == names.get(key, -1)) & (size == 4 * dim) & (size > 0)
    emb = np.zeros((n, dim), dtype=np.float32)
    if dim and has.any():
        _fill_vectors(conn, emb, rowid, has, dim, None if key is None else key.decode("utf-8"), sparse=rowids is not None)
        emb = _normalize_rows(emb, has)
    return MemoryArrays(
        ids=ids, rowid=rowid, kind=kind, agent=agent,
        importance=num["importance"], event_time=num["event_time"], created_at=num["created_at"],
        last_accessed=num["last_accessed"], valid_until=num["valid_until"], confidence=num["confidence"],
        decay_rate=num["decay_rate"], access_count=np.nan_to_num(num["access_count"]).astype(np.int64),
        protected=np.nan_to_num(num["protected"]).astype(bool), embedding=emb, has_embedding=has,
        embedding_model=None if key is None else key.decode("utf-8"),
        bad_json=~json_ok.astype(bool), bad_text=np.zeros(n, bool),
        bad_value=np.zeros(n, bool),  # typed columns: a server holds no unreadable time or number
        preview=_one_line(texts(row[first + 4])) if preview > 0 else None,
    )


def _fill_vectors(conn, emb: np.ndarray, rowid: np.ndarray, has: np.ndarray, dim: int, model: str | None,
                  sparse: bool = False) -> None:
    """Put the vectors of `model` into the rows of `emb` (aligned with the sorted `rowid`)
    marked by `has`, a chunk of rowids per statement (`sparse`: the rowids themselves, not
    the range between the first and last)."""
    col = vec_column(dim)
    wanted = rowid[has]
    step = max(1, _CHUNK_BYTES // (4 + 4 * dim))
    cur = _raw_cursor(conn)
    got = 0
    for start in range(0, len(wanted), step):
        lo, hi = int(wanted[start]), int(wanted[min(start + step, len(wanted)) - 1])
        which = ("rowid = ANY(%s)", ([int(r) for r in wanted[start:start + step]],)) if sparse else \
            ("rowid BETWEEN %s AND %s", (lo, hi))
        cur.execute(f"SELECT array_agg(rowid::float8), string_agg(vector_send({col}), ''::bytea) FROM memories "
                    f"WHERE {which[0]} AND {col} IS NOT NULL AND coalesce(embedding_model, '') = %s",
                    (*which[1], model or ""))
        ids, blob = cur.fetchone()
        part_rowid = _float8s(ids).astype(np.int64)
        vecs = np.frombuffer(blob or b"", dtype=">f4").reshape(-1, dim + 1)[:, 1:]  # drop dim+unused (4 bytes)
        at = np.minimum(np.searchsorted(rowid, part_rowid), len(rowid) - 1)
        if len(vecs) != len(part_rowid) or not ((rowid[at] == part_rowid) & has[at]).all():
            raise StoreError("the store changed while its vectors were read; open it again")
        emb[at] = vecs
        got += len(part_rowid)
    if got != len(wanted):
        raise StoreError("the store changed while its vectors were read; open it again")


def _one_line(col: np.ndarray) -> np.ndarray:
    """Texts with CR, LF and tab as spaces: replaced once over the joined column, not per text."""
    out = np.empty(len(col), dtype=object)
    joined = "\x00".join(col.tolist())
    parts = joined.replace("\r", " ").replace("\n", " ").replace("\t", " ").split("\x00")
    if len(parts) != len(col):  # PostgreSQL text cannot hold NUL, but be safe
        parts = [t.replace("\r", " ").replace("\n", " ").replace("\t", " ") for t in col]
    out[:] = parts
    return out
