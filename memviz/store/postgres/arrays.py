"""MemoryArrays from PostgreSQL in bulk: not a Python object per cell.

One statement aggregates every scalar column into an array (numbers sent in binary and read
by numpy straight from the wire format), then the vectors of the chosen (model, dim) come as
one `string_agg(vector_send(...))` blob per chunk of rows, read by numpy as big-endian float4.
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


def dim_expr(dims: list[int]) -> str:
    """SQL: the dimension of the row's vector (NULL when it has none)."""
    if not dims:
        return "NULL::integer"
    return "CASE " + " ".join(f"WHEN {vec_column(d)} IS NOT NULL THEN {d}" for d in dims) + " END"


def _float8_array(raw) -> np.ndarray:
    """A one-dimensional float8[]/int8[] in PostgreSQL's binary array format, without NULLs."""
    if raw is None:
        return np.zeros(0)
    raw = bytes(raw)
    ndim = int.from_bytes(raw[0:4], "big")
    if ndim == 0:
        return np.zeros(0)
    body = np.frombuffer(raw, dtype=np.dtype([("len", ">i4"), ("v", ">f8")]), offset=20)
    return body["v"].astype(np.float64)


def load_arrays(conn, dims: list[int], model: str | None = None, preview: int = 0) -> MemoryArrays:
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY

        def load(self, data):
            return bytes(data)

    cur = conn.cursor(binary=True)
    cur.adapters.register_loader(1022, Raw)  # float8[]: read by numpy, not element by element
    text = "translate(left(content, {0}), E'\\n\\r\\t', '   ')".format(int(preview))
    cols = (["rowid::float8", "id", "kind", "agent"] + [f"coalesce({c}::float8, 'NaN')" for c in _NUMERIC]
            + [f"CASE WHEN {_JSON_OK} THEN 1 ELSE 0 END::float8", "coalesce(embedding_model, '')",
               f"coalesce({dim_expr(dims)}, -1)::float8", text if preview > 0 else "NULL::text"])
    inner = ", ".join(f"{c} AS c{i}" for i, c in enumerate(cols))
    # Aggregating a subquery sorted once is several times faster than an ORDER BY in each
    # array_agg; PostgreSQL keeps that order in practice but does not promise it, so the
    # rowids are checked and the slow form is the fallback.
    for ordered in ("", " ORDER BY c0"):
        aggs = ", ".join(f"array_agg(c{i}{ordered})" for i in range(len(cols)))
        cur.execute(f"SELECT {aggs} FROM (SELECT {inner} FROM memories ORDER BY rowid) s")
        row = cur.fetchone()
        rowid = _float8_array(row[0]).astype(np.int64)
        if len(rowid) < 2 or (np.diff(rowid) > 0).all():
            break
    n = len(rowid)

    def texts(col):
        out = np.empty(n, dtype=object)
        if n:
            out[:] = col
        return out
    ids, kind, agent = texts(row[1]), texts(row[2]), texts(row[3])
    num = {c: _float8_array(row[4 + i]) for i, c in enumerate(_NUMERIC)}
    json_ok = _float8_array(row[13])
    models = [m.encode("utf-8") for m in (row[14] or [])]
    dim_of = _float8_array(row[15]).astype(np.int64)
    names: dict[bytes, int] = {}
    model_code = np.fromiter((names.setdefault(m, len(names)) for m in models), np.int64, count=n)
    size = np.where(dim_of >= 0, dim_of * 4, -1)
    key, dim = _pick_model(list(names), model_code, size,
                           None if model is None else model.encode("utf-8"), None)
    has = (model_code == names.get(key, -1)) & (size == 4 * dim) & (size > 0)
    emb = np.zeros((n, dim), dtype=np.float32)
    if dim and has.any():
        emb[has] = _vectors(conn, dim, None if key is None else key.decode("utf-8"), int(has.sum()))
        emb = _normalize_rows(emb, has)
    return MemoryArrays(
        ids=ids, rowid=rowid, kind=kind, agent=agent,
        importance=num["importance"], event_time=num["event_time"], created_at=num["created_at"],
        last_accessed=num["last_accessed"], valid_until=num["valid_until"], confidence=num["confidence"],
        decay_rate=num["decay_rate"], access_count=np.nan_to_num(num["access_count"]).astype(np.int64),
        protected=np.nan_to_num(num["protected"]).astype(bool), embedding=emb, has_embedding=has,
        embedding_model=None if key is None else key.decode("utf-8"),
        bad_json=~json_ok.astype(bool), bad_text=np.zeros(n, bool),
        preview=texts(row[16]) if preview > 0 else None,
    )


def _vectors(conn, dim: int, model: str | None, count: int) -> np.ndarray:
    """The (count, dim) float32 vectors of `model` in rowid order: one binary COPY, parsed by
    numpy as fixed-width rows (no bytea built on the server, no object per row here)."""
    col = vec_column(dim)
    row = np.dtype([("fields", ">i2"), ("len", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))])
    with conn.cursor().copy(
            f"COPY (SELECT {col} FROM memories WHERE {col} IS NOT NULL AND coalesce(embedding_model, '') = %s "
            f"ORDER BY rowid) TO STDOUT (FORMAT BINARY)", (model or "",)) as cp:
        data = b"".join(bytes(block) for block in cp)
    header = 19 + int.from_bytes(data[15:19], "big")  # signature, flags, header extension
    body = np.frombuffer(data, dtype=row, count=(len(data) - header - 2) // row.itemsize, offset=header)
    if len(body) != count or (len(body) and (body["len"] != 4 + 4 * dim).any()):
        raise StoreError("the store changed while its vectors were read; open it again")
    return body["v"].astype(np.float32)
