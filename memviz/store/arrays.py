"""All memories as columnar numpy arrays: what the retrieval engine and the panels read."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .records import decode_text

_SQL = """
SELECT rowid, CAST(id AS BLOB), CAST(kind AS BLOB), CAST(agent AS BLOB),
       CAST(importance AS REAL), CAST(event_time AS REAL), CAST(created_at AS REAL),
       CAST(last_accessed AS REAL), CAST(valid_until AS REAL), CAST(confidence AS REAL),
       CAST(decay_rate AS REAL), CAST(access_count AS INTEGER), CAST(protected AS INTEGER),
       embedding,
       CASE WHEN source_ids = '[]' THEN 1 ELSE json_valid(source_ids) END
       AND CASE WHEN entity_ids = '[]' THEN 1 ELSE json_valid(entity_ids) END
       AND CASE WHEN tags = '[]' THEN 1 ELSE json_valid(tags) END
       AND CASE WHEN attributes = '{}' THEN 1 ELSE json_valid(attributes) END,  -- CASE skips parsing the usual empties
       CAST(coalesce(embedding_model, '') AS BLOB), CASE WHEN typeof(embedding) = 'blob' THEN length(embedding) END
       {preview}
FROM memories ORDER BY rowid
"""


@dataclass
class MemoryArrays:
    """One row per memory (live and retired), in store order (rowid)."""

    ids: np.ndarray            # object: str
    rowid: np.ndarray          # int64
    kind: np.ndarray           # object: str
    agent: np.ndarray          # object: str
    importance: np.ndarray     # float64
    event_time: np.ndarray     # float64 epoch seconds
    created_at: np.ndarray
    last_accessed: np.ndarray  # NaN = never
    valid_until: np.ndarray    # NaN = current
    confidence: np.ndarray
    decay_rate: np.ndarray
    access_count: np.ndarray   # int64
    protected: np.ndarray      # bool
    embedding: np.ndarray      # float32 (n, dim), unit-normalised; zero rows where has_embedding is False
    has_embedding: np.ndarray  # bool
    embedding_model: str | None
    bad_json: np.ndarray       # bool: a JSON column of the row is malformed
    bad_text: np.ndarray       # bool: id/kind/agent held invalid UTF-8
    preview: np.ndarray | None = None  # object: the start of each content on one line (when asked for)
    _index: dict | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def live(self) -> np.ndarray:
        return np.isnan(self.valid_until)

    @property
    def dim(self) -> int:
        return self.embedding.shape[1]

    def index_of(self, memory_id: str) -> int | None:
        if self._index is None:
            self._index = {m: i for i, m in enumerate(self.ids)}
        return self._index.get(memory_id)


def load_arrays(conn, model: str | None = None, dim: int | None = None, preview: int = 0) -> MemoryArrays:
    """All memories in one scan. `model` None = the most used (model, dim), as
    `Store.main_model()`; `dim` None = the most used dimension of `model`. `preview` > 0 also
    reads the first `preview` characters of each content (newlines and tabs made spaces)."""
    sql = _SQL.replace("{preview}", f", CAST(substr(content, 1, {int(preview)}) AS BLOB)" if preview > 0 else "")
    rows = conn.execute(sql).fetchall()
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 18

    ids, b1 = _texts(cols[1])
    kind, b2 = _texts(cols[2])
    agent, b3 = _texts(cols[3])

    def num(col, dtype=np.float64):
        return np.array(col, dtype=dtype) if n else np.zeros(0, dtype)

    # which (model, size) fills the matrix: model names as bytes (NULL = b""), blob sizes (-1 = no blob)
    names: dict[bytes, int] = {}
    model_code = np.fromiter((names.setdefault(m, len(names)) for m in cols[15]), np.int64, count=n)
    size = np.nan_to_num(num(cols[16]), nan=-1).astype(np.int64)
    key, dim = _pick_model(list(names), model_code, size,
                           None if model is None else model.encode("utf-8", "surrogatepass"), dim)
    model = None if key is None else decode_text(key)[0]
    nbytes = 4 * dim
    has = (model_code == names.get(key, -1)) & (size == nbytes) & (size > 0)
    if nbytes and has.any():
        # one writable buffer, zero rows where a memory has no vector of this model: a single copy
        blobs = cols[13]
        zero = bytes(nbytes)
        buf = bytearray().join(blobs if has.all() else (b if h else zero for b, h in zip(blobs, has.tolist())))
        emb = np.frombuffer(buf, dtype="<f4").reshape(n, dim)
        _normalize_rows(emb, has)
    else:
        emb = np.zeros((n, dim), dtype=np.float32)
    return MemoryArrays(
        ids=ids,
        rowid=num(cols[0], np.int64),
        kind=kind,
        agent=agent,
        importance=num(cols[4]),
        event_time=num(cols[5]),
        created_at=num(cols[6]),
        last_accessed=num(cols[7]),
        valid_until=num(cols[8]),
        confidence=num(cols[9]),
        decay_rate=num(cols[10]),
        access_count=np.nan_to_num(num(cols[11])).astype(np.int64),
        protected=np.nan_to_num(num(cols[12])).astype(bool),
        embedding=emb,
        has_embedding=has,
        embedding_model=model,
        bad_json=~np.nan_to_num(num(cols[14])).astype(bool),
        bad_text=b1 | b2 | b3,
        preview=_one_line(cols[17]) if preview > 0 else None,
    )


def _pick_model(names: list[bytes], model_code: np.ndarray, size: np.ndarray, model: bytes | None,
                dim) -> tuple[bytes | None, int]:
    """The (model, dim) whose vectors fill the matrix: most rows first, then model name, then
    the smaller dimension (as `Store.embedding_models()` orders them; no model name counts as
    ""). Counted with numpy over per-row codes, not a Python pass."""
    if model is not None and dim is not None:
        return model, int(dim)
    blob = size >= 0
    if model is not None:
        blob &= model_code == (names.index(model) if model in names else -1)
    if not blob.any():
        return model, 0
    pairs, counts = np.unique(model_code[blob] << 32 | size[blob] // 4, return_counts=True)
    m, d, _ = min(((names[int(p >> 32)], int(p & 0xFFFFFFFF), int(c)) for p, c in zip(pairs, counts)),
                  key=lambda mdc: (-mdc[2], mdc[0], mdc[1]))
    return (m if model is None else model), d


def _texts(col) -> tuple[np.ndarray, np.ndarray]:
    """Decode a column of UTF-8 bytes; invalid rows get replacement characters and a flag.
    Fast path: decode the whole column at once (NUL-joined), row by row only if that fails."""
    n = len(col)
    out = np.empty(n, dtype=object)
    bad = np.zeros(n, dtype=bool)
    try:
        parts = b"\x00".join(b"" if raw is None else raw for raw in col).decode("utf-8").split("\x00")
    except (UnicodeDecodeError, TypeError):
        parts = None
    if parts is not None and len(parts) == n:
        out[:] = parts
        return out, bad
    for i, raw in enumerate(col):
        out[i], bad[i] = decode_text(raw)
    return out, bad


def _one_line(col) -> np.ndarray:
    """Decoded texts with CR, LF and tab as spaces (done once on the joined column, not per row)."""
    out = np.empty(len(col), dtype=object)
    joined = b"\x00".join(b"" if raw is None else raw for raw in col).decode("utf-8", errors="replace")
    parts = joined.replace("\r", " ").replace("\n", " ").replace("\t", " ").split("\x00")
    if len(parts) != len(col):  # a content holding NUL characters: decode row by row
        parts = [decode_text(raw)[0].replace("\r", " ").replace("\n", " ").replace("\t", " ") for raw in col]
    out[:] = parts
    return out


def _normalize_rows(emb: np.ndarray, rows: np.ndarray) -> None:
    """Scale rows to unit length in place (most are already unit: only those that are not are touched)."""
    sq = np.einsum("ij,ij->i", emb, emb)
    fix = rows & (np.abs(sq - 1.0) > 1e-6) & (sq > 0)
    if fix.any():
        emb[fix] /= np.sqrt(sq[fix])[:, None]
