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
matrix: at 1M rows it would hold refreshes back); "judge" has one for the judged queries'
evaluator (the quality readout, its picture, a fit: one evaluator is used by one thread, and a
fit never holds the query's engine back); "bg" runs everything else.
"""
from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal

from memviz.background import as_worker
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
    def __init__(self, fn, task: WorkerTask, relay: _Relay, lane: str) -> None:
        super().__init__()
        self.fn, self.task, self.relay, self.lane = fn, task, relay, lane

    def run(self) -> None:
        as_worker(f"memviz-{self.lane}")  # (each run: a pool's threads come and go)
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
            p.setMaxThreadCount(1 if lane in ("engine", "live", "place", "judge") else 2)
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
        self.pool(lane).start(_Runnable(fn, task, self._relay, lane))
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
    """A paced call that requests coalesce into: the one pacing helper of the app's live work
    (redraws after a refresh, the refresh itself, placing new map points).

    `request()` runs `fn` in a later event-loop turn, once for every request made meanwhile, and
    never sooner than `min_ms` after the previous run began, nor sooner after it ended than its
    cost × (1/share − 1) (at most `max_ms`; None: no cap), so a call that costs 100 ms takes at
    most `share` of a core. `request(now=True)` runs it at once (an answer the user asked for).

    By default the cost is `fn`'s own time on the GUI thread (a panel whose redraw takes 100 ms
    spends at most `share` of the GUI thread on live redraws; a 10k-row panel redraws at once, a
    100k-row one a few times a second). With `job=True`, `fn` starts a background job and
    returns whether it did: the call then runs until `finished(cost)` says the job ended (its
    CPU seconds; None: it did no work, so nothing is paced), and requests made meanwhile run
    once after it."""

    def __init__(self, fn: Callable[[], object], parent: QObject | None = None, share: float = 0.25,
                 max_ms: int | None = 1000, min_ms: int = 0, job: bool = False) -> None:
        super().__init__(parent)
        self._fn, self._share, self._max_ms, self._min_ms, self._job = fn, share, max_ms, min_ms, job
        self._next = 0.0      # monotonic time before which it does not run again (the cost's gap)
        self._started = -1e9  # when the last run began (min_ms)
        self._running = False  # a job it started has not finished
        self._owed = None     # while running: a request made meanwhile (True: now=True)
        self._timer = QTimer(self, singleShot=True, timeout=self._run)
        self._timer.setTimerType(Qt.PreciseTimer)  # a coarse timer may fire 5% early: inside the gap

    def request(self, now: bool = False) -> None:
        if self._running:
            self._owed = bool(self._owed) or now
            return
        if now:
            self._timer.stop()
            self._run()
            return
        wait = max(self._next, self._started + self._min_ms / 1000) - time.monotonic()
        if not self._timer.isActive():
            self._timer.start(max(0, math.ceil(wait * 1000)))

    def isActive(self) -> bool:
        """A run is owed, or a job it started runs."""
        return self._timer.isActive() or self._running

    def cancel(self) -> None:
        """Forget what is owed and a job running (its `finished` is then ignored) and the pace."""
        self._timer.stop()
        self._running, self._owed, self._next, self._started = False, None, 0.0, -1e9

    def finished(self, cost: float | None) -> None:
        """(job=True) The job the last run started ended; `cost`: its CPU seconds, None when it
        did no work."""
        if not self._running:
            return
        self._running = False
        self._pace(cost)
        owed, self._owed = self._owed, None
        if owed is not None:
            self.request(now=owed)

    def _run(self) -> None:
        self._started = t0 = time.monotonic()
        started = self._fn()
        if self._job:
            self._running = bool(started)
        else:
            self._pace(time.monotonic() - t0)

    def took(self, seconds: float) -> None:
        """The last run's job (one `fn` started without job=True: a query run again) cost
        `seconds`, measured where it ran: that paces the next run instead of `fn`'s own time."""
        self._pace(seconds)

    def _pace(self, cost: float | None) -> None:
        if cost is None:
            self._started = -1e9  # no work done: no gap owed either
            return
        gap = cost * (1 / self._share - 1)
        self._next = time.monotonic() + (gap if self._max_ms is None else min(self._max_ms / 1000, gap))
