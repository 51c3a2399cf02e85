"""Judged queries ranked by the retrieval engine, and re-ranked for any weights fast: what the
live quality readout, the fit and `memviz judge eval` ask.

    ev = JudgedEvaluator(store, judged_set, params, task=task)   # the costly part, once
    ev.metrics(params.replace(alpha=0.7))                          # a slider move: milliseconds
    ev.near_misses("q3", params); ev.what_would_change(a, b); ev.wins_losses(a, pinned)

The precompute (`JudgedEvaluator(...)`, off the GUI thread: it takes a memviz.tasks.Task for
progress and cancel) embeds every query text in one batch with the store's embedder, runs each
judged query through `Engine.components` — its own `as_of`, agent/kind/tag filters; a `like`
query is that memory's vector, the memory itself left out, as the engine does — and keeps,
per query, only the candidates that can reach its top `depth` for any non-negative weights
(prune.py: the others are dominated by `depth` + MARGIN kept ones). A ranking is then the
preset's own `combine` over the kept candidates (the engine's arithmetic, so the same float64
scores), best first, ties in candidate order, checked by prune.certified: where many exact
ties at the cut leave a doubt (a weight on importance alone, say), that query is ranked over
all its candidates. The rankings are exact for the components the engine gives
(`Engine.components`): its relevance comes from float32 products, where `Engine.score` rescores
the rows near the k-th exactly, so the two agree but for near-ties within `cosine_error`.

Knobs. A linear preset's components other than relevance (recency, importance) depend on the
candidates, the reference time and the knobs (τ, decay), not on the query; they are computed
once per group of queries with the same candidates and time, for each knob value asked (an
engine kept for that: its query a fixed vector, or the `like` memory), and relevance, the
query's own, once. The pruning holds for every knob value whose components keep the order of
a key made at three values (the knob's range ends and the start; recency transforms —
exp(-Δt/τ), λ^cycles, decay^rank — keep the order of age): that is checked for each value
asked, and a group where it fails is ranked in full. A change of anything else (the preset,
a filter, a knob that is not searched: GA's agent_weights, hybrid's rrf_k) needs a new
evaluator (`accepts`). Negative weights: every query ranked in full.

The rankings go `depth` deep (DEPTH, 100): mrr counts a first relevant memory below it as 0, as
trec_eval does with a run of that depth. A relevant memory's exact rank below the depth (the
near misses) is counted over all the query's candidates, one query at a time.

The agent's own recent queries: a store that records them (`MemoryStore.agent_queries`: HTM's
operations log; memviz's own stores do not record the queries, only that a memory was
recalled) gives what `recent_changes` compares under two settings.

One evaluator is used by one thread at a time (the window's "engine" lane).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..blas import one_blas_thread
from ..embed import Embedder, EmbedderUnavailable, EmbeddingError, embedder_for
from ..retrieval import Engine, Params
from ..retrieval.presets import LinearPreset, preset
from ..retrieval.presets.base import Components
from ..store.clock import store_clock
from ..store.judged import AgentQuery
from ..tasks import Task, quiet
from . import prune
from .compare import TopKChange, WinsLosses, held_back_by, top_k_changes, wins_losses
from .fit import LOG, LOG_COMPLEMENT, Knob
from .metrics import Evaluation, Evaluator, measure
from .model import JudgedQuery, JudgedSet
from .successors import Successors

#: how deep rankings go (mrr reads down to the first relevant memory within it)
DEPTH = 100
#: candidates are kept unless dominated by DEPTH + MARGIN others: a few exact ties at the cut
#: (duplicates) leave the pruned ranking certified
MARGIN = 16
#: candidates are also kept for rankings this deep alone (a fit of nDCG@10, recall@10, P@10
#: reads no further): far fewer than for DEPTH, and a fit's every ranking costs that much less
SHALLOW = 10
#: the knobs a fit searches (and the evaluator re-ranks without a new precompute), their ranges
KNOBS = {
    "tau_hours": Knob("tau_hours", 0.5, 24.0 * 730, LOG),           # half an hour to two years
    "decay": Knob("decay", 0.9, 0.99999, LOG_COMPLEMENT),           # per rank (GA) or cycle (ADA)
}
#: the queries' cosines are made by one matrix product per _BATCH queries and kept (float32, for
#: the re-rankings that need every candidate) while they take at most this many values (4 bytes each)
KEEP_COSINES = 64_000_000
_BATCH = 64
#: the fields a judged query sets for itself (the evaluator's params give the rest)
QUERY_FIELDS = ("as_of", "agents", "kinds", "tags", "time_range")
_CACHED = 32


def query_params(params: Params, q: JudgedQuery) -> Params:
    """`params` for one judged query: its own moment and filters (none: all agents, kinds, tags)."""
    return params.replace(as_of=q.as_of, agents=q.agents or None, kinds=q.kinds or None, tags=q.tags or None,
                          time_range=None)


class _Prepared(Embedder):
    """The store's embedder, with the judged query texts embedded beforehand in one batch: the
    engine's set_query asks `embed_one` for each, and gets the same vector."""

    def __init__(self, inner: Embedder, texts: Sequence[str]):
        self.inner, self.model, self.dim = inner, inner.model, inner.dim
        texts = list(dict.fromkeys(t for t in texts if t and t.strip()))
        self.vectors = dict(zip(texts, inner.embed(texts))) if texts else {}

    def _embed(self, texts):
        return self.inner._embed(texts)

    def embed(self, texts) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_one(self, text: str) -> np.ndarray:
        v = self.vectors.get(text)
        return self.inner.embed_one(text) if v is None else v


