"""The retrieval presets: each one the scoring of one source system, with its defaults.

The formulas live beside their code in components.py (per-memory values) and engine.py
(how they are combined); this module only names the presets and their default parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

from .params import Params


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    source: str
    uses: frozenset          # Params fields that change this preset's scores (the UI greys the others)
    components: tuple        # names of the weighted components, in display order
    defaults: dict
    needs_vector: bool       # True: a text query must be embedded (hybrid can fall back to full-text)


_FILTERS = frozenset({"k", "as_of", "agents", "kinds", "tags", "time_range", "include_retired",
                      "protected_only", "confidence_decay"})

_ALL = (
    Preset(
        "dual-memory",
        "score = α·cosine + β·exp(-Δt/τ) + γ·importance/10 (Δt in hours since the memory's event time)",
        "the dual-memory design (ADR-006 dual memory, the Generative Agents function as written in the ADR)",
        _FILTERS | {"alpha", "beta", "gamma", "tau_hours"},
        ("relevance", "recency", "importance"),
        dict(alpha=0.5, beta=0.3, gamma=0.2, tau_hours=24.0, k=10),
        True,
    ),
    Preset(
        "generative-agents",
        "the Generative Agents code (retrieve.py new_retrieve): events and thoughts, recency = decay^rank "
        "over last-accessed order, all three min-max normalised, 0.5·recency + 3·relevance + 2·importance, top 30; "
        "several personas are each ranked on their own (as each one's code would) and merged by score",
        "Park et al. 2023, reverie/backend_server/persona/cognitive_modules/retrieve.py",
        _FILTERS | {"alpha", "beta", "gamma", "decay", "agent_weights"},
        ("relevance", "recency", "importance"),
        dict(alpha=3.0, beta=0.5, gamma=2.0, decay=0.995, k=30),
        True,
    ),
    Preset(
        "ada",
        "score = α·cosine + β·λ^(cycles ago) + γ·importance/10, λ = .995",
        "ADA cognitive memory (recall scoring)",
        _FILTERS | {"alpha", "beta", "gamma", "decay"},
        ("relevance", "recency", "importance"),
        dict(alpha=1.0, beta=1.0, gamma=1.0, decay=0.995, k=10),
        True,
    ),
    Preset(
        "hybrid",
        "FTS5 BM25 rank and vector rank fused by reciprocal rank fusion: 1/(60+fts_rank) + 1/(60+vector_rank)",
        "the assistant memory (ADR 005 search_memory: FTS5 + sqlite-vec + RRF)",
        _FILTERS | {"rrf_k"},
        ("fts", "vector"),
        dict(k=10),
        False,
    ),
    Preset(
        "working-memory",
        "score = importance × 1/(1 + age in hours) (the :balanced context assembly)",
        "HTM two-tier memory (ADR-002)",
        _FILTERS,
        ("importance×recency",),
        dict(k=10),
        False,
    ),
)

_BY_NAME = {p.name: p for p in _ALL}

#: preset name -> one-line description
PRESETS: dict[str, str] = {p.name: p.description for p in _ALL}


def preset(name: str) -> Preset:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None


def preset_params(name: str, **overrides) -> Params:
    """The preset's default Params (overrides applied on top)."""
    return Params(preset=preset(name).name, **{**preset(name).defaults, **overrides})
