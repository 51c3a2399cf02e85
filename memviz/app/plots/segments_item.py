"""SegmentsItem: many straight line segments (graph links, arrowheads) drawn at the cost of
the pixels they cover, not of their number.

A 100k-memory store has ~70k source links. Drawn as pyqtgraph's PlotCurveItem(connect="pairs")
draws them — one path in a translucent pen — a repaint of the reflection graph took ~5 s on
this machine's software raster: a translucent pen makes Qt fill the outline of the whole
path, so that overlaps are not blended twice. Here painting maps the segments to device
pixels with numpy, keeps each distinct pixel segment once (at a normal zoom 70k links fall on
a few hundred) and strokes them with the pen's colour already blended over the view's
background: an opaque pen, which Qt's cosmetic stroker draws in a millisecond, and the same
look (one path in a translucent pen is the union, drawn at one opacity). The paths are kept
until the data or the view's transform changes. Vector devices (SVG export, printing) get
every segment as given, in the pen as given.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from memviz.app.plots.points_item import VECTOR_ENGINES, data_bounds

_ROUNDABLE = 16_000.0   # px (< 2**14): a segment with an end further out is drawn as given


class SegmentsItem(pg.GraphicsObject):
    """Segments (x[2i], y[2i]) → (x[2i+1], y[2i+1]) in one pen; `setData`, `getData` and
    `opts["pen"]` as pyqtgraph's PlotDataItem(connect="pairs") has them."""

    def __init__(self, pen=None) -> None:
        super().__init__()
        self.opts = {"pen": pg.mkPen(pen if pen is not None else "k")}
        self._x = self._y = np.zeros(0)
        self._bounds: tuple | None = None
        self._cache: tuple | None = None  # (transform and background, pen, path in device pixels)

    def setData(self, x, y) -> None:
        x, y = np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()
        n = min(len(x), len(y)) // 2 * 2
        self._x, self._y = x[:n], y[:n]
        ok = np.isfinite(self._x) & np.isfinite(self._y)
        self._bounds = (self._x[ok].min(), self._x[ok].max(), self._y[ok].min(), self._y[ok].max()) if ok.any() \
            else None
        self._cache = None
        self.prepareGeometryChange()
        self.informViewBoundsChanged()
        self.update()

    def setPen(self, pen) -> None:
        self.opts["pen"] = pg.mkPen(pen)
        self.update()

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        return self._x, self._y

    def __len__(self) -> int:
        return len(self._x) // 2

    # ------------------------------------------------------------ what the ViewBox asks
    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        return data_bounds(self._bounds, self._x, self._y, ax, orthoRange)

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            return QRectF()
        x0, x1, y0, y1 = self._bounds
        return QRectF(x0, y0, x1 - x0, y1 - y0)

    # ------------------------------------------------------------ drawing
    def paint(self, p: QPainter, option, widget=None) -> None:
        if not len(self._x):
            return
        engine = p.paintEngine()
        if engine is not None and engine.type() in VECTOR_ENGINES:
            p.setPen(self.opts["pen"])
            p.drawPath(pg.arrayToQPath(self._x, self._y, connect="pairs"))
            return
        t, device = p.transform(), p.device()
        view = self.getViewWidget()
        background = view.backgroundBrush().color() if view is not None else QColor("white")
        key = (t.m11(), t.m12(), t.m21(), t.m22(), t.dx(), t.dy(), device.width(), device.height(),
               background.rgba(), self.opts["pen"].color().rgba())
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, _opaque(self.opts["pen"], background), self._path(t, device.width(), device.height()))
        p.save()
        p.resetTransform()
        p.setPen(self._cache[1])
        p.drawPath(self._cache[2])
        p.restore()

    def _path(self, t, width: int, height: int):
        """Every distinct pixel segment that touches the device, once, in device pixels."""
        dx = t.m11() * self._x + t.m21() * self._y + t.dx()
        dy = t.m12() * self._x + t.m22() * self._y + t.dy()
        ends = np.c_[dx[0::2], dy[0::2], dx[1::2], dy[1::2]]
        ok = np.isfinite(ends).all(axis=1)
        ok &= (np.maximum(ends[:, 0], ends[:, 2]) >= -2) & (np.minimum(ends[:, 0], ends[:, 2]) <= width + 2)
        ok &= (np.maximum(ends[:, 1], ends[:, 3]) >= -2) & (np.minimum(ends[:, 1], ends[:, 3]) <= height + 2)
        far = ok & (np.abs(ends) > _ROUNDABLE).any(axis=1)
        q = np.rint(ends[ok & ~far]).astype(np.int64) + 2 ** 14  # 0 <= q < 2**15: four in one int64
        packed = np.unique((q[:, 0] << 48) | (q[:, 1] << 32) | (q[:, 2] << 16) | q[:, 3])
        near = np.c_[packed >> 48, (packed >> 32) & 0xFFFF, (packed >> 16) & 0xFFFF, packed & 0xFFFF] - 2 ** 14
        seg = np.r_[near.astype(np.float64), ends[far]]
        return pg.arrayToQPath(seg[:, [0, 2]].ravel(), seg[:, [1, 3]].ravel(), connect="pairs")


def _opaque(pen: QPen, background: QColor) -> QPen:
    """`pen` with its colour blended over `background` once: an opaque pen of the same look.
    A dashed pen is made 1 px wide: wider, Qt dashes it by filling outlines (~1 s for 1k links)."""
    c, a = pen.color(), pen.color().alphaF()
    out = QPen(pen)
    if pen.style() not in (Qt.SolidLine, Qt.NoPen):
        out.setWidthF(min(pen.widthF(), 1.0))
    out.setColor(QColor.fromRgbF(*(a * f(c) + (1 - a) * f(background) for f in (QColor.redF, QColor.greenF,
                                                                                  QColor.blueF)), 1.0))
    return out
