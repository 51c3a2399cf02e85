"""Judging and tuning in the window, Qt-free: the grades the user gives memories for the query
on screen (`MarkBook`), and the judged set the quality readout measures the current setting
against (`Tuning`: its evaluator, the readout, the near misses of one judged query, the metric
over a grid of two weights, a fit and what accepting it would change).

Like `session/query.py`, the models make the jobs and take their outcomes; the window's
JudgeController (app/controllers/judge_controller.py) runs the jobs on the "judge" lane (one
thread: an evaluator is used by one thread at a time) and the judged panel and the query
panel's marks bar show the models. Nothing here touches the evaluator on the caller's thread.

Marks belong to a query (a text, or a memory queried like) of one store. Running another query
keeps the marks of the last one (shown again when it is asked again); another store keeps the
unsaved marks of the last one until it is open again; `unsaved()` says what would be lost.
"""
from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..judge import GRADES, Evaluation, FitReport, JudgedQuery, JudgedSet, TopKChange, WinsLosses, wins_losses
from ..judge.evaluator import KNOBS, HeldBack, JudgedEvaluator, RecentChange
from ..judge.fit import Knob
from ..judge.tune import NothingToFit, fit_preset, fit_space
from ..retrieval import Params
from ..retrieval.presets import preset, preset_params
from ..tasks import Task
from .query import Query
from .state import Callbacks

#: what each grade is called and how a result shows it
GRADE_NAMES = {2: "highly relevant", 1: "relevant", 0: "not relevant"}
GRADE_MARKS = {2: "★★", 1: "★", 0: "✕"}
#: the readout's measures, by family (k: the setting's own)
FAMILIES = ("recall", "ndcg", "mrr", "p")
AXIS_NAMES = {"alpha": "α relevance", "beta": "β recency", "gamma": "γ importance", "tau_hours": "τ hours",
              "decay": "decay"}
#: the weight axes of the picture end at the first of these at least WEIGHT_ROOM × the largest weight
NICE_SPANS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 50.0, 100.0)
WEIGHT_ROOM = 1.25
#: seconds a picture may take: its side is chosen from what a setting cost (the last picture's, else
#: a quarter of the last readout's, which measures four measures)
GRID_BUDGET_S = 3.0
GRID_SIDES = (9, 25)


def measure_name(family: str, k: int) -> str:
    """The measure of a family at cutoff k ("ndcg" stays @10: the readout's nDCG@10)."""
    return {"recall": f"recall@{k}", "ndcg": "ndcg@10", "mrr": "mrr", "p": f"p@{k}"}[family]


def measure_label(name: str) -> str:
    """As people write it: nDCG@10, recall@10, MRR, P@10."""
    return name.replace("ndcg", "nDCG").replace("mrr", "MRR").replace("p@", "P@")


def grade_mark(grade: int | None) -> str:
    return "" if grade is None else GRADE_MARKS[grade]


# ------------------------------------------------------------------ marks
@dataclass
class Marks:
    """The grades given to memories for one query, and where they are saved (`set_name`,
    `query_id`; `saved`: the grades kept there, empty when never saved)."""

    query: Query
    grades: dict[str, int] = field(default_factory=dict)
    saved: dict[str, int] = field(default_factory=dict)
    set_name: str | None = None
    query_id: str | None = None
    #: grades shown on memories that replaced a graded one (a correction): not the user's marks,
    #: never saved; the measure moves the saved grade the same way (judge/successors.py)
    inherited: dict[str, int] = field(default_factory=dict)

    @property
    def dirty(self) -> bool:
        return self.grades != self.saved

    @property
    def savable(self) -> bool:
        """At least one memory is graded relevant (a judged query needs something to find)."""
        return any(g > 0 for g in self.grades.values())

    def describe(self) -> str:
        counts = [f"{sum(g == grade for g in self.grades.values())} {GRADE_NAMES[grade]}" for grade in (2, 1, 0)
                  if any(g == grade for g in self.grades.values())]
        return ", ".join(counts) if counts else "nothing marked"

    def title(self) -> str:
        return f"“{self.query.value}”" if self.query.kind == "text" else f"like memory {self.query.value}"


