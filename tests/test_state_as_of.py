"""The window's "as of" moment in the Qt-free AppState, and the "viewing the past" edit rule."""
import time

import numpy as np
import pytest

import memviz.store as ms
from memviz.edits import Correct, History, SetImportance, applicable
from memviz.session.state import AppState, load_store_data

START = 1_700_000_000.0
T = START + 500  # after m1, m2; before m3 and every edit


def lived_store(path, monkeypatch):
    """m1, m2 at START; m3 at START+1000; m2's importance 5 -> 9 and m1 corrected after that."""
    store = ms.create(str(path))
    now = [START]
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: now[0])
        base = {"kind": "fact", "agent": "helper", "importance": 5}
        store.insert_memories([{**base, "id": "m1", "content": "Alice drinks green tea"},
                               {**base, "id": "m2", "content": "Bob owns a dog called Rex"}])
        now[0] = START + 1000
        store.insert_memories([{**base, "id": "m3", "content": "Carol moved to Berlin"}])
        hist = History(store)
        now[0] = START + 2000
        hist.perform(SetImportance(["m2"], 9))
        now[0] = START + 3000
        hist.perform(Correct("m1", "Alice drinks black coffee now"))
    return store


@pytest.fixture
def state(tmp_path, monkeypatch):
    store = lived_store(tmp_path / "lived.db", monkeypatch)
    st = AppState()
    st.set_data(load_store_data(store))
    yield st
    store.close()


def test_as_of_shows_the_past_and_back(state):
    a_now = state.data.arrays
    seen = []
    state.as_of_changed.connect(seen.append)
    state.set_as_of(T)
    a = state.data.arrays
    assert a is not a_now and a is state.as_of_view.arrays
    shown = {a.ids[i] for i in np.flatnonzero(state.visible_mask())}
    assert shown == {"m1", "m2"}  # m3 and the corrected version came later
    assert np.isnan(a.valid_until[a.index_of("m1")])  # retired later by the correction: current then
    assert a.importance[a.index_of("m2")] == 5
    assert state.params.as_of == T
    assert state.loaded_arrays is a_now
    state.set_as_of(None)
    assert state.data.arrays is a_now and state.as_of_view is None
    assert state.visible_mask().all()
    assert seen == [T, None]


def test_a_reload_keeps_the_moment_and_another_store_drops_it(state, tmp_path):
    state.set_as_of(T)
    state.set_data(load_store_data(state.data.store))  # a reload of the same store
    assert state.as_of == T and state.as_of_view is not None
    assert state.data.arrays is state.as_of_view.arrays
    other = ms.create(str(tmp_path / "other.db"))
    try:
        seen = []
        state.as_of_changed.connect(seen.append)
        state.set_data(load_store_data(other))
        assert state.as_of is None and state.as_of_view is None and seen == [None]
    finally:
        other.close()


def test_params_carry_the_moment_both_ways(state):
    state.set_params(state.params.replace(as_of=T))
    assert state.as_of == T and state.as_of_view is not None
    state.set_params(state.params.replace(k=3, as_of=None))
    assert state.as_of is None and state.params.k == 3


def test_edits_refused_while_viewing_the_past(state):
    a, store = state.data.arrays, state.data.store
    assert applicable.refusal("importance", a, ["m2"], store) is None
    why = applicable.refusal("importance", a, ["m2"], store, as_of=T)
    assert why is not None and why.startswith("viewing the past")
    assert applicable.store_refusal(store, T) == why
    assert applicable.store_refusal(store, None) is None


def test_engine_with_arrays_ranks_the_view_like_a_fresh_engine(state):
    """The query panel's step: the same query on the as-of arrays, nothing searched again."""
    from memviz.embed import EmbedderUnavailable
    from memviz.retrieval import Engine, preset_params

    params = preset_params("hybrid", as_of=T)
    eng = Engine(state.data.store, state.loaded_arrays)
    with pytest.raises(EmbedderUnavailable):  # no vectors in this store: the full-text part ranks
        eng.set_query("Alice tea coffee")
    eng.score(params)
    state.set_as_of(T)
    moved = eng.with_arrays(state.data.arrays)
    fresh = Engine(state.data.store, state.data.arrays)
    with pytest.raises(EmbedderUnavailable):
        fresh.set_query("Alice tea coffee")
    got, want = moved.score(params), fresh.score(params)
    assert moved.arrays is state.data.arrays and got.ids == want.ids
    assert got.ids[0] == "m1" and set(got.ids) <= {"m1", "m2"}  # m3 and the corrected text came later
