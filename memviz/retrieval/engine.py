"""The retrieval engine: scores every candidate memory with numpy, explains every result.

The scoring itself belongs to the presets (presets/): a preset says what its components are and
how they combine; the engine lends every preset what they share (presets/base.py `Run`): the
candidates, the query's cosines, the confidence-decay factor and the caches, and ranks every
linear preset (a weighted sum of components) with the cascade below.

`set_query` does the costly part once per query (embedding; on first use, one matrix-vector
product for the cosine of every row); `score(params)` only recombines cached arrays, so moving a weight
slider costs one pass over the candidates (fastpass.weighted_sum) and reads a few blocks of it.

Exactness. The first-pass cosines of all rows come from the int8 index of a large store
(quantized.py, whose docstring proves the bound and why no true top-k member can be dropped) or
a float32 product, each with an error bound `_rel_err` on every value; the formulas run in
float64. Every memory whose score is within twice the bound of the k-th score is rescored: after
an int8 first pass with float32 cosines of those rows only (bound `_delta`, ~1e-5, so only
near-ties remain), then the survivors with exact cosines (components.exact_relevance), and the
ranking is decided on the exact values, so the top
k are those of a float64 reference loop (see reference.py). The same cascade finds the exact
minimum and maximum cosine that a preset normalising relevance (Generative Agents) divides by.
`Result.all_scores` outside the rescored rows holds first-pass scores (colouring, not ranking).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..embed import EmbedderUnavailable, embedder_for
from ..store.clock import store_clock
from ..words import count
from . import components as C
from . import fastpass, quantized
from .candidates import filter_mask, last_accessed_at
from .hybrid import fts_rows
from .params import Params, Result
from .presets import Components, LinearPreset, Personas, Preset, Static, preset
from .rowmeta import load_row_meta

_EPS = np.finfo(np.float64).eps


class _Candidates:
    """The rows one filter setting scores, in scoring order, with caches that depend only on them."""

    def __init__(self, idx: np.ndarray, n: int):
        self.idx = idx
        self.all_rows = len(idx) == n and (n == 0 or (idx[0] == 0 and bool(np.all(np.diff(idx) == 1))))
        self.statics: dict[tuple, _LinearStatic] = {}   # (preset, its static key) -> its static part
        self.decay: dict[tuple, _Decay] = {}            # (reference time, as_of) -> the decay factor
        self.memo: dict = {}                            # presets' own values (Run.memo_candidates)
        self._personas: Personas | None = None

    def personas(self, arrays) -> Personas:
        if self._personas is None:
            self._personas = Personas.of_agents(arrays.agent[self.idx])
        return self._personas


@dataclass
class _Decay:
    """The assistant memory's confidence × exp(-decay_rate × days^0.8) of every candidate."""

    factor: np.ndarray

    @cached_property
    def max(self) -> float:
        return float(np.abs(self.factor).max())


@dataclass
class _LinearStatic:
    """A linear preset's static part and what the cascade derives from it once."""

    static: Static
    P: dict[str, np.ndarray]            # row weight × component: what a weight change recombines
    maxP: dict[str, float]              # max |P| of each (the sums' rounding bound)
    rel_weight: float | np.ndarray      # relevance's row weight
    no_vector: int                      # candidates without a vector of the store's model


@dataclass
class _Extremes:
    """The exact minimum and maximum cosine of each persona's candidates (per candidate, or one
    pair for one persona), and max 1/(hi - lo): how far an error in a cosine moves a normalised one."""

    lo: float | np.ndarray
    hi: float | np.ndarray
    scale: float


@dataclass
class _Relevance:
    """One query's relevance component over one candidate set, from the first-pass cosines."""

    P: np.ndarray                       # row weight × (normalised) cosine
    maxw: float                         # max |row weight|
    maxP: float
    row_weight: float | np.ndarray      # the row weight it was made with (an array: the same object)
    extremes: _Extremes | None          # the min-max normalisation's, when the preset normalises


