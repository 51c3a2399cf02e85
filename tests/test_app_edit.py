"""Editing through the window (offscreen): context-menu actions with undo/redo, correct with the
real local embedder, conflict, busy agent, external writes, retired dock, read-only."""
from __future__ import annotations

import shutil
import threading

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402
from test_app_support import build_store  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.app.dialogs.edit_dialogs import BusyDialog, ConflictDialog, CorrectDialog  # noqa: E402
from memviz.edits import SetImportance  # noqa: E402
from memviz.embed import LOCAL_MODEL, default_embedder  # noqa: E402
from memviz.store.connection import connect  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("edit") / "base.db"
    build_store(path).close()
    return str(path)


@pytest.fixture
def db(tmp_path, built):
    path = str(tmp_path / "mem.db")
    shutil.copyfile(built, path)
    return path


@pytest.fixture
def win(make_window, db):
    return make_window(db, size=(1200, 800))


def menu_action(win, ids, key):
    menu = win.context_menu_for(ids)
    return next(a for a in menu.actions() if a.objectName() == f"edit_{key}")


def settle(qtbot, win):
    """Wait for a correction's embedding (on a worker) and the reload that follows a write."""
    qtbot.waitUntil(lambda: not win.edits.corrections.embedding
                    and not any(win.workers.running(j) for j in ("reload", "refresh")), timeout=10000)
    qtbot.wait(20)


def row(win, mid):
    return win.state.data.store.get(mid)


def test_every_context_action_and_its_undo_redo(qtbot, win):
    ctl = win.edits
    win.state.select_ids(["ep01"])
    steps = [
        ("confirm", lambda r: r["protected"] and r["decay_rate"] == 0),
        ("unprotect", lambda r: not r["protected"] and r["decay_rate"] > 0),
        ("delete", lambda r: r["valid_until"] is not None),
        ("restore", lambda r: r["valid_until"] is None),
    ]
    for n, (key, check) in enumerate(steps, 1):
        before = row(win, "ep01")
        act = menu_action(win, ["ep01"], key)
        assert act.isEnabled(), key
        act.trigger()
        settle(qtbot, win)
        after = row(win, "ep01")
        assert check(after), key
        assert win.undo_stack.count() == n and win.undo_stack.index() == n
        assert win.state.selected_ids == ["ep01"]  # the selection survives the refresh
        win.undo_action.trigger()  # Edit ▸ Undo, as Ctrl+Z
        settle(qtbot, win)
        assert {k: row(win, "ep01")[k] for k in ("protected", "decay_rate", "valid_until")} == \
               {k: before[k] for k in ("protected", "decay_rate", "valid_until")}
        assert win.undo_stack.index() == n - 1 and win.redo_action.isEnabled()
        win.redo_action.trigger()
        settle(qtbot, win)
        assert check(row(win, "ep01")) and win.undo_stack.index() == n
    # importance and tags go through their dialogs
    menu_action(win, ["ep01", "ep02"], "importance").trigger()
    ctl.dialog.spin.setValue(8.5)
    ctl.dialog.accept()
    settle(qtbot, win)
    assert [row(win, i)["importance"] for i in ("ep01", "ep02")] == [8.5, 8.5]
    menu_action(win, ["ep01"], "tags").trigger()
    ctl.dialog.tags.setText("health, urgent")
    ctl.dialog.accept()
    settle(qtbot, win)
    assert row(win, "ep01")["tags"] == ["health", "urgent"]
    assert "tags" in win.undo_action.text().lower()
    win.undo_action.trigger()
    settle(qtbot, win)
    assert row(win, "ep01")["tags"] == []
    # the detail panel's history lists the undo entries
    win.state.select_ids(["ep01"])
    actions = [win.detail.history.topLevelItem(i).text(1) for i in range(win.detail.history.topLevelItemCount())]
    assert "undo:confirm" in actions and "redo:soft_delete" in actions and actions[-1] == "undo:set_tags"


