"""The window shows a large framework mirror once its rows are read; its full-text and vector
indexes are written after (frameworks/mirror.py `indexing`): the status says edits wait, then
follows to writable; closing the window's store meanwhile stops the step cleanly."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from test_fw_mirror_build import N, langgraph_file  # noqa: E402,F401 - the fixture
from test_fw_mirror_index_later import _cache, held  # noqa: E402,F401 - fixtures


def test_the_status_follows_the_indexes_of_a_large_mirror(make_window, qtbot, langgraph_file, held):  # noqa: F811
    held.clear()
    win = make_window(langgraph_file)
    store = win.state.data.store
    assert len(win.state.data.arrays) == N and store.indexing
    assert win.status_ro.text() == "READ-ONLY" and "indexes" in win.status_ro.toolTip()
    assert win.statusBar().currentMessage().endswith("building its search indexes; edits wait for them")
    held.set()
    qtbot.waitUntil(lambda: win.status_ro.text() == "writable", timeout=20000)
    # the open's message does not go on saying so once they are built
    assert win.statusBar().currentMessage().endswith("its search indexes are built")
    assert not store.indexing and store.meta("mirror.pending") is None
    assert any(i.startswith("item-4321@") for i, _ in store.fts_search("fact 4321"))



def test_indexes_that_cannot_be_built_are_said_in_the_status(make_window, qtbot, langgraph_file, monkeypatch):  # noqa: F811
    import threading

    import apsw

    from memviz.frameworks import mirror as mirror_mod
    monkeypatch.setattr(mirror_mod, "INDEX_LATER_ROWS", 0)
    gate = threading.Event()

    def full(conn, upto, dims):
        assert gate.wait(30)
        raise apsw.FullError("database or disk is full")
    monkeypatch.setattr(mirror_mod, "fill_indexes", full)
    win = make_window(langgraph_file)
    store = win.state.data.store
    assert store.indexing and win.statusBar().currentMessage().endswith("building its search indexes; edits wait for them")
    gate.set()
    qtbot.waitUntil(lambda: not store.indexing and win.status_ro.text() == "READ-ONLY"
                    and "could not be built" in win.statusBar().currentMessage(), timeout=20000)
    assert "disk is full" in win.statusBar().currentMessage() and "edits wait for them" not in win.statusBar().currentMessage()
