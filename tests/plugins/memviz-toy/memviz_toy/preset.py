"""A retrieval preset: score = α·cosine + β·freshness, freshness = 1 / (1 + Δt/τ) (Δt in hours
since the memory's event time): a hyperbolic recency, its own component."""
from __future__ import annotations

import numpy as np

from memviz.retrieval.presets import LinearPreset, Static


class ToyRecency(LinearPreset):
    def static(self, run) -> Static:
        age_hours = np.maximum(run.ref_time - run.arrays.event_time[run.rows], 0) / 3600.0
        return Static(values={"freshness": 1.0 / (1.0 + age_hours / run.params.tau_hours)},
                      extra={"age_hours": age_hours})


TOY_RECENCY = ToyRecency(
    name="toy-recency",
    description="score = α·cosine + β/(1 + Δt/τ) (Δt in hours since the memory's event time)",
    source="memviz-toy, the example plugin",
    components=("relevance", "freshness"),
    weights={"relevance": "alpha", "freshness": "beta"},
    knobs=("tau_hours",),
    defaults=dict(alpha=0.4, beta=0.6, tau_hours=48.0, k=10),
)
