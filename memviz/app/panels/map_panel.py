"""Map: a 2-D projection of the embeddings, PCA at once, UMAP swapped in when computed.

Every embedded memory is one point (no sampling): one PointsItem fed numpy arrays,
colours from a few shared brushes. UMAP runs as a background job with progress and
cancel; finished layouts are cached in the store (memviz.layout) so a reopen is instant.
The current query is drawn as a marker at the similarity-weighted centre of its nearest
memories, and its top-k are ringed. Memories with identical vectors sit on one spot, drawn
larger by their count; the regions of the map are named by their distinctive words
(memviz.layout.labels, computed on a worker and cached in the store with the layout).
"""
from __future__ import annotations

import time
import traceback

import apsw
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QButtonGroup, QComboBox, QGraphicsItem, QLabel, QSizePolicy, QToolButton

from memviz.app.plain_text import as_html, plain_tooltip
from memviz.app.plots import style
from memviz.app.plots.points_item import PointsItem
from memviz.app.plots.scatter_panel import ScatterPanel
from memviz.app.workers import PacedCall, Workers
from memviz.blas import one_blas_thread
from memviz.session.buffers import grow, with_room
from memviz.session.state import AppState, StoreData
from memviz.store.errors import StoreError

COLOR_BY = ["kind", "agent", "importance", "age", "score"]
UMAP_MIN_POINTS = 20
UMAP_DELAY_MS = 1500
RECOMPUTE_SHARE = 0.1  # past this share of points placed by neighbours, the map offers a recompute
# Placing new points reads up to PLACE_ANCHORS rows of the embedding matrix (a k-NN product, nearly
# as much for 1 new point as for 40), so beside a busy agent it runs in batches: at most every
# PLACE_GAP_S, and never more than PLACE_SHARE of a core (its own cost paces it).
PLACE_GAP_S = 2.0
PLACE_SHARE = 0.05
PLACE_ANCHORS = 16_384  # a new point's neighbours are searched among at most this many laid-out ones
                        # (twice a sampled layout's own ANCHORS): a batch costs the same at any size


def layout_api():
    """The memviz.layout module (imported on first use: it brings scipy)."""
    import memviz.layout as layout
    return layout


