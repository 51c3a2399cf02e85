"""What a retrieval preset is: an object that owns its scoring, and what the engine lends it.

A preset declares its name, formula, defaults and components, and supplies what differs from
the other presets; the engine (engine.py) supplies what they share: the candidates (filters,
as-of), the query's cosines (int8 / float32 first pass, exact rescoring), the confidence-decay
factor and the caches. Two kinds:

- `LinearPreset`: score = the sum, in the preset's `order`, of weight × component (× the
  confidence-decay factor), in float64. `relevance` (the query's cosine, min-max normalised per
  persona when `relevance_minmax`) is the engine's; the preset's `static` gives the other
  components over the candidates. The engine ranks it with its cascade, which keeps the top k
  those of exact scoring (engine.py's docstring).
- any other `Preset` ranks itself (`rank`) from what the `Run` lends it (hybrid's rank fusion,
  working-memory's product).

Either way `component_values(run)` gives the per-candidate component values for one query and one
setting of the preset's knobs, and `combine(components, params)` the scores for any weights:
what an evaluator that scores many weight settings recombines without the top-k cascade.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from ...store.arrays import MemoryArrays
from ...store.interface import MemoryStore
from .. import fastpass
from ..params import Params, Result
from ..rowmeta import RowMeta

#: Params fields every preset honours: which memories are candidates, how many results, the decay factor
FILTERS = frozenset({"k", "as_of", "agents", "kinds", "tags", "time_range", "include_retired",
                     "protected_only", "confidence_decay"})

#: the usual weights: alpha/beta/gamma weigh relevance/recency/importance (GLOSSARY)
ABG = MappingProxyType({"relevance": "alpha", "recency": "beta", "importance": "gamma"})


@dataclass(frozen=True, eq=False, kw_only=True)
class Preset:
    """One preset. Register it with `register_preset` (presets/registry.py); the query panel and
    `memviz query --preset` list what is registered.

    A preset that is not a LinearPreset implements `rank` and `component_values` (see hybrid.py)."""

    name: str
    description: str                 # the formula in one line
    source: str                      # the system (and code) it reproduces
    components: tuple[str, ...]      # names of the scored components, in display order (Result.weighted)
    defaults: Mapping[str, Any]      # Params fields -> this preset's defaults
    needs_vector: bool = True        # a text query must be embedded to rank at all
    weights: Mapping[str, str] = field(default_factory=dict)  # component -> the Params field weighing it
    knobs: tuple[str, ...] = ()      # other Params fields the component values depend on (τ, decay, ...)
    order: tuple[str, ...] = ()      # the order the sum adds the components in (the source's formula,
                                     # left to right; float64 sums depend on it); () = `components`
    candidate_rule: Hashable = None  # None: every memory passing the filters; a preset overriding
                                     # `candidates` names its rule (presets with one rule share caches)
    row_local: bool = False          # a memory's score depends on its own values, the query and the
                                     # reference time only (no normalisation over the candidates, no
                                     # rank, no value of other rows): rows added or changed leave the
                                     # other rows' scores as they were, so a live refresh re-scores
                                     # only the rows it touched (memviz.session.live.query)
    _sum: tuple = field(init=False, repr=False, default=())   # (component, its weight's field) in order
    _knob_values: Callable = field(init=False, repr=False, default=None)   # params -> the knobs' values

    def __post_init__(self):
        if not self.order:
            object.__setattr__(self, "order", tuple(self.components))
        # read-only: one preset object serves every engine (a non-mapping is check_preset's to refuse)
        if isinstance(self.defaults, Mapping):
            object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        if isinstance(self.weights, Mapping):
            object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
            object.__setattr__(self, "_sum", tuple((c, self.weights.get(c)) for c in self.order))
        if isinstance(self.knobs, tuple) and all(isinstance(k, str) for k in self.knobs):
            object.__setattr__(self, "_knob_values", attrgetter(*self.knobs) if self.knobs else _no_knobs)

    @property
    def uses(self) -> frozenset:
        """The Params fields that change this preset's scores (the others are greyed out)."""
        return FILTERS | frozenset(self.weights.values()) | frozenset(self.knobs)

    @property
    def settings(self) -> tuple[str, ...]:
        """The Params fields a parameter set of this preset holds: its weights, knobs and k."""
        return (*dict.fromkeys(self.weights.values()), *self.knobs, "k")

    def candidates(self, rows: np.ndarray, arrays: MemoryArrays, meta: Callable[[], RowMeta],
                   params: Params) -> np.ndarray:
        """The candidates, in scoring order, from the rows passing the filters (ascending).
        `meta()` gives the RowMeta (tags, Generative Agents / ADA attributes)."""
        return rows

    def weight(self, component: str, params: Params) -> float | None:
        """The weight of a component under `params`; None for a component without one (it
        counts as it is, as with a weight of 1)."""
        name = self.weights.get(component)
        return None if name is None else getattr(params, name)

    def terms(self, values: Mapping[str, np.ndarray], params: Params) -> list[tuple[np.ndarray, float | None]]:
        """(component values, weight) in the order they are added: the combination rule."""
        return [(values[c], None if w is None else getattr(params, w)) for c, w in self._sum]

    def combine(self, components: Components, params: Params) -> np.ndarray:
        """Every candidate's score, as a new array: the sum over `order` of value × weight (×
        the decay factor), left to right in float64 (fastpass.weighted_sum, the engine's own
        first pass, so a linear preset's scores are the engine's but for its exact cosines)."""
        return fastpass.weighted_sum(self.terms(components.values, params), components.factor)[0]

    def weighted_at(self, components: Components, params: Params, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Each component's weighted contribution at candidate `positions` (they add up to the
        scores there), by `combine`'s arithmetic."""
        f = components.factor
        out = {}
        for c in self.components:
            w = self.weight(c, params)
            v = components.values[c][positions] if w is None else components.values[c][positions] * w
            out[c] = v if f is None else v * f[positions]
        return out

    def rank(self, run: Run) -> Result:
        """The top `run.params.k` of the candidates, explained."""
        raise NotImplementedError

    def component_values(self, run: Run) -> Components:
        """Every candidate's component values for the query and `run.params` (not its weights)."""
        raise NotImplementedError


