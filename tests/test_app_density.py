"""DensityPointsItem and the plots that use it: a density image with the outliers as markers when
many points are in view, points when few are, the selection always drawn on top."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pyqtgraph as pg  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.app.plots import style  # noqa: E402
from memviz.app.plots.density_item import DensityPointsItem  # noqa: E402

RED = (220, 20, 20)


@pytest.fixture
def plot(qtbot):
    w = pg.PlotWidget()
    w.setBackground("w")
    w.hideAxis("left")
    w.hideAxis("bottom")
    w.resize(500, 400)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def colours_near(widget, vb, x, y, radius=9):
    """The colours of the grabbed widget's pixels within `radius` of data point (x, y)."""
    img = widget.grab().toImage()
    pos = widget.mapFromScene(vb.mapViewToScene(pg.Point(x, y)))
    out = []
    for dx in range(-radius, radius + 1):
        for dy in range(-radius, radius + 1):
            px, py = pos.x() + dx, pos.y() + dy
            if 0 <= px < img.width() and 0 <= py < img.height():
                c = QColor(img.pixel(px, py))
                out.append((c.red(), c.green(), c.blue()))
    return out


def near_colour(colours, target, tol=45):
    return sum(all(abs(a - b) <= tol for a, b in zip(c, target)) for c in colours)


def test_density_when_zoomed_out_points_when_zoomed_in_and_the_lone_point_stays_visible(plot):
    rng = np.random.default_rng(1)
    n = 20_000
    x = np.r_[rng.normal(size=n), 9.0]
    y = np.r_[rng.normal(size=n), 9.0]          # the last point: alone, far from the blob
    codes = np.r_[np.zeros(n, np.int64), 1]
    item = DensityPointsItem(points_max=2_000)
    plot.addItem(item)
    styles = [{"brush": pg.mkBrush(20, 40, 220), "pen": None}, {"brush": pg.mkBrush(*RED), "pen": None}]
    item.set_data(x, y, codes, styles, size=10)
    vb = plot.plotItem.vb
    vb.setRange(xRange=(-5, 10), yRange=(-5, 10), padding=0)
    plot.grab()
    assert item.last_frame is not None and item.last_frame.mode == "density"
    assert n in set(item.last_frame.outliers.tolist())
    assert near_colour(colours_near(plot, vb, 9.0, 9.0, 3), RED) > 5  # a marker, not a faint cell
    # zoomed in: a few hundred points in view, each drawn
    vb.setRange(xRange=(0.0, 0.4), yRange=(0.0, 0.4), padding=0)
    plot.grab()
    assert item.last_frame.mode == "points"
    assert 0 < len(item.last_frame.points) <= 2_000
    # and out again
    vb.setRange(xRange=(-5, 10), yRange=(-5, 10), padding=0)
    plot.grab()
    assert item.last_frame.mode == "density"
    # the same points in other colours: binned once
    grid = item.grid()
    item.set_data(x, y, 1 - codes, styles, size=10)
    plot.grab()
    assert item.last_frame.mode == "density" and item.grid().order is grid.order
    # few points in all: a plain PointsItem
    item.set_data(x[:500], y[:500], codes[:500], styles, size=10)
    plot.grab()
    assert item.last_frame is None


def test_points_appended_since_the_grid_are_drawn_as_markers(plot):
    rng = np.random.default_rng(2)
    item = DensityPointsItem(points_max=1_000)
    plot.addItem(item)
    styles = [{"brush": pg.mkBrush(20, 40, 220), "pen": None}, {"brush": pg.mkBrush(*RED), "pen": None}]
    codes = np.zeros(10_000, np.int64)
    codes[0] = 1   # red is a style already drawn: appending a red point needs no new symbol
    item.set_data(rng.normal(size=10_000), rng.normal(size=10_000), codes, styles, size=10)
    plot.plotItem.vb.setRange(xRange=(-5, 10), yRange=(-5, 10), padding=0)
    plot.grab()
    grid = item.grid()
    assert item.append([7.0], [-3.0], [1], size=10)
    plot.grab()
    assert item.grid() is grid                                  # one new point: not binned again
    assert near_colour(colours_near(plot, plot.plotItem.vb, 7.0, -3.0, 3), RED) > 5


def many_memories(path, n=3000):
    store = ms.create(str(path))
    rng = np.random.default_rng(0)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    store.insert_memories([dict(id=f"m{i}", kind=("episode", "fact")[i % 2], agent=("ann", "bob")[i % 3 == 0],
                                content=f"memory {i}", importance=float(i % 10), event_time=1_700_000_000 + i * 60,
                                embedding=v[i] / np.linalg.norm(v[i]), embedding_model="test-8")
                           for i in range(n)], audit=False)
    store.close()
    return path


