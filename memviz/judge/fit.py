"""Fitting a preset's weights and knob to judged queries, checked by k-fold cross-validation.

The driver knows nothing of the engine. `metric_of(params, query_ids)` gives each query's
value of the chosen measure ({query id: value}) under a parameter set (a dict: the weights,
the knobs, and whatever the start holds besides, k for one, passed through unchanged). A
query's value must not depend on which other queries are asked (true of every per-query IR
measure): the driver asks once per point for every query and reuses the values in each fold.

The search: a coarse grid, then coordinate refinement (moves along each coordinate, the best
one taken while it gains, the step halved `rounds` times). The metric of a ranking is a step
function of the weights (a rank changes only when two scores cross), flat almost everywhere,
so gradient-based searches (scipy's) stall on its plateaus; a grid plus coordinate moves needs
no gradient, is deterministic, and at three or four parameters costs a few hundred rankings.
Ties go to the point nearest the start, so a flat objective leaves the start unchanged.

Weights on a simplex (`Space.simplex`, the default): a weighted sum ranks the same for any
positive multiple of its weights, so the search moves along their proportions and gives the
result at the start's total (the Generative Agents preset's 3 + 0.5 + 2 stays 5.5). In a box,
each weight moves in [0, weight_max]. A knob (τ in hours, a decay factor) moves on a log scale.

Cross-validation: for each fold, the search runs on the other folds' queries; its parameters
and the start are then measured on the fold's own (held-out) queries. The fitted parameters
reported are the search's on every query. The space is widened where it must be to hold the
start (a knob's range, the box), so the start is always one of the points searched.

The recommendation: with gᵢ the held-out gain of fold i (the fitted parameters' mean on its
queries minus the start's), ḡ their mean and sd the standard deviation of the gᵢ (ddof = 1),
the fitted parameters are recommended only when ḡ > sd and ḡ > 0: the gain must stand above
the fold spread, not merely above its standard error (sd / √folds, which shrinks with more
folds while a fold's own gain stays as uncertain). A gain within the spread over folds — a
setting that helps some folds and hurts others — is reported as such, and the starting
parameters are kept, so what is recommended is never worse than the start on held-out
queries on average.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product

from ..tasks import Task, quiet
from .compare import SAME_WITHIN, WinsLosses, wins_losses
from .folds import Fold, kfold

LOG, LOG_COMPLEMENT = "log", "log-complement"
#: two means within this are equal (ties go to the point nearest the start)
_TIE = 1e-12
_DIGITS = 12  # points are rounded so that a point reached twice is one cache entry

MetricOf = Callable[[dict, Sequence[str]], Mapping[str, float]]


@dataclass(frozen=True)
class Knob:
    """A positive parameter searched on a log scale between lo and hi. LOG: the value itself
    (τ in hours); LOG_COMPLEMENT: 1 − value (a decay factor just below 1: 0.99, 0.999, …)."""

    name: str
    lo: float
    hi: float
    scale: str = LOG

    def __post_init__(self):
        if self.scale not in (LOG, LOG_COMPLEMENT):
            raise ValueError(f"knob {self.name!r}: scale {self.scale!r} is neither {LOG!r} nor {LOG_COMPLEMENT!r}")
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"knob {self.name!r}: lo ({self.lo}) must be below hi ({self.hi})")
        if self.scale == LOG and self.lo <= 0:
            raise ValueError(f"knob {self.name!r}: a log scale needs lo > 0")
        if self.scale == LOG_COMPLEMENT and self.hi >= 1:
            raise ValueError(f"knob {self.name!r}: a log scale of 1 − value needs hi < 1")

    def _log(self, v: float) -> float:
        return math.log(v) if self.scale == LOG else -math.log(1.0 - v)

    def unit(self, value: float) -> float:
        """Where `value` lies between lo (0) and hi (1) on the knob's scale."""
        lo, hi = self._log(self.lo), self._log(self.hi)
        return (self._log(value) - lo) / (hi - lo)

    def value(self, u: float) -> float:
        x = self._log(self.lo) + u * (self._log(self.hi) - self._log(self.lo))
        return math.exp(x) if self.scale == LOG else 1.0 - math.exp(-x)


