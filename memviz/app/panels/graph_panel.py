"""Reflection graph: memories linked to what they were derived from (source_ids) and to what
superseded them, layered (evidence below, reflections above by depth).

Only memories that take part in a link are drawn. Selecting a memory highlights its
ancestors (what it rests on) and descendants (what rests on it); focus mode shows only that
neighbourhood. Links to ids that do not exist are drawn red to a red cross.
The layout is memviz.layout.graph_layout's, computed as a background job.
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QCheckBox, QGraphicsRectItem, QLabel, QSizePolicy, QToolButton

from memviz.app.plots import style
from memviz.app.plots.scatter_panel import ScatterPanel
from memviz.app.plots.points_item import PointsItem
from memviz.session.state import AppState, StoreData



@dataclass
class Graph:
    """Points are nodes: rows[i] is the memory of node i, or -1 for a missing id."""

    rows: np.ndarray
    x: np.ndarray
    y: np.ndarray
    level: np.ndarray
    source_edges: np.ndarray       # (m, 2) node indices: (derived, source)
    supersede_edges: np.ndarray    # (m, 2) (new, old)
    broken_edges: np.ndarray       # (m, 2) (from, missing node)
    missing_ids: dict[int, str] = field(default_factory=dict)
    _adjacency: tuple | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return len(self.rows)

    def adjacency(self) -> tuple[dict, dict]:
        """(up, down): node -> what it rests on / what rests on it (sources, supersedes, broken)."""
        if self._adjacency is None:
            up, down = defaultdict(list), defaultdict(list)
            for d, s in np.vstack([self.source_edges, self.supersede_edges, self.broken_edges]).tolist():
                up[d].append(s)
                down[s].append(d)
            self._adjacency = (up, down)
        return self._adjacency


def build_graph(data: StoreData) -> Graph:
    """The layered layout of memviz.layout.graph_layout, as the panel draws it."""
    from memviz.layout import graph_layout  # noqa: PLC0415 - scipy loads off the GUI thread (graph job)
    return _from_layout(graph_layout(data.provenance, data.arrays), data)


def _from_layout(gl, data: StoreData) -> Graph:
    """Adapt memviz.layout's GraphLayout (x, y, level aligned to the arrays' rows; edges as
    [lower, upper] rows with edge_kind; broken as (row, missing id, kind)) to the panel's Graph."""
    level = np.asarray(gl.level)
    rows = np.flatnonzero(level >= 0).astype(np.int64)
    node = np.full(len(level), -1, np.int64)
    node[rows] = np.arange(len(rows))
    x, y, lv = list(np.asarray(gl.x, float)[rows]), list(np.asarray(gl.y, float)[rows]), list(level[rows])
    edges = np.asarray(gl.edges, np.int64).reshape(-1, 2)
    from memviz.layout.graph import DERIVED  # noqa: PLC0415
    derived = np.asarray(gl.edge_kind) == DERIVED
    pairs = np.c_[node[edges[:, 1]], node[edges[:, 0]]]  # (upper, lower): (derived, source) / (new, old)
    ok = (pairs >= 0).all(axis=1)
    src, sup = pairs[ok & derived], pairs[ok & ~derived]
    rows_l = list(rows)
    broken, missing = [], {}
    for k, (frm, mid, _what) in enumerate(gl.broken):
        i = int(node[int(frm)])
        if i < 0:
            continue
        j = len(rows_l)
        rows_l.append(-1), x.append(x[i] + 0.15 * (k % 3 - 1)), y.append(y[i] - 0.5), lv.append(lv[i])
        broken.append((i, j))
        missing[j] = str(mid)
    return Graph(np.array(rows_l, np.int64), np.array(x, float), np.array(y, float), np.array(lv, np.int64),
                 src, sup, np.array(broken, np.int64).reshape(-1, 2), missing)


def _neighbourhood(g: Graph, start: np.ndarray) -> tuple[set, set]:
    """(ancestors, descendants) node sets of the start nodes, following sources and supersedes."""
    up, down = g.adjacency()

    def walk(adj):
        seen, q = set(), deque(int(s) for s in start)
        while q:
            for nb in adj[q.popleft()]:
                if nb not in seen:
                    seen.add(nb)
                    q.append(nb)
        return seen
    return walk(up), walk(down)


