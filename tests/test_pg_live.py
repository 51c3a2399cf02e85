"""Live changes on a PostgreSQL store against a real server: another process inserts, updates
and soft-deletes rows with its own SQL; the window's path (ChangeWatcher poll, read_changes,
apply_changes) reads each as a delta from the change log, never a rescan; commits
out of rowid order are not missed; a store from before the log upgrades on a writable open."""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import unit_vectors
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.session.live import FreshRows, apply_changes, read_changes
from memviz.session.state import AppState, StoreData, load_store_data
from memviz.store.changes import ChangeWatcher, changes_since, token_now

DIM = 8

# the agent: plain SQL on its own connection, in another process (it knows nothing of memviz)
AGENT = r"""
import sys, psycopg
dsn, sql = sys.argv[1], sys.argv[2]
with psycopg.connect(dsn, autocommit=True) as c:
    for stmt in sql.split(";"):
        if stmt.strip():
            c.execute(stmt)
"""


def agent(dsn: str, sql: str) -> None:
    subprocess.run([sys.executable, "-c", AGENT, dsn, sql], check=True, timeout=60)


def _records(n, seed=0):
    v = unit_vectors(n, DIM, seed)
    return [{"id": f"m{i}", "kind": "fact", "agent": "a", "content": f"memory {i}", "embedding": v[i],
             "embedding_model": "m", "event_time": 1_700_000_000 + i} for i in range(n)]


def _vec(seed: int) -> str:
    return str(unit_vectors(1, DIM, seed)[0].tolist())


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    s.insert_memories(_records(200))
    yield s
    s.close()


def _state(store) -> AppState:
    state = AppState()
    state.set_data(load_store_data(store))
    return state


def _refresh(state) -> tuple[str, object]:
    out = read_changes(state.data, state.loaded_arrays)
    return apply_changes(state, out), out


