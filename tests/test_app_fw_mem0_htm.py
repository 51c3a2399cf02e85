"""mem0 and HTM stores opened in the window: the rows, agents and kinds on screen, the status
bar saying what the store is, a correction (mem0) and an importance change (HTM) written back
while the window is open, and the system's own writes arriving live."""
from __future__ import annotations

from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures
from PySide6.QtWidgets import QLabel
from test_fw_htm import add_node, htm, sql  # noqa: F401 - fixtures
from test_fw_mem0 import FACTS, env, m0  # noqa: F401 - fixtures

from memviz.edits.commands import Correct


def agents(win):
    return sorted(set(win.state.data.arrays.agent))


def test_mem0_in_the_window(m0, make_window, qtbot):  # noqa: F811
    m, ids, dsn = m0
    win = make_window(dsn)
    a = win.state.data.arrays
    assert len(a) == 4 and agents(win) == ["alice", "bob", "deploy-bot"]
    assert set(a.kind) == {"fact"} and a.embedding_model == "fake-embed"
    store = win.state.data.store
    assert store.describe().startswith("mem0 store on ") and not store.read_only
    # the Correct dialog says what mem0 does: the memory is written over, keeping its id
    menu = win.context_menu_for([ids[0]])
    next(a for a in menu.actions() if a.objectName() == "edit_correct").trigger()
    dlg = win.edits.dialog
    texts = [w.text() for w in dlg.findChildren(QLabel)]
    assert "Corrected text (written over the memory, which keeps its id):" in texts
    assert not any("superseding" in t or "retired once" in t for t in texts)
    dlg.reject()
    Correct(ids[1], "Alice is allergic to peanuts and sesame").apply(store)
    assert m.get(ids[1])["memory"] == "Alice is allergic to peanuts and sesame"
    m.add("Dana runs the Tuesday standup", agent_id="standup-bot", infer=False)
    qtbot.waitUntil(lambda: len(win.state.data.arrays) == 5, timeout=20000)
    assert "standup-bot" in agents(win)
    store.close()
    win.state.set_data(None)


def test_htm_in_the_window(htm, make_window, qtbot):  # noqa: F811
    pg, dsn = htm  # noqa: F811
    win = make_window(dsn)
    a = win.state.data.arrays
    assert len(a) == 3 and agents(win) == ["Rover", "Scout"]
    assert set(a.kind) == {"preference", "fact", "question"}
    store = win.state.data.store
    assert "working-memory" in store.get("pref-db")["tags"]
    win.table.search.setText("#working-memory")  # the table filters HTM's working memory by its tag
    win.table.refilter()
    assert win.table.count.text() == "2 of 3"
    assert sorted(win.state.data.arrays.ids[r] for r in win.table.shown_rows()) == ["pref-db", "q-cache"]
    win.table.search.setText("")
    win.table.refilter()
    store.update_fields("q-cache", {"importance": 7.0})
    assert sql(pg, dsn, "SELECT importance FROM nodes WHERE key = 'q-cache'") == [(7.0,)]
    with pg.admin(db_name(dsn)) as c:
        add_node(c, "ctx-9", "Robot Scout recalled the cache plan", "r-2", type_="context", seed=9)
    qtbot.waitUntil(lambda: len(win.state.data.arrays) == 4, timeout=20000)
    store.close()
    win.state.set_data(None)
