"""Reflection graph: memories linked to what they were derived from (source_ids) and to what
superseded them, layered (evidence below, reflections above by depth).

Only memories that take part in a link are drawn; arrowheads point from what a memory was
derived from to it (and from a superseded memory to its successor). Links are faint, so that
hundreds of them make a light web, not a grey fan. Selecting a memory highlights its ancestors
(what it rests on) and descendants (what rests on it) in the lineage colour, near-black (on a
dark background near-white: no kind is as dark, or as light), over a veil; its chain, one
memory per level from the top of what rests on it down to the evidence, strongest and labelled
first, beside each node, so it reads top to bottom. Focus mode shows only that neighbourhood.
Links to ids that do not exist are drawn red to a red cross. Labels are placed beside, over or
under their node where they overlap no other label and no node of the chain, cut short to fit
the plot (hover shows the whole text); with nothing selected the highest memories are named
first. Fit leaves them room.
The layout is memviz.layout.graph_layout's, computed as a background job.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QFontMetricsF, QPen
from PySide6.QtWidgets import QCheckBox, QGraphicsRectItem, QLabel, QSizePolicy, QToolButton

from memviz.app.plain_text import plain_tooltip
from memviz.app.plots import style
from memviz.app.plots.points_item import PointsItem
from memviz.app.plots.scatter_panel import ScatterPanel
from memviz.app.plots.segments_item import SegmentsItem
from memviz.session.state import AppState, StoreData
from memviz.words import count

LABEL_CHARS = 40        # a node's label: the start of its text (hover shows all of it)
LABEL_MIN_PX = 48       # a label cut shorter than this to fit is not shown
LABEL_MARGIN = 1        # px around a label's text
LABEL_GAP = 7           # px between a node's centre and its label
LABEL_CANDIDATES = 400  # past this many nodes in view only the selection's lineage, or the highest, compete
LABEL_HALF_WIDTH = 80   # px Fit leaves beside the outermost nodes for their labels
NARROW_PX = 360         # a plot narrower than this keeps its left margin small, its labels' room on the right
MAX_LABELS = 120
ARROW_BACK = 8          # px: the arrow's tip stops short of the node's centre, at its rim
ARROW_LEN = 7           # px from the tip to the base of the arrowhead
ARROW_HALF = 3.5        # px: half the arrowhead's width
ARROWS_MAX = 300        # links in view past which they get no arrowheads (a blur on every node; levels say the way)
HOT_ARROWS_MAX = 40     # lineage links in view past which only its chain's links get arrowheads
CHAIN_MAX = 64          # nodes of the selection's chain at most (a cycle in bad data cannot make it loop)
DRAW_LINKS_MAX = 5_000   # past this many links (a frame of them is no longer cheap) the graph is summarised: clusters
NEIGHBOURHOOD_MAX = 1_000  # nodes each way of a selection's neighbourhood drawn in a summarised graph
CLUSTER_LABELS = 60      # the largest clusters are named on the plot (hover names any)
CLUSTER_LINKS = ((1, 90), (2.5, 120), (5, 140))  # (width, alpha) of links between clusters, by how many they stand for


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

    @property
    def n_links(self) -> int:
        return len(self.source_edges) + len(self.supersede_edges)

    def adjacency(self) -> tuple:
        """(up, down) CSR matrices: node -> what it rests on / what rests on it (sources, supersedes, broken)."""
        if self._adjacency is None:
            from memviz.layout.graph_summary import adjacency
            e = np.vstack([self.source_edges, self.supersede_edges, self.broken_edges])
            self._adjacency = (adjacency(self.n, e[:, 0], e[:, 1]), adjacency(self.n, e[:, 1], e[:, 0]))
        return self._adjacency

    def subgraph(self, nodes: np.ndarray, event_time: np.ndarray) -> Graph:
        """The graph of these nodes and the links among them, laid out on its own (levels kept, x
        from barycentre sweeps over its own links: a neighbourhood drawn apart from the whole)."""
        from memviz.layout.graph import layer_positions
        nodes = np.unique(np.asarray(nodes, np.int64))
        new = np.full(self.n, -1, np.int64)
        new[nodes] = np.arange(len(nodes))

        def keep(e):
            e = new[e] if len(e) else e.reshape(-1, 2)
            return e[(e >= 0).all(axis=1)] if len(e) else e
        src, sup, bad = keep(self.source_edges), keep(self.supersede_edges), keep(self.broken_edges)
        rows, level = self.rows[nodes], self.level[nodes]
        when = np.where(rows >= 0, np.asarray(event_time, np.float64)[np.maximum(rows, 0)], np.nan)
        x = layer_positions(level, np.vstack([src, sup, bad]), when)
        missing = {int(new[i]): mid for i, mid in self.missing_ids.items() if new[i] >= 0}
        return Graph(rows, x, self.y[nodes], level, src, sup, bad, missing)


def build_graph(data: StoreData) -> Graph:
    """The layered layout of memviz.layout.graph_layout, as the panel draws it."""
    from memviz.layout import graph_layout  # scipy loads off the GUI thread (graph job)
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
    from memviz.layout.graph import DERIVED
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


def _neighbourhood(g: Graph, start: np.ndarray, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ancestors, descendants) nodes of the start nodes, following sources and supersedes, nearest
    first, at most `limit` of each."""
    from memviz.layout.graph_summary import reach
    up, down = g.adjacency()
    return reach(up, start, limit), reach(down, start, limit)


