"""The dual-memory design (ADR-006): score = α·cosine + β·exp(-Δt/τ) + γ·importance/10, Δt in
hours since the memory's event time, added in that order."""
from __future__ import annotations

import numpy as np

from .. import components as C
from .base import ABG, LinearPreset, Static


class DualMemory(LinearPreset):
    def static(self, run) -> Static:
        a, idx = run.arrays, run.rows
        age = run.ref_time - a.event_time[idx]
        return Static(values={"recency": C.exp_recency(age, run.params.tau_hours), "importance": a.importance[idx] / 10},
                      extra={"age_hours": np.maximum(age, 0) / C.HOUR})


DUAL_MEMORY = DualMemory(
    name="dual-memory",
    description="score = α·cosine + β·exp(-Δt/τ) + γ·importance/10 (Δt in hours since the memory's event time)",
    source="the dual-memory design (ADR-006 dual memory, the Generative Agents function as written in the ADR)",
    components=("relevance", "recency", "importance"),
    weights=ABG,
    knobs=("tau_hours",),
    row_local=True,
    defaults=dict(alpha=0.5, beta=0.3, gamma=0.2, tau_hours=24.0, k=10),
)
