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
       CASE WHEN embedding_model IS ?1 AND length(embedding) = ?2 THEN embedding END,
       json_valid(source_ids) AND json_valid(entity_ids) AND json_valid(tags) AND json_valid(attributes)
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


def load_arrays(conn, model: str | None, dim: int) -> MemoryArrays:
    rows = conn.execute(_SQL, (model, 4 * dim)).fetchall()
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 15

    def text(col):
        out = np.empty(n, dtype=object)
        bad = np.zeros(n, dtype=bool)
        for i, raw in enumerate(col):
            out[i], bad[i] = decode_text(raw)
        return out, bad

    ids, b1 = text(cols[1])
    kind, b2 = text(cols[2])
    agent, b3 = text(cols[3])

    def num(col, dtype=np.float64):
        return np.array(col, dtype=dtype) if n else np.zeros(0, dtype)

    blobs = cols[13]
    has = np.array([b is not None for b in blobs], dtype=bool) if n else np.zeros(0, bool)
    emb = np.zeros((n, dim), dtype=np.float32)
    if has.any():
        emb[has] = np.frombuffer(b"".join(b for b in blobs if b is not None), dtype="<f4").reshape(-1, dim)
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        np.divide(emb, norms, out=emb, where=norms > 0)
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
    )
