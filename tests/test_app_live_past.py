"""Memories that arrive live (an agent's insert, the user's own correction) are in every view
that follows: the as-of bar's moments are made from the arrays as they are now, and the prompt
view counts the new memories' tokens. Driven through the window as a user would."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import unit_vectors

import memviz.store as ms
from memviz.app.dialogs.edit_dialogs import CorrectDialog
from memviz.edits import History, SetImportance

pytestmark = pytest.mark.qt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW_TEXT = "Dave keeps bees on the roof of the library"


START = 1_700_000_000.0
T = START + 500  # after m1, m2; before m3 and every edit
#: a model memviz cannot run here: a correction is written at once, marked as needing an embedding
MODEL = "wordllama/not-shipped"


@pytest.fixture
def lived(tmp_path, monkeypatch):
    """m1, m2 at START; m3 at START+1000; m2's importance changed at START+2000 (audited)."""
    path = str(tmp_path / "lived.db")
    store = ms.create(path)
    vecs = unit_vectors(3, 8)
    now = [START]
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: now[0])
        base = {"kind": "fact", "agent": "helper", "importance": 5, "embedding_model": MODEL}
        store.insert_memories([{**base, "id": "m1", "content": "Alice drinks green tea", "embedding": vecs[0]},
                               {**base, "id": "m2", "content": "Bob owns a dog called Rex", "embedding": vecs[1]}])
        now[0] = START + 1000
        store.insert_memories([{**base, "id": "m3", "content": "Carol moved to Berlin", "embedding": vecs[2]}])
        now[0] = START + 2000
        History(store).perform(SetImportance(["m2"], 9))
    store.close()
    return path


def agent_sql(path, *statements):
    """SQL from another process (the agent), through memviz's connection (sqlite-vec loaded)."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from memviz.store.connection import connect; "
              "c = connect(sys.argv[2]); [c.execute(s) for s in sys.argv[3:]]")
    subprocess.run([sys.executable, "-c", script, ROOT, path, *statements], check=True)


def agent_inserts(path, mid="agent1", text=NEW_TEXT, importance=9):
    now = int(time.time())
    agent_sql(path, "INSERT INTO memories(id, agent, kind, content, importance, event_time, created_at) "
                    f"VALUES ('{mid}', 'helper', 'fact', '{text}', {importance}, {now}, {now})")


def shown_ids(win, rows):
    a = win.state.data.arrays
    return {a.ids[int(r)] for r in rows}


def correct(qtbot, win, mid, text):
    """Correct `mid` through its dialog, as a user does, and wait until the window shows it."""
    n = win.state.data.n
    win.state.select_ids([mid])
    win.edits.run("correct", [mid])
    dlg = win.edits.dialog
    assert isinstance(dlg, CorrectDialog)
    dlg.new_text.setPlainText(text)
    dlg.accept()
    qtbot.waitUntil(lambda: win.state.data.n == n + 1 and not win.edits.corrections.embedding, timeout=60000)


def test_time_travel_after_an_agents_insert_and_an_own_correction(make_window, lived, qtbot):
    win = make_window(lived)
    n = win.state.data.n
    agent_inserts(lived)
    qtbot.waitUntil(lambda: win.state.data.n == n + 1, timeout=20000)
    win.as_of_bar.go_to(T)  # raised IndexError in the graph panel, a size mismatch in the map
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2"}
    win.as_of_bar.go_to(None)
    correct(qtbot, win, "m2", "Bob owns a cat called Tom")
    assert win.live.refreshes["full"] == 0  # both arrived as deltas
    win.as_of_bar.go_to(T)
    assert win.state.data.n == n + 2
    t = win.table.model
    m2 = int(t.order[[win.state.data.arrays.ids[r] for r in t.order].index("m2")])
    assert win.state.data.arrays.importance[m2] == 5 and win.state.data.arrays.live[m2]  # as it was at T
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2"} and win.table.count.text() == "2 of 2"
    assert shown_ids(win, win.timeline.rows) == {"m1", "m2"}
    assert shown_ids(win, win.map.shown_rows()) <= {"m1", "m2"}
    assert win.state.shown_counts()["total"] == 2
    win.as_of_bar.go_to(START + 1500)
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2", "m3"}
    win.as_of_bar.go_to(None)
    a = win.state.data.arrays
    assert len(a) == n + 2 and a.index_of("agent1") is not None
    assert len(win.table.shown_rows()) == n + 2
    assert win.state.shown_counts()["total"] == n + 2


def test_rows_arriving_while_the_window_shows_the_past(make_window, lived, qtbot):
    win = make_window(lived)
    n = win.state.data.n
    win.as_of_bar.go_to(T)
    agent_inserts(lived)
    agent_sql(lived, "UPDATE memories SET access_count = 3 WHERE id = 'm3'")
    qtbot.waitUntil(lambda: win.state.data.n == n + 1 and not win.workers.running("refresh"), timeout=20000)
    assert win.state.as_of == T
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2"}  # the new memory did not exist then
    assert win.state.shown_counts()["total"] == 2
    assert win.state.loaded_arrays.access_count[win.state.loaded_arrays.index_of("m3")] == 3
    # the as-of bar counts the new memory, and its span ends at the newest memory's creation
    assert f"2 of {n + 1} memories existed" in win.as_of_bar.info.text()
    assert win.as_of_bar.span[1] == win.state.loaded_arrays.created_at.max() > START + 1000
    win.as_of_bar.go_to(None)
    assert shown_ids(win, win.table.shown_rows()) == {"m1", "m2", "m3", win.state.data.arrays.ids[-2], "agent1"}
    assert win.state.data.arrays.access_count[win.state.data.arrays.index_of("m3")] == 3


def test_the_prompt_view_follows_new_memories(make_window, lived, qtbot):
    win = make_window(lived)
    p = win.prompt
    win.docks["prompt"].raise_()
    p.set_shown(True)
    qtbot.waitUntil(lambda: p.plan is not None, timeout=20000)
    p.strategy.setCurrentText("important")
    n = win.state.data.n
    agent_inserts(lived, importance=10)
    qtbot.waitUntil(lambda: win.state.data.n == n + 1, timeout=20000)
    # its text is read off the GUI thread and counted; then it leads the prompt (importance first)
    qtbot.waitUntil(lambda: p.plan is not None and win.state.data.arrays.ids[p.plan.rows[0]] == "agent1",
                    timeout=20000)
    assert NEW_TEXT in p.assembled_text() and len(p.tokens) == n + 1
    p.budget.setValue(5000)  # raised IndexError in context.assembly._evict
    assert p.plan.budget == 5000
    win.docks["table"].raise_()  # hidden: the next memory is read when the view is shown again
    p.set_shown(False)
    agent_inserts(lived, "agent2", "Erin repairs old clocks", importance=10)
    qtbot.waitUntil(lambda: win.state.data.n == n + 2, timeout=20000)
    p.budget.setValue(6000)
    win.as_of_bar.go_to(T)
    win.as_of_bar.go_to(None)
    win.docks["prompt"].raise_()
    p.set_shown(True)
    qtbot.waitUntil(lambda: p.plan is not None and "Erin repairs old clocks" in p.assembled_text(), timeout=20000)
    assert p.plan.budget == 6000 and len(p.tokens) == n + 2
