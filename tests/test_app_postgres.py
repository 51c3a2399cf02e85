"""The window with stores on a real PostgreSQL server: File ▸ Open database… (the password in
its own field, never saved; recent connections redacted), File ▸ Copy store to… as a job,
and the title and status bar naming the database and host."""
from __future__ import annotations

import pytest
from conftest import unit_vectors
from pg_server import PASSWORD, PASSWORD_ROLE, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.store.postgres.dsn import label


def _fill(store, n=4):
    v = unit_vectors(n, 8, 0)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": "a", "content": f"memory {i} about tea",
                            "embedding": v[i], "embedding_model": "m", "event_time": 1_700_000_000 + i}
                           for i in range(n)])


def test_open_database_with_a_typed_password_never_saved(pg, make_window, qtbot, tmp_path):  # noqa: F811
    if not pg.managed:
        pytest.skip("needs the server the tests start (its pg_hba asks this role for a password)")
    name = pg.fresh_db(owner=PASSWORD_ROLE)
    try:
        with pg.admin(name) as c:
            c.execute("CREATE EXTENSION vector")
        with ms.create(pg.dsn(name, PASSWORD_ROLE, PASSWORD)) as s:
            _fill(s)
        win = make_window()
        dlg = win.opener.choose_database()
        dlg.connection.dsn_edit.setText(pg.dsn(name, PASSWORD_ROLE))
        dlg.connection.password_edit.setText(PASSWORD)
        with qtbot.waitSignal(win.opened, timeout=20000):
            dlg._accept()
        assert win.windowTitle() == f"memviz — {name} @ local"
        assert win.status_store.text() == f"{name} @ local"
        assert len(win.state.data.arrays) == 4
        win.settings.sync()
        assert PASSWORD not in (tmp_path / "settings.ini").read_text()
        recent = win.recent.files()[0]
        assert recent.startswith("postgresql://memviz_pw@/") and PASSWORD not in recent
        again = win.opener.choose_database()
        assert again.connection.recent.item(0).text() == recent
        again.connection.recent.setCurrentRow(0)
        assert again.connection.dsn_edit.text() == recent
        again.reject()
        win.state.data.store.close()
        win.state.set_data(None)
    finally:
        pg.drop_db(name)


def test_open_database_refuses_what_is_not_a_connection_string(make_window):
    win = make_window()
    dlg = win.opener.choose_database()
    dlg.connection.dsn_edit.setText("/tmp/some.db")
    dlg._accept()
    assert dlg.isVisible() and "postgresql://" in dlg.error.text()
    dlg.reject()


def test_copy_store_to_a_database_and_to_a_file(pg, pg_db, make_window, qtbot, tmp_path):  # noqa: F811
    src = tmp_path / "src.db"
    with ms.create(str(src)) as s:
        _fill(s, 6)
    win = make_window(src)
    dlg = win.copier.choose_target()
    dlg.to_db.setChecked(True)
    dlg.connection.dsn_edit.setText(pg_db)
    with qtbot.waitSignal(win.copied, timeout=30000) as sig:
        dlg._accept()
    assert sig.args == [ms.redact(pg_db)]
    with ms.open(pg_db, read_only=True) as p:
        assert p.counts()["total"] == 6
    with qtbot.waitSignal(win.opened, timeout=20000):
        win.open_path(pg_db)
    assert "@ local" in win.windowTitle()
    assert win.statusBar().currentMessage().startswith(f"Opened {label(pg_db)} in ")  # not the socket's path
    back = tmp_path / "back.db"
    dlg = win.copier.choose_target()
    dlg.file_edit.setText(str(back))
    with qtbot.waitSignal(win.copied, timeout=30000):
        dlg._accept()
    with ms.open(str(back), read_only=True) as b:
        assert b.counts()["total"] == 6
    dlg = win.copier.choose_target()  # a target that is not empty: said, nothing lost
    dlg.file_edit.setText(str(back))
    with qtbot.waitSignal(win.workers.finished, timeout=30000):
        dlg._accept()
    qtbot.waitUntil(lambda: win.error_box is not None and "already exists" in win.error_box.text(), timeout=10000)
    win.state.data.store.close()
    win.state.set_data(None)


def test_opening_a_copy_cut_off_before_its_index_completes_it(pg, pg_db, make_window, qtbot, tmp_path):  # noqa: F811
    from pg_server import db_name

    from memviz.store.copy import copy_store
    from memviz.tasks import Cancelled, Task
    src = tmp_path / "src.db"
    with ms.create(str(src)) as s:
        _fill(s, 6)
    task = Task("copy", lambda f, t: task.cancel() if t.startswith("building the HNSW index") else None)
    with pytest.raises(Cancelled):
        copy_store(str(src), pg_db, task)

    def valid_indexes():
        with pg.admin(db_name(pg_db)) as c:
            return c.execute("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                             "JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'hnsw' AND i.indisvalid").fetchone()[0]
    assert valid_indexes() == 0
    win = make_window(pg_db)
    qtbot.waitUntil(lambda: valid_indexes() == 1, timeout=20000)
    qtbot.waitUntil(lambda: not win.workers.running("index"), timeout=20000)
    win.state.data.store.close()
    win.state.set_data(None)


def test_detail_names_entities_that_do_not_exist_on_a_database(pg_db, make_window, qtbot):  # noqa: F811
    """Selecting a memory whose entity_ids name a missing entity: the detail panel lists it as
    a broken link (it once ran SQLite's `?` placeholders on the PostgreSQL connection), and the
    store check names it too."""
    from PySide6.QtCore import QItemSelectionModel
    with ms.create(pg_db) as s:
        _fill(s)
        with s.transaction() as c:
            c.execute("INSERT INTO entities(id, canonical_name, type) VALUES ('e1', 'Tea', 'thing')")
        s.update_fields("m2", {"entity_ids": ["e1", "no-such-entity"]})
    win = make_window(pg_db)
    model = win.table.model
    pos = int((model.order == win.state.data.arrays.index_of("m2")).nonzero()[0][0])
    win.table.view.selectionModel().select(model.index(pos, 0),
                                           QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
    assert win.detail.shown_id == "m2"
    assert "entities that do not exist: no-such-entity" in win.detail.problems.text()
    win.detail.tabs.setCurrentIndex(1)
    items = [win.detail.related.topLevelItem(i) for i in range(win.detail.related.topLevelItemCount())]
    broken = [t for t in items if t.text(0).startswith("Entities not found")]
    assert broken and [broken[0].child(i).text(0) for i in range(broken[0].childCount())] == ["no-such-entity"]
    win.check_action.trigger()  # Tools ▸ Check store…: the checks that apply to a database, the rest said
    dlg = win.check_dialog
    qtbot.waitUntil(lambda: dlg.report is not None, timeout=30000)
    assert [f.code for f in dlg.report.findings] == ["dangling_entities"]
    assert "skipped: SQLite integrity, full-text and vector index checks" in dlg.text.toPlainText()
    assert not dlg.repair_button.isEnabled() and "nothing here can be rebuilt" in dlg.repair_button.toolTip()
    dlg.close()
    win.state.data.store.close()
    win.state.set_data(None)
