"""The query panel's model, Qt-free: which query is asked (a text, or a memory to query like),
the engine that ranks it, the ranking on screen and the baseline its Δ compares with, and
what a live refresh runs again.

The parameters are not here: they live in `AppState.params` (the panel's widgets write them
and follow `state.params_changed`), and every ranking is made with them. The panel
(app/panels/query_panel.py) shows this model, runs its jobs (`query_job`, `score_job`) on the
window's engine lane and hands their outcome back (`query_done`, `shown`); `ranking_shown`
fires with each ranking shown, `query_changed` when another query is asked.

The baseline is the ranking before the current adjustment began (a burst of setting changes),
or the one the user pinned; a rerun after a write compares with the ranking before the write.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..retrieval import Engine, Params, Result
from ..tasks import Task
from .live import RERANK_S, merged
from .state import AppState, Callbacks, StoreData


class Query(NamedTuple):
    """What is asked: `text`, or `like` the memory whose id is `value`."""

    kind: str    # "text" | "like"
    value: str

    @property
    def text(self) -> str | None:
        return self.value if self.kind == "text" else None


@dataclasses.dataclass(frozen=True)
class Ranked:
    """The last whole ranking, what a live refresh's merge (session.live.query.merged) starts from."""

    result: Result
    ref: float                       # the time its recency was measured from
    clock_at: float | None           # the store clock's fixed time then (None: the wall clock)
    query_vector: np.ndarray | None
    at: float                        # time.monotonic() when it was ranked (RERANK_S)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a query job hands back to the GUI thread."""

    result: Result | None       # None: the query could not be embedded and the preset needs it
    error: str | None           # why the query could not be embedded (a full-text preset still ranks)
    query_vector: np.ndarray | None
    cost: float                 # seconds the job took (paces a live rerun)
    ranked: Ranked | None


