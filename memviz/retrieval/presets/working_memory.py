"""HTM's two-tier memory (ADR-002, the :balanced context assembly): score = importance × 1/(1 + age
in hours), age since creation. Not a weighted sum: one component, no weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import components as C
from .base import Components, Preset

_SCORE = "importance×recency"


@dataclass(frozen=True)
class _Parts:
    recency: np.ndarray
    importance: np.ndarray
    score: np.ndarray
    age_hours: np.ndarray


class WorkingMemory(Preset):
    def _parts(self, run) -> _Parts:
        def make():
            a, idx = run.arrays, run.rows
            age = run.ref_time - a.created_at[idx]
            rec, s = C.working_memory(a.importance[idx], age)
            return _Parts(rec, a.importance[idx], s, np.maximum(age, 0) / C.HOUR)
        return run.memo_candidates(("parts", run.ref_time), make)

    def component_values(self, run) -> Components:
        return Components(run.rows, {_SCORE: self._parts(run).score}, run.decay_factor())

    def rank(self, run):
        parts, comps = self._parts(run), self.component_values(run)
        s = self.combine(comps, run.params)
        sel = run.top_k(s, run.params.k)
        raw = {"recency": parts.recency[sel], "importance": parts.importance[sel], "age_hours": parts.age_hours[sel]}
        if comps.factor is not None:
            raw["decay_factor"] = comps.factor[sel]
        return run.result(s, sel, raw, self.weighted_at(comps, run.params, sel))


WORKING_MEMORY = WorkingMemory(
    name="working-memory",
    description="score = importance × 1/(1 + age in hours) (the :balanced context assembly)",
    source="HTM two-tier memory (ADR-002)",
    components=(_SCORE,),
    defaults=dict(k=10),
    needs_vector=False,
)
