"""The retrieval engine: scores every candidate memory with numpy, explains every result.

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
minimum and maximum cosine Generative Agents normalises by. `Result.all_scores` outside the
rescored rows holds first-pass scores (colouring, not ranking).
"""
from __future__ import annotations

import time
from collections import OrderedDict

import numpy as np

from ..embed import EmbedderUnavailable, embedder_for
from ..store.check import known_fts_damage
from ..store.clock import store_clock
from . import components as C
from . import fastpass, quantized
from .candidates import filter_mask, ga_order, ga_rule, last_accessed_at
from .hybrid import fts_ranks, fts_rows, vector_ranks
from .params import Params, Result
from .presets import preset
from .rowmeta import derived_cycles, load_row_meta

_EPS = np.finfo(np.float64).eps

#: the order in which each preset adds its terms (its source's formula, left to right)
_SUM_ORDER = {
    "generative-agents": ("recency", "relevance", "importance"),   # recency_w*rec*gw[0] + relevance... + importance...
    "dual-memory": ("relevance", "recency", "importance"),         # α·relevance + β·recency + γ·importance
    "ada": ("recency", "importance", "relevance"),                 # α·recency + β·importance + γ·relevance (ADA's names)
}


class _Candidates:
    """The rows one filter setting scores, in scoring order, with caches that depend only on them."""

    def __init__(self, idx: np.ndarray, n: int):
        self.idx = idx
        self.all_rows = len(idx) == n and (n == 0 or (idx[0] == 0 and bool(np.all(np.diff(idx) == 1))))
        self.cache: dict = {}