class MarkBook:
    """The marks of the open store, per query; `changed()` fires when the marks of the query on
    screen (`current`) or the set of unsaved ones change."""

    def __init__(self) -> None:
        self.store_key: str | None = None
        self.by_query: dict[Query, Marks] = {}
        self.kept: dict[str, dict[Query, Marks]] = {}   # other stores' unsaved marks
        self.current: Query | None = None
        self.changed = Callbacks()

    def open_store(self, key: str | None) -> int:
        """Another store is open (`key`: its path): the last one's unsaved marks are kept for
        when it is open again, this one's kept marks come back. Returns how many queries of
        the last store have unsaved marks kept."""
        if key == self.store_key:
            return 0
        left = {q: m for q, m in self.by_query.items() if m.dirty}
        if self.store_key is not None and left:
            self.kept[self.store_key] = left
        elif self.store_key is not None:
            self.kept.pop(self.store_key, None)
        self.store_key = key
        self.by_query = self.kept.pop(key, {}) if key is not None else {}
        self.current = None
        self.changed.emit()
        return len(left)

    def show(self, query: Query | None) -> None:
        """`query` is on screen now (its marks, if any, are the ones shown and changed)."""
        if query != self.current:
            self.current = query
            self.changed.emit()

    @property
    def marks(self) -> Marks | None:
        """The marks of the query on screen (None: none given yet)."""
        return None if self.current is None else self.by_query.get(self.current)

    def grade(self, memory_id: str) -> int | None:
        m = self.marks
        return None if m is None else m.grades.get(memory_id)

    def inherited(self, memory_id: str) -> int | None:
        """The grade `memory_id` shows for the query on screen because it replaced a memory
        graded for it (None: it replaced none, or it has a mark of its own)."""
        m = self.marks
        return None if m is None or memory_id in m.grades else m.inherited.get(memory_id)

    def follow(self, replaced: dict[str, str]) -> None:
        """Memories replaced by others (old id -> new id, a correction): every query's grade of an
        old one is shown on its replacement."""
        hit = False
        for m in self.by_query.values():
            for old, new in replaced.items():
                grade = m.grades.get(old, m.inherited.get(old))
                if grade is not None and new != old:
                    m.inherited[new], hit = grade, True
        if hit:
            self.changed.emit()

    def mark(self, ids: Iterable[str], grade: int | None) -> Marks:
        """Grade `ids` for the query on screen (None: take the mark off). ValueError when no
        query is on screen or the grade is not 0, 1 or 2."""
        if self.current is None:
            raise ValueError("run a query first: a mark grades a memory for the query on screen")
        if grade is not None and grade not in GRADES:
            raise ValueError(f"a grade is 0, 1 or 2, not {grade!r}")
        m = self.by_query.setdefault(self.current, Marks(self.current))
        for mid in ids:
            if grade is None:
                m.grades.pop(mid, None)
            else:
                m.grades[mid] = grade
        self.changed.emit()
        return m

    def load(self, query: Query, judged: JudgedQuery, set_name: str, measured: JudgedQuery | None = None) -> None:
        """A judged query of `set_name` is asked again: its grades are the marks of `query`
        (marks not saved yet stay: they are newer); the grades shown on replacements stay, with
        those of `measured` (the query as the measure takes it, `measured_as`)."""
        m = self.by_query.get(query)
        if m is not None and m.dirty:
            return
        grades = dict(judged.relevant)
        inherited = {} if m is None else dict(m.inherited)
        self.by_query[query] = Marks(query, dict(grades), grades, set_name, judged.id, inherited)
        if measured is None or not self.measured_as(query, measured):
            self.changed.emit()

    def measured_as(self, query: Query, measured: JudgedQuery) -> bool:
        """`measured` is how the measure takes `query`'s judged query (the evaluator's `measured`:
        the grades of corrected memories moved to what replaced them, as the store's links say,
        in this session or before it): those moved grades are shown on their memories. Whether
        anything shown changed."""
        m = self.by_query.get(query)
        if m is None:
            return False
        moved = {mid: g for mid, g in measured.relevant.items() if mid not in m.grades and m.inherited.get(mid) != g}
        if not moved:
            return False
        m.inherited.update(moved)
        self.changed.emit()
        return True

    def saved_as(self, marks: Marks, set_name: str, query_id: str) -> None:
        marks.saved, marks.set_name, marks.query_id = dict(marks.grades), set_name, query_id
        self.changed.emit()

    def forget_saved(self, set_name: str, still: Callable[[str], bool]) -> None:
        """Marks saved in `set_name` whose query is gone from it (`still(query_id)` is False: an
        undo, a delete) are unsaved again: what they hold is not kept anywhere now."""
        hit = False
        for m in self.by_query.values():
            if m.set_name == set_name and m.query_id is not None and not still(m.query_id):
                m.saved, hit = {}, True
        if hit:
            self.changed.emit()

    def unsaved(self) -> list[Marks]:
        """This store's queries with marks not saved, the one on screen first."""
        out = [m for m in self.by_query.values() if m.dirty]
        return sorted(out, key=lambda m: m.query != self.current)

    def unsaved_elsewhere(self) -> int:
        return sum(len(v) for v in self.kept.values())

    def discard(self) -> None:
        """Forget every unsaved mark (of every store)."""
        self.kept.clear()
        for q in [q for q, m in self.by_query.items() if m.dirty]:
            m = self.by_query[q]
            if m.saved:
                m.grades = dict(m.saved)
            else:
                del self.by_query[q]
        self.changed.emit()


