"""The main window driven offscreen: shared selection, filters, detail, opening, export, settings."""
from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
from PySide6.QtCore import QItemSelectionModel, QPointF, QSettings, Qt  # noqa: E402
from test_app_support import T0, build_store  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.app.plots.scatter_panel import points_in_polygon  # noqa: E402
from memviz.app.window import MainWindow  # noqa: E402


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "mem.db"
    build_store(path).close()
    return str(path)


def make_window(qtbot, tmp_path, name="settings.ini"):
    win = MainWindow(QSettings(str(tmp_path / name), QSettings.IniFormat))
    win.map.auto_umap = False  # UMAP has its own test (test_app_layout.py)
    qtbot.addWidget(win)
    win.resize(1300, 850)
    win.show()
    return win


def open_in(qtbot, win, path, read_only=False):
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(path, read_only=read_only)
    qtbot.waitUntil(lambda: win.graph.graph is not None, timeout=20000)  # the graph is laid out in the background


@pytest.fixture
def win(qtbot, tmp_path, store_file):
    w = make_window(qtbot, tmp_path)
    open_in(qtbot, w, store_file)
    return w


def row_of(win, mid):
    return win.state.data.arrays.index_of(mid)


def click_plot_point(qtbot, panel, row):
    i = int(np.flatnonzero(panel.rows == row)[0])
    scene = panel.vb.mapViewToScene(QPointF(panel.x[i], panel.y[i]))
    qtbot.mouseClick(panel.plot.viewport(), Qt.LeftButton, pos=panel.plot.mapFromScene(scene))