class Engine:
    """One store's memories, ready to be scored. See the module docstring.

    Recency is measured from `params.as_of` when given, else from `now` (fixed at construction
    when passed), else from the store's clock (memviz.store.clock: a simulated or newest-memory
    time, read at construction), else, on the wall clock, from the last `set_query` call.

    An Engine is a snapshot of the arrays it was given: after the store changes, build a new one.
    Generative Agents: with `params.agent_weights` (default) the per-agent recency_w, relevance_w,
    importance_w and recency_decay of memviz_meta "ga_weights" apply, so an agent's stored
    recency_decay wins over `params.decay`; set agent_weights=False to use the parameters alone.
    """

    def __init__(self, store, arrays=None, *, embedder=None, now: float | None = None):
        self.store = store
        self.arrays = arrays if arrays is not None else store.arrays()
        self.now = now
        self.clock = store_clock(store, self.arrays)
        self._embedder = embedder
        self._meta = None
        self._cycles = None
        self._ga_weights = _read_ga_weights(store)
        self._delta = C.relevance_error_bound(self.arrays.dim)
        quantized.index_for(self.arrays)   # starts building the int8 index of a large store
        self._cands: OrderedDict = OrderedDict()
        self._clear_query()

    # ----------------------------------------------------------------- the query
    def _clear_query(self):
        self.query_text: str | None = None
        self.query_vector: np.ndarray | None = None
        self.like: str | None = None
        self.query_error: EmbedderUnavailable | None = None
        self._exclude: int | None = None
        self._rel_fast = None
        self._rel_err = self._delta
        self._rel32 = None
        self._exact: dict[int, float] = {}
        self._fts = None
        self._qcache: dict = {}
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

    def set_query(self, text: str | None = None, *, vector=None, like: str | None = None) -> None:
        """Set the query: text (embedded with the store's model), a vector, or a memory id whose
        own vector is the query (`like`; that memory is left out of its own results).

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
                    f"cannot embed the query: {e}. Query by example (--like MEMORY_ID) or use the "
                    f"hybrid preset (full-text search).")
                raise self.query_error from None
        if vec is not None:
            # the first pass over every row runs when a preset first needs it (_relevance): the
            # hybrid preset orders by float32 cosines and needs no int8 pass
            self.query_vector = np.ascontiguousarray(vec, dtype=np.float32)

    @property
    def has_relevance(self) -> bool:
        return self.query_vector is not None

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

    def _exact_extremes_by_persona(self, idx, fast, st) -> tuple[np.ndarray, np.ndarray]:
        """Every persona's exact minimum and maximum cosine (_exact_extreme per group) with a few
        passes over all candidates instead of a dozen numpy calls per persona (100 agents: 200
        small passes and ~1,000 exact cosines a query). Which rows are rescored differs from
        _exact_extreme's (the float32 filter is applied to every persona's near rows), not the
        values: each filter keeps the rows that can hold the exact extreme, and those are exact."""
        persona, n_groups = st["persona"], len(st["groups"])
        if "persona order" not in st:   # candidate positions grouped by persona, and where each group starts
            order = np.concatenate(st["groups"])
            st["persona order"] = (order, np.concatenate(([0], np.cumsum([len(g) for g in st["groups"]])[:-1])))
        order, starts = st["persona order"]
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
                e_ext[k] = self._exact_extreme(idx[st["groups"][k]], fast[st["groups"][k]], lowest=lowest)
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
        searched again. Score caches are not carried (they depend on the values)."""
        if arrays.embedding is self.arrays.embedding and getattr(arrays, "_int8_index", None) is None:
            # the same vectors: the int8 index is shared, not built again for every view
            idx = getattr(self.arrays, "_int8_index", None)
            if idx is not None:
                arrays._int8_index = idx
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

    def _candidates(self, params: Params) -> tuple[tuple, _Candidates]:
        ga = params.preset == "generative-agents"
        key = ("ga" if ga else "all", params.as_of, params.agents, params.kinds, params.tags, params.time_range,
               params.include_retired, params.protected_only, self._exclude)
        cs = self._cands.get(key)
        if cs is None:
            mask = filter_mask(self.arrays, params, self.meta, self._exclude)
            if ga:
                mask &= ga_rule(self.arrays, self.meta())
                idx = ga_order(self.arrays, self.meta(), np.flatnonzero(mask), params.as_of)
            else:
                idx = np.flatnonzero(mask)
            cs = self._cands[key] = _Candidates(idx, len(self.arrays))
            if len(self._cands) > 16:
                self._cands.popitem(last=False)
        else:
            self._cands.move_to_end(key)
        return key, cs

    def ref_time(self, params: Params) -> float:
        """The time recency is measured from under `params` (a live refresh's merge keeps it)."""
        return self._ref_time(params)

    def _ref_time(self, params: Params) -> float:
        if params.as_of is not None:
            return float(params.as_of)
        if self.now is not None:
            return float(self.now)
        return float(self.clock.at if self.clock.fixed else self._query_time)

    def _decay_max(self, cs, f) -> float:
        """max |f| of a decay factor array (1.0 without one), once per array."""
        if f is None:
            return 1.0
        key = ("decay max", id(f))
        hit = cs.cache.get(key)
        if hit is None or hit[0] is not f:
            hit = cs.cache[key] = (f, float(np.abs(f).max()))
        return hit[1]

    def _decay_factor(self, params, cs, ref):
        """The assistant memory's confidence × exp(-decay_rate × days^0.8) (days since last access, else creation)."""
        if not params.confidence_decay:
            return None
        key = ("ebbinghaus", ref, params.as_of)
        if key not in cs.cache:
            a, idx = self.arrays, cs.idx
            age = ref - last_accessed_at(a, params.as_of)[idx]
            cs.cache[key] = C.ebbinghaus(a.confidence[idx], a.decay_rate[idx], age, a.protected[idx])
        return cs.cache[key]

    # ----------------------------------------------------------------- scoring
    def score(self, params: Params) -> Result:
        """Rank the candidates under `params`; cheap when only weights or k changed."""
        info = preset(params.preset)
        ref = self._ref_time(params)
        ckey, cs = self._candidates(params)
        if len(cs.idx) == 0:
            return self._empty(params, info)
        if params.preset == "hybrid":
            return self._score_hybrid(params, ckey, cs, ref)
        if params.preset == "working-memory":
            return self._score_working(params, cs, ref)
        return self._score_linear(params, ckey, cs, ref)

    def _empty(self, params, info) -> Result:
        z = np.zeros(0)
        return Result(rows=np.zeros(0, np.int64), ids=[], score=z, raw={c: z for c in info.components},
                      weighted={c: z for c in info.components}, all_scores=np.full(len(self.arrays), np.nan),
                      candidates=0, params=params, notes=["no memory passes the filters"])

    def _static_linear(self, params, cs, ref) -> dict:
        """The query-independent parts of dual-memory, generative-agents and ada over the candidates."""
        a, idx = self.arrays, cs.idx
        name = params.preset
        if name == "generative-agents":
            key = ("ga", params.decay, params.agent_weights)
        elif name == "dual-memory":
            key = ("dual", ref, params.tau_hours)
        else:
            key = ("ada", ref, params.decay)
        st = cs.cache.get(key)
        if st is not None:
            return st
        st = {"rowweight": {"recency": 1.0, "relevance": 1.0, "importance": 1.0}, "extra": {}}
        imp_raw = a.importance[idx]
        if name == "generative-agents":
            # Generative Agents, retrieve.py new_retrieve, exactly:
            # - candidates: events and thoughts (not chats) whose embedding_key lacks "idle"
            #   (candidates.ga_rule; a memory without GA attributes counts unless it is dialogue);
            # - ordered by last_accessed ascending, ties in store order = events newest first,
            #   then thoughts newest first (candidates.ga_order, rebuilt from node_count);
            # - recency of the i-th in that order (i from 1) = recency_decay ** i: a rank, not a
            #   time (so the least recently accessed memory gets the highest recency, as in the code);
            # - relevance = cosine; importance = poignancy;
            # - each of the three min-max normalised to [0, 1] over the candidates, all equal -> 0.5;
            # - score = recency_w·recency·0.5 + relevance_w·relevance·3 + importance_w·importance·2
            #   (β, α, γ default to 0.5, 3, 2; the *_w are the persona's scratch weights, default 1);
            # - top 30 by default, ties in candidate order (stable sort, like Python's sorted);
            # - all in float64, the cosines exact where a near-tie could depend on float32 rounding.
            # Several personas: each is ranked on its own, as each persona's own retrieve.py would
            # (its recency order, its min and max); the lists are then merged by score.
            w = self._ga_row_weights(idx, params)
            decays = w.pop("recency_decay")
            groups, st["persona"] = persona_groups(a.agent[idx])
            st["groups"] = groups
            rec_raw, rec, imp, rank = (np.empty(len(idx)) for _ in range(4))
            for pos in groups:
                rec_raw[pos] = C.ga_rank_recency(decays[pos])
                rec[pos], imp[pos] = C.minmax(rec_raw[pos]), C.minmax(imp_raw[pos])
                rank[pos] = np.arange(1, len(pos) + 1)
            st["raw"] = {"recency": rec, "importance": imp}
            st["rowweight"] = w
            st["extra"] = {"recency_rank": rank.astype(np.int64), "recency_decayed": rec_raw, "poignancy": imp_raw}
        elif name == "dual-memory":
            # dual-memory design: recency = exp(-Δt/τ) with Δt the hours since the memory's timestamp
            # (event_time); importance = importance / 10
            age = ref - a.event_time[idx]
            st["raw"] = {"recency": C.exp_recency(age, params.tau_hours), "importance": imp_raw / 10}
            st["extra"] = {"age_hours": np.maximum(age, 0) / C.HOUR}
        else:
            # ADA cognitive memory: recency = λ^(cycles ago), the current cycle being the latest one logged
            # by `ref`; importance = importance / 10
            cycles = self._ada_cycles()
            exists = a.created_at <= ref
            current = cycles[exists].max() if exists.any() else cycles.max()
            ago = np.maximum(current - cycles[idx], 0.0)
            st["raw"] = {"recency": C.cycle_recency(ago, params.decay), "importance": imp_raw / 10}
            st["extra"] = {"cycles_ago": ago}
        # cached products row-weight × component: the slider only multiplies these
        st["P"] = {c: st["rowweight"][c] * v for c, v in st["raw"].items()}
        st["maxP"] = {c: float(np.abs(v).max()) for c, v in st["P"].items()}
        st["no_vector"] = int((~a.has_embedding[idx]).sum())
        cs.cache[key] = st
        return st

    def _ga_row_weights(self, idx, params) -> dict:
        """Per-row recency_w / relevance_w / importance_w and recency_decay of each memory's agent
        (memviz_meta "ga_weights"; weights default to 1, the decay to params.decay)."""
        n = len(idx)
        out = {"recency": 1.0, "relevance": 1.0, "importance": 1.0, "recency_decay": np.full(n, params.decay)}
        if not (params.agent_weights and self._ga_weights):
            return out
        agents = self.arrays.agent[idx]
        cols = {"recency": np.ones(n), "relevance": np.ones(n), "importance": np.ones(n)}
        for agent, w in self._ga_weights.items():
            rows = agents == agent
            if not rows.any():
                continue
            for c in cols:
                cols[c][rows] = w.get(c + "_w", 1.0)
            out["recency_decay"][rows] = w.get("recency_decay", params.decay)
        for c, v in cols.items():
            out[c] = v if np.any(v != 1.0) else 1.0
        return out

    def _ada_cycles(self) -> np.ndarray:
        if self._cycles is None:
            self._cycles = derived_cycles(self.meta().cycle, self.arrays.event_time)
        return self._cycles

    def _relevance_part(self, params, ckey, cs, st) -> dict:
        """Per query: the candidates' cosines (float32 product), and for generative-agents the
        exact min and max that min-max normalisation divides by."""
        key = (ckey, params.preset, params.agent_weights if params.preset == "generative-agents" else None)
        q = self._qcache.get(key)
        if q is not None:
            return q
        rel_c = self._relevance() if cs.all_rows else self._relevance()[cs.idx]
        q = {"lo": None, "hi": None, "scale": 1.0}
        if params.preset == "generative-agents":
            groups = st["groups"]
            if len(groups) == 1:
                los = np.array([self._exact_extreme(cs.idx, rel_c, lowest=True)])
                his = np.array([self._exact_extreme(cs.idx, rel_c, lowest=False)])
            else:   # each persona's exact min and max
                los, his = self._exact_extremes_by_persona(cs.idx, rel_c, st)
            spans = his - los
            if len(groups) == 1:
                lo, hi = float(los[0]), float(his[0])
            else:   # per candidate: its persona's
                lo, hi = los[st["persona"]], his[st["persona"]]
            q.update(lo=lo, hi=hi, scale=float((1.0 / spans[spans > 0]).max()) if (spans > 0).any() else 0.0)
            rel_t = _minmax(rel_c, lo, hi)
        else:
            rel_t = rel_c
        w = st["rowweight"]["relevance"]
        q["P"] = rel_t if isinstance(w, float) and w == 1.0 else w * rel_t   # 1.0 * x == x
        q["maxw"] = float(np.abs(w).max()) if isinstance(w, np.ndarray) else abs(w)
        q["maxP"] = _max_abs(q["P"])
        self._qcache[key] = q
        return q

    def _score_linear(self, params, ckey, cs, ref) -> Result:
        st = self._static_linear(params, cs, ref)
        rq = self._relevance_part(params, ckey, cs, st)
        f = self._decay_factor(params, cs, ref)
        W = {"relevance": params.alpha, "recency": params.beta, "importance": params.gamma}
        order = _SUM_ORDER[params.preset]
        P = dict(st["P"], relevance=rq["P"])

        # fast pass over every candidate: a new array (it becomes all_scores) and its block maxima
        s, maxima = fastpass.weighted_sum([(P[c], W[c]) for c in order], f)
        m = len(s)
        k = min(int(params.k), m)
        kth = fastpass.kth_largest(s, k, maxima)
        fmax = self._decay_max(cs, f)
        # how far an error of 1 in a cosine can move a score; the sums' float64 rounding on top
        per_cos = abs(params.alpha) * rq["maxw"] * rq["scale"] * fmax
        maxP = dict(st["maxP"], relevance=rq["maxP"])
        rounding = 8 * _EPS * fmax * sum(abs(W[c]) * maxP[c] for c in order)
        rw = st["rowweight"]["relevance"]

        def scores_at(region, cos):
            """The scores of candidate positions `region` from their cosines `cos`, term by term in
            the preset's order (the exact pass's arithmetic)."""
            if params.preset == "generative-agents":  # one min and max, or each persona's (per position)
                lo, hi = rq["lo"], rq["hi"]
                rel_t = _minmax(cos, lo if np.isscalar(lo) else lo[region], hi if np.isscalar(hi) else hi[region])
            else:
                rel_t = cos
            terms = {}
            for c in order:
                pw = (rw[region] if isinstance(rw, np.ndarray) else rw) * rel_t if c == "relevance" else P[c][region]
                terms[c] = pw * W[c] if f is None else pw * W[c] * f[region]
            total = terms[order[0]]
            for c in order[1:]:
                total = total + terms[c]
            return total, terms, rel_t

        if per_cos * self._rel_err == 0:
            # relevance cannot move any score (weight 0, or all cosines equal): the fast pass is exact
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
        cos = self._exact_rel(rows)
        exact, terms, rel_t = scores_at(region, cos)
        raw = {c: v[region] for c, v in st["raw"].items()}
        raw["relevance"] = rel_t
        pick = np.argsort(-exact, kind="stable")[:k]   # region is in candidate order: ties keep it

        all_scores = s if cs.all_rows else _spread(s, cs, len(self.arrays))   # s is this call's own
        all_scores[rows] = exact
        sel = region[pick]
        out_raw = {c: raw[c][pick] for c in ("relevance", "recency", "importance")}
        out_raw["cosine"] = cos[pick]
        for name, v in st["extra"].items():
            out_raw[name] = v[sel]
        if f is not None:
            out_raw["decay_factor"] = f[sel]
        notes = []
        if params.preset == "generative-agents" and len(st["groups"]) > 1:
            notes.append(f"{len(st['groups'])} personas: each is ranked on its own (its own recency order and "
                         "min-max), as the Generative Agents code does, and the lists merged by score; "
                         "choose one agent to see one persona's retrieval")
        if st["no_vector"]:
            notes.append(f"{st['no_vector']} candidate(s) have no vector of {self.arrays.embedding_model}; "
                         f"their relevance counts as 0")
        return Result(rows=cs.idx[sel], ids=[str(x) for x in self.arrays.ids[cs.idx[sel]]], score=exact[pick],
                      raw=out_raw, weighted={c: terms[c][pick] for c in _display(order)},
                      all_scores=all_scores, candidates=m, params=params, notes=notes)

    def _score_hybrid(self, params, ckey, cs, ref) -> Result:
        a, idx = self.arrays, cs.idx
        hits = self._fts_hits()
        if hits is None and self.query_vector is None:
            if self.query_error is not None:
                raise self.query_error
            raise ValueError("the hybrid preset needs a query (text, vector or --like)")
        key = (ckey, "hybrid")
        h = self._qcache.get(key)
        if h is None:
            n = len(a)
            h = {}
            if hits is not None:
                is_cand = np.zeros(n, dtype=bool)
                is_cand[idx] = True
                h["fts_rank"] = fts_ranks(n, hits[0], is_cand)[idx]
                bm = np.full(n, np.nan)
                bm[hits[0]] = hits[1]
                h["bm25"] = bm[idx]
            else:
                h["fts_rank"] = np.zeros(len(idx), np.int64)
                h["bm25"] = np.full(len(idx), np.nan)
            if self.query_vector is not None:
                h["vector_rank"] = vector_ranks(idx, self._relevance32(), a.has_embedding, self._exact_rel, self._delta,
                                                top=max(4 * int(params.k), 200))
            else:
                h["vector_rank"] = np.zeros(len(idx), np.int64)
            self._qcache[key] = h
        tkey = (ckey, "hybrid", params.rrf_k)
        terms = self._qcache.get(tkey)
        if terms is None:
            terms = self._qcache[tkey] = {"fts": C.rrf(h["fts_rank"], params.rrf_k),
                                          "vector": C.rrf(h["vector_rank"], params.rrf_k)}
        f = self._decay_factor(params, cs, ref)
        if f is not None:
            terms = {c: v * f for c, v in terms.items()}
        s = terms["fts"] + terms["vector"]
        sel = _topk(s, params.k)
        rows = idx[sel]
        cos = self._exact_rel(rows) if self.query_vector is not None else np.full(len(rows), np.nan)
        cos = np.where(a.has_embedding[rows], cos, np.nan)
        raw = {"relevance": cos, "bm25": h["bm25"][sel], "fts_rank": h["fts_rank"][sel],
               "vector_rank": h["vector_rank"][sel]}
        if f is not None:
            raw["decay_factor"] = f[sel]
        all_scores = _spread(s, cs, len(a))
        notes = []
        if hits is None:
            notes.append("no query text: vector ranks only")
        if self.query_vector is None:
            notes.append("no query vector: full-text ranks only")
        notes += [w for w in (known_fts_damage(self.store),) if w and hits is not None]
        return Result(rows=rows, ids=[str(x) for x in a.ids[rows]], score=s[sel], raw=raw,
                      weighted={c: v[sel] for c, v in terms.items()}, all_scores=all_scores,
                      candidates=len(idx), params=params, notes=notes)

    def _score_working(self, params, cs, ref) -> Result:
        a, idx = self.arrays, cs.idx
        key = ("working", ref)
        st = cs.cache.get(key)
        if st is None:
            age = ref - a.created_at[idx]
            rec, s = C.working_memory(a.importance[idx], age)
            st = cs.cache[key] = {"recency": rec, "importance": a.importance[idx], "score": s,
                                  "age_hours": np.maximum(age, 0) / C.HOUR}
        f = self._decay_factor(params, cs, ref)
        s = st["score"] if f is None else st["score"] * f
        sel = _topk(s, params.k)
        raw = {"recency": st["recency"][sel], "importance": st["importance"][sel], "age_hours": st["age_hours"][sel]}
        if f is not None:
            raw["decay_factor"] = f[sel]
        all_scores = _spread(s, cs, len(a))
        rows = idx[sel]
        return Result(rows=rows, ids=[str(x) for x in a.ids[rows]], score=s[sel], raw=raw,
                      weighted={"importance×recency": s[sel]}, all_scores=all_scores,
                      candidates=len(idx), params=params)


def _max_abs(v: np.ndarray) -> float:
    """np.abs(v).max() (NaN if v holds NaN) without the temporary: two reductions of 1M values
    instead of a third pass and 8 MB written."""
    return float(max(abs(v.max()), abs(v.min())))


def _display(order):
    return [c for c in ("relevance", "recency", "importance") if c in order]


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


def _read_ga_weights(store) -> dict:
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


def persona_groups(agents: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Positions of each agent's candidates, in candidate order (one group when one agent), and
    each candidate's group number."""
    names, codes = np.unique(agents, return_inverse=True)
    if len(names) <= 1:
        return [np.arange(len(agents))], np.zeros(len(agents), np.intp)
    return [np.flatnonzero(codes == g) for g in range(len(names))], codes


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