def suggest_id(query: Query, taken: Iterable[str]) -> str:
    """A query id for the set: a few words of the text (or like-<memory>), unique among `taken`."""
    if query.kind == "text":
        words = re.findall(r"[a-z0-9]+", query.value.lower())
        base = "-".join(words[:6])[:40].strip("-") or "query"
    else:
        base = f"like-{query.value[:12]}"
    taken = set(taken)
    out, n = base, 2
    while out in taken:
        out, n = f"{base}-{n}", n + 1
    return out


def judged_query(marks: Marks, query_id: str, params: Params, as_of: float, judged_by: str,
                 judged_at: float | None = None) -> JudgedQuery:
    """The judged query the marks make: the query (its text, or the memory it queries like),
    the moment it is asked and the setting's agent/kind/tag filters, with who judged and when
    (InvalidJudgment saying what is wrong, e.g. nothing marked relevant)."""
    q = marks.query
    return JudgedQuery(query_id, dict(marks.grades), query=q.value if q.kind == "text" else "",
                       like=q.value if q.kind == "like" else None, as_of=as_of, agents=params.agents or (),
                       kinds=params.kinds or (), tags=params.tags or (), judged_by=judged_by,
                       judged_at=time.time() if judged_at is None else judged_at)


def query_of(q: JudgedQuery) -> Query:
    """The query panel's query for a judged query (its text, else the memory it queries like)."""
    return Query("text", q.query) if q.query.strip() else Query("like", q.like)


# ------------------------------------------------------------------ the readout
@dataclass(frozen=True)
class Readout:
    """The judged set measured under `params`, against `baseline`: the four measures (`now`,
    `before`), one measure per query against the baseline (`wins`), and the near misses of
    the judged query chosen (`query_id`)."""

    evaluator: JudgedEvaluator
    params: Params
    baseline: Params
    now: Evaluation
    before: Evaluation
    measure: str
    wins: WinsLosses
    query_id: str | None
    near: tuple[HeldBack, ...]
    cost: float          # seconds the setting's measures took (the picture's size follows it)


@dataclass(frozen=True)
class Axis:
    """One axis of the picture: a parameter and the values it takes. A knob (τ, decay) is
    drawn at its position on its log scale (0–1), a weight at its value."""

    name: str
    values: tuple[float, ...]
    knob: Knob | None = None

    def position(self, value: float) -> float:
        return self.knob.unit(value) if self.knob is not None else float(value)

    @property
    def span(self) -> tuple[float, float]:
        return self.position(self.values[0]), self.position(self.values[-1])

    def holds(self, value: float) -> bool:
        lo, hi = sorted((self.values[0], self.values[-1]))
        return lo <= value <= hi

    @property
    def label(self) -> str:
        return AXIS_NAMES.get(self.name, self.name)


