"""PointsItem: markers land where the data says, in z order, with few pre-rendered symbols, and
as vector shapes in an SVG export."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pyqtgraph as pg  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtCore import QRect  # noqa: E402
from PySide6.QtGui import QColor, QPainter  # noqa: E402

from memviz.app.plots.points_item import PointsItem  # noqa: E402

RED, BLUE, GREEN = (220, 20, 20), (20, 40, 220), (20, 160, 40)


@pytest.fixture
def plot(qtbot):
    w = pg.PlotWidget()
    w.setBackground("w")
    w.hideAxis("left")
    w.hideAxis("bottom")
    w.resize(400, 300)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def pixel_at(plot, item, x, y):
    """Colour of the grabbed widget at data point (x, y)."""
    img = plot.grab().toImage()
    scene = plot.plotItem.vb.mapViewToScene(pg.Point(x, y))
    pos = plot.mapFromScene(scene)
    c = QColor(img.pixel(pos.x(), pos.y()))
    return c.red(), c.green(), c.blue()


def close(a, b, tol=40):
    return all(abs(p - q) <= tol for p, q in zip(a, b))


def test_markers_are_drawn_at_their_data_positions_in_their_colours(plot):
    item = PointsItem()
    plot.addItem(item)
    styles = [{"brush": pg.mkBrush(*c), "pen": None} for c in (RED, BLUE, GREEN)]
    item.set_data([1.0, 5.0, 9.0], [1.0, 5.0, 2.0], codes=[0, 1, 2], styles=styles, size=14)
    plot.plotItem.vb.setRange(xRange=(0, 10), yRange=(0, 6), padding=0)
    assert close(pixel_at(plot, item, 1, 1), RED)
    assert close(pixel_at(plot, item, 5, 5), BLUE)
    assert close(pixel_at(plot, item, 9, 2), GREEN)
    assert close(pixel_at(plot, item, 3, 3), (255, 255, 255), tol=5)  # nothing between them
    # panning moves the markers with the data
    plot.plotItem.vb.setRange(xRange=(4, 14), yRange=(0, 6), padding=0)
    assert close(pixel_at(plot, item, 5, 5), BLUE) and close(pixel_at(plot, item, 9, 2), GREEN)


def test_higher_z_style_is_drawn_on_top_whatever_the_order_given(plot):
    item = PointsItem()
    plot.addItem(item)
    styles = [{"brush": pg.mkBrush(*RED), "pen": None, "z": 1}, {"brush": pg.mkBrush(*BLUE), "pen": None, "z": 0}]
    item.set_data([5.0, 5.0], [3.0, 3.0], codes=[0, 1], styles=styles, size=16)  # red given first, z above
    plot.plotItem.vb.setRange(xRange=(0, 10), yRange=(0, 6), padding=0)
    assert close(pixel_at(plot, item, 5, 3), RED)
    x, y = item.get_data()
    assert list(x) == [5.0, 5.0] and list(y) == [3.0, 3.0]


def test_auto_range_covers_every_point_and_ignores_nan(plot):
    item = PointsItem()
    plot.addItem(item)
    item.set_data([-3.0, np.nan, 40.0], [2.0, 7.0, -8.0], size=6)
    assert item.dataBounds(0) == (-3.0, 40.0) and item.dataBounds(1) == (-8.0, 2.0)
    plot.plotItem.vb.autoRange()
    (x0, x1), (y0, y1) = plot.plotItem.vb.viewRange()
    assert x0 <= -3 and x1 >= 40 and y0 <= -8 and y1 >= 2
    item.clear()
    assert len(item) == 0 and item.dataBounds(0) == (None, None)


def test_many_points_share_a_handful_of_symbols():
    rng = np.random.default_rng(0)
    n = 100_000
    item = PointsItem()
    styles = [{"brush": pg.mkBrush(c), "pen": None} for c in ("r", "g", "b", "k")]
    sizes = 4 + 2 * rng.integers(0, 6, n)  # six sizes
    item.set_data(rng.random(n), rng.random(n), codes=rng.integers(0, 4, n), styles=styles, size=sizes)
    assert len(item) == n and item.atlas_entries() == 4 * 6


def test_svg_export_draws_vector_symbols(plot, tmp_path):
    from PySide6.QtSvg import QSvgGenerator

    item = PointsItem()
    plot.addItem(item)
    item.set_data(np.arange(30.0), np.arange(30.0) % 7, styles=[{"brush": pg.mkBrush(*RED), "pen": None}], size=9)
    plot.plotItem.vb.autoRange()
    path = str(tmp_path / "p.svg")
    gen = QSvgGenerator()
    gen.setFileName(path)
    gen.setSize(plot.size())
    gen.setViewBox(QRect(0, 0, plot.width(), plot.height()))
    p = QPainter(gen)
    plot.render(p)
    p.end()
    svg = open(path).read()
    assert "<image" not in svg  # not pixmaps
    assert svg.count("<path") >= 30 and "#dc1414" in svg.lower()


def test_append_draws_like_set_data_of_everything(plot):
    styles = [{"brush": pg.mkBrush(RED), "pen": None}, {"brush": pg.mkBrush(BLUE), "pen": None}]
    a, b = PointsItem(), PointsItem()
    x, y = np.arange(10.0), np.arange(10.0) % 3
    codes = np.arange(10) % 2
    a.set_data(x[:7], y[:7], codes[:7], styles, size=8)
    assert a.append(x[7:], y[7:], codes[7:], size=8)
    b.set_data(x, y, codes, styles, size=8)
    np.testing.assert_array_equal(a.get_data()[0], b.get_data()[0])
    np.testing.assert_array_equal(a._entry, b._entry)
    assert a.dataBounds(0) == b.dataBounds(0) and a.dataBounds(1) == b.dataBounds(1)
    assert not a.append([1.0], [1.0], [2], size=8)   # a style it was not given
    assert a.append([1.0], [1.0], [0], size=30)      # a size not drawn yet: a new symbol in the atlas
    b.set_data(np.r_[x, 1.0], np.r_[y, 1.0], np.r_[codes, 0], styles, size=np.r_[np.full(10, 8.0), 30.0])
    assert drawn(a) == drawn(b) and a.pixelPadding() == b.pixelPadding()


def test_a_large_item_repaints_from_its_picture_and_append_draws_only_new_points(plot, monkeypatch):
    from memviz.app.plots import points_item as P

    monkeypatch.setattr(P, "CACHE_MIN", 50)
    item = PointsItem()
    plot.addItem(item)
    rng = np.random.default_rng(0)
    styles = [{"brush": pg.mkBrush(*c), "pen": None} for c in (RED, BLUE, GREEN)]
    x, y = rng.uniform(0, 4, 200), rng.uniform(0, 2, 200)  # the lower left corner, red
    codes = np.zeros(200, np.int64)
    codes[-2:] = [1, 2]  # (append draws in the styles set_data drew)
    x[-2:], y[-2:] = 0.1, 0.1
    item.set_data(x, y, codes=codes, styles=styles, size=8)
    plot.plotItem.vb.setRange(xRange=(0, 10), yRange=(0, 6), padding=0)
    drawn = []
    real = item._draw
    monkeypatch.setattr(item, "_draw", lambda p, vis, *a: (drawn.append(len(vis)), real(p, vis, *a)))
    assert close(pixel_at(plot, item, x[0], y[0]), RED)
    assert drawn == [200]  # every point once, for this view
    plot.grab()
    assert drawn == [200]  # the same view again: the picture, no point drawn
    assert item.append([8.0], [5.0], [1], size=8)  # beyond the bounds so far: they grow, the point is drawn alone
    assert close(pixel_at(plot, item, 8, 5), BLUE) and close(pixel_at(plot, item, x[0], y[0]), RED)
    assert item.append([2.0], [1.0], [2], size=8)  # inside them, on top of the red ones
    assert close(pixel_at(plot, item, 2, 1), GREEN)
    assert drawn == [200, 1, 1]
    plot.plotItem.vb.setRange(xRange=(1, 11), yRange=(0, 6), padding=0)  # the view moves: all again
    assert close(pixel_at(plot, item, 8, 5), BLUE) and close(pixel_at(plot, item, 2, 1), GREEN)
    assert len(drawn) == 4 and drawn[3] > 100  # (those in the new view)


def test_new_memories_stay_ringed_for_their_own_moment_only(qtbot, monkeypatch):
    """An agent writing steadily: each refresh's new points are ringed for FLASH_MS, then their
    rings go, however many refreshes follow (they do not pile up while the timer restarts).
    The panel reads the test's clock, so a busy machine cannot stretch or shrink a moment."""
    import types

    import memviz.app.plots.scatter_panel as scatter
    from memviz.session.state import AppState

    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(scatter, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    monkeypatch.setattr(scatter, "FLASH_MS", 400)
    panel = scatter.ScatterPanel(AppState())
    qtbot.addWidget(panel)
    panel.flash_new([1.0], [1.0])
    clock.now += 0.25
    panel.flash_new([2.0, 3.0], [2.0, 3.0])
    assert list(panel.fresh.get_data()[0]) == [1.0, 2.0, 3.0]
    clock.now += 0.16  # the first ring's 400 ms are over, not the others'
    qtbot.waitUntil(lambda: list(panel.fresh.get_data()[0]) == [2.0, 3.0], timeout=20000)
    clock.now += 0.25  # theirs too
    qtbot.waitUntil(lambda: len(panel.fresh) == 0, timeout=20000)


def drawn(item):
    """Per point given (in the caller's order): its atlas entry's (symbol, size, colour)."""
    entries = [(sym, size, brush.color().rgba()) for sym, size, _pen, brush in item._entries]
    pos = np.arange(len(item)) if item._pos is None else item._pos
    return [entries[e] for e in item._entry[pos]]


@pytest.mark.parametrize("z", [False, True])
def test_restyling_points_draws_what_set_data_with_their_new_styles_draws(plot, z):
    rng = np.random.default_rng(0)
    n = 500
    x, y = rng.normal(size=n), rng.normal(size=n)
    codes, size = rng.integers(0, 3, n), rng.choice([4.0, 6.0], n)
    styles = [{"brush": pg.mkBrush(*c), "pen": None, "z": (i if z else 0)} for i, c in enumerate((RED, BLUE, GREEN))]
    item = PointsItem()
    plot.addItem(item)
    item.set_data(x, y, codes, styles, size=size)
    assert item.append([0.5, 0.7], [0.5, 0.1], [2, 2], size=6.0)   # (the highest layer: appended on top)
    x, y, codes, size = np.r_[x, 0.5, 0.7], np.r_[y, 0.5, 0.1], np.r_[codes, 2, 2], np.r_[size, 6.0, 6.0]
    points = np.r_[rng.choice(n, 40, replace=False), n + 1]
    same_layer = codes[points] if z else rng.integers(0, 3, len(points))
    new_size = np.where(size[points] == 4.0, 6.0, 4.0)
    assert item.restyle(points, same_layer, size=new_size)
    codes[points], size[points] = same_layer, new_size
    assert np.array_equal(item.codes_of(np.arange(n + 2)), codes)
    want = PointsItem()
    want.set_data(x, y, codes, styles, size=size)
    assert drawn(item) == drawn(want)
    # a size not drawn yet: a new symbol in the atlas
    assert item.restyle([1], [codes[1]], size=9.0)
    size[1] = 9.0
    want.set_data(x, y, codes, styles, size=size)
    assert drawn(item) == drawn(want)
    # no such style, or another layer: refused, nothing changed
    before = drawn(item)
    assert not item.restyle([0], [3], size=size[0])
    if z:
        assert not item.restyle([0], [(codes[0] + 1) % 3], size=size[0])
    assert drawn(item) == before


@pytest.mark.parametrize("z", [False, True])
def test_the_first_append_after_set_data_writes_below_the_points_without_copying_them(z):
    """A live refresh's new points go into the spare rows of the arrays set_data made: the points
    already drawn are not copied (a million of them on the GUI thread, at the first refresh after
    every redraw)."""
    styles = [{"brush": pg.mkBrush(*c), "pen": None, "z": (i if z else 0)} for i, c in enumerate((RED, BLUE))]
    item = PointsItem()
    x, y = np.arange(1000.0), np.arange(1000.0) % 7
    codes = np.arange(1000) % 2
    item.set_data(x, y, codes, styles, size=6)
    held = (item._x, item._y, item._entry) + (() if item._pos is None else (item._pos,))
    assert item.append([5.0, 6.0], [1.0, 2.0], [1, 1], size=6)
    now = (item._x, item._y, item._entry) + (() if item._pos is None else (item._pos,))
    assert all(np.shares_memory(a, b) for a, b in zip(held, now))
    np.testing.assert_array_equal(item.get_data()[0], np.r_[x, 5.0, 6.0])


def test_a_panels_points_take_new_rows_without_copying_the_drawn_ones(qtbot):
    """ScatterPanel.add_points after set_points (a redraw): the points' coordinates, rows and the
    row -> point table grow into spare rows made with them."""
    from memviz.app.plots.scatter_panel import ScatterPanel
    from memviz.session.state import AppState

    panel = ScatterPanel(AppState())
    qtbot.addWidget(panel)
    panel.set_points(np.arange(1000.0), np.zeros(1000), np.arange(1000))
    assert list(panel.point_of_rows(np.array([3, 999]))) == [3, 999]  # (the table is made)
    held = (panel.x, panel.y, panel.rows, panel._row_to_point)
    panel.add_points(np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([1000, 1001]))
    now = (panel.x, panel.y, panel.rows, panel._row_to_point)
    assert all(np.shares_memory(a, b) for a, b in zip(held, now))
    assert list(panel.point_of_rows(np.array([1001, 3]))) == [1001, 3]