def test_timeline_and_map_switch_to_density_and_draw_the_selection_on_top(make_window, tmp_path):
    win = make_window(many_memories(tmp_path / "many.db"))
    for panel in (win.timeline, win.map):
        panel.points.points_max = 500
        panel.redraw(fit=True)
        panel.plot.grab()
        assert panel.points.last_frame is not None and panel.points.last_frame.mode == "density", panel
    row = 1500
    win.state.select([row])
    for panel in (win.timeline, win.map):
        at = int(panel.point_of_rows([row])[0])
        x, y = panel.x[at], panel.y[at]
        ring = near_colour(colours_near(panel.plot, panel.vb, x, y), QColor(style.theme().selected).getRgb()[:3], tol=60)
        assert ring > 10, panel                     # the selection's ring over the density image
    # zoomed in on the selection: points again, the ring still there
    x, y = win.timeline.x[int(win.timeline.point_of_rows([row])[0])], 0
    win.timeline.vb.setXRange(x - 3600, x + 3600, padding=0)
    win.timeline.plot.grab()
    assert win.timeline.points.last_frame.mode == "points"


def test_a_graph_with_too_many_links_shows_clusters_and_the_selections_lineage(make_window, tmp_path, monkeypatch):
    from test_app_support import build_store

    from memviz.app.panels import graph_panel
    monkeypatch.setattr(graph_panel, "DRAW_LINKS_MAX", 2)  # the support store's few links count as too many
    build_store(tmp_path / "s.db").close()
    win = make_window(tmp_path / "s.db", graph=True)
    gp, ids = win.graph, win.state.data.arrays.ids
    c, g = gp.summary, gp.graph
    assert c is not None and gp._drawn is None and len(gp.points) == 0
    assert int(c.count.sum()) == int((g.rows >= 0).sum())          # every memory of the graph in one cluster
    assert len(gp.cluster_points) == len(c.count) and int(c.edge_count.sum()) > 0
    assert "too many to draw" in gp.info.text() and "cluster" in gp.info.text()
    assert any(t.isVisible() and f"{int(c.count.max()):,}" in t.toPlainText() for t in gp.labels)
    win.state.select_ids(["refl0"])                                 # its lineage, drawn whole
    sub = gp._drawn
    assert sub is not None and len(gp.cluster_points) == 0
    assert {ids[r] for r in sub.rows if r >= 0} == {"refl0", "fact0", "ep00", "ep01", "refl2"}
    assert len(sub.source_edges) == 4 and gp.info.text().startswith("the selection's lineage: 5 memories")
    assert sorted(ids[r] for r in gp.rows) == sorted({"refl0", "fact0", "ep00", "ep01", "refl2"})  # pickable
    win.state.select_ids(["ep10"])                                  # in no link: the clusters again
    assert gp._drawn is None and len(gp.cluster_points) == len(c.count)


@pytest.mark.parametrize("cells", [1024, 48])   # the pyramid's level; cells wider than 4 px: binned in view
def test_the_density_image_lands_where_its_points_are_in_their_colours(plot, cells):
    rng = np.random.default_rng(3)
    n = 20_000
    top = np.arange(n) % 2 == 0                  # red blob up-left, blue blob down-right
    x = rng.normal(size=n) * 0.4 + np.where(top, -3.0, 3.0)
    y = rng.normal(size=n) * 0.4 + np.where(top, 3.0, -3.0)
    item = DensityPointsItem(grid_size=(cells, cells), points_max=500)
    plot.addItem(item)
    styles = [{"brush": pg.mkBrush(20, 40, 220), "pen": None}, {"brush": pg.mkBrush(*RED), "pen": None}]
    item.set_data(x, y, top.astype(np.int64), styles, size=6)
    vb = plot.plotItem.vb
    vb.setRange(xRange=(-6, 6), yRange=(-6, 6), padding=0)
    plot.grab()
    assert item.last_frame.mode == "density" and (item.last_frame.level >= 0) == (cells == 1024)
    assert near_colour(colours_near(plot, vb, -3.0, 3.0, 3), RED, tol=90) > 20
    assert near_colour(colours_near(plot, vb, 3.0, -3.0, 3), (20, 40, 220), tol=90) > 20
    assert near_colour(colours_near(plot, vb, 3.0, 3.0, 3), (255, 255, 255), tol=10) > 40  # nothing there
