"""The connection to the server dropping mid-session (pg_terminate_backend from a second
connection, as a server restart does): reads reconnect, an edit is whole or absent and the
edit queue keeps an absent one for retry."""
from __future__ import annotations

import threading
import time

import pytest
from conftest import unit_vectors
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.edits import EditKept, History, SetImportance


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    v = unit_vectors(3, 8, 0)
    s.insert_memories([{"id": f"m{i}", "kind": "fact", "content": f"memory {i}", "embedding": v[i],
                        "embedding_model": "m", "event_time": 1_700_000_000 + i} for i in range(3)])
    yield s
    s.close()


def _drop(pg, dsn, store):  # noqa: F811
    """End the store's server session from another connection."""
    with pg.admin() as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (store.conn.info.backend_pid,)).fetchone()[0]


def _connections(pg, dsn, allowed: bool):  # noqa: F811
    with pg.admin() as admin:
        admin.execute(f'ALTER DATABASE "{db_name(dsn)}" ALLOW_CONNECTIONS {str(allowed).lower()}')


def test_a_read_after_the_connection_dropped_reconnects(store, pg, pg_db):  # noqa: F811
    old_pid = store.conn.info.backend_pid
    _drop(pg, pg_db, store)
    assert store.counts()["total"] == 3
    assert store.conn.info.backend_pid != old_pid
    _drop(pg, pg_db, store)
    assert len(store.arrays()) == 3 and store.vec_search(unit_vectors(3, 8, 0)[1], 1)[0][0] == "m1"


def test_a_server_that_stays_away_gives_a_clear_error(store, pg, pg_db):  # noqa: F811
    _connections(pg, pg_db, False)
    try:
        _drop(pg, pg_db, store)
        with pytest.raises(ms.ConnectionLostError, match="dropped and memviz could not connect again"):
            store.get("m0")
    finally:
        _connections(pg, pg_db, True)
    assert store.get("m0")["content"] == "memory 0"  # back once the server accepts connections


def test_an_edit_after_the_connection_dropped_is_written_once(store, pg, pg_db):  # noqa: F811
    history = History(store, pause=0.01)
    _drop(pg, pg_db, store)
    history.perform(SetImportance(["m0"], 9))
    assert store.get("m0")["importance"] == 9
    assert [h["action"] for h in store.history("m0")] == ["insert", "set_importance"]


def test_an_edit_cut_off_mid_write_is_absent_and_kept_for_retry(store, pg, pg_db):  # noqa: F811
    """The agent holds the row, our write waits for it, and the server ends our session."""
    history = History(store, attempts=1)
    errors = []
    with pg.admin(db_name(pg_db)) as agent:
        with agent.transaction():
            agent.execute("SELECT 1 FROM memories WHERE id = 'm0' FOR UPDATE")
            pid = store.conn.info.backend_pid

            def edit():
                try:
                    history.perform(SetImportance(["m0"], 9))
                except Exception as e:  # noqa: BLE001 - handed to the test thread
                    errors.append(e)
            writer = threading.Thread(target=edit)
            writer.start()
            deadline = time.monotonic() + 60
            while not agent.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)).fetchone():
                assert time.monotonic() < deadline, "our write never came to wait for the row"
                time.sleep(0.005)  # until our write waits for the row
            _connections(pg, pg_db, False)
            agent.execute("SELECT pg_terminate_backend(%s)", (pid,))
        writer.join()
    try:
        assert len(errors) == 1 and isinstance(errors[0], EditKept), errors
        assert "dropped during a write" in str(errors[0]) and "Nothing was written" in str(errors[0])
        assert [s.describe() for s in history.pending] == ["Set importance 9 m0"]
    finally:
        _connections(pg, pg_db, True)
    assert store.get("m0")["importance"] == 5  # absent, not half-applied
    history.retry()
    assert store.get("m0")["importance"] == 9 and not len(history.pending)
    assert [h["action"] for h in store.history("m0")] == ["insert", "set_importance"]