def test_select_in_table_selects_everywhere(qtbot, win):
    model = win.table.model
    target = row_of(win, "refl0")
    pos = int(np.flatnonzero(model.order == target)[0])
    win.table.view.selectionModel().select(model.index(pos, 0),
                                           QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
    assert win.state.selection.tolist() == [target]
    assert win.detail.shown_id == "refl0"
    assert win.detail.content.toPlainText() == "Alice needs meals planned around a peanut allergy."
    for panel in (win.timeline, win.map):
        pts = panel.point_of_rows([target])
        ox, oy = panel.overlay.get_data()
        assert len(ox) == 1 and ox[0] == pytest.approx(panel.x[pts[0]]) and oy[0] == pytest.approx(panel.y[pts[0]])
    # the graph highlights refl0 with its ancestors (fact0, ep00, ep01) and descendant (refl2)
    g = win.graph.graph
    hot = {win.state.data.arrays.ids[g.rows[i]] for i in win.graph.hot if g.rows[i] >= 0}
    assert hot == {"refl0", "fact0", "ep00", "ep01", "refl2"}


def test_click_in_timeline_selects_in_table_and_detail(qtbot, win):
    target = row_of(win, "ep07")
    click_plot_point(qtbot, win.timeline, target)
    assert win.state.selection.tolist() == [target]
    selected = [win.table.model.order[i.row()] for i in win.table.view.selectionModel().selectedRows()]
    assert selected == [target]
    assert win.detail.shown_id == "ep07"


def test_click_in_graph_and_map(qtbot, win):
    target = row_of(win, "fact1")
    click_plot_point(qtbot, win.graph, target)
    assert win.state.selection.tolist() == [target]
    assert win.detail.shown_id == "fact1"
    other = row_of(win, "ep10")
    click_plot_point(qtbot, win.map, other)
    assert win.state.selection.tolist() == [other]
    assert win.graph.hot == set()  # ep10 takes part in no link


def test_graph_focus_and_broken_link(qtbot, win):
    g = win.graph.graph
    assert list(g.missing_ids.values()) == ["ghost-id"]
    assert len(g.supersede_edges) == 1
    win.state.select_ids(["refl1"])
    win.graph.focus.setChecked(True)
    shown = {win.state.data.arrays.ids[r] for r in win.graph.rows}
    assert shown == {"refl1", "fact3", "ep09"}
    win.graph.focus.setChecked(False)
    assert len(win.graph.rows) == g.n - len(g.missing_ids)


def test_detail_sources_are_clickable_and_chain_shown(qtbot, win):
    win.state.select_ids(["fact2b"])
    tree = win.detail.related
    groups = {tree.topLevelItem(i).text(0).rsplit(" (", 1)[0]: tree.topLevelItem(i) for i in range(tree.topLevelItemCount())}
    chain = groups["Supersede chain (oldest first)"]
    assert [chain.child(i).text(0) for i in range(chain.childCount())] == ["fact2", "fact2b"]
    source = groups["Derived from"].child(0)
    assert source.text(0) == "ep08"
    tree.itemClicked.emit(source, 0)
    assert win.state.selected_ids == ["ep08"]
    assert win.detail.shown_id == "ep08"
    hist = win.detail.history
    assert hist.topLevelItemCount() >= 1 and hist.topLevelItem(0).text(1) == "insert"


def test_detail_never_interprets_html(qtbot, tmp_path):
    path = tmp_path / "html.db"
    s = ms.create(str(path))
    evil = "<b>bold</b> <img src=x onerror=alert(1)> &amp; <a href='http://x'>link</a>"
    s.insert_memories([{"id": "h1", "kind": "fact", "agent": "<i>agent</i>", "content": evil}])
    s.close()
    w = make_window(qtbot, tmp_path)
    open_in(qtbot, w, str(path))
    w.state.select_ids(["h1"])
    assert w.detail.content.toPlainText() == evil
    assert w.detail.title.textFormat() == Qt.PlainText
    assert "<i>agent</i>" in w.detail.title.text()
    assert w.table.model.data(w.table.model.index(0, 4)) == evil


def test_time_range_drag_filters_other_panels(qtbot, win):
    tl = win.timeline
    n_all = win.table.model.rowCount()
    lo, hi = T0 + 3600 * 40, T0 + 3600 * 130
    y = float(np.mean(tl.vb.viewRange()[1]))
    a = tl.plot.mapFromScene(tl.vb.mapViewToScene(QPointF(lo, y)))
    b = tl.plot.mapFromScene(tl.vb.mapViewToScene(QPointF(hi, y)))
    tl.range_tool.setChecked(True)
    vp = tl.plot.viewport()
    qtbot.mousePress(vp, Qt.LeftButton, pos=a)
    for t in np.linspace(0, 1, 8)[1:]:
        qtbot.mouseMove(vp, pos=a + (b - a) * t)
        qtbot.wait(5)
    qtbot.mouseRelease(vp, Qt.LeftButton, pos=b)
    assert win.state.time_range is not None
    got_lo, got_hi = win.state.time_range
    assert abs(got_lo - lo) < 3600 * 3 and abs(got_hi - hi) < 3600 * 3
    et = win.state.data.arrays.event_time
    expected = int(((et >= got_lo) & (et <= got_hi)).sum())
    assert 0 < win.table.model.rowCount() == expected < n_all
    assert len(win.map.rows) == int(((et >= got_lo) & (et <= got_hi) & win.state.data.arrays.has_embedding).sum())
    win.timeline.clear_range.click()
    assert win.state.time_range is None and win.table.model.rowCount() == n_all


def test_hide_retired_everywhere(qtbot, win):
    a = win.state.data.arrays
    n_live = int(a.live.sum())
    assert len(win.timeline.rows) == len(a)
    win.timeline.show_retired.setChecked(False)
    assert len(win.timeline.rows) == n_live
    assert win.table.model.rowCount() == n_live
    assert not win.retired_action.isChecked()
    win.retired_action.setChecked(True)
    assert win.timeline.show_retired.isChecked() and len(win.timeline.rows) == len(a)


def test_table_search_sort_and_find_shortcut(qtbot, win):
    win.find()
    assert win.table.search.hasFocus() or not win.isActiveWindow()
    qtbot.keyClicks(win.table.search, "pixel")
    win.table.refilter()
    ids = [win.state.data.arrays.ids[r] for r in win.table.model.order]
    assert sorted(ids) == ["ep08", "fact2", "fact2b"]
    win.table.search.clear()
    win.table.refilter()
    win.table._header_clicked(2)  # importance ascending
    imp = win.state.data.arrays.importance[win.table.model.order]
    assert np.all(np.diff(imp) >= 0)
    win.table._header_clicked(2)
    imp = win.state.data.arrays.importance[win.table.model.order]
    assert np.all(np.diff(imp) <= 0)


def test_map_rectangle_and_lasso_select(qtbot, win):
    m = win.map
    x, y = m.x, m.y
    cx, cy = float(np.median(x)), float(np.median(y))
    box = np.array([[x.min() - 1, y.min() - 1], [cx, y.min() - 1], [cx, cy], [x.min() - 1, cy]])
    m.on_shape("rect", box, True, Qt.NoModifier)
    expected = set(m.rows[(x <= cx) & (y <= cy)].tolist())
    assert set(win.state.selection.tolist()) == expected and expected
    tri = np.array([[x.min() - 1, y.min() - 1], [x.max() + 1, y.min() - 1], [x.min() - 1, y.max() + 1]])
    m.on_shape("lasso", tri, True, Qt.NoModifier)
    assert set(win.state.selection.tolist()) == set(m.rows[points_in_polygon(x, y, tri)].tolist())


def test_points_in_polygon_matches_brute_force():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, 3000), rng.uniform(-1, 1, 3000)
    square = np.array([[-.5, -.5], [.5, -.5], [.5, .5], [-.5, .5]])
    assert np.array_equal(points_in_polygon(x, y, square), (np.abs(x) < .5) & (np.abs(y) < .5))
    ang = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    circle = np.c_[0.7 * np.cos(ang), 0.7 * np.sin(ang)]
    inside = points_in_polygon(x, y, circle)
    r = np.hypot(x, y)
    assert inside[r < 0.69].all() and not inside[r > 0.71].any()


