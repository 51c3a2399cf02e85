"""What the engine needs from the JSON columns, read once per Engine (not per score):
tags, the Generative Agents node attributes (as importers/generative_agents.py writes them) and ADA cycles."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np


@dataclass
class RowMeta:
    tags: list            # per row: frozenset of tag strings
    ga_type: np.ndarray   # object: "event" | "thought" | "chat" | "" (not a GA node)
    node_count: np.ndarray  # float64, NaN when absent
    idle: np.ndarray      # bool: GA embedding_key contains "idle"
    cycle: np.ndarray     # float64 ADA cycle, NaN when absent


def _numbers(values) -> np.ndarray:
    """JSON numbers as float64; null and non-finite values NaN."""
    out = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


def load_row_meta(store, rowid: np.ndarray) -> RowMeta:
    """Aligned with the arrays by rowid; rows written after the arrays were read are ignored.
    The store runs the query (`row_meta_columns()`, one per backend)."""
    n = len(rowid)
    empty = frozenset()
    tags = [empty] * n
    ga_type = np.full(n, "", dtype=object)
    node_count = np.full(n, np.nan)
    idle = np.zeros(n, dtype=bool)
    cycle = np.full(n, np.nan)
    cols = store.row_meta_columns()
    rid = np.array(cols[0], dtype=np.int64)
    if n == 0 or len(rid) == 0:
        return RowMeta(tags=tags, ga_type=ga_type, node_count=node_count, idle=idle, cycle=cycle)
    at = np.minimum(np.searchsorted(rowid, rid), n - 1)      # the arrays are in rowid order
    known = rowid[at] == rid
    rows, src = at[known], np.flatnonzero(known)
    gt = np.array(cols[2], dtype=object)[src]
    is_ga = np.not_equal(gt, None)
    ga_type[rows[is_ga]] = gt[is_ga]
    node_count[rows[is_ga]] = _numbers(cols[3])[src][is_ga]
    idle[rows[is_ga]] = np.array([bool(v) for v in cols[4]], dtype=bool)[src][is_ga]
    cycle[rows] = _numbers(cols[5])[src]
    tag_text = np.array(cols[1], dtype=object)[src]
    tagged = np.flatnonzero(np.not_equal(tag_text, None))
    for i, text in zip(rows[tagged].tolist(), tag_text[tagged].tolist()):
        try:
            value = json.loads(text)
        except ValueError:
            value = []
        if isinstance(value, list):
            tags[i] = frozenset(str(t) for t in value)
    return RowMeta(tags=tags, ga_type=ga_type, node_count=node_count, idle=idle, cycle=cycle)


def derived_cycles(cycle: np.ndarray, event_time: np.ndarray) -> np.ndarray:
    """ADA cycle of every row: `attributes.cycle` where present. A store without any cycle
    numbers counts each distinct event time as one cycle (dense rank from 1); rows lacking a
    number in a store that has some take the latest known cycle at or before their event time (0 if none)."""
    out = cycle.copy()
    missing = np.isnan(out)
    if not missing.any():
        return out
    if missing.all():
        _, dense = np.unique(event_time, return_inverse=True)
        return (dense + 1).astype(np.float64)
    known = ~missing
    order = np.argsort(event_time[known], kind="stable")
    times = event_time[known][order]
    running = np.maximum.accumulate(cycle[known][order])
    pos = np.searchsorted(times, event_time[missing], side="right") - 1
    out[missing] = np.where(pos >= 0, running[np.maximum(pos, 0)], 0.0)
    return out
