"""The reflection graph as a layered drawing, and fast lineage queries over it.

Nodes are memories that take part in a link (optionally all memories). An edge [a, b] runs
from the older/lower memory to the newer/upper one: a source to what was derived from it
(kind DERIVED), or an old memory to the one that superseded it (kind SUPERSEDED). Levels:
evidence (no sources) is 0, a derived memory sits one above its highest source; a memory
whose sources are all missing still sits at 1. Memories caught in a cycle of source links
(bad data) share one level and their edges are flagged `cyclic`, so nothing loops.
x comes from barycentre sweeps (each layer ordered by the mean position of its neighbours
in the layers already placed, then spaced at least 1 apart), which untangles crossings.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from ..store.common import Provenance

DERIVED, SUPERSEDED = 0, 1


@dataclass
class GraphLayout:
    x: np.ndarray          # (n,) float64 aligned to the arrays' rows; NaN for rows not in the graph
    y: np.ndarray          # (n,) float64: the level; NaN outside
    level: np.ndarray      # (n,) int32; -1 outside
    edges: np.ndarray      # (m, 2) int64 rows [lower, upper]: [source, derived] or [old, new]
    edge_kind: np.ndarray  # (m,) uint8: DERIVED or SUPERSEDED
    broken: list = field(default_factory=list)  # (row, missing id, "source" | "supersedes")
    cyclic: np.ndarray | None = None             # (m,) bool: edge inside a cycle of source links
    _up: csr_matrix | None = field(default=None, repr=False)    # lower -> upper
    _down: csr_matrix | None = field(default=None, repr=False)  # upper -> lower
    _both: csr_matrix | None = field(default=None, repr=False)

    @property
    def in_graph(self) -> np.ndarray:
        return self.level >= 0

    @property
    def rows(self) -> np.ndarray:
        return np.flatnonzero(self.level >= 0)

    def ancestors(self, row: int) -> np.ndarray:
        """Rows `row` was derived from or superseded, transitively (sorted, without `row`)."""
        return _reach(self._down, row)

    def descendants(self, row: int) -> np.ndarray:
        """Rows derived from `row` or superseding it, transitively (sorted, without `row`)."""
        return _reach(self._up, row)

    def neighbourhood(self, row: int, hops: int = 1) -> np.ndarray:
        """Rows within `hops` links of `row` in either direction, `row` included (sorted)."""
        seen = np.zeros(self._both.shape[0], dtype=bool)
        seen[row] = True
        frontier = np.array([row])
        for _ in range(max(0, hops)):
            nxt = np.unique(self._both[frontier].indices)
            nxt = nxt[~seen[nxt]]
            if len(nxt) == 0:
                break
            seen[nxt] = True
            frontier = nxt
        return np.flatnonzero(seen)


def _reach(graph: csr_matrix, row: int) -> np.ndarray:
    order = breadth_first_order(graph, int(row), directed=True, return_predecessors=False)
    return np.sort(order[order != row])


def graph_layout(source, arrays, *, include_all: bool = False, sweeps: int = 4) -> GraphLayout:
    """Lay out the provenance of `source` (a Provenance, or a store whose provenance() is read) over `arrays`' rows."""
    prov = source if isinstance(source, Provenance) else source.provenance()
    n = len(arrays)
    pairs, kinds, broken = [], [], []
    for links, kind, name in ((prov.sources, DERIVED, "source"), (prov.supersedes, SUPERSEDED, "supersedes")):
        for upper, lower in links:
            u, lo = arrays.index_of(upper), arrays.index_of(lower)
            if u is None:
                continue  # the memory holding the link is newer than these arrays
            if lo is None:
                broken.append((u, lower, name))
            else:
                pairs.append((lo, u))
                kinds.append(kind)
    for upper, missing, name in prov.dangling:
        u = arrays.index_of(upper)
        if u is not None:
            broken.append((u, missing, name))
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    edge_kind = np.array(kinds, dtype=np.uint8)

    member = np.zeros(n, dtype=bool)
    member[edges.ravel()] = True
    member[[b[0] for b in broken]] = True
    if include_all:
        member[:] = True

    level, cyclic = _levels(n, edges, edge_kind, broken)
    level = np.where(member, level, -1).astype(np.int32)
    x = _place_x(level, edges, arrays.event_time, sweeps)

    ones = np.ones(len(edges), dtype=np.int8)
    up = csr_matrix((ones, (edges[:, 0], edges[:, 1])), shape=(n, n))
    down = up.T.tocsr()
    return GraphLayout(x=x, y=np.where(level >= 0, level, np.nan).astype(np.float64), level=level, edges=edges,
                       edge_kind=edge_kind, broken=broken, cyclic=cyclic, _up=up, _down=down, _both=(up + down).tocsr())


