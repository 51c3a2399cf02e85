"""Background jobs with progress and cancel whose stale results are dropped.

A job is a function `fn(ticket) -> result` run on a QThreadPool. Jobs have a name: a new
job of the same name cancels the previous one (its `ticket.cancelled` turns True and its
result, if it still arrives, is thrown away), so only the latest query / layout / load
reaches the panels. Results, errors and progress are delivered on the GUI thread.
Lanes are separate pools: "engine" has one thread so the retrieval engine is never used
by two threads at once; "bg" runs everything else.
"""
from __future__ import annotations

import threading
import traceback
from typing import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class Cancelled(Exception):
    """Raised inside a job that noticed its ticket was cancelled."""


class Ticket:
    """Handed to a job: `progress(fraction, text)`, `cancelled`, `check()` (raises Cancelled)."""

    def __init__(self, name: str, relay: "_Relay") -> None:
        self.name = name
        self._event = threading.Event()
        self._relay = relay
        self.cancel_hook: Callable[[], None] | None = None  # e.g. a UMAP job's own cancel()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        if self.cancel_hook is not None:
            self.cancel_hook()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.name)

    def progress(self, fraction: float, text: str = "") -> None:
        if not self._event.is_set():
            self._relay.progress.emit(self, float(fraction), text)


class _Relay(QObject):
    # Lives in the GUI thread; emitted from pool threads, so Qt queues the calls to the GUI thread.
    done = Signal(object, object)
    error = Signal(object, object)
    progress = Signal(object, float, str)


class _Runnable(QRunnable):
    def __init__(self, fn, ticket: Ticket, relay: _Relay) -> None:
        super().__init__()
        self.fn, self.ticket, self.relay = fn, ticket, relay

    def run(self) -> None:
        if self.ticket.cancelled:  # superseded while queued: never start stale work
            self._send("done", Cancelled(self.ticket.name))
            return
        try:
            result = self.fn(self.ticket)
        except Cancelled as e:
            self._send("done", e)
        except Exception as e:  # noqa: BLE001 - reported to the GUI thread
            e.__traceback_text__ = traceback.format_exc()
            self._send("error", e)
        else:
            self._send("done", result)

    def _send(self, signal: str, payload) -> None:
        try:
            getattr(self.relay, signal).emit(self.ticket, payload)
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
        self._latest: dict[str, Ticket] = {}
        self._handlers: dict[Ticket, tuple] = {}

    def pool(self, lane: str) -> QThreadPool:
        if lane not in self._pools:
            p = QThreadPool(self)
            p.setMaxThreadCount(1 if lane == "engine" else 2)
            self._pools[lane] = p
        return self._pools[lane]

    def submit(self, name: str, fn: Callable[[Ticket], object], *, on_done: Callable[[object], None],
               on_error: Callable[[Exception], None] | None = None,
               on_progress: Callable[[float, str], None] | None = None, lane: str = "bg") -> Ticket:
        self.cancel(name)
        ticket = Ticket(name, self._relay)
        self._latest[name] = ticket
        self._handlers[ticket] = (on_done, on_error, on_progress)
        self.activity.emit(name, -1.0, "")
        self.pool(lane).start(_Runnable(fn, ticket, self._relay))
        return ticket

    def cancel(self, name: str) -> None:
        old = self._latest.pop(name, None)
        if old is not None:
            old.cancel()
            self.finished.emit(name)

    def running(self, name: str) -> bool:
        return name in self._latest

    def wait(self, msecs: int = 30000) -> bool:
        """Block until every pool is idle (tests, benchmarks, shutdown). Deliveries still need the event loop."""
        return all(p.waitForDone(msecs) for p in self._pools.values())

    def shutdown(self) -> None:
        for name in list(self._latest):
            self.cancel(name)
        self.wait(5000)

    # ----------------------------------------------------------- delivery (GUI thread)
    def _current(self, ticket: Ticket):
        handlers = self._handlers.pop(ticket, None)
        if handlers is None or ticket.cancelled or self._latest.get(ticket.name) is not ticket:
            return None  # stale: a newer job of this name exists, or it was cancelled
        del self._latest[ticket.name]
        self.finished.emit(ticket.name)
        return handlers

    def _on_done(self, ticket: Ticket, result) -> None:
        handlers = self._current(ticket)
        if handlers is not None and not isinstance(result, Cancelled):
            handlers[0](result)

    def _on_error(self, ticket: Ticket, error: Exception) -> None:
        handlers = self._current(ticket)
        if handlers is None:
            return
        if handlers[1] is not None:
            handlers[1](error)
        else:
            traceback.print_exception(error)

    def _on_progress(self, ticket: Ticket, fraction: float, text: str) -> None:
        if self._latest.get(ticket.name) is ticket:
            handlers = self._handlers.get(ticket)
            if handlers and handlers[2] is not None:
                handlers[2](fraction, text)
            self.activity.emit(ticket.name, fraction, text)
