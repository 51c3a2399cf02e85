"""The int8 first pass (retrieval/quantized.py): its error bound holds on every row, and the
engine's top k through it are those of exact scoring (the plain-loop reference) and of the
float32 path, on random and adversarial stores (duplicated vectors, exact ties, near-ties at
the k-th place, spiky vectors), at 256 and 1536 dimensions."""
import dataclasses

import numpy as np
import pytest
from conftest import unit_vectors

from memviz.retrieval import Engine, preset, preset_params, quantized, reference
from memviz.retrieval import components as C

T0 = 1_700_000_000


def _unit(v):
    v = np.asarray(v, np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _adversarial_vectors(n, dim, seed):
    """Random rows, then: a third duplicates of a few rows, a block of near-duplicates of one
    direction (cosines to the query a few float32 ulps apart, identical int8 codes), spiky rows
    (one large component, the worst case of a per-row scale) and a zero row."""
    rng = np.random.default_rng(seed)
    V = unit_vectors(n, dim, seed)
    V[n // 3: 2 * n // 3] = V[rng.integers(0, 5, n - n // 3 - (n - 2 * n // 3))]
    base = V[0].astype(np.float64)
    for j in range(2 * n // 3, 2 * n // 3 + 40):
        V[j] = _unit(base + rng.normal(size=dim) * 1e-7)
    spiky = np.full(dim, 1e-3, np.float32)
    spiky[1] = 1.0
    V[-3] = _unit(spiky)
    V[-2] = 0.0
    return V


@pytest.mark.parametrize("dim", [256, 1536])
@pytest.mark.parametrize("kind", ["random", "adversarial"])
def test_int8_first_pass_error_is_within_its_bound(dim, kind):
    n = 600
    V = unit_vectors(n, dim, 3) if kind == "random" else _adversarial_vectors(n, dim, 3)
    index = quantized.Int8Index(V)
    assert index.usable, "numba is a dependency (umap-learn): the int8 kernel must load"
    spiky = np.zeros(dim, np.float32)
    spiky[:2] = (1.0, 1e-4)
    for q in (V[0], V[n // 2], _unit(spiky), unit_vectors(1, dim, 9)[0]):
        approx, err = index.cosines(q)
        exact = C.exact_relevance(V, np.arange(n), q)
        gap = np.abs(approx - exact)
        assert (gap <= err).all(), f"bound {err} broken by {gap.max()}"
        assert err < 0.05   # and it is a useful bound, not a vacuous one
    # duplicated vectors get identical first-pass values (their ties survive to the exact pass)
    approx, _ = index.cosines(V[7])
    dup = V[n // 3: 2 * n // 3]
    same = np.all(dup[:, None, :] == dup[None, :, :], axis=2)
    a = approx[n // 3: 2 * n // 3]
    assert (a[:, None] == a[None, :])[same].all()


def _store_with(store, V, seed, *, model, first=0):
    """Memories holding the vectors V with coarse importance and times (many equal scores)."""
    rng = np.random.default_rng(seed)
    n = len(V)
    recs = []
    for i in range(n):
        gt = ("event", "thought", "chat")[i % 3]
        recs.append(dict(
            id=f"m{first + i:04d}", agent="ab"[i % 2], kind=("episode", "fact")[i % 2], content=f"note {i % 7}",
            importance=float(rng.integers(4, 6)), embedding=V[i] if V[i].any() else None, embedding_model=model,
            event_time=T0 - 3600 * int(rng.integers(0, 3)), created_at=T0 - 3600 * int(rng.integers(0, 3)),
            last_accessed=T0 - 60 * int(rng.integers(0, 4)) if rng.random() < 0.7 else None,
            attributes={"ga_type": gt, "node_count": i + 1, "embedding_key": "k", "cycle": i % 5}))
    store.insert_memories(recs)


def _variants():
    names = ("dual-memory", "generative-agents", "ada")
    extras = [{}, dict(k=1), dict(k=37), dict(k=120), dict(alpha=0.99, beta=0.005, gamma=0.005, k=25),
              dict(agents=("a",), k=15), dict(confidence_decay=True, k=12)]
    return [(name, extra) for name in names for extra in extras]


@pytest.mark.parametrize("dim,seed", [(256, 0), (256, 1), (1536, 2)])
def test_int8_path_ranks_exactly_like_the_reference(store, dim, seed):
    V = _adversarial_vectors(420 if dim == 256 else 240, dim, seed)
    _store_with(store, V, seed, model=f"test/{dim}")
    fast_arrays = store.arrays()
    assert quantized.index_for(fast_arrays, wait=True, min_rows=0) is not None
    fast = Engine(store, fast_arrays, now=T0)
    plain = Engine(store, store.arrays(), now=T0)     # a store this small: the float32 product
    nodes = reference.load_nodes(store, fast_arrays)
    for query in (dict(vector=V[0]), dict(vector=V[-3]), dict(like="m0003"), dict(vector=unit_vectors(1, dim, 5)[0])):
        fast.set_query(**query)
        plain.set_query(**query)
        fast._relevance()                          # the first pass runs on first use
        assert fast._rel_err > 100 * fast._delta   # the int8 pass is the one in use
        for name, extra in _variants():
            p = preset_params(name, **extra)
            got, base = fast.score(p), plain.score(p)
            want = reference.retrieve(nodes, fast.query_vector.tolist(), p, now=T0, exclude_id=query.get("like"))
            assert got.ids == [i for i, _ in want] == base.ids, (name, extra, query)
            np.testing.assert_array_equal(got.score, base.score)
            np.testing.assert_allclose(got.score, [s for _, s in want], rtol=0, atol=1e-12)


def test_many_personas_get_their_exact_extremes_and_rank_like_the_reference(store):
    """Generative Agents over 30 personas through the int8 pass: each persona's min and max
    (found for all personas in a few passes) equal the exact ones, with near-ties and exact
    duplicates at the extremes of some personas, and the top k equal the plain loop's."""
    dim, n, agents = 256, 900, 30
    rng = np.random.default_rng(6)
    q = unit_vectors(1, dim, 21)[0]
    other = _unit(rng.normal(size=dim))
    V = unit_vectors(n, dim, 22)
    for j in range(0, 300, agents):   # persona 0: rows at the top within float32 ulps, one duplicated
        V[j] = _unit(0.9 * q + 0.43 * other + rng.normal(size=dim) * 3e-8)
    for j in range(1, 300, agents):   # persona 1: its lowest rows as near-ties
        V[j] = _unit(-0.9 * q + 0.43 * other + rng.normal(size=dim) * 3e-8)
    V[2 * agents] = V[0]
    V[-1] = 0.0                       # a memory without a vector
    rng_store = np.random.default_rng(6)
    store.insert_memories([dict(
        id=f"m{i:04d}", agent=f"agent{i % agents:02d}", kind="episode", content=f"note {i % 7}",
        importance=float(rng_store.integers(3, 7)), embedding=V[i] if V[i].any() else None, embedding_model="test/256",
        event_time=T0 - 3600 * int(rng_store.integers(0, 3)), created_at=T0 - 3600 * int(rng_store.integers(0, 3)),
        last_accessed=T0 - 60 * int(rng_store.integers(0, 4)),
        attributes={"ga_type": ("event", "thought")[i % 2], "node_count": i + 1, "embedding_key": "k"})
        for i in range(n)], audit=False)
    arrays = store.arrays()
    assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    e = Engine(store, arrays, now=T0)
    nodes = reference.load_nodes(store, arrays)
    for query in (q, V[5], unit_vectors(1, dim, 23)[0]):
        e.set_query(vector=query)
        p = preset_params("generative-agents", k=25)
        got = e.score(p)
        assert e._rel_err > 100 * e._delta   # the int8 pass is the one in use
        want = reference.retrieve(nodes, e.query_vector.tolist(), p, now=T0)
        assert got.ids == [i for i, _ in want]
        np.testing.assert_allclose(got.score, [s for _, s in want], rtol=0, atol=1e-12)
        _, cs = e._candidates(p, preset(p.preset))
        personas = cs.personas(arrays)
        assert len(personas.groups) == agents
        los, his = e._exact_extremes_by_persona(cs.idx, e._relevance()[cs.idx], personas)
        for g, pos in enumerate(personas.groups):
            exact = C.exact_relevance(arrays.embedding, cs.idx[pos], e.query_vector)
            assert (los[g], his[g]) == (exact.min(), exact.max()), g


def test_near_ties_at_the_kth_place_are_decided_exactly(store):
    """Forty memories whose cosines to the query differ by about one float32 ulp (their int8
    codes are equal), ranked by relevance alone: the int8 pass cannot order them, the exact pass
    must, and k cuts through the block."""
    dim = 256
    rng = np.random.default_rng(4)
    q = unit_vectors(1, dim, 11)[0]
    other = _unit(rng.normal(size=dim))
    V = unit_vectors(300, dim, 12) * 0.2   # far rows (shrunk, then normalised back below)
    for j in range(40):
        V[j] = 0.8 * q + 0.6 * other + rng.normal(size=dim) * 3e-8
    V = _unit(V)
    V[40:45] = V[3]                        # exact duplicates inside the block
    _store_with(store, V, 4, model="test/256")
    arrays = store.arrays()
    assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    e = Engine(store, arrays, now=T0)
    e.set_query(vector=q)
    nodes = reference.load_nodes(store, arrays)
    for k in (1, 3, 17, 39, 44):
        p = preset_params("dual-memory", alpha=1.0, beta=0.0, gamma=0.0, k=k)
        got = e.score(p)
        want = reference.retrieve(nodes, e.query_vector.tolist(), p, now=T0)
        assert got.ids == [i for i, _ in want]
        # the duplicates keep store order among themselves
        dups = [i for i in got.ids if i in {f"m{j:04d}" for j in [3, 40, 41, 42, 43, 44]}]
        assert dups == sorted(dups)


def test_kth_largest_by_block_maxima_equals_a_full_partition():
    from memviz.retrieval.fastpass import kth_largest as _kth_largest

    rng = np.random.default_rng(1)
    for trial in range(120):
        m = int(rng.integers(1, 200_000))
        k = int(rng.integers(1, min(m, 400) + 1))
        s = rng.integers(0, int(rng.integers(1, 40)), m).astype(float) if trial % 2 else rng.normal(size=m)  # ties
        if trial % 5 == 0:
            s[rng.integers(0, m)] = np.nan
        got, want = _kth_largest(s, k), np.partition(s, m - k)[m - k]
        assert got == want or (np.isnan(got) and np.isnan(want)), (m, k)


def test_row_meta_reads_odd_json_like_the_row_reader(store):
    """The one-aggregate read of tags and GA/ADA attributes: strings are not numbers, booleans
    are not counts, a non-object is no GA node, malformed tags are none, text is kept as text."""
    from memviz.retrieval.rowmeta import load_row_meta

    store.insert_memories([
        dict(id="a", kind="fact", content="a", tags=["x", "idle"],
             attributes={"ga_type": "event", "node_count": 7, "embedding_key": "was idle", "cycle": 3}),
        dict(id="b", kind="fact", content="b", attributes={"ga_type": "thought", "node_count": "12",
                                                           "embedding_key": ["idle"], "cycle": True}),
        dict(id="c", kind="fact", content="c", attributes={"ga_type": {"odd": 1}, "node_count": True}),
        dict(id="d", kind="fact", content="d", attributes={"cycle": 2.5}),
        dict(id="e", kind="fact", content="e"),
    ])
    with store.transaction() as c:
        c.execute("UPDATE memories SET tags = '[broken' WHERE id = 'e'")
        c.execute("UPDATE memories SET attributes = '[1, 2]' WHERE id = 'd'")
    a = store.arrays()
    m = load_row_meta(store, a.rowid)
    assert m.tags[0] == frozenset({"x", "idle"}) and m.tags[4] == frozenset()
    assert m.ga_type.tolist() == ["event", "thought", '{"odd":1}', "", ""]
    np.testing.assert_array_equal(m.node_count, [7.0, np.nan, np.nan, np.nan, np.nan])
    assert m.idle.tolist() == [True, True, False, False, False]
    np.testing.assert_array_equal(m.cycle, [3.0, np.nan, np.nan, np.nan, np.nan])


def test_a_vector_holding_nan_ranks_as_on_the_float32_path(store):
    """An agent wrote a vector blob with NaN in it (the store's own writes refuse that): the read
    takes it for no vector (relevance 0, as a memory without one), the int8 index warns of
    nothing and the ranking is the float32 path's."""
    V = unit_vectors(200, 256, 8)
    _store_with(store, V, 8, model="test/256")
    bad = V[5].copy()
    bad[3] = np.nan
    with store.transaction() as c:
        c.execute("UPDATE memories SET embedding = ? WHERE id = 'm0005'", (bad.astype("<f4").tobytes(),))
    fast_arrays = store.arrays()
    assert quantized.index_for(fast_arrays, wait=True, min_rows=0) is not None
    fast, plain = Engine(store, fast_arrays, now=T0), Engine(store, store.arrays(), now=T0)
    for e in (fast, plain):
        e.set_query(vector=V[5])
    assert not fast_arrays.has_embedding[5] and fast._relevance()[5] == 0.0
    for name, extra in _variants():
        p = preset_params(name, **extra)
        assert fast.score(p).ids == plain.score(p).ids, (name, extra)


def test_a_view_of_the_same_vectors_shares_the_index_and_keeps_the_bound(store):
    """The window's as-of view (Engine.with_arrays: other values, the same matrix) reuses the
    int8 index instead of building one per scrubber step, and carries the int8 error bound with
    the int8 cosines, so its top k stay those of exact scoring."""
    dim = 256
    V = _adversarial_vectors(420, dim, 1)
    _store_with(store, V, 1, model="test/256")
    arrays = store.arrays()
    assert quantized.index_for(arrays, wait=True, min_rows=0) is not None
    fast = Engine(store, arrays, now=T0)
    fast.set_query(vector=V[0])
    fast._relevance()   # the int8 first pass, made before the view is taken
    view = dataclasses.replace(arrays, importance=arrays.importance[::-1].copy())
    view._index = arrays._index
    moved = fast.with_arrays(view)
    assert quantized.index_for(view) is quantized.index_for(arrays) is not None  # shared, not built again
    assert moved._rel_err == fast._rel_err > 100 * fast._delta      # the int8 bound travels with its cosines
    own = dataclasses.replace(view, embedding=view.embedding.copy())  # another matrix: the float32 product
    own._index = arrays._index
    plain = Engine(store, own, now=T0)
    plain.set_query(vector=V[0])
    for name, extra in _variants():
        p = preset_params(name, **extra)
        got, base = moved.score(p), plain.score(p)
        assert got.ids == base.ids, (name, extra)
        np.testing.assert_array_equal(got.score, base.score)


def test_an_extended_index_equals_one_built_afresh_and_keeps_both_bounds():
    """A live refresh appends rows and re-embeds some: the index grows in place (only those rows
    quantised), its codes are those a fresh build makes, and every row's first-pass error stays
    within the bound, for the grown index and for the one it grew from."""
    dim = 256
    V = _adversarial_vectors(900, dim, 5)
    old = quantized.Int8Index(V[:600])
    W = V.copy()
    W[[3, 70]] = unit_vectors(2, dim, 11)   # re-embedded in place
    W[650] = 0.0
    spiky = np.full(dim, 1e-4, np.float32)
    spiky[2] = 1.0
    W[880] = _unit(spiky)                    # a worse residual than any row before: R grows
    grown = old.extended(W[:750], [3, 70])
    grown = grown.extended(W, [])            # room runs out: a larger buffer, amortised
    fresh = quantized.Int8Index(W)
    np.testing.assert_array_equal(grown.codes, fresh.codes)
    np.testing.assert_array_equal(grown.scale, fresh.scale)
    assert grown.resid_max >= fresh.resid_max and grown.norm_max >= fresh.norm_max
    for q in (W[0], W[3], W[880], unit_vectors(1, dim, 9)[0]):
        for idx, M in ((grown, W), (old, W[:600])):  # the old index sees the re-embedded rows as patched
            approx, err = idx.cosines(q)
            gap = np.abs(approx - C.exact_relevance(M, np.arange(len(M)), q))
            assert len(approx) == len(M) and (gap <= err).all(), f"bound {err} broken by {gap.max()}"


def test_a_live_refresh_carries_the_index_instead_of_building_it_again(store):
    """A live refresh (session.live.delta.install) hands the new arrays the old index extended (quantized.carry): the same
    codes buffer, no build thread; a query on them ranks like the float32 path."""
    from memviz.session.live.delta import apply_rows

    dim = 256
    V = _adversarial_vectors(400, dim, 2)
    _store_with(store, V[:300], 2, model="test/256")
    arrays = store.arrays()
    old = quantized.index_for(arrays, wait=True, min_rows=0)
    _store_with(store, V[300:], 3, model="test/256", first=300)  # 100 more rows, as an agent would write them
    everything = store.arrays()
    fresh_rows = dataclasses.replace(everything, **{f.name: getattr(everything, f.name)[300:] for f in
                                                    dataclasses.fields(everything) if f.name not in
                                                    ("embedding_model", "_index")
                                                    and getattr(everything, f.name) is not None})
    got = apply_rows(arrays, fresh_rows)
    quantized.carry(arrays, got.arrays, got.changed)
    new = got.arrays
    idx = quantized.index_for(new, min_rows=0)
    assert idx is not None and idx.codes.base is old.codes.base and len(idx.codes) == 400
    fast = Engine(store, new, now=T0)
    fast.set_query(vector=V[350])
    fast._relevance()  # the first pass runs when a preset first needs it
    assert fast._rel_err > 100 * fast._delta  # the int8 first pass
    own = dataclasses.replace(new, embedding=new.embedding.copy())
    own._index = None
    plain = Engine(store, own, now=T0)
    plain.set_query(vector=V[350])
    for name, extra in _variants():
        p = preset_params(name, **extra)
        assert fast.score(p).ids == plain.score(p).ids, (name, extra)