@dataclass
class _Group:
    """Queries with the same candidates and reference time (and the same example left out):
    their components other than relevance are the same arrays."""

    params: Params            # one member's params (the group's filters and time)
    like: str | None
    rows: np.ndarray
    cosines: np.ndarray | None = None   # the example's cosines (a `like` group), from the batch product
    factor: np.ndarray | None = None    # the confidence-decay factor (it depends on the candidates and time)
    statics: OrderedDict = field(default_factory=OrderedDict)   # knob values -> {component: values}
    keys: dict = field(default_factory=dict)                    # component -> dense rank (the pruning key)
    orders: dict = field(default_factory=dict)                  # component -> (order, same key, other part)
    valid: dict = field(default_factory=dict)                   # knob values -> the key order holds
    parts: list = field(default_factory=list)                   # (positions, their static keys cut for pruning)


@dataclass
class _Kept:
    """What one query keeps for rankings down to one depth (a level)."""

    positions: np.ndarray         # candidate positions kept (ascending)
    pruned: bool                  # False: every candidate is kept
    values: dict                  # component -> values there (relevance; every component for other presets)
    factor: np.ndarray | None     # the confidence-decay factor there


@dataclass
class _Query:
    judged: JudgedQuery
    params: Params
    rows: np.ndarray              # the candidates, in the engine's scoring order
    group: _Group | None          # None: a preset that ranks itself (every component per query)
    levels: dict                  # depth -> _Kept (candidates that can reach the top `depth`)


@dataclass
class _Layout:
    """Every query's kept candidates for one level, as flat arrays (one segment per query)."""

    values: dict                  # the query-dependent components
    factor: np.ndarray | None
    offsets: np.ndarray           # segment q is offsets[q]:offsets[q + 1]
    rows: np.ndarray              # the candidate rows (into the arrays)
    pruned: np.ndarray            # per query: something was pruned (the certificate is needed)
    by_group: list                # (group, its queries, their flat positions, candidate positions)