@dataclass(frozen=True)
class Space:
    """What the fit moves: the weights (≥ 0; a simplex of proportions, or each in
    [0, weight_max]) and the knobs. Every other parameter of the start stays as it is."""

    weights: tuple[str, ...] = ("alpha", "beta", "gamma")
    knobs: tuple[Knob, ...] = ()
    simplex: bool = True
    weight_max: float = 1.0

    def __post_init__(self):
        names = list(self.weights) + [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"a parameter is named twice in the space: {names}")
        if not self.weights and not self.knobs:
            raise ValueError("the space has nothing to fit")
        if not self.simplex and not self.weight_max > 0:
            raise ValueError("weight_max must be positive")


@dataclass(frozen=True)
class FoldResult:
    """One fold: the parameters fitted without its queries and, on its queries, the mean metric
    of the start (before) and of those parameters (after)."""

    index: int
    test_size: int
    params: dict
    before: float
    after: float

    @property
    def gain(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class FitReport:
    """What a fit found and whether it recommends it (the rule is in the module's docstring)."""

    metric: str
    start: dict
    fitted: dict
    recommended: bool
    reason: str
    before: float          # mean over folds of the start's held-out metric
    after: float           # mean over folds of the fitted parameters' held-out metric
    gain_sd: float         # standard deviation of the per-fold gains (ddof = 1): the bar the mean gain must clear
    folds: tuple[FoldResult, ...]
    per_query: WinsLosses  # each query held out: its fold's parameters against the start
    evaluations: int       # parameter sets ranked (metric_of calls)
    seed: int

    @property
    def gain(self) -> float:
        return self.after - self.before

    @property
    def params(self) -> dict:
        """The parameters to use: the fitted ones if recommended, else the start."""
        return dict(self.fitted if self.recommended else self.start)

    def summary(self) -> list[str]:
        """Lines for a person (the CLI prints them)."""
        def shown(p):
            return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in p.items())
        per_fold = ", ".join(f"{f.gain:+.4f}" for f in self.folds)
        return [
            f"start:  {shown(self.start)}",
            f"fitted: {shown(self.fitted)}",
            f"held-out {self.metric} over {len(self.folds)} folds: {self.before:.4f} → {self.after:.4f} "
            f"(gain {self.gain:+.4f}, fold spread: sd {self.gain_sd:.4f})",
            f"per fold: {per_fold}",
            f"per query (held out): {self.per_query.summary()}",
            ("recommended: " if self.recommended else "not recommended: ") + self.reason,
        ]

    def to_json(self) -> dict:
        return {
            "metric": self.metric, "start": self.start, "fitted": self.fitted, "recommended": self.recommended,
            "reason": self.reason, "params": self.params, "before": self.before, "after": self.after,
            "gain": self.gain, "gain_sd": self.gain_sd, "evaluations": self.evaluations,
            "seed": self.seed,
            "folds": [{"index": f.index, "queries": f.test_size, "params": f.params, "before": f.before,
                       "after": f.after, "gain": f.gain} for f in self.folds],
            "per_query": {"better": self.per_query.better, "worse": self.per_query.worse, "same": self.per_query.same,
                          "deltas": {d.query_id: d.delta for d in self.per_query.deltas}},
        }


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def _holding(space: Space, start: Mapping) -> Space:
    """`space` widened where needed so that it holds the start (a knob's range, the box)."""
    knobs = []
    for k in space.knobs:
        v = float(start[k.name])
        if not math.isfinite(v) or (k.scale == LOG and v <= 0) or (k.scale == LOG_COMPLEMENT and v >= 1):
            raise ValueError(f"the start's {k.name} is {start[k.name]}, outside what its {k.scale} scale can hold")
        knobs.append(replace(k, lo=min(k.lo, v), hi=max(k.hi, v)))
    top = max((float(start[n]) for n in space.weights), default=0.0)
    return replace(space, knobs=tuple(knobs), weight_max=max(space.weight_max, top))


