"""Every panel at every size (issue 12): hover labels, layout, the reflection graph, the empty
window, help, plurals, edit reasons and the import dialog's defaults."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import REAL_PERSONA, needs_real
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtWidgets import QApplication
from test_app_support import build_store

pytestmark = pytest.mark.qt


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("polish") / "mem.db"
    build_store(path).close()
    return str(path)


@pytest.fixture(scope="module")
def other_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("polish2") / "other.db"
    build_store(path, with_reflections=False).close()
    return str(path)


def hover_at_point(panel, i):
    scene = panel.vb.mapViewToScene(QPointF(panel.x[i], panel.y[i]))
    panel._mouse_moved((scene,))
    return scene


# ------------------------------------------------------------------ hover labels
def test_hover_label_stays_inside_the_plot_at_its_edges(make_window, store_file):
    win = make_window(store_file, graph=True)
    for panel in (win.timeline, win.map, win.graph):
        area = panel.vb.sceneBoundingRect()
        for i in (int(np.argmax(panel.x)), int(np.argmin(panel.x)), int(np.argmax(panel.y)), int(np.argmin(panel.y))):
            hover_at_point(panel, i)
            assert panel.hover.isVisible()
            box = panel.hover.mapRectToScene(panel.hover.boundingRect())
            assert area.contains(box), (type(panel).__name__, box, area)


def test_hover_label_hides_when_the_pointer_leaves(make_window, store_file):
    win = make_window(store_file)
    tl = win.timeline
    hover_at_point(tl, 0)
    assert tl.hover.isVisible()
    QApplication.sendEvent(tl.plot.viewport(), QEvent(QEvent.Leave))
    assert not tl.hover.isVisible()
    hover_at_point(tl, 0)  # a move the rate-limited proxy delivers after the pointer left
    assert not tl.hover.isVisible()


def test_hover_label_does_not_survive_opening_another_store(qtbot, make_window, store_file, other_store):
    win = make_window(store_file, graph=True)
    for panel in (win.timeline, win.map, win.graph):
        hover_at_point(panel, 0)
        assert panel.hover.isVisible()
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(other_store)
    assert not any(p.hover.isVisible() for p in (win.timeline, win.map, win.graph))


# ------------------------------------------------------------------ import dialog
def test_import_proposes_the_user_data_folder_and_hides_the_idle_bar(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "userdata"))
    persona = tmp_path / "dataset" / "Klaus" / "bootstrap_memory"
    persona.mkdir(parents=True)
    win = make_window()
    dlg = win.show_import(str(persona))
    qtbot.addWidget(dlg)
    assert dlg.output.text() == str(tmp_path / "userdata" / "imports" / "Klaus.db")
    assert not dlg.bar.isVisible()  # an idle empty bar looks like a text field


# ------------------------------------------------------------------ plurals
def test_counts_take_the_number_of_their_noun(make_window, tmp_path):
    import memviz.store as ms
    from memviz.embed import default_embedder
    from memviz.words import count
    assert [count(1, "memory"), count(2, "memory"), count(1605, "agent")] == ["1 memory", "2 memories", "1,605 agents"]
    emb = default_embedder()
    path = tmp_path / "one.db"
    store = ms.create(str(path))
    store.insert_memories([{"id": "m1", "kind": "fact", "agent": "", "content": "One fact.", "importance": 5,
                            "event_time": 1_767_225_600, "embedding": emb.embed_one("One fact."),
                            "embedding_model": emb.model}])
    store.close()
    win = make_window(path)
    text = win.status_counts.text()
    assert text.startswith("1 memory (1 current, 0 retired) · 1 kind · 1 agent"), text
    # the reflection meter says what it measures without a hover
    assert win.reflect_tools.meter.caption.text() == "importance since reflection"


# ------------------------------------------------------------------ help, toolbar
def test_help_lists_every_shortcut_of_the_actions_and_opens_the_guide(make_window):
    from PySide6.QtGui import QKeySequence
    win = make_window()
    names = [a.text().replace("&", "") for a in win.menuBar().actions()[-1].menu().actions()]
    assert "Keyboard shortcuts" in names and "User guide" in names
    dlg = win.show_shortcuts()
    shown = {dlg.table.topLevelItem(i).text(2) for i in range(dlg.table.topLevelItemCount())}
    for act in (win.open_action, win.undo_action, win.redo_action, win.reload_action):
        assert act.shortcut().toString(QKeySequence.NativeText) in " ".join(shown)
    rows = {dlg.table.topLevelItem(i).text(1): dlg.table.topLevelItem(i).text(2)
            for i in range(dlg.table.topLevelItemCount())}
    assert rows["Correct"] == "F2" and rows["Soft-delete"] == QKeySequence("Delete").toString(QKeySequence.NativeText)
    guide = win.show_guide()
    titles = guide.titles()
    assert titles[:3] == ["Home", "Getting started", "The window"], titles
    assert {"Fix a fact", "Watch the agent live", "Command line", "Troubleshooting"} <= set(titles)
    assert guide.page == "index.md" and "What do you want to do?" in guide.browser.toPlainText()


def test_the_shortcuts_list_each_key_of_an_action_once(qapp):
    """Redo is Ctrl+Shift+Z and the platform's Redo key, which under X11 is Ctrl+Shift+Z too: the
    list read "Ctrl+Shift+Z, Ctrl+Shift+Z"."""
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QMenu

    from memviz.app.dialogs.help_dialogs import shortcut_rows
    menu = QMenu("&Edit")
    redo = menu.addAction("&Redo")
    redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    keys = ", ".join(QKeySequence(k).toString(QKeySequence.NativeText) for k in ("Ctrl+Shift+Z", "Ctrl+Y"))
    assert shortcut_rows([menu]) == [("Edit", "Redo", keys)]


def test_the_user_guide_shows_the_manual_and_follows_its_links(qtbot, make_window):
    from PySide6.QtCore import QUrl

    from memviz import manual
    win = make_window()
    guide = win.show_guide()
    qtbot.waitExposed(guide)
    # every page of the manual's navigation is listed, in its order, and opens
    nav = [p.title for p in manual.pages()]
    assert guide.titles() == nav  # (a checkout: the root's glossary and architecture too)
    for p in manual.pages():
        assert guide.show_page(p.file)
        first = guide.browser.document().begin()
        assert first.blockFormat().headingLevel() == 1 and first.text(), p.file  # its title
    # a link to another page is followed, at the heading it names; Back returns
    guide.show_page("index.md")
    guide.follow(QUrl("fix-a-fact.md"))
    assert guide.page == "fix-a-fact.md" and guide.windowTitle().endswith("Fix a fact")
    assert guide.contents.currentItem().text(0) == "Fix a fact"
    guide.follow(QUrl("getting-started.md#in-your-desktops-menu"))
    assert guide.page == "getting-started.md" and guide.browser.verticalScrollBar().value() > 0
    doc, shown = guide.browser.document(), guide.browser.verticalScrollBar().value()
    heading = doc.begin()
    while heading.isValid() and heading.text() != "In your desktop's menu":
        heading = heading.next()
    assert heading.isValid()
    at = doc.documentLayout().blockBoundingRect(heading)
    assert shown <= at.top() and at.bottom() <= shown + guide.browser.viewport().height()  # in view
    guide.back.click()
    assert guide.page == "fix-a-fact.md"
    # the site's extensions read as text: the tabs of Getting started, no raw markers
    guide.show_page("getting-started.md")
    text = guide.browser.toPlainText()
    assert "From a checkout" in text and '=== "' not in text and "!!!" not in text
    # the screenshots of the checkout are shown, no wider than the view
    guide.show_page("window.md")
    images, block = [], guide.browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().isImageFormat():
                images.append(it.fragment().charFormat().toImageFormat())
            it += 1
        block = block.next()
    assert len(images) >= 7
    assert all(QUrl(i.name()).isLocalFile() and 0 < i.width() <= guide.browser.viewport().width() for i in images)


def test_an_installed_guide_has_its_pages_without_the_checkout(qtbot, make_window, monkeypatch):
    """As from a wheel: no source tree beside the package. Every page installed is there; a
    picture is its caption; a link to a page of the source tree says where that page is."""
    from PySide6.QtCore import QUrl

    from memviz import manual
    monkeypatch.setattr(manual, "checkout", lambda: None)
    win = make_window()
    guide = win.show_guide()
    assert "Glossary" not in guide.titles() and "Architecture" not in guide.titles()
    assert len(guide.titles()) == len(manual.NAV[:3]) + sum(len(e) for _, e in manual.NAV[3:]) - 2
    guide.show_page("index.md")
    assert "memviz on the assistant sample" in guide.browser.toPlainText()  # the picture's caption
    guide.follow(QUrl("GLOSSARY.md"))
    assert guide.page == "index.md" and "not part of the manual installed here" in guide.note.text()


def test_help_about_shows_the_version_report(make_window):
    import memviz
    from memviz import about
    win = make_window()
    dlg = win.show_about()
    text = dlg.report.toPlainText()
    assert text.splitlines()[0] == f"memviz {memviz.__version__} ({about.os.path.dirname(memviz.__file__)})"
    assert {ln.split()[0] for ln in text.splitlines()} >= {"memviz", "Python", "Qt", "SQLite", "sqlite-vec"}


def test_toolbar_buttons_do_not_move_when_the_undo_label_changes(qtbot, make_window, store_file, tmp_path):
    import shutil

    from memviz.app.plain_text import plain_tooltip  # the label names a memory: shown as written
    path = tmp_path / "copy.db"
    shutil.copy(store_file, path)
    win = make_window(path)
    buttons = [win.toolbar.widgetForAction(a) for a in win.toolbar.actions() if not a.isSeparator()]
    before = [b.geometry() for b in buttons]
    win.state.select_ids(["ep00"])
    win.edits.run("confirm", ["ep00"])
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=20000)
    QApplication.processEvents()
    assert win.undo_action.text() != "&Undo"          # the menu names what it undoes
    assert win.toolbar_undo.isEnabled() and win.toolbar_undo.toolTip() == plain_tooltip("Undo Confirm ep00")
    assert [b.geometry() for b in buttons] == before


# ------------------------------------------------------------------ command line help
def test_help_tells_how_to_open_the_window_and_names_no_design_documents(capsys):
    import subprocess
    import sys

    from memviz.cli import build_parser
    text = build_parser().format_help()
    for piece in ("memviz [--read-only] [DB]", "memviz DB", "--read-only DB", "COMMAND"):
        assert piece in text
    sub = build_parser()._subparsers._group_actions[0]
    helps = " ".join(a.help or "" for a in sub._choices_actions) + " ".join(p.description or "" for p in sub.choices.values())
    assert "seed 0" not in helps and "ADR 0" not in helps
    out = subprocess.run([sys.executable, "-m", "memviz", "--read-only", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "memviz [--read-only] [DB]" in out.stdout and "edits are refused" in out.stdout


# ------------------------------------------------------------------ edit reasons
def test_edits_from_the_window_record_a_reason_in_the_history(qtbot, make_window, store_file, tmp_path):
    import shutil
    path = tmp_path / "copy.db"
    shutil.copy(store_file, path)
    win = make_window(path, size=(1200, 800))
    ctl = win.edits

    def settle():
        qtbot.waitUntil(lambda: not ctl.corrections.embedding and not win.workers.running("reload"), timeout=10000)
        qtbot.wait(20)

    def notes(mid):
        return [(h["action"], h["note"]) for h in win.state.data.store.history(mid)]

    win.state.select_ids(["fact0"])
    win.edits.actions["correct"].trigger()
    ctl.dialog.new_text.setPlainText("Alice is allergic to peanuts and shellfish.")
    ctl.dialog.reason.setText("  she told us on Monday ")
    ctl.dialog.accept()
    settle()
    assert ("supersede", "she told us on Monday") in notes("fact0")
    for key, mid, action, reason in (("delete_why", "ep05", "soft_delete", "duplicate of ep04"),
                                     ("confirm_why", "ep06", "confirm", "checked with Bob")):
        win.state.select_ids([mid])
        menu = win.context_menu_for([mid])
        next(a for a in menu.actions() if a.objectName() == f"edit_{key}").trigger()
        ctl.dialog.reason.setText(reason)
        ctl.dialog.accept()
        settle()
        assert (action, reason) in notes(mid)
    win.state.select_ids(["ep06"])
    changes = [win.detail.history.topLevelItem(i).text(3) for i in range(win.detail.history.topLevelItemCount())]
    assert any("checked with Bob" in c for c in changes)
    # no reason given: nothing recorded as one
    win.state.select_ids(["ep07"])
    win.edits.actions["delete_why"].trigger()
    ctl.dialog.accept()
    settle()
    assert notes("ep07")[-1] == ("soft_delete", None)


# ------------------------------------------------------------------ layout at every size
def run_query(qtbot, win, text="peanut allergy"):
    with qtbot.waitSignal(win.query.ranked, timeout=20000):
        win.query.text.setText(text)
        win.query.run_query()


@pytest.mark.parametrize("size", [(1100, 700), (1500, 950), (1920, 1080)])
def test_default_docks_keep_the_results_readable(qtbot, make_window, store_file, size):
    win = make_window(store_file, size=size)
    win.reset_docks()
    qtbot.wait(50)
    run_query(qtbot, win)
    q = win.query
    assert q.rows_visible() >= 8, size
    h = q.view.horizontalHeader()
    columns = [c.name for c in q.results.columns]   # the built-in ones and those added (the grades)
    content = h.sectionSize(columns.index("content"))
    assert content >= (120 if size[0] < 1300 else 220), (size, content)
    # every header's text fits its column
    fm = h.fontMetrics()
    for i, name in enumerate(columns):
        if not h.isSectionHidden(i):
            assert h.sectionSize(i) >= fm.horizontalAdvance(name) + 8, name
    assert not h.isSectionHidden(columns.index("agent"))  # alice and bob: an agent column
    # the table shows its memories' text without scrolling sideways
    t = win.table.view
    th = t.horizontalHeader()
    from memviz.app.panels.table_panel import COLUMNS
    assert th.sectionViewportPosition(COLUMNS.index("content")) < t.viewport().width() - 100
    assert t.viewport().height() / t.verticalHeader().defaultSectionSize() >= 5


def test_single_agent_results_have_no_agent_column(make_window, tmp_path):
    import memviz.store as ms
    from memviz.app.panels.query_panel import RESULT_COLUMNS
    from memviz.embed import default_embedder
    emb = default_embedder()
    path = tmp_path / "solo.db"
    with ms.create(str(path)) as s:
        s.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": "solo", "content": f"fact {i}",
                            "embedding": emb.embed_one(f"fact {i}"), "embedding_model": emb.model} for i in range(3)])
    win = make_window(path)
    assert win.query.view.horizontalHeader().isSectionHidden(RESULT_COLUMNS.index("agent"))


def test_timeline_lane_names_never_overlap(qtbot, make_window, store_file):
    win = make_window(store_file, size=(1100, 700))
    tl = win.timeline
    for height in (400, 60, 30):
        tl.plot.setFixedHeight(height)
        qtbot.wait(30)
        shown = tl.shown_lane_labels()
        assert shown and shown[0] == 0
        px = [tl.vb.mapViewToScene(QPointF(0, i)).y() for i in shown]
        gaps = np.abs(np.diff(px))
        assert (gaps >= tl.fontMetrics().height() - 0.5).all(), (height, gaps)
        ticks = tl.plot.getAxis("left")._tickLevels[0]
        assert [v for v, _ in ticks] == shown


def test_a_layout_saved_by_an_older_version_falls_back_to_the_default(make_window, tmp_path):
    from PySide6.QtCore import Qt as _Qt
    win = make_window(settings="old.ini")
    win.removeDockWidget(win.docks["query"])  # an old layout without the query column
    win.addDockWidget(_Qt.BottomDockWidgetArea, win.docks["query"])
    win.docks["query"].show()
    win.settings.setValue("windowState", win.saveState(1))
    win.settings.sync()
    again = make_window(settings="old.ini")
    assert again.dockWidgetArea(again.docks["query"]) == _Qt.RightDockWidgetArea


# ------------------------------------------------------------------ the reflection graph
def assert_labels_apart_and_inside(graph):
    rects = graph.label_rects()
    assert rects
    area = graph.vb.sceneBoundingRect()
    for k, r in enumerate(rects):
        assert area.contains(r), (r, area)
        for other in rects[k + 1:]:
            assert not r.intersects(other), (r, other)


def test_graph_shows_direction_and_a_lineage_colour_no_kind_has(qtbot, make_window, store_file):
    from PySide6.QtGui import QColor

    win = make_window(store_file, graph=True)
    gp = win.graph
    win.state.select_ids(["refl0"])
    qtbot.wait(20)
    taken = [QColor(c) for c in list(gp.theme.kinds.values()) + list(gp.theme.palette)]

    def far_from_every_kind(c):
        return min(np.hypot(np.hypot(c.red() - k.red(), c.green() - k.green()), c.blue() - k.blue()) for k in taken) > 80
    for item in (gp.hot_edges, gp.hot_arrows):
        assert far_from_every_kind(item.opts["pen"].color())
    assert far_from_every_kind(QColor(gp.theme.lineage))
    # every drawn link has an arrowhead at its derived end: two strokes from a tip near that node
    g = gp.graph
    ax, ay = gp.arrows.getData()
    hx, hy = gp.hot_arrows.getData()
    tips_x, tips_y = np.r_[ax, hx][0::2], np.r_[ay, hy][0::2]
    links = np.vstack([g.source_edges, g.supersede_edges])
    assert len(tips_x) == 2 * len(links)
    pw, ph = gp.vb.viewPixelSize()
    for d, s in links:
        near_head = np.hypot((tips_x - g.x[d]) / pw, (tips_y - g.y[d]) / ph).min()
        assert near_head < 12, (d, s)
    assert len(hx) >= 2 * 4  # refl0's lineage: fact0, ep00, ep01, refl2 links are black


def test_graph_labels_never_overlap_and_stay_inside_after_fit(qtbot, make_window, store_file):
    win = make_window(store_file, graph=True, size=(1100, 700))
    gp = win.graph
    gp.fit_view()
    qtbot.waitUntil(lambda: not gp._relabel.isActive(), timeout=20000)  # the labels follow the view on a short timer
    assert_labels_apart_and_inside(gp)
    g = gp.graph
    (x0, x1), (y0, y1) = gp.vb.viewRange()
    assert (g.x >= x0).all() and (g.x <= x1).all() and (g.y >= y0).all() and (g.y <= y1).all()


def test_focus_header_counts_what_is_shown(qtbot, make_window, store_file):
    win = make_window(store_file, graph=True)
    gp = win.graph
    win.state.select_ids(["refl0"])
    gp.focus.setChecked(True)
    qtbot.wait(20)
    shown = np.flatnonzero(gp._shown)
    real = shown[gp.graph.rows[shown] >= 0]
    total = int((gp.graph.rows >= 0).sum())
    links = gp.graph.source_edges
    drawn = int((gp._shown[links[:, 0]] & gp._shown[links[:, 1]]).sum())
    assert len(real) == 5 and drawn < len(links)
    assert gp.info.text().startswith(f"{len(real)} of {total} memories · {drawn} source link")


@needs_real
def test_isabella_graph_labels_do_not_overlap(qtbot, make_window, tmp_path):
    from memviz.importers import import_source
    out = tmp_path / "isabella.db"
    import_source("generative-agents", str(REAL_PERSONA / "bootstrap_memory"), str(out))
    win = make_window(out, graph=True, size=(1500, 950), timeout=60000)
    gp = win.graph
    g = gp.graph
    real = g.rows >= 0
    win.state.select_ids([win.state.data.arrays.ids[g.rows[real][int(g.level[real].argmax())]]])
    gp.fit_view()
    qtbot.waitUntil(lambda: not gp._relabel.isActive(), timeout=20000)
    assert len(gp.label_rects()) >= 10
    assert_labels_apart_and_inside(gp)


# ------------------------------------------------------------------ the empty window
def test_empty_window_says_what_to_do_instead_of_empty_axes(qtbot, make_window, store_file, tmp_path, monkeypatch):
    from PySide6.QtCore import Qt
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "userdata"))
    win = make_window(size=(1100, 700))
    page = win.start_page
    assert page.isVisible()
    for name in ("map", "graph", "timeline", "query"):  # the docks are covered
        dock = win.docks[name]
        centre = dock.mapTo(win, dock.rect().center())
        assert page.geometry().contains(centre), name
        assert win.childAt(centre) is page or page.isAncestorOf(win.childAt(centre)), name
    assert not win.reload_action.isEnabled() and not win.check_action.isEnabled()
    assert not win.export_menu.menuAction().isEnabled()
    assert not page.recent.isVisible()  # nothing opened yet: no empty list
    # the sample, from the page
    with qtbot.waitSignal(win.opened, timeout=30000):
        qtbot.mouseClick(page.sample_button, Qt.LeftButton)
    assert not page.isVisible() and win.reload_action.isEnabled() and win.check_action.isEnabled()
    # a bad file in a fresh window: the page stays, says why, and lists the recent stores
    win2 = make_window(settings="settings.ini")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with qtbot.waitSignal(win2.open_failed, timeout=20000):
        win2.open_path(str(bad))
    assert win2.start_page.isVisible() and "bad.db" in win2.start_page.problem.text()
    win2.error_box.close()
    win2.start_page.set_recent(win2.recent.files())
    item = win2.start_page.recent.item(0)
    assert item is not None and item.data(Qt.UserRole).endswith(".db")
    with qtbot.waitSignal(win2.opened, timeout=30000):
        win2.start_page.recent_chosen.emit(item.data(Qt.UserRole))
    assert not win2.start_page.isVisible()


def test_reset_layout_leaves_no_stale_tab_bars_and_restores_the_docks(qtbot, make_window, store_file):
    from PySide6.QtCore import Qt as _Qt
    from PySide6.QtWidgets import QTabBar
    win = make_window(store_file)
    win.removeDockWidget(win.docks["query"])
    win.addDockWidget(_Qt.LeftDockWidgetArea, win.docks["query"])
    win.docks["query"].show()
    win.docks["map"].setFloating(True)
    for size in ((1500, 950), (1100, 700), (1920, 1080)):
        win.resize(*size)
        win.reset_docks()
        qtbot.wait(30)
    assert win.dockWidgetArea(win.docks["query"]) == _Qt.RightDockWidgetArea and not win.docks["map"].isFloating()
    on_screen = [b for b in win.findChildren(QTabBar) if b.isVisible() and b.count()
                 and win.rect().intersects(b.geometry()) and "Memories" in [b.tabText(i) for i in range(b.count())]]
    assert len(on_screen) == 1, [b.geometry() for b in on_screen]


def test_a_long_job_text_is_cut_to_fit_the_progress_bar_and_whole_in_its_tooltip(qtbot, make_window, store_file):
    # seen in a 1500 px window: "UMAP: initial layout 28%" wrapped over a squeezed bar
    from memviz.app.plain_text import plain_tooltip  # a job's text may name a memory: shown as written
    win = make_window(store_file)
    win.resize(1100, 700)
    text = "UMAP: initial layout of a random 20,000 of 1,000,000 memories"
    win.workers.activity.emit("umap", 0.28, text)
    bar = win.progress
    assert bar.isVisible() and bar.width() == bar.minimumWidth() == bar.maximumWidth()
    shown = bar.text()
    assert shown.endswith("28%") and shown.startswith("UMAP: initial") and "…" in shown
    assert bar.fontMetrics().horizontalAdvance(shown) < bar.width()
    assert bar.toolTip() == plain_tooltip(text)
    win.workers.activity.emit("umap", -1.0, "UMAP: neighbour graph")
    assert bar.format() == "UMAP: neighbour graph" and bar.toolTip() == plain_tooltip(bar.format())  # a busy bar: no %
