"""Reflection and consolidation as undoable steps of the shared edit History (memviz.edits):
`history.perform(AcceptReflections(reflector, run))`, `history.perform(Consolidate(plan))`,
then Ctrl+Z / Ctrl+Shift+Z work as for any edit. Each step is one audited transaction."""
from __future__ import annotations

import time

from ..edits.commands import Action, Outcome
from ..store.errors import ValidationError
from .consolidation import ConsolidationPlan, apply_consolidation, describe, redo_consolidation, undo_consolidation
from .reflection import ReflectionRun, Reflector


def _n(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


class AcceptReflections(Action):
    """Write the accepted proposals; undo retires them (soft-delete), redo brings them back."""

    name, verb, past = "reflect", "Reflect", "Wrote"

    def __init__(self, reflector: Reflector, run: ReflectionRun, proposals=None, **kw):
        chosen = [p for p in run.proposals if p.decision] if proposals is None else list(proposals)
        chosen = [p for p in chosen if p.written_id is None]
        if not chosen:
            raise ValidationError("no reflection was accepted")
        super().__init__([p.id for p in chosen], **kw)
        self.reflector, self.run, self.proposals = reflector, run, chosen
        self.written: list[str] = []
        self.when: int | None = None

    @property
    def label(self) -> str:
        return f"Reflect ({_n(len(self.ids), 'reflection')})"

    def _do(self, store) -> Outcome:
        res = self.reflector.accept(self.run, self.proposals, store=store)
        self.written = res.ids
        return Outcome(f"Wrote {_n(len(res.ids), 'reflection')}", list(res.ids),
                       warning="; ".join(res.problems) or None)

    def _undo(self, store) -> Outcome:
        self.when = int(time.time())
        store.update_rows({i: {"valid_until": self.when} for i in self.written}, action="undo:" + self.name,
                          expected={i: {"valid_until": None} for i in self.written})
        return Outcome(f"Undone: {_n(len(self.written), 'reflection')} retired", list(self.written))

    def _redo(self, store) -> Outcome:
        store.update_rows({i: {"valid_until": None} for i in self.written}, action="redo:" + self.name,
                          expected={i: {"valid_until": self.when} for i in self.written})
        return Outcome(f"Redone: {_n(len(self.written), 'reflection')} current again", list(self.written))


class Consolidate(Action):
    """Apply a consolidation plan (decay + ticked prunes); undo puts the values back."""

    name, verb, past = "consolidate", "Consolidate", "Consolidated"

    def __init__(self, plan: ConsolidationPlan, **kw):
        ids = [d.id for d in plan.decay] + [p.id for p in plan.prune if p.selected]
        if not ids:
            raise ValidationError("nothing to consolidate: no decay and nothing ticked for soft-delete")
        super().__init__(ids, **kw)
        self.plan = plan
        self.result = None

    @property
    def label(self) -> str:
        n = len(self.ids)
        return f"Consolidate ({n} {'memory' if n == 1 else 'memories'})"

    def _do(self, store) -> Outcome:
        self.result = res = apply_consolidation(store, self.plan)
        warn = "; ".join(f"{i}: {why}" for i, why in res.skipped) or None
        return Outcome(f"Consolidated: {len(res.decayed)} decayed, {len(res.pruned)} soft-deleted",
                       res.decayed + res.pruned, warning=warn)

    def _undo(self, store) -> Outcome:
        skipped = undo_consolidation(store, self.result)
        return Outcome(f"Undone: consolidation ({describe(self.plan)})", [c[0] for c in self.result.changes],
                       warning="; ".join(f"{i}: {why}" for i, why in skipped) or None)

    def _redo(self, store) -> Outcome:
        skipped = redo_consolidation(store, self.result)
        return Outcome("Redone: consolidation", [c[0] for c in self.result.changes],
                       warning="; ".join(f"{i}: {why}" for i, why in skipped) or None)
