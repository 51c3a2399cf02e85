"""Changes to memviz's own records about a store — judged queries and saved parameter sets
(store/judged.py) — as undoable steps of the same History as edits of memories:

    history.perform(SaveJudged("travel", rows))      # add or replace queries of a set
    history.perform(DeleteJudged("travel", ["q3"]))  # remove queries; DeleteJudgedSet: all of them
    history.perform(SaveParameterSet(saved))         # DeleteParameterSet(name)
    history.undo(); history.redo()

Each step is one audited transaction (`store.change_judged`, `store.change_parameter_set`). A
step remembers what it replaced and passes what it wrote as `expected` when it is undone or
redone, so a change made meanwhile elsewhere (another window, the CLI) is a ConflictError,
never overwritten. The rows are the store's (JudgedRow: a query's JSON as text); memviz.judge
makes them from JudgedQuery objects (judge/stored.py).
"""
from __future__ import annotations

from ..store.errors import ValidationError
from ..store.judged import DELETE_JUDGED, DELETE_PARAMETERS, SAVE_JUDGED, SAVE_PARAMETERS, UNCHECKED, JudgedRow, SavedParameters
from ..words import count
from .commands import Action, Outcome


def _queries(n: int) -> str:
    return count(n, "judged query", "judged queries")


class RecordAction(Action):
    """An undoable change of memviz's records, not of memories: no memory ids (Outcome.ids is
    empty: no memory needs refreshing)."""

    def __init__(self, *, note: str | None = None):
        self.ids: list[str] = []
        self.expected: dict = {}
        self.note = note
        self.state = "new"

    def retarget(self, current_rows) -> Action:
        raise ValidationError("a change of judged queries or parameter sets is not retried against another version; "
                              "reload them and make the change again")


class SaveJudged(RecordAction):
    """Add or replace queries of a judged set. `shown` (query id -> its JSON as last seen, None:
    absent) guards the first write too; without it the rows are written over what is there."""

    name, verb = SAVE_JUDGED, "Save"

    def __init__(self, set_name: str, rows, *, shown: dict[str, str | None] | None = None, note: str | None = None):
        super().__init__(note=note)
        self.set_name = set_name
        self.rows = list(rows)
        if not self.rows:
            raise ValidationError("no judged query to save")
        self.shown = shown
        self._before: dict[str, JudgedRow | None] = {}

    @property
    def label(self) -> str:
        one = len(self.rows) == 1
        return f"Save judged query {self.rows[0].query_id}" if one else f"Save {_queries(len(self.rows))} in {self.set_name}"

    def _do(self, store) -> Outcome:
        self._before = store.change_judged(self.set_name, self.rows, (),
                                           expected=UNCHECKED if self.shown is None else self.shown,
                                           action=self.name, note=self.note)
        new = sum(b is None for b in self._before.values())
        return Outcome(f"Saved {_queries(len(self.rows))} in {self.set_name!r} ({new} new, "
                       f"{len(self.rows) - new} replaced)")

    def _undo(self, store) -> Outcome:
        back = [b for b in self._before.values() if b is not None]
        gone = [q for q, b in self._before.items() if b is None]
        store.change_judged(self.set_name, back, gone, expected={r.query_id: r.query for r in self.rows},
                            action="undo:" + self.name, note=self.note)
        return Outcome(f"Undone: saving {_queries(len(self.rows))} in {self.set_name!r}")

    def _redo(self, store) -> Outcome:
        store.change_judged(self.set_name, self.rows, (),
                            expected={q: None if b is None else b.query for q, b in self._before.items()},
                            action="redo:" + self.name, note=self.note)
        return Outcome(f"Redone: saving {_queries(len(self.rows))} in {self.set_name!r}")


