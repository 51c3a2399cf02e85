"""PointsItem: many markers drawn straight from numpy arrays.

pyqtgraph's ScatterPlotItem keeps a record per point and, on every setData, builds a style
key per point in Python (about 2 µs each): 0.4 s for the timeline and map of a 100k store.
Here a point is only (x, y, code). Each distinct (symbol, size, pen, brush) is rendered once
into a small atlas; painting maps the visible points to device pixels with numpy and hands
them to one QPainter.drawPixmapFragments call. No per-point Python work anywhere.

An item of CACHE_MIN points or more keeps the picture it painted, per view (painter transform
and device): a repaint of the plot that leaves the view where it is (a ring, a hover label, a
live refresh) blits it, and `append` draws only the new points onto it.

Paint devices that are not pixels (SVG export, printing) get real vector symbols instead.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import drawSymbol, renderSymbol
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPaintEngine, QPainter, QPixmap, QTransform
from shiboken6 import wrapInstance

from memviz.session.buffers import grow, taken, with_room

VECTOR_ENGINES = {QPaintEngine.Type.SVG, QPaintEngine.Type.Pdf, QPaintEngine.Type.Picture}  # exports: draw as vectors
_SIZE_STEP = 0.5  # sizes are rounded to this many pixels: a handful of atlas entries
CACHE_MIN = 20_000  # points from which the item keeps the picture it painted (see paint)


class PointsItem(pg.GraphicsObject):
    """Markers at (x, y); point i is drawn with styles[codes[i]] at size[i] pixels.

    A style is a dict with "brush", "pen" (None = no outline), "symbol" (default "o") and
    "z" (points of a lower z are drawn first)."""

    def __init__(self) -> None:
        super().__init__()
        self._x = self._y = np.zeros(0)
        self._entry = np.zeros(0, np.int64)       # per point: index into the atlas entries
        self._entries: list[tuple] = []           # (symbol, size, pen, brush) per atlas entry
        self._entry_z: list[float] = []
        self._atlas: QPixmap | None = None
        self._atlas_key: list | None = None       # what the atlas was drawn for (kept while the same)
        self._styles: list | None = None          # set_data's styles (codes index them)
        self._entry_of: dict = {}                 # (code, size step) -> its atlas entry
        self._entry_code: list[int] = []          # per atlas entry: its style's code
        self._pos: np.ndarray | None = None       # per point given: its index in drawing order (None: the same)
        self._rects = np.zeros((0, 4))            # per entry: left, top, width, height in the atlas
        self._dpr = 0.0
        self._bounds: tuple | None = None         # (xmin, xmax, ymin, ymax) of the finite points
        self._max_px = 0.0
        self._cache: tuple | None = None          # (painter transform and device, QImage): see paint

    # ------------------------------------------------------------ data
    def set_data(self, x, y, codes=None, styles=None, size=6.0) -> None:
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        n = len(x)
        styles = styles or [{"brush": pg.mkBrush("k"), "pen": None}]
        codes = np.zeros(n, np.int64) if codes is None else np.asarray(codes, np.int64)
        sizes = np.broadcast_to(np.asarray(size, np.float64), (n,))
        steps = np.round(sizes / _SIZE_STEP).astype(np.int64)
        z = np.array([st.get("z", 0) for st in styles], np.float64)
        # draw order: by style z (stable, so equal z keeps the caller's order)
        order = np.argsort(z[codes], kind="stable") if n and np.ptp(z) else np.arange(n)
        n_steps = int(steps.max(initial=0)) + 1
        key = codes[order] * n_steps + steps[order]
        uniq, entry = np.unique(key, return_inverse=True)
        self._styles, self._entries, self._entry_z, self._entry_code, self._entry_of = styles, [], [], [], {}
        for k in uniq.tolist():
            self._new_entry(k // n_steps, k % n_steps)
        self._cache = None
        # with spare rows: a live refresh's append writes below them, copying none (see buffers.py)
        self._pos = None if not (n and np.ptp(z)) else with_room(np.argsort(order))
        self._x, self._y, self._entry = taken(x, order), taken(y, order), with_room(entry.ravel().astype(np.int64))
        key = [(sym, size, pen.color().rgba(), pen.widthF(), int(pen.style().value), brush.color().rgba(),
                int(brush.style().value)) for sym, size, pen, brush in self._entries]
        if key != self._atlas_key:  # the same symbols (a live refresh): the atlas stays
            self._atlas, self._atlas_key = None, key
        self._max_px = max((e[1] + e[2].widthF() for e in self._entries), default=0.0)
        ok = np.isfinite(self._x) & np.isfinite(self._y)
        self._bounds = (self._x[ok].min(), self._x[ok].max(), self._y[ok].min(), self._y[ok].max()) if ok.any() \
            else None
        self.prepareGeometryChange()
        self.informViewBoundsChanged()
        self.update()

    @property
    def styles(self) -> list:
        """The styles of the last set_data (what the points are drawn in)."""
        return list(self._styles or [])

    def append(self, x, y, codes, size=6.0) -> bool:
        """Draw more points, after the others, in the styles of the last set_data (`codes` index
        them): a live refresh adds a few points to 100k without sorting them all again. False
        (nothing done) when a point's code is not a style or it belongs below the others (a
        lower z): call set_data instead."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if not len(x):
            return True
        at = self._entries_of(codes, size, len(x))
        if at is None:
            return False
        if self._entry_z and min(self._entry_z[i] for i in set(at.tolist())) < max(self._entry_z):
            return False
        start = len(self._x)
        # (in buffers with spare rows: a few points appended to a million copy none of them)
        self._x, self._y, self._entry = grow(self._x, x), grow(self._y, y), grow(self._entry, at)
        if self._pos is not None:
            self._pos = grow(self._pos, np.arange(start, start + len(x)))
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.any():
            b = (x[ok].min(), x[ok].max(), y[ok].min(), y[ok].max())
            old = self._bounds
            self._bounds = b if old is None else (min(old[0], b[0]), max(old[1], b[1]), min(old[2], b[2]),
                                                  max(old[3], b[3]))
            if self._bounds != old:  # (inside the old bounds the item's rect stays: no geometry change)
                self.prepareGeometryChange()
                self.informViewBoundsChanged()
        self._draw_into_cache(start)
        if ok.any():
            self.update(self._rect_of(x[ok], y[ok]))  # only where they are
        return True

    def _new_entry(self, code: int, step: int) -> int:
        """A new atlas entry: style `code` at size step `step`."""
        st = self._styles[code]
        pen = st.get("pen")
        self._entries.append((st.get("symbol", "o"), step * _SIZE_STEP, pg.mkPen(None) if pen is None else pg.mkPen(pen),
                              pg.mkBrush(st.get("brush"))))
        self._entry_z.append(st.get("z", 0))
        self._entry_code.append(code)
        self._entry_of[(code, step)] = len(self._entries) - 1
        return len(self._entries) - 1

    def _entries_of(self, codes, size, n: int) -> np.ndarray | None:
        """The atlas entries of `n` points in the styles of the last set_data (`codes` index them)
        at `size`, made if not drawn yet (a first retired memory of a kind); None for a code
        outside the styles."""
        styles = self._styles
        codes = np.broadcast_to(np.asarray(codes, np.int64), (n,))
        if styles is None or codes.min() < 0 or codes.max() >= len(styles):
            return None
        steps = np.round(np.broadcast_to(np.asarray(size, np.float64), (n,)) / _SIZE_STEP).astype(np.int64)
        pairs, which = np.unique(np.stack([codes, steps], axis=1), axis=0, return_inverse=True)
        made = len(self._entries)
        entries = np.array([self._entry_of.get(pair) if pair in self._entry_of else self._new_entry(*pair)
                            for pair in map(tuple, pairs.tolist())], np.int64)
        if len(self._entries) > made:   # drawn into the atlas at the next paint
            self._atlas = self._atlas_key = None
            max_px = max(e[1] + e[2].widthF() for e in self._entries)
            if max_px > self._max_px:
                self._max_px = max_px
                self.prepareGeometryChange()
        return entries[which.ravel()]

    def restyle(self, points, codes, size=6.0) -> bool:
        """Other styles for points already drawn (`points`: their indices as given to set_data
        and append; `codes` index the styles of the last set_data): a live refresh's changed rows
        (a memory retired, a new importance) without sorting every point again. False (nothing
        done) when a code is not a style or a point would move to another layer (z): call
        set_data instead."""
        points = np.asarray(points, np.int64)
        if not len(points):
            return True
        at = self._entries_of(codes, size, len(points))
        if at is None:
            return False
        drawn = points if self._pos is None else self._pos[points]
        z = np.asarray(self._entry_z, np.float64)
        before = self._entry[drawn]
        if (z[before] != z[at]).any():
            return False
        self._entry[drawn] = at
        self._restyled(drawn, at)
        self._cache = None  # (a smaller marker cannot be drawn over a larger one)
        self.update()
        return True

    def _restyled(self, drawn: np.ndarray, entries: np.ndarray) -> None:
        """Points `drawn` (indices in drawing order) now have atlas entries `entries` (for subclasses)."""

    def codes_of(self, points) -> np.ndarray:
        """The style codes points are drawn with (`points`: indices as given to set_data and append)."""
        points = np.asarray(points, np.int64)
        drawn = points if self._pos is None else self._pos[points]
        return np.asarray(self._entry_code, np.int64)[self._entry[drawn]]

    def _rect_of(self, x: np.ndarray, y: np.ndarray) -> QRectF:
        """The rectangle (item coordinates) markers at x, y can cover."""
        px, py = self.pixelVectors()
        pad_x = 0.0 if px is None else px.length() * self._max_px
        pad_y = 0.0 if py is None else py.length() * self._max_px
        x0, x1, y0, y1 = float(x.min()), float(x.max()), float(y.min()), float(y.max())
        return QRectF(x0 - pad_x, y0 - pad_y, x1 - x0 + 2 * pad_x, y1 - y0 + 2 * pad_y)

    def get_data(self) -> tuple[np.ndarray, np.ndarray]:
        """x and y as given to set_data and append (in that order)."""
        if self._pos is None:
            return self._x, self._y
        return self._x[self._pos], self._y[self._pos]

    def clear(self) -> None:
        self.set_data(np.zeros(0), np.zeros(0))

    def __len__(self) -> int:
        return len(self._x)

    # ------------------------------------------------------------ what the ViewBox asks
    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        return data_bounds(self._bounds, self._x, self._y, ax, orthoRange)

    def pixelPadding(self) -> float:
        return self._max_px * 0.7072

    def boundingRect(self) -> QRectF:
        if self._bounds is None:
            return QRectF()
        x0, x1, y0, y1 = self._bounds
        px, py = self.pixelVectors()
        pad = self.pixelPadding()
        try:
            px = 0.0 if px is None else px.length() * pad
            py = 0.0 if py is None else py.length() * pad
        except OverflowError:
            px = py = 0.0
        return QRectF(x0 - px, y0 - py, x1 - x0 + 2 * px, y1 - y0 + 2 * py)

    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()  # the padding is in pixels, so the rect follows the zoom
        super().viewTransformChanged()

    # ------------------------------------------------------------ drawing
    def _build_atlas(self, dpr: float) -> None:
        """Every entry rendered once, side by side in one pixmap."""
        images = [renderSymbol(sym, size, pen, brush, dpr=dpr) for sym, size, pen, brush in self._entries]
        width = sum(im.width() for im in images)
        height = max((im.height() for im in images), default=1)
        atlas = QImage(max(width, 1), height, QImage.Format.Format_ARGB32_Premultiplied)
        atlas.fill(0)
        rects, left = [], 0
        p = QPainter(atlas)
        for im in images:
            im.setDevicePixelRatio(1.0)
            p.drawImage(left, 0, im)
            rects.append((left, 0, im.width(), im.height()))
            left += im.width()
        p.end()
        self._atlas = QPixmap.fromImage(atlas)
        self._rects = np.array(rects, np.float64).reshape(-1, 4)
        self._dpr = dpr

    def _visible(self) -> np.ndarray:
        """Indices of the points whose marker can touch the view."""
        vr = self.viewRect()
        if vr is None:
            return np.flatnonzero(np.isfinite(self._x) & np.isfinite(self._y))
        px, py = self.pixelVectors()
        pad_x = 0.0 if px is None else px.length() * self._max_px
        pad_y = 0.0 if py is None else py.length() * self._max_px
        x, y = self._x, self._y
        return np.flatnonzero((x >= vr.left() - pad_x) & (x <= vr.right() + pad_x)
                              & (y >= vr.top() - pad_y) & (y <= vr.bottom() + pad_y))

    def paint(self, p: QPainter, option, widget=None) -> None:
        if not len(self._x) or not self._entries:
            return
        engine = p.paintEngine()
        vector = engine is not None and engine.type() in VECTOR_ENGINES
        if vector or len(self._x) < CACHE_MIN:
            self._cache = None
            self._draw(p, self._visible(), vector, widget)
            return
        # a large item: repainted from what it drew last time while the view stays (a live
        # refresh, a ring, a hover label), its points drawn again only when the view moves
        dev = p.device()
        t, dpr = p.transform(), dev.devicePixelRatioF()
        key = (t.m11(), t.m12(), t.m21(), t.m22(), t.dx(), t.dy(), dev.width(), dev.height(), dpr)
        if self._cache is None or self._cache[0] != key:
            img = QImage(max(1, round(dev.width() * dpr)), max(1, round(dev.height() * dpr)),
                         QImage.Format.Format_ARGB32_Premultiplied)
            img.setDevicePixelRatio(dpr)
            img.fill(0)
            q = QPainter(img)
            q.setTransform(t)
            self._draw(q, self._visible(), False, None)
            q.end()
            self._cache = (key, img)
        p.save()
        p.resetTransform()
        p.drawImage(0, 0, self._cache[1])
        p.restore()

    def paint_points(self, p: QPainter, widget, vis: np.ndarray) -> None:
        """Draw the points `vis` (indices in drawing order, ascending) with the painter's transform,
        uncached (the density item draws its outliers and markers this way)."""
        engine = p.paintEngine()
        self._draw(p, vis, engine is not None and engine.type() in VECTOR_ENGINES, widget)

    def _draw(self, p: QPainter, vis: np.ndarray, vector: bool, widget) -> None:
        """Points `vis` (indices) through p's transform: atlas fragments, or vector symbols."""
        if not len(vis):
            return
        t = p.transform()
        dx = t.m11() * self._x[vis] + t.m21() * self._y[vis] + t.dx()
        dy = t.m12() * self._x[vis] + t.m22() * self._y[vis] + t.dy()
        np.clip(dx, -2.0 ** 30, 2.0 ** 30, out=dx)  # Qt misbehaves on huge coordinates
        np.clip(dy, -2.0 ** 30, 2.0 ** 30, out=dy)
        p.save()
        p.resetTransform()
        try:
            if vector:
                self._paint_vector(p, dx, dy, self._entry[vis])
                return
            dpr = widget.devicePixelRatioF() if widget is not None else p.device().devicePixelRatioF()
            if self._atlas is None or dpr != self._dpr:
                self._build_atlas(dpr)
            frags = np.empty((len(vis), 10), np.float64)  # QPainter::PixmapFragment, field by field
            frags[:, 0], frags[:, 1] = dx, dy             # centre of the target
            frags[:, 2:6] = self._rects[self._entry[vis]]  # source rect in the atlas
            frags[:, 6:8] = 1.0 / dpr                      # scale
            frags[:, 8], frags[:, 9] = 0.0, 1.0            # rotation, opacity
            first = wrapInstance(frags.ctypes.data, QPainter.PixmapFragment)
            p.drawPixmapFragments(first, len(frags), self._atlas)
        finally:
            p.restore()

    def _draw_into_cache(self, start: int) -> None:
        """Points from `start` on (just appended, on top of the others) drawn onto the cached
        picture, which stays valid: a live refresh costs its new points, not a repaint of all."""
        if self._cache is None:
            return
        key, img = self._cache
        m11, m12, m21, m22, ddx, ddy = key[:6]
        q = QPainter(img)
        q.setTransform(QTransform(m11, m12, m21, m22, ddx, ddy))
        self._draw(q, start + np.flatnonzero(np.isfinite(self._x[start:]) & np.isfinite(self._y[start:])), False, None)
        q.end()

    def _paint_vector(self, p: QPainter, dx, dy, entry) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        for e in sorted(range(len(self._entries)), key=self._entry_z.__getitem__):
            sym, size, pen, brush = self._entries[e]
            for x, y in zip(dx[entry == e].tolist(), dy[entry == e].tolist()):
                p.resetTransform()
                p.translate(x, y)
                drawSymbol(p, sym, size, pen, brush)

    # ------------------------------------------------------------ for tests and exports
    def atlas_entries(self) -> int:
        return len(self._entries)


def data_bounds(bounds, x: np.ndarray, y: np.ndarray, ax: int, ortho_range=None):
    """pyqtgraph's dataBounds for items holding coordinates `x`, `y` with cached `bounds`
    (xmin, xmax, ymin, ymax): the range along axis `ax`, within `ortho_range` on the other."""
    if bounds is None:
        return (None, None)
    if ortho_range is None:
        return bounds[2 * ax:2 * ax + 2]
    d, other = (x, y) if ax == 0 else (y, x)
    d = d[(other >= ortho_range[0]) & (other <= ortho_range[1]) & np.isfinite(d)]
    return (None, None) if not len(d) else (d.min(), d.max())