def test_map_colourings(qtbot, win):
    for by in ("kind", "agent", "importance", "age", "score"):
        win.map.color_by.setCurrentText(by)
        assert len(win.map.points) == len(win.map.rows)
    win.map.color_by.setCurrentText("importance")
    imp = win.state.data.arrays.importance[win.map.rows]
    codes, brushes = win.map.point_colours(win.map.rows)
    colours = [brushes[c].color().name() for c in codes]
    assert colours[int(np.argmin(imp))] != colours[int(np.argmax(imp))]
    win.map.color_by.setCurrentText("kind")
    kinds = win.state.data.arrays.kind[win.map.rows]
    codes, brushes = win.map.point_colours(win.map.rows)
    assert len({brushes[c].color().name() for c in codes[kinds == "fact"]}) == 1


def test_open_bad_file_shows_message_and_keeps_store(qtbot, win, tmp_path):
    bad = tmp_path / "junk.db"
    bad.write_bytes(b"this is not a database at all" * 100)
    before = win.state.data
    with qtbot.waitSignal(win.open_failed, timeout=10000) as sig:
        win.open_path(str(bad))
    assert str(bad) in win.error_box.text() and win.error_box.isVisible()
    assert sig.args[1] in win.error_box.text()
    assert win.state.data is before and bad.read_bytes().startswith(b"this is not")
    win.error_box.close()
    with qtbot.waitSignal(win.open_failed, timeout=10000):
        win.open_path(str(tmp_path / "missing.db"))
    assert "No such file" in win.error_box.text()
    assert not (tmp_path / "missing.db").exists()


def test_open_read_only_and_status_bar(qtbot, tmp_path, store_file):
    w = make_window(qtbot, tmp_path)
    open_in(qtbot, w, store_file, read_only=True)
    assert w.state.data.store.read_only
    assert w.status_ro.text() == "READ-ONLY" and "read-only" in w.windowTitle()
    assert "20 memories" in w.status_counts.text()
    assert "wordllama" in w.status_model.text()
    assert w.recent.files()[0] == os.path.abspath(store_file)


def test_export_results_table_and_plots(qtbot, win, tmp_path):
    win.table.search.setText("alice")
    win.table.refilter()
    n = win.exporter.export("table", str(tmp_path / "t.csv"))
    with open(tmp_path / "t.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n == win.table.model.rowCount() and all("Alice" in r["content"] for r in rows)
    win.exporter.export("table", str(tmp_path / "t.json"))
    assert len(json.loads((tmp_path / "t.json").read_text())) == n
    for name in ("timeline", "graph", "map"):
        win.exporter.export(name, str(tmp_path / f"{name}.png"))
        win.exporter.export(name, str(tmp_path / f"{name}.svg"))
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.svg").read_text(errors="replace").lstrip().startswith("<?xml")
    assert win.exporter.export("results", str(tmp_path / "r.json")) == 0  # no query run


def test_docks_and_geometry_are_remembered(qtbot, tmp_path, store_file):
    w = make_window(qtbot, tmp_path, "layout.ini")
    w.docks["graph"].hide()
    w.resize(1111, 777)
    w.timeline.lanes.setCurrentText("agent")
    w.close()
    w2 = make_window(qtbot, tmp_path, "layout.ini")
    assert not w2.docks["graph"].isVisible() and w2.docks["map"].isVisible()
    assert w2.timeline.lanes.currentText() == "agent"
    w2.docks["retired"].setFloating(True)
    w2.reset_docks()
    assert w2.docks["graph"].isVisible()
    # the default layout includes the Retired dock, tabbed behind the table
    assert not w2.docks["retired"].isFloating()
    assert w2.docks["retired"] in w2.tabifiedDockWidgets(w2.docks["table"])


def test_context_menu_hook(qtbot, win):
    from PySide6.QtGui import QAction
    seen = []

    def provider(ids):
        seen.append(ids)
        return [QAction("Soft-delete", win)]
    win.add_context_provider(provider)
    win.state.select_ids(["ep01"])
    menu = win.context_menu_for(win.state.selected_ids)
    assert seen == [["ep01"]] and "Soft-delete" in [a.text() for a in menu.actions()]
    assert win.undo_stack.count() == 0 and win.undo_action.shortcut().toString() == "Ctrl+Z"


def test_hover_shows_plain_text_of_the_point(qtbot, win):
    tl = win.timeline
    target = row_of(win, "ep03")
    i = int(np.flatnonzero(tl.rows == target)[0])
    scene = tl.vb.mapViewToScene(QPointF(tl.x[i], tl.y[i]))
    tl._mouse_moved((scene,))
    assert tl.hover.isVisible()
    assert "Alice booked a train to Porto" in tl.hover.textItem.toPlainText()
    far = tl.vb.mapViewToScene(QPointF(tl.x[i], tl.y[i] + 0.45))
    tl._mouse_moved((far,))
    assert not tl.hover.isVisible() or tl.pick(far) is not None
