"""ADA cognitive memory (recall scoring): score = α·cosine + β·λ^(cycles ago) + γ·importance/10,
added as ADA writes it (its recency, importance, relevance terms in that order)."""
from __future__ import annotations

import numpy as np

from .. import components as C
from ..rowmeta import derived_cycles
from .base import ABG, LinearPreset, Static


class Ada(LinearPreset):
    def static(self, run) -> Static:
        a, idx, ref = run.arrays, run.rows, run.ref_time
        cycles = run.memo_store("cycles", lambda: derived_cycles(run.meta().cycle, a.event_time))
        # the current cycle is the latest one logged by the reference time
        exists = a.created_at <= ref
        current = cycles[exists].max() if exists.any() else cycles.max()
        ago = np.maximum(current - cycles[idx], 0.0)
        return Static(values={"recency": C.cycle_recency(ago, run.params.decay), "importance": a.importance[idx] / 10},
                      extra={"cycles_ago": ago})


ADA = Ada(
    name="ada",
    description="score = α·cosine + β·λ^(cycles ago) + γ·importance/10, λ = .995",
    source="ADA cognitive memory (recall scoring)",
    components=("relevance", "recency", "importance"),
    order=("recency", "importance", "relevance"),
    weights=ABG,
    knobs=("decay",),
    defaults=dict(alpha=1.0, beta=1.0, gamma=1.0, decay=0.995, k=10),
)