class _Search:
    """The points of a space (weights as proportions or values, knobs as 0–1 positions), the
    metric's values at each point (asked once), and the grid and refinement over them."""

    def __init__(self, metric_of: MetricOf, space: Space, start: Mapping, query_ids: Sequence[str], task: Task):
        missing = [n for n in list(space.weights) + [k.name for k in space.knobs] if n not in start]
        if missing:
            raise ValueError(f"the start has no value for {', '.join(missing)}")
        for n in space.weights:
            if not (math.isfinite(start[n]) and start[n] >= 0):
                raise ValueError(f"the start's weight {n} is {start[n]}; weights are finite and ≥ 0")
        self.space = _holding(space, start)
        self.metric_of, self.start, self.ids, self.task = metric_of, dict(start), tuple(query_ids), task
        total = math.fsum(start[n] for n in space.weights)
        self.total = total if total > 0 else 1.0
        self.start_point = self.point_of(self.start)
        self.cache: dict[tuple, dict[str, float]] = {}

    def point_of(self, params: Mapping) -> tuple:
        w = [float(params[n]) for n in self.space.weights]
        w = [x / self.total for x in w] if self.space.simplex else w
        return self._round(w + [k.unit(params[k.name]) for k in self.space.knobs])

    @staticmethod
    def _round(coords) -> tuple:
        return tuple(round(float(c), _DIGITS) + 0.0 for c in coords)

    def params_of(self, point: tuple) -> dict:
        if point == self.start_point:
            return dict(self.start)
        n = len(self.space.weights)
        scale = self.total if self.space.simplex else 1.0
        params = dict(self.start)
        params.update({name: point[i] * scale for i, name in enumerate(self.space.weights)})
        params.update({k.name: k.value(point[n + j]) for j, k in enumerate(self.space.knobs)})
        return params

    def values(self, point: tuple) -> dict[str, float]:
        got = self.cache.get(point)
        if got is None:
            self.task.check()
            answer = self.metric_of(self.params_of(point), self.ids)
            got = {}
            for q in self.ids:
                v = answer.get(q) if isinstance(answer, Mapping) else None
                if v is None or isinstance(v, bool) or not math.isfinite(v):
                    raise ValueError(f"metric_of gave {v!r} for query {q!r}; it must give a finite number for every query")
                got[q] = float(v)
            self.cache[point] = got
        return got

    def mean(self, point: tuple, ids: Sequence[str]) -> float:
        values = self.values(point)
        return _mean(values[q] for q in ids)

    def _distance(self, point: tuple) -> float:
        return math.dist(point, self.start_point)

    def best(self, points: Sequence[tuple], ids: Sequence[str]) -> tuple:
        """The point of highest mean on `ids`; ties to the nearest to the start, then the first."""
        means = [self.mean(p, ids) for p in points]
        top = max(means)
        tied = [i for i, m in enumerate(means) if m >= top - _TIE]
        return points[min(tied, key=lambda i: (self._distance(points[i]), i))]

    def grid(self, coarse: int, knob_points: int) -> list[tuple]:
        n = len(self.space.weights)
        if self.space.simplex:
            weights = [tuple(a / coarse for a in c) for c in product(range(coarse + 1), repeat=n) if sum(c) == coarse] if n else [()]
        else:
            values = [self.space.weight_max * i / coarse for i in range(coarse + 1)]
            weights = [w for w in product(values, repeat=n) if any(w)] if n else [()]
        knob_u = [0.5] if knob_points == 1 else [i / (knob_points - 1) for i in range(knob_points)]
        points = [self._round(w + u) for w in weights for u in product(knob_u, repeat=len(self.space.knobs))]
        return [self.start_point] + [p for p in dict.fromkeys(points) if p != self.start_point]

    def _moves(self, point: tuple, w_step: float, k_step: float) -> list[tuple]:
        n = len(self.space.weights)
        out = []
        if self.space.simplex:
            for i in range(n):
                for j in range(n):
                    d = min(w_step, point[i])
                    if i != j and d > 0:
                        p = list(point)
                        p[i] -= d
                        p[j] += d
                        out.append(p)
        else:
            for i in range(n):
                for sign in (1, -1):
                    p = list(point)
                    p[i] = min(max(p[i] + sign * w_step, 0.0), self.space.weight_max)
                    if p[i] != point[i] and any(p[:n]):
                        out.append(p)
        for j in range(len(self.space.knobs)):
            for sign in (1, -1):
                p = list(point)
                p[n + j] = min(max(p[n + j] + sign * k_step, 0.0), 1.0)
                if p[n + j] != point[n + j]:
                    out.append(p)
        return [q for q in dict.fromkeys(self._round(p) for p in out) if q != point]

    def refine(self, point: tuple, ids: Sequence[str], w_step: float, k_step: float, rounds: int) -> tuple:
        here = self.mean(point, ids)
        for _ in range(rounds):
            while True:
                moves = self._moves(point, w_step, k_step)
                if not moves:
                    break
                means = [self.mean(p, ids) for p in moves]
                best = max(range(len(moves)), key=lambda i: (means[i], -i))
                if means[best] <= here + _TIE:
                    break
                point, here = moves[best], means[best]
            w_step, k_step = w_step / 2, k_step / 2
        return point

    def search(self, ids: Sequence[str], coarse: int, knob_points: int, rounds: int) -> tuple:
        start = self.best(self.grid(coarse, knob_points), ids)
        w_step = (1.0 if self.space.simplex else self.space.weight_max) / coarse / 2
        k_step = 0.25 if knob_points == 1 else 1.0 / (knob_points - 1) / 2
        return self.refine(start, ids, w_step, k_step, rounds)


