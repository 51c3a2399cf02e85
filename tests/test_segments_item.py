"""SegmentsItem draws what a path of every segment in its pen draws (to within a pixel of
rounding), whatever the number of copies, and keeps the data as PlotDataItem(connect="pairs")."""
import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QLineF, QPointF
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from memviz.app.plots.segments_item import SegmentsItem, _opaque

pytestmark = pytest.mark.qt

W, H = 240, 160


def render(draw) -> np.ndarray:
    img = QImage(W, H, QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setTransform(QTransform(2.0, 0, 0, -1.5, 10, 150))  # data -> pixels, y up as in a plot
    draw(p)
    p.end()
    ptr = img.constBits()
    return np.frombuffer(ptr, np.uint8).reshape(H, img.bytesPerLine())[:, :W * 4].reshape(H, W, 4)[..., :3].copy()


def ink(a: np.ndarray) -> np.ndarray:
    return (a != 255).any(axis=2)


def grow(mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            out |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return out


def segments(rng, n_distinct=60, copies=200):
    """Random segments inside the view, each repeated `copies` times (a fan of links), plus a
    few that run far outside it."""
    x0, x1 = rng.uniform(0, 110, n_distinct), rng.uniform(0, 110, n_distinct)
    y0, y1 = rng.uniform(0, 95, n_distinct), rng.uniform(0, 95, n_distinct)
    ends = np.repeat(np.c_[x0, y0, x1, y1], copies, axis=0)
    ends = np.r_[ends, [[-50_000.0, 10, 50, 40], [20, 30, 60_000.0, 90]]]
    xs, ys = ends[:, [0, 2]].ravel(), ends[:, [1, 3]].ravel()
    return xs, ys, ends


@pytest.mark.parametrize("pen", [pg.mkPen(120, 120, 120, 90, width=1),
                                 pg.mkPen(90, 90, 90, 160, width=1.2, style=pg.QtCore.Qt.DashLine)])
def test_draws_what_every_segment_draws(qapp, pen):
    xs, ys, ends = segments(np.random.default_rng(4))
    item = SegmentsItem(pen=pen)
    item.setData(xs, ys)
    ours = render(lambda p: item.paint(p, None, None))
    solid = _opaque(pen, QColor("white"))

    def every(p):  # the reference: each segment on its own, unrounded, in the same opaque pen
        p.setPen(solid)
        for x0, y0, x1, y1 in ends:
            p.drawLine(QLineF(QPointF(x0, y0), QPointF(x1, y1)))
    ref = render(every)
    a, b = ink(ours), ink(ref)
    assert a.sum() > 500 and b.sum() > 500
    # the same lines, within a pixel (a dash that starts a pixel later may end past it: a few pixels)
    slack = 0 if pen.style() == pg.QtCore.Qt.SolidLine else a.sum() // 200
    assert (a & ~grow(b)).sum() <= slack and (b & ~grow(a)).sum() <= slack
    colour = solid.color()
    assert np.abs(ours[a].astype(int) - [colour.blue(), colour.green(), colour.red()]).max() <= 1
    # the pen blended over white: as light as the translucent pen over white
    c, alpha = pen.color(), pen.color().alphaF()
    assert abs(colour.red() - (alpha * c.red() + (1 - alpha) * 255)) <= 1


def test_keeps_the_data_and_its_bounds(qapp):
    item = SegmentsItem(pen="k")
    item.setData([0, 1, 2, 3, 9], [5, 6, 7, 8, 9])  # an odd point has no partner: dropped
    x, y = item.getData()
    assert list(x) == [0, 1, 2, 3] and list(y) == [5, 6, 7, 8] and len(item) == 2
    assert item.dataBounds(0) == (0, 3) and item.dataBounds(1) == (5, 8)
    assert item.opts["pen"].color() == QColor("black")
    item.setData([], [])
    assert item.dataBounds(0) == (None, None) and item.boundingRect().isNull()