class DeleteJudged(RecordAction):
    """Remove queries of a judged set (the audit keeps them; undo puts them back in their places).
    `shown` as for SaveJudged."""

    name, verb = DELETE_JUDGED, "Delete"

    def __init__(self, set_name: str, query_ids, *, shown: dict[str, str | None] | None = None,
                 note: str | None = None):
        super().__init__(note=note)
        self.set_name = set_name
        self.query_ids = list(dict.fromkeys(query_ids))
        if not self.query_ids:
            raise ValidationError("no judged query to delete")
        self.shown = shown
        self._removed: list[JudgedRow] = []

    @property
    def label(self) -> str:
        if len(self.query_ids) == 1:
            return f"Delete judged query {self.query_ids[0]}"
        return f"Delete {_queries(len(self.query_ids))} of {self.set_name}"

    def _do(self, store) -> Outcome:
        before = store.change_judged(self.set_name, (), self.query_ids,
                                     expected=UNCHECKED if self.shown is None else self.shown,
                                     action=self.name, note=self.note)
        self._removed = [before[q] for q in self.query_ids]
        return Outcome(f"Deleted {_queries(len(self._removed))} of {self.set_name!r}")

    def _undo(self, store) -> Outcome:
        store.change_judged(self.set_name, self._removed, (), expected=dict.fromkeys(self.query_ids),
                            action="undo:" + self.name, note=self.note)
        return Outcome(f"Undone: {_queries(len(self._removed))} of {self.set_name!r} are back")

    def _redo(self, store) -> Outcome:
        store.change_judged(self.set_name, (), self.query_ids, expected={r.query_id: r.query for r in self._removed},
                            action="redo:" + self.name, note=self.note)
        return Outcome(f"Redone: deleted {_queries(len(self._removed))} of {self.set_name!r}")


class DeleteJudgedSet(DeleteJudged):
    """Remove every query of a judged set (read when the step is first done)."""

    def __init__(self, set_name: str, *, note: str | None = None):
        RecordAction.__init__(self, note=note)
        self.set_name = set_name
        self.query_ids: list[str] = []
        self.shown = None
        self._removed = []

    @property
    def label(self) -> str:
        return f"Delete judged set {self.set_name}"

    def _do(self, store) -> Outcome:
        rows = store.judged_queries(self.set_name)
        if not rows:
            raise ValidationError(f"there is no judged set {self.set_name!r} in {store.path}")
        self.query_ids = [r.query_id for r in rows]
        self.shown = {r.query_id: r.query for r in rows}
        super()._do(store)
        return Outcome(f"Deleted judged set {self.set_name!r} ({_queries(len(self._removed))})")


class _ChangeParameterSet(RecordAction):
    """Put `after` (a SavedParameters; None: nothing) under the name `set_name`; undo puts back
    what was there. `shown`: what the name held as last seen (None: absent); without it,
    whatever is there is replaced. A subclass says what it did (`done()`, and `undone` and
    `redone`, formatted with the set's name)."""

    undone: str
    redone: str

    def __init__(self, set_name: str, after: SavedParameters | None, *, shown=UNCHECKED, note: str | None = None):
        super().__init__(note=note)
        self.set_name = set_name
        self.after = after
        self.shown = shown
        self._before: SavedParameters | None = None

    @property
    def label(self) -> str:
        return f"{self.verb} {self.set_name}"

    def done(self) -> str:
        raise NotImplementedError

    def _change(self, store, to: SavedParameters | None, expected, action: str) -> SavedParameters | None:
        return store.change_parameter_set(self.set_name, to, expected=expected, action=action, note=self.note)

    def _do(self, store) -> Outcome:
        self._before = self._change(store, self.after, self.shown, self.name)
        return Outcome(self.done())

    def _undo(self, store) -> Outcome:
        self._change(store, self._before, self.after, "undo:" + self.name)
        return Outcome(self.undone.format(self.set_name))

    def _redo(self, store) -> Outcome:
        self._change(store, self.after, self._before, "redo:" + self.name)
        return Outcome(self.redone.format(self.set_name))


class SaveParameterSet(_ChangeParameterSet):
    """Save a named parameter set (replacing one of that name)."""

    name, verb = SAVE_PARAMETERS, "Save parameter set"
    undone, redone = "Undone: saving parameter set {!r}", "Redone: saving parameter set {!r}"

    def __init__(self, saved: SavedParameters, *, shown=UNCHECKED, note: str | None = None):
        super().__init__(saved.name, saved, shown=shown, note=note)

    def done(self) -> str:
        return f"{'Saved' if self._before is None else 'Replaced'} parameter set {self.set_name!r} ({self.after.preset})"


class DeleteParameterSet(_ChangeParameterSet):
    """Remove a saved parameter set (the audit keeps it; undo puts it back)."""

    name, verb = DELETE_PARAMETERS, "Delete parameter set"
    undone, redone = "Undone: parameter set {!r} is back", "Redone: deleted parameter set {!r}"

    def __init__(self, set_name: str, *, shown=UNCHECKED, note: str | None = None):
        super().__init__(set_name, None, shown=shown, note=note)

    def done(self) -> str:
        return f"Deleted parameter set {self.set_name!r}"