@dataclass(frozen=True)
class Grid:
    """The mean of `measure` over x × y (`values[j, i]` at ys[j], xs[i]) at `params`' others."""

    evaluator: JudgedEvaluator
    x: Axis
    y: Axis
    values: np.ndarray
    measure: str
    params: Params


@dataclass(frozen=True)
class Changes:
    """What accepting a setting would change: the judged queries whose top k changes, and the
    agent's own recent ones (None: the store does not record them)."""

    judged: tuple[TopKChange, ...]
    recent: tuple[RecentChange, ...] | None
    asked: int            # the agent's recent queries compared


def axis_choices(preset_name: str) -> list[str]:
    """The parameters the picture can draw for a preset: its weights, then its searched knobs."""
    p = preset(preset_name)
    return [*dict.fromkeys(p.weights.values()), *(k for k in p.knobs if k in KNOBS)]


def weight_span(params: Params) -> float:
    top = max((getattr(params, w) for w in preset(params.preset).weights.values()), default=1.0)
    return next((s for s in NICE_SPANS if s >= WEIGHT_ROOM * top), math.ceil(WEIGHT_ROOM * top))


def make_axis(name: str, params: Params, n: int) -> Axis:
    """`n` values of `name` around the setting: a weight from 0 to a round span above the
    largest weight, a knob over its fit range (widened to hold the setting), on its log scale."""
    if name in KNOBS:
        k, v = KNOBS[name], float(getattr(params, name))
        k = Knob(k.name, min(k.lo, v), max(k.hi, v), k.scale)
        inner = [k.value(u) for u in np.linspace(0.0, 1.0, n)[1:-1]]
        return Axis(name, (k.lo, *inner, k.hi), k)   # the ends exact: a setting at one is on the axis
    return Axis(name, tuple(float(v) for v in np.linspace(0.0, weight_span(params), n)))


def grid_side(cost: float | None) -> int:
    """Points per side of the picture, for one measure that costs `cost` seconds per setting."""
    lo, hi = GRID_SIDES
    if not cost or cost <= 0:
        return 15
    return int(min(hi, max(lo, math.sqrt(GRID_BUDGET_S / cost))))


