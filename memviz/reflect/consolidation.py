"""The assistant memory's consolidation without an LLM, previewed: Ebbinghaus decay of confidence, then
soft-delete (prune) of what falls below 0.05. Protected memories are never touched.

Decay: confidence x exp(-decay_rate x days^0.8), days since the memory was last accessed
(else since it was recorded). Applying it nightly must not compound, so each application
multiplies by exp(-rate x (d_now^0.8 - d_prev^0.8)), d_prev being the age at the previous
application (read from the audit log, `after.decayed_to`): applied once or a hundred times,
a memory ends with the same confidence as the formula gives.

`plan_consolidation()` reads only; `apply_consolidation(plan)` writes decay and the ticked
prunes in ONE transaction, each change audited ("decay", "prune"), and re-checks every row
against what the preview showed (changed, retired or protected since: skipped and reported).
`undo_consolidation(result)` puts the values back (also one audited transaction).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..store.clock import store_clock
from ..store.common import RowWrite
from ..tasks import Task, quiet

PRUNE_BELOW = 0.05
DECAY_KINDS = ("fact", "preference")  # the assistant memory (ADR 005): "decay() — Ebbinghaus on all fact/preference"
ACTOR = "memviz consolidate"
_DAY = 86400.0
_EPS = 1e-12
#: what apply, undo and redo compare with the preview before writing a row
_CHECKED = ("confidence", "valid_until", "protected")


def ebbinghaus(confidence, decay_rate, days):
    """The assistant memory's decay: confidence x exp(-decay_rate x days^0.8)."""
    days = np.maximum(np.asarray(days, dtype=np.float64), 0.0)
    return np.asarray(confidence, dtype=np.float64) * np.exp(-np.asarray(decay_rate, dtype=np.float64) * days ** 0.8)


@dataclass
class DecayItem:
    id: str
    kind: str
    agent: str
    days: float          # age used (days since last access, else since recorded)
    before: float
    after: float
    decayed_from: float | None = None  # reference time of the previous decay (None: never decayed)


@dataclass
class PruneItem:
    id: str
    kind: str
    agent: str
    confidence: float    # after this plan's decay
    content: str
    selected: bool = True  # the user unticks what must stay


@dataclass
class ConsolidationPlan:
    now: float
    agent: str | None
    kinds: tuple[str, ...] | None
    prune_below: float
    decay: list[DecayItem] = field(default_factory=list)
    prune: list[PruneItem] = field(default_factory=list)
    protected_skipped: int = 0   # protected memories that would otherwise have decayed or been pruned

    def untick(self, *ids) -> None:
        ids = set(ids)
        for p in self.prune:
            if p.id in ids:
                p.selected = False

    def tick(self, *ids) -> None:
        ids = set(ids)
        for p in self.prune:
            if p.id in ids:
                p.selected = True


@dataclass
class ConsolidationResult:
    decayed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (id, why)
    changes: list[tuple[str, str, dict, dict]] = field(default_factory=list)  # (id, action, before, after): for undo


def plan_consolidation(store, *, agent: str | None = None, kinds=DECAY_KINDS, prune_below: float = PRUNE_BELOW,
                       now: float | None = None, arrays=None, task: Task | None = None) -> ConsolidationPlan:
    """What decay and prune would change, as of `now` (default: the store's clock); writes nothing.
    `kinds` limits decay (None: every kind); prune looks at every live, unprotected memory of the
    agent. `arrays` (the store's MemoryArrays, if the caller has them) saves re-reading the store."""
    task = task or quiet()
    task.progress(0.0, "Reading the memories")
    a = store.arrays() if arrays is None else arrays
    now = store_clock(store, a).now() if now is None else float(now)
    kinds = tuple(kinds) if kinds is not None else None
    plan = ConsolidationPlan(now, agent, kinds, float(prune_below))
    task.check()
    task.progress(0.4, "Working out the decay")
    if len(a) == 0:
        return plan
    scope = a.live & ~a.bad_text
    if agent is not None:
        scope &= a.agent == agent
    decays = scope & (np.isin(a.kind, list(kinds)) if kinds is not None else True)
    would_decay_protected = decays & a.protected
    decays &= ~a.protected & (a.decay_rate > 0)
    anchor = np.where(np.isnan(a.last_accessed), a.created_at, a.last_accessed)
    d_now = np.maximum(now - anchor, 0.0) / _DAY
    last = store.decay_references()  # an undone decay restores the one before it; a producer's own counts
    prev_t = np.array([last.get(i, np.nan) for i in a.ids], dtype=np.float64)
    d_prev = np.where(np.isnan(prev_t) | (prev_t <= anchor), 0.0, np.minimum(prev_t, now) - anchor) / _DAY
    rate = np.nan_to_num(a.decay_rate)
    factor = np.exp(-rate * (np.maximum(d_now, 0) ** 0.8 - np.maximum(d_prev, 0) ** 0.8))
    after = np.where(decays, a.confidence * np.minimum(factor, 1.0), a.confidence)
    for i in np.flatnonzero(decays & (np.abs(after - a.confidence) > _EPS)):
        plan.decay.append(DecayItem(a.ids[i], a.kind[i], a.agent[i], float(d_now[i]), float(a.confidence[i]),
                                    float(after[i]), None if np.isnan(prev_t[i]) else float(prev_t[i])))
    task.check()
    task.progress(0.8, "Finding what falls below the prune threshold")
    low = scope & (after < prune_below)
    plan.protected_skipped = int(np.count_nonzero(would_decay_protected | (low & a.protected)))
    low &= ~a.protected
    idx = np.flatnonzero(low)
    contents = {r["id"]: r["content"] for r in store.get_many([a.ids[i] for i in idx], fields=("content",))}
    for i in idx:
        plan.prune.append(PruneItem(a.ids[i], a.kind[i], a.agent[i], float(after[i]), contents.get(a.ids[i], "")))
    return plan


