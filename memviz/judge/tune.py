"""A preset's weights and knobs fitted to judged queries over the engine: fit.py's search and
cross-validation, asking a JudgedEvaluator (evaluator.py) for each point's per-query measure.

    report = fit_preset(evaluator, "dual-memory", metric="ndcg@10", folds=5, groups=by_conversation)
    if report.recommended: history.perform(save_parameters(fitted_set(report, "tuned", start)))

What is searched is the preset's own: its weights (`preset.weights`: α, β, γ, on a simplex at
the start's total — a weighted sum ranks the same for any positive multiple of its weights)
and its searchable knobs (evaluator.KNOBS: τ in hours on a log scale, a decay factor on a log
scale of 1 − decay). Anything else (k, GA's agent_weights, the filters) stays as the start has
it. A preset with neither (hybrid, working-memory) has nothing to fit: NothingToFit says so.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..retrieval import Params
from ..retrieval.presets import ParameterSet, preset, preset_params
from ..tasks import Task
from .evaluator import JudgedEvaluator, fit_knobs
from .fit import FitReport, Space, fit


class NothingToFit(ValueError):
    """The preset has no weight and no knob to search."""


def fit_space(preset_name: str) -> Space:
    """What a fit of the preset moves (NothingToFit when nothing)."""
    p = preset(preset_name)
    weights = tuple(dict.fromkeys(p.weights.values()))
    knobs = fit_knobs(p.knobs)
    if not weights and not knobs:
        raise NothingToFit(f"the {p.name} preset has no weights or knobs to fit ({p.description}); "
                           "choose a weighted preset (" + ", ".join(
                               q for q in ("dual-memory", "generative-agents", "ada") if q != p.name) + ")")
    return Space(weights=weights, knobs=knobs)


def fit_preset(evaluator: JudgedEvaluator, preset: Params | str | None = None, metric: str = "ndcg@10",
               folds: int = 5, seed: int = 0, groups: Mapping[str, object] | None = None,
               task: Task | None = None, **search) -> FitReport:
    """Fit the preset's weights and knobs from `preset` (Params of the evaluator's preset, or a
    preset name: its defaults; None: the evaluator's own parameters) to maximise `metric` over
    the evaluator's judged queries, with `folds`-fold cross-validation (by `groups`: {query id:
    group}, e.g. the conversation, so each fold is tested on groups it never saw). `search`:
    fit()'s coarse / knob_points / rounds. The report's `params` are the fitted ones when it
    recommends them, else the start (fit.py's rule: the held-out gain above the fold spread)."""
    start = evaluator.base if preset is None else (preset_params(preset) if isinstance(preset, str) else preset)
    why = evaluator.accepts(start)
    if why:
        raise ValueError(f"{why}; prepare the evaluator with the preset to fit")
    space = fit_space(start.preset)
    names = (*space.weights, *(k.name for k in space.knobs))
    point = {n: getattr(start, n) for n in names}
    return fit(evaluator.metric_of(start, metric), space, point, evaluator.query_ids, folds=folds, seed=seed,
               groups=groups, metric=metric, task=task, **search)


def fitted_params(report: FitReport, start: Params) -> Params:
    """The parameters a report recommends (its fitted ones, or the start), as Params."""
    return start.replace(**{k: v for k, v in report.params.items()})


def fitted_set(report: FitReport, name: str, start: Params, description: str | None = None, *,
               force: bool = False) -> ParameterSet:
    """The parameter set of a fit's result under `name` (its recommended parameters; with
    `force`, the fitted ones even when not recommended), described by what it was fitted to."""
    desc = description if description is not None else (
        f"fitted for {report.metric}: held-out {report.before:.4f} → {report.after:.4f} over {len(report.folds)} folds"
        + ("" if report.recommended else " (not recommended: within the fold spread)"))
    values = report.fitted if force else report.params
    return ParameterSet.of(name, start.replace(**values), desc)


__all__ = ["NothingToFit", "fit_preset", "fit_space", "fitted_params", "fitted_set"]