class QueryModel:
    """See the module docstring. Engine calls happen on one thread (the panel's engine lane)."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self.query: Query | None = None         # the query of the ranking on screen
        self.engine: Engine | None = None
        self.engine_for: StoreData | None = None
        self.engine_query: Query | None = None  # the query set on `engine` (a new engine has none)
        self.ranks: dict[str, int] | None = None     # id -> rank of the ranking on screen
        self.baseline: dict[str, int] | None = None  # what Δ compares with
        self.pinned = False
        self.adjusting = False
        self.fresh: set[str] = set()            # ids written since the query was run ("★ new")
        self.shown_params: Params | None = None  # the setting of the ranking on screen
        self.asked: Params | None = None        # the setting last asked of the engine
        self.touched: list[np.ndarray] = []     # rows live refreshes added or changed since
        self.ranked: Ranked | None = None       # the last whole ranking
        self.ranking_shown = Callbacks()        # (result): a ranking is on screen
        self.query_changed = Callbacks()        # (query): another query was asked

    # ------------------------------------------------------------ the engine
    def engine_of(self, data: StoreData) -> Engine:
        """The engine for this store (made on the engine thread, once per open; once per step of
        the window's "as of" moment, on the arrays as of then, with the same query)."""
        if self.engine is None or self.engine_for is not data:
            self.engine = Engine(data.store, data.arrays)
            self.engine_for, self.engine_query = data, None
        elif self.engine.arrays is not data.arrays:
            self.engine = self.engine.with_arrays(data.arrays)
        return self.engine

    def store_read(self, data: StoreData | None, again: bool) -> bool:
        """Another store (or the same read again, `again`): the engine goes; True when the query
        on screen is to run again (the same store: the query, its setting and baseline stay)."""
        self.engine, self.engine_for = None, data
        self.touched, self.ranked = [], None  # rows may have moved: the next run is whole
        if again and self.query is not None:
            return True
        self.query = None
        self.ranks = self.baseline = None
        self.fresh = set()
        self.pinned = False
        return False

    def rows_changed(self, delta) -> bool:
        """A live refresh: the engine is made again on the new arrays; True when a query is to run again."""
        self.engine = None
        if self.query is None:
            return False
        self.fresh |= set(self.state.data.arrays.ids[delta.added].tolist())
        self.touched.append(np.concatenate([delta.changed, delta.added]))
        return True

    # ------------------------------------------------------------ the baseline
    def setting_changed(self) -> None:
        """The setting changed: an adjustment begins (unless one is under way), and Δ compares
        with the ranking before it, unless a baseline is pinned."""
        if not self.pinned and not self.adjusting:
            self.baseline = self.ranks
        self.adjusting = True

    def end_adjustment(self) -> None:
        """The next change takes the ranking on screen as its baseline."""
        self.adjusting = False

    def pin(self, on: bool) -> bool:
        """Pin the ranking on screen as the baseline (off: back to "before the current
        adjustment"); whether it is pinned now."""
        self.pinned = bool(on) and self.ranks is not None
        if self.pinned:
            self.baseline = dict(self.ranks)
        return self.pinned

    def baseline_text(self) -> str:
        return "" if self.baseline is None else " · Δ vs pinned baseline" if self.pinned else \
            " · Δ vs before this adjustment"

    # ------------------------------------------------------------ jobs (the engine thread)
    def query_job(self, query: Query, rerun: bool = False) -> Callable[[Task], Outcome]:
        """The job that ranks `query` with the state's setting; `rerun`: the same query again on
        new data (after a write), from the last ranking when only a few rows changed."""
        data = self.state.data
        params = self.asked = self.state.params
        if rerun and not self.pinned and not self.adjusting and self.ranks is not None:
            self.baseline = self.ranks  # Δ shows what the write changed
        touched = np.concatenate(self.touched) if rerun and self.touched else None
        self.touched = []
        base = self.ranked if rerun and self.ranked is not None and self.ranked.result.params == params \
            and time.monotonic() - self.ranked.at < RERANK_S else None
        exclude = data.arrays.index_of(query.value) if query.kind == "like" else None

        def job(task: Task) -> Outcome:
            t0 = time.monotonic()
            if base is not None and touched is not None:
                # only the rows the refresh touched are scored when none of them can enter the top k
                got = merged(base.result, data.store, data.arrays, touched, base.query_vector, base.ref,
                             base.clock_at, exclude)
                if got is not None:  # the next merge starts from it (same reference time, same age)
                    return Outcome(got, None, base.query_vector, time.monotonic() - t0,
                                   dataclasses.replace(base, result=got))
            eng = self.engine_of(data)
            task.check()
            err = self._ask(eng, query)
            task.check()
            try:
                result = eng.score(params)
            except Exception:
                if err is None:
                    raise
                result = None
            vec = eng.query_vector   # the map marks where the query sits
            ranked = None if result is None else Ranked(result, eng.ref_time(params), eng.clock.at, vec,
                                                        time.monotonic())
            return Outcome(result, err, vec, time.monotonic() - t0, ranked)
        return job

    def score_job(self) -> Callable[[Task], Result]:
        """The job that re-ranks the current query with the state's setting (a slider move).
        A live refresh's merge ranks without an engine, so the engine made for the new rows is
        given the query here first."""
        data, query = self.state.data, self.query
        params = self.asked = self.state.params

        def job(task: Task) -> Result:
            eng = self.engine_of(data)
            if query is not None and self.engine_query != query:
                self._ask(eng, query)
                task.check()
            return eng.score(params)
        return job

    def _ask(self, eng: Engine, query: Query) -> str | None:
        """Set `query` on `eng`; why it could not be embedded, if so (a full-text preset still ranks)."""
        self.engine_query = query
        try:
            eng.set_query(query.value) if query.kind == "text" else eng.set_query(like=query.value)
        except Exception as e:  # noqa: BLE001 - e.g. EmbedderUnavailable; FTS-only presets still work
            return str(e)
        return None

    # ------------------------------------------------------------ outcomes (the GUI thread)
    def query_done(self, query: Query, outcome: Outcome, rerun: bool) -> None:
        self.ranked = outcome.ranked
        if query != self.query:
            self.query = query
            self.query_changed.emit(query)
        self.state.query_text = query.text  # e.g. the Diff panel's top-k query
        if not rerun:  # a new query: nothing to compare with yet
            self.ranks = self.baseline = None
            self.fresh = set()
            self.pinned = False

    def failed(self) -> None:
        self.ranked = None  # the rows touched meanwhile were not scored: the next run is whole

    def shown(self, result: Result, params: Params) -> None:
        """`result`, ranked with `params`, is on screen."""
        self.ranks = {m: i for i, m in enumerate(result.ids, 1)}
        self.shown_params = params
        self.ranking_shown.emit(result)
