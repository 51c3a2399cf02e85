"""The window opens a large store before SQLite's quick check has answered (store.open_and_read
check_later): the status says edits wait for it, then follows its answer; damage is said."""
import pytest

from memviz.store import store as store_mod
from tests.test_store_bad_input import filled
from tests.test_store_check_later import damaged


@pytest.fixture(autouse=True)
def large(monkeypatch):
    monkeypatch.setattr(store_mod, "CHECK_LATER_BYTES", 0)   # the tests' stores count as large


def test_the_status_follows_the_check_of_a_sound_store(make_window, qtbot, tmp_path):
    win = make_window(filled(tmp_path / "ok.db"))
    qtbot.waitUntil(lambda: win.status_ro.text() == "writable", timeout=10000)
    assert not win.state.data.store.checking and not getattr(win, "error_box", None)


def test_damage_found_after_the_window_is_up_is_said(make_window, qtbot, tmp_path):
    win = make_window(damaged(tmp_path, "idx_audit_memory"))  # an index the window's first reads do not use
    assert len(win.state.data.arrays) == 60   # shown before the check answered
    qtbot.waitUntil(lambda: getattr(win, "error_box", None) is not None, timeout=10000)
    assert "quick check found damage" in win.error_box.text() and "read-only" in win.error_box.text()
    assert win.status_ro.text() == "READ-ONLY" and "quick_check found damage" in win.status_ro.toolTip()
