"""memviz.store.changes and memviz.session.live: a live refresh reads what changed, not the store."""
from __future__ import annotations

import numpy as np
from conftest import assert_same_arrays, unit_vectors

import memviz.store as ms
from memviz.session.live import FreshRows, Poll, apply_changes, read_changes, refresh
from memviz.session.state import AppState, StoreData, load_store_data
from memviz.store.changes import changes_since, token_now
from memviz.store.connection import connect

MODEL = "test-model"


def _fill(store, n=60, dim=8):
    vecs = unit_vectors(n, dim)
    store.insert_memories([{"id": f"m{i}", "kind": "fact" if i % 3 else "episode", "content": f"memory {i}",
                            "embedding": vecs[i], "embedding_model": MODEL, "event_time": 1000 + i} for i in range(n)],
                          audit=False)


def _agent(path):
    """A second connection writing plain SQL, as the agent does (no memviz audit)."""
    return connect(str(path))


def test_inserts_updates_and_soft_deletes_are_a_delta(store, store_path):
    _fill(store)
    state = AppState()
    state.set_data(load_store_data(store))
    seen = []
    state.rows_changed.connect(seen.append)
    agent = _agent(store_path)
    vec = unit_vectors(1, 8, seed=9)[0]
    agent.execute("INSERT INTO memories(id, kind, content, embedding, embedding_model, event_time, created_at) "
                  "VALUES ('new1', 'thought', 'a new kind of memory', ?, ?, 5000, 5000)", (vec.tobytes(), MODEL))
    agent.execute("UPDATE memories SET access_count = access_count + 3, last_accessed = 4000 WHERE id = 'm5'")
    agent.execute("UPDATE memories SET valid_until = 4500 WHERE id = 'm7'")

    out = read_changes(state.data, state.loaded_arrays)
    assert isinstance(out, FreshRows)
    assert apply_changes(state, out) == "delta"
    (delta,) = seen
    a = state.data.arrays
    assert a.ids[delta.added].tolist() == ["new1"]
    assert sorted(a.ids[delta.changed].tolist()) == ["m5", "m7"]
    assert a.ids[delta.retired].tolist() == ["m7"]
    assert delta.fields == {"access_count", "last_accessed", "valid_until"}  # what panels decide redraws on
    assert state.data.kinds[state.data.kind_codes[a.index_of("new1")]] == "thought"
    assert state.data.counts["total"] == 61 and state.data.counts["retired"] == 1
    # the patched arrays hold exactly what a fresh read of the store holds
    assert_same_arrays(a, load_store_data(store).arrays)
    assert read_changes(state.data, state.loaded_arrays) is None  # nothing new since


def test_vacuum_and_physical_delete_need_a_full_read(store, store_path):
    _fill(store)
    data = load_store_data(store)
    agent = _agent(store_path)
    agent.execute("VACUUM")
    assert "VACUUM" in changes_since(store, data.token).full
    token = token_now(store)
    agent.execute("DELETE FROM memories WHERE id = 'm3'")
    assert "deleted" in changes_since(store, token).full
    out = read_changes(data, data.arrays)
    assert isinstance(out, StoreData) and out.full_reason and out.n == 59


def test_a_large_share_is_read_whole(store, store_path):
    _fill(store)
    data = load_store_data(store)
    _agent(store_path).execute("UPDATE memories SET importance = 7")
    assert "60 of 60" in changes_since(store, data.token).full


def test_a_store_from_before_the_change_log_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    s = ms.create(str(path))
    _fill(s, 5)
    s.conn.execute("DROP TRIGGER memviz_changes_au; DROP TRIGGER memviz_changes_ad; DROP TABLE memviz_changes; "
                   "DELETE FROM memviz_migrations WHERE version >= 2")  # and those after it
    s.close()
    ro = ms.open(str(path), read_only=True)
    assert "no change log" in changes_since(ro, token_now(ro)).full
    ro.close()
    rw = ms.open(str(path))
    assert not rw.read_only
    before = token_now(rw)
    _agent(path).execute("UPDATE memories SET importance = 2 WHERE id = 'm1'")
    got = changes_since(rw, before)
    assert got.full is None and len(got.changed) == 1
    rw.close()