class GraphPanel(ScatterPanel):
    def __init__(self, state: AppState, workers=None, parent=None) -> None:
        super().__init__(state, parent)
        self.workers = workers
        self.plot.showGrid(x=False, y=True, alpha=0.1)
        self.plot.getAxis("bottom").hide()
        self.plot.setLabel("left", "level (0 = evidence)")
        self.focus = QCheckBox("focus on selection")
        self.focus.setToolTip("Show only the selected memories with their ancestors and descendants")
        self.fit = QToolButton(text="Fit")
        self.info = QLabel()
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        for w in (self.focus, self.fit):
            self.toolbar.addWidget(w)
        self.toolbar.addWidget(self.info, 1)
        self.edges = pg.PlotDataItem(pen=pg.mkPen(120, 120, 120, 90, width=1), connect="pairs")
        self.sup_edges = pg.PlotDataItem(pen=pg.mkPen(90, 90, 90, 160, width=1.2, style=Qt.DashLine), connect="pairs")
        self.hot_edges = pg.PlotDataItem(pen=pg.mkPen(230, 120, 0, 230, width=2), connect="pairs")
        self.bad_edges = pg.PlotDataItem(pen=pg.mkPen(style.BROKEN, width=1.3, style=Qt.DotLine), connect="pairs")
        for z, it in enumerate((self.edges, self.sup_edges, self.bad_edges, self.hot_edges)):
            it.setZValue(-10 + z if it is not self.hot_edges else 4)
            self.plot.addItem(it)
        self.labels: list[pg.TextItem] = []
        self.hot_points = PointsItem()
        self.hot_points.setZValue(5)
        self.plot.addItem(self.hot_points)
        # a translucent veil between the base layer and the highlighted neighbourhood
        self.hot_fade = QGraphicsRectItem()
        self.hot_fade.setBrush(QColor(255, 255, 255, 150))
        self.hot_fade.setPen(QPen(Qt.NoPen))
        self.hot_fade.setZValue(2)
        self.hot_fade.hide()
        self.plot.addItem(self.hot_fade, ignoreBounds=True)
        self.vb.sigRangeChanged.connect(lambda *a: self.hot_fade.isVisible() and self.hot_fade.setRect(self.vb.viewRect()))
        self._shown = np.zeros(0, bool)
        self._relabel = QTimer(self, singleShot=True, interval=120, timeout=self._draw_hot)
        self._graph_timer = QTimer(self, singleShot=True, interval=150, timeout=self._start_graph_job)
        self.vb.sigRangeChanged.connect(lambda *a: self._relabel.start())
        self.graph: Graph | None = None
        self.hot: set[int] = set()
        self.focus.toggled.connect(lambda _on: self.redraw(fit=True))
        self.fit.clicked.connect(lambda: self.vb.autoRange(padding=0.05))
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.show_retired_changed.connect(lambda _s: self.redraw())
        self._keep_view = False  # the graph being built replaces one the user looks at: no fit

    def _on_data(self, data) -> None:
        self._keep_view = self.state.reloaded and self.graph is not None
        if not self._keep_view:
            self.graph, self.hot = None, set()
            self.redraw(fit=True)
        if data is None:
            return
        if self.workers is None:  # no background workers (a panel on its own): build here
            self._graph_ready(data, build_graph(data))
            return
        self.info.setText("building the graph…")
        self._graph_timer.start()  # once the window has painted the other panels (the job competes for the GIL)

    def _on_rows(self, delta) -> None:
        """A live refresh: links may have changed (a reflection, a correction) -> the graph is
        built again in the background and replaces this one in the same view; otherwise the
        nodes are drawn again (importance, retired)."""
        if delta.links:
            self._keep_view = self.graph is not None
            self._graph_timer.start()
        elif self.graph is not None and delta.fields & {"importance", "valid_until", "kind"} \
                and np.isin(delta.changed, self.graph.rows).any():
            self.redraw()

    def _start_graph_job(self) -> None:
        data = self.state.data
        if data is None:
            return
        self.workers.submit("graph", lambda task: build_graph(data), on_done=lambda g: self._graph_ready(data, g),
                            on_error=lambda e: self.info.setText(f"graph layout failed: {e}"))

    def _graph_ready(self, data, g: Graph) -> None:
        if self.state.data is not data:
            return
        self.graph = g
        self._update_hot(self.state.selection)
        self.redraw(fit=not self._keep_view)
        self._keep_view = False

    def _update_hot(self, rows) -> None:
        g = self.graph
        if g is None:
            self.hot = set()
            return
        start = self.point_of_rows_graph(rows) if len(rows) else np.zeros(0, np.int64)
        anc, desc = _neighbourhood(g, start) if len(start) else (set(), set())
        self.hot = set(start.tolist()) | anc | desc

    def _on_selection(self, rows, current, source) -> None:
        had = bool(self.hot)
        self._update_hot(rows)
        if self.focus.isChecked() and (self.hot or had):
            self.redraw(fit=True)
        else:  # the base layer stays; only the neighbourhood overlay, labels and ring change
            self._draw_hot()
            self.draw_selection()

    def point_of_rows_graph(self, rows) -> np.ndarray:
        g = self.graph
        where = np.isin(g.rows, np.asarray(rows, np.int64)) & (g.rows >= 0)
        return np.flatnonzero(where)

    def redraw(self, fit: bool = False) -> None:
        g, data = self.graph, self.state.data
        if g is None or data is None or g.n == 0:
            self._shown = np.zeros(0, bool)
            self._draw_hot()
            self.set_points([], [], [])
            self.points.clear()
            for it in (self.edges, self.sup_edges, self.hot_edges, self.bad_edges):
                it.setData([], [])
            self.info.setText("no derived memories or supersede links in this store" if data is not None else "")
            self.draw_selection()
            return
        shown = np.ones(g.n, bool)
        real = g.rows >= 0
        if not self.state.show_retired:
            shown[real] = data.arrays.live[g.rows[real]]
        hot = np.zeros(g.n, bool)
        if self.hot:
            hot[list(self.hot)] = True
            if self.focus.isChecked():
                shown &= hot
        nodes = np.flatnonzero(shown & real)
        missing = np.flatnonzero(shown & ~real)
        rows = g.rows[nodes]
        codes, styles = style.kind_styles(data, rows)
        self.set_points(g.x[nodes], g.y[nodes], rows)
        styles.append({"brush": pg.mkBrush(style.BROKEN), "pen": pg.mkPen(style.BROKEN), "symbol": "x"})
        sizes = np.r_[style.importance_sizes(data.arrays.importance[rows], 6, 16), np.full(len(missing), 9.0)]
        self.points.set_data(np.r_[g.x[nodes], g.x[missing]], np.r_[g.y[nodes], g.y[missing]],
                        np.r_[codes, np.full(len(missing), len(styles) - 1)], styles, size=sizes)

        def seg(edges, keep_hot=None):
            if not len(edges):
                return np.zeros(0), np.zeros(0)
            ok = shown[edges[:, 0]] & shown[edges[:, 1]]
            if keep_hot is not None:
                ok &= (hot[edges[:, 0]] & hot[edges[:, 1]]) == keep_hot
            e = edges[ok]
            return g.x[e].ravel(), g.y[e].ravel()
        self.edges.setData(*seg(g.source_edges))
        self.sup_edges.setData(*seg(g.supersede_edges))
        self.bad_edges.setData(*seg(g.broken_edges))
        self._shown = shown
        self._draw_hot()
        n_levels = int(g.level.max()) + 1 if len(g.level) else 0
        self.info.setText(f"{len(nodes):,} memories · {len(g.source_edges):,} source links · "
                          f"{len(g.supersede_edges):,} supersedes · {len(g.broken_edges):,} broken · {n_levels} levels")
        self.plot.getAxis("left").setTicks([[(L, str(L)) for L in range(n_levels)]])
        if fit:
            self.vb.autoRange(padding=0.08)
            lo, hi = self.vb.viewRange()[1]
            self.vb.setYRange(min(lo, -0.6), max(hi, n_levels - 0.4), padding=0)  # room for the labels
        self.draw_selection()

    def _draw_hot(self) -> None:
        """The selection's ancestors and descendants drawn over the base layer (cheap: only them)."""
        g, data = self.graph, self.state.data
        for t in self.labels:  # a fixed pool, hidden and reused: removing TextItems has crashed PySide6 at exit
            t.hide()
        if g is None or data is None or not len(self._shown):
            self.hot_points.clear()
            self.hot_edges.setData(np.zeros(0), np.zeros(0))
            return
        hot = np.zeros(g.n, bool)
        if self.hot:
            hot[list(self.hot)] = True
        hot &= self._shown
        nodes = np.flatnonzero(hot & (g.rows >= 0))
        rows = g.rows[nodes]
        codes, styles = style.kind_styles(data, rows)
        ring = pg.mkPen(230, 120, 0, 255, width=2)
        for st in styles:
            st["pen"] = ring
        self.hot_points.set_data(g.x[nodes], g.y[nodes], codes, styles,
                            size=style.importance_sizes(data.arrays.importance[rows], 6, 16) + 2)
        edges = np.vstack([g.source_edges, g.supersede_edges])
        ok = hot[edges[:, 0]] & hot[edges[:, 1]] if len(edges) else np.zeros(0, bool)
        e = edges[ok]
        self.hot_edges.setData(g.x[e].ravel(), g.y[e].ravel())
        self.hot_fade.setVisible(bool(self.hot))
        if self.hot_fade.isVisible():
            self.hot_fade.setRect(self.vb.viewRect())
        self._draw_labels(g, data, np.flatnonzero(self._shown))

    def _draw_labels(self, g: Graph, data: StoreData, shown: np.ndarray) -> None:
        """Short labels only where they do not collide: per level, the selection first, then its
        neighbourhood, then the rest, each placed above or below its node if that stretch of the
        row is still free (hover shows any node's full text)."""
        if not len(shown):
            return
        pw = self.vb.viewPixelSize()[0] or 1.0
        (x0, x1), (y0, y1) = self.vb.viewRange()
        visible = shown[(g.x[shown] >= x0) & (g.x[shown] <= x1) & (g.y[shown] >= y0) & (g.y[shown] <= y1)]
        if len(visible) > 400:  # zoomed far out: only the selection and its neighbourhood compete
            visible = np.array([i for i in visible if i in self.hot], np.int64)
        selected = set(self.point_of_rows_graph(self.state.selection).tolist()) if self.graph is not None else set()
        prio = np.array([0 if i in selected else 1 if i in self.hot else 2 for i in visible])
        taken: dict[tuple, list] = {}
        k = 0
        for i in visible[np.lexsort((g.x[visible], prio))]:
            r = g.rows[i]
            text = ("missing: " + g.missing_ids.get(int(i), "?")) if r < 0 else data.previews[r]
            text = text if len(text) <= 22 else text[:21] + "…"
            half = (len(text) * 3.6 + 6) * pw  # half the label's width in view units (about 7 px a character)
            lo, hi = g.x[i] - half, g.x[i] + half
            for side in ("above", "below"):
                # "above" anchors the text under the node on screen, "below" over it: the band under
                # level L is the band over level L-1, so both sides of neighbouring levels share it
                row = taken.setdefault(round(float(g.y[i]) + (-0.5 if side == "above" else 0.5), 3), [])
                if all(hi < a or lo > b for a, b in row):
                    row.append((lo, hi))
                    break
            else:
                continue
            t = self._label(k)
            k += 1
            t.setText(text, color=(70, 70, 70) if r >= 0 else style.BROKEN)
            t.setAnchor((0.5, -0.3) if side == "above" else (0.5, 1.3))
            t.setPos(g.x[i], g.y[i])
            t.show()
            if k >= 120:
                break

    def _label(self, k: int) -> pg.TextItem:
        while len(self.labels) <= k:
            t = pg.TextItem(anchor=(0.5, -0.35))
            t.setZValue(6)  # above the veil
            self.plot.addItem(t, ignoreBounds=True)
            self.labels.append(t)
        return self.labels[k]

    def overlay_size(self) -> float:
        return 20.0
