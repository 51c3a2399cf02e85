"""The window meets a store in exclusive use by another process (issue 17.1, issue 19): the open and
the reload say so in place, never "Unexpected error" and never a traceback; nothing is lost."""
from __future__ import annotations

import pytest
from bad_stores import LockHolder, rollback_journal, sample_copy
from PySide6.QtCore import QSettings

from memviz.app.window import MainWindow
from memviz.store import connection


@pytest.fixture(autouse=True)
def short_busy_wait(monkeypatch):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 300)


def make_window(qtbot, tmp_path):
    win = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    qtbot.addWidget(win)
    win.show()
    return win


def test_open_of_a_store_in_exclusive_use_says_so(qtbot, tmp_path):
    db = sample_copy(tmp_path)
    win = make_window(qtbot, tmp_path)
    with LockHolder(db, "exclusive-mode"), qtbot.waitSignal(win.open_failed, timeout=30000) as sig:
        win.open_path(str(db))
    text = win.error_box.text()
    assert "in exclusive use by another process" in text and sig.args[1] in text
    assert "Unexpected error" not in text and "Traceback" not in text
    assert win.state.data is None


def test_reload_of_a_store_in_exclusive_use_says_so(qtbot, tmp_path):
    db = rollback_journal(tmp_path)
    win = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(win.opened, timeout=30000):
        win.open_path(str(db))
    data = win.state.data
    with LockHolder(db, "begin-exclusive"):
        win.reload()
        qtbot.waitUntil(lambda: win.error_box is not None and win.error_box.isVisible(), timeout=30000)
    text = win.error_box.text()
    assert "in exclusive use by another process" in text and "Unexpected error" not in text
    assert win.state.data is data  # the store as last read stays on screen
