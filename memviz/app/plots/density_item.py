"""DensityPointsItem: a PointsItem that stays fast at a million points.

Up to `points_max` points in view it is a PointsItem. With more, a frame draws
memviz.layout.density's image of the view (each cell the mean colour of its points' styles,
opacity by log count) and, over it, the points isolated at that scale as real markers, so an
outlier is never lost in the image. The grid behind it is built at the first such frame after
set_data; points appended since (a live refresh) are drawn as markers until they are many enough
to bin them again, which a background thread does (the old grid and the markers are drawn
meanwhile: a paint never waits for a million points to be binned); points restyled since (a
memory retired) are recoloured in the grid, cell by cell. SVG/PDF exports always draw every point
as a vector symbol.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QImage, QPainter

from memviz.app.plots.points_item import VECTOR_ENGINES, PointsItem
from memviz.layout.density import FINE, POINTS_MAX, DensityGrid, Frame, build_later

REBIN_SHARE = 0.05  # past this share of points appended since the grid was built, it is built again


class DensityPointsItem(PointsItem):
    def __init__(self, grid_size: tuple[int, int] = (FINE, FINE), points_max: int = POINTS_MAX) -> None:
        super().__init__()
        self.grid_size = grid_size
        self.points_max = points_max
        self._grid: DensityGrid | None = None
        self._was: DensityGrid | None = None    # the grid before set_data: kept if only the colours changed
        self.last_frame: Frame | None = None   # what the last paint drew (None: every point, as a PointsItem)
        self._next = None      # (Future of a DensityGrid of more points, points restyled since it began)
        self._poll = QTimer(self, interval=100, timeout=self._take_next)

    def set_data(self, *args, **kwargs) -> None:
        super().set_data(*args, **kwargs)
        self._was = self._grid or self._was
        self._grid = None
        self._next = None
        self._poll.stop()

    def _restyled(self, drawn: np.ndarray, entries: np.ndarray) -> None:
        grid = self._grid
        if grid is not None:
            inside = drawn < grid.n
            grid.recolour(drawn[inside], grid.colour_index(self._entry_rgb()[entries[inside]]))
        if self._next is not None:
            self._next[1].append(drawn)

    def _entry_rgb(self) -> np.ndarray:
        """(entries, 3) RGB per atlas entry: its fill, or its outline when hollow."""
        rgb = []
        for _sym, _size, pen, brush in self._entries:
            c = brush.color() if brush.style() != Qt.BrushStyle.NoBrush and brush.color().alpha() > 0 else pen.color()
            rgb.append((c.red(), c.green(), c.blue()))
        return np.array(rgb, np.float64).reshape(-1, 3)

    def _entry_palette(self) -> tuple[np.ndarray, np.ndarray]:
        """(colour index per atlas entry, RGB palette)."""
        palette, index = np.unique(self._entry_rgb(), axis=0, return_inverse=True)
        return index.ravel(), palette

    def grid(self) -> DensityGrid:
        n = len(self._x)
        if self._grid is None or n < self._grid.n:
            index, palette = self._entry_palette()
            was, self._was = self._was, None
            if self._grid is None and was is not None and was.n == n and (was.gx, was.gy) == tuple(self.grid_size) \
                    and np.array_equal(was.x, self._x, equal_nan=True) and np.array_equal(was.y, self._y, equal_nan=True):
                self._grid = was.recoloured(index[self._entry], palette)  # same points, new colours
            else:
                self._grid = DensityGrid(self._x, self._y, index[self._entry], palette, self.grid_size)
        elif n - self._grid.n > REBIN_SHARE * self._grid.n and self._next is None:
            # many points appended since: binned again in the background, this grid drawn meanwhile
            index, palette = self._entry_palette()
            self._next = (build_later(self._x, self._y, index[self._entry], palette, self.grid_size), [])
            self._poll.start()
        return self._grid

    def _take_next(self) -> None:
        """The grid binned in the background, once made: points restyled since are recoloured in it."""
        job, restyled = self._next
        if not job.done():
            return
        self._next = None
        self._poll.stop()
        if job.exception() is not None:
            return  # (out of memory) the old grid and the markers stay
        grid = job.result()
        if restyled:
            drawn = np.unique(np.concatenate(restyled))
            drawn = drawn[drawn < grid.n]
            grid.recolour(drawn, grid.colour_index(self._entry_rgb()[self._entry[drawn]]))
        self._grid = grid
        self.update()

    def paint(self, p: QPainter, option, widget=None) -> None:
        n = len(self._x)
        engine = p.paintEngine()
        vr = self.viewRect()
        if n <= self.points_max or vr is None or (engine is not None and engine.type() in VECTOR_ENGINES):
            self.last_frame = None
            return super().paint(p, option, widget)
        if not self._entries:
            return
        grid = self.grid()
        t = p.transform()
        w_px, h_px = abs(t.m11()) * vr.width() + abs(t.m21()) * vr.height(), \
            abs(t.m12()) * vr.width() + abs(t.m22()) * vr.height()
        px, py = self.pixelVectors()
        pad = (0.0 if px is None else px.length() * self._max_px, 0.0 if py is None else py.length() * self._max_px)
        view = (vr.left(), vr.right(), vr.top(), vr.bottom())
        frame = grid.frame(view, (w_px, h_px), self.points_max, pad)
        self.last_frame = frame
        extra = np.arange(grid.n, n)  # appended since the grid was built: always markers
        if len(extra):
            ex, ey = self._x[extra], self._y[extra]
            extra = extra[(ex >= view[0] - pad[0]) & (ex <= view[1] + pad[0])
                          & (ey >= view[2] - pad[1]) & (ey <= view[3] + pad[1])]
        if frame.image is None:
            self.paint_points(p, widget, np.concatenate([frame.points, extra]))
            return
        img = frame.image
        h, w = img.shape[:2]
        qimg = QImage(img.data, w, h, 4 * w, QImage.Format.Format_RGBA8888)
        x0, y0, x1, y1 = frame.rect
        p.save()
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        p.drawImage(QRectF(x0, y0, x1 - x0, y1 - y0), qimg)  # row 0 at y0: up the data axis
        p.restore()
        self.paint_points(p, widget, np.concatenate([frame.outliers, extra]))