@dataclass(frozen=True)
class HeldBack:
    """A relevant memory outside the top k, and why: its rank over all the query's candidates
    (None: it is no candidate — filtered out, retired, or made after the query's time), the
    component where it falls furthest short of the k-th result and by how much (weighted, as
    the score adds them), and both memories' weighted components."""

    memory_id: str
    grade: int
    rank: int | None
    component: str | None = None
    short_by: float = 0.0
    contributions: Mapping[str, float] = field(default_factory=dict)
    cutoff: Mapping[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        if self.rank is None:
            return f"{self.memory_id}: not a candidate (filtered out, retired, or made after the query's time)"
        if self.component is None:
            return f"{self.memory_id}: rank {self.rank}"
        return (f"{self.memory_id}: rank {self.rank}, {self.component} "
                f"{self.contributions.get(self.component, 0.0):.3g} (the k-th result has {self.cutoff[self.component]:.3g})")


@dataclass(frozen=True)
class RecentChange:
    """One of the agent's own recent queries whose top k would change."""

    query: AgentQuery
    change: TopKChange


class JudgedEvaluator:
    """A judged set ranked by one store's engine under one preset; see the module's docstring."""

    def __init__(self, store, judged: JudgedSet, params: Params, *, arrays=None, embedder: Embedder | None = None,
                 now: float | None = None, depth: int = DEPTH, task: Task | None = None):
        if not len(judged):
            raise ValueError("the judged set holds no query")
        if depth < 1:
            raise ValueError(f"the depth must be at least 1, not {depth}")
        task = task or quiet()
        self.store, self.judged, self.depth = store, judged, int(depth)
        self.preset = preset(params.preset)
        self.base = params
        self.arrays = arrays if arrays is not None else store.arrays()
        self.now = float(now if now is not None else store_clock(store, self.arrays).now())
        self._linear = isinstance(self.preset, LinearPreset)
        self._dynamic = ("relevance",) if self._linear else tuple(self.preset.components)
        self._static = tuple(c for c in self.preset.order if c not in self._dynamic)
        self._knobs = tuple(self.preset.knobs)
        self.searchable = tuple(k for k in self._knobs if self._linear and k in KNOBS)
        self._kappa0 = self._kappa(params)
        self._rel_fixed = True   # relevance does not move with the searched knobs (checked)
        self._evaluators: dict[tuple, Evaluator] = {}
        self._cache: OrderedDict = OrderedDict()
        self._full: OrderedDict = OrderedDict()
        self._flat: OrderedDict = OrderedDict()
        self._layouts: dict[int, _Layout] = {}
        self.query_ids = judged.ids
        #: the depths candidates are pruned for: the evaluator's, and SHALLOW (a fit's nDCG@10)
        self.levels = tuple(sorted({self.depth, min(SHALLOW, self.depth)}))
        self._ids = np.asarray(self.arrays.ids)
        self.timings: dict[str, float] = {}
        t0 = time.perf_counter()
        self._prepared = self._embedder(embedder, task.part(0.0, 0.1))
        self._engine = Engine(store, self.arrays, embedder=self._prepared, now=self.now)
        self._static_engine: Engine | None = None
        self._static_like: object = ()
        self.timings["embed"] = time.perf_counter() - t0
        self._groups: dict[tuple, _Group] = {}
        self._queries: list[_Query] = []
        self._cos: dict[str, np.ndarray] = {}   # query id -> its cosines (float32) from the batch product
        self._successors = Successors(store.supersede_links())
        self._precompute(task.part(0.1, 1.0))
        self.timings["precompute"] = time.perf_counter() - t0
        task.progress(1.0, f"{len(self._queries)} judged queries ready")

    # ------------------------------------------------------------------ the precompute
    def _embedder(self, given: Embedder | None, task: Task) -> Embedder | None:
        texts = [q.query for q in self.judged if q.like is None]
        if not texts:
            return given
        task.progress(0.0, f"Embedding {len(texts)} judged queries")
        try:
            inner = given if given is not None else embedder_for(self.arrays.embedding_model, self.arrays.dim or None)
            if inner.dim != self.arrays.dim:
                raise EmbedderUnavailable(f"{inner.model} makes {inner.dim}-d vectors, but the store's have {self.arrays.dim}")
            return _Prepared(inner, texts)
        except (EmbedderUnavailable, EmbeddingError) as e:
            if self.preset.needs_vector:
                raise ValueError(f"cannot embed the judged queries' texts: {e}. Judged queries that query by example "
                                 "(\"like\": a memory id) can be evaluated without an embedder.") from None
            return given

    def _precompute(self, task: Task) -> None:
        problems = []
        queries = list(self.judged)
        n = len(queries)
        vectors = self._vectors(queries)
        batch = sum(v is not None for v in vectors) * len(self.arrays) <= KEEP_COSINES
        for start in range(0, n, _BATCH):
            chunk = queries[start:start + _BATCH]
            cos = self._cosines(vectors[start:start + _BATCH]) if batch else [None] * len(chunk)
            for j, q in enumerate(chunk):
                task.check()
                if (start + j) % 10 == 0:
                    task.progress((start + j) / n, f"Ranking judged query {start + j + 1} of {n}")
                qp = query_params(self.base, q)
                if cos[j] is not None:
                    self._cos[q.id] = cos[j]
                try:
                    comps = self._components(self._engine, q, qp)
                except (ValueError, EmbedderUnavailable) as e:
                    problems.append(f"query {q.id!r}: {e}")
                    continue
                group = self._group_of(q, qp, comps) if self._linear else None
                self._queries.append(self._prepare_query(self._followed(q, comps.rows), qp, comps, group))
        if problems:
            raise ValueError(f"{len(problems)} judged quer{'y' if len(problems) == 1 else 'ies'} cannot be ranked: "
                             + "; ".join(problems[:5]) + (" …" if len(problems) > 5 else ""))
        #: the set as measured (`judged` stays the set given): each query's grades of corrected
        #: memories moved to what replaced them
        self.measured = JudgedSet(self.judged.name, tuple(q.judged for q in self._queries))
        self._index = {q.judged.id: q for q in self._queries}
        if self._linear and self.searchable:
            self._check_relevance_is_query_only()

    def _followed(self, q: JudgedQuery, rows: np.ndarray) -> JudgedQuery:
        """`q` with the grades of its corrected memories on their successors (successors.py)."""
        if not any(m in self._successors for m in q.relevant):
            return q
        candidate = np.zeros(len(self.arrays), bool)
        candidate[rows] = True

        def is_candidate(memory_id: str) -> bool:
            i = self.arrays.index_of(memory_id)
            return i is not None and bool(candidate[i])
        return self._successors.follow(q, is_candidate)

    def _vectors(self, queries: list[JudgedQuery]) -> list[np.ndarray | None]:
        """Each query's vector (None: it has none — no embedder, or an example without one)."""
        embedder = self._prepared
        out = []
        for q in queries:
            if q.like is not None:
                i = self.arrays.index_of(q.like)
                out.append(self.arrays.embedding[i] if i is not None and self.arrays.has_embedding[i] else None)
            else:
                out.append(embedder.vectors.get(q.query) if isinstance(embedder, _Prepared) else None)
        return out

    def _cosines(self, vectors: list[np.ndarray | None]) -> list[np.ndarray | None]:
        """Every row's cosine with each of `vectors`, from one float32 matrix product (one BLAS
        thread: the same values every run), as the engine's own product would give them within
        its error bound (components.relevance_error_bound holds for any summation order)."""
        have = [i for i, v in enumerate(vectors) if v is not None]
        out: list[np.ndarray | None] = [None] * len(vectors)
        if have and len(self.arrays):
            with one_blas_thread():
                product = np.stack([vectors[i] for i in have]).astype(np.float32) @ self.arrays.embedding.T
            for j, i in enumerate(have):
                out[i] = product[j]
        return out

    def _components(self, engine: Engine, q: JudgedQuery, params: Params) -> Components:
        cos = self._cos.get(q.id)
        if q.like is not None:
            engine.set_query(like=q.like, cosines=cos)
        else:
            try:
                engine.set_query(q.query, cosines=cos)
            except EmbedderUnavailable:
                if self.preset.needs_vector:
                    raise
        return engine.components(params)

    def _group_of(self, q: JudgedQuery, qp: Params, comps: Components) -> _Group:
        key = (*(getattr(qp, f) for f in QUERY_FIELDS), q.like)
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Group(qp, q.like, comps.rows, self._cos.get(q.id) if q.like is not None else None,
                                           comps.factor)
            base = {c: comps.values[c] for c in self._static}
            g.statics[self._kappa0] = base
            self._make_keys(g, base)
        elif not np.array_equal(g.rows, comps.rows):
            raise AssertionError(f"query {q.id!r}: the engine gave another candidate set for the same filters")
        return g

    def _make_keys(self, g: _Group, base: dict) -> None:
        """Each static component's pruning key: the order of its values at the searched knobs'
        range ends and the start (the slowest-decaying end first: it resolves the most). A
        preset that normalises per persona (Generative Agents' min-max over each agent's
        memories) keeps that order only within each persona: then the keys are ordered, and
        candidates pruned, persona by persona (a dominator is of the same persona)."""
        at = [base]
        if self.searchable:
            for end in ("hi", "lo"):
                kappa = self._kappa(self.base.replace(**{k: getattr(KNOBS[k], end) for k in self.searchable}))
                at.insert(0 if end == "hi" else len(at), self._statics(g, kappa, check=False))
        personas = np.unique(self.arrays.agent[g.rows], return_inverse=True)[1] if len(g.rows) else np.zeros(0, int)
        for split in (None, personas):
            if split is not None and (len(split) == 0 or split.max() == 0):
                break
            for c in self._static:
                cols = [a[c] for a in at]
                order = np.lexsort(tuple(reversed(cols)) + (() if split is None else (split,)))  # last key: primary
                same = np.ones(max(len(order) - 1, 0), bool)
                for col in cols:
                    sv = col[order]
                    same &= sv[1:] == sv[:-1]
                other = np.zeros(len(same), bool) if split is None else split[order][1:] != split[order][:-1]
                same &= ~other
                rank = np.empty(len(order), np.float64)
                rank[order] = np.concatenate(([0], np.cumsum(~same)))
                g.keys[c], g.orders[c] = rank, (order, same, other)
            if all(self._holds(g, a) for a in at):
                break
        parts = [np.arange(len(g.rows))] if split is None else [np.flatnonzero(split == k) for k in range(split.max() + 1)]
        g.parts = [(pos, [prune.buckets(g.keys[c][pos], distinct=256) for c in self._static]) for pos in parts]
        g.valid[self._kappa0] = self._holds(g, base)

    def _holds(self, g: _Group, statics: dict) -> bool:
        """Whether the static components `statics` keep the order of the group's keys (equal
        keys, equal values; within a persona when keyed by persona), and with the
        confidence-decay factor are not negative: then the pruning holds for them."""
        for c in self._static:
            if self.base.confidence_decay and not float(statics[c].min(initial=0.0)) >= 0:
                return False
            order, same, other = g.orders[c]
            d = np.diff(statics[c][order])
            if not (np.all(d[same] == 0) and np.all(d[~same & ~other] >= 0)):
                return False
        return True

    def _prepare_query(self, q: JudgedQuery, qp: Params, comps: Components, group: _Group | None) -> _Query:
        values = {c: comps.values[c] for c in self._dynamic}
        factor = comps.factor
        n = len(comps.rows)
        dims = [values[c] for c in self._dynamic] + ([group.statics[self._kappa0][c] for c in self._static] if group else [])
        if factor is not None:
            dims.append(factor)
        prunable = n > self.depth + MARGIN and all(not np.isnan(d).any() for d in dims) and (
            factor is None or all(float(d.min()) >= 0 for d in dims)) and (group is None or group.valid[self._kappa0])
        counts = np.zeros(n, np.int64)   # how many surely dominate each candidate (0: none counted)
        if prunable:
            for pos, static_cut in group.parts if group else [(np.arange(n), [])]:
                whole = len(pos) == n
                cut = [prune.buckets(values[c] if whole else values[c][pos]) for c in self._dynamic] + list(static_cut)
                if factor is not None:
                    cut.append(prune.buckets(factor if whole else factor[pos]))
                counts[pos] = prune.dominators(cut) if len(pos) > self.depth + MARGIN else 0
        levels = {}
        for depth in self.levels:
            kept = np.flatnonzero(counts < depth + MARGIN) if prunable else np.arange(n)
            levels[depth] = _Kept(kept, len(kept) < n, {c: v[kept] for c, v in values.items()},
                                  None if factor is None else factor[kept])
        return _Query(q, qp, comps.rows, group, levels)

    def _check_relevance_is_query_only(self) -> None:
        """The fast re-ranking over knobs takes relevance as the query's alone: checked on the
        first query at the searched knobs' range ends (else every knob change ranks in full)."""
        q = self._queries[0]
        kept = q.levels[self.depth]
        for end in ("lo", "hi"):
            p = q.params.replace(**{k: getattr(KNOBS[k], end) for k in self.searchable})
            comps = self._components(self._engine, q.judged, p)
            if not all(np.array_equal(comps.values[c][kept.positions], kept.values[c]) for c in self._dynamic):
                self._rel_fixed = False

    # ------------------------------------------------------------------ static components per knob value
    def _kappa(self, params: Params) -> tuple:
        return tuple(getattr(params, k) for k in self._knobs)

    def _statics(self, g: _Group, kappa: tuple, *, check: bool = True) -> dict:
        got = g.statics.get(kappa)
        if got is None:
            eng = self._static_engine_for(g)
            comps = eng.components(g.params.replace(**dict(zip(self._knobs, kappa))))
            if not np.array_equal(comps.rows, g.rows):
                raise AssertionError("the engine gave another candidate set for the same filters")
            got = g.statics[kappa] = {c: comps.values[c] for c in self._static}
            while len(g.statics) > 24:
                g.statics.popitem(last=False)
        else:
            g.statics.move_to_end(kappa)
        if check and kappa not in g.valid:
            g.valid[kappa] = self._holds(g, got)
        return got

    def _static_engine_for(self, g: _Group) -> Engine:
        """An engine whose query gives the group's candidates: a fixed vector (any query with no
        example left out has the same ones), or the group's example memory."""
        if self._static_engine is None:
            self._static_engine = Engine(self.store, self.arrays, embedder=None, now=self.now)
        if self._static_like != g.like:
            if g.like is None:   # the first unit vector: its cosines are the matrix's first column
                v = np.zeros(self.arrays.dim or 1, np.float32)
                v[0] = 1.0
                first = self.arrays.embedding[:, 0] if self.arrays.dim else np.zeros(len(self.arrays), np.float32)
                self._static_engine.set_query(vector=v, cosines=first)
            else:
                self._static_engine.set_query(like=g.like, cosines=g.cosines)
            self._static_like = g.like
        return self._static_engine

    # ------------------------------------------------------------------ what can be re-ranked here
    def accepts(self, params: Params) -> str | None:
        """Why `params` cannot be ranked by this evaluator (None: it can): another preset, or a
        change of something the precompute fixed (a filter, a knob that is not searched)."""
        if params.preset != self.base.preset:
            return f"the evaluator was prepared for the {self.base.preset} preset, not {params.preset}"
        for f in ("include_retired", "protected_only", "confidence_decay"):
            if getattr(params, f) != getattr(self.base, f):
                return f"{f} changed since the evaluator was prepared"
        for k, v0 in zip(self._knobs, self._kappa0):
            if getattr(params, k) != v0 and k not in self.searchable:
                return f"{k} changed since the evaluator was prepared (only {', '.join(self.searchable) or 'no knob'} can move)"
        return None

    def _check(self, params: Params) -> None:
        why = self.accepts(params)
        if why:
            raise ValueError(why + "; prepare a new evaluator for these parameters")

    # ------------------------------------------------------------------ ranking
    def _layout(self, level: int) -> _Layout:
        """The kept candidates (for rankings `level` deep) of every query as flat arrays, one
        segment per query: what does not move with the knobs, made once."""
        got = self._layouts.get(level)
        if got is None:
            kept = [q.levels[level] for q in self._queries]
            offsets = np.concatenate(([0], np.cumsum([len(k.positions) for k in kept]))).astype(np.int64)
            values = {c: np.concatenate([k.values[c] for k in kept]) if kept else np.zeros(0) for c in self._dynamic}
            factor = np.concatenate([k.factor for k in kept]) if kept and kept[0].factor is not None else None
            rows = np.concatenate([q.rows[k.positions] for q, k in zip(self._queries, kept)]) if kept else \
                np.zeros(0, np.int64)
            members: dict[int, tuple[_Group, list[int]]] = {}
            for i, q in enumerate(self._queries):
                if q.group is not None:
                    members.setdefault(id(q.group), (q.group, []))[1].append(i)
            by_group = []
            for g, queries in members.values():   # where each group's members sit in the flat arrays
                at = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in queries])
                pos = np.concatenate([kept[i].positions for i in queries])
                by_group.append((g, queries, at, pos))
            got = self._layouts[level] = _Layout(values, factor, offsets, rows, np.array([k.pruned for k in kept], bool),
                                                 by_group)
        return got

    def _flat_for(self, kappa: tuple, level: int):
        """The layout at `level` with the static components at `kappa`, and the queries that must
        be ranked in full there (a group whose keys do not hold at `kappa`)."""
        key = (kappa, level)
        got = self._flat.get(key)
        if got is not None:
            self._flat.move_to_end(key)
            return got
        lay = self._layout(level)
        full: set[int] = set()
        if kappa != self._kappa0 and self._linear and not self._rel_fixed:
            full = set(range(len(self._queries)))
        values = dict(lay.values)
        total = int(lay.offsets[-1])
        for c in self._static:
            values[c] = np.empty(total)
        for g, queries, at, pos in lay.by_group:
            statics = self._statics(g, kappa)
            if not g.valid[kappa]:
                full.update(i for i in queries if self._queries[i].levels[level].pruned)
            for c in self._static:
                if len(at) == total:
                    values[c] = statics[c][pos]
                else:
                    values[c][at] = statics[c][pos]
        got = (values, lay.factor, lay.offsets, lay.rows, lay.pruned, full)
        self._flat[key] = got
        while len(self._flat) > 8:
            self._flat.popitem(last=False)
        return got

    def _ranked(self, params: Params, d: int) -> list[np.ndarray]:
        """Each query's top `d` candidate rows (into the arrays), best first."""
        self._check(params)
        if not 1 <= d <= self.depth:
            raise ValueError(f"rankings go {self.depth} deep here; asked for {d}")
        level = min(depth for depth in self.levels if depth >= d)
        kappa = self._kappa(params)
        values, factor, offsets, flat_rows, pruned, full = self._flat_for(kappa, level)
        weights = {c: w for c, (_v, w) in zip(self.preset.order, self.preset.terms(values, params))}
        if any(w is not None and not w >= 0 for w in weights.values()):   # negative (or NaN): no pruning holds
            return [self._full_top(q, params, d) for q in self._queries]
        # no weight on what depends on the query: every query of a group ranks the same
        static_only = self._linear and all(weights[c] == 0 for c in self._dynamic)
        scores = self.preset.combine(Components(np.zeros(0), values, factor), params)
        tops, reach = prune.top_segments(scores, offsets, d)
        top_rows = flat_rows[np.maximum(tops, 0)]
        lengths = np.minimum(np.diff(offsets), d)
        doubt = (reach < 0) | (pruned & (reach >= level + MARGIN))
        doubt[list(full)] = True
        out = [top_rows[i, :m] for i, m in enumerate(lengths.tolist())]
        shared: dict[int, np.ndarray] = {}
        for i in np.flatnonzero(doubt).tolist():   # ties at the cut, NaN, or a knob value the keys do not hold for
            q = self._queries[i]
            if static_only and q.group is not None:
                g = id(q.group)
                if g not in shared:
                    shared[g] = self._group_top(q.group, params, kappa, d)
                out[i] = shared[g]
            else:
                out[i] = self._full_top(q, params, d)
        return out

    def _group_top(self, g: _Group, params: Params, kappa: tuple, d: int) -> np.ndarray:
        """The top `d` of a group's candidates when relevance weighs nothing: its static
        components alone (a relevance of 0 adds what relevance × 0 adds: nothing)."""
        statics = self._statics(g, kappa)
        values = {c: statics[c] if c in statics else np.zeros(len(g.rows)) for c in self.preset.order}
        s = self.preset.combine(Components(g.rows, values, g.factor), params)
        return g.rows[_top_all(s, d)]

    def components(self, query_id: str, params: Params) -> Components:
        """One query's candidates and every one's component values under `params`' knobs, as the
        engine gives them here (the rankings recombine these): what near misses and a brute-force
        check read."""
        self._check(params)
        return self._full_components(self._query(query_id), params)

    def _query(self, query_id: str) -> _Query:
        q = self._index.get(query_id)
        if q is None:
            raise KeyError(f"no judged query {query_id!r} in this evaluation")
        return q

    def _full_components(self, q: _Query, params: Params) -> Components:
        key = (q.judged.id, self._kappa(params))
        got = self._full.get(key)
        if got is None:
            got = self._components(self._engine, q.judged, q.params.replace(**{k: getattr(params, k) for k in self._knobs}))
            self._full[key] = got
            while len(self._full) > 8:
                self._full.popitem(last=False)
        else:
            self._full.move_to_end(key)
        return got

    def _full_top(self, q: _Query, params: Params, d: int) -> np.ndarray:
        comps = self._full_components(q, params)
        return comps.rows[_top_all(self.preset.combine(comps, params), d)]

    def rankings(self, params: Params, depth: int | None = None) -> dict[str, list[str]]:
        """{query id: memory ids of its top `depth` (default: the evaluator's), best first}."""
        d = self.depth if depth is None else int(depth)
        ranked = self._ranked(params, d)
        return {q.judged.id: self._ids[rows].tolist() for q, rows in zip(self._queries, ranked)}

    # ------------------------------------------------------------------ measures
    def measures_for(self, params: Params) -> tuple[str, ...]:
        """recall@k, nDCG@10, MRR and P@k, k the parameters' own."""
        k = int(params.k)
        return tuple(dict.fromkeys((f"recall@{k}", "ndcg@10", "mrr", f"p@{k}")))

    def _evaluator(self, measures: tuple[str, ...]) -> Evaluator:
        ev = self._evaluators.get(measures)
        if ev is None:
            ev = self._evaluators[measures] = Evaluator(self.measured.qrels(), measures)
        return ev

    def metrics(self, params: Params, measures: Iterable[str] | None = None) -> Evaluation:
        """The measures (default: measures_for(params)) of the rankings under `params`, overall
        and per query."""
        measures = tuple(measure(m).name for m in (self.measures_for(params) if measures is None else measures))
        key = (params, measures)
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
            return got
        depth = max((m.cutoff or self.depth) for m in map(measure, measures))
        got = self._evaluator(measures).evaluate(self.rankings(params, min(depth, self.depth)))
        self._cache[key] = got
        while len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return got

    def wins_losses(self, params: Params, baseline: Params, measure_name: str = "ndcg@10") -> WinsLosses:
        """Query by query, `params` against a pinned `baseline` on one measure."""
        return wins_losses(self.metrics(params, (measure_name,)).values(measure_name),
                           self.metrics(baseline, (measure_name,)).values(measure_name))

    def what_would_change(self, params_a: Params, params_b: Params) -> list[TopKChange]:
        """The judged queries whose top k (`params_b.k`) changes from `params_a` to `params_b`:
        the memories that enter and leave, with their ranks (to the evaluator's depth)."""
        return top_k_changes(self.rankings(params_a), self.rankings(params_b), int(params_b.k))

    def near_misses(self, query_id: str, params: Params) -> list[HeldBack]:
        """The query's relevant memories outside its top k (`params.k`), nearest the cut first,
        each with its rank over all the candidates and the component that held it back."""
        self._check(params)
        q = self._query(query_id)
        comps = self._full_components(q, params)
        s = self.preset.combine(comps, params)
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(1, len(order) + 1)
        where = np.full(len(self.arrays), -1, np.int64)
        where[comps.rows] = np.arange(len(comps.rows))
        k = min(int(params.k), len(order))
        cut = self.preset.weighted_at(comps, params, order[k - 1:k]) if k else {}
        cutoff = {c: float(v[0]) for c, v in cut.items()}
        out = []
        for mid, grade in q.judged.relevant.items():
            if grade < 1:
                continue
            row = self.arrays.index_of(mid)
            pos = -1 if row is None else int(where[row])
            if pos < 0:
                out.append(HeldBack(mid, grade, None))
                continue
            r = int(rank[pos])
            if r <= k:
                continue
            mine = {c: float(v[0]) for c, v in self.preset.weighted_at(comps, params, np.array([pos])).items()}
            comp, short = held_back_by(mine, cutoff) if cutoff else (None, 0.0)
            out.append(HeldBack(mid, grade, r, comp, short, mine, cutoff))
        return sorted(out, key=lambda h: (h.rank is None, h.rank or 0, -h.grade))

    def grid(self, params: Params, x: str, xs: Sequence[float], y: str, ys: Sequence[float],
             measure_name: str = "ndcg@10", task: Task | None = None) -> np.ndarray:
        """The mean of one measure over a grid of two parameters (weights or searched knobs) at
        `params`' others: values[j, i] for ys[j], xs[i] (the picture of the metric over α × β
        with the current and the fitted point marked). `task`: progress per row, cancel."""
        task = task or quiet()
        out = np.empty((len(ys), len(xs)))
        for j, yv in enumerate(ys):
            task.check()
            task.progress(j / max(len(ys), 1), f"{measure_name} over {x} × {y}: row {j + 1} of {len(ys)}")
            for i, xv in enumerate(xs):
                p = params.replace(**{x: float(xv), y: float(yv)})
                out[j, i] = self.metrics(p, (measure_name,)).means[measure(measure_name).name]
        task.progress(1.0, f"{measure_name} over {x} × {y}")
        return out

    def metric_of(self, params: Params, measure_name: str):
        """The function the fit driver asks (fit.MetricOf): a point (weights and knobs) -> each
        query's value of one measure under `params` with that point."""
        def of(point: dict, query_ids: Sequence[str]) -> dict[str, float]:
            values = self.metrics(params.replace(**point), (measure_name,)).values(measure_name)
            return {qid: values[qid] for qid in query_ids}
        return of

    # ------------------------------------------------------------------ the agent's own queries
    def recent_changes(self, params_a: Params, params_b: Params, limit: int = 50) -> list[RecentChange]:
        """The agent's own recent queries (where the store records them) whose top k
        (`params_b.k`) changes from `params_a` to `params_b`: each run at its own time, over the
        time range it searched, ranked exactly by the engine."""
        asked = self.store.agent_queries(limit)
        out = []
        for aq in asked:
            try:
                self._engine.set_query(aq.text)
            except (EmbedderUnavailable, ValueError):
                continue
            ranked = {}
            for name, p in (("a", params_a), ("b", params_b)):
                res = self._engine.score(p.replace(as_of=aq.at, time_range=aq.time_range, agents=None, kinds=None,
                                                   tags=None, k=max(int(p.k), int(params_b.k))))
                ranked[name] = res.ids
            change = top_k_changes({aq.text: ranked["a"]}, {aq.text: ranked["b"]}, int(params_b.k))
            if change:
                out.append(RecentChange(aq, change[0]))
        return out

    # ------------------------------------------------------------------ what it kept
    def kept_sizes(self, depth: int | None = None) -> list[int]:
        """How many candidates each query keeps for rankings `depth` deep (default: the
        evaluator's; its candidates when nothing is pruned)."""
        level = min(d for d in self.levels if d >= (depth or self.depth))
        return [len(q.levels[level].positions) for q in self._queries]

    def candidate_sizes(self) -> list[int]:
        return [len(q.rows) for q in self._queries]


def _top_all(s: np.ndarray, d: int) -> np.ndarray:
    """Positions of the `d` best of `s`, best first, ties in position order (NaN last, as
    np.argsort puts it)."""
    t = prune.top(s, d)
    return np.argsort(-s, kind="stable")[:d] if t is None else t


def fit_knobs(names: Iterable[str]) -> tuple[Knob, ...]:
    """The searched knobs among `names` (a preset's knobs), with their ranges."""
    return tuple(KNOBS[k] for k in names if k in KNOBS)


__all__ = ["DEPTH", "HeldBack", "JudgedEvaluator", "KNOBS", "MARGIN", "RecentChange", "fit_knobs", "query_params"]