class Engine:
    """One store's memories, ready to be scored. See the module docstring.

    Recency is measured from `params.as_of` when given, else from `now` (fixed at construction
    when passed), else from the store's clock (memviz.store.clock: a simulated or newest-memory
    time, read at construction), else, on the wall clock, from the last `set_query` call.

    An Engine is a snapshot of the arrays it was given: after the store changes, build a new one.
    """

    query_text: str | None              #: the query's text (a query by example: that memory's content)
    query_vector: np.ndarray | None     #: the query's unit vector (float32); None when it has none
    like: str | None                    #: the memory id queried by example
    query_error: EmbedderUnavailable | None  #: why the query text could not be embedded

    def __init__(self, store, arrays=None, *, embedder=None, now: float | None = None):
        self.store = store
        self.arrays = arrays if arrays is not None else store.arrays()
        self.now = now
        self.clock = store_clock(store, self.arrays)
        self._embedder = embedder
        self._meta = None
        self._store_memo: dict = {}     # presets' values read once per Engine (Run.memo_store)
        self._delta = C.relevance_error_bound(self.arrays.dim)
        quantized.index_for(self.arrays)   # starts building the int8 index of a large store
        self._cands: OrderedDict = OrderedDict()
        self._clear_query()

    # ----------------------------------------------------------------- the query
    def _clear_query(self):
        self.query_text = None
        self.query_vector = None
        self.like = None
        self.query_error = None
        self._exclude: int | None = None
        self._rel_fast = None
        self._rel_err = self._delta
        self._rel32 = None
        self._exact: dict[int, float] = {}
        self._fts = None
        self._extremes: dict[tuple, _Extremes] = {}      # candidates key -> exact extremes
        self._relevance_parts: dict[tuple, _Relevance] = {}
        self._query_memo: dict = {}                      # presets' own values (Run.memo_query)
        self._query_time = time.time()

    def embedder(self):
        """The provider that embeds queries like the store was embedded (EmbedderUnavailable if none)."""
        if self._embedder is None:
            a = self.arrays
            self._embedder = embedder_for(a.embedding_model, a.dim or None)
        if self._embedder.dim != self.arrays.dim:
            raise EmbedderUnavailable(f"{self._embedder.model} makes {self._embedder.dim}-d vectors, "
                                      f"but the store's vectors have {self.arrays.dim}")
        return self._embedder

    def set_query(self, text: str | None = None, *, vector=None, like: str | None = None, cosines=None) -> None:
        """Set the query: text (embedded with the store's model), a vector, or a memory id whose
        own vector is the query (`like`; that memory is left out of its own results).
        `cosines`: every row's float32-product cosine with that query's vector, made elsewhere
        (one matrix product for many queries: memviz.judge), used as this engine's own product.

        When the text cannot be embedded this raises EmbedderUnavailable *after* keeping the text,
        so presets that need no vector (hybrid: full-text part only; working-memory) still score."""
        if sum(x is not None for x in (text, vector, like)) > 1:
            raise ValueError("give one query: text, a vector, or a memory id (like)")
        self._clear_query()
        a = self.arrays
        vec = None
        if like is not None:
            i = a.index_of(like)
            if i is None:
                raise ValueError(f"no memory with id {like!r} in this store")
            if not a.has_embedding[i]:
                raise ValueError(f"memory {like} has no embedding of the store's model "
                                 f"({a.embedding_model or 'none'}), so it cannot serve as an example")
            self.like, self._exclude = like, i
            row = self.store.get(like)
            self.query_text = row["content"] if row else None
            vec = a.embedding[i]
        elif vector is not None:
            vec = np.asarray(vector, dtype=np.float32).ravel()
            if vec.shape != (a.dim,):
                raise ValueError(f"the query vector has {vec.size} dimensions; the store's vectors have {a.dim}")
            if not np.all(np.isfinite(vec)) or not np.any(vec):
                raise ValueError("the query vector must be finite and not all zero")
            vec = vec / np.linalg.norm(vec)
        elif text is not None:
            if not text.strip():
                raise ValueError("the query text is empty")
            self.query_text = text
            try:
                vec = self.embedder().embed_one(text)
            except EmbedderUnavailable as e:
                self.query_error = EmbedderUnavailable(
                    f"cannot embed the query: {e}. Query by example instead (a memory's own vector: Query by "
                    f"selected in the window, --like MEMORY_ID on the command line) or use the hybrid preset "
                    f"(full-text search).")
                raise self.query_error from None
        if vec is not None:
            # the first pass over every row runs when a preset first needs it (_relevance): the
            # hybrid preset orders by float32 cosines and needs no int8 pass
            self.query_vector = np.ascontiguousarray(vec, dtype=np.float32)
            if cosines is not None:
                cos = np.asarray(cosines, dtype=np.float64)
                if cos.shape != (len(a),):
                    raise ValueError(f"{cos.size} cosines given for a store of {len(a)} rows")
                self._rel32 = cos

    def _relevance(self) -> np.ndarray:
        """Every row's first-pass cosine (error bound `_rel_err`): the int8 index of a large
        store, else (or when already made) the float32 product."""
        if self._rel_fast is None:
            if self.query_vector is None:
                if self.query_error is not None:
                    raise self.query_error
                raise ValueError("this preset ranks by relevance and needs a query (text, vector or --like)")
            index = quantized.index_for(self.arrays) if self._rel32 is None else None
            if index is not None:
                self._rel_fast, self._rel_err = index.cosines(self.query_vector)
            else:
                self._rel_fast, self._rel_err = self._relevance32(), self._delta
        return self._rel_fast

    def _relevance32(self) -> np.ndarray:
        """Float32-product cosines (error bound `_delta`): the hybrid preset's vector ranks order
        every candidate by them, which the coarser int8 first pass could not do."""
        if self._rel32 is None:
            if self.query_vector is None:
                self._relevance()   # raises: no query vector
            self._rel32 = C.fast_relevance(self.arrays.embedding, self.query_vector)
        return self._rel32

    def _rel_rows32(self, rows: np.ndarray) -> np.ndarray:
        """Float32-product cosines of `rows` only (error bound `_delta`): the middle pass."""
        if self._rel32 is not None:
            return self._rel32[rows]
        return C.fast_relevance(self.arrays.embedding[rows], self.query_vector)

    def _exact_extreme(self, rows: np.ndarray, fast: np.ndarray, lowest: bool) -> float:
        """The exact minimum (or maximum) cosine over `rows` from their first-pass values `fast`:
        only rows within twice the bound of the extreme can hold it (float32 product, then exact)."""
        sign = 1.0 if lowest else -1.0
        # = rows[sign * fast <= (sign * fast).min() + 2 err] (negation is exact), without the temporary
        near = rows[fast <= fast.min() + 2 * self._rel_err] if lowest else rows[fast >= fast.max() - 2 * self._rel_err]
        if len(near) > 16 and self._rel_err > self._delta:
            v = sign * self._rel_rows32(near)
            near = near[v <= v.min() + 2 * self._delta]
        e = self._exact_rel(near)
        return float(e.min() if lowest else e.max())

    def _exact_extremes_by_persona(self, idx, fast, personas: Personas) -> tuple[np.ndarray, np.ndarray]:
        """Every persona's exact minimum and maximum cosine (_exact_extreme per group) with a few
        passes over all candidates instead of a few numpy calls and exact cosines per persona
        per query. Which rows are rescored differs from _exact_extreme's (the float32 filter is
        applied to every persona's near rows), not the values: each filter keeps the rows that
        can hold the exact extreme, and those are exact."""
        persona, groups = personas.of, personas.groups
        n_groups = len(groups)
        order, starts = personas.concatenated
        by_group = fast[order]
        out = []
        for lowest, extreme, at in ((True, np.minimum, np.inf), (False, np.maximum, -np.inf)):
            ext = extreme.reduceat(by_group, starts)   # NaN in a group -> NaN: no near rows, as in _exact_extreme
            pos = np.flatnonzero(fast <= (ext + 2 * self._rel_err)[persona] if lowest
                                 else fast >= (ext - 2 * self._rel_err)[persona])
            g = persona[pos]
            if self._rel_err > self._delta:   # float32 cosines of those rows: only near-ties go to the exact pass
                v = self._rel_rows32(idx[pos])
                v_ext = np.full(n_groups, at)
                extreme.at(v_ext, g, v)
                keep = v <= (v_ext + 2 * self._delta)[g] if lowest else v >= (v_ext - 2 * self._delta)[g]
                pos, g = pos[keep], g[keep]
            e_ext = np.full(n_groups, at)
            extreme.at(e_ext, g, self._exact_rel(idx[pos]))
            empty = np.setdiff1d(np.arange(n_groups), g)
            for k in empty.tolist():   # a group without near rows (NaN): _exact_extreme says what it does
                e_ext[k] = self._exact_extreme(idx[groups[k]], fast[groups[k]], lowest=lowest)
            out.append(e_ext)
        return out[0], out[1]

    def _exact_rel(self, rows: np.ndarray) -> np.ndarray:
        cache = self._exact
        missing = [r for r in rows.tolist() if r not in cache]
        if missing:
            vals = C.exact_relevance(self.arrays.embedding, missing, self.query_vector)
            cache.update(zip(missing, vals.tolist()))
        return np.array([cache[r] for r in rows.tolist()], dtype=np.float64)

    def _fts_hits(self):
        if self._fts is None and self.query_text:
            self._fts = fts_rows(self.store, self.arrays, self.query_text)
        return self._fts

    def with_arrays(self, arrays) -> Engine:
        """An Engine on `arrays`, other values of this engine's rows (an as-of view of the same
        load: same ids, same rows, same vectors), with this engine's query: nothing embedded or
        searched again. Score caches are not carried (they depend on the values); the int8
        index is shared through the matrix (quantized.index_for)."""
        new = Engine(self.store, arrays, embedder=self._embedder, now=self.now)
        new.query_text, new.query_vector, new.like, new.query_error = (
            self.query_text, self.query_vector, self.like, self.query_error)
        # the first-pass cosines travel with their own error bound (int8 or float32): the
        # rescoring that keeps the top k exact is sized by it
        new._exclude, new._rel_fast, new._rel_err, new._rel32, new._exact, new._fts, new._query_time = (
            self._exclude, self._rel_fast, self._rel_err, self._rel32, self._exact, self._fts, self._query_time)
        new._meta = self._meta  # tags and attributes are read per row id, not from the values
        return new

    # ----------------------------------------------------------------- shared per-Engine data
    def meta(self):
        """Tags and Generative Agents / ADA attributes of every row (read once)."""
        if self._meta is None:
            self._meta = load_row_meta(self.store, self.arrays.rowid)
        return self._meta

    def _candidates(self, params: Params, p: Preset) -> tuple[tuple, _Candidates]:
        key = (p.candidate_rule, params.as_of, params.agents, params.kinds, params.tags, params.time_range,
               params.include_retired, params.protected_only, self._exclude)
        cs = self._cands.get(key)
        if cs is None:
            mask = filter_mask(self.arrays, params, self.meta, self._exclude)
            idx = p.candidates(np.flatnonzero(mask), self.arrays, self.meta, params)
            cs = self._cands[key] = _Candidates(idx, len(self.arrays))
            if len(self._cands) > 16:
                self._cands.popitem(last=False)
        else:
            self._cands.move_to_end(key)
        return key, cs

    def ref_time(self, params: Params) -> float:
        """The time recency is measured from under `params` (a live refresh's merge keeps it)."""
        if params.as_of is not None:
            return float(params.as_of)
        if self.now is not None:
            return float(self.now)
        return float(self.clock.at if self.clock.fixed else self._query_time)

    def _decay(self, params, cs, ref) -> _Decay | None:
        """The assistant memory's confidence × exp(-decay_rate × days^0.8) (days since last access,
        else creation) of every candidate; None when `params` leaves it out."""
        if not params.confidence_decay:
            return None
        key = (ref, params.as_of)
        d = cs.decay.get(key)
        if d is None:
            a, idx = self.arrays, cs.idx
            age = ref - last_accessed_at(a, params.as_of)[idx]
            d = cs.decay[key] = _Decay(C.ebbinghaus(a.confidence[idx], a.decay_rate[idx], age, a.protected[idx]))
        return d

    # ----------------------------------------------------------------- scoring
    def score(self, params: Params) -> Result:
        """Rank the candidates under `params` with its preset; cheap when only weights or k changed."""
        p = preset(params.preset)
        run = self._run(params, p)
        if len(run.rows) == 0:
            return self._empty(params, p)
        return p.rank(run)

    def components(self, params: Params) -> Components:
        """The candidates (rows, in scoring order) and each one's component values for the
        current query under `params`' knobs (τ, decay, filters, as_of, ...), without ranking:
        `preset(params.preset).combine(components, params)` gives every candidate's score for
        `params`' weights, and for any other weights without coming back here.

        The scores equal `score(params)`'s up to the cosines: relevance here comes from float32
        products (`Components.cosine_error` bounds each cosine's error), where `score` rescores
        the rows near the k-th place exactly, so rankings agree but for near-ties. The arrays
        are the engine's caches, read-only: the query-independent ones (recency, importance)
        are the same arrays for every query with the same candidates and knobs."""
        p = preset(params.preset)
        run = self._run(params, p)
        if len(run.rows) == 0:
            return Components(run.rows, {c: np.zeros(0) for c in p.components})
        return p.component_values(run)

    def _run(self, params: Params, p: Preset) -> _Run:
        ckey, cs = self._candidates(params, p)
        return _Run(self, params, p, ckey, cs, self.ref_time(params))

    def _empty(self, params, p: Preset) -> Result:
        z = np.zeros(0)
        return Result(rows=np.zeros(0, np.int64), ids=[], score=z, raw={c: z for c in p.components},
                      weighted={c: z for c in p.components}, all_scores=np.full(len(self.arrays), np.nan),
                      candidates=0, params=params, notes=["no memory passes the filters"])

    # ----------------------------------------------------------------- linear presets
    def _linear_static(self, run: _Run, p: LinearPreset) -> _LinearStatic:
        """The preset's static part over the candidates, once per its static key."""
        key = (p.name, p.static_key(run.params, run.ref_time))
        ls = run.cs.statics.get(key)
        if ls is None:
            st = p.static(run)
            want = set(p.components) - {"relevance"}
            if set(st.values) != want:
                raise ValueError(f"preset {p.name!r}: its static part gave {sorted(st.values)}, "
                                 f"its components need {sorted(want)}")
            # cached products row weight × component: the slider only multiplies these
            P = {c: st.row_weight.get(c, 1.0) * v for c, v in st.values.items()}
            ls = run.cs.statics[key] = _LinearStatic(
                st, P, {c: float(np.abs(v).max()) for c, v in P.items()}, st.row_weight.get("relevance", 1.0),
                int((~self.arrays.has_embedding[run.rows]).sum()))
        return ls

    def _extremes_of(self, run: _Run, rel_c: np.ndarray) -> _Extremes:
        """The exact min and max cosine of each persona's candidates, from their first-pass `rel_c`."""
        ext = self._extremes.get(run.ckey)
        if ext is None:
            idx, personas = run.rows, run.personas()
            if len(personas.groups) == 1:
                los = np.array([self._exact_extreme(idx, rel_c, lowest=True)])
                his = np.array([self._exact_extreme(idx, rel_c, lowest=False)])
                lo, hi = float(los[0]), float(his[0])
            else:   # per candidate: its persona's
                los, his = self._exact_extremes_by_persona(idx, rel_c, personas)
                lo, hi = los[personas.of], his[personas.of]
            spans = his - los
            ext = self._extremes[run.ckey] = _Extremes(
                lo, hi, float((1.0 / spans[spans > 0]).max()) if (spans > 0).any() else 0.0)
        return ext

    def _relevance_part(self, run: _Run, p: LinearPreset, ls: _LinearStatic) -> _Relevance:
        """Per query: the candidates' first-pass cosines (min-max normalised when the preset
        does), times relevance's row weight."""
        w = ls.rel_weight
        key = (run.ckey, p.relevance_minmax, id(w) if isinstance(w, np.ndarray) else w)
        rq = self._relevance_parts.get(key)
        if rq is not None and (rq.row_weight is w or not isinstance(w, np.ndarray)):
            return rq
        rel_c = self._relevance() if run.cs.all_rows else self._relevance()[run.rows]
        ext = self._extremes_of(run, rel_c) if p.relevance_minmax else None
        rel_t = rel_c if ext is None else _minmax(rel_c, ext.lo, ext.hi)
        P = rel_t if isinstance(w, float) and w == 1.0 else w * rel_t   # 1.0 * x == x
        maxw = float(np.abs(w).max()) if isinstance(w, np.ndarray) else abs(w)
        rq = self._relevance_parts[key] = _Relevance(P, maxw, _max_abs(P), w, ext)
        return rq

    def _rank_linear(self, run: _Run, p: LinearPreset) -> Result:
        params, cs = run.params, run.cs
        ls = self._linear_static(run, p)
        order = p.order
        P, maxP = ls.P, ls.maxP
        has_rel = "relevance" in order
        if has_rel:
            rq = self._relevance_part(run, p, ls)
            P, maxP = {**P, "relevance": rq.P}, {**maxP, "relevance": rq.maxP}
        decay = self._decay(params, cs, run.ref_time)
        f = None if decay is None else decay.factor
        terms = p.terms(P, params)
        W = {c: 1.0 if w is None else w for c, (_, w) in zip(order, terms)}   # x * 1.0 == x: the same sums

        # fast pass over every candidate: a new array (it becomes all_scores) and its block maxima
        s, maxima = fastpass.weighted_sum(terms, f)
        m = len(s)
        k = min(int(params.k), m)
        kth = fastpass.kth_largest(s, k, maxima)
        fmax = 1.0 if decay is None else decay.max
        # how far an error of 1 in a cosine can move a score; the sums' float64 rounding on top
        per_cos = abs(W["relevance"]) * rq.maxw * (rq.extremes.scale if rq.extremes else 1.0) * fmax if has_rel else 0.0
        rounding = 8 * _EPS * fmax * sum(abs(W[c]) * maxP[c] for c in order)
        rw = ls.rel_weight
        ext = rq.extremes if has_rel else None

        def scores_at(region, cos):
            """The scores of candidate positions `region` from their cosines `cos`, term by term in
            the preset's order (the exact pass's arithmetic)."""
            rel_t = None
            if has_rel:   # one min and max, or each persona's (per position)
                rel_t = cos if ext is None else _minmax(cos, ext.lo if np.isscalar(ext.lo) else ext.lo[region],
                                                        ext.hi if np.isscalar(ext.hi) else ext.hi[region])
            terms = {}
            for c in order:
                pw = (rw[region] if isinstance(rw, np.ndarray) else rw) * rel_t if c == "relevance" else P[c][region]
                terms[c] = pw * W[c] if f is None else pw * W[c] * f[region]
            total = terms[order[0]]
            for c in order[1:]:
                total = total + terms[c]
            return total, terms, rel_t

        if per_cos * self._rel_err == 0:
            # relevance cannot move any score (weight 0, all cosines equal, none): the fast pass is exact
            region = np.sort(_topk(s, k, maxima))
        else:
            region = fastpass.at_least(s, kth - 2 * (per_cos * self._rel_err + rounding), maxima)
            if len(region) > 2 * k + 8 and self._rel_err > self._delta:
                # middle pass after an int8 first pass: float32 cosines of the region only
                s32, _, _ = scores_at(region, self._rel_rows32(cs.idx[region]))
                kth32 = np.partition(s32, len(s32) - k)[len(s32) - k]
                region = region[s32 >= kth32 - 2 * (per_cos * self._delta + rounding)]

        # exact pass over the memories that can reach the top k
        rows = cs.idx[region]
        cos = self._exact_rel(rows) if has_rel else None
        exact, terms, rel_t = scores_at(region, cos)
        raw = {c: v[region] for c, v in ls.static.values.items()}
        if has_rel:
            raw["relevance"] = rel_t
        pick = np.argsort(-exact, kind="stable")[:k]   # region is in candidate order: ties keep it

        all_scores = s if cs.all_rows else _spread(s, cs, len(self.arrays))   # s is this call's own
        all_scores[rows] = exact
        sel = region[pick]
        out_raw = {c: raw[c][pick] for c in p.components}
        if has_rel:
            out_raw["cosine"] = cos[pick]
        for name, v in ls.static.extra.items():
            out_raw[name] = v[sel]
        if f is not None:
            out_raw["decay_factor"] = f[sel]
        notes = list(ls.static.notes)
        if has_rel and ls.no_vector:
            one = ls.no_vector == 1
            notes.append(f"{count(ls.no_vector, 'candidate')} {'has' if one else 'have'} no vector of "
                         f"{self.arrays.embedding_model}; {'its' if one else 'their'} relevance counts as 0")
        return Result(rows=cs.idx[sel], ids=[str(x) for x in self.arrays.ids[cs.idx[sel]]], score=exact[pick],
                      raw=out_raw, weighted={c: terms[c][pick] for c in p.components},
                      all_scores=all_scores, candidates=m, params=params, notes=notes)

    def _linear_components(self, run: _Run, p: LinearPreset) -> Components:
        """Engine.components of a linear preset: its static part, and relevance from float32
        cosines (normalised by the exact extremes where the preset normalises)."""
        ls = self._linear_static(run, p)
        values = dict(ls.P)
        err = 0.0
        if "relevance" in p.components:
            cos = self._relevance32()   # before the first pass: that pass is then this one
            rel_c = cos if run.cs.all_rows else cos[run.rows]
            rel_t = rel_c
            if p.relevance_minmax:
                ext = self._extremes_of(run, self._relevance() if run.cs.all_rows else self._relevance()[run.rows])
                rel_t = _minmax(rel_c, ext.lo, ext.hi)
            w = ls.rel_weight
            values["relevance"] = rel_t if isinstance(w, float) and w == 1.0 else w * rel_t
            err = self._delta
        decay = self._decay(run.params, run.cs, run.ref_time)
        return Components(run.rows, {c: values[c] for c in p.order}, None if decay is None else decay.factor, err)


