"""2-D layouts cached in the store's `memviz_layouts` table.

One row per (method, embedding model, params): the ids laid out and their float32 coords.
A row is found by those three; its key also carries a hash of the id set so two layouts of
different memory sets never share a key. When memories were added since, the stored coords
are kept and only the new memories are placed from their neighbours (place.py); memories
gone from the store are dropped; the refreshed layout is written back (one short
transaction) so the next open is exact. A read-only store keeps layouts in memory only.
A layout may carry a note, how it was made in words ("UMAP of a random 30,000 of 100,000
memories; ..."), kept in memviz_meta with the layout's key and time so a reopen can say it too.
Call it from the thread that owns the store (an apsw connection is not shared across
threads at once).
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import numpy as np

from memviz.store.errors import StoreError

from .place import place_by_neighbours


@dataclass
class CachedLayout:
    coords: np.ndarray   # (n, 2) float32 aligned to the arrays' rows; NaN for rows without a vector
    key: str
    created_at: float    # when the stored layout was written
    reused: int          # rows whose coords came from the cache
    placed: int          # rows new since, placed from their neighbours now
    dropped: int         # cached ids no longer in the arrays
    note: str | None = None  # how the layout was made, in words (None: not recorded)


@dataclass
class _Entry:
    key: str
    created_at: float
    ids: np.ndarray      # object array of ids, row order of coords
    coords: np.ndarray   # (m, 2) float32
    note: str | None = None


def params_json(params: dict | None) -> str:
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"), default=str)


def id_set_hash(ids) -> str:
    h = hashlib.sha1()
    for i in sorted(ids):
        h.update(i.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def note_meta_key(method: str, model: str | None, params_json_text: str) -> str:
    return f"layout_note:{method}:{model or ''}:{params_json_text}"


def layout_key(method: str, model: str | None, params: dict | None, ids) -> str:
    p = hashlib.sha1(params_json(params).encode()).hexdigest()[:12]
    return f"{method}:{model or ''}:{p}:{id_set_hash(ids)}"


class LayoutCache:
    def __init__(self, store):
        self.store = store
        self._memory: dict[tuple, _Entry] = {}
        self.last_write_error: str | None = None  # why the last write stayed in memory, if it did

    # ---------------------------------------------------------------- reading
    def get(self, method: str, arrays, params: dict | None = None) -> np.ndarray | None:
        """Cached coords aligned to `arrays` rows (new memories placed), or None if never computed."""
        hit = self.lookup(method, arrays, params)
        return None if hit is None else hit.coords

    def lookup(self, method: str, arrays, params: dict | None = None) -> CachedLayout | None:
        slot = (method, arrays.embedding_model, params_json(params))
        entry = self._memory.get(slot) or self._load(*slot)
        if entry is None:
            return None
        self._memory[slot] = entry
        n = len(arrays)
        laid = np.asarray(arrays.has_embedding, dtype=bool)
        coords = np.full((n, 2), np.nan, dtype=np.float32)
        want = arrays.ids[laid]
        if len(want) == len(entry.ids) and np.array_equal(want, entry.ids):
            coords[laid] = entry.coords       # nothing changed: the common reopen
            return CachedLayout(coords, entry.key, entry.created_at, len(want), 0, 0, entry.note)
        pos = {m: i for i, m in enumerate(entry.ids)}
        rows = np.flatnonzero(laid)
        src = np.fromiter((pos.get(m, -1) for m in want), dtype=np.int64, count=len(want))
        old, new = rows[src >= 0], rows[src < 0]
        coords[old] = entry.coords[src[src >= 0]]
        if len(new):
            coords[new] = place_by_neighbours(arrays.embedding[old], coords[old], arrays.embedding[new])
        dropped = len(entry.ids) - len(old)
        hit = CachedLayout(coords, entry.key, entry.created_at, len(old), len(new), dropped, entry.note)
        hit.key = self.put(method, arrays, params, coords, note=entry.note)
        return hit

    def _load(self, method, model, params) -> _Entry | None:
        row = self.store.layout_row(method, model, params)
        if row is None:
            return None
        key, created, ids_text, blob = row
        try:
            ids = np.array(json.loads(ids_text), dtype=object)
            coords = np.frombuffer(blob, dtype="<f4").reshape(-1, 2).astype(np.float32)
        except (ValueError, TypeError):
            return None  # a damaged cache row is recomputed, not trusted
        if len(ids) != len(coords):
            return None
        try:
            note = self.store.meta(note_meta_key(method, model, params))
        except StoreError:
            note = None  # unreadable: the layout is shown without its note
        mine = isinstance(note, dict) and note.get("key") == key and note.get("created") == float(created)
        note = note.get("text") if mine else None  # the note of an earlier layout is not this one's
        return _Entry(key, float(created), ids, coords, note if isinstance(note, str) else None)

    # ---------------------------------------------------------------- writing
    def put(self, method: str, arrays, params: dict | None, coords: np.ndarray, note: str | None = None) -> str:
        """Remember `coords` (aligned to `arrays` rows) for this method/model/params, with `note`
        (how they were made, in words); returns the key. Persists in the store when it is
        writable, else in memory only."""
        coords = np.asarray(coords, dtype=np.float32)
        if coords.shape != (len(arrays), 2):
            raise ValueError(f"coords have shape {coords.shape}, expected ({len(arrays)}, 2)")
        keep = np.asarray(arrays.has_embedding, dtype=bool) & ~np.isnan(coords).any(axis=1)
        ids = arrays.ids[keep]
        model, pj = arrays.embedding_model, params_json(params)
        key = layout_key(method, model, params, ids)
        entry = _Entry(key, time.time(), ids, np.ascontiguousarray(coords[keep]), note)
        self._memory[(method, model, pj)] = entry
        self.last_write_error = None
        if self.store.read_only:
            self.last_write_error = f"the store is read-only ({self.store.read_only_reason})"
            return key
        try:
            self.store.put_layout(key, method, model, pj, entry.created_at, json.dumps(list(ids), ensure_ascii=False),
                                  entry.coords.astype("<f4").tobytes())
            if note is not None:  # tied to this row: a later layout without a note is shown without one
                self.store.set_meta(note_meta_key(method, model, pj), {"key": key, "created": entry.created_at,
                                                                       "text": note})
        except StoreError as e:  # busy: the layout stays in memory and is written next time
            self.last_write_error = str(e)
        return key

    def forget(self, method: str | None = None) -> None:
        """Drop cached layouts (of one method, or all) from memory and, if writable, the store."""
        self._memory = {k: v for k, v in self._memory.items() if method is not None and k[0] != method}
        if not self.store.read_only:
            self.store.forget_layouts(method)
