"""The store's clock in the window: the status bar shows it, Tools ▸ Set store clock…
changes it (recorded in the store or for the session), the query and consolidate use it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QDateTime, QSettings, QTimeZone

import memviz.store as ms
from memviz.app.window import MainWindow
from memviz.store.clock import SIMULATED, WALL, store_clock

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"


@pytest.fixture
def win(qtbot, tmp_path):
    path = tmp_path / "assistant.db"
    shutil.copy(SAMPLE, path)
    w = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    w.map.auto_umap = False
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    with qtbot.waitSignal(w.opened, timeout=60000):
        w.open_path(str(path))
    return w


def _reloaded(qtbot, w, dlg):
    old = w.state.data
    dlg.accept()
    qtbot.waitUntil(lambda: w.state.data is not old, timeout=20000)


def test_status_bar_shows_the_recorded_clock_and_the_dialog_changes_it(qtbot, win):
    label = win.clock_status.label
    assert label.isVisible() and label.text() == "clock 2025-07-07 02:10 (simulated)"
    store = win.state.data.store
    # for this session only: nothing is written
    dlg = win.clock_status.open_dialog()
    dlg.buttons[WALL].setChecked(True)
    dlg.record.setChecked(False)
    _reloaded(qtbot, win, dlg)
    assert label.text().endswith("(wall)") and store_clock(win.state.data.store).mode == WALL
    assert store.meta("clock")["mode"] == SIMULATED
    # recorded: a fixed time, written to the store
    dlg = win.clock_status.open_dialog()
    dlg.when.setDateTime(QDateTime.fromSecsSinceEpoch(ms.to_epoch("2025-07-09T02:10"), QTimeZone.utc()))
    assert dlg.buttons[SIMULATED].isChecked()
    _reloaded(qtbot, win, dlg)
    assert label.text() == "clock 2025-07-09 02:10 (simulated)"
    with ms.open(store.path, read_only=True) as other:  # another reader sees it
        assert ms.iso(store_clock(other).at) == "2025-07-09 02:10:00"


def test_the_query_ranks_with_live_recency_and_consolidate_shows_the_clock(qtbot, win):
    q = win.query
    q.text.setText("Elena's knee")
    got = []
    q.ranked.connect(lambda r, s: got.append(r))
    q.run_query()
    qtbot.waitUntil(lambda: bool(got), timeout=20000)
    assert "ages from the store's clock, 2025-07-07 02:10:00 UTC (simulated)" in q.legend.text()
    engine = q.model.engine_of(win.state.data)
    engine.set_query("Elena's knee and the physiotherapist")
    r = engine.score(q.params())
    assert max(r.raw["recency"]) > 0.01  # the wall clock made every recency 0
    win.reflect_tools.open_consolidate()
    dlg = win.reflect_tools.consolidate_dialog
    assert "2025-07-07 02:10:00 UTC (simulated)" in dlg.clock.text()
    qtbot.waitUntil(lambda: dlg.plan is not None, timeout=20000)
    assert dlg.plan.prune == [] and dlg.prune.rowCount() == 0
    dlg.close()
