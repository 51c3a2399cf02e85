"""Undo/redo of edits as a plain object, shared by every panel (the Qt undo stack mirrors it).

Steps are written in the order the user asked for them. A step the agent's write lock held
up stays queued (see pending.py) and later steps queue behind it, so nothing is reordered or
lost. A step refused for a reason that waiting cannot cure (a conflict, a retired row, a
read-only store) leaves the queue and is raised to the caller with the action attached.

How the window drives it, with no logic of its own: Ctrl+Z / Ctrl+Shift+Z call undo()/redo();
the actions' enabled state and texts come from can_undo/undo_text, refreshed by `listeners`;
EditKept becomes "the agent is busy; your edit is kept, retry?" answered by retry() or
discard_pending(); ConflictError shows `expected` (as shown) beside `current` and, if the user
keeps the edit, performs `error.action.retarget(current_row)`; Outcome.ids says what to
refresh and select. One History per open store, used from one thread.
"""
from __future__ import annotations

from ..store.errors import IN_USE, BusyError, ConnectionLostError, ReadOnlyError, StoreError
from .commands import Action, Outcome
from .pending import EditKept, Pending, PendingStep, with_retry


class History:
    def __init__(self, store, *, limit: int = 200, attempts: int = 3, pause: float = 0.2):
        self.store = store
        self.limit = limit
        self.attempts, self.pause = attempts, pause
        self.pending = Pending()
        self._undo: list[Action] = []
        self._redo: list[Action] = []
        self.listeners: list = []  # callables(history) run after every change of the stacks or queue

    # ----------------------------------------------------------- state for menus
    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    @property
    def undo_text(self) -> str:
        return self._undo[-1].label if self._undo else ""

    @property
    def done(self) -> list[Action]:
        return list(self._undo)

    @property
    def undone(self) -> list[Action]:
        """Undone actions, the next one to redo last."""
        return list(self._redo)

    # ----------------------------------------------------------- steps
    def perform(self, action: Action) -> Outcome:
        """Write a new edit (after any still queued); raises EditKept when it had to be queued."""
        self._refuse_if_read_only()
        self.pending.add(PendingStep("do", action))
        return self.retry()

    def undo(self) -> Outcome | None:
        return self._step("undo", self._undo)

    def redo(self) -> Outcome | None:
        return self._step("redo", self._redo)

    def _step(self, kind: str, stack: list[Action]) -> Outcome | None:
        self._refuse_if_read_only()
        self.retry()  # queued edits go first; if they are still held up this raises EditKept
        if not stack:
            return None
        self.pending.add(PendingStep(kind, stack[-1]))
        return self.retry()

    def retry(self) -> Outcome | None:
        """Write the queued steps in order; returns the outcome of the last one written."""
        out = None
        try:
            while len(self.pending):
                step = self.pending.first()
                try:
                    out = with_retry(lambda step=step: self._run(step), attempts=self.attempts, pause=self.pause)
                except BusyError as e:
                    waiting = [s.describe() for s in self.pending]
                    why = str(e) if isinstance(e, ConnectionLostError) else f"This store is busy: {IN_USE}."
                    raise EditKept(
                        f"{why} Your edit is kept"
                        f" ({len(waiting)} waiting: {', '.join(waiting)}); retry?", list(self.pending)) from None
                except StoreError as e:
                    self.pending.done_first()
                    e.action, e.step = step.action, step.kind
                    raise
                self.pending.done_first()
        finally:
            self._changed()
        return out

    def discard_pending(self) -> list[Action]:
        """Drop the queued steps, at the user's explicit request."""
        dropped = [s.action for s in self.pending.discard()]
        self._changed()
        return dropped

    def _run(self, step: PendingStep) -> Outcome:
        a = step.action
        if step.kind == "do":
            out = a.apply(self.store)
            self._undo.append(a)
            del self._undo[:-self.limit]
            self._redo.clear()
        elif step.kind == "undo":
            out = a.revert(self.store)
            self._undo.remove(a)
            self._redo.append(a)
        else:
            out = a.apply(self.store)
            self._redo.remove(a)
            self._undo.append(a)
        return out

    def _refuse_if_read_only(self):
        if self.store.read_only:
            raise ReadOnlyError(f"{self.store.path} is open read-only ({self.store.read_only_reason}); "
                                "nothing was changed.")

    def _changed(self):
        for fn in list(self.listeners):
            fn(self)