class Tuning:
    """The judged set the readout measures and what it shows; see the module docstring.

    sets_changed(): the store's judged sets (`sets`) were read again. readout_changed(),
    grid_changed(), fit_changed(): their outcome is in. status_changed(text): what the panel
    says when there is no readout (choose a set, preparing, why not)."""

    def __init__(self) -> None:
        self.sets: list[tuple[str, int]] = []
        self.set_name: str | None = None
        self.judged: JudgedSet | None = None
        self.evaluator: JudgedEvaluator | None = None
        self.stale = False                       # the store changed since the evaluator was prepared
        self.pinned: Params | None = None
        self.family = "ndcg"                     # the measure per query, of the picture and of a fit
        self.axes = ("alpha", "beta")
        self.query_id: str | None = None         # the judged query chosen (its near misses)
        self.readout: Readout | None = None
        self.grid: Grid | None = None
        self.report: FitReport | None = None
        self.report_start: Params | None = None
        self.grid_cost: float | None = None      # seconds per setting of the last picture
        self.status = ""
        self.sets_changed = Callbacks()
        self.readout_changed = Callbacks()
        self.grid_changed = Callbacks()
        self.fit_changed = Callbacks()
        self.status_changed = Callbacks()

    # ------------------------------------------------------------ what is measured
    def set_sets(self, sets: list[tuple[str, int]]) -> None:
        self.sets = list(sets)
        self.sets_changed.emit()

    def choose(self, name: str | None) -> None:
        """Measure `name` (None: nothing): the evaluator, readout and picture go."""
        if name != self.set_name:
            self.set_name = name
            self.reset()

    def reset(self) -> None:
        """No judged set read, no evaluator (another store, another set)."""
        self.judged = self.evaluator = self.readout = self.grid = None
        self.query_id = None
        self.stale = False
        self.readout_changed.emit()
        self.grid_changed.emit()

    def set_judged(self, judged: JudgedSet | None) -> bool:
        """The chosen set as read from the store; True when it differs from the one measured
        (its evaluator goes)."""
        if judged == self.judged:
            return False
        self.judged = judged
        self.evaluator = self.readout = self.grid = None
        if judged is None or self.query_id not in judged.ids:
            self.query_id = None
        return True

    def say(self, text: str) -> None:
        if text != self.status:
            self.status = text
            self.status_changed.emit(text)

    def measure(self, params: Params) -> str:
        return measure_name(self.family, int(params.k))

    def needs_evaluator(self, params: Params) -> bool:
        return self.judged is not None and (self.evaluator is None or self.stale
                                            or self.evaluator.accepts(params) is not None)

    # ------------------------------------------------------------ the baseline
    def defaults_of(self, params: Params) -> Params:
        """`params` with its preset's default weights and knobs (k and the filters kept)."""
        d = preset_params(params.preset)
        return params.replace(**{f: getattr(d, f) for f in preset(params.preset).settings if f != "k"})

    def baseline(self, params: Params) -> Params:
        """The pinned setting when it can be measured with `params`' evaluator, else the preset's defaults."""
        ev = self.evaluator
        if self.pinned is not None and ev is not None and ev.accepts(self.pinned) is None:
            return self.pinned
        return self.defaults_of(params)

    def pin(self, params: Params | None) -> None:
        self.pinned = params

    def baseline_text(self, params: Params) -> str:
        base = self.baseline(params)
        if base is self.pinned:
            return "the pinned setting"
        return f"the {params.preset} defaults"

    # ------------------------------------------------------------ jobs (the judge lane)
    def prepare_job(self, store, arrays, params: Params) -> Callable[[Task], JudgedEvaluator]:
        judged = self.judged
        return lambda task: JudgedEvaluator(store, judged, params, arrays=arrays, task=task)

    def prepared(self, evaluator: JudgedEvaluator) -> None:
        if evaluator.judged is self.judged:
            self.evaluator, self.stale = evaluator, False
            self.readout = self.grid = None

    def readout_job(self, params: Params) -> Callable[[Task], Readout]:
        ev, baseline, qid = self.evaluator, self.baseline(params), self.query_id
        measures = ev.measures_for(params)
        per_query = self.measure(params)

        def job(task: Task) -> Readout:
            t0 = time.perf_counter()
            now = ev.metrics(params, measures)
            cost = time.perf_counter() - t0
            before = ev.metrics(baseline, measures)
            task.check()
            near = tuple(ev.near_misses(qid, params)) if qid in ev.query_ids else ()
            return Readout(ev, params, baseline, now, before, per_query,
                           wins_losses(now.values(per_query), before.values(per_query)), qid, near, cost)
        return job

    def read_out(self, readout: Readout) -> bool:
        """A readout is in: kept (and shown) when it measures the evaluator in use."""
        if readout.evaluator is not self.evaluator:
            return False
        self.readout = readout
        self.readout_changed.emit()
        return True

    # ------------------------------------------------------------ the picture
    def axes_for(self, params: Params) -> tuple[str, str] | None:
        """The picture's two parameters for `params`' preset (the chosen ones where it has them,
        else its first two); None when it has fewer than two."""
        choices = axis_choices(params.preset)
        if len(choices) < 2:
            return None
        x, y = self.axes
        if x not in choices or y not in choices or x == y:
            x, y = choices[0], choices[1]
        return x, y

    def grid_wanted(self, params: Params) -> bool:
        """Whether the picture on screen is not the one for `params`: another evaluator, axes or
        measure, another value of a parameter it does not draw, or the setting off its axes."""
        axes = self.axes_for(params)
        g = self.grid
        if axes is None or self.evaluator is None:
            return False
        if g is None or g.evaluator is not self.evaluator or (g.x.name, g.y.name) != axes or \
                g.measure != self.measure(params):
            return True
        x, y = axes
        if not (g.x.holds(getattr(params, x)) and g.y.holds(getattr(params, y))):
            return True
        span = weight_span(params)
        if any(a.knob is None and a.values[-1] != span for a in (g.x, g.y)):
            return True   # the weights' span changed: the picture zooms to the setting
        return g.params.replace(**{x: 0.0, y: 0.0}) != params.replace(**{x: 0.0, y: 0.0})

    def picture_side(self) -> int:
        """Points per side of the next picture (GRID_BUDGET_S at what a setting cost lately)."""
        cost = self.grid_cost if self.grid_cost is not None else \
            (self.readout.cost / 4 if self.readout is not None else None)
        return grid_side(cost)

    def grid_job(self, params: Params, side: int) -> Callable[[Task], Grid]:
        ev, measure = self.evaluator, self.measure(params)
        x, y = self.axes_for(params)
        ax, ay = make_axis(x, params, side), make_axis(y, params, side)

        def job(task: Task) -> Grid:
            return Grid(ev, ax, ay, ev.grid(params, x, ax.values, y, ay.values, measure, task), measure, params)
        return job

    def drawn(self, grid: Grid, seconds: float | None = None) -> bool:
        if seconds is not None and grid.values.size:
            self.grid_cost = seconds / grid.values.size
        if grid.evaluator is not self.evaluator:
            return False
        self.grid = grid
        self.grid_changed.emit()
        return True

    def fitted_point(self, params: Params) -> dict | None:
        """The last fit's parameters when they are of `params`' preset (the picture marks them)."""
        if self.report is None or self.report_start is None or self.report_start.preset != params.preset:
            return None
        return dict(self.report.fitted)

    # ------------------------------------------------------------ fit
    def fit_check(self, params: Params) -> str | None:
        """Why a fit cannot start now (None: it can)."""
        if self.judged is None:
            return "choose a judged set to fit to"
        if len(self.judged) < 2:
            return "a fit needs at least 2 judged queries (cross-validation holds some out)"
        try:
            fit_space(params.preset)
        except NothingToFit as e:
            return str(e)
        if self.evaluator is None or self.stale or self.evaluator.accepts(params) is not None:
            return "the judged set is being prepared for this setting; fit when the readout shows"
        return None

    def fit_job(self, params: Params, metric: str, folds: int, by_agent: bool) -> Callable[[Task], FitReport]:
        ev = self.evaluator
        groups = {q.id: q.agents for q in ev.judged} if by_agent else None
        return lambda task: fit_preset(ev, params, metric=metric, folds=folds, groups=groups, task=task)

    def fitted(self, report: FitReport | None, start: Params | None) -> None:
        self.report, self.report_start = report, start
        self.fit_changed.emit()
        self.grid_changed.emit()   # the fitted point

    def changes_job(self, a: Params, b: Params) -> Callable[[Task], Changes]:
        ev = self.evaluator

        def job(task: Task) -> Changes:
            judged = tuple(ev.what_would_change(a, b))
            task.check()
            asked = ev.store.agent_queries(50)
            recent = tuple(ev.recent_changes(a, b, 50)) if asked else None
            return Changes(judged, recent, len(asked))
        return job


def describe(params: Params, fields: Sequence[str] | None = None) -> str:
    """A setting's weights and knobs in a few characters: α 0.50 β 0.30 γ 0.20 τ 24 h."""
    p = preset(params.preset)
    names = fields if fields is not None else [*dict.fromkeys(p.weights.values()), *(k for k in p.knobs if k in KNOBS)]
    short = {"alpha": "α", "beta": "β", "gamma": "γ", "tau_hours": "τ", "decay": "decay"}
    out = []
    for f in names:
        v = float(getattr(params, f) if not isinstance(params, dict) else params[f])
        out.append(f"τ {v:.3g} h" if f == "tau_hours" else f"decay {v:.5g}" if f == "decay" else f"{short.get(f, f)} {v:.2f}")
    return " ".join(out)


__all__ = ["AXIS_NAMES", "Axis", "Changes", "FAMILIES", "GRADE_MARKS", "GRADE_NAMES", "Grid",
           "MarkBook", "Marks", "Readout", "Tuning", "axis_choices", "describe", "grade_mark", "grid_side",
           "judged_query", "make_axis", "measure_label", "measure_name", "query_of", "suggest_id", "weight_span"]
