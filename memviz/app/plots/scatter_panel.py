"""What the three plot panels share: the memories as one PointsItem with picking, a plain-text
hover label, a selection overlay, drag tools (rectangle, lasso, x-range) and export.

Markers are PointsItems (points_item.py: numpy in, one drawPixmapFragments call out), never
pyqtgraph ScatterPlotItems, whose per-point Python work costs 0.4 s at 100k points; the memories
themselves a DensityPointsItem (density_item.py), a density image with the outliers as markers
when more than 50k points are in view. Exports
never use pyqtgraph's exporters: PNG is a grab of the widget, SVG is the widget rendered
onto a QSvgGenerator (where PointsItem draws vector symbols).
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QApplication, QGraphicsItem, QGraphicsPathItem, QHBoxLayout, QVBoxLayout, QWidget

from memviz.app.plots import style
from memviz.app.plots.density_item import DensityPointsItem
from memviz.app.plots.points_item import PointsItem
from memviz.session.buffers import grow, with_room
from memviz.session.state import AppState

PICK_PIXELS = 8
HOVER_GAP = 12         # pixels between the pointer and its hover label
HOVER_WIDTH = 420      # a hover label wraps at this width (less in a narrow plot)
FLASH_MS = 2500  # how long memories new since the last refresh stay ringed


def points_in_polygon(x: np.ndarray, y: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Even-odd ray casting, vectorised over points (loop over the polygon's edges only)."""
    inside = np.zeros(len(x), bool)
    if len(poly) < 3:
        return inside
    x0, y0 = poly[:, 0].min(), poly[:, 1].min()
    x1, y1 = poly[:, 0].max(), poly[:, 1].max()
    cand = np.flatnonzero((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))
    px, py = x[cand], y[cand]
    hit = np.zeros(len(cand), bool)
    xs, ys = poly[:, 0], poly[:, 1]
    xe, ye = np.roll(xs, -1), np.roll(ys, -1)
    for ax, ay, bx, by in zip(xs, ys, xe, ye):
        crosses = (ay > py) != (by > py)
        if crosses.any():
            xint = ax + (py - ay) * (bx - ax) / ((by - ay) if by != ay else 1e-300)
            hit ^= crosses & (px < xint)
    inside[cand] = hit
    return inside