def test_keyboard_shortcuts_act_on_the_selection(qtbot, win):
    win.state.select_ids(["ep03"])
    assert win.edits.actions["delete"].shortcut().toString() == "Del"
    win.edits.actions["delete"].trigger()
    settle(qtbot, win)
    assert row(win, "ep03")["valid_until"] is not None
    assert not win.edits.actions["delete"].isEnabled() and win.edits.actions["restore"].isEnabled()
    assert not win.retired.items  # tabbed behind the table: not read while hidden
    win.docks["retired"].raise_()  # read when it comes into view
    qtbot.waitUntil(lambda: "ep03" in [m.id for m in win.retired.items], timeout=20000)
    # the window's selection is marked in the retired list, so Restore acts on it
    assert win.retired.chosen_ids() == ["ep03"] and win.retired.restore_button.isEnabled()
    panel = win.retired
    panel.tree.clearSelection()
    assert not panel.restore_button.isEnabled()
    r = panel.row_of("ep03")
    assert panel.model.index(r, 3).data() == "ep03" and panel.model.index(r, 1).data() == "deleted"
    panel.tree.selectionModel().select(panel.model.index(r, 0), QItemSelectionModel.Select | QItemSelectionModel.Rows)
    assert panel.chosen_ids() == ["ep03"] and win.state.selected_ids == ["ep03"]
    win.retired.restore_button.click()
    settle(qtbot, win)
    assert row(win, "ep03")["valid_until"] is None
    qtbot.waitUntil(lambda: not win.workers.running("retired")  # the list is re-read in the background
                    and "ep03" not in [m.id for m in win.retired.items], timeout=20000)


def test_correct_with_the_real_local_embedder(qtbot, win):
    ctl = win.edits
    win.state.select_ids(["fact0"])
    menu_action(win, ["fact0"], "correct").trigger()
    dlg = ctl.dialog
    assert isinstance(dlg, CorrectDialog) and dlg.old_text.isReadOnly()
    assert dlg.old_text.toPlainText() == row(win, "fact0")["content"] and not dlg.warning.isVisible()
    new = "Alice is allergic to peanuts and to shellfish."
    dlg.new_text.setPlainText(new)
    dlg.accept()
    settle(qtbot, win)
    # the user's own correction is no memory "written since you last looked" (+1 new)
    assert win.state.data.arrays.index_of(win.state.selected_ids[0]) is not None and not win.new_button.isVisible()
    old = row(win, "fact0")
    assert old["valid_until"] is not None
    new_id = win.state.selected_ids[0]
    rec = row(win, new_id)
    assert rec["content"] == new and rec["attributes"]["supersedes"] == "fact0"
    assert rec["embedding_model"] == LOCAL_MODEL
    hits = win.state.data.store.vec_search(default_embedder().embed_one(new), 1)
    assert hits[0][0] == new_id
    win.docks["retired"].raise_()
    qtbot.waitUntil(lambda: "fact0" in [m.id for m in win.retired.items], timeout=20000)
    win.undo_action.trigger()
    settle(qtbot, win)
    assert row(win, "fact0")["valid_until"] is None and row(win, new_id)["valid_until"] is not None


def test_conflict_when_the_row_changed_behind_the_window(qtbot, win, db):
    ctl = win.edits
    win.state.select_ids(["ep05"])
    with ms.open(db) as other:  # the agent, through its own connection
        other.update_fields("ep05", {"importance": 1.0}, action="agent")
    menu_action(win, ["ep05"], "confirm").trigger()
    dlg = ctl.dialog
    assert isinstance(dlg, ConflictDialog)
    cells = {dlg.table.topLevelItem(i).text(0): (dlg.table.topLevelItem(i).text(1), dlg.table.topLevelItem(i).text(2))
             for i in range(dlg.table.topLevelItemCount())}
    assert cells["importance"] == ("5", "1") and cells["protected"] == ("no", "no")  # both versions shown
    assert row(win, "ep05")["protected"] is False  # nothing written yet
    dlg.mine_button.click()
    settle(qtbot, win)
    r = row(win, "ep05")
    assert r["protected"] and r["importance"] == 1.0  # my edit, on the agent's version
    assert win.undo_stack.count() == 1


def test_undo_over_the_agents_change_shows_both_versions_and_keeps_the_step(qtbot, win, db):
    ctl = win.edits
    win.state.select_ids(["ep05"])
    ctl.perform(SetImportance("ep05", 9))
    settle(qtbot, win)
    with ms.open(db) as other:  # the agent changes the row after my edit
        other.update_fields("ep05", {"importance": 2.0}, action="agent")
    win.undo_action.trigger()
    dlg = ctl.dialog
    assert isinstance(dlg, ConflictDialog) and not dlg.mine_button.isVisible() and dlg.edit_button is None
    cells = {dlg.table.topLevelItem(i).text(0): (dlg.table.topLevelItem(i).text(1), dlg.table.topLevelItem(i).text(2))
             for i in range(dlg.table.topLevelItemCount())}
    assert cells["importance"] == ("9", "2")  # what the undo expected, what the store holds
    dlg.current_button.click()
    settle(qtbot, win)
    assert row(win, "ep05")["importance"] == 2.0  # not forced
    assert win.undo_action.isEnabled() and "importance" in win.undo_action.text().lower()  # still there


