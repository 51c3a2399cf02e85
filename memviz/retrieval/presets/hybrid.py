"""The assistant memory's search (ADR 005 search_memory: FTS5 + sqlite-vec + RRF): the FTS5 BM25
rank and the vector rank fused by reciprocal rank fusion, 1/(rrf_k + fts_rank) + 1/(rrf_k +
vector_rank) (retrieval/hybrid.py has the ranks). Not a weighted sum: two components, no weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...store.check import known_fts_damage
from .. import components as C
from ..hybrid import fts_ranks, vector_ranks
from .base import Components, Preset


@dataclass(frozen=True)
class _Ranks:
    fts_rank: np.ndarray      # per candidate, 0 = not a full-text hit
    bm25: np.ndarray          # NaN = not a hit
    vector_rank: np.ndarray   # 0 = no vector (or no query vector)


class Hybrid(Preset):
    def _ranks(self, run) -> _Ranks:
        hits = run.fts_hits()
        if hits is None and run.query_vector is None:
            if run.query_error is not None:
                raise run.query_error
            raise ValueError("the hybrid preset needs a query (text, vector or --like)")

        def make():
            a, idx = run.arrays, run.rows
            n = len(a)
            if hits is not None:
                is_cand = np.zeros(n, dtype=bool)
                is_cand[idx] = True
                bm = np.full(n, np.nan)
                bm[hits[0]] = hits[1]
                fts_rank, bm25 = fts_ranks(n, hits[0], is_cand)[idx], bm[idx]
            else:
                fts_rank, bm25 = np.zeros(len(idx), np.int64), np.full(len(idx), np.nan)
            if run.query_vector is not None:
                vector_rank = vector_ranks(idx, run.cosines32(), a.has_embedding, run.exact_cosines,
                                           run.cosine_error32, top=max(4 * int(run.params.k), 200))
            else:
                vector_rank = np.zeros(len(idx), np.int64)
            return _Ranks(fts_rank, bm25, vector_rank)
        return run.memo_query("ranks", make)

    def component_values(self, run) -> Components:
        ranks, k = self._ranks(run), run.params.rrf_k
        terms = run.memo_query(("rrf", k), lambda: {"fts": C.rrf(ranks.fts_rank, k), "vector": C.rrf(ranks.vector_rank, k)})
        return Components(run.rows, terms, run.decay_factor())

    def rank(self, run):
        ranks, comps = self._ranks(run), self.component_values(run)
        s = self.combine(comps, run.params)
        sel = run.top_k(s, run.params.k)
        rows = run.rows[sel]
        a = run.arrays
        cos = run.exact_cosines(rows) if run.query_vector is not None else np.full(len(rows), np.nan)
        raw = {"relevance": np.where(a.has_embedding[rows], cos, np.nan), "bm25": ranks.bm25[sel],
               "fts_rank": ranks.fts_rank[sel], "vector_rank": ranks.vector_rank[sel]}
        if comps.factor is not None:
            raw["decay_factor"] = comps.factor[sel]
        hits = run.fts_hits()
        notes = []
        if hits is None:
            notes.append("no query text: vector ranks only")
        if run.query_vector is None:
            notes.append("no query vector: full-text ranks only")
        notes += [w for w in (known_fts_damage(run.store),) if w and hits is not None]
        return run.result(s, sel, raw, self.weighted_at(comps, run.params, sel), notes)


HYBRID = Hybrid(
    name="hybrid",
    description="FTS5 BM25 rank and vector rank fused by reciprocal rank fusion: 1/(60+fts_rank) + 1/(60+vector_rank)",
    source="the assistant memory (ADR 005 search_memory: FTS5 + sqlite-vec + RRF)",
    components=("fts", "vector"),
    knobs=("rrf_k",),
    defaults=dict(k=10),
    needs_vector=False,
)
