"""Background jobs with progress and cancel whose stale results are dropped.

A job is a function `fn(task) -> result` run on a QThreadPool; `task` is a
`memviz.tasks.Task` (the protocol every long job of the core speaks) whose progress is
relayed to the GUI thread. Jobs have a name: a new job of the same name cancels the previous
one (its `task.cancelled` turns True, its cancel hooks run, and its result, if it still
arrives, is thrown away), so only the latest query / layout / load reaches the panels.
Results, errors and progress are delivered on the GUI thread.
Lanes are separate pools: "engine" has one thread so the retrieval engine is never used
by two threads at once; "live" has one thread for a live refresh (and the poll that asks
whether one is due), so it never waits behind a long job (a layout, labels, the graph);
"place" has one for the placing of new points on the map (a k-NN product over the whole
matrix: at 1M rows it would hold refreshes back); "bg" runs everything else.
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from memviz.store.errors import translate
from memviz.tasks import Cancelled, Task


class WorkerTask(Task):
    """The Task a worker job gets: its progress goes to the GUI thread through the relay."""

    def __init__(self, name: str, relay: _Relay) -> None:
        super().__init__(name, on_progress=lambda fraction, text: relay.progress.emit(self, fraction, text))


class _Relay(QObject):
    # Lives in the GUI thread; emitted from pool threads, so Qt queues the calls to the GUI thread.
    done = Signal(object, object)
    error = Signal(object, object)
    progress = Signal(object, float, str)


class _Runnable(QRunnable):
    def __init__(self, fn, task: WorkerTask, relay: _Relay) -> None:
        super().__init__()
        self.fn, self.task, self.relay = fn, task, relay

    def run(self) -> None:
        if self.task.cancelled:  # superseded while queued: never start stale work
            self._send("done", Cancelled())
            return
        try:
            result = self.fn(self.task)
        except Cancelled as e:
            self._send("done", e)
        except Exception as e:  # noqa: BLE001 - reported to the GUI thread
            e.__traceback_text__ = traceback.format_exc()
            self._send("error", e)
        else:
            self._send("done", result)

    def _send(self, signal: str, payload) -> None:
        try:
            getattr(self.relay, signal).emit(self.task, payload)
        except RuntimeError:
            pass  # the window closed while the job ran: nobody is left to tell


class Workers(QObject):
    """Submit named jobs; see the module docstring.

    activity(name, fraction, text): progress of a running job (fraction < 0 = unknown)
    finished(name): a job ended (done, failed or cancelled)
    """

    activity = Signal(str, float, str)
    finished = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_done)
        self._relay.error.connect(self._on_error)
        self._relay.progress.connect(self._on_progress)
        self._pools: dict[str, QThreadPool] = {}
        self._latest: dict[str, WorkerTask] = {}
        self._handlers: dict[WorkerTask, tuple] = {}

    def pool(self, lane: str) -> QThreadPool:
        if lane not in self._pools:
            p = QThreadPool(self)
            p.setMaxThreadCount(1 if lane in ("engine", "live", "place") else 2)
            self._pools[lane] = p
        return self._pools[lane]

    def submit(self, name: str, fn: Callable[[Task], object], *, on_done: Callable[[object], None],
               on_error: Callable[[Exception], None] | None = None,
               on_progress: Callable[[float, str], None] | None = None, lane: str = "bg") -> Task:
        """Run `fn(task)`; `on_progress(fraction, text)` gets its progress on the GUI thread."""
        self.cancel(name)
        task = WorkerTask(name, self._relay)
        self._latest[name] = task
        self._handlers[task] = (on_done, on_error, on_progress)
        self.activity.emit(name, -1.0, "")
        self.pool(lane).start(_Runnable(fn, task, self._relay))
        return task

    def cancel(self, name: str) -> None:
        old = self._latest.pop(name, None)
        if old is not None:
            old.cancel()
            self.finished.emit(name)

    def running(self, name: str) -> bool:
        return name in self._latest

    def idle(self) -> bool:
        """No job running (benchmarks: the window has settled after opening a store)."""
        return not self._latest

    def wait(self, msecs: int = 30000) -> bool:
        """Block until every pool is idle (tests, benchmarks, shutdown). Deliveries still need the event loop."""
        return all(p.waitForDone(msecs) for p in self._pools.values())

    def shutdown(self) -> None:
        for name in list(self._latest):
            self.cancel(name)
        self.wait(5000)

    # ----------------------------------------------------------- delivery (GUI thread)
    def _current(self, task: WorkerTask):
        handlers = self._handlers.pop(task, None)
        if self._latest.get(task.name) is not task:
            return None  # stale: a newer job of this name exists, or Workers.cancel ended it
        del self._latest[task.name]   # ended, even when its task was cancelled directly (task.cancel())
        self.finished.emit(task.name)
        return None if task.cancelled else handlers

    def _on_done(self, task: WorkerTask, result) -> None:
        handlers = self._current(task)
        if handlers is not None and not isinstance(result, Cancelled):
            handlers[0](result)

    def _on_error(self, task: WorkerTask, error: Exception) -> None:
        handlers = self._current(task)
        if handlers is None:
            return
        error = translate(error)  # an SQLite error from any job reaches a panel as a StoreError
        if handlers[1] is not None:
            handlers[1](error)
        else:
            traceback.print_exception(error)

    def _on_progress(self, task: WorkerTask, fraction: float, text: str) -> None:
        if self._latest.get(task.name) is task:
            handlers = self._handlers.get(task)
            if handlers and handlers[2] is not None:
                handlers[2](fraction, text)
            self.activity.emit(task.name, fraction, text)


class PacedCall(QObject):
    """The one pacer of the app: a call that requests coalesce into (live redraws after a
    refresh, a query run again): `request()` runs `fn` in a later event-loop turn, once for
    every request made meanwhile, and never sooner after the previous run than that run cost ×
    (1/share − 1), so a panel whose redraw takes 100 ms spends at most `share` of the GUI
    thread on live redraws (at most `max_ms` apart). When `fn` only starts a job, the job
    reports what it cost with `took(seconds)` and that paces the next run instead."""

    def __init__(self, fn: Callable[[], None], parent: QObject | None = None, share: float = 0.25,
                 max_ms: int = 1000) -> None:
        super().__init__(parent)
        self._fn, self._share, self._max_ms = fn, share, max_ms
        self._next = 0.0  # monotonic time before which it does not run again
        self._timer = QTimer(self, singleShot=True, timeout=self._run)

    def request(self) -> None:
        if not self._timer.isActive():
            self._timer.start(max(0, int((self._next - time.monotonic()) * 1000)))

    def isActive(self) -> bool:
        return self._timer.isActive()

    def _run(self) -> None:
        t0 = time.monotonic()
        self._fn()
        self.took(time.monotonic() - t0)

    def took(self, seconds: float) -> None:
        """The last run cost `seconds` (a job it started, measured where it ran)."""
        self._next = time.monotonic() + min(self._max_ms / 1000, seconds * (1 / self._share - 1))