def test_conflicting_correction_keeps_the_users_text(qtbot, win, db):
    ctl = win.edits
    win.state.select_ids(["fact1"])
    menu_action(win, ["fact1"], "correct").trigger()
    ctl.dialog.new_text.setPlainText("My corrected text.")
    with ms.open(db) as other:
        other.update_fields("fact1", {"content": "The agent rewrote this."}, action="agent")
    ctl.dialog.accept()
    qtbot.waitUntil(lambda: isinstance(ctl.dialog, ConflictDialog), timeout=10000)  # once embedded
    dlg = ctl.dialog
    assert isinstance(dlg, ConflictDialog) and dlg.edit_button is not None
    dlg.edit_button.click()
    again = ctl.dialog
    assert isinstance(again, CorrectDialog)
    assert again.text() == "My corrected text." and again.old_text.toPlainText() == "The agent rewrote this."
    again.accept()
    settle(qtbot, win)
    assert row(win, win.state.selected_ids[0])["content"] == "My corrected text."


def test_busy_agent_edit_is_kept_then_retried(qtbot, win, db):
    ctl = win.edits
    win.edits.store.conn.set_busy_timeout(50)
    agent = connect(db)
    agent.execute("BEGIN IMMEDIATE")
    try:
        win.state.select_ids(["ep06"])
        menu_action(win, ["ep06"], "delete").trigger()
        dlg = ctl.dialog
        assert isinstance(dlg, BusyDialog) and "busy" in dlg.text().lower() and "kept" in dlg.text().lower()
        assert len(ctl.history.pending) == 1 and row(win, "ep06")["valid_until"] is None
        dlg.retry_button.click()  # still busy: asked again, still kept
        assert isinstance(ctl.dialog, BusyDialog) and ctl.dialog is not dlg and len(ctl.history.pending) == 1
        agent.execute("COMMIT")
        ctl.dialog.retry_button.click()
    finally:
        agent.close()
    settle(qtbot, win)
    assert row(win, "ep06")["valid_until"] is not None and len(ctl.history.pending) == 0
    qtbot.waitUntil(lambda: win.undo_stack.count() == 1, timeout=20000)
    win.undo_action.trigger()
    settle(qtbot, win)
    assert row(win, "ep06")["valid_until"] is None


def test_busy_edit_discarded_only_when_asked(qtbot, win, db):
    ctl = win.edits
    win.edits.store.conn.set_busy_timeout(50)
    agent = connect(db)
    agent.execute("BEGIN IMMEDIATE")
    menu_action(win, ["ep07"], "confirm").trigger()
    agent.execute("ROLLBACK")
    agent.close()
    assert len(ctl.history.pending) == 1
    ctl.dialog.discard_button.click()
    assert len(ctl.history.pending) == 0 and row(win, "ep07")["protected"] is False
    assert win.undo_stack.count() == 0


def test_external_insert_shows_up_with_selection_kept(qtbot, win, db):
    win.state.select_ids(["ep02", "fact3"])
    n = win.state.data.n
    emb = default_embedder()
    with ms.open(db) as other:
        other.insert_memories([{"id": "agent-new", "kind": "episode", "content": "The agent wrote this just now.",
                                "embedding": emb.embed_one("The agent wrote this just now."),
                                "embedding_model": emb.model}])
    qtbot.waitUntil(lambda: win.state.data.n == n + 1, timeout=20000)
    assert win.state.data.arrays.index_of("agent-new") is not None
    assert sorted(win.state.selected_ids) == ["ep02", "fact3"]


def test_read_only_store_disables_edits(qtbot, make_window, db):
    win = make_window(db, read_only=True, size=(1200, 800))
    win.state.select_ids(["ep01"])
    for key, act in win.edits.actions.items():
        assert not act.isEnabled(), key
        assert "read-only" in act.toolTip()
    ctx = menu_action(win, ["ep01"], "delete")
    assert not ctx.isEnabled() and "read-only" in ctx.toolTip()
    win.edits.run("delete", ["ep01"])  # e.g. the Delete key reaching it anyway
    assert "read-only" in win.statusBar().currentMessage()
    assert row(win, "ep01")["valid_until"] is None
    assert not win.retired.restore_button.isEnabled()