def _levels(n, edges, edge_kind, broken):
    """Longest path from evidence over DERIVED links, with cycles condensed to one level."""
    src = edges[edge_kind == DERIVED]
    g = csr_matrix((np.ones(len(src), np.int8), (src[:, 0], src[:, 1])), shape=(n, n))
    ncomp, comp = connected_components(g, directed=True, connection="strong")
    ca, cb = comp[src[:, 0]], comp[src[:, 1]]
    cyclic_src = ca == cb  # inside one strongly connected component, or a self-loop
    cyclic = np.zeros(len(edges), dtype=bool)
    cyclic[np.flatnonzero(edge_kind == DERIVED)[cyclic_src]] = True

    lev = np.zeros(ncomp, dtype=np.int64)
    has_missing_source = [r for r, _, name in broken if name == "source"]
    lev[comp[has_missing_source]] = 1           # a missing source counts as evidence below
    ca, cb = ca[~cyclic_src], cb[~cyclic_src]
    for _ in range(ncomp + 1):                  # a DAG settles within its depth; the cap is a guard
        cand = lev.copy()
        np.maximum.at(cand, cb, lev[ca] + 1)
        if np.array_equal(cand, lev):
            break
        lev = cand
    return lev[comp], cyclic


def _spread(desired: np.ndarray) -> np.ndarray:
    """Positions as close to `desired` (ascending) as spacing >= 1 allows: the mean of a
    left-to-right and a right-to-left sweep, both of which keep the order."""
    i = np.arange(len(desired), dtype=np.float64)
    fwd = i + np.maximum.accumulate(desired - i)
    bwd = i + np.minimum.accumulate((desired - i)[::-1])[::-1]
    return (fwd + bwd) / 2


def layer_positions(level, edges, event_time, sweeps: int = 4) -> np.ndarray:
    """x of each node of a layered drawing (`level` per node, -1: not drawn) from barycentre sweeps
    over `edges` (m, 2) node pairs, each layer starting in `event_time` order: what graph_layout
    does for the whole graph, for any part of it (a neighbourhood drawn on its own)."""
    level = np.asarray(level, np.int64)
    return _place_x(level, np.asarray(edges, np.int64).reshape(-1, 2), np.asarray(event_time, np.float64), sweeps)


def _place_x(level, edges, event_time, sweeps):
    n = len(level)
    x = np.full(n, np.nan)
    top = int(level.max()) if n and level.max() >= 0 else -1
    layers = [np.flatnonzero(level == L) for L in range(top + 1)]
    for nodes in layers:  # start in time order, centred on 0
        order = nodes[np.lexsort((nodes, np.nan_to_num(event_time[nodes])))]
        x[order] = np.arange(len(order)) - (len(order) - 1) / 2
    # every link both ways, for the barycentres
    u = np.concatenate([edges[:, 0], edges[:, 1]])
    v = np.concatenate([edges[:, 1], edges[:, 0]])
    keep = u != v
    u, v = u[keep], v[keep]
    lu, lv = level[u], level[v]

    def arrange(L, below: bool):
        nodes = layers[L]
        if len(nodes) == 0:
            return
        cross = (lu == L) & ((lv < L) if below else (lv > L))
        sel = cross | ((lu == L) & (lv == L))   # same-layer links (supersedes, cycles) pull together
        tot = np.bincount(u[sel], weights=x[v[sel]], minlength=n)[nodes]
        cnt = np.bincount(u[sel], minlength=n)[nodes]
        desired = np.where(cnt > 0, tot / np.maximum(cnt, 1), x[nodes])
        order = np.lexsort((x[nodes], desired))
        x[nodes[order]] = _spread(desired[order])

    for _ in range(sweeps):
        for L in range(1, top + 1):
            arrange(L, below=True)
        for L in range(top - 1, -1, -1):
            arrange(L, below=False)
    return x
