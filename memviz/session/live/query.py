"""A query on screen after a live refresh: re-score only the rows the refresh touched.

Under a preset whose scores are `row_local` (memviz.retrieval.presets.base.Preset: a memory's
score depends on its own values, the query and the reference time only — no normalisation over
the candidates, no rank), for the same reference time the top k after a refresh are the old top
k unless a touched row enters them: `merged(...)` scores the added and changed rows alone (an
Engine on those rows, with the reference time of the ranking shown) and, when none of them
reaches the k-th score and no member of the top k was touched, returns the same ranking with
those rows' scores filled in `all_scores` - what a whole query at that reference time gives.
Anything else (a preset that is not row-local, a touched top-k member, a row that may enter,
fewer than k results, a store clock that the new rows moved) answers None: the caller runs the
whole query (off the GUI thread, paced). A wall-clock ranking ages: the caller re-ranks it whole
every RERANK_S.
"""
from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from memviz.retrieval import Engine
from memviz.retrieval.presets import preset
from memviz.store.arrays import MemoryArrays
from memviz.store.clock import store_clock

RERANK_S = 30.0  # a wall-clock ranking kept by merges is ranked whole again after this long


def take(a: MemoryArrays, rows: np.ndarray) -> MemoryArrays:
    """The arrays of `rows` only (copies; a new id index)."""
    cols = {f.name: getattr(a, f.name)[rows] for f in fields(MemoryArrays)
            if isinstance(getattr(a, f.name), np.ndarray)}
    return replace(a, _index=None, **cols)


def merged(result, store, arrays: MemoryArrays, rows: np.ndarray, query_vector, ref: float, clock_at,
           exclude: int | None = None):
    """`result` (a Result of a row-local preset, ranked at reference time `ref` on the arrays before the
    refresh; `clock_at`: the store clock's fixed time then, None on the wall clock) brought to
    `arrays` after a refresh that added or changed `rows`; None when it cannot be (see the
    module docstring). `exclude`: the row queried by example (never a result)."""
    params = result.params
    rows = np.unique(np.asarray(rows, np.int64))
    if params is None or not preset(params.preset).row_local or params.as_of is not None or query_vector is None \
            or len(result.rows) < params.k or np.isin(result.rows, rows).any() \
            or (exclude is not None and exclude in rows) or not arrays.has_embedding[rows].all():
        return None
    now_clock = store_clock(store, arrays)
    if now_clock.at != clock_at:
        return None  # the store's clock moved (e.g. its newest memory): every recency moved
    eng = Engine(store, take(arrays, rows), now=ref)
    eng.set_query(vector=query_vector)
    sub = eng.score(params.replace(k=len(rows)))
    if len(sub.score) and float(np.max(sub.score)) >= float(result.score[-1]):
        return None  # one of them may enter the top k (ties included): rank them all
    n_old = len(result.all_scores)
    scores = np.full(len(arrays), np.nan)
    scores[:n_old] = result.all_scores[:len(arrays)]
    was = np.isfinite(scores[rows])
    scores[rows] = np.nan
    scores[rows[sub.rows]] = sub.score
    now = np.isfinite(scores[rows])
    return replace(result, all_scores=scores,
                   candidates=result.candidates + int(now.sum()) - int(was.sum()))
