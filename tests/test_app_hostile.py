"""Issue 19 cases 4-7 in the window: a store with values an agent wrote in the wrong form and a
10 MB memory opens, every panel draws, the rows are flagged, and selecting the huge one shows
a prefix with "show all" at once."""
from __future__ import annotations

import numpy as np
import pytest
from hostile_store import ODD, build_hostile
from PySide6.QtCore import QItemSelectionModel, QSettings
from test_app_support import T0  # noqa: F401 - sets QT_QPA_PLATFORM

from memviz.app.panels.detail_panel import PREFIX_CHARS
from memviz.app.panels.table_panel import COLUMNS, FLAG
from memviz.app.window import MainWindow


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory):
    return build_hostile(tmp_path_factory.mktemp("hostile") / "hostile.db", huge=True)


@pytest.fixture
def win(qtbot, tmp_path, hostile_file):
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=30000):
        w.open_path(hostile_file)
    return w


def select(win, mid):
    model = win.table.model
    r = win.state.data.arrays.index_of(mid)
    pos = int(np.flatnonzero(model.order == r)[0])
    win.table.view.selectionModel().select(model.index(pos, 0),
                                           QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
    assert win.detail.shown_id == mid
    return pos


def test_hostile_rows_are_shown_and_flagged(qtbot, win):
    model = win.table.model
    flag_col = COLUMNS.index(FLAG)
    for mid in ("imp_text", "imp_inf", "t_event_yesterday", "t_created_yesterday"):
        pos = select(win, mid)
        assert model.index(pos, flag_col).data() == FLAG
        assert "cannot be read" in model.index(pos, flag_col).data(3)  # the tooltip says why
        assert win.detail.problems.isVisibleTo(win) and "⚠" in win.detail.problems.text()
    pos = select(win, "t_event_yesterday")
    assert model.index(pos, COLUMNS.index("event time")).data() == "unreadable time"
    assert "unreadable time" in win.detail.problems.text()
    pos = select(win, "imp_text")
    assert "importance 5" in win.detail.title.text() and "'very high'" in win.detail.problems.text()
    pos = select(win, "t_iso_z")
    assert model.index(pos, COLUMNS.index("event time")).data() == "2026-03-01 12:00:00"
    assert model.index(pos, flag_col).data() == "" and not win.detail.problems.isVisibleTo(win)
    select(win, "bad_utf8")
    assert win.detail.content.toPlainText() == "hell\ufffd\x00 o"
    assert "UTF-8" in win.detail.problems.text()
    select(win, "ghost_entity")
    assert "no-such-entity" in win.detail.problems.text()
    win.detail.tabs.setCurrentIndex(1)
    items = [win.detail.related.topLevelItem(i) for i in range(win.detail.related.topLevelItemCount())]
    broken = [t for t in items if t.text(0).startswith("Entities not found")]
    assert broken and broken[0].child(0).text(0) == "no-such-entity"
    assert len(ODD) == 11  # every odd row was selected above or in the store tests


def test_a_10_mb_memory_shows_a_prefix_and_show_all(qtbot, win):
    select(win, "huge")
    assert len(win.detail.content.toPlainText()) == PREFIX_CHARS
    assert win.detail.show_all.isVisibleTo(win) and win.detail.show_all.text() == "show all (10.0 MB)"
    win.detail.show_all.click()
    qtbot.waitUntil(lambda: not win.detail.show_all.isVisibleTo(win), timeout=60000)
    assert win.detail.content.toPlainText().replace("\n", "") == "word " * 2_000_000
    select(win, "plain")
    assert not win.detail.show_all.isVisibleTo(win)


def test_soft_delete_and_undo_in_the_window_on_invalid_utf8(qtbot, tmp_path):
    from hostile_store import BAD_UTF8

    from memviz.store.connection import connect
    path = build_hostile(tmp_path / "h.db")
    w = MainWindow(QSettings(str(tmp_path / "s2.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=30000):
        w.open_path(path)

    def raw():
        c = connect(path, readonly=True)
        try:
            return c.execute("SELECT CAST(content AS BLOB), valid_until FROM memories WHERE id='bad_utf8'").fetchone()
        finally:
            c.close()
    select(w, "bad_utf8")
    w.edits.actions["delete"].trigger()
    qtbot.waitUntil(lambda: raw()[1] is not None and not any(w.workers.running(j) for j in ("reload", "refresh")), timeout=10000)
    assert raw()[0] == BAD_UTF8 and not getattr(w, "error_box", None)
    w.undo_action.trigger()
    qtbot.waitUntil(lambda: raw()[1] is None and not any(w.workers.running(j) for j in ("reload", "refresh")), timeout=10000)
    assert raw()[0] == BAD_UTF8