def fit(metric_of: MetricOf, space: Space, start: Mapping, query_ids: Iterable[str], *, folds: int = 5,
        seed: int = 0, groups: Mapping[str, object] | None = None, metric: str = "metric",
        coarse: int = 4, knob_points: int = 5, rounds: int = 4, task: Task | None = None) -> FitReport:
    """Fit `space`'s parameters from `start` to maximise the mean of `metric_of` over
    `query_ids`, with `folds`-fold cross-validation (folds.kfold with `seed` and `groups`).
    The grid has `coarse` steps per weight and `knob_points` values per knob; the refinement
    halves its steps `rounds` times. The same arguments give the same report. `task` (memviz.tasks)
    hears one step per fold and the final search, and a cancel stops the fit before the next
    ranking (Cancelled)."""
    if coarse < 1 or knob_points < 1 or rounds < 0:
        raise ValueError("coarse and knob_points must be at least 1, rounds at least 0")
    ids = tuple(query_ids)
    splits: tuple[Fold, ...] = kfold(ids, folds, seed=seed, groups=groups)
    task = task or quiet()
    search = _Search(metric_of, space, start, ids, task)
    start_values = search.values(search.start_point)

    results, held_out = [], {}
    steps = len(splits) + 1
    for fold in splits:
        task.progress(fold.index / steps, f"Fitting: fold {fold.index + 1} of {len(splits)}")
        point = search.search(fold.train, coarse, knob_points, rounds)
        values = search.values(point)
        held_out.update({q: values[q] for q in fold.test})
        results.append(FoldResult(fold.index, len(fold.test), search.params_of(point),
                                  _mean(start_values[q] for q in fold.test), _mean(values[q] for q in fold.test)))
    task.progress(len(splits) / steps, "Fitting: every query")
    fitted = search.search(ids, coarse, knob_points, rounds)
    task.progress(1.0, "Fitted")

    gains = [r.gain for r in results]
    mean_gain = _mean(gains)
    sd = math.sqrt(math.fsum((g - mean_gain) ** 2 for g in gains) / (len(gains) - 1))
    before, after = _mean(r.before for r in results), _mean(r.after for r in results)
    if fitted == search.start_point:
        recommended, reason = False, "the search found nothing better than the starting parameters; they are kept"
    elif mean_gain > sd and mean_gain > SAME_WITHIN:
        recommended, reason = True, (f"the held-out gain {mean_gain:+.4f} is above the fold spread (the per-fold "
                                     f"gains' sd {sd:.4f})")
    else:
        recommended, reason = False, (f"the held-out gain {mean_gain:+.4f} is not above the fold spread (the "
                                      f"per-fold gains' sd {sd:.4f}): the starting parameters are kept")
    return FitReport(metric=metric, start=dict(start), fitted=search.params_of(fitted), recommended=recommended,
                     reason=reason, before=before, after=after, gain_sd=sd, folds=tuple(results),
                     per_query=wins_losses(held_out, {q: start_values[q] for q in ids}),
                     evaluations=len(search.cache), seed=seed)


__all__ = ["FitReport", "FoldResult", "Knob", "LOG", "LOG_COMPLEMENT", "MetricOf", "Space", "fit"]