def _notified(watcher, seconds: float = 20.0):
    """Poll as the window's timer does until the commit's notification arrives."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        change = watcher.poll()
        if change is not None:
            return change
        time.sleep(0.02)
    return None


def test_insert_update_and_soft_delete_from_another_process_arrive_as_deltas(store, pg_db):  # noqa: F811
    state = _state(store)
    watcher = ChangeWatcher(store)
    _notified(watcher, 0.2)  # the look right after subscribing counts as one
    assert watcher.poll() is None
    deltas = []
    state.rows_changed.connect(deltas.append)

    agent(pg_db, "INSERT INTO memories(id, kind, content, event_time, created_at, embedding_model, embedding_8) "
                 f"VALUES ('new1', 'fact', 'written by the agent', 1, 1, 'm', '{_vec(9)}')")
    assert _notified(watcher) is not None
    how, out = _refresh(state)
    assert how == "delta" and isinstance(out, FreshRows) and out.changes.full is None
    assert len(out.changes.added) == 1 and out.changes.changed == []
    a = state.data.arrays
    assert len(a) == 201 and a.ids[-1] == "new1" and a.has_embedding[-1]
    assert np.allclose(a.embedding[-1], unit_vectors(1, DIM, 9)[0], atol=1e-6)
    assert list(deltas[-1].added) == [200]

    agent(pg_db, "UPDATE memories SET importance = 9 WHERE id = 'm3'")
    assert _notified(watcher) is not None
    how, out = _refresh(state)
    assert how == "delta" and out.changes.added == [] and len(out.changes.changed) == 1
    assert state.data.arrays.importance[3] == 9 and "importance" in deltas[-1].fields

    agent(pg_db, "UPDATE memories SET valid_until = 1700000500 WHERE id = 'm7'")
    assert _notified(watcher) is not None
    how, out = _refresh(state)
    assert how == "delta" and len(out.changes.changed) == 1
    assert list(deltas[-1].retired) == [7] and not state.data.arrays.live[7]

    assert read_changes(state.data, state.loaded_arrays) is None  # nothing since: nothing read
    assert watcher.poll() is None


def test_commits_out_of_rowid_order_are_not_missed(store, pg, pg_db):  # noqa: F811
    """Two agents: the first takes a rowid, the second a higher one and commits first."""
    state = _state(store)
    with pg.admin(db_name(pg_db)) as slow, pg.admin(db_name(pg_db)) as fast:
        with slow.transaction():
            slow.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('slow', 'fact', 's', 1, 1)")
            fast.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('fast', 'fact', 'f', 1, 1)")
            how, out = _refresh(state)
            assert how == "delta" and state.data.arrays.ids[-1] == "fast"
        token = state.data.token
        changes = changes_since(store, token)
        assert changes.full is None and len(changes.changed) == 1  # 'slow', below the last rowid seen
    how, out = _refresh(state)
    assert how == "misfit"  # the arrays keep store order: the window reads the store again
    state.set_data(load_store_data(store))
    assert {"slow", "fast"} <= set(state.data.arrays.ids)


def test_an_agent_role_without_rights_on_the_log_still_writes_and_is_seen(store, pg, pg_db):  # noqa: F811
    db = db_name(pg_db)
    with pg.admin(db) as c:
        c.execute("DROP ROLE IF EXISTS memviz_agent")
        c.execute("CREATE ROLE memviz_agent LOGIN")
        c.execute("GRANT SELECT, INSERT, UPDATE ON memories TO memviz_agent")
    try:
        state = _state(store)
        agent(pg.dsn(db, "memviz_agent"),
              "INSERT INTO memories(rowid, id, kind, content, event_time, created_at) VALUES (1000, 'a1', 'fact', 'x', 1, 1);"
              "UPDATE memories SET importance = 2 WHERE id = 'm0'")
        how, out = _refresh(state)
        assert how == "delta" and out.changes.added == [1000] and len(out.changes.changed) == 1
    finally:
        with pg.admin(db) as c:
            c.execute("DROP OWNED BY memviz_agent")
            c.execute("DROP ROLE memviz_agent")


@pytest.mark.parametrize("sql, why", [
    ("DELETE FROM memories WHERE id = 'm5'", "physically deleted"),
    ("TRUNCATE memories", "emptied"),
])
def test_what_a_delta_cannot_describe_is_read_whole(store, pg_db, sql, why):  # noqa: F811
    state = _state(store)
    agent(pg_db, sql)
    out = read_changes(state.data, state.loaded_arrays)
    assert isinstance(out, StoreData) and why in out.full_reason


def _as_before_the_log(pg, dsn):  # noqa: F811
    with pg.admin(db_name(dsn)) as c:
        for t in ("ai", "au", "ad", "at"):
            c.execute(f"DROP TRIGGER memviz_changes_{t} ON memories")
        c.execute("DROP FUNCTION memviz_log_changes()")
        c.execute("DROP TABLE memviz_changes")
        c.execute("DELETE FROM memviz_migrations WHERE version >= 2")  # and those after it


def test_a_store_from_before_the_log_upgrades_on_a_writable_open(pg, pg_db):  # noqa: F811
    ms.create(pg_db).close()
    with ms.open(pg_db) as s:
        s.insert_memories(_records(20))
    _as_before_the_log(pg, pg_db)

    with ms.open(pg_db, read_only=True) as ro:  # read-only: opens as it is, changes read whole
        assert not ro.has_change_log()
        state = _state(ro)
        before = ro.data_version()
        agent(pg_db, "UPDATE memories SET importance = 3 WHERE id = 'm1'")
        assert ro.data_version() != before
        out = read_changes(state.data, state.loaded_arrays)
        assert isinstance(out, StoreData) and "no change log" in out.full_reason
        assert out.arrays.importance[1] == 3

    with ms.open(pg_db) as s, pg.admin(db_name(pg_db)) as c:  # writable: migrated
        assert [v for (v,) in c.execute("SELECT version FROM memviz_migrations ORDER BY 1")] == [1, 2, 3, 4]
        assert s.has_change_log()
        token = token_now(s)
        agent(pg_db, "UPDATE memories SET importance = 4 WHERE id = 'm2'")
        changes = changes_since(s, token)
        assert changes.full is None and len(changes.changed) == 1


def test_a_role_that_may_write_rows_but_not_add_the_log_opens_writable_without_it(pg, pg_db):  # noqa: F811
    ms.create(pg_db).close()
    with ms.open(pg_db) as s:
        s.insert_memories(_records(5))
    _as_before_the_log(pg, pg_db)
    db = db_name(pg_db)
    with pg.admin(db) as c:
        c.execute("DROP ROLE IF EXISTS memviz_editor")
        c.execute("CREATE ROLE memviz_editor LOGIN")
        c.execute("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO memviz_editor")
        c.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    try:
        with ms.open(pg.dsn(db, "memviz_editor")) as s:
            assert not s.read_only and not s.has_change_log()
            s.update_fields("m0", {"importance": 7})
            state = _state(s)
            agent(pg_db, "UPDATE memories SET importance = 8 WHERE id = 'm1'")
            out = read_changes(state.data, state.loaded_arrays)
            assert isinstance(out, StoreData) and out.arrays.importance[1] == 8
    finally:
        with pg.admin(db) as c:
            c.execute("DROP OWNED BY memviz_editor")
            c.execute("DROP ROLE memviz_editor")