def test_embedding_buffer_grows_without_copying_every_time(store, store_path):
    _fill(store)
    state = AppState()
    state.set_data(load_store_data(store))
    agent = _agent(store_path)
    bases = []
    for k in range(3):
        vec = unit_vectors(1, 8, seed=20 + k)[0]
        agent.execute("INSERT INTO memories(id, kind, content, embedding, embedding_model, event_time, created_at) "
                      "VALUES (?, 'episode', 'x', ?, ?, 1, 1)", (f"n{k}", vec.tobytes(), MODEL))
        assert refresh(state) == "delta"
        emb = state.data.arrays.embedding
        assert np.allclose(emb[-1], vec)
        bases.append(emb.base if emb.base is not None else emb)
    assert bases[1] is bases[2]  # the second and third inserts went into the spare rows


def test_links_of_new_rows_extend_the_provenance_held(store, store_path):
    _fill(store, 10)
    state = AppState()
    state.set_data(load_store_data(store))
    assert state.data.provenance.sources == []  # read once, before the agent writes
    _agent(store_path).execute(
        "INSERT INTO memories(id, kind, content, event_time, created_at, source_ids) "
        "VALUES ('r1', 'reflection', 'both', 1, 1, '[\"m1\", \"m2\", \"gone\"]')")
    seen = []
    state.rows_changed.connect(seen.append)
    assert refresh(state) == "delta"
    assert seen[0].links
    prov = state.data.provenance
    assert sorted(prov.sources) == [("r1", "m1"), ("r1", "m2")] and prov.dangling == [("r1", "gone", "source")]
    assert prov == store.provenance()  # what a whole read gives


def test_counts_after_deltas_are_a_fresh_count(store, store_path):
    """The counts are shifted by each delta (no pass over every row); they equal a fresh count."""
    from memviz.session.state import counts_of
    _fill(store)
    state = AppState()
    state.set_data(load_store_data(store))
    agent = _agent(store_path)
    steps = [
        "INSERT INTO memories(id, agent, kind, content, event_time, created_at) VALUES ('n1', 'bob', 'plan', 'x', 1, 1)",
        "UPDATE memories SET valid_until = 4500 WHERE id IN ('m1', 'm2', 'n1')",   # retired, a new one too
        "UPDATE memories SET valid_until = NULL WHERE id = 'm1'",                  # restored
        "UPDATE memories SET kind = 'plan', agent = 'bob' WHERE id IN ('m3', 'm2')",  # moved between kinds
        "UPDATE memories SET kind = 'fact' WHERE kind = 'episode' AND id != 'm0'",  # a kind almost emptied
        "UPDATE memories SET kind = 'fact' WHERE id = 'm0'",                         # and emptied
    ]
    for sql in steps:
        agent.execute(sql)
        assert refresh(state, max_share=1.0) == "delta"
        fresh = load_store_data(store)
        assert state.data.counts == fresh.counts, sql
        a = state.data.arrays
        assert state.data.counts == counts_of(a), sql


def test_the_live_poll_asks_on_a_connection_of_its_own(store, store_path):
    """Poll's first look always counts (what was committed between the window's read and it is
    read then); after that it answers for commits of any other connection, the window's own
    included, and closing it leaves the window's connection open."""
    _fill(store, 5)
    poll = Poll(store)
    assert poll.changed() and not poll.changed()
    store.update_fields("m1", {"importance": 3})  # on the window's connection: another one than the poll's
    assert poll.changed() and not poll.changed()
    _agent(store_path).execute("UPDATE memories SET access_count = 2 WHERE id = 'm2'")
    assert poll.changed()
    poll.close()
    assert store.get("m2")["access_count"] == 2
