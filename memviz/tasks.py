"""The one progress/cancel protocol of every long job (imports, reflection, consolidation,
UMAP, embedding, the window's workers). No Qt here.

A job receives a `Task` and calls `task.progress(fraction, text)` now and then and
`task.check()` between steps (it raises `Cancelled` once someone called `task.cancel()`).
Whoever runs the job decides where progress goes (a callback: the CLI prints it, the
window's workers relay it to the GUI thread) and who may cancel (a button, Ctrl-C, a newer
job of the same name). `task.part(a, b)` hands a sub-step the range [a, b] of the whole, so
nested steps report one honest fraction; `Steps` counts units of work (texts embedded,
records written, LLM calls) into that fraction. A negative fraction means "not known yet"
(a busy bar) and is passed on as -1.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

ProgressFn = Callable[[float, str], None]
UNKNOWN = -1.0


class Cancelled(Exception):
    """Raised inside a job that noticed its task was cancelled; nothing half-done is kept."""

    def __init__(self, message: str = "Cancelled; nothing was written.") -> None:
        super().__init__(message)


def _clamp(fraction: float) -> float:
    fraction = float(fraction)
    return UNKNOWN if fraction < 0 else min(1.0, fraction)


class Task:
    """Handed to a job: `progress(fraction, text)`, `cancelled`, `check()`, `wait(s)`, `part(a, b)`."""

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

    def wait(self, seconds: float) -> None:
        """Sleep `seconds` (a retry's backoff) unless cancelled first; then raise Cancelled."""
        if self._event.wait(max(0.0, float(seconds))):
            raise Cancelled()

    def progress(self, fraction: float, text: str = "") -> None:
        if self._on_progress is not None and not self._event.is_set():
            self._on_progress(_clamp(fraction), text)

    def part(self, start: float, end: float) -> Task:
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

    def wait(self, seconds: float) -> None:
        self._parent.wait(seconds)

    def progress(self, fraction: float, text: str = "") -> None:
        f = _clamp(fraction)
        self._parent.progress(UNKNOWN if f < 0 else self._start + self._span * f, text)


class Steps:
    """Progress counted in units of work: `advance(n)` reports done/total on the task (the
    text says "<label> done/total" unless given) and then checks for cancel, so a job stops
    between two units. Sub-steps share one Steps to count into the same total."""

    def __init__(self, task: Task, total: int = 0, label: str = "") -> None:
        self.task, self.done, self.total, self.label = task, 0, int(total), label

    def start(self, total: int) -> None:
        self.done, self.total = 0, int(total)
        self.advance(0)

    def advance(self, n: int = 1, text: str | None = None) -> None:
        self.done += n
        if text is None:
            text = f"{self.label} {self.done:,}/{self.total:,}".strip()
        self.task.progress(self.done / self.total if self.total else UNKNOWN, text)
        self.task.check()


def quiet() -> Task:
    """A task nobody watches or cancels (library calls made without one)."""
    return Task()
