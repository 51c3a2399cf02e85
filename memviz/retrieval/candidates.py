"""Which memories a query scores (filters, as-of) and, for Generative Agents, in what order."""
from __future__ import annotations

import numpy as np

from .params import Params


def filter_mask(arrays, params: Params, meta_fn, exclude: int | None = None) -> np.ndarray:
    """Rows that pass the user's filters.

    As of T: only memories created at or before T and still valid at T (valid_until empty or
    after T); include_retired drops the validity test but still needs created <= T. A memory
    matches `tags` if it carries any of them; `time_range` bounds event_time (inclusive).
    `meta_fn()` gives the RowMeta (read only when tags are asked for)."""
    n = len(arrays)
    mask = np.ones(n, dtype=bool)
    T = params.as_of
    if T is not None:
        mask &= arrays.created_at <= T
        if not params.include_retired:
            mask &= np.isnan(arrays.valid_until) | (arrays.valid_until > T)
    elif not params.include_retired:
        mask &= np.isnan(arrays.valid_until)
    if params.agents is not None:
        mask &= np.isin(arrays.agent, np.array(params.agents, dtype=object))
    if params.kinds is not None:
        mask &= np.isin(arrays.kind, np.array(params.kinds, dtype=object))
    if params.time_range is not None:
        lo, hi = params.time_range
        if lo is not None:
            mask &= arrays.event_time >= lo
        if hi is not None:
            mask &= arrays.event_time <= hi
    if params.protected_only:
        mask &= arrays.protected
    if params.tags is not None:
        wanted = frozenset(params.tags)
        tags = meta_fn().tags
        mask &= np.fromiter((not wanted.isdisjoint(t) for t in tags), dtype=bool, count=n)
    if exclude is not None:
        mask[exclude] = False
    return mask


def ga_rule(arrays, meta) -> np.ndarray:
    """Generative Agents candidates: `seq_event + seq_thought` nodes whose embedding_key lacks
    "idle" (chats are not candidates). A memory without GA attributes is a candidate unless it is
    dialogue (kind "dialogue" or tag "dialogue")."""
    gt = meta.ga_type
    is_ga = gt != ""
    ga_ok = ((gt == "event") | (gt == "thought")) & ~meta.idle
    dialogue = (arrays.kind == "dialogue") | np.fromiter(("dialogue" in t for t in meta.tags), dtype=bool,
                                                          count=len(arrays))
    return np.where(is_ga, ga_ok, ~dialogue)


def last_accessed_at(arrays, as_of: float | None) -> np.ndarray:
    """last_accessed, with created_at where it was never accessed. As of T an access after T is
    history the store no longer holds, so created_at stands in for it."""
    la = np.where(np.isnan(arrays.last_accessed), arrays.created_at, arrays.last_accessed)
    if as_of is not None:
        la = np.where(la > as_of, arrays.created_at, la)
    return la


def ga_order(arrays, meta, rows: np.ndarray, as_of: float | None) -> np.ndarray:
    """`rows` in the order new_retrieve scores them: sorted by last_accessed ascending, a stable
    sort over the store order `seq_event + seq_thought` (each newest first, i.e. node_count
    descending), memories without GA attributes after them in store order."""
    gt = meta.ga_type[rows]
    group = np.where(gt == "event", 0, np.where(gt == "thought", 1, 2))
    nc = meta.node_count[rows]
    newest_first = np.where(group < 2, -np.nan_to_num(nc, nan=-np.inf), 0.0)
    store_order = rows[np.lexsort((rows, newest_first, group))]  # last key is primary
    la = last_accessed_at(arrays, as_of)[store_order]
    return store_order[np.argsort(la, kind="stable")]
