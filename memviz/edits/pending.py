"""Edits that could not be written yet because another process held the write lock.

The store already waits (SQLite's busy timeout) before giving up; here that is retried a
bounded number of times, and an edit that still cannot be written stays queued, in order,
until the user retries or explicitly discards it. It is never dropped silently.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from ..store.errors import BusyError


class EditKept(BusyError):
    """The agent kept the store busy past the bounded wait; the edits in `kept` are queued and
    `History.retry()` writes them (the UI asks: "the agent is busy; your edit is kept, retry?")."""

    def __init__(self, message: str, kept: list):
        super().__init__(message)
        self.kept = kept


@dataclass
class PendingStep:
    kind: str      # "do" | "undo" | "redo"
    action: object  # an edits.commands.Action

    def describe(self) -> str:
        return self.action.label if self.kind == "do" else f"{self.kind} {self.action.label}"


class Pending:
    """The queue of steps not yet written, oldest first."""

    def __init__(self):
        self._steps: deque[PendingStep] = deque()

    def __len__(self):
        return len(self._steps)

    def __iter__(self):
        return iter(list(self._steps))

    def add(self, step: PendingStep) -> None:
        self._steps.append(step)

    def first(self) -> PendingStep:
        return self._steps[0]

    def done_first(self) -> PendingStep:
        return self._steps.popleft()

    def discard(self) -> list[PendingStep]:
        """Drop every queued step (only when the user asks to); returns them."""
        out = list(self._steps)
        self._steps.clear()
        return out


def with_retry(fn, *, attempts: int, pause: float):
    """fn() retried on BusyError up to `attempts` times in all, `pause` seconds apart."""
    for attempt in range(attempts):
        try:
            return fn()
        except BusyError:
            if attempt == attempts - 1:
                raise
            time.sleep(pause * (attempt + 1))
