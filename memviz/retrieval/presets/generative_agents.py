"""The Generative Agents code (Park et al. 2023, reverie/backend_server/persona/cognitive_modules/
retrieve.py `new_retrieve`), exactly:

- candidates: events and thoughts (not chats) whose embedding_key lacks "idle" (candidates.ga_rule;
  a memory without GA attributes counts unless it is dialogue);
- ordered by last_accessed ascending, ties in store order = events newest first, then thoughts
  newest first (candidates.ga_order, rebuilt from node_count);
- recency of the i-th in that order (i from 1) = recency_decay ** i: a rank, not a time (so the
  least recently accessed memory gets the highest recency, as in the code);
- relevance = cosine; importance = poignancy;
- each of the three min-max normalised to [0, 1] over the candidates, all equal -> 0.5;
- score = recency_w·recency·0.5 + relevance_w·relevance·3 + importance_w·importance·2 (β, α, γ
  default to 0.5, 3, 2; the *_w are the persona's scratch weights, default 1);
- top 30 by default, ties in candidate order (stable sort, like Python's sorted);
- all in float64, the cosines exact where a near-tie could depend on float32 rounding.

Several personas: each is ranked on its own, as each persona's own retrieve.py would (its
recency order, its min and max); the lists are then merged by score. With `params.agent_weights`
(default) the per-agent recency_w, relevance_w, importance_w and recency_decay of memviz_meta
"ga_weights" apply, so an agent's stored recency_decay wins over `params.decay`.
"""
from __future__ import annotations

import numpy as np

from .. import components as C
from ..candidates import ga_order, ga_rule
from .base import ABG, LinearPreset, Static

_WEIGHTED = ("recency", "relevance", "importance")


class GenerativeAgents(LinearPreset):
    def candidates(self, rows, arrays, meta, params):
        rows = rows[ga_rule(arrays, meta())[rows]]
        return ga_order(arrays, meta(), rows, params.as_of)

    def static(self, run) -> Static:
        a, idx = run.arrays, run.rows
        w = self._row_weights(run)
        decays = w.pop("recency_decay")
        groups = run.personas().groups
        imp_raw = a.importance[idx]
        rec_raw, rec, imp, rank = (np.empty(len(idx)) for _ in range(4))
        for pos in groups:
            rec_raw[pos] = C.ga_rank_recency(decays[pos])
            rec[pos], imp[pos] = C.minmax(rec_raw[pos]), C.minmax(imp_raw[pos])
            rank[pos] = np.arange(1, len(pos) + 1)
        notes = []
        if len(groups) > 1:
            notes.append(f"{len(groups)} personas: each is ranked on its own (its own recency order and "
                         "min-max), as the Generative Agents code does, and the lists merged by score; "
                         "choose one agent to see one persona's retrieval")
        return Static(values={"recency": rec, "importance": imp}, row_weight=w, notes=notes,
                      extra={"recency_rank": rank.astype(np.int64), "recency_decayed": rec_raw, "poignancy": imp_raw})

    def _row_weights(self, run) -> dict:
        """Per-row recency_w / relevance_w / importance_w and recency_decay of each memory's agent
        (weights default to 1, the decay to params.decay); a weight 1 for every row is 1.0."""
        idx, params = run.rows, run.params
        n = len(idx)
        out = {c: 1.0 for c in _WEIGHTED}
        out["recency_decay"] = np.full(n, params.decay)
        stored = run.memo_store("weights", lambda: read_ga_weights(run.store))
        if not (params.agent_weights and stored):
            return out
        agents = run.arrays.agent[idx]
        cols = {c: np.ones(n) for c in _WEIGHTED}
        for agent, w in stored.items():
            rows = agents == agent
            if not rows.any():
                continue
            for c in cols:
                cols[c][rows] = w.get(c + "_w", 1.0)
            out["recency_decay"][rows] = w.get("recency_decay", params.decay)
        for c, v in cols.items():
            out[c] = v if np.any(v != 1.0) else 1.0
        return out


def read_ga_weights(store) -> dict:
    """memviz_meta "ga_weights": {agent: {recency_w, relevance_w, importance_w, recency_decay}};
    anything malformed is ignored (the defaults apply)."""
    try:
        raw = store.meta("ga_weights", {}) or {}
    except ValueError:
        return {}
    out = {}
    if isinstance(raw, dict):
        for agent, w in raw.items():
            if isinstance(w, dict):
                clean = {}
                for k in ("recency_w", "relevance_w", "importance_w", "recency_decay"):
                    try:
                        v = float(w[k])
                    except (KeyError, TypeError, ValueError):
                        continue
                    if np.isfinite(v):
                        clean[k] = v
                out[str(agent)] = clean
    return out


GENERATIVE_AGENTS = GenerativeAgents(
    name="generative-agents",
    description="the Generative Agents code (retrieve.py new_retrieve): events and thoughts, recency = decay^rank "
                "over last-accessed order, all three min-max normalised, 0.5·recency + 3·relevance + 2·importance, "
                "top 30; several personas are each ranked on their own (as each one's code would) and merged by score",
    source="Park et al. 2023, reverie/backend_server/persona/cognitive_modules/retrieve.py",
    components=("relevance", "recency", "importance"),
    order=("recency", "relevance", "importance"),   # recency_w*rec*gw[0] + relevance... + importance...
    weights=ABG,
    knobs=("decay", "agent_weights"),
    uses_ref_time=False,
    relevance_minmax=True,
    candidate_rule="generative-agents",
    defaults=dict(alpha=3.0, beta=0.5, gamma=2.0, decay=0.995, k=30),
)
