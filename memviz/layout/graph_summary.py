"""A reflection graph too large to draw (a million memories, 200k provenance links): what the
graph panel shows instead. No Qt here.

- `clusters`: the nodes grouped by (level, agent, kind), with how many memories each group holds
  and how many links run between two groups, laid out in layers like the graph itself;
- `reach`: the nodes a selection rests on or that rest on it, in hop order and capped, from a
  CSR adjacency (numpy only: no Python loop per node), so the selected memory's neighbourhood can
  be drawn in full and laid out on its own (`graph.layer_positions`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix


@dataclass
class Clusters:
    level: np.ndarray      # (k,) int: the level of the group's memories
    agent: np.ndarray      # (k,) int: agent code
    kind: np.ndarray       # (k,) int: kind code
    count: np.ndarray      # (k,) int: memories in the group
    x: np.ndarray          # (k,) float: place in its layer (spaced 1 apart, centred on 0)
    edges: np.ndarray      # (m, 2) int: group pairs (lower, upper) with at least one link
    edge_count: np.ndarray  # (m,) int: links between them
    node_group: np.ndarray  # (n,) int: each node's group (-1: not a memory)


def clusters(level, agent_code, kind_code, edges) -> Clusters:
    """Group nodes by (level, agent, kind); `agent_code`/`kind_code` are -1 for nodes that are not
    memories (missing ids), which join no group. `edges` (m, 2) node pairs, in either order."""
    level = np.asarray(level, np.int64)
    agent_code, kind_code = np.asarray(agent_code, np.int64), np.asarray(kind_code, np.int64)
    real = (agent_code >= 0) & (kind_code >= 0) & (level >= 0)
    na, nk = int(agent_code.max(initial=0)) + 1, int(kind_code.max(initial=0)) + 1
    key = (level * na + agent_code) * nk + kind_code
    uniq, inv, count = np.unique(key[real], return_inverse=True, return_counts=True)
    group = np.full(len(level), -1, np.int64)
    group[real] = inv.ravel()
    g_level, rest = uniq // (na * nk), uniq % (na * nk)
    g_agent, g_kind = rest // nk, rest % nk
    x = np.zeros(len(uniq))
    for L in np.unique(g_level):
        at = np.flatnonzero(g_level == L)   # in (agent, kind) order: uniq is sorted
        x[at] = np.arange(len(at)) - (len(at) - 1) / 2
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    a, b = group[e[:, 0]], group[e[:, 1]]
    ok = (a >= 0) & (b >= 0) & (a != b)
    lo, hi = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
    pair, n_links = np.unique(lo * len(uniq) + hi, return_counts=True)
    pairs = np.c_[pair // max(len(uniq), 1), pair % max(len(uniq), 1)].astype(np.int64).reshape(-1, 2)
    return Clusters(g_level, g_agent, g_kind, count, x, pairs, n_links, group)


def adjacency(n: int, frm, to) -> csr_matrix:
    """n × n CSR with a 1 at each (frm[i], to[i])."""
    frm, to = np.asarray(frm, np.int64), np.asarray(to, np.int64)
    return csr_matrix((np.ones(len(frm), np.int8), (frm, to)), shape=(n, n))


def reach(adj: csr_matrix, start, limit: int | None = None) -> np.ndarray:
    """Nodes reachable from `start` along `adj`, nearest hops first (a start node only if a cycle
    leads back to it); stops after the hop that reaches `limit` nodes and cuts there."""
    n = adj.shape[0]
    seen = np.zeros(n, bool)
    frontier = np.unique(np.asarray(start, np.int64))
    found: list[np.ndarray] = []
    total = 0
    while len(frontier):
        lo, hi = adj.indptr[frontier], adj.indptr[frontier + 1]
        lengths = hi - lo
        m = int(lengths.sum())
        if not m:
            break
        nxt = adj.indices[np.arange(m) + np.repeat(lo - (np.cumsum(lengths) - lengths), lengths)]
        nxt = np.unique(nxt)
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        found.append(nxt)
        total += len(nxt)
        if limit is not None and total >= limit:
            break
        frontier = nxt
    out = np.concatenate(found) if found else np.zeros(0, np.int64)
    return out[:limit] if limit is not None else out
