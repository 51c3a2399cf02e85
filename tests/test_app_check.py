"""Tools ▸ Check store… in the window: the check runs as a background job, reports the drifted
indexes, and Repair (after saying what it will do) rebuilds them; the memories stay as they were."""
from __future__ import annotations

import shutil

from PySide6.QtCore import QSettings
from test_app_support import T0  # noqa: F401 - sets QT_QPA_PLATFORM
from test_store_check import SAMPLES, _drift, _memories_digest

from memviz.app.window import MainWindow


def test_check_dialog_finds_drift_and_repairs_it(qtbot, tmp_path):
    path = str(tmp_path / "a.db")
    shutil.copy(SAMPLES / "assistant.db", path)
    _drift(path)
    before = _memories_digest(path)
    win = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.opened, timeout=30000):
        win.open_path(path)
    # a hybrid query on the damaged index says so in the query panel's footer (the probe on first use)
    win.query.preset.setCurrentText("hybrid")
    win.query.text.setText("sleep")
    win.query.run_query()
    qtbot.waitUntil(lambda: win.query.results.result is not None and not win.workers.running("query"), timeout=30000)
    assert "⚠ warning: the full-text index is out of step" in win.query.legend.text()
    win.check_action.trigger()
    dlg = win.check_dialog
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=30000)
    assert not dlg.report.clean and dlg.report.has("fts_drift") and dlg.report.has("vec_missing")
    assert "Repair will:" in dlg.text.toPlainText() and "rebuild the full-text index" in dlg.text.toPlainText()
    assert dlg.repair_button.isEnabled()
    dlg.repair_button.click()  # first click says what it will do
    assert dlg.repair_button.text() == "Repair now" and "no memory is changed" in dlg.status.text()
    dlg.repair_button.click()
    qtbot.waitUntil(lambda: dlg.status.text().startswith("Repaired:") and dlg.report.clean, timeout=30000)
    qtbot.waitUntil(lambda: not any(win.workers.running(j) for j in ("reload", "refresh")), timeout=20000)
    assert _memories_digest(path) == before
    win.query.run_query()  # the repair is known: no warning any more
    qtbot.waitUntil(lambda: not win.workers.running("query") and "warning" not in win.query.legend.text(),
                    timeout=30000)
    dlg.run_check()
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=30000)
    assert dlg.report.clean and not dlg.repair_button.isEnabled()


def test_check_dialog_on_a_read_only_store_offers_no_repair(qtbot, tmp_path):
    path = str(tmp_path / "a.db")
    shutil.copy(SAMPLES / "assistant.db", path)
    _drift(path)
    win = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.opened, timeout=30000):
        win.open_path(path, read_only=True)
    win.check_action.trigger()
    dlg = win.check_dialog
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=30000)
    assert dlg.report.has("fts_drift") and not dlg.repair_button.isEnabled()
    assert "read-only" in dlg.repair_button.toolTip()
