"""Retrieval engine: each preset on hand-built memories, filters, as-of, explain, query by example."""
import math

import numpy as np
import pytest

from memviz.retrieval import PRESETS, Engine, Params, preset_params, rank_changes

MODEL = "test/4"
DAY = 86400.0
NOW = 1_700_000_000.0


def vec(*xs):
    v = np.zeros(4, np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


def add(store, mid, v, **kw):
    rec = dict(id=mid, kind="episode", content=kw.pop("content", f"memory {mid}"), embedding=v,
               embedding_model=MODEL, created_at=kw.pop("created_at", NOW - DAY), importance=5)
    rec.update(kw)
    store.insert_memories([rec])


@pytest.fixture
def three(store):
    """A: exact match, fresh, unimportant. B: 0.6 cosine, a day old, importance 10. C: orthogonal, fresh, 10."""
    add(store, "A", vec(1, 0), importance=1, event_time=NOW)
    add(store, "B", vec(0.6, 0.8), importance=10, event_time=NOW - DAY)
    add(store, "C", vec(0, 1), importance=10, event_time=NOW)
    return store


def test_presets_are_named_as_contracted():
    assert set(PRESETS) == {"dual-memory", "generative-agents", "ada", "hybrid", "working-memory"}
    p = preset_params("dual-memory")
    assert (p.alpha, p.beta, p.gamma) == (0.5, 0.3, 0.2)
    assert preset_params("generative-agents").k == 30
    assert preset_params("ada").decay == 0.995
    with pytest.raises(ValueError, match="unknown preset"):
        preset_params("nope")


def test_dual_memory_ranking_and_components(three):
    e = Engine(three, now=NOW)
    e.set_query(vector=vec(1, 0))
    r = e.score(preset_params("dual-memory", tau_hours=24.0))
    # A = .5*1 + .3*1 + .2*.1 = .82 ; B = .5*.6 + .3*e^-1 + .2*1 = .6104 ; C = 0 + .3 + .2 = .5
    assert r.ids == ["A", "B", "C"]
    np.testing.assert_allclose(r.score, [0.82, 0.3 + 0.3 * math.exp(-1) + 0.2, 0.5], atol=1e-6)
    np.testing.assert_allclose(r.raw["recency"], [1, math.exp(-1), 1], atol=1e-12)
    np.testing.assert_allclose(r.raw["importance"], [0.1, 1.0, 1.0])
    total = r.weighted["relevance"] + r.weighted["recency"] + r.weighted["importance"]
    np.testing.assert_allclose(total, r.score, rtol=1e-15)
    assert r.candidates == 3 and np.isfinite(r.all_scores).all()

    # only importance: B and C tie at 1.0 and keep store order; A last
    r2 = e.score(preset_params("dual-memory", alpha=0, beta=0, gamma=1))
    assert r2.ids == ["B", "C", "A"]
    assert rank_changes(r, r2) == {"A": (1, 3), "B": (2, 1), "C": (3, 2)}
    assert r2.explain(0)["importance_weighted"] == 1.0


def test_tau_controls_recency(three):
    e = Engine(three, now=NOW)
    e.set_query(vector=vec(1, 0))
    r = e.score(preset_params("dual-memory", tau_hours=12.0))
    assert r.raw["recency"][r.ids.index("B")] == pytest.approx(math.exp(-2))


def test_ada_cycles(store):
    # cycles 10, 8, 5: the current cycle is 10, recency = .995 ** (cycles ago)
    add(store, "new", vec(0, 1), importance=2, attributes={"cycle": 10})
    add(store, "mid", vec(1, 1), importance=9, attributes={"cycle": 8})
    add(store, "old", vec(1, 0), importance=5, attributes={"cycle": 5})
    e = Engine(store, now=NOW)
    e.set_query(vector=vec(1, 0))
    r = e.score(preset_params("ada"))
    expect = {"new": 1.0 + 0.2 + 0.0, "mid": 0.995 ** 2 + 0.9 + math.sqrt(0.5), "old": 0.995 ** 5 + 0.5 + 1.0}
    assert r.ids == sorted(expect, key=expect.get, reverse=True) == ["mid", "old", "new"]
    np.testing.assert_allclose(r.score, [expect[i] for i in r.ids], atol=1e-6)
    assert list(r.raw["cycles_ago"]) == [2, 5, 0]


def test_ada_derives_cycles_from_event_times(store):
    # no cycle numbers: each distinct event time is one cycle
    for i, t in enumerate([100, 200, 200, 300]):
        add(store, f"m{i}", vec(1, 0), event_time=t, created_at=t, importance=5)
    e = Engine(store, now=NOW)
    e.set_query(vector=vec(1, 0))
    r = e.score(preset_params("ada", alpha=0, gamma=0, k=4))
    assert r.ids == ["m3", "m1", "m2", "m0"]
    np.testing.assert_allclose(r.raw["recency"], [1, 0.995, 0.995, 0.995 ** 2])


def test_working_memory(store):
    # importance x 1/(1 + age hours): A 10/(1+9) = 1, B 2/(1+0) = 2, C 6/(1+2) = 2 (tie: store order)
    add(store, "A", vec(1), importance=10, created_at=NOW - 9 * 3600)
    add(store, "B", vec(1), importance=2, created_at=NOW)
    add(store, "C", vec(1), importance=6, created_at=NOW - 2 * 3600)
    e = Engine(store, now=NOW)  # no query needed
    r = e.score(preset_params("working-memory"))
    assert r.ids == ["B", "C", "A"]
    np.testing.assert_allclose(r.score, [2, 2, 1])
    np.testing.assert_allclose(r.weighted["importance×recency"], r.score)


def test_confidence_decay_spares_protected(store):
    ten_days = NOW - 10 * DAY
    add(store, "plain", vec(1), confidence=0.5, decay_rate=0.1, last_accessed=ten_days, importance=8, created_at=ten_days)
    add(store, "kept", vec(1), confidence=0.5, decay_rate=0.1, protected=True, last_accessed=ten_days, importance=8,
        created_at=ten_days)
    e = Engine(store, now=NOW)
    r = e.score(preset_params("working-memory", confidence_decay=True))
    f = dict(zip(r.ids, r.raw["decay_factor"]))
    assert f["plain"] == pytest.approx(0.5 * math.exp(-0.1 * 10 ** 0.8))
    assert f["kept"] == 0.5
    assert r.ids == ["kept", "plain"]


def test_hybrid_rrf(store):
    """Query by example X: its text drives FTS, its vector the vector ranks (X itself is left out).
    FTS: A (both words) 1, B 2; vector: B .9, C .5, A .2, D -.1.
    RRF: A 1/61+1/63, B 1/62+1/61, C 1/62, D 1/64 -> B, A, C, D."""
    add(store, "X", vec(1, 0), content="apple banana")
    add(store, "A", vec(0.2, math.sqrt(1 - 0.04)), content="apple banana pie")
    add(store, "B", vec(0.9, math.sqrt(1 - 0.81)), content="apple")
    add(store, "C", vec(0.5, math.sqrt(0.75)), content="cherry")
    add(store, "D", vec(-0.1, math.sqrt(0.99)), content="grape")
    assert [i for i, _ in store.fts_search("apple banana")][:3] == ["X", "A", "B"]  # the full-text premise
    e = Engine(store, now=NOW)
    e.set_query(like="X")
    r = e.score(preset_params("hybrid"))
    assert r.ids == ["B", "A", "C", "D"]
    np.testing.assert_allclose(r.score, [1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 62, 1 / 64])
    assert list(r.raw["fts_rank"]) == [2, 1, 0, 0] and list(r.raw["vector_rank"]) == [1, 3, 2, 4]
    np.testing.assert_allclose(r.raw["relevance"], [0.9, 0.2, 0.5, -0.1], atol=1e-6)
    assert e.score(preset_params("hybrid", rrf_k=0)).ids[0] == "B"


def test_hybrid_with_text_and_real_embedder(store):
    from memviz.embed import default_embedder
    emb = default_embedder()
    texts = ["Alice loves the Italian restaurant downtown", "Bob repaired his bicycle chain",
             "The restaurant was closed on Monday", "It rained all afternoon"]
    V = emb.embed(texts)
    store.insert_memories([dict(id=f"m{i}", kind="episode", content=t, embedding=V[i], embedding_model=emb.model,
                                created_at=NOW) for i, t in enumerate(texts)])
    e = Engine(store, now=NOW)
    query = "Italian restaurant"
    e.set_query(query)
    r = e.score(preset_params("hybrid", k=4))
    # expected from the two lists, worked out here independently of the engine
    fts = [i for i, _ in store.fts_search(query)]
    cos = V @ emb.embed_one(query)
    vec_order = [f"m{i}" for i in np.argsort(-cos, kind="stable")]
    rrf = {f"m{i}": (1 / (60 + fts.index(f"m{i}") + 1) if f"m{i}" in fts else 0) + 1 / (60 + vec_order.index(f"m{i}") + 1)
           for i in range(4)}
    assert r.ids == sorted(rrf, key=lambda m: -rrf[m])
    assert r.ids[0] == "m0"


def test_filters(store):
    add(store, "a1", vec(1), agent="alice", kind="fact", tags=["work"], event_time=NOW - 5 * DAY)
    add(store, "a2", vec(1), agent="alice", kind="episode", tags=["home", "dialogue"], event_time=NOW - 2 * DAY)
    add(store, "b1", vec(1), agent="bob", kind="fact", tags=["work", "home"], protected=True, event_time=NOW - DAY)
    add(store, "b2", vec(1), agent="bob", kind="episode", valid_until=NOW - DAY, event_time=NOW - 3 * DAY)
    e = Engine(store, now=NOW)
    e.set_query(vector=vec(1))
    base = preset_params("dual-memory", k=10)

    def ids(**kw):
        return sorted(e.score(base.replace(**kw)).ids)

    assert ids() == ["a1", "a2", "b1"]                      # retired b2 left out
    assert ids(include_retired=True) == ["a1", "a2", "b1", "b2"]
    assert ids(agents=("bob",)) == ["b1"]
    assert ids(agents=["alice"]) == ["a1", "a2"]             # lists are accepted
    assert ids(kinds=("fact",)) == ["a1", "b1"]
    assert ids(tags=("home",)) == ["a2", "b1"]
    assert ids(tags=("work", "nothing")) == ["a1", "b1"]     # any of the tags
    assert ids(protected_only=True) == ["b1"]
    assert ids(time_range=(NOW - 2.5 * DAY, None)) == ["a2", "b1"]
    assert ids(time_range=(NOW - 6 * DAY, NOW - 1.5 * DAY), include_retired=True) == ["a1", "a2", "b2"]
    assert ids(agents=("carol",)) == []
    empty = e.score(base.replace(agents=("carol",)))
    assert empty.candidates == 0 and np.isnan(empty.all_scores).all() and empty.notes


def test_as_of(store):
    T = NOW - 10 * DAY
    add(store, "early", vec(1), created_at=T - 2 * DAY, event_time=T - 2 * DAY)
    add(store, "later", vec(1), created_at=T + DAY, event_time=T + DAY)                 # did not exist at T
    add(store, "gone", vec(1), created_at=T - 3 * DAY, valid_until=T - DAY)              # retired before T
    add(store, "was_valid", vec(1), created_at=T - 3 * DAY, event_time=T - 3 * DAY, valid_until=T + DAY)
    e = Engine(store, now=NOW)
    e.set_query(vector=vec(1))
    r = e.score(preset_params("dual-memory", as_of=T, tau_hours=24))
    assert sorted(r.ids) == ["early", "was_valid"]
    rec = dict(zip(r.ids, r.raw["recency"]))
    assert rec["early"] == pytest.approx(math.exp(-2)) and rec["was_valid"] == pytest.approx(math.exp(-3))
    assert sorted(e.score(preset_params("dual-memory")).ids) == ["early", "later"]   # today
    assert sorted(e.score(preset_params("dual-memory", as_of=T, include_retired=True)).ids) == ["early", "gone", "was_valid"]


def test_like_queries_by_a_memorys_vector(three):
    e = Engine(three, now=NOW)
    e.set_query(like="B")
    r = e.score(preset_params("dual-memory", alpha=1, beta=0, gamma=0))
    assert r.ids == ["C", "A"]          # B itself is left out; cos(B, C) = .8 > cos(B, A) = .6
    np.testing.assert_allclose(r.raw["relevance"], [0.8, 0.6], atol=1e-6)
    with pytest.raises(ValueError, match="no memory with id 'zzz'"):
        e.set_query(like="zzz")


def test_query_needed_and_unavailable_model(three):
    e = Engine(three, now=NOW)
    with pytest.raises(ValueError, match="needs a query"):
        e.score(preset_params("dual-memory"))
    from memviz.embed import EmbedderUnavailable
    with pytest.raises(EmbedderUnavailable, match="--like"):
        e.set_query("anything")            # test/4 has no embedder here
    with pytest.raises(EmbedderUnavailable):
        e.score(preset_params("generative-agents"))
    r = e.score(preset_params("hybrid"))   # full-text still works
    assert r.ids == [] or "no query vector" in r.notes[0]
    with pytest.raises(ValueError, match="dimensions"):
        e.set_query(vector=[1.0, 0.0])


def test_params_validation():
    with pytest.raises(ValueError):
        Params(k=0)
    with pytest.raises(ValueError):
        Params(decay=1.5)
    assert hash(Params(agents=["x"])) == hash(Params(agents=("x",)))


def test_the_note_on_candidates_without_a_vector_counts_them_in_words(three):
    three.insert_memories([dict(id="D", kind="episode", content="memory D, not embedded", created_at=NOW - DAY)])
    e = Engine(three, now=NOW)
    e.set_query(vector=vec(1, 0))
    notes = e.score(preset_params("dual-memory")).notes
    assert f"1 candidate has no vector of {MODEL}; its relevance counts as 0" in notes, notes
    three.insert_memories([dict(id="E", kind="episode", content="memory E, not embedded", created_at=NOW - DAY)])
    e = Engine(three, now=NOW)
    e.set_query(vector=vec(1, 0))
    notes = e.score(preset_params("dual-memory")).notes
    assert f"2 candidates have no vector of {MODEL}; their relevance counts as 0" in notes, notes
