"""memviz.session.live.query: after a live refresh, a query on screen re-scores only the rows
the refresh touched, and the ranking is the one a whole query gives at the same moment."""
from __future__ import annotations

import numpy as np
from conftest import unit_vectors

from memviz.retrieval import Engine
from memviz.retrieval.params import Params
from memviz.session.live import merged, refresh
from memviz.session.state import AppState, load_store_data
from memviz.store.clock import record_clock, simulated
from memviz.store.connection import connect

MODEL, DIM, T0 = "test-model", 8, 1_700_000_000


def _whole(state, params, qvec):
    eng = Engine(state.data.store, state.data.arrays)
    eng.set_query(vector=qvec)
    return eng, eng.score(params)


def test_a_merge_keeps_the_top_k_a_whole_query_gives_and_declines_what_it_cannot_tell(store, store_path):
    vecs = unit_vectors(300, DIM)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "content": f"memory {i}", "embedding": vecs[i],
                            "embedding_model": MODEL, "importance": 1 + i % 9, "event_time": T0 + 60 * i}
                           for i in range(300)], audit=False)
    record_clock(store, simulated(T0 + 86400))  # a fixed clock: new memories do not move it
    state = AppState()
    state.set_data(load_store_data(store))
    params, qvec = Params(k=10), unit_vectors(1, DIM, seed=5)[0]
    eng, result = _whole(state, params, qvec)
    ref, clock_at = eng.ref_time(params), eng.clock.at
    agent, far, near, merges = connect(str(store_path)), -qvec, qvec, 0
    for k in range(12):
        # mostly memories far from the query (cannot enter), a recall, and now and then one that enters
        vec = near if k % 4 == 3 else far
        agent.execute("INSERT INTO memories(id, kind, content, embedding, embedding_model, importance, event_time, "
                      "created_at) VALUES (?, 'fact', 'new', ?, ?, 5, ?, ?)",
                      (f"n{k}", vec.astype(np.float32).tobytes(), MODEL, T0 + 86000, T0 + 86000))
        agent.execute(f"UPDATE memories SET access_count = access_count + 1 WHERE id = 'm{200 + k}'")
        seen = []
        state.rows_changed.connect(seen.append)
        assert refresh(state) == "delta"
        d = seen[0]
        touched = np.concatenate([d.changed, d.added])
        got = merged(result, state.data.store, state.data.arrays, touched, qvec, ref, clock_at)
        _, whole = _whole(state, params, qvec)
        if got is None:  # declined: the caller ranks whole
            assert k % 4 == 3 or np.isin(result.rows, touched).any()
            result = whole
            continue
        merges += 1
        assert got.ids == whole.ids and np.array_equal(got.score, whole.score)
        assert got.candidates == whole.candidates
        # (a whole query keeps first-pass, float32, scores outside the rows it rescored exactly)
        np.testing.assert_allclose(got.all_scores[touched], whole.all_scores[touched], atol=1e-5)
        assert len(got.all_scores) == state.data.n
        result = got
    assert merges >= 6
    # another preset (min-max over every candidate) is never merged
    ga = Params(preset="generative-agents", k=10)
    _, r = _whole(state, ga, qvec)
    assert merged(r, state.data.store, state.data.arrays, np.array([0]), qvec, ref, clock_at) is None


def test_whether_a_ranking_is_merged_is_the_presets_declaration_not_its_name(store, store_path):
    """A preset scored like dual-memory under another name merges when it declares `row_local`,
    and is ranked whole when it does not: no preset name is branched on."""
    from dataclasses import replace

    from memviz.retrieval.presets import DUAL_MEMORY, register_preset, unregister_preset

    vecs = unit_vectors(100, DIM)
    store.insert_memories([{"id": f"m{i}", "kind": "fact", "content": f"memory {i}", "embedding": vecs[i],
                            "embedding_model": MODEL, "importance": 1 + i % 9, "event_time": T0 + 60 * i}
                           for i in range(100)], audit=False)
    record_clock(store, simulated(T0 + 86400))
    state = AppState()
    state.set_data(load_store_data(store))
    qvec = unit_vectors(1, DIM, seed=5)[0]
    local, shared = replace(DUAL_MEMORY, name="dm-local"), replace(DUAL_MEMORY, name="dm-shared", row_local=False)
    for p in (local, shared):
        register_preset(p)
    try:
        ranked = {}
        for p in (local, shared):
            eng, result = _whole(state, Params(preset=p.name, k=10), qvec)
            ranked[p.name] = (result, eng.ref_time(result.params), eng.clock.at)
        agent = connect(str(store_path))
        agent.execute("INSERT INTO memories(id, kind, content, embedding, embedding_model, importance, event_time, "
                      "created_at) VALUES ('far', 'fact', 'new', ?, ?, 1, ?, ?)",
                      ((-qvec).astype(np.float32).tobytes(), MODEL, T0, T0))  # far from the query: cannot enter
        seen = []
        state.rows_changed.connect(seen.append)
        assert refresh(state) == "delta"
        touched = seen[0].added
        got = {name: merged(r, state.data.store, state.data.arrays, touched, qvec, ref, at)
               for name, (r, ref, at) in ranked.items()}
        assert got["dm-local"] is not None and got["dm-local"].ids == ranked["dm-local"][0].ids
        assert got["dm-shared"] is None
    finally:
        for p in (local, shared):
            unregister_preset(p.name)
