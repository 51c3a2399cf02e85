"""memviz.session.buffers: room for new rows is made ahead of need, so no refresh waits for a copy
of the matrix (at 100k x 1536 such a copy held a refresh for 0.4-1 s, bench/postgres.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from conftest import assert_same_arrays, unit_vectors

from memviz.session.buffers import AHEAD, ColumnGrowth, grow, spare
from memviz.session.live import apply_changes, read_changes
from memviz.session.state import AppState, load_store_data
from memviz.store.arrays import spare_rows
from memviz.store.connection import connect

MODEL = "test-model"


def _fill(store, n=60, dim=8):
    vecs = unit_vectors(n, dim)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "content": f"memory {i}", "embedding": vecs[i],
                            "embedding_model": MODEL, "event_time": 1000 + i} for i in range(n)], audit=False)


def test_buffers_grow_ahead_and_no_refresh_copies_the_matrix(store, store_path):
    """A whole read leaves the matrix spare rows; when they run low a background copy half as
    large again is made and a later install takes it, while spare rows are still left: the
    refresh that fills the old buffer's spare rows finds the larger one made. Rows patched
    meanwhile are kept: the arrays stay what a fresh read gives."""
    _fill(store)
    state = AppState()
    state.set_data(load_store_data(store))
    assert spare(state.data.arrays.embedding) >= 256  # the whole read put the matrix in a buffer with room
    agent = connect(str(store_path))
    switches, copied = [], []
    for k in range(700):  # 60 rows, 256 spare rows, then 380: the old buffers run out twice
        vec = unit_vectors(1, 8, seed=100 + k)[0]
        agent.execute("INSERT INTO memories(id, kind, content, embedding, embedding_model, event_time, created_at) "
                      "VALUES (?, 'episode', 'x', ?, ?, 1, 1)", (f"g{k}", vec.tobytes(), MODEL))
        if k % 7 == 0:  # a patch of an old row, perhaps while a copy reads it
            agent.execute("UPDATE memories SET importance = ?, content = ? WHERE id = ?",
                          (1 + k % 9, f"patched {k}", f"m{k % 60}"))
        before = state.data.arrays.embedding
        fresh = read_changes(state.data, state.loaded_arrays)
        copied.append(sorted(fresh.room))
        assert apply_changes(state, fresh) == "delta"
        after = state.data.arrays.embedding
        if not np.shares_memory(before, after):
            switches.append((len(before), spare(before), spare(after)))
    assert all("embedding" not in c for c in copied)  # never copied on a refresh's path
    assert copied[0] and not any(copied[1:])            # only the small columns, once, at the first refresh
    assert 1 <= len(switches) <= 3
    for n, spare_before, spare_after in switches:
        # taken ahead of need, not before it ran low (read_changes keeps 4 rows per added row in hand)
        assert 0 < spare_before and spare_before - 4 < AHEAD * spare_rows(n)
        assert spare_after > 2 * AHEAD * spare_rows(n)        # half as large again, not low at once
    assert_same_arrays(state.data.arrays, load_store_data(store).arrays)


def test_a_copy_made_ahead_takes_the_rows_appended_and_patched_since(store):
    """ColumnGrowth copies the columns as they were; finish adds what changed after the copy read them."""
    _fill(store)
    a = load_store_data(store).arrays
    growth = ColumnGrowth(a, {"embedding", "importance"})
    growth.job.result()
    a.importance[5] = 99.0        # patched after the copy was made
    a.embedding[7] = 0.5
    growth.patched.append(np.array([5, 7]))
    a = replace(a, embedding=grow(a.embedding, np.full((1, 8), 0.25, np.float32)),
                importance=grow(a.importance, np.array([4.0])))  # a row appended after the copy was made
    got = growth.finish(a, k=3)
    assert got["importance"][5] == 99.0 and (got["embedding"][7] == 0.5).all()
    assert got["importance"][60] == 4.0 and (got["embedding"][60] == 0.25).all()
    for name in ("embedding", "importance"):
        assert np.array_equal(got[name], getattr(a, name)) and spare(got[name]) == 256 - 1  # one row taken since
        assert not np.shares_memory(got[name], getattr(a, name))