def chain_of(g: Graph, node: int, importance: np.ndarray) -> list[int]:
    """The chain through `node`, top to bottom: up from it, each step to what rests on it at the
    lowest level; down, to what it rests on at the highest level (so each level has one node where
    the links allow), the more important one first, then a memory before a missing id."""
    up, down = g.adjacency()
    imp = np.where(g.rows >= 0, np.nan_to_num(importance[np.maximum(g.rows, 0)], nan=0.0), -1.0)

    def walk(adj, rank) -> list[int]:
        out, cur, seen = [], node, {node}
        while len(out) < CHAIN_MAX:
            nxt = [int(v) for v in adj.indices[adj.indptr[cur]:adj.indptr[cur + 1]] if v not in seen]
            if not nxt:
                break
            cur = max(nxt, key=lambda v: (rank(v), imp[v], -v))
            seen.add(cur)
            out.append(cur)
        return out
    above = walk(down, lambda v: -g.level[v])
    below = walk(up, lambda v: g.level[v])
    return above[::-1] + [node] + below


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
        self.info = QLabel(textFormat=Qt.PlainText)  # an error may quote the store's text
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        for w in (self.focus, self.fit):
            self.toolbar.addWidget(w)
        self.toolbar.addWidget(self.info, 1)
        # links as SegmentsItems: tens of thousands cost what their distinct pixels cost
        # (their pens: restyle)
        self.edges, self.sup_edges, self.hot_edges, self.chain_edges, self.bad_edges = (SegmentsItem() for _ in range(5))
        # arrowheads (two short strokes each), recomputed in pixels whenever the view changes
        self.arrows, self.hot_arrows = SegmentsItem(), SegmentsItem()
        for z, it in enumerate((self.edges, self.sup_edges, self.bad_edges, self.arrows)):
            it.setZValue(-10 + z)
            self.plot.addItem(it)
        for z, it in ((4, self.hot_edges), (4.2, self.hot_arrows), (4.5, self.chain_edges)):
            it.setZValue(z)
            self.plot.addItem(it)
        self.chain: list[int] = []  # nodes of the selection's chain, top to bottom
        self._label_nodes: list[int] = []  # the node of each label shown, in the pool's order
        self.labels: list[pg.TextItem] = []
        self.hot_points = PointsItem()
        self.hot_points.setZValue(5)
        self.plot.addItem(self.hot_points)
        # a translucent veil between the base layer and the highlighted neighbourhood
        self.hot_fade = QGraphicsRectItem()
        self.hot_fade.setPen(QPen(Qt.NoPen))
        self.hot_fade.setZValue(2)
        self.hot_fade.hide()
        self.plot.addItem(self.hot_fade, ignoreBounds=True)
        self.vb.sigRangeChanged.connect(lambda *a: self.hot_fade.isVisible() and self.hot_fade.setRect(self.vb.viewRect()))
        self._shown = np.zeros(0, bool)
        self._relabel = QTimer(self, singleShot=True, interval=120, timeout=self._draw_hot)
        self._graph_timer = QTimer(self, singleShot=True, interval=150, timeout=self._start_graph_job)
        self.vb.sigRangeChanged.connect(lambda *a: self._relabel.start())
        self.vb.sigResized.connect(self._resized)  # labels and arrows are sized in pixels
        self._fit_range = None  # the range Fit set: while the view shows it, a resize fits again
        self.graph: Graph | None = None      # the whole graph
        self._drawn: Graph | None = None     # what is drawn: the whole, or in a summarised graph a neighbourhood
        self.summary = None                  # memviz.layout.graph_summary.Clusters when the graph is summarised
        self.cut = 0                         # nodes of the neighbourhood left out (past NEIGHBOURHOOD_MAX)
        self.cluster_points = PointsItem()
        self.cluster_points.setZValue(1)
        self.plot.addItem(self.cluster_points)
        # links between clusters in three widths, by how many links they stand for
        self.cluster_edges = [pg.PlotDataItem(connect="pairs") for _ in CLUSTER_LINKS]
        for it in self.cluster_edges:
            it.setZValue(-9)
            self.plot.addItem(it)
        self.hot: set[int] = set()
        self.focus.toggled.connect(lambda _on: self.redraw(fit=True))
        self.fit.clicked.connect(self.fit_view)
        state.data_changed.connect(self._on_data)
        state.rows_changed.connect(self._on_rows)
        state.show_retired_changed.connect(lambda _s: self.redraw())
        state.as_of_changed.connect(lambda _t: self.redraw())
        self._keep_view = False  # the graph being built replaces one the user looks at: no fit
        self.restyle()

    def restyle(self) -> None:
        """Three tiers of links: the rest faint and thin (a light web however many), the selection's
        lineage translucent (a reflection over dozens of memories must not become a dark wedge),
        its chain in the lineage colour and wide, drawn last."""
        super().restyle()
        t = self.theme
        self.edges.setPen(pg.mkPen(style.color(t.link, 60), width=0.8))
        self.sup_edges.setPen(pg.mkPen(style.color(t.link, 110), width=1, style=Qt.DashLine))
        self.hot_edges.setPen(pg.mkPen(style.color(t.lineage, 50), width=1))
        self.chain_edges.setPen(pg.mkPen(style.color(t.lineage, 235), width=2.2))
        self.bad_edges.setPen(pg.mkPen(t.broken, width=1.3, style=Qt.DotLine))
        self.arrows.setPen(pg.mkPen(style.color(t.link, 90), width=1))
        self.hot_arrows.setPen(pg.mkPen(style.color(t.lineage, 200), width=1.6))
        self.hot_fade.setBrush(style.color(t.paper, 150))
        for it, (width, alpha) in zip(self.cluster_edges, CLUSTER_LINKS):
            it.setPen(pg.mkPen(style.color(t.link, alpha), width=width))
        for label in self.labels:
            label.fill = pg.mkBrush(style.color(t.paper, 190))
        self.redraw()

    def _on_data(self, data) -> None:
        self._keep_view = self.state.reloaded and self.graph is not None
        if not self._keep_view:
            self.graph, self._drawn, self.summary, self.hot = None, None, None, set()
            self.redraw(fit=True)
        if data is None:
            return
        if self.workers is None:  # no background workers (a panel on its own): build here
            self._graph_ready(data, build_graph(data))
            return
        self._say("building the graph…")
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
                            on_error=lambda e: self._say(f"graph layout failed: {e}"))

    def _graph_ready(self, data, g: Graph) -> None:
        if self.state.data is not data:
            return
        self.graph, self.summary = g, None
        if g.n_links > DRAW_LINKS_MAX:
            from memviz.layout.graph_summary import clusters
            real = g.rows >= 0
            agent, kind = np.full(g.n, -1, np.int64), np.full(g.n, -1, np.int64)
            agent[real], kind[real] = data.agent_codes[g.rows[real]], data.kind_codes[g.rows[real]]
            self.summary = clusters(g.level, agent, kind, np.vstack([g.source_edges, g.supersede_edges]))
        self._update_hot(self.state.selection)
        self.redraw(fit=not self._keep_view)
        self._keep_view = False

    def _update_hot(self, rows) -> None:
        """The selection's ancestors and descendants (`hot`, nodes of the graph drawn); in a summarised
        graph the drawn graph becomes that neighbourhood, laid out on its own (None: no selection
        in the graph, the clusters are drawn)."""
        g = self.graph
        self.cut = 0
        self.chain = []
        if g is None:
            self.hot, self._drawn = set(), None
            return
        start = self.point_of_rows_graph(rows, g) if len(rows) else np.zeros(0, np.int64)
        if self.summary is None:
            self._drawn = g
            anc, desc = _neighbourhood(g, start) if len(start) else ((), ())
            self.hot = set(start.tolist()) | set(np.asarray(anc).tolist()) | set(np.asarray(desc).tolist())
        elif not len(start):
            self.hot, self._drawn = set(), None
            return
        else:
            anc, desc = _neighbourhood(g, start[:NEIGHBOURHOOD_MAX], NEIGHBOURHOOD_MAX)
            full = _neighbourhood(g, start[:NEIGHBOURHOOD_MAX], 10 * NEIGHBOURHOOD_MAX) if \
                NEIGHBOURHOOD_MAX in (len(anc), len(desc)) else (anc, desc)
            self.cut = len(full[0]) + len(full[1]) - len(anc) - len(desc)
            self._drawn = g.subgraph(np.r_[start[:NEIGHBOURHOOD_MAX], anc, desc], self.state.data.arrays.event_time)
            self.hot = set(range(self._drawn.n))
        focus = self.point_of_rows_graph([self.state.current] if self.state.current is not None else rows)
        focus = focus if len(focus) else self.point_of_rows_graph(rows)
        if len(focus):
            self.chain = chain_of(self._drawn, int(focus[0]), self.state.data.arrays.importance)

    def _on_selection(self, rows, current, source) -> None:
        had = bool(self.hot)
        self._update_hot(rows)
        if self.summary is not None:  # another neighbourhood (or back to the clusters): a new drawing
            if had or self.hot:
                self.redraw(fit=True)
        elif self.focus.isChecked() and (self.hot or had):
            self.redraw(fit=True)
        else:  # the base layer stays; only the neighbourhood overlay, labels and ring change
            self._draw_hot()
            self.draw_selection()

    def point_of_rows_graph(self, rows, g: Graph | None = None) -> np.ndarray:
        """Nodes of `g` (default: the graph drawn) showing these rows."""
        g = self._drawn if g is None else g
        where = np.isin(g.rows, np.asarray(rows, np.int64)) & (g.rows >= 0)
        return np.flatnonzero(where)

    def redraw(self, fit: bool = False) -> None:
        g, data = self._drawn, self.state.data
        if self.summary is None or g is not None:
            self.cluster_points.clear()
            for it in self.cluster_edges:
                it.setData([], [])
        if g is None or data is None or g.n == 0:
            self._shown = np.zeros(0, bool)
            self._draw_hot()
            self.set_points([], [], [])
            self.points.clear()
            for it in (self.edges, self.sup_edges, self.hot_edges, self.chain_edges, self.bad_edges, self.arrows,
                       self.hot_arrows):
                it.setData([], [])
            if self.summary is not None and data is not None:
                self._draw_clusters(data, fit)
            elif data is None or self.graph is not None:   # (not built yet: the line says it is being built)
                self._say("no derived memories or supersede links in this store" if data is not None else "")
            self.draw_selection()
            return
        shown = np.ones(g.n, bool)
        real = g.rows >= 0
        if not self.state.show_retired:
            shown[real] = data.arrays.live[g.rows[real]]
        shown[real] &= self.state.exists_mask()[g.rows[real]]  # as of the moment shown
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
        styles.append({"brush": pg.mkBrush(self.theme.broken), "pen": pg.mkPen(self.theme.broken), "symbol": "x"})
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
        n_levels = int(g.level.max()) + 1 if len(g.level) else 0
        self._say(self.describe_shown(nodes, missing) if self.summary is None else self.describe_part(nodes))
        self.plot.getAxis("left").setTicks([[(L, str(L)) for L in range(n_levels)]])
        if fit:
            self.fit_view()
        self._draw_hot()
        self.draw_selection()

    def shown_links(self) -> dict[str, int]:
        """How many links of each sort are drawn (both ends shown)."""
        g, shown = self._drawn, self._shown
        if g is None or not len(shown):
            return {"source": 0, "supersede": 0, "broken": 0}
        return {name: int((shown[e[:, 0]] & shown[e[:, 1]]).sum()) if len(e) else 0
                for name, e in (("source", g.source_edges), ("supersede", g.supersede_edges),
                                ("broken", g.broken_edges))}

    def _say(self, text: str) -> None:
        """The line beside Fit, whole in its tooltip (a narrow panel cuts the line)."""
        self.info.setText(text)
        self.info.setToolTip(plain_tooltip(text))

    def describe_shown(self, nodes: np.ndarray, missing: np.ndarray) -> str:
        """The header: what is drawn now (in focus mode, of how many)."""
        g, links = self._drawn, self.shown_links()
        total = int((g.rows >= 0).sum())
        drawn = g.level[np.r_[nodes, missing].astype(np.int64)]
        levels = int((np.bincount(drawn) > 0).sum()) if len(drawn) else 0  # levels >= 0; no sort of 100k
        what = count(len(nodes), "memory") if len(nodes) == total else f"{len(nodes):,} of {count(total, 'memory')}"
        parts = [what, count(links["source"], "source link")]
        parts += [count(links["supersede"], "supersede")] if links["supersede"] else []
        parts += [f"{links['broken']:,} broken"] if links["broken"] else []
        return " · ".join(parts + [count(levels, "level")])

    def describe_part(self, nodes: np.ndarray) -> str:
        """The header of a summarised graph's neighbourhood: what is drawn, of the whole."""
        g, links = self.graph, self.shown_links()
        cut = f" ({self.cut:,} more, further away, not drawn)" if self.cut else ""
        return (f"the selection's lineage: {count(len(nodes), 'memory')}{cut} · {count(links['source'], 'source link')}"
                f" — of {count(int((g.rows >= 0).sum()), 'memory')} · {count(g.n_links, 'link')}")

    def _draw_clusters(self, data: StoreData, fit: bool) -> None:
        """A summarised graph without a selection: one bubble per (level, agent, kind), sized by its
        memories, and one line per pair of clusters with links, wider for more links."""
        c, g = self.summary, self.graph
        y = c.level.astype(np.float64)
        brushes = style.category_brushes(data.kinds, alpha=200)
        rim = pg.mkPen(style.color(self.theme.ink, 150), width=1)
        self.cluster_points.set_data(c.x, y, np.minimum(c.kind, len(brushes) - 1),
                                     [{"brush": b, "pen": rim} for b in brushes],
                                     size=np.clip(6 + 2.5 * np.log2(np.maximum(c.count, 1)), 6, 44))
        for it, (lo, hi) in zip(self.cluster_edges, ((0, 10), (10, 1000), (1000, np.inf))):
            e = c.edges[(c.edge_count > lo) & (c.edge_count <= hi)]
            it.setData(c.x[e].ravel(), y[e].ravel())
        self._say(f"{count(int((g.rows >= 0).sum()), 'memory')} · {count(g.n_links, 'link')}, too many to "
                          f"draw: {count(len(c.count), 'cluster')} by level, agent and kind (size: memories; width: "
                          "links) — select a memory to draw its lineage")
        n_levels = int(c.level.max()) + 1 if len(c.level) else 0
        self.plot.getAxis("left").setTicks([[(L, str(L)) for L in range(n_levels)]])
        if fit:
            self.vb.autoRange(padding=0.12)
        self._label_clusters()

    def _label_clusters(self) -> None:
        """Name the largest clusters ("agent · kind", how many) under their bubble, where a label
        overlaps no larger cluster's label."""
        c, data = self.summary, self.state.data
        if c is None or data is None or self._drawn is not None:
            return
        area = self.vb.sceneBoundingRect().adjusted(1, 1, -1, -1)
        placed: list[QRectF] = []
        k = 0
        for i in np.argsort(-c.count, kind="stable")[:CLUSTER_LABELS]:
            agent = data.agents[c.agent[i]] if c.agent[i] < len(data.agents) else "?"
            kind = data.kinds[c.kind[i]] if c.kind[i] < len(data.kinds) else "?"
            t = self._label(k)
            t.setText(f"{agent or '(none)'} · {kind}\n{c.count[i]:,}", color=self.theme.label_text)
            size = t.textItem.boundingRect().size()
            node = self.vb.mapViewToScene(QPointF(c.x[i], float(c.level[i])))
            rect = QRectF(node.x() - size.width() / 2, node.y() + LABEL_GAP + 6, size.width(), size.height())
            if not area.contains(rect) or any(rect.intersects(p) for p in placed):
                continue
            placed.append(rect)
            self._show_label(t, rect)
            k += 1

    def fit_view(self) -> None:
        """Every drawn node in view with a margin in pixels for the labels beside them: half a label
        on either side, or in a narrow plot little on the left and the room for the labels on the
        right (they read top to bottom there)."""
        g = self._drawn
        if g is None or not len(self._shown) or not self._shown.any():
            self.vb.autoRange(padding=0.05)
            return
        idx = np.flatnonzero(self._shown)
        x0, x1 = float(g.x[idx].min()), float(g.x[idx].max())
        y0, y1 = float(g.y[idx].min()), float(g.y[idx].max())
        w, h = max(self.vb.width(), 60.0), max(self.vb.height(), 60.0)
        left = right = min(LABEL_HALF_WIDTH, w / 3)
        if w < NARROW_PX:
            left, right = 12.0, w * 0.45
        my = min(self._label_height() / 2 + 10, h / 4)  # a label beside a node of the top or bottom row
        sx = (x1 - x0 or 1.0) / max(w - left - right, 20.0)  # view units per pixel
        sy = (y1 - y0 or 1.0) / max(h - 2 * my, 20.0)
        self.vb.setRange(xRange=(x0 - left * sx, x1 + right * sx), yRange=(y0 - my * sy, y1 + my * sy), padding=0)
        self._fit_range = self.vb.viewRange()

    def _resized(self, *_) -> None:
        """A fitted view is fitted again (its margins are pixels); a narrow plot shows no axis title."""
        self.plot.getAxis("left").showLabel(self.vb.width() >= NARROW_PX)
        if self._drawn is not None and self._fit_range is not None \
                and np.allclose(self.vb.viewRange(), self._fit_range, rtol=1e-9, atol=0):
            self.fit_view()
        self._relabel.start()

    def _label_height(self) -> float:
        return QFontMetricsF(self._label(0).textItem.font()).height() + 2 * LABEL_MARGIN

    def _draw_arrows(self, g: Graph, hot: np.ndarray, chain: list[int] = ()) -> None:
        """Arrowheads at the derived (or newer) end of each drawn link, a fixed size on screen: the
        chain's always, the rest of the lineage's while at most HOT_ARROWS_MAX of its links are in
        view, the others' while at most ARROWS_MAX (more are a dark blur on every node, and the
        levels say which way links point)."""
        edges = np.vstack([g.source_edges, g.supersede_edges])
        if not len(edges) or not len(self._shown):
            self.arrows.setData([], [])
            self.hot_arrows.setData([], [])
            return
        e = edges[self._shown[edges[:, 0]] & self._shown[edges[:, 1]]]
        is_hot = hot[e[:, 0]] & hot[e[:, 1]]
        (x0, x1), (y0, y1) = self.vb.viewRange()
        head_in = (g.x[e[:, 0]] >= x0) & (g.x[e[:, 0]] <= x1) & (g.y[e[:, 0]] >= y0) & (g.y[e[:, 0]] <= y1)
        step = {(a, b) for a, b in zip(chain[:-1], chain[1:])}
        in_chain = np.array([(a, b) in step or (b, a) in step for a, b in e], bool) if step else \
            np.zeros(len(e), bool)
        keep = in_chain.copy()
        if int((head_in & is_hot).sum()) <= HOT_ARROWS_MAX:
            keep |= is_hot
        if int((head_in & ~is_hot).sum()) <= ARROWS_MAX:
            keep |= ~is_hot
        e, is_hot = e[keep], is_hot[keep]
        pw, ph = self.vb.viewPixelSize()
        pw, ph = pw or 1.0, ph or 1.0
        hx, hy = g.x[e[:, 0]], g.y[e[:, 0]]                  # head: the derived / newer memory
        dx, dy = (hx - g.x[e[:, 1]]) / pw, (hy - g.y[e[:, 1]]) / ph
        length = np.hypot(dx, dy)
        keep = length > ARROW_BACK + ARROW_LEN
        ux, uy = dx[keep] / length[keep], dy[keep] / length[keep]
        tx, ty = hx[keep] / pw - ux * ARROW_BACK, hy[keep] / ph - uy * ARROW_BACK
        bx, by = tx - ux * ARROW_LEN, ty - uy * ARROW_LEN
        xs, ys = [], []
        for side in (1, -1):
            xs += [tx, bx + side * uy * ARROW_HALF]
            ys += [ty, by - side * ux * ARROW_HALF]
        px = np.stack(xs, axis=1).reshape(-1) * pw
        py = np.stack(ys, axis=1).reshape(-1) * ph
        is_hot = np.repeat(is_hot[keep], 4)
        self.arrows.setData(px[~is_hot], py[~is_hot])
        self.hot_arrows.setData(px[is_hot], py[is_hot])

    def _draw_hot(self) -> None:
        """The selection's ancestors and descendants drawn over the base layer (cheap: only them),
        its chain's links over them."""
        g, data = self._drawn, self.state.data
        for t in self.labels:  # a fixed pool, hidden and reused: removing TextItems has crashed PySide6 at exit
            t.hide()
        self._label_nodes = []
        if g is None and self.summary is not None:
            self.hot_fade.hide()
            self._label_clusters()  # the view moved: labels where they now fit
        if g is None or data is None or not len(self._shown):
            self.hot_points.clear()
            self.hot_edges.setData(np.zeros(0), np.zeros(0))
            self.chain_edges.setData(np.zeros(0), np.zeros(0))
            self._draw_arrows(g, np.zeros(0, bool)) if g is not None else None
            return
        hot = np.zeros(g.n, bool)
        if self.hot:
            hot[list(self.hot)] = True
        hot &= self._shown
        nodes = np.flatnonzero(hot & (g.rows >= 0))
        rows = g.rows[nodes]
        codes, styles = style.kind_styles(data, rows)
        ring = pg.mkPen(self.theme.lineage, width=2)
        for st in styles:
            st["pen"] = ring
        self.hot_points.set_data(g.x[nodes], g.y[nodes], codes, styles,
                            size=style.importance_sizes(data.arrays.importance[rows], 6, 16) + 2)
        edges = np.vstack([g.source_edges, g.supersede_edges])
        ok = hot[edges[:, 0]] & hot[edges[:, 1]] if len(edges) else np.zeros(0, bool)
        e = edges[ok]
        self.hot_edges.setData(g.x[e].ravel(), g.y[e].ravel())
        chain = [i for i in self.chain if self._shown[i]]
        pairs = np.array(list(zip(chain[:-1], chain[1:])), np.int64).reshape(-1, 2)
        self.chain_edges.setData(g.x[pairs].ravel(), g.y[pairs].ravel())
        self._draw_arrows(g, hot, chain)
        self.hot_fade.setVisible(bool(self.hot))
        if self.hot_fade.isVisible():
            self.hot_fade.setRect(self.vb.viewRect())
        self._draw_labels(g, data, np.flatnonzero(self._shown), chain)

    def _label_order(self, g: Graph, data: StoreData, shown: np.ndarray, chain: list[int]) -> np.ndarray:
        """Nodes in the order they claim a label: the chain top to bottom, the rest of the lineage,
        then (if not too many are in view) the others; higher levels and more important memories
        first within each."""
        (x0, x1), (y0, y1) = self.vb.viewRange()
        visible = shown[(g.x[shown] >= x0) & (g.x[shown] <= x1) & (g.y[shown] >= y0) & (g.y[shown] <= y1)]
        hot = np.zeros(g.n, bool)
        hot[list(self.hot)] = True
        if len(visible) > LABEL_CANDIDATES:  # zoomed far out: the lineage, or with none the highest levels
            visible = visible[hot[visible]] if self.hot else \
                visible[np.argsort(-g.level[visible], kind="stable")[:LABEL_CANDIDATES]]
        seen = set(visible.tolist())
        first = [i for i in chain if i in seen]
        rest = np.setdiff1d(visible, first)
        imp = np.where(g.rows[rest] >= 0, np.nan_to_num(data.arrays.importance[np.maximum(g.rows[rest], 0)]), 0.0)
        rest = rest[np.lexsort((g.x[rest], -imp, -g.level[rest], ~hot[rest]))]
        return np.r_[np.array(first, np.int64), rest]

    def _draw_labels(self, g: Graph, data: StoreData, shown: np.ndarray, chain: list[int]) -> None:
        """Short labels where they fit, in `_label_order`: each beside its node (right, else left),
        else under or over it, where its rectangle (in pixels) stays in the plot and overlaps no
        label placed before it and no node of the chain; cut short with "…" to the room there is.
        Hover shows any node's full text."""
        if not len(shown):
            return
        area = self.vb.sceneBoundingRect().adjusted(1, 1, -1, -1)
        probe = self._label(0)
        fm = QFontMetricsF(probe.textItem.font())
        probe.setText("Xg")  # a label's box: its text's advance plus `pad`, `h` high
        box = probe.textItem.boundingRect()
        pad, h = box.width() - fm.horizontalAdvance("Xg"), box.height()
        sizes = np.full(g.n, 9.0)
        real = g.rows >= 0
        sizes[real] = style.importance_sizes(data.arrays.importance[g.rows[real]], 6, 16)
        in_chain, theme = set(chain), self.theme
        blocked = []  # the chain's nodes: no label covers them
        for i in chain:
            c = self.vb.mapViewToScene(QPointF(g.x[i], g.y[i]))
            r = sizes[i] / 2 + 1
            blocked.append(QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r))
        placed: list[QRectF] = []
        k = 0
        self._label_nodes = []
        for i in self._label_order(g, data, shown, chain):
            r = g.rows[i]
            text = ("missing: " + g.missing_ids.get(int(i), "?")) if r < 0 else data.previews[r]
            text = text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"
            node = self.vb.mapViewToScene(QPointF(g.x[i], g.y[i]))
            spot = self._spot(node, sizes[i] / 2, fm.horizontalAdvance(text) + pad, h, area,
                              placed + [b for j, b in zip(chain, blocked) if j != i])
            if spot is None:
                continue
            rect, left = spot
            if rect.width() < fm.horizontalAdvance(text) + pad:
                text = fm.elidedText(text, Qt.ElideRight, rect.width() - pad)
            t = self._label(k)
            colour = theme.broken if r < 0 else theme.label_text if (i in in_chain or i in self.hot) \
                else theme.label_text_faint
            t.setText(text, color=colour)
            size = t.textItem.boundingRect().size()  # as measured: within the room found
            rect = QRectF(rect.right() - size.width() if left else rect.left(), rect.top(),
                          min(size.width(), rect.width()), min(size.height(), rect.height()))
            placed.append(rect)
            self._show_label(t, rect)
            self._label_nodes.append(int(i))
            k += 1
            if k >= MAX_LABELS:
                break

    @staticmethod
    def _spot(node: QPointF, radius: float, width: float, h: float, area: QRectF,
              taken: list[QRectF]) -> tuple[QRectF, bool] | None:
        """Where a label `width` × `h` px goes beside a node at `node` (scene px): right of it, left,
        under, over; beside it, cut to the room up to the plot's edge if that leaves LABEL_MIN_PX.
        (rect, whether it is left of the node) of the first place inside `area` that meets none of
        `taken`, or None."""
        gap = radius + 3
        y = node.y() - h / 2
        right = min(width, area.right() - (node.x() + gap))
        left = min(width, node.x() - gap - area.left())
        spots = [QRectF(node.x() + gap, y, right, h), QRectF(node.x() - gap - left, y, left, h)]
        w = min(width, area.width())
        x = min(max(node.x() - w / 2, area.left()), area.right() - w)
        spots += [QRectF(x, node.y() + LABEL_GAP, w, h), QRectF(x, node.y() - LABEL_GAP - h, w, h)]
        for k, rect in enumerate(spots):
            if rect.width() >= min(width, LABEL_MIN_PX) and area.contains(rect) \
                    and not any(rect.intersects(t) for t in taken):
                return rect, k == 1
        return None

    def labelled_nodes(self) -> dict[int, QRectF]:
        """Node of the drawn graph -> where its label is, in scene pixels (the labels shown)."""
        nodes = self._label_nodes
        return {i: r for i, r in zip(nodes, self.label_rects()[:len(nodes)])}

    def label_rects(self) -> list[QRectF]:
        """Where the shown labels are, in scene pixels (tests check they neither overlap nor leave the plot)."""
        out = []
        for t in self.labels:
            if t.isVisible():
                t.updateTransform(force=True)
                out.append(t.mapRectToScene(t.boundingRect()))
        return out

    def _show_label(self, t: pg.TextItem, spot: QRectF) -> None:
        """Label `t` shown with its top-left at `spot` (scene coordinates, where it was placed)."""
        t.setAnchor((0, 0))
        t.setPos(self.vb.mapSceneToView(spot.topLeft()))
        t.show()
        t.updateTransform(force=True)

    def _label(self, k: int) -> pg.TextItem:
        while len(self.labels) <= k:
            t = pg.TextItem(anchor=(0, 0), fill=pg.mkBrush(style.color(self.theme.paper, 190)))  # readable over links
            t.textItem.document().setDocumentMargin(LABEL_MARGIN)
            t.setZValue(6)  # above the veil
            self.plot.addItem(t, ignoreBounds=True)
            t.hide()
            self.labels.append(t)
        return self.labels[k]

    def overlay_size(self) -> float:
        return 20.0
