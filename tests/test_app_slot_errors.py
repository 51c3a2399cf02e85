"""An exception that escapes a Qt slot reaches the user as a message in the window, never as a
traceback: an SQLite error as the store's own message, anything else as a bug with a log file."""
from __future__ import annotations

import sys

import apsw
import pytest
from PySide6.QtCore import QObject, Signal  # noqa: E402

from memviz.app.main import report_slot_errors  # noqa: E402


class Emitter(QObject):
    fire = Signal()


@pytest.fixture
def hooked(make_window, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    win = make_window()
    report_slot_errors(win)
    return win


def fire(fn):
    e = Emitter()
    e.fire.connect(fn)
    e.fire.emit()


def test_an_sqlite_error_in_a_slot_is_shown_as_the_stores_message(hooked, capfd):
    def slot():
        raise apsw.BusyError("database is locked")
    fire(slot)
    text = hooked.error_box.text()
    assert "in exclusive use by another process" in text and "What to do" in text
    assert "Traceback" not in capfd.readouterr().err


def test_a_bug_in_a_slot_is_shown_with_where_its_details_are(hooked, tmp_path, capfd):
    def slot():
        raise ValueError("a value nobody expected")
    fire(slot)
    text = hooked.error_box.text()
    log = tmp_path / "cache" / "errors.log"
    assert "ValueError: a value nobody expected" in text and str(log) in text
    assert "Traceback" in log.read_text() and "Traceback" not in capfd.readouterr().err