class _Run:
    """One `Engine.score` / `Engine.components` call, as a preset sees it (presets.base.Run)."""

    __slots__ = ("_engine", "_preset", "arrays", "ckey", "cs", "params", "query_error", "query_text", "query_vector",
                 "ref_time", "rows", "store")

    def __init__(self, engine: Engine, params: Params, p: Preset, ckey: tuple, cs: _Candidates, ref: float):
        self._engine, self._preset, self.ckey, self.cs, self.params, self.ref_time = engine, p, ckey, cs, params, ref
        # the engine's data and query as the call found them: one call never sees them change
        self.arrays, self.store, self.rows = engine.arrays, engine.store, cs.idx
        self.query_text, self.query_vector, self.query_error = engine.query_text, engine.query_vector, engine.query_error

    def meta(self):
        return self._engine.meta()

    def personas(self) -> Personas:
        return self.cs.personas(self.arrays)

    def decay_factor(self) -> np.ndarray | None:
        d = self._engine._decay(self.params, self.cs, self.ref_time)
        return None if d is None else d.factor

    def memo_store(self, key, make):
        return _memo(self._engine._store_memo, (self._preset.name, key), make)

    def memo_candidates(self, key, make):
        return _memo(self.cs.memo, (self._preset.name, key), make)

    def memo_query(self, key, make):
        return _memo(self._engine._query_memo, (self.ckey, self._preset.name, key), make)

    def fts_hits(self):
        return self._engine._fts_hits()

    def cosines32(self) -> np.ndarray:
        return self._engine._relevance32()

    @property
    def cosine_error32(self) -> float:
        return self._engine._delta

    def exact_cosines(self, rows: np.ndarray) -> np.ndarray:
        return self._engine._exact_rel(rows)

    def top_k(self, scores: np.ndarray, k: int) -> np.ndarray:
        return _topk(scores, k)

    def result(self, scores, positions, raw, weighted, notes=()) -> Result:
        a, rows = self.arrays, self.rows[positions]
        all_scores = scores if self.cs.all_rows else _spread(scores, self.cs, len(a))   # scores are the call's own
        return Result(rows=rows, ids=[str(x) for x in a.ids[rows]], score=scores[positions], raw=raw,
                      weighted=weighted, all_scores=all_scores, candidates=len(self.rows),
                      params=self.params, notes=list(notes))

    def rank_linear(self, p: LinearPreset) -> Result:
        return self._engine._rank_linear(self, p)

    def linear_components(self, p: LinearPreset) -> Components:
        return self._engine._linear_components(self, p)