def apply_consolidation(store, plan: ConsolidationPlan, *, actor: str = ACTOR) -> ConsolidationResult:
    """Write the plan's decay and its ticked prunes in one transaction (all audited)."""
    res = ConsolidationResult()
    chosen = [p for p in plan.prune if p.selected]
    when = int(time.time())

    def decide(cur) -> list[RowWrite]:
        writes, conf = [], {}
        for d in plan.decay:
            why = _refuse(cur.get(d.id), d.before)
            if why:
                res.skipped.append((d.id, why))
                continue
            before = {"confidence": d.before, "decayed_to": d.decayed_from}
            after = {"confidence": d.after, "decayed_to": plan.now}
            writes.append(RowWrite(d.id, {"confidence": d.after}, "decay", before, after,
                                   f"Ebbinghaus decay, {d.days:.1f} days since last access"))
            res.decayed.append(d.id)
            res.changes.append((d.id, "decay", before, after))
            conf[d.id] = d.after
        for p in chosen:
            row = cur.get(p.id)
            why = _refuse(row, None)
            now_conf = conf.get(p.id, row["confidence"] if row else None)
            if not why and now_conf is not None and now_conf >= plan.prune_below:
                why = f"its confidence is {now_conf:.3f} now, no longer below {plan.prune_below:g}"
            if why:
                res.skipped.append((p.id, why))
                continue
            writes.append(RowWrite(p.id, {"valid_until": when}, "prune", {"valid_until": None}, {"valid_until": when},
                                   f"confidence {now_conf:.3f} < {plan.prune_below:g}"))
            res.pruned.append(p.id)
            res.changes.append((p.id, "prune", {"valid_until": None}, {"valid_until": when}))
        return writes

    store.rewrite_rows([d.id for d in plan.decay] + [p.id for p in chosen], _CHECKED, decide, actor=actor)
    return res


def _refuse(row, expected_conf) -> str | None:
    if row is None:
        return "it is no longer in the store"
    confidence, valid_until, protected = (row[k] for k in _CHECKED)
    if protected:
        return "it is protected"
    if valid_until is not None:
        return "it was retired meanwhile"
    if expected_conf is not None and abs((confidence or 0.0) - expected_conf) > 1e-9:
        return "its confidence changed since the preview"
    return None


def undo_consolidation(store, result: ConsolidationResult, *, actor: str = ACTOR) -> list[tuple[str, str]]:
    """Put back what `result` changed (one audited transaction); rows changed since by someone
    else are left alone and returned as (id, why)."""
    return _swap(store, result, "undo", actor)


def redo_consolidation(store, result: ConsolidationResult, *, actor: str = ACTOR) -> list[tuple[str, str]]:
    """Write `result`'s changes again after an undo (same rules as undo)."""
    return _swap(store, result, "redo", actor)


def _swap(store, result, direction, actor):
    skipped = []
    changes = list(reversed(result.changes) if direction == "undo" else result.changes)

    def decide(cur) -> list[RowWrite]:
        writes = []
        for mid, action, before, after in changes:
            old, new = (after, before) if direction == "undo" else (before, after)
            col = "confidence" if action == "decay" else "valid_until"
            row = cur.get(mid)
            if row is None or row[col] != old[col]:
                skipped.append((mid, "it was changed since"))
                continue
            row[col] = new[col]  # a later change of the same row compares with this one
            # "undo decay" / "redo decay" keep decay_references' reference time right
            writes.append(RowWrite(mid, {col: new[col]}, f"{direction} {action}", old, new, f"{direction} consolidation"))
        return writes

    store.rewrite_rows([c[0] for c in changes], _CHECKED, decide, actor=actor)
    return skipped


def describe(plan: ConsolidationPlan) -> str:
    """One line for a status bar or the CLI."""
    ticked = sum(p.selected for p in plan.prune)
    return (f"decay lowers {len(plan.decay)} memories; {len(plan.prune)} fall below {plan.prune_below:g} "
            f"({ticked} ticked for soft-delete); {plan.protected_skipped} protected left alone")


__all__ = ["ebbinghaus", "plan_consolidation", "apply_consolidation", "undo_consolidation", "redo_consolidation",
           "describe",
           "ConsolidationPlan", "ConsolidationResult", "DecayItem", "PruneItem", "PRUNE_BELOW", "DECAY_KINDS"]
