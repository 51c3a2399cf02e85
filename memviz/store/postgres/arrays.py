"""MemoryArrays from PostgreSQL in bulk: not a Python object per cell.

The numbers and the vectors of the chosen (model, dim) come by binary COPY of fixed-width
rows, read by numpy straight from the wire format; the texts by one array_agg statement.
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


def load_arrays(conn, dims: list[int], model: str | None = None, preview: int = 0) -> MemoryArrays:
    # Numbers: one binary COPY of fixed-width rows (NULL sent as NaN), read by numpy at once.
    # Texts: one statement of array_agg (psycopg reads text[] in C). Neither sorts on the
    # server (a sort of every row spills to disk beyond work_mem): each carries the rowids,
    # and numpy puts both in rowid order.
    nums = ["rowid::float8"] + [f"coalesce({c}::float8, 'NaN')" for c in _NUMERIC] + [
        f"CASE WHEN {_JSON_OK} THEN 1 ELSE 0 END::float8", f"coalesce({dim_expr(dims)}, -1)::float8"]
    fixed = np.dtype([("fields", ">i2")] + [x for i in range(len(nums)) for x in ((f"l{i}", ">i4"), (f"c{i}", ">f8"))])
    body = _copy_rows(conn, f"SELECT {', '.join(nums)} FROM memories", fixed)
    rowid = body["c0"].astype(np.int64)
    order = np.argsort(rowid, kind="stable")
    rowid = rowid[order]
    n = len(rowid)
    num = {c: body[f"c{i + 1}"][order].astype(np.float64) for i, c in enumerate(_NUMERIC)}
    json_ok = body[f"c{len(_NUMERIC) + 1}"][order]
    dim_of = body[f"c{len(_NUMERIC) + 2}"][order].astype(np.int64)

    cur = conn.cursor(binary=True)
    cur.execute("SELECT array_agg(rowid), array_agg(id), array_agg(kind), array_agg(agent), "
                "array_agg(coalesce(embedding_model, '')), "
                + (f"array_agg(left(content, {int(preview)}))" if preview > 0 else "NULL::text[]") + " FROM memories")
    row = cur.fetchone()
    text_order = np.argsort(np.array(row[0] or [], dtype=np.int64), kind="stable")
    if len(text_order) != n or (n and not np.array_equal(np.array(row[0], dtype=np.int64)[text_order], rowid)):
        raise StoreError("the store changed while it was read; open it again")

    def texts(col):
        out = np.empty(n, dtype=object)
        if n:
            out[:] = col
        return out[text_order]
    ids, kind, agent = texts(row[1]), texts(row[2]), texts(row[3])
    models = [m.encode("utf-8") for m in texts(row[4])] if n else []
    names: dict[bytes, int] = {}
    model_code = np.fromiter((names.setdefault(m, len(names)) for m in models), np.int64, count=n)
    size = np.where(dim_of >= 0, dim_of * 4, -1)
    key, dim = _pick_model(list(names), model_code, size,
                           None if model is None else model.encode("utf-8"), None)
    has = (model_code == names.get(key, -1)) & (size == 4 * dim) & (size > 0)
    emb = np.zeros((n, dim), dtype=np.float32)
    if dim and has.any():
        vec_rowid, vecs = _vectors(conn, dim, None if key is None else key.decode("utf-8"))
        at = np.minimum(np.searchsorted(rowid, vec_rowid), n - 1)
        if len(vec_rowid) != has.sum() or not ((rowid[at] == vec_rowid) & has[at]).all():
            raise StoreError("the store changed while its vectors were read; open it again")
        emb[at] = vecs
        emb = _normalize_rows(emb, has)
    return MemoryArrays(
        ids=ids, rowid=rowid, kind=kind, agent=agent,
        importance=num["importance"], event_time=num["event_time"], created_at=num["created_at"],
        last_accessed=num["last_accessed"], valid_until=num["valid_until"], confidence=num["confidence"],
        decay_rate=num["decay_rate"], access_count=np.nan_to_num(num["access_count"]).astype(np.int64),
        protected=np.nan_to_num(num["protected"]).astype(bool), embedding=emb, has_embedding=has,
        embedding_model=None if key is None else key.decode("utf-8"),
        bad_json=~json_ok.astype(bool), bad_text=np.zeros(n, bool),
        preview=_one_line(texts(row[5])) if preview > 0 else None,
    )


def _copy_rows(conn, select: str, row: np.dtype, params=()) -> np.ndarray:
    """The rows of `select` by binary COPY, as a numpy record array (every field fixed-width,
    none NULL: `row` spells out the wire format)."""
    with conn.cursor().copy(f"COPY ({select}) TO STDOUT (FORMAT BINARY)", params) as cp:
        data = b"".join(bytes(block) for block in cp)
    header = 19 + int.from_bytes(data[15:19], "big")  # signature, flags, header extension
    return np.frombuffer(data, dtype=row, count=(len(data) - header - 2) // row.itemsize, offset=header)


def _one_line(col: np.ndarray) -> np.ndarray:
    """Texts with CR, LF and tab as spaces (one str.translate per text, no regex)."""
    table = str.maketrans("\r\n\t", "   ")
    out = np.empty(len(col), dtype=object)
    out[:] = [t.translate(table) for t in col]
    return out


def _vectors(conn, dim: int, model: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, (m, dim) float32 vectors) of `model`, in no particular order: one binary COPY
    parsed by numpy as fixed-width rows (no bytea built on the server, no object per row here)."""
    col = vec_column(dim)
    row = np.dtype([("fields", ">i2"), ("len1", ">i4"), ("rowid", ">i8"), ("len2", ">i4"), ("dim", ">i2"),
                    ("unused", ">i2"), ("v", ">f4", (dim,))])
    body = _copy_rows(conn, f"SELECT rowid, {col} FROM memories WHERE {col} IS NOT NULL "
                            "AND coalesce(embedding_model, '') = %s", row, (model or "",))
    if len(body) and ((body["len2"] != 4 + 4 * dim).any() or (body["len1"] != 8).any()):
        raise StoreError("unexpected vector data from the server; open the store again")
    return body["rowid"].astype(np.int64), body["v"].astype(np.float32)
