"""The window meets a store in exclusive use by another process (issue 17.1, issue 19), or a file it does not
read: the open and the reload say so in place, never "Unexpected error" and never a traceback; nothing is lost."""
from __future__ import annotations

import re
import time

import pytest
from bad_stores import LockHolder, rollback_journal, sample_copy
from PySide6.QtCore import QSettings

from memviz.app.controllers import store_opener
from memviz.app.window import MainWindow
from memviz.store import connection


@pytest.fixture(autouse=True)
def short_busy_wait(monkeypatch):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 300)
    monkeypatch.setattr(store_opener, "OPEN_WAIT_S", 3.0)


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


def test_open_waits_visibly_for_a_store_in_exclusive_use_and_opens_when_it_is_free(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(store_opener, "OPEN_WAIT_S", 120.0)
    db = sample_copy(tmp_path)
    win = make_window(qtbot, tmp_path)
    holder = LockHolder(db, "exclusive-mode")
    try:
        win.open_path(str(db))
        qtbot.waitUntil(lambda: "in exclusive use by another process" in win.progress.toolTip(), timeout=30000)
        assert win.cancel_button.isVisible() and win.error_box is None  # waiting, stoppable, no error yet
    finally:
        holder.close()
    with qtbot.waitSignal(win.opened, timeout=30000):
        pass
    assert win.state.data is not None and win.error_box is None


def test_cancel_stops_the_wait_and_keeps_the_store_shown(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(store_opener, "OPEN_WAIT_S", 120.0)
    first, second = sample_copy(tmp_path, "a.db"), sample_copy(tmp_path, "b.db")
    win = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(win.opened, timeout=30000):
        win.open_path(str(first))
    with LockHolder(second, "exclusive-mode"):
        win.open_path(str(second))
        qtbot.waitUntil(lambda: "in exclusive use" in win.progress.toolTip(), timeout=30000)
        win.cancel_button.click()
        qtbot.waitUntil(lambda: not win.workers.running("open"), timeout=30000)
    assert win.state.data.store.path == str(first) and win.error_box is None


def test_the_wait_counter_shows_the_real_time_waited(qtbot, tmp_path, monkeypatch):
    """Each try waits SQLite's busy timeout once (the framework probe no longer waits a second time
    before the schema read does), and the count shown is the time really waited."""
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 1000)
    monkeypatch.setattr(store_opener, "OPEN_WAIT_S", 120.0)
    db = sample_copy(tmp_path)
    win = make_window(qtbot, tmp_path)
    seen = []  # (seconds shown, seconds really waited) at each change of the count
    with LockHolder(db, "exclusive-mode"):
        began = time.monotonic()
        win.open_path(str(db))

        def counted():
            m = re.search(r"waiting \((\d+) s\)", win.progress.toolTip())
            if m and (not seen or seen[-1][0] != int(m.group(1))):
                seen.append((int(m.group(1)), time.monotonic() - began))
            return len(seen) >= 4
        qtbot.waitUntil(counted, timeout=60000)
        win.cancel_button.click()
        qtbot.waitUntil(lambda: not win.workers.running("open"), timeout=30000)
    for shown, real in seen:
        assert abs(real - shown) < 1.0, seen
    tries = [b - a for (a, _), (b, _) in zip(seen, seen[1:])]
    assert all(t <= 3 for t in tries), seen  # a try is one busy wait (1 s) and the pause (1 s), not two waits


def test_a_foreign_file_names_file_import_in_the_window_and_the_command_in_the_shell(qtbot, tmp_path, capsys):
    from memviz.cli import main

    foreign = tmp_path / "notes.txt"
    foreign.write_text("groceries: milk, eggs\n" * 50)
    win = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(win.open_failed, timeout=20000) as sig:
        win.open_path(str(foreign))
    text = sig.args[1]
    assert "File ▸ Import… brings in Generative Agents folders" in text and "the other exports it lists" in text
    assert "memviz import" not in text and text in win.error_box.text()
    assert main(["stats", str(foreign)]) == 2  # the shell keeps its own wording
    err = capsys.readouterr().err
    assert "`memviz import` brings in" in err and "`memviz import --help`" in err and "File ▸" not in err
    # a folder memviz does not recognise: the same, once (no second hint in the shell's words)
    folder = tmp_path / "some folder"
    folder.mkdir()
    with qtbot.waitSignal(win.open_failed, timeout=20000) as sig:
        win.open_path(str(folder))
    assert sig.args[1].startswith(f"{folder} is a folder, not a memory store. memviz opens") and "memviz import" not in sig.args[1]
    assert main(["stats", str(folder)]) == 2
    assert capsys.readouterr().err.count("memviz import") == 2  # `memviz import` brings in … `memviz import --help`
