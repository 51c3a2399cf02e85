"""Plain-Python application state shared by every panel (no Qt here).

Panels never talk to each other: they change the state and listen to its change
callbacks. Rows are indices into `StoreData.arrays` (store order); ids survive a
reload, so the selection is kept by id when the arrays are re-read.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memviz.retrieval.params import Params
from memviz.session.buffers import ColumnGrowth, with_room
from memviz.store import MemoryArrays, Provenance
from memviz.store.changes import ChangeToken, token_now
from memviz.store.interface import MemoryStore

PREVIEW_CHARS = 240


def factorize(values) -> tuple[list[str], np.ndarray]:
    """Distinct values (in order of first appearance) and each row's index into them: dict
    passes in C (dict.fromkeys, then map over the dict's own lookup: no Python frame per row),
    several times faster than np.unique's sort of 100k strings."""
    values = values.tolist() if isinstance(values, np.ndarray) else values  # a list iterates faster
    index = {v: i for i, v in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(index.__getitem__, values), np.int64, count=len(values))
    return [str(v) for v in index], codes


def category_codes(values, names: list[str]) -> np.ndarray:
    """Integer code of each value in `names` (unknown values get len(names)). `values` is a
    column, or what factorize() already made of it."""
    seen, codes = values if isinstance(values, tuple) else factorize(values)
    lookup = {n: i for i, n in enumerate(names)}
    return np.array([lookup.get(u, len(names)) for u in seen], np.int64)[codes] if len(codes) else codes


class Callbacks:
    """A list of callables fired in order; a minimal signal that needs no Qt."""

    def __init__(self) -> None:
        self._fns: list[Callable] = []

    def connect(self, fn: Callable) -> None:
        self._fns.append(fn)

    def emit(self, *args) -> None:
        for fn in list(self._fns):
            fn(*args)


@dataclass
class StoreData:
    """What the panels read about one open store, loaded once per open/reload."""

    store: MemoryStore
    arrays: MemoryArrays             # read with previews (arrays.preview): see `previews`
    provenance_: Provenance | None   # read on first use (the graph job, or the detail panel)
    counts: dict
    kinds: list[str] = field(default_factory=list)   # distinct kinds, most frequent first
    agents: list[str] = field(default_factory=list)
    kind_codes: np.ndarray | None = None  # int: index into kinds, per row
    agent_codes: np.ndarray | None = None
    map_start_: tuple | None = None       # (coords, method): memviz.layout.first_map, read on first use
    token: ChangeToken | None = None      # where a live refresh reads changes from (memviz.store.changes)
    full_reason: str | None = None        # set on a re-read a delta could not describe: why
    #: columns a live refresh is copying into larger buffers ahead of need (session/buffers.py)
    growth: ColumnGrowth | None = field(default=None, init=False, repr=False, compare=False)
    #: the values read on first use (provenance_, map_start_), by whichever thread asks first
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind_codes is None:
            self.kind_codes = category_codes(self.arrays.kind, self.kinds)
        if self.agent_codes is None:
            self.agent_codes = category_codes(self.arrays.agent, self.agents)

    @property
    def provenance(self) -> Provenance:
        """Source and supersede links; read from the store once, by whichever thread asks first."""
        with self._lock:
            if self.provenance_ is None:
                self.provenance_ = self.store.provenance()
            return self.provenance_

    def add_links(self, links) -> None:
        """New rows' links, (id, source ids, superseded ids), into the provenance if it was read
        (if not, it holds them when it is); a link to an id the arrays lack is dangling."""
        with self._lock:
            if self.provenance_ is not None:
                index_of = self.arrays.index_of
                for memory_id, sources, olds in links:
                    self.provenance_.add(memory_id, sources, olds, lambda i: index_of(i) is not None)

    @property
    def previews(self) -> np.ndarray:
        """object: the first PREVIEW_CHARS characters of each content, on one line ("" if not read)."""
        if self.arrays.preview is None:
            self.arrays.preview = np.full(len(self.arrays), "", dtype=object)
        return self.arrays.preview

    @property
    def map_start(self) -> tuple[np.ndarray, str]:
        """What the map shows at once (cached UMAP or PCA); load_store_data computes it off the GUI thread."""
        with self._lock:
            if self.map_start_ is None:
                from memviz.layout import first_map
                self.map_start_ = first_map(self.store, self.arrays)
            return self.map_start_

    @property
    def model(self) -> tuple[str | None, int]:
        """(embedding model, dimension) of the arrays' matrix."""
        a = self.arrays
        return (a.embedding_model, a.dim) if a.has_embedding.any() else (None, 0)

    @property
    def n(self) -> int:
        return len(self.arrays)

    def rows_of(self, ids) -> np.ndarray:
        idx = [self.arrays.index_of(i) for i in ids]
        return np.array([i for i in idx if i is not None], dtype=np.int64)


def load_store_data(store: MemoryStore, snapshot: bool = False) -> StoreData:
    """Read what the window shows first; safe to run off the GUI thread. One scan of the store
    (previews included), or its snapshot when opening (`snapshot`); counts come from the arrays;
    provenance is read later, on first use."""
    token = token_now(store)  # before the scan: a row written between is read twice, never missed
    arrays = store.arrays(preview=PREVIEW_CHARS, snapshot=snapshot)
    kind, agent = factorize(arrays.kind), factorize(arrays.agent)  # once each, for counts and codes
    counts = counts_of(arrays, kind, agent)
    kinds = sorted(counts["by_kind"], key=lambda k: -sum(counts["by_kind"][k]))
    agents = sorted(counts["by_agent"], key=lambda a: -sum(counts["by_agent"][a]))
    data = StoreData(store=store, arrays=arrays, provenance_=None, counts=counts, kinds=kinds, agents=agents,
                     # (with spare rows, like the columns: a live refresh's new codes are written below them)
                     kind_codes=with_room(category_codes(kind, kinds)), agent_codes=with_room(category_codes(agent, agents)),
                     token=token)
    data.map_start  # noqa: B018 - computed here, in the loading thread
    arrays.settle()  # the JSON check beside the read ends here, not in the table's first paint
    return data


def open_store_data(store: MemoryStore) -> StoreData:
    """load_store_data for opening a store: a large unchanged store comes from its snapshot."""
    return load_store_data(store, snapshot=True)


def counts_of(arrays: MemoryArrays, kind: tuple | None = None, agent: tuple | None = None,
              rows: np.ndarray | None = None) -> dict:
    """Store.counts()'s figures from the arrays: totals, and [live, retired] per kind and agent
    (`kind`/`agent`: factorize() of those columns, if already made); `rows`: a mask of the rows
    counted (the memories that existed at a moment), else all of them."""
    counted = np.ones(len(arrays), bool) if rows is None else np.asarray(rows, bool)
    live = arrays.live & counted
    out = {"total": int(counted.sum()), "live": int(live.sum()), "retired": int((counted & ~live).sum()),
           "by_kind": {}, "by_agent": {}}
    for key, col, done in (("by_kind", arrays.kind, kind), ("by_agent", arrays.agent, agent)):
        if not len(col):
            continue
        names, codes = done or factorize(col)
        n_live = np.bincount(codes[live], minlength=len(names))
        n_all = np.bincount(codes[counted], minlength=len(names))
        out[key] = {n: [int(a), int(t - a)] for n, a, t in sorted(zip(names, n_live, n_all)) if t}
    return out


def counts_shifted(counts: dict, names: tuple[list[str], list[str]], before: tuple, after: tuple) -> dict:
    """`counts` (counts_of's figures) after some rows changed, without a pass over every row (a
    live refresh): `before` and `after` are (kind codes, agent codes, live) of those rows before
    and after (before: empty arrays for new rows). Codes index `names` = (kinds, agents)."""
    out = {"total": counts["total"] + len(after[2]) - len(before[2]),
           "live": counts["live"] + int(np.sum(after[2])) - int(np.sum(before[2]))}
    out["retired"] = out["total"] - out["live"]
    for key, col, known in (("by_kind", 0, names[0]), ("by_agent", 1, names[1])):
        d = {n: list(v) for n, v in counts.get(key, {}).items()}
        for (codes, live), sign in (((before[col], before[2]), -1), ((after[col], after[2]), 1)):
            for code, is_live in zip(np.asarray(codes).tolist(), np.asarray(live).tolist()):
                d.setdefault(known[code], [0, 0])[0 if is_live else 1] += sign
        out[key] = {n: v for n, v in sorted(d.items()) if v[0] or v[1]}
    return out


class AppState:
    """The current store, selection, time filter, retired visibility, retrieval parameters,
    query result and the "as of" moment the window shows the store at.

    Callbacks (arguments):
      data_changed(data: StoreData | None)          a store was opened, re-read whole or closed
                                                    (`reloaded` is True while a re-read of the same
                                                    store fires it: keep the view)
      rows_changed(delta: RowsDelta)                a live refresh patched `data` in place: rows
                                                    appended / changed / retired / restored
                                                    (memviz.session.live)
      selection_changed(rows: ndarray, current: int | None, source)  `source` is who selected
      time_filter_changed(range: tuple[float, float] | None)
      show_retired_changed(show: bool)
      params_changed(params: Params, source)         the retrieval parameters (`params`) changed
      result_changed(result)                         a retrieval Result or None
      as_of_changed(T: float | None)                 the window shows the store as of T (None: now)
    """

    def __init__(self) -> None:
        self.data: StoreData | None = None
        self.selection = np.zeros(0, dtype=np.int64)
        self.current: int | None = None
        self.time_range: tuple[float, float] | None = None
        self.show_retired = True
        self.result: Any = None
        self.query_vector: np.ndarray | None = None  # what the map draws as the query marker
        self.query_text: str | None = None  # the text of the query being ranked (None: by example, or none)
        self._params = Params()  # the query setting without the time filter (that is `time_range`)
        self.reloaded = False  # see data_changed
        self.data_changed = Callbacks()
        self.rows_changed = Callbacks()
        self.selection_changed = Callbacks()
        self.time_filter_changed = Callbacks()
        self.show_retired_changed = Callbacks()
        self.params_changed = Callbacks()
        self.result_changed = Callbacks()
        self.as_of: float | None = None
        self.as_of_view = None  # memviz.context.AsOfView of `as_of`, None when showing now
        self._past = AsOfCursor()
        self.as_of_changed = Callbacks()

    # ------------------------------------------------------------ store
    def set_data(self, data: StoreData | None) -> None:
        """Install newly loaded data, keeping the selection (by id) where the memories still exist."""
        keep = [] if self.data is None or data is None else [self.data.arrays.ids[i] for i in self.selection]
        cur_id = None if self.data is None or self.current is None else self.data.arrays.ids[self.current]
        same_store = self.data is not None and data is not None and self.data.store.path == data.store.path
        was_as_of = self.as_of
        self.data = data
        self.result = None
        if not same_store:  # a re-read of the same store keeps the query (it runs again on the new data)
            keep, cur_id, self.time_range = [], None, None
            self.query_vector = None
            self.query_text = None
            self.as_of = None
        self.as_of_view = self._past.show(data, self.as_of)  # a reload keeps the moment shown
        rows = data.rows_of(keep) if data is not None else np.zeros(0, np.int64)
        cur = data.arrays.index_of(cur_id) if data is not None and cur_id is not None else None
        self.selection, self.current = rows, cur
        self.reloaded = same_store
        try:
            self.data_changed.emit(data)
        finally:
            self.reloaded = False
        self.result_changed.emit(None)
        self.selection_changed.emit(self.selection, self.current, None)
        if self.as_of != was_as_of:
            self.as_of_changed.emit(self.as_of)

    def take_rows(self, arrays: MemoryArrays) -> None:
        """A live refresh (memviz.session.live) made `arrays` from the loaded arrays: rows appended
        or patched, same indices. The panels are shown them, or, while the window shows a moment
        T, the view of T made from them (every row, the new ones hidden as created after T). The
        caller fires rows_changed."""
        self.as_of_view = self._past.take(self.data, arrays, self.as_of)

    # ------------------------------------------------------------ selection
    def select(self, rows, source=None, current: int | None = -1) -> None:
        """Select rows (indices into the arrays). `current` defaults to the first row."""
        rows = np.unique(np.asarray(rows, dtype=np.int64)) if len(rows) else np.zeros(0, np.int64)
        if current == -1:  # keep the current row if still selected, else the first one
            current = self.current if self.current is not None and self.current in rows else (
                int(rows[0]) if len(rows) else None)
        if np.array_equal(rows, self.selection) and current == self.current:
            return
        self.selection, self.current = rows, current
        self.selection_changed.emit(rows, current, source)

    def select_ids(self, ids, source=None) -> None:
        if self.data is not None:
            rows = self.data.rows_of(ids)
            self.select(rows, source, current=int(rows[0]) if len(rows) else None)

    @property
    def selected_ids(self) -> list[str]:
        return [] if self.data is None else [self.data.arrays.ids[i] for i in self.selection]

    # ------------------------------------------------------------ filters
    def set_time_range(self, rng: tuple[float, float] | None) -> None:
        if rng is not None:
            rng = (float(min(rng)), float(max(rng)))
        if rng != self.time_range:
            self.time_range = rng
            self.time_filter_changed.emit(rng)
            self.params_changed.emit(self.params, None)  # the time filter is part of every query

    def set_show_retired(self, show: bool) -> None:
        if bool(show) != self.show_retired:
            self.show_retired = bool(show)
            self.show_retired_changed.emit(self.show_retired)

    def visible_mask(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Rows passing the time filter and retired visibility (what the panels show); `rows`:
        of those rows only (a live refresh's few, without a pass over every row)."""
        if self.data is None:
            return np.zeros(0, bool)
        a = self.data.arrays
        rows = slice(None) if rows is None else np.asarray(rows, np.int64)
        valid_until, event_time = a.valid_until[rows], a.event_time[rows]
        mask = np.ones(len(valid_until), bool)
        if not self.show_retired:
            mask &= np.isnan(valid_until)
        if self.time_range is not None:
            lo, hi = self.time_range
            mask &= (event_time >= lo) & (event_time <= hi)
        if self.as_of_view is not None:
            mask &= self.as_of_view.visible[rows]
        return mask

    # ------------------------------------------------------------ retrieval
    @property
    def params(self) -> Params:
        """The retrieval parameters every query, reflection and consolidation uses: the query
        panel's setting with the time filter as `time_range`."""
        return self._params.replace(time_range=self.time_range, as_of=self.as_of)

    def set_params(self, params: Params, source=None) -> None:
        """Change the retrieval parameters (`source`: who did, so a view can skip its own echo).
        Their `time_range` is the time filter: setting it here filters the other panels too."""
        own = params.replace(time_range=None, as_of=None)  # the moment is the window's (`set_as_of`)
        if own != self._params:
            self._params = own
            self.params_changed.emit(self.params, source)
        if params.time_range != self.time_range:
            self.set_time_range(params.time_range)
        if params.as_of != self.as_of:
            self.set_as_of(params.as_of)

    def set_result(self, result, query_vector: np.ndarray | None = None) -> None:
        self.result = result
        self.query_vector = query_vector
        self.result_changed.emit(result)

    # ------------------------------------------------------------ as of (time travel)
    def set_as_of(self, T: float | None) -> None:
        """Show the store as it was at T (epoch seconds; None: as it is now). The store is not
        touched: `data.arrays` becomes the as-of view's arrays (same rows), memories created
        after T leave `visible_mask()`, and the retrieval parameters carry `as_of`."""
        T = None if T is None else float(T)
        if self.data is None:
            T = None
        if T == self.as_of:
            return
        self.as_of = T
        self.as_of_view = self._past.show(self.data, T)
        # the query follows the moment; told first, so its engine scores (off the GUI thread)
        # while the panels redraw
        self.params_changed.emit(self.params, None)
        self.as_of_changed.emit(T)

    @property
    def loaded_arrays(self) -> MemoryArrays | None:
        """The arrays as the store is now, whatever moment the panels show."""
        return None if self.data is None else self._past.loaded(self.data)

    def shown_counts(self) -> dict:
        """`data.counts` (totals, [live, retired] per kind and agent) of the moment shown: as of
        T, of the memories that existed then, with their kind, agent and status then."""
        data, view = self.data, self.as_of_view
        if data is None or view is None:
            return {} if data is None else data.counts
        a, loaded = data.arrays, self.loaded_arrays
        kind = (data.kinds, data.kind_codes) if a.kind is loaded.kind else None  # else changed since T: coded again
        agent = (data.agents, data.agent_codes) if a.agent is loaded.agent else None
        return counts_of(a, kind, agent, rows=view.visible)

    def exists_mask(self) -> np.ndarray:
        """Rows that existed at the moment shown (all of them when showing now)."""
        if self.data is None:
            return np.zeros(0, bool)
        return self.as_of_view.visible if self.as_of_view is not None else np.ones(self.data.n, bool)

    def timeline(self):
        """The open store's memviz.context.Timeline (its audit log, read once per load)."""
        return None if self.data is None else self._past.timeline(self.data)


class AsOfCursor:
    """Which arrays a StoreData shows: the loaded ones, or an as-of view of them. Keeps the
    loaded arrays and the Timeline per load, so stepping the moment costs one Timeline.at."""

    def __init__(self) -> None:
        self._data: StoreData | None = None
        self._loaded: MemoryArrays | None = None
        self._timeline = None

    def _own(self, data: StoreData) -> None:
        if data is not self._data:
            self._data, self._loaded, self._timeline = data, data.arrays, None

    def loaded(self, data: StoreData) -> MemoryArrays:
        self._own(data)
        return self._loaded

    def timeline(self, data: StoreData):
        self._own(data)
        if self._timeline is None:
            from memviz.context import Timeline  # read on the first step into the past
            self._timeline = Timeline(data.store, self._loaded)
        return self._timeline

    def take(self, data: StoreData, arrays: MemoryArrays, T: float | None):
        """`arrays` are the loaded ones now (a live refresh grew them): the Timeline is made again
        on first use (it maps audit entries to rows of the arrays it was made on, and the refresh
        may have brought entries of its own); shown as `show` does."""
        self._data, self._loaded, self._timeline = data, arrays, None
        return self.show(data, T)

    def show(self, data: StoreData | None, T: float | None):
        """Point `data.arrays` at the view of T (or back at the loaded arrays); the view or None."""
        if data is None:
            return None
        self._own(data)
        if T is None:
            data.arrays = self._loaded
            return None
        view = self.timeline(data).at(T)
        data.arrays = view.arrays
        return view
