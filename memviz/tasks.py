"""The one progress/cancel protocol of every long job (imports, reflection, consolidation,
UMAP, embedding, the window's workers). No Qt here.

A job receives a `Task` and calls `task.progress(fraction, text)` now and then and
`task.check()` between steps (it raises `Cancelled` once someone called `task.cancel()`).
Whoever runs the job decides where progress goes (a callback: the CLI prints it, the
window's workers relay it to the GUI thread) and who may cancel (a button, Ctrl-C, a newer
job of the same name). `task.part(a, b)` hands a sub-step the range [a, b] of the whole, so
nested steps report one honest fraction.
"""
from __future__ import annotations

import threading
from typing import Callable

ProgressFn = Callable[[float, str], None]


class Cancelled(Exception):
    """Raised inside a job that noticed its task was cancelled; nothing half-done is kept."""

    def __init__(self, message: str = "Cancelled; nothing was written.") -> None:
        super().__init__(message)


class Task:
    """Handed to a job: `progress(fraction, text)`, `cancelled`, `check()`, `part(a, b)`."""

    def __init__(self, name: str = "", on_progress: ProgressFn | None = None) -> None:
        self.name = name
        self._event = threading.Event()
        self._on_progress = on_progress
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Ask the job to stop; hooks run once (e.g. a worker process's own cancel)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Call `hook` when the task is cancelled (at once if it already is)."""
        with self._lock:
            if not self._event.is_set():
                self._hooks.append(hook)
                return
        hook()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def progress(self, fraction: float, text: str = "") -> None:
        if self._on_progress is not None and not self._event.is_set():
            self._on_progress(min(1.0, max(0.0, float(fraction))), text)

    def part(self, start: float, end: float) -> "Task":
        """A view of this task for a sub-step: its 0..1 maps onto start..end; same cancel."""
        return _Part(self, start, end)


class _Part(Task):
    def __init__(self, parent: Task, start: float, end: float) -> None:
        self._parent, self._start, self._span = parent, start, end - start
        self.name = parent.name

    @property
    def cancelled(self) -> bool:
        return self._parent.cancelled

    def cancel(self) -> None:
        self._parent.cancel()

    def on_cancel(self, hook: Callable[[], None]) -> None:
        self._parent.on_cancel(hook)

    def check(self) -> None:
        self._parent.check()

    def progress(self, fraction: float, text: str = "") -> None:
        self._parent.progress(self._start + self._span * min(1.0, max(0.0, float(fraction))), text)


def quiet() -> Task:
    """A task nobody watches or cancels (library calls made without one)."""
    return Task()