def _memo(cache: dict, key, make):
    try:
        return cache[key]
    except KeyError:
        value = cache[key] = make()
        return value


def _max_abs(v: np.ndarray) -> float:
    """np.abs(v).max() (NaN if v holds NaN) without the temporary: two reductions of 1M values
    instead of a third pass and 8 MB written."""
    return float(max(abs(v.max()), abs(v.min())))


def _topk(s: np.ndarray, k: int, maxima=None) -> np.ndarray:
    """Positions of the k best scores, best first; ties keep position order (`maxima`: see fastpass)."""
    k = min(int(k), len(s))
    kth = fastpass.kth_largest(s, k, maxima)
    region = fastpass.at_least(s, kth, maxima)
    return region[np.argsort(-s[region], kind="stable")][:k]


def _spread(s: np.ndarray, cs: _Candidates, n: int) -> np.ndarray:
    """The candidates' scores as one value per row of the store, NaN for the rest."""
    if cs.all_rows:
        return s.copy()
    out = np.full(n, np.nan)
    out[cs.idx] = s
    return out


def _minmax(values, lo, hi) -> np.ndarray:
    """C.minmax with the min and max given per row (per persona) or once."""
    if np.isscalar(lo):
        return C.minmax(values, lo, hi)
    values = np.asarray(values, dtype=np.float64)
    span = hi - lo
    ok = span != 0
    # the same operations as C.minmax on every row, in place (no gathers by mask: 1M rows)
    out = np.subtract(values, lo)   # (v - lo) * (1 - 0) / span + 0: the "* 1" is exact, left out
    out /= np.where(ok, span, 1.0)
    out += 0
    return np.where(ok, out, (1 - 0) / 2)