def test_undo_while_the_agent_is_busy_is_kept_and_the_stack_follows(qtbot, win, db):
    ctl = win.edits
    menu_action(win, ["ep08"], "confirm").trigger()
    settle(qtbot, win)
    ctl.store.conn.set_busy_timeout(50)
    agent = connect(db)
    agent.execute("BEGIN IMMEDIATE")
    try:
        win.undo_action.trigger()
        assert isinstance(ctl.dialog, BusyDialog) and row(win, "ep08")["protected"] is True
        # the undo is queued, not done: the Qt stack goes back to match History
        qtbot.waitUntil(lambda: win.undo_stack.index() == 1 and win.undo_action.isEnabled(), timeout=20000)
        agent.execute("ROLLBACK")
        ctl.dialog.retry_button.click()
    finally:
        agent.close()
    settle(qtbot, win)
    assert row(win, "ep08")["protected"] is False
    qtbot.waitUntil(lambda: win.undo_stack.index() == 0 and win.redo_action.isEnabled(), timeout=20000)


def test_quick_successive_edits_during_the_reload_are_all_written(qtbot, win):
    ids = ["ep00", "ep09", "ep10", "ep11"]
    for mid in ids:  # no waiting: each refresh is still loading when the next edit comes
        win.state.select_ids([mid])
        win.edits.actions["delete"].trigger()
    qtbot.waitUntil(lambda: all(row(win, i)["valid_until"] is not None for i in ids), timeout=20000)
    settle(qtbot, win)
    qtbot.waitUntil(lambda: win.undo_stack.count() == 4, timeout=20000)
    assert all(not win.state.data.arrays.live[win.state.data.arrays.index_of(i)] for i in ids)


def test_correct_when_the_model_is_unavailable_warns_and_marks_the_row(qtbot, tmp_path, make_window):
    from conftest import unit_vectors
    path = str(tmp_path / "remote.db")
    with ms.create(path) as s:
        s.insert_memories([{"id": f"r{i}", "kind": "fact", "content": f"remote fact {i}", "embedding": v,
                            "embedding_model": "remote-embedder-x"} for i, v in enumerate(unit_vectors(4, 8))])
    win = make_window(path, size=(1200, 800))
    ctl = win.edits
    win.state.select_ids(["r1"])
    menu_action(win, ["r1"], "correct").trigger()
    dlg = ctl.dialog
    assert dlg.warning.isVisible() and "needing an embedding" in dlg.warning.text()
    dlg.new_text.setPlainText("remote fact one, corrected")
    dlg.accept()
    assert "no embedding" in ctl.dialog.windowTitle().lower()  # told again once written
    settle(qtbot, win)
    new = row(win, win.state.selected_ids[0])
    assert new["content"] == "remote fact one, corrected" and new["embedding"] is None
    assert new["attributes"].get("needs_embedding") is True


def test_window_closes_while_a_job_reads_on_the_edit_connection(qtbot, win):
    """Closing waits for a background read on the edit store's connection (a live poll at the
    moment the window closes): before, the close raised apsw's ThreadingViolationError."""
    conn, started = win.edits.store.conn, threading.Event()

    def job(task):
        started.set()
        return conn.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) "
                            "SELECT count(*) FROM c").fetchone()
    win.workers.submit("watch", job, on_done=lambda _r: None, lane="live")
    assert started.wait(5)
    win.close()
    assert win.edits.store is None or win.edits.store is win.state.data.store


@pytest.mark.parametrize("column, value", [("confidence", float("inf")), ("importance", "very high"),
                                           ("decay_rate", "NaN")])
def test_confirm_on_a_value_the_agent_wrote_in_another_form(qtbot, make_window, db, column, value):
    """Confirm on a memory whose confidence the agent wrote as inf (or importance as 'very high'):
    no false "changed by someone else"; the undo puts the agent's value back as it stored it."""
    c = connect(db)
    c.execute(f"UPDATE memories SET {column} = ? WHERE id = 'ep05'", (value,))
    raw = c.execute(f"SELECT typeof({column}), quote({column}) FROM memories WHERE id = 'ep05'").fetchone()
    c.close()
    win = make_window(db, size=(1200, 800))
    win.state.select_ids(["ep05"])
    menu_action(win, ["ep05"], "confirm").trigger()
    settle(qtbot, win)
    assert win.edits.dialog is None or not isinstance(win.edits.dialog, ConflictDialog)
    assert row(win, "ep05")["protected"] and row(win, "ep05")["decay_rate"] == 0
    win.undo_action.trigger()
    settle(qtbot, win)
    assert not row(win, "ep05")["protected"]
    c = connect(db, readonly=True)
    assert c.execute(f"SELECT typeof({column}), quote({column}) FROM memories WHERE id = 'ep05'").fetchone() == raw
    c.close()