class MapPanel(ScatterPanel):
    """layout_changed(method): "PCA" or "UMAP" coordinates are now shown."""

    layout_changed = Signal(str)

    def __init__(self, state: AppState, workers: Workers, parent=None) -> None:
        super().__init__(state, parent)
        self.workers = workers
        self.plot.showGrid(x=False, y=False)
        self.plot.getAxis("bottom").hide()
        self.plot.getAxis("left").hide()
        self.plot.setAspectLocked(False)
        self.color_by = QComboBox()
        self.color_by.addItems(COLOR_BY)
        self.tools = QButtonGroup(self)
        bar = []
        for name, tip in (("Pan", "drag to pan, wheel to zoom"), ("Rectangle", "drag a rectangle to select (Shift+drag)"),
                          ("Lasso", "draw around points to select; Ctrl adds to the selection")):
            b = QToolButton(text=name, checkable=True)
            b.setToolTip(tip)
            self.tools.addButton(b)
            bar.append(b)
        bar[0].setChecked(True)
        self.tools.buttonClicked.connect(lambda b: setattr(self.vb, "tool", {"Pan": "pan", "Rectangle": "rect",
                                                                             "Lasso": "lasso"}[b.text()]))
        self.umap_button = QToolButton(text="UMAP")
        self.umap_button.setToolTip("Compute a UMAP layout in the background")
        self.umap_button.clicked.connect(self.start_umap)
        # how the map shown was made, on a line of its own under the map (the toolbar is full at the
        # panel's usual width: there a sampled layout's sentence was cut to "UMA")
        self.method_label = style.ThemeLabel(pick=lambda t: t.label_text_faint, wrap=True)  # plain: an error may quote a path
        self.method_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.toolbar.addWidget(QLabel("colour by"))
        self.toolbar.addWidget(self.color_by)
        for b in bar:
            self.toolbar.addWidget(b)
        self.toolbar.addWidget(self.umap_button)
        self.labels_button = QToolButton(text="Labels", checkable=True, checked=True)
        self.labels_button.setToolTip("Name the map's regions by the words that set their memories apart")
        self.labels_button.toggled.connect(self._labels_toggled)
        self.vb.sigRangeChanged.connect(self._declutter)  # a zoom changes which labels fit
        self.vb.sigResized.connect(self._declutter)       # and so does a resize (the range stays, the pixels not)
        self.toolbar.addWidget(self.labels_button)
        self.toolbar.addStretch(1)
        self.layout().addWidget(self.method_label)
        self.region_labels: list = []            # memviz.layout.labels.RegionLabel of the map shown
        self.label_items: list[pg.TextItem] = []
        self.copies: np.ndarray | None = None    # per row: memories sharing its vector (1 = unique)
        self._copies_for = None
        self.topk = PointsItem()
        self.topk.setZValue(8)
        self.marker = PointsItem()
        self.marker.setZValue(12)
        self.plot.addItem(self.topk)
        self.plot.addItem(self.marker)
        self.legend = pg.LegendItem(offset=(10, 10))
        self.legend.setParentItem(self.vb)
        self.legend.setCacheMode(QGraphicsItem.DeviceCoordinateCache)  # repainted from a picture under new points
        self._legend_rows: list[tuple] = []  # (brush, text) the legend should show
        self._legend_key: list | None = None  # what it shows
        self.coords: np.ndarray | None = None   # (n, 2) for every row; NaN where not embedded
        self._shown_arrays = None                # the arrays `coords` was made for (rows matched by id)
        self._layout_id = 0                      # bumped by every new set of coordinates (_set_coords)
        self._laid_out_n = 0                     # rows when the coordinates were set (later rows: new)
        self._qpos = (None, None)               # (query/coords identity, marker position)
        self._result_timer = QTimer(self, singleShot=True, interval=80, timeout=self._apply_result)
        self._umap_timer = QTimer(self, singleShot=True, interval=UMAP_DELAY_MS, timeout=self._umap_after_open)
        self._umap_pending: tuple = (None, 0)
        self._live = PacedCall(self._live_redraw, self)  # live redraws: coalesced and paced
        self._restyle: list = []  # rows whose marker changed since the last live redraw (a memory retired)
        self._whole = False       # ... or whether everything is to be drawn again
        # placing new points: a job on the "place" lane, in batches (PLACE_GAP_S, PLACE_SHARE)
        self._placing = PacedCall(self._start_placing, self, share=PLACE_SHARE, max_ms=None,
                                  min_ms=int(PLACE_GAP_S * 1000), job=True)
        self.method = ""
        self._cache_error = ""  # why the UMAP shown was not cached, if it was not
        self.placed = 0  # points placed by their neighbours since the layout was computed (rows added since)
        self.auto_umap = True
        self.color_by.currentIndexChanged.connect(lambda: self.redraw())
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.show_retired_changed.connect(lambda _s: self.redraw())
        state.time_filter_changed.connect(lambda _r: self.redraw())
        state.as_of_changed.connect(lambda _t: self.redraw())  # points and colours as of the moment shown
        state.result_changed.connect(self._on_result)
        self.restyle()

    def restyle(self) -> None:
        super().restyle()
        t = self.theme
        self.legend.setBrush(pg.mkBrush(style.color(t.paper, 200)))
        self.legend.setLabelTextColor(t.label_text)
        self._legend_key = None  # rebuilt with the new colours
        for item in self.label_items:
            self._colour_label(item)
        self.redraw()

    def _colour_label(self, item: pg.TextItem) -> None:
        item.setColor(self.theme.label_text)
        item.fill = pg.mkBrush(style.color(self.theme.paper, 170))
        item.update()

    # ------------------------------------------------------------ layouts
    def _on_data(self, data: StoreData | None) -> None:
        if self.state.reloaded and self.coords is not None and self._shown_arrays is not None:
            # the same store read again whole: the points stay where they were (by id), the view too,
            # and a running UMAP goes on (its result is matched by id)
            self._set_coords(self._by_id(self._shown_arrays, self.coords), self.method, fit=False, placed=self.placed)
            self._place_missing()
            return
        self.workers.cancel("umap")
        self.workers.cancel("place")
        self._placing.cancel()
        self.coords, self.method, self.placed = None, "", 0
        self.copies, self._copies_for = None, None
        if data is None:
            self.redraw(fit=True)
            return
        coords, method = data.map_start
        self._set_coords(with_room(coords), method)  # (a copy with spare rows: refreshes append below)
        n_emb = int(data.arrays.has_embedding.sum())
        self.umap_button.setEnabled(n_emb >= UMAP_MIN_POINTS)
        if not method.startswith("UMAP") and n_emb >= UMAP_MIN_POINTS:
            # once the store is on screen: starting the UMAP process (numba compiling for ~30 s)
            # beside the first paint would slow the paint on a two-core machine
            self._umap_pending = (data, n_emb)
            self._umap_timer.start()  # owned by the panel: it dies with it

    def _umap_after_open(self) -> None:
        (data, n_emb), self._umap_pending = self._umap_pending, (None, 0)
        now = self.state.data
        if data is None or now is None or now.store is not data.store or self.method.startswith("UMAP") \
                or not self.window().isVisible():
            return  # another store since, UMAP already there, or the window was closed
        layout_api().warm_up(n_emb)  # the worker process compiles now, not when UMAP is asked for
        if self.auto_umap and self.umap_button.isEnabled():
            self.start_umap()

    def _set_coords(self, coords: np.ndarray, method: str, fit: bool = True, placed: int = 0) -> None:
        self.coords, self.method, self.placed = coords, method, placed
        self._layout_id += 1
        self._laid_out_n = 0 if self.state.data is None else self.state.data.n  # rows beyond are new since
        self._shown_arrays = None if self.state.data is None else self.state.data.arrays
        self._show_method()
        self.redraw(fit=fit)
        self.layout_changed.emit(method)
        self._start_labels()

    # ------------------------------------------------------------ copies and region labels
    def _start_labels(self) -> None:
        """Count identical vectors (once per store) and name the regions of the layout shown,
        on a worker; the labels come from the store's cache when this layout was named before."""
        from memviz.layout import labels as L
        from memviz.layout.distinct import distinct_rows

        self._set_label_items([])
        data, coords = self.state.data, self.coords
        if data is None or coords is None:
            return
        arrays, previews = data.arrays, data.previews
        need_copies = self._copies_for is not data
        cached = data.store.meta(L.META_KEY)  # one row, read here: the store's thread

        def job(ticket):
            copies = None
            if need_copies:
                copies = np.ones(len(arrays), np.int64)
                copies[arrays.has_embedding] = distinct_rows(arrays.embedding[arrays.has_embedding]).copies
            ticket.check()
            key = L.fingerprint(coords, previews)
            hit = L.labels_from_meta(cached, key)
            made = hit is None
            if made:
                hit = L.map_labels(coords, previews, cancelled=lambda: ticket.cancelled)
            ticket.check()
            return copies, key, hit, made

        def done(out):
            copies, key, found, made = out
            if self.state.data is not data or self.coords is not coords:
                return
            if copies is not None:
                self.copies, self._copies_for = copies, data
                if (copies > 1).any():
                    self.redraw()
            if made:
                try:
                    L.store_labels(data.store, key, found)
                except (StoreError, apsw.ThreadingViolationError):
                    pass  # busy (another process, or a reload on a worker thread): named again next time
            self._set_label_items(found)
        self.workers.submit("map labels", job, on_done=done)

    def _set_label_items(self, found: list) -> None:
        for item in self.label_items:
            self.plot.removeItem(item)
        self.region_labels, self.label_items = list(found), []
        font = QFont()
        font.setBold(True)
        ok = np.isfinite(self.coords).all(axis=1) if self.coords is not None else np.zeros(0, bool)
        lo, hi = (self.coords[ok].min(axis=0), self.coords[ok].max(axis=0)) if ok.any() else (np.zeros(2), np.ones(2))
        span = np.where(hi > lo, hi - lo, 1.0)
        for lb in sorted(self.region_labels, key=lambda r: -r.size):  # larger regions claim their place first
            # anchored by where the region lies, so a label at the map's edge reads inwards, whole
            fx, fy = np.clip((np.array([lb.x, lb.y]) - lo) / span, 0.0, 1.0)
            item = pg.TextItem(lb.text, anchor=(float(fx), float(1 - fy)))
            self._colour_label(item)
            item.region = lb
            item.setFont(font)
            item.setToolTip(f"{lb.size:,} memories in this region; its most distinctive words")
            item.setPos(lb.x, lb.y)
            item.setZValue(20)
            self.plot.addItem(item, ignoreBounds=True)
            self.label_items.append(item)
        self._declutter()

    def _declutter(self, *_) -> None:
        """Show each label unless it would cover a larger region's label or the legend (on screen,
        so zooming in brings the hidden ones back)."""
        on = self.labels_button.isChecked()
        taken = [self.legend.sceneBoundingRect()] if self.legend.isVisible() and self.legend.items else []
        for item in self.label_items:
            rect = self._label_rect(item)
            free = not any(rect.intersects(t) for t in taken)
            item.setVisible(on and free)
            if on and free:
                taken.append(rect)

    def _label_rect(self, item: pg.TextItem) -> QRectF:
        """Where a region's label is drawn, in scene pixels, from its anchor and its text's size (the
        TextItem's own transform follows the view only when painted: measured between a resize and
        the next paint, it is stretched)."""
        size = item.textItem.boundingRect().size()
        at = self.vb.mapViewToScene(item.pos())
        return QRectF(at.x() - item.anchor.x() * size.width(), at.y() - item.anchor.y() * size.height(),
                      size.width(), size.height())

    def _labels_toggled(self, on: bool) -> None:
        self._declutter()

    def hover_text(self, row: int) -> str:
        text = super().hover_text(row)
        n = int(self.copies[row]) if self.copies is not None and row < len(self.copies) else 1
        return text + (f"\n×{n:,} memories share this vector (drawn as one, larger)" if n > 1 else "")

    def _show_method(self) -> None:
        """The layout's name, and how many points were placed by neighbours rather than laid out;
        past RECOMPUTE_SHARE the UMAP button offers a recompute."""
        n = 0 if self.coords is None else int(np.isfinite(self.coords[:, 0]).sum())
        note = f" · {self.placed:,} of {n:,} placed by neighbours" if self.placed else ""
        self.method_label.setText(f"{self.method}{note}")
        # the label may be cut short: the tooltip says it whole, and how "placed by neighbours" works
        from memviz.layout.sampled import PLACED, method_detail  # (numpy only)
        how = method_detail() if PLACED in self.method else ""  # a sampled layout
        self.method_label.setToolTip(plain_tooltip("\n".join(t for t in (self.method + note, how, self._cache_error) if t)))
        many = n and self.placed > RECOMPUTE_SHARE * n
        self.umap_button.setText("Recompute UMAP" if many else "UMAP")

    def _by_id(self, old_arrays, old_coords: np.ndarray) -> np.ndarray:
        """`old_coords` (rows of `old_arrays`) moved to the rows of the current arrays, by id; NaN
        for memories that were not there."""
        a = self.state.data.arrays
        out = with_room(np.full((len(a), 2), np.nan, np.float32))  # (spare rows: refreshes append below)
        if old_arrays is a or (len(old_arrays) <= len(a) and np.array_equal(old_arrays.rowid, a.rowid[:len(old_arrays)])
                               and list(old_arrays.ids[-1:]) == list(a.ids[len(old_arrays) - 1:len(old_arrays)])):
            out[:len(old_coords)] = old_coords[:len(a)]  # rows only appended since: same indices
            return out
        rows = np.array([-1 if (i := a.index_of(m)) is None else i for m in old_arrays.ids], np.int64)
        ok = rows >= 0
        out[rows[ok]] = old_coords[ok]
        return out

    def _on_rows(self, delta) -> None:
        """A live refresh: new rows get a place by their neighbours (off the GUI thread), changed
        rows' markers are restyled (or everything drawn again when a point appears or disappears,
        or the colour scale moves); the view stays where the user left it."""
        if self.coords is None:
            return
        if len(self.coords) < self.state.data.n:  # (a buffer with spare rows: no copy of 100k per refresh)
            self.coords = grow(self.coords, np.full((self.state.data.n - len(self.coords), 2), np.nan, np.float32))
            self._shown_arrays = self.state.data.arrays
        # new rows appear once placed; a recall changes nothing drawn; retiring, restoring or a
        # new importance do
        by = self.color_by.currentText()
        colour = by if by in ("kind", "agent", "importance") else "event_time"
        drawn = delta.fields & {"valid_until", colour}
        if drawn:
            shown = self.state.show_retired or not (len(delta.retired) or len(delta.restored))
            if shown and self.state.as_of is None and (colour not in drawn or by in ("kind", "agent")):
                self._restyle.append(delta.changed)
            else:
                self._whole = True
            self._live.request()  # next event-loop turn: once for refreshes that come together
        self._place_missing()

    def _live_redraw(self) -> None:
        restyle, whole = self._restyle, self._whole
        self._restyle, self._whole = [], False
        if whole or (restyle and not self._restyled(np.concatenate(restyle))):
            self.redraw()

    def _restyled(self, rows: np.ndarray) -> bool:
        """The markers of `rows` in their colour and size now; False when that needs a style not
        drawn yet (a new kind: then redraw)."""
        data = self.state.data
        by = self.color_by.currentText()
        points = self.point_of_rows(np.unique(rows))
        rows = self.rows[points]
        if by in ("kind", "agent"):
            if len(self._legend_rows) != min(12, len(data.kinds if by == "kind" else data.agents)):
                return False
            codes = (data.kind_codes if by == "kind" else data.agent_codes)[rows]
        else:  # (a colour scale's codes depend on every point's value: only a marker's size changed)
            codes = self.points.codes_of(points)
        return self.points.restyle(points, codes, size=self._sizes(rows))

    @property
    def placing(self) -> bool:
        """New points are being placed, or wait for their batch (PLACE_GAP_S)."""
        return self._placing.isActive()

    def _place_missing(self) -> None:
        """Rows with an embedding but no position (added since the layout) are placed by their
        nearest laid-out neighbours (memviz.layout.place), on a worker, in paced batches."""
        self._placing.request()

    def _start_placing(self) -> bool:
        """The placing job (PacedCall's): False when there is nothing to place against."""
        data = self.state.data
        if data is None or self.coords is None:
            return False
        a, coords, layout = data.arrays, self.coords, self._layout_id
        n_before = self._laid_out_n

        def run(task):  # which rows, and the neighbours' positions, are found here too: O(n), off the GUI thread
            t0 = time.thread_time()
            todo = np.flatnonzero(a.has_embedding & ~np.isfinite(coords[:, 0]))
            xy = np.where(a.has_embedding[:, None], coords, np.nan)  # a row without a vector is no neighbour
            if not len(todo) or not np.isfinite(xy[:, 0]).any():
                return todo[:0], xy[:0], None
            from memviz.layout.place import place_rows  # not needed at start
            with one_blas_thread():  # (a second BLAS thread would spin on the GUI's core after each product)
                placed = place_rows(a.embedding, xy, todo, most=PLACE_ANCHORS)
            return todo, placed, time.thread_time() - t0

        def done(out) -> None:
            todo, xy, cost = out
            self._placing.finished(cost)
            if self._layout_id != layout:
                self._place_missing()  # the coordinates were replaced meanwhile: place against the new ones
                return
            ok = np.isfinite(xy[:, 0])
            if not ok.any():
                return
            self.coords[todo[ok]] = xy[ok]  # (rows only appended since: the same indices)
            self.placed += int(ok.sum())
            self._show_method()
            if not (self._whole and self._live.isActive()) and not self._append(todo[ok]):
                self._whole = True  # (a whole redraw owed draws them too)
                self._live.request()
            new = todo[ok][todo[ok] >= n_before]  # placed because they are new (not a layout's leftovers)
            if len(new):
                self.flash_new(self.coords[new, 0], self.coords[new, 1])

        def failed(err: Exception) -> None:
            self._placing.finished(None)
            traceback.print_exception(err)  # a bug in memviz: not hidden, and placing goes on
        self.workers.submit("place", run, on_done=done, on_error=failed, lane="place")
        return True

    def start_umap(self) -> None:
        """UMAP in memviz.layout's warm worker process (numba never compiles in this process);
        the GUI keeps the PCA map until the result arrives, then swaps it in and caches it."""
        data, api = self.state.data, layout_api()
        if data is None:
            return
        arrays = data.arrays

        def run(task):
            # the job reports its stages on the task; cancelling the task terminates the job's process
            job = api.UmapJob(arrays, None, task=task).start()
            job.wait()
            task.check()
            return job.result(), job.elapsed or 0.0, job.cache_params(), job.method_text

        def done(result):
            coords, secs, params, how = result
            now = self.state.data
            if now is None or now.store.path != data.store.path:
                return  # another store since
            self._cache_error = ""
            try:  # the cache is written here, on the thread that owns the store; `how` is said again on reopen
                if not data.store.read_only:
                    api.LayoutCache(data.store).put("umap", arrays, params, coords, note=how)
            except Exception as e:  # noqa: BLE001 - an unwritable cache only costs a recompute next time
                self._cache_error = f"UMAP not cached: {e}"
            # laid out on the rows it started with; rows written since are placed by their neighbours
            # (a new layout is a new coordinate space: the view is fitted to it)
            self.umap_button.setEnabled(True)
            self._set_coords(self._by_id(arrays, np.asarray(coords, np.float32)), f"{how} ({secs:.0f} s)")
            self._place_missing()
        self.umap_button.setEnabled(False)
        self.workers.submit("umap", run, on_done=done, on_error=self._umap_failed)

    def _umap_failed(self, err: Exception) -> None:
        self.umap_button.setEnabled(True)
        self.method_label.setText(f"{self.method} — UMAP failed: {err}")

    # ------------------------------------------------------------ drawing
    def shown_rows(self) -> np.ndarray:
        if self.coords is None:
            return np.zeros(0, np.int64)
        mask = self.state.visible_mask() & np.isfinite(self.coords[:, 0])
        return np.flatnonzero(mask)

    def redraw(self, fit: bool = False) -> None:
        data = self.state.data
        self._legend_rows = []
        if data is None or self.coords is None:
            self._show_legend()
            self.set_points([], [], [])
            self.points.clear()
            self.draw_selection()
            self._draw_result()
            return
        rows = self.shown_rows()
        self.set_points(self.coords[rows, 0], self.coords[rows, 1], rows)
        codes, brushes = self.point_colours(rows)
        self._show_legend()
        self.points.set_data(self.x, self.y, codes, [{"brush": b, "pen": None} for b in brushes], size=self._sizes(rows))
        if fit and len(rows):
            self.vb.autoRange(padding=0.03)
        self.draw_selection()
        self._draw_result()

    def _append(self, rows: np.ndarray) -> bool:
        """Draw newly placed rows after the others, when nothing else has to change (colours by
        kind or agent with the same names, not yet drawn); False: redraw instead."""
        data = self.state.data
        by = self.color_by.currentText()
        if by not in ("kind", "agent") or len(self._legend_rows) != min(12, len(data.kinds if by == "kind" else
                                                                             data.agents)):
            return False
        rows = rows[self.state.visible_mask(rows)]
        if not len(rows) or len(self.point_of_rows(rows)):  # (a lookup table, not a sort of every row drawn)
            return not len(rows)
        codes = (data.kind_codes if by == "kind" else data.agent_codes)[rows]
        if not self.points.append(self.coords[rows, 0], self.coords[rows, 1], codes, size=self._sizes(rows)):
            return False
        self.add_points(self.coords[rows, 0], self.coords[rows, 1], rows)
        return True

    def _sizes(self, rows: np.ndarray) -> np.ndarray:
        """Marker sizes of `rows`: retired ones smaller, copies on one spot larger by their count
        (counted for this store's rows when the map was named; rows added since count 1)."""
        data = self.state.data
        size = np.where(np.isnan(data.arrays.valid_until[rows]), 6.0, 4.0)
        copies = self.copies
        if copies is not None and self._copies_for is data:
            n = np.ones(len(rows), np.int64)
            counted = rows < len(copies)
            n[counted] = copies[rows[counted]]
            size = size + np.minimum(1.5 * np.log2(n), 9.0)
        return size

    def point_colours(self, rows: np.ndarray) -> tuple[np.ndarray, list]:
        """(code per point, one shared brush per code) for the chosen colouring; fills the legend."""
        data = self.state.data
        a = data.arrays
        by = self.color_by.currentText()
        if by in ("kind", "agent"):
            names = data.kinds if by == "kind" else data.agents
            brushes = style.category_brushes(names, alpha=190, by_kind=by == "kind")
            self._legend_rows = [(b, n or "(none)") for b, n in zip(brushes, names[:12])]
            codes = (data.kind_codes if by == "kind" else data.agent_codes)[rows]
        else:
            if by == "importance":
                values = a.importance[rows]
            elif by == "age":
                values = -a.event_time[rows]
            else:
                scores = getattr(self.state.result, "all_scores", None)
                values = np.full(len(rows), np.nan) if scores is None else np.asarray(scores, float)[rows]
            brushes = style.ramp_brushes(alpha=200)
            codes = style.ramp_codes(values)
            low, high = {"importance": ("low", "high"), "age": ("old", "new"),
                         "score": ("low score", "high score")}[by]
            self._legend_rows = [(brushes[0], f"{by}: {low}"), (brushes[style.N_RAMP - 1], high)]
        return codes, brushes

    def _show_legend(self) -> None:
        """The legend of `_legend_rows` (brush, text), rebuilt only when they differ from what it shows."""
        key = [(b.color().rgba(), t) for b, t in self._legend_rows]
        if key == self._legend_key:
            return
        self._legend_key = key
        self.legend.clear()
        for b, t in self._legend_rows:
            # the legend's LabelItem reads its text as HTML: a kind or agent is shown as written
            self.legend.addItem(pg.ScatterPlotItem(brush=b, pen=None, size=8, symbol="o"), as_html(t))

    def _on_result(self, result) -> None:
        # While a slider moves the results table repaints first; the map (a 100k-point repaint)
        # follows at most ~12 times a second.
        if not self._result_timer.isActive():
            self._result_timer.start()

    def _apply_result(self) -> None:
        if self.color_by.currentText() == "score":
            self.redraw()
        else:
            self._draw_result()

    def _draw_result(self) -> None:
        result, data = self.state.result, self.state.data
        if result is None or data is None or self.coords is None or not len(result.rows):
            self.topk.clear()
            self.marker.clear()
            return
        rows = np.asarray(result.rows, np.int64)
        rows = rows[np.isfinite(self.coords[rows, 0])]
        self.topk.set_data(self.coords[rows, 0], self.coords[rows, 1], size=13,
                           styles=[{"pen": pg.mkPen(self.theme.query, width=2), "brush": None}])
        at = self.query_position()
        if at is None:
            self.marker.clear()
        else:
            self.marker.set_data([at[0]], [at[1]], size=20, styles=[{"symbol": "star", "pen": pg.mkPen(self.theme.ink, width=1),
                                                                   "brush": pg.mkBrush(self.theme.query)}])

    def query_position(self):
        """Where the query sits on the map: similarity-weighted centre of its 5 nearest memories
        (works for PCA and UMAP alike, which cannot both project a new vector)."""
        data, q = self.state.data, self.state.query_vector
        if data is None or self.coords is None:
            return None
        a = data.arrays
        if q is not None and np.shape(q)[-1] == a.dim:
            # the same query (a slider moved, or it ran again after a write) on the same layout:
            # same place (points placed since do not move the marker)
            key = (np.array(q, np.float32), self._layout_id)
            old = self._qpos[0]
            if old is not None and old[1] == key[1] and np.array_equal(old[0], key[0]):
                return self._qpos[1]  # same query (a slider moved, or it ran again after a write): same place
            sims = a.embedding @ np.asarray(q, np.float32)   # no copy of the matrix
            sims[~(a.has_embedding & np.isfinite(self.coords[:, 0]))] = -np.inf
            near = np.argpartition(-sims, min(4, len(sims) - 1))[:5]
            near = near[np.isfinite(sims[near])]
            w = np.clip(sims[near], 1e-3, None)
            at = (self.coords[near] * w[:, None]).sum(axis=0) / w.sum() if len(near) else None
            self._qpos = (key, at)
            return at
        else:  # FTS-only query: the centre of the top results
            rows = np.asarray(self.state.result.rows[:5], np.int64) if self.state.result is not None else []
            near = np.array([r for r in rows if np.isfinite(self.coords[r, 0])], np.int64)
            w = np.ones(len(near))
        if not len(near):
            return None
        return (self.coords[near] * w[:, None]).sum(axis=0) / w.sum()

    def overlay_size(self) -> float:
        return 11.0
