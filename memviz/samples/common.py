"""Shared pieces of the sample generators: seeded randomness, fixed clocks, and the writer.

Everything here is deterministic: one `random.Random` per generator, fixed base dates,
and no wall-clock time in any memory. Running a generator twice gives the same ids,
text, times and vectors.
"""
from __future__ import annotations

import json
import math
import os
import random
import re
from calendar import timegm
from datetime import UTC, datetime

import memviz.store as ms
from memviz.store.clock import simulated
from memviz.tasks import Steps, Task, quiet

DAY = 86400
HOUR = 3600


def epoch(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> int:
    """UTC epoch seconds of a calendar time (the samples treat local time as UTC)."""
    return timegm((y, mo, d, h, mi, s, 0, 0, 0))


def weekday(t: int) -> int:
    """0 = Monday."""
    return datetime.fromtimestamp(t, tz=UTC).weekday()


class Rand(random.Random):
    """random.Random plus the few helpers the generators use everywhere."""

    def new_id(self) -> str:
        # uuid4-shaped hex like `memviz.store.records.new_id`, but from the seeded stream
        return f"{self.getrandbits(128):032x}"

    def pick(self, seq):
        return seq[self.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.random() < p

    def weighted(self, items: dict):
        keys = list(items)
        return self.choices(keys, weights=[items[k] for k in keys])[0]

    def importance(self, base: float, spread: float = 1.2, lo: int = 1, hi: int = 10) -> int:
        return int(min(hi, max(lo, round(self.gauss(base, spread)))))


_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, rng: Rand, vocab: dict, fixed: dict | None = None) -> tuple[str, dict]:
    """Fill `{slot}`s: fixed values first, else a random choice from vocab[slot].
    Returns the text and the values used (so a derived fact can reuse them)."""
    used = dict(fixed or {})

    def sub(m):
        key = m.group(1)
        if key not in used:
            used[key] = rng.pick(vocab[key])
        return str(used[key])

    return _SLOT.sub(sub, template), used


def ebbinghaus(confidence: float, decay_rate: float, days: float) -> float:
    """The assistant memory's decay: confidence × exp(−decay_rate × days^0.8)."""
    return confidence * math.exp(-decay_rate * max(days, 0.0) ** 0.8)


def memory(rng: Rand, *, agent: str, kind: str, content: str, t: int, importance: float, **extra) -> dict:
    """A memory record for `insert_memories` (embedding added by the writer)."""
    rec = {"id": rng.new_id(), "agent": agent, "kind": kind, "content": content, "importance": importance,
           "event_time": int(t), "created_at": int(extra.pop("created_at", t))}
    rec.update(extra)
    return rec


def with_clock(meta: dict, records: list[dict], source: str) -> dict:
    """meta plus the store's clock: a sample lives in its own time, its last recorded moment
    (measured from the wall clock every memory would be months old, every recency 0)."""
    end = max(max(r["event_time"], r["created_at"]) for r in records)
    return {**meta, "clock": simulated(end, source).to_meta()}


def remove_store_files(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.exists(p):
            os.remove(p)


def write_store(path: str, records: list[dict], *, entities: list[dict] = (), meta: dict | None = None,
                embedder=None, task: Task | None = None) -> None:
    """Make a fresh native store at `path` holding `records` (embedded with `embedder`,
    default the local model) in created_at order, plus `entities` rows and memviz_meta keys.
    `task` hears the embedding's progress (most of the time) and may cancel between batches."""
    from memviz.embed import default_embedder

    task = task or quiet()
    embedder = embedder or default_embedder()
    path = os.fspath(path)
    remove_store_files(path)
    records = sorted(records, key=lambda r: r["created_at"])  # stable: generation order breaks ties
    texts = [r["content"] for r in records]
    vecs = embedder.embed_many(texts, Steps(task.part(0.0, 0.8), len(texts), "Making the sample: embedding"))
    task.progress(0.8, "Making the sample: writing the store")
    for rec, vec in zip(records, vecs):
        rec["embedding"] = vec
        rec["embedding_model"] = embedder.model
    store = ms.create(path)
    try:
        for i in range(0, len(records), 2000):
            store.insert_memories(records[i:i + 2000], audit=False)
        if entities:
            evecs = embedder.embed([f"{e['canonical_name']}: {e['summary']}" for e in entities])
            with store.transaction() as c:
                c.executemany(
                    "INSERT INTO entities(id, canonical_name, type, aliases, summary, embedding, mention_count, protected) "
                    "VALUES (?,?,?,?,?,?,?,?)",
                    [(e["id"], e["canonical_name"], e["type"], ms_json(e.get("aliases", [])), e["summary"],
                      v.astype("<f4").tobytes(), int(e.get("mention_count", 1)), 1 if e.get("protected") else 0)
                     for e, v in zip(entities, evecs)])
        for key, value in (meta or {}).items():
            store.set_meta(key, value)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.conn.execute("VACUUM")
    finally:
        store.close()


def ms_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
