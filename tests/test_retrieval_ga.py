"""The generative-agents preset reproduces retrieve.py new_retrieve, and the vectorised engine
agrees with the plain-loop reference (reference.py) on random stores."""
import numpy as np
import pytest
from conftest import unit_vectors

from memviz.retrieval import Engine, preset_params, reference

MODEL = "test/4"
T0 = 1_700_000_000


def vec(*xs):
    v = np.zeros(4, np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


def node(store, mid, ga_type, count, *, v=None, poignancy=5, last_accessed=T0, key="x", agent="isabella", **kw):
    """A memory the way the importer writes a GA node (importers/generative_agents.py)."""
    attrs = {"ga_type": ga_type, "node_id": f"node_{count}", "node_count": count, "type_count": count,
             "embedding_key": key, "depth": 0 if ga_type == "event" else 1, "poignancy": poignancy}
    kind = "reflection" if ga_type == "thought" else "episode"
    tags = ["dialogue"] if ga_type == "chat" else []
    store.insert_memories([dict(id=mid, agent=agent, kind=kind, content=f"{ga_type} {mid}", importance=poignancy,
                                embedding=vec(1, 0) if v is None else v, embedding_model=MODEL,
                                created_at=T0 - 1000 + count, last_accessed=last_accessed, tags=tags,
                                attributes=attrs, **kw)])


def ga(store, **kw):
    e = Engine(store, now=T0)
    e.set_query(vector=vec(1, 0))
    return e.score(preset_params("generative-agents", **kw))


def test_recency_is_decay_to_the_rank_not_a_time(store):
    # last accessed: a long ago, b a second after a, c a thousand days later.
    node(store, "a", "event", 1, last_accessed=T0 - 2000 * 86400)
    node(store, "b", "event", 2, last_accessed=T0 - 2000 * 86400 + 1)
    node(store, "c", "event", 3, last_accessed=T0)
    r = ga(store, alpha=0, gamma=0)
    # ascending last_accessed: a, b, c get .995^1, .995^2, .995^3; min-max: 1, (d²-d³)/(d-d³), 0.
    # (So in the GA code the least recently accessed memory gets the highest recency.)
    d = 0.995
    assert r.ids == ["a", "b", "c"]
    np.testing.assert_allclose(r.raw["recency"], [1.0, (d ** 2 - d ** 3) / (d - d ** 3), 0.0], rtol=1e-15)
    assert list(r.raw["recency_rank"]) == [1, 2, 3]
    assert list(r.raw["recency_decayed"]) == [d, d ** 2, d ** 3]
    np.testing.assert_allclose(r.score, 0.5 * r.raw["recency"])


def test_min_max_with_all_equal_values_gives_half(store):
    for i in range(1, 4):
        node(store, f"n{i}", "event", i, poignancy=7, last_accessed=T0 - i)   # same poignancy, same vector
    r = ga(store)
    np.testing.assert_array_equal(r.raw["importance"], [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(r.raw["relevance"], [0.5, 0.5, 0.5])
    # recency: last accessed n3 < n2 < n1 -> ranks 1, 2, 3 -> n3 first
    assert r.ids == ["n3", "n2", "n1"]
    assert r.score[0] == 0.5 * 1.0 + 3 * 0.5 + 2 * 0.5
    one = Engine(store, now=T0)
    one.set_query(vector=vec(1, 0))
    solo = one.score(preset_params("generative-agents", agents=("isabella",), time_range=(None, T0 - 1000 + 1)))
    assert solo.ids == ["n1"] and solo.raw["recency"][0] == 0.5   # a single candidate: all equal


def test_candidates_idle_chats_and_thoughts(store):
    node(store, "ev", "event", 1)
    node(store, "idle", "event", 2, key="isabella is idle")
    node(store, "chat", "chat", 3)
    node(store, "th", "thought", 4)
    r = ga(store)
    assert sorted(r.ids) == ["ev", "th"] and r.candidates == 2


def test_ties_keep_store_order_events_then_thoughts_newest_first(store):
    # inserted scrambled; everything equal (decay 1 -> every recency .5, same vector and poignancy)
    node(store, "t2", "thought", 2)
    node(store, "e1", "event", 1)
    node(store, "t4", "thought", 4)
    node(store, "e3", "event", 3)
    r = ga(store, decay=1.0)
    assert len(set(r.score.tolist())) == 1
    assert r.ids == ["e3", "e1", "t4", "t2"]
    # last_accessed still sorts first: make t2 the least recently accessed
    store.update_fields("t2", {"last_accessed": T0 - 5})
    assert ga(store, decay=1.0, alpha=0, gamma=0).ids[0] == "t2"


def test_per_agent_weights_and_decay(store):
    node(store, "rel", "event", 1, v=vec(1, 0), poignancy=1, last_accessed=T0)      # most relevant
    node(store, "imp", "event", 2, v=vec(0, 1), poignancy=9, last_accessed=T0)      # most important
    node(store, "mid", "event", 3, v=vec(1, 1), poignancy=5, last_accessed=T0 - 1)
    plain = ga(store)
    # candidate order by last_accessed: mid, then rel, imp (tie: newest first -> imp, rel)
    # recency .995^1,^2,^3 -> mid 1, imp .5..., rel 0 ; relevance rel 1, mid .7071.., imp 0; importance imp 1, mid .5, rel 0
    cos_mid = float(vec(1, 1) @ vec(1, 0))
    rel_mid = cos_mid / 1.0
    d = 0.995
    rec_imp = (d ** 2 - d ** 3) / (d - d ** 3)
    expect = {"rel": 3 * 1 + 0, "imp": 0.5 * rec_imp + 2 * 1, "mid": 0.5 + 3 * rel_mid + 2 * 0.5}
    assert plain.ids == sorted(expect, key=expect.get, reverse=True)
    np.testing.assert_allclose(plain.score, sorted(expect.values(), reverse=True), atol=1e-6)

    store.set_meta("ga_weights", {"isabella": {"recency_w": 1, "relevance_w": 0, "importance_w": 1, "recency_decay": 0.5}})
    w = ga(store)
    rec_imp = (0.5 ** 2 - 0.5 ** 3) / (0.5 - 0.5 ** 3)
    expect = {"rel": 0.0, "imp": 0.5 * rec_imp + 2, "mid": 0.5 + 2 * 0.5}
    assert w.ids == ["imp", "mid", "rel"]
    np.testing.assert_allclose(w.score, [expect[i] for i in w.ids], atol=1e-12)
    assert ga(store, agent_weights=False).ids == plain.ids


def test_store_without_ga_attributes(store):
    store.insert_memories([
        dict(id="x", kind="fact", content="x", embedding=vec(1, 0), embedding_model=MODEL, created_at=T0 - 30),
        dict(id="y", kind="dialogue", content="y", embedding=vec(1, 0), embedding_model=MODEL, created_at=T0 - 20),
        dict(id="z", kind="episode", content="z", embedding=vec(1, 0), embedding_model=MODEL, created_at=T0 - 10,
             last_accessed=T0 - 40),
        dict(id="w", kind="episode", content="w", tags=["dialogue"], embedding=vec(1, 0), embedding_model=MODEL),
    ])
    r = ga(store, alpha=0, gamma=0)
    # dialogue left out; order by last_accessed (never accessed -> created): z (T0-40), x (T0-30)
    assert r.ids == ["z", "x"]
    assert list(r.raw["recency_rank"]) == [1, 2]


def _random_store(store, n, dim, seed):
    rng = np.random.default_rng(seed)
    V = unit_vectors(n, dim, seed)
    words = "cat dog tree house river cloud stone apple".split()
    recs = []
    for i in range(n):
        gt = rng.choice(["event", "thought", "chat", "none"])
        attrs = {} if gt == "none" else {"ga_type": str(gt), "node_count": int(rng.integers(1, n)),
                                         "embedding_key": "idle" if rng.random() < 0.1 else "k"}
        if rng.random() < 0.5:
            attrs["cycle"] = int(rng.integers(0, 30))
        recs.append(dict(
            id=f"m{i}", agent=str(rng.choice(["a", "b"])), kind=str(rng.choice(["episode", "fact", "dialogue"])),
            content=" ".join(rng.choice(words, 3)), importance=float(rng.integers(1, 11)),
            embedding=V[int(rng.integers(0, n // 3))] if rng.random() < 0.3 else V[i],   # duplicates: exact ties
            embedding_model=MODEL, event_time=int(rng.integers(0, 10 ** 6)), created_at=int(rng.integers(0, 10 ** 6)),
            last_accessed=int(rng.integers(0, 100)) * 10_000 if rng.random() < 0.7 else None,        # many ties
            valid_until=int(rng.integers(0, 10 ** 6)) if rng.random() < 0.2 else None,
            protected=bool(rng.random() < 0.2), confidence=float(rng.random()), tags=list(rng.choice(words, 2)),
            attributes=attrs))
    store.insert_memories(recs)
    store.set_meta("ga_weights", {"a": {"recency_w": 0.7, "relevance_w": 1.3, "recency_decay": 0.99}})
    return V, recs


def nodes_of(recs):
    """The reference's input made from the memories as written, not as the store reads them back."""
    def opt(x):
        return None if x is None else float(x)
    return [{"id": r["id"], "agent": r["agent"], "kind": r["kind"], "importance": r["importance"],
             "event_time": float(r["event_time"]), "created_at": float(r["created_at"]),
             "last_accessed": opt(r["last_accessed"]), "valid_until": opt(r["valid_until"]), "confidence": r["confidence"],
             "decay_rate": 0.1,  # the schema's default (none is written)
             "protected": r["protected"], "embedding": r["embedding"], "tags": r["tags"], "attributes": r["attributes"]}
            for r in recs]


def full_text_hits(recs, text):
    """(id, bm25) of the memories matching any word of `text`, from SQLite's FTS5 over the texts as
    written (its own table here, not the store's)."""
    import re

    import apsw
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='unicode61')")
    conn.executemany("INSERT INTO t (rowid, content) VALUES (?, ?)", [(i + 1, r["content"]) for i, r in enumerate(recs)])
    match = " OR ".join(f'"{w}"' for w in re.findall(r"\w+", text))
    return [(recs[rowid - 1]["id"], score) for rowid, score in
            conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t)", (match,))]


@pytest.mark.parametrize("seed", [0, 1])
def test_engine_matches_plain_loop(store, seed):
    V, recs = _random_store(store, 400, 4, seed)
    e = Engine(store, now=10 ** 6)
    nodes = nodes_of(recs)
    variants = [{}, dict(as_of=5e5), dict(agents=("a",)), dict(tags=("cat",)), dict(kinds=("fact",), k=50),
                dict(include_retired=True, confidence_decay=True), dict(protected_only=True),
                dict(time_range=(1e5, 8e5)), dict(alpha=0, k=60), dict(decay=1.0), dict(agent_weights=False)]
    checked = 0
    for query in ({"vector": V[5]}, {"like": "m7"}):
        e.set_query(**query)
        if "vector" in query:  # the query as the test knows it: a unit vector; or memory m7's vector and text
            q, text = query["vector"] / np.linalg.norm(query["vector"]), None
        else:
            q, text = recs[7]["embedding"], recs[7]["content"]
        fts = full_text_hits(recs, text) if text else None
        for name in ("dual-memory", "generative-agents", "ada", "hybrid", "working-memory"):
            for extra in variants:
                p = preset_params(name, **extra)
                got = e.score(p)
                want = reference.retrieve(nodes, q.tolist(), p, now=10 ** 6, fts=fts,
                                      ga_weights={"a": {"recency_w": 0.7, "relevance_w": 1.3, "recency_decay": 0.99}},
                                      exclude_id=query.get("like"))
                assert got.ids == [i for i, _ in want], (name, extra)
                np.testing.assert_allclose(got.score, [s for _, s in want], rtol=0, atol=1e-12)
                if name in ("generative-agents", "dual-memory", "ada"):
                    # within the top k the engine's exact pass gives the loop's floats bit for bit
                    finite = got.all_scores[got.rows]
                    np.testing.assert_array_equal(finite, got.score)
                checked += 1
    assert checked == 2 * 5 * len(variants)


def test_two_personas_are_each_ranked_on_their_own(store):
    """GA retrieves from one persona's memory: its own recency order and min-max. Pooling two
    personas gave one recency order across both, which the GA code never does."""
    rng = np.random.default_rng(3)
    V = unit_vectors(40, 4, seed=3)
    recs = []
    for i in range(40):
        who = "Ann" if i < 20 else "Bob"
        recs.append(dict(id=f"{who}-{i}", agent=who, kind="episode", content=f"{who} memory {i}",
                         importance=float(rng.integers(1, 5) if who == "Ann" else rng.integers(6, 11)),  # Bob's run higher
                         embedding=V[i], embedding_model=MODEL, created_at=1000 + i * 10,
                         last_accessed=1000 + int(rng.integers(0, 400)),
                         attributes={"ga_type": "event", "node_count": i % 20 + 1, "embedding_key": f"k{i}"}))
    store.insert_memories(recs)
    e = Engine(store, now=10 ** 6)
    e.set_query(vector=V[0])
    both = e.score(preset_params("generative-agents", k=40))
    assert any("personas: each is ranked on its own" in n for n in both.notes)
    got = dict(zip(both.ids, both.score))
    for who in ("Ann", "Bob"):
        alone = e.score(preset_params("generative-agents", k=40, agents=(who,)))
        assert not any("personas" in n for n in alone.notes)
        for mid, score in zip(alone.ids, alone.score):
            assert got[mid] == pytest.approx(score, abs=1e-12)  # as if the persona were alone
        ranks = [both.ids.index(m) for m in alone.ids]
        assert ranks == sorted(ranks)  # each persona's own order survives the merge
    # both personas' most relevant and most recent memories reach the top: neither drowns the other
    assert {m.split("-")[0] for m in both.ids[:6]} == {"Ann", "Bob"}
