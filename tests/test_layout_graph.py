import numpy as np

from memviz.layout import graph_layout
from memviz.layout.graph import DERIVED, SUPERSEDED


def mem(i, t, kind="episode", sources=()):
    return dict(id=i, kind=kind, content=f"memory {i}", event_time=1_700_000_000 + t, source_ids=list(sources))


def rows(a, *ids):
    return sorted(a.index_of(i) for i in ids)


def multi_level(store):
    store.insert_memories([
        mem("e1", 1), mem("e2", 2), mem("e3", 3), mem("e4", 4), mem("lonely", 5),
        mem("r1", 10, "reflection", ["e1", "e2"]),
        mem("r2", 11, "reflection", ["e3", "e4"]),
        mem("r3", 12, "reflection", ["r1", "e4"]),          # level 2: above r1
        mem("r4", 13, "reflection", ["r3", "r2", "e1"]),    # level 3
        mem("f1", 14, "fact", ["r2"]),
    ])
    new = store.supersede("f1", "the corrected fact")
    return new


def test_levels_follow_the_highest_source(store):
    new = multi_level(store)
    a = store.arrays()
    g = graph_layout(store, a)
    lv = {i: int(g.level[a.index_of(i)]) for i in a.ids}
    assert [lv[i] for i in ("e1", "e2", "e3", "e4")] == [0, 0, 0, 0]
    assert (lv["r1"], lv["r2"], lv["r3"], lv["r4"], lv["f1"]) == (1, 1, 2, 3, 2)
    assert lv[new] == 2            # the correction keeps the old one's sources
    assert lv["lonely"] == -1 and np.isnan(g.x[a.index_of("lonely")])
    assert np.array_equal(g.y[g.in_graph], g.level[g.in_graph])
    sup = g.edges[g.edge_kind == SUPERSEDED].tolist()
    assert sup == [[a.index_of("f1"), a.index_of(new)]]
    assert len(g.edges[g.edge_kind == DERIVED]) == 11   # the correction carries r2 as its source too
    assert g.broken == [] and not g.cyclic.any()
    everyone = graph_layout(store, a, include_all=True)
    assert everyone.level[a.index_of("lonely")] == 0


def test_ancestors_descendants_and_neighbourhood(store):
    new = multi_level(store)
    a = store.arrays()
    g = graph_layout(store.provenance(), a)
    assert g.ancestors(a.index_of("r4")).tolist() == rows(a, "e1", "e2", "e3", "e4", "r1", "r2", "r3")
    assert g.descendants(a.index_of("e1")).tolist() == rows(a, "r1", "r3", "r4")
    assert g.descendants(a.index_of("r2")).tolist() == rows(a, "r4", "f1", new)
    assert g.ancestors(a.index_of(new)).tolist() == rows(a, "f1", "r2", "e3", "e4")
    assert g.ancestors(a.index_of("e2")).tolist() == []
    assert g.neighbourhood(a.index_of("r1"), 1).tolist() == rows(a, "r1", "e1", "e2", "r3")
    assert g.neighbourhood(a.index_of("r1"), 2).tolist() == rows(a, "r1", "e1", "e2", "r3", "r4", "e4")


def test_broken_links_are_reported_and_keep_their_node_above_evidence(store):
    store.insert_memories([mem("e1", 1), mem("r1", 2, "reflection", ["e1", "gone-1"]),
                           mem("r2", 3, "reflection", ["gone-2"]),
                           dict(mem("f2", 4, "fact"), attributes={"supersedes": "gone-3"})])
    a = store.arrays()
    g = graph_layout(store, a)
    assert sorted(g.broken) == sorted([(a.index_of("r1"), "gone-1", "source"), (a.index_of("r2"), "gone-2", "source"),
                                       (a.index_of("f2"), "gone-3", "supersedes")])
    assert g.level[a.index_of("r2")] == 1     # its only source is missing: still drawn as derived
    assert g.level[a.index_of("f2")] == 0
    assert g.level[a.index_of("r1")] == 1


def test_cycles_do_not_hang_and_are_flagged(store):
    store.insert_memories([mem("e", 0), mem("a", 1, "reflection", ["b", "e"]), mem("b", 2, "reflection", ["a"]),
                           mem("self", 3, "reflection", ["self"]), mem("top", 4, "reflection", ["a"])])
    a = store.arrays()
    g = graph_layout(store, a)
    lv = {i: int(g.level[a.index_of(i)]) for i in a.ids}
    assert lv["a"] == lv["b"] == 1 and lv["top"] == 2 and lv["e"] == 0 and lv["self"] == 0
    cyc = {tuple(e) for e in g.edges[g.cyclic].tolist()}
    assert cyc == {(a.index_of("b"), a.index_of("a")), (a.index_of("a"), a.index_of("b")),
                   (a.index_of("self"), a.index_of("self"))}
    assert g.ancestors(a.index_of("top")).tolist() == rows(a, "a", "b", "e")
    assert g.descendants(a.index_of("a")).tolist() == rows(a, "b", "top")
    assert np.isfinite(g.x[g.in_graph]).all()


def crossings(g):
    e = g.edges
    x0, x1, l0, l1 = g.x[e[:, 0]], g.x[e[:, 1]], g.level[e[:, 0]], g.level[e[:, 1]]
    n = 0
    for i in range(len(e)):
        for j in range(i + 1, len(e)):
            if l0[i] == l0[j] and l1[i] == l1[j] and (x0[i] - x0[j]) * (x1[i] - x1[j]) < 0:
                n += 1
    return n


def test_barycentre_sweeps_untangle_what_time_order_tangles(store):
    # time order interleaves two families: e1 r? e2 ... ; drawn in time order, the links cross
    fam = [("ra", ["e1", "e3", "e5"]), ("rb", ["e2", "e4", "e6"])]
    store.insert_memories([mem(f"e{i}", i) for i in range(1, 7)] +
                          [mem("rb", 10, "reflection", fam[1][1]), mem("ra", 11, "reflection", fam[0][1])])
    a = store.arrays()
    assert crossings(graph_layout(store, a, sweeps=0)) > 0
    g = graph_layout(store, a)
    assert crossings(g) == 0
    for L in (0, 1):  # nodes of a layer keep at least unit spacing
        xs = np.sort(g.x[g.level == L])
        assert np.all(np.diff(xs) >= 1 - 1e-9)


def test_a_few_thousand_nodes_with_bad_data_lay_out(store):
    rng = np.random.default_rng(0)
    recs = [mem(f"e{i}", i) for i in range(2000)]
    for i in range(600):
        pool = [f"e{j}" for j in rng.integers(0, 2000, 4)] + [f"r{j}" for j in rng.integers(0, max(i, 1), 2) if i]
        recs.append(mem(f"r{i}", 3000 + i, "reflection", pool + (["missing"] if i % 50 == 0 else [])))
    recs.append(mem("r0x", 9000, "reflection", ["r599"]))
    recs[2000]["source_ids"].append("r599")  # a long cycle through the reflections
    store.insert_memories(recs, audit=False)
    a = store.arrays()
    g = graph_layout(store, a)
    assert g.in_graph.sum() > 1900 and g.level.max() >= 3
    assert len(g.broken) == 12 and g.cyclic.any()
    for L in range(g.level.max() + 1):
        xs = np.sort(g.x[g.level == L])
        assert np.all(np.diff(xs) >= 1 - 1e-9)