def test_ctrl_enter_in_the_correct_dialog_writes_the_correction(qtbot):
    """The corrected text is a multi-line box, where Enter starts a new line: Ctrl+Enter is the
    key that writes it (there was none: Tab to the button, or the mouse)."""
    from PySide6.QtCore import Qt
    row_ = {"id": "m1", "kind": "fact", "agent": "ann", "importance": 5.0, "content": "Ann lives in Oslo."}
    dlg = CorrectDialog(row_)
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.activateWindow()
    qtbot.waitUntil(dlg.new_text.hasFocus, timeout=5000)
    qtbot.keyClick(dlg.new_text, Qt.Key_Return, Qt.ControlModifier)  # the text is unchanged: nothing to write
    assert dlg.isVisible() and dlg.text() == "Ann lives in Oslo."
    dlg.new_text.setPlainText("Ann lives in Porto.")
    with qtbot.waitSignal(dlg.accepted, timeout=5000):
        qtbot.keyClick(dlg.new_text, Qt.Key_Return, Qt.ControlModifier)
    assert dlg.text() == "Ann lives in Porto."


def press(qtbot, win, key):
    """A key pressed in the memory table, as a user would (the window active, shortcuts on)."""
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5000)
    win.table.view.setFocus()
    qtbot.keyClick(win.table.view, key)


def test_soft_delete_of_protected_memories_asks_first_and_undo_takes_it_back(qtbot, win):
    ctl = win.edits
    menu_action(win, ["ep01", "ep02"], "confirm").trigger()
    settle(qtbot, win)
    win.state.select_ids(["ep01", "ep02", "ep03"])
    press(qtbot, win, Qt.Key_Delete)
    box = ctl.dialog
    assert isinstance(box, QMessageBox) and box.isVisible()
    assert "2 of the 3 memories chosen are protected" in box.text()
    assert box.defaultButton() is box.escapeButton() and box.standardButton(box.defaultButton()) == QMessageBox.Cancel
    box.defaultButton().click()  # Enter: the default is to keep them
    settle(qtbot, win)
    assert all(row(win, i)["valid_until"] is None for i in ("ep01", "ep02", "ep03"))
    assert "Not deleted: 2 protected memories" in win.statusBar().currentMessage()
    # the Soft-delete button (the toolbar's action) asks too; the user says yes
    win.edits.actions["delete"].trigger()
    anyway = next(b for b in ctl.dialog.buttons() if b.text() == "Soft-delete 3 memories")
    anyway.click()
    settle(qtbot, win)
    assert all(row(win, i)["valid_until"] is not None for i in ("ep01", "ep02", "ep03"))
    assert row(win, "ep01")["protected"] is True
    win.undo_action.trigger()
    settle(qtbot, win)
    assert all(row(win, i)["valid_until"] is None for i in ("ep01", "ep02", "ep03"))
    # the context menu's "with a reason" entry asks too; sparing the protected ones deletes only ep03
    menu_action(win, ["ep01", "ep03"], "delete_why").trigger()
    next(b for b in ctl.dialog.buttons() if b.text() == "Only the 1 unprotected memory").click()
    ctl.dialog.accept()  # the reason dialog
    settle(qtbot, win)
    assert row(win, "ep03")["valid_until"] is not None and row(win, "ep01")["valid_until"] is None


def test_an_unprotected_selection_is_deleted_without_a_question(qtbot, win):
    win.state.select_ids(["ep03"])
    press(qtbot, win, Qt.Key_Delete)
    settle(qtbot, win)
    assert row(win, "ep03")["valid_until"] is not None and not isinstance(win.edits.dialog, QMessageBox)


def test_edit_keys_in_a_read_only_store_say_why_and_what_to_do(qtbot, make_window, db):
    win = make_window(db, read_only=True, size=(1200, 800))
    win.state.select_ids(["ep01"])
    win.statusBar().clearMessage()
    press(qtbot, win, Qt.Key_Delete)
    msg = win.statusBar().currentMessage()
    assert msg.startswith("Soft-delete: not available — read-only: opened with --read-only"), msg
    assert "To edit, reopen it without --read-only (File ▸ Open…)." in msg
    win.statusBar().clearMessage()
    press(qtbot, win, Qt.Key_F2)
    assert win.statusBar().currentMessage().startswith("Correct: not available — read-only")
    assert row(win, "ep01")["valid_until"] is None


def test_an_edit_key_that_does_not_apply_says_why(qtbot, win):
    win.state.select_ids(["ep04"])  # retired
    win.statusBar().clearMessage()
    press(qtbot, win, Qt.Key_Delete)
    assert win.statusBar().currentMessage() == "Soft-delete: not now — the memory is already retired"
    win.state.select_ids(["ep03"])  # the key works again once the edit applies
    press(qtbot, win, Qt.Key_Delete)
    settle(qtbot, win)
    assert row(win, "ep03")["valid_until"] is not None