class ToolViewBox(pg.ViewBox):
    """A ViewBox whose left-drag pans, or draws a rectangle / lasso / x-range when a tool is
    active (the panel's tool buttons, or Shift = the panel's default tool while held)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.tool = "pan"
        self.shift_tool = "rect"
        self.on_shape = None          # callback(tool, points (m,2) in view coords, finished, modifiers)
        self._path: list[QPointF] = []
        self._shape = QGraphicsPathItem()
        self._shape.setZValue(1e9)
        self._shape.hide()
        self.addItem(self._shape, ignoreBounds=True)

    def set_shape_color(self, c: QColor) -> None:
        self._shape.setPen(QPen(c, 0, Qt.DashLine))
        self._shape.setBrush(QColor(c.red(), c.green(), c.blue(), 40))

    def mouseDragEvent(self, ev, axis=None):
        tool = self.shift_tool if ev.modifiers() & Qt.ShiftModifier else self.tool
        if tool == "pan" or ev.button() != Qt.LeftButton or self.on_shape is None:
            return super().mouseDragEvent(ev, axis)
        ev.accept()
        p = self.mapSceneToView(ev.scenePos())
        if ev.isStart():
            start = self.mapSceneToView(ev.buttonDownScenePos())
            self._path = [start]
        self._path.append(p)
        pts = np.array([[q.x(), q.y()] for q in self._path])
        if tool == "rect" or tool == "xrange":
            (ax, ay), (bx, by) = pts[0], pts[-1]
            if tool == "xrange":
                r = self.viewRange()[1]
                ay, by = r[0], r[1]
            pts = np.array([[ax, ay], [bx, ay], [bx, by], [ax, by]])
        path = QPainterPath(QPointF(*pts[0]))
        for q in pts[1:]:
            path.lineTo(QPointF(*q))
        path.closeSubpath()
        self._shape.setPath(path)
        self._shape.setVisible(not ev.isFinish())
        self.on_shape(tool, pts, ev.isFinish(), ev.modifiers())


class ScatterPanel(QWidget):
    """Base of the timeline, map and graph panels. Subclasses fill `self.x`, `self.y` and
    `self.rows` (point -> row of the arrays) and call `self.draw_points(...)`."""

    context_requested = Signal(list, QPoint)

    def __init__(self, state: AppState, parent=None, axis_items=None) -> None:
        super().__init__(parent)
        self.state = state
        self.vb = ToolViewBox()
        self.plot = pg.PlotWidget(viewBox=self.vb, axisItems=axis_items)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        for name in ("left", "bottom"):  # axes and grid repaint from a picture unless their range changes
            self.plot.getAxis(name).setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        self.points = DensityPointsItem()  # a density image when too many points are in view
        self.plot.addItem(self.points)
        self.overlay = PointsItem()
        self.overlay.setZValue(10)
        self.plot.addItem(self.overlay)
        self.fresh = PointsItem()  # rings around memories the agent just wrote (flash_new)
        self.fresh.setZValue(9)
        self.plot.addItem(self.fresh)
        self._flashes: list[tuple] = []  # (monotonic time, x, y) of each batch ringed, oldest first
        self._fresh_timer = QTimer(self, singleShot=True, timeout=lambda: self.flash_new([], []))
        self.hover = pg.TextItem(anchor=(0, 1))
        self.hover.setZValue(1e9)
        self.hover.hide()
        self.plot.addItem(self.hover, ignoreBounds=True)
        self.x = np.zeros(0)
        self.y = np.zeros(0)
        self.rows = np.zeros(0, np.int64)
        self._row_to_point: np.ndarray | None = None
        self.toolbar = QHBoxLayout()
        self.toolbar.setContentsMargins(0, 0, 0, 0)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addLayout(self.toolbar)
        lay.addWidget(self.plot, 1)
        self.theme: style.Theme | None = None  # the colours drawn with (restyle)
        ScatterPanel.restyle(self)
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=40, slot=self._mouse_moved)
        self._pointer_left = False  # the proxy delivers moves late: one arriving after Leave is stale
        self.plot.viewport().installEventFilter(self)
        state.data_changed.connect(lambda _d: self.hover.hide())  # its row belongs to the old data
        self.plot.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.vb.on_shape = self.on_shape
        state.selection_changed.connect(self._on_selection)

    # ------------------------------------------------------------ colours
    def restyle(self) -> None:
        """Take the colours of the palette's theme now (style.theme()): background, axes, hover
        label, selection ring, the shape being drawn. A panel extends it with its own items'
        colours and draws its points again; it runs when the palette changes (changeEvent)."""
        t = self.theme = style.theme()
        self.plot.setBackground(t.paper)
        for name in ("left", "bottom", "right", "top"):
            axis = self.plot.getAxis(name)
            axis.setPen(t.axis)
            axis.setTextPen(t.ink)
        self.hover.setColor(t.ink)
        self.hover.fill, self.hover.border = pg.mkBrush(style.color(t.hover_fill, 240)), pg.mkPen(t.hover_border)
        self._sel_pen = pg.mkPen(t.selected, width=2.5)
        self.vb.set_shape_color(QColor(t.tool))
        self.draw_selection()
        self.flash_new([], [])

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.PaletteChange, QEvent.ApplicationPaletteChange) and style.theme() != self.theme:
            self.restyle()

    # ------------------------------------------------------------ points
    def set_points(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> None:
        # copies with spare rows: a live refresh's add_points writes below them (see buffers.py)
        self.x, self.y = with_room(np.asarray(x, float)), with_room(np.asarray(y, float))
        self.rows = with_room(np.asarray(rows, np.int64))
        self._row_to_point = None

    def add_points(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> None:
        """Points drawn after the others (PointsItem.append): their rows become pickable and
        selectable. The arrays grow inside buffers with spare rows (a live refresh adds a few
        points to 100k without copying them)."""
        start, rows = len(self.rows), np.asarray(rows, np.int64)
        self.x, self.y = grow(self.x, np.asarray(x, float)), grow(self.y, np.asarray(y, float))
        self.rows = grow(self.rows, rows)
        lut = self._row_to_point
        if lut is not None and len(rows):
            if rows.max() >= len(lut):
                lut = grow(lut, np.full(int(rows.max()) + 1 - len(lut), -1, np.int64))
            lut[rows] = np.arange(start, start + len(rows))
        self._row_to_point = lut

    def flash_new(self, x: np.ndarray, y: np.ndarray) -> None:
        """Ring new memories for a moment (FLASH_MS each): they show up without moving the view.
        Each batch expires on its own time (an agent writing steadily does not keep them all ringed)."""
        now = time.monotonic()
        if len(x):
            self._flashes.append((now, np.asarray(x, float), np.asarray(y, float)))
        self._flashes = [f for f in self._flashes if now - f[0] < FLASH_MS / 1000]
        if not self._flashes:
            self.fresh.clear()
            return
        self.fresh.set_data(np.concatenate([f[1] for f in self._flashes]), np.concatenate([f[2] for f in self._flashes]),
                            size=15, styles=[{"pen": pg.mkPen(self.theme.new, width=2), "brush": None}])
        self._fresh_timer.start(max(1, int((self._flashes[0][0] + FLASH_MS / 1000 - now) * 1000) + 1))

    def point_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Indices of the drawn points showing these rows (rows not drawn are skipped)."""
        if self._row_to_point is None:
            n = 0 if self.state.data is None else self.state.data.n
            lut = with_room(np.full(max(n, int(self.rows.max()) + 1 if len(self.rows) else 0), -1, np.int64))
            lut[self.rows] = np.arange(len(self.rows))
            self._row_to_point = lut
        rows = np.asarray(rows, np.int64)
        rows = rows[(rows >= 0) & (rows < len(self._row_to_point))]
        p = self._row_to_point[rows]
        return p[p >= 0]

    def pick(self, scene_pos) -> int | None:
        """The row of the point nearest to a scene position, within PICK_PIXELS."""
        if not len(self.x) or not self.vb.sceneBoundingRect().contains(scene_pos):
            return None
        v = self.vb.mapSceneToView(scene_pos)
        pw, ph = self.vb.viewPixelSize()
        d2 = ((self.x - v.x()) / pw) ** 2 + ((self.y - v.y()) / ph) ** 2
        i = int(np.argmin(d2))
        return int(self.rows[i]) if d2[i] <= PICK_PIXELS ** 2 else None

    # ------------------------------------------------------------ mouse
    def hover_text(self, row: int) -> str:
        data = self.state.data
        a = data.arrays
        from memviz.store import iso
        status = "" if np.isnan(a.valid_until[row]) else "   [retired]"
        text = data.previews[row]
        text = text if len(text) <= 160 else text[:157] + "…"
        return f"{a.kind[row]} · {a.agent[row]} · imp {a.importance[row]:g} · {iso(a.event_time[row])}{status}\n{text}"

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Leave:
            self._pointer_left = True
            self.hover.hide()
        elif event.type() in (QEvent.MouseMove, QEvent.Enter):
            self._pointer_left = False
        return False

    def _mouse_moved(self, evt) -> None:
        pos = evt[0]
        if QApplication.mouseButtons() != Qt.NoButton:  # a drag (pan, tool): no hover, and no O(n) pick per move
            self.hover.hide()
            return
        row = self.pick(pos) if self.state.data is not None and not self._pointer_left else None
        if row is None:
            self.hover.hide()
            return
        self.hover.setText(self.hover_text(row))  # TextItem.setText is plain text
        self.hover.show()
        self.place_hover(pos)

    def place_hover(self, scene_pos) -> None:
        """Put the hover label beside the pointer, on the side with room, wholly inside the plot."""
        area = self.vb.sceneBoundingRect()
        self.hover.setTextWidth(max(80.0, min(HOVER_WIDTH, area.width() - 8)))
        self.hover.updateTransform(force=True)  # pixel-sized in the current view before it is measured
        size = self.hover.textItem.boundingRect().size()
        w, h = size.width(), size.height()
        x = scene_pos.x() + HOVER_GAP
        if x + w > area.right():
            x = scene_pos.x() - HOVER_GAP - w
        y = scene_pos.y() + HOVER_GAP
        if y + h > area.bottom():
            y = scene_pos.y() - HOVER_GAP - h
        x = min(max(x, area.left() + 1), area.right() - w - 1)
        y = min(max(y, area.top() + 1), area.bottom() - h - 1)
        self.hover.setAnchor((0, 0))
        self.hover.setPos(self.vb.mapSceneToView(QPointF(x, y)))

    def _mouse_clicked(self, ev) -> None:
        if ev.button() == Qt.RightButton:
            row = self.pick(ev.scenePos())
            if row is not None and row not in set(self.state.selection.tolist()):
                self.state.select([row], source=None)
            self.context_requested.emit(self.state.selected_ids, ev.screenPos().toPoint())
            ev.accept()
            return
        if ev.button() != Qt.LeftButton or ev.double():
            return
        row = self.pick(ev.scenePos())
        if ev.modifiers() & Qt.ControlModifier:
            if row is not None:
                sel = set(self.state.selection.tolist())
                sel ^= {row}
                self.state.select(sorted(sel), source=None)
        elif row is not None:
            self.state.select([row], source=None)
        elif self.vb.sceneBoundingRect().contains(ev.scenePos()):
            self.state.select([], source=None)

    def on_shape(self, tool: str, pts: np.ndarray, finished: bool, modifiers) -> None:
        """Rectangle / lasso select (subclasses handle "xrange")."""
        if not finished or tool not in ("rect", "lasso"):
            return
        inside = points_in_polygon(self.x, self.y, pts)
        inside &= self.selectable_mask()
        rows = self.rows[inside]
        if modifiers & Qt.ControlModifier:
            rows = np.union1d(rows, self.state.selection)
        self.state.select(rows, source=None)

    def selectable_mask(self) -> np.ndarray:
        return np.ones(len(self.x), bool)

    # ------------------------------------------------------------ selection overlay
    def _on_selection(self, rows, current, source) -> None:
        self.draw_selection()

    def draw_selection(self) -> None:
        pts = self.point_of_rows(self.state.selection) if len(self.rows) else np.zeros(0, np.int64)
        self.overlay.set_data(self.x[pts], self.y[pts], styles=[{"pen": self._sel_pen, "brush": None}],
                              size=self.overlay_size())

    def overlay_size(self) -> float:
        return 14.0

    # ------------------------------------------------------------ export
    def export_image(self, path: str) -> None:
        if path.lower().endswith(".svg"):
            from PySide6.QtSvg import QSvgGenerator
            gen = QSvgGenerator()
            gen.setFileName(path)
            gen.setSize(self.plot.size())
            gen.setViewBox(QRect(0, 0, self.plot.width(), self.plot.height()))
            gen.setTitle("memviz plot")
            cached = [it for it in self.plot.scene().items() if it.cacheMode() != QGraphicsItem.NoCache]
            for it in cached:  # vectors, not the pictures kept for repaints
                it.setCacheMode(QGraphicsItem.NoCache)
            p = QPainter(gen)
            try:
                self.plot.render(p)
            finally:
                p.end()
                for it in cached:
                    it.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        elif not self.plot.grab().save(path):
            raise OSError(f"could not write {path}")
