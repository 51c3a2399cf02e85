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


def _num(v) -> float:
    """A JSON number, else NaN (a string "12" is not a cycle number)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return np.nan
    return float(v) if np.isfinite(v) else np.nan


def load_row_meta(store, rowid: np.ndarray) -> RowMeta:
    """Aligned with the arrays by rowid; rows written after the arrays were read are ignored.
    The store runs the query (`row_meta_rows()`, one per backend)."""
    rows = store.row_meta_rows()
    n = len(rowid)
    empty = frozenset()
    tags = [empty] * n
    ga_type = np.full(n, "", dtype=object)
    node_count = np.full(n, np.nan)
    idle = np.zeros(n, dtype=bool)
    cycle = np.full(n, np.nan)
    index = {r: i for i, r in enumerate(rowid.tolist())}
    for rid, tag_text, gt, nc, key, cyc in rows:
        i = index.get(rid)
        if i is None:
            continue
        if tag_text and tag_text != "[]":
            try:
                value = json.loads(tag_text)
            except ValueError:
                value = []
            if isinstance(value, list):
                tags[i] = frozenset(str(t) for t in value)
        if gt is not None:
            ga_type[i] = str(gt)
            node_count[i] = _num(nc)
            idle[i] = "idle" in str(key or "")
        if cyc is not None:
            cycle[i] = _num(cyc)
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
