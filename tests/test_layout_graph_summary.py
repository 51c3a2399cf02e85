"""memviz.layout.graph_summary: a graph too large to draw, as clusters with counts, and a
selection's lineage reached over CSR in hop order."""
from __future__ import annotations

import numpy as np

from memviz.layout.graph import layer_positions
from memviz.layout.graph_summary import adjacency, clusters, reach


def test_reach_goes_hop_by_hop_and_stops_at_the_limit():
    # 0 <- 1 <- 2 <- 3 (a chain of "rests on"), 1 <- 4, and a cycle 5 <-> 6
    frm = np.array([1, 2, 3, 4, 5, 6])
    to = np.array([0, 1, 2, 1, 6, 5])
    up = adjacency(7, frm, to)          # node -> what it rests on
    down = adjacency(7, to, frm)        # node -> what rests on it
    assert reach(up, [3]).tolist() == [2, 1, 0]
    assert sorted(reach(down, [0]).tolist()) == [1, 2, 3, 4]
    assert reach(down, [0]).tolist()[:1] == [1]               # nearest first
    assert sorted(reach(down, [0], limit=3).tolist()) in ([1, 2, 4], [1, 2, 3], [1, 3, 4])
    assert len(reach(down, [0], limit=3)) == 3
    assert sorted(reach(up, [5]).tolist()) == [5, 6]         # a cycle leads back to the start
    assert reach(up, [0]).tolist() == []


def test_clusters_count_memories_and_links_per_level_agent_and_kind():
    level = np.array([0, 0, 0, 1, 1, 2, 0])
    agent = np.array([0, 0, 1, 0, 1, 0, -1])   # node 6: a missing id, in no cluster
    kind = np.array([0, 0, 0, 1, 1, 1, -1])
    edges = np.array([[3, 0], [3, 1], [4, 2], [5, 3], [5, 4], [4, 6]])
    c = clusters(level, agent, kind, edges)
    groups = {(int(lv), int(a), int(k)): int(n) for lv, a, k, n in zip(c.level, c.agent, c.kind, c.count)}
    assert groups == {(0, 0, 0): 2, (0, 1, 0): 1, (1, 0, 1): 1, (1, 1, 1): 1, (2, 0, 1): 1}
    assert c.node_group[6] == -1
    links = {(int(a), int(b)): int(n) for (a, b), n in zip(c.edges, c.edge_count)}
    g = {key: i for i, key in enumerate(zip(c.level.tolist(), c.agent.tolist(), c.kind.tolist()))}
    assert links[tuple(sorted((g[0, 0, 0], g[1, 0, 1])))] == 2    # two links from one cluster to another
    assert sum(links.values()) == 5                                # the link to the missing id is not counted
    for L in (0, 1):                                               # each layer centred, 1 apart
        xs = np.sort(c.x[c.level == L])
        assert np.allclose(np.diff(xs), 1) and abs(xs.mean()) < 1e-9


def test_layer_positions_space_each_layer():
    level = np.array([0, 0, 0, 1, 1])
    x = layer_positions(level, np.array([[3, 0], [3, 1], [4, 2]]), np.arange(5.0))
    for L in (0, 1):
        xs = np.sort(x[level == L])
        assert np.all(np.diff(xs) >= 1 - 1e-9)
    assert x[3] < x[4]                  # 3 sits over 0 and 1, 4 over 2: no crossing