def _no_knobs(params: Params) -> None:
    return None


@dataclass
class Static:
    """A linear preset's query-independent components over one candidate set (positions = the
    candidates, in scoring order)."""

    values: dict[str, np.ndarray]    # every component but relevance -> float64 per candidate
    extra: dict[str, np.ndarray] = field(default_factory=dict)   # shown beside them in Result.raw
    row_weight: dict[str, float | np.ndarray] = field(default_factory=dict)  # component -> a
                                     # per-candidate multiplier (Generative Agents' persona *_w); 1 when absent
    notes: list[str] = field(default_factory=list)   # said with every ranking


@dataclass(frozen=True, eq=False, kw_only=True)
class LinearPreset(Preset):
    """score = Σ over `order` of weight × component (× the decay factor). Subclasses compute
    the components other than relevance in `static`; a relevance-only preset needs none."""

    relevance_minmax: bool = False   # relevance min-max normalised over each persona's candidates
                                     # (the agents among them), with the exact extreme cosines
    uses_ref_time: bool = True       # `static` depends on the time recency is measured from

    def static(self, run: Run) -> Static:
        """The components other than relevance over `run.rows` (cached by `static_key`)."""
        return Static(values={})

    def static_key(self, params: Params, ref: float) -> tuple:
        """What `static` depends on besides the candidates: the reference time and the knobs."""
        return ref if self.uses_ref_time else None, self._knob_values(params)

    def rank(self, run: Run) -> Result:
        return run.rank_linear(self)

    def component_values(self, run: Run) -> Components:
        return run.linear_components(self)


@dataclass(slots=True)
class Components:
    """One query's per-candidate component values under one setting of a preset's knobs, ready
    to be recombined with any weights (`Preset.combine`): what `Engine.components` returns.

    In a linear preset relevance is the only component that depends on the query; the others
    depend on the candidates, the reference time and the knobs (τ, decay, ...)."""

    rows: np.ndarray                     # candidate rows (into engine.arrays), in scoring order
    values: Mapping[str, np.ndarray]     # component -> float64 per candidate, row weights applied
    factor: np.ndarray | None = None     # the confidence-decay factor per candidate; None: off
    cosine_error: float = 0.0            # bound on the error of each cosine behind relevance
                                         # (float32 products; the engine's top k use exact ones)


class Run(Protocol):
    """What one `Engine.score` (or `Engine.components`) call lends a preset. Positions index the
    candidates (`rows`); `memo_*` cache a preset's own values under keys it chooses."""

    params: Params
    arrays: MemoryArrays
    store: MemoryStore
    rows: np.ndarray                 # candidate rows, in scoring order
    ref_time: float                  # the time recency is measured from
    query_text: str | None
    query_vector: np.ndarray | None
    query_error: Exception | None    # why the text could not be embedded

    def meta(self) -> RowMeta: ...                     # of every row (read once per engine)
    def personas(self) -> Personas: ...                # the candidates grouped by agent
    def decay_factor(self) -> np.ndarray | None: ...   # per candidate, None when confidence_decay is off
    def memo_store(self, key: Hashable, make: Callable[[], Any]) -> Any: ...       # once per engine
    def memo_candidates(self, key: Hashable, make: Callable[[], Any]) -> Any: ...  # once per candidate set
    def memo_query(self, key: Hashable, make: Callable[[], Any]) -> Any: ...       # once per query and candidates
    def fts_hits(self) -> tuple[np.ndarray, np.ndarray] | None: ...  # (rows, bm25) of the query text
    def cosines32(self) -> np.ndarray: ...             # every row's float32-product cosine
    @property
    def cosine_error32(self) -> float: ...             # their error bound
    def exact_cosines(self, rows: np.ndarray) -> np.ndarray: ...
    def top_k(self, scores: np.ndarray, k: int) -> np.ndarray: ...  # best first, ties in candidate order
    def result(self, scores, positions, raw, weighted, notes=()) -> Result: ...  # scores: the
                                                       # call's own array (combine's): all_scores
    def rank_linear(self, preset: LinearPreset) -> Result: ...
    def linear_components(self, preset: LinearPreset) -> Components: ...


@dataclass
class Personas:
    """The candidates grouped by agent (one group when one agent): each persona of Generative
    Agents retrieves from its own memory."""

    groups: list[np.ndarray]         # candidate positions of each persona, in candidate order
    of: np.ndarray                   # each candidate's group number

    @classmethod
    def of_agents(cls, agents: np.ndarray) -> Personas:
        names, codes = np.unique(agents, return_inverse=True)
        if len(names) <= 1:
            return cls([np.arange(len(agents))], np.zeros(len(agents), np.intp))
        return cls([np.flatnonzero(codes == g) for g in range(len(names))], codes)

    @cached_property
    def concatenated(self) -> tuple[np.ndarray, np.ndarray]:
        """The candidate positions grouped by persona, and where each group starts in them."""
        return (np.concatenate(self.groups),
                np.concatenate(([0], np.cumsum([len(g) for g in self.groups])[:-1])))
