"""The window follows its store while another process (the agent) writes: the app's side of
memviz.session.live.

`LiveController(state, workers)` asks every POLL_MS, on the worker lane "live" (one thread:
it never queues behind a long job), whether another connection committed (`Poll.changed`; for
a framework store a read of its source); when one did, it reads what changed (`read_changes`,
job "refresh", on the same lane) and applies it on the GUI thread (`apply_changes`: the panels
get `rows_changed`, or `data_changed` for a whole re-read). Steady writes are read at most once
per REFRESH_GAP_S (a refresh's cost is mostly per refresh: the map's placing, repaints, so
steady writes cost ~1/gap refreshes a second, while a write waits at most the gap and one
refresh before it is on screen); `refresh()`, after the user's own edit, reads at once. A
delta that does not fit the loaded arrays, and File ▸ Reload, read the whole store (`reload`).
`refreshes` counts each kind ("delta", "full", "none") for the status and the benchmarks.
"""
from __future__ import annotations

import time
import traceback

import apsw
from PySide6.QtCore import QObject, QTimer, Signal

from memviz.app.workers import PacedCall, Workers
from memviz.background import collect_and_freeze
from memviz.session.live import Poll, apply_changes, read_changes
from memviz.session.state import AppState, load_store_data
from memviz.store.errors import StoreError, translate

POLL_MS = 250          # the poll's period: a pragma, or draining LISTEN's socket (PostgreSQL: no query);
                       # the wait for it is part of the commit-to-visible time, which must stay <= 1 s
REFRESH_GAP_S = 0.75   # at most one refresh an agent's writes ask for this often
POLL_JOB, READ_JOB, RELOAD_JOB = "watch", "refresh", "reload"


class LiveController(QObject):
    """message(text, ms): for the status line. error(title, text): a whole re-read failed."""

    message = Signal(str, int)
    error = Signal(str, str)

    def __init__(self, state: AppState, workers: Workers, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state, self.workers = state, workers
        self.refreshes = {"delta": 0, "full": 0, "none": 0}
        self._poll: Poll | None = None
        self._retired: list[Poll] = []  # polls of stores no longer shown, closed on the live lane
        self._after_reload = False      # a refresh was due while a whole re-read ran
        self.poll_timer = QTimer(self, interval=POLL_MS, timeout=self.poll)
        self._reads = PacedCall(self._read, self, share=1.0, min_ms=int(REFRESH_GAP_S * 1000), job=True)
        state.data_changed.connect(self._on_data)
        self._on_data(state.data)

    def _on_data(self, data) -> None:
        if data is not None:  # (a live window's refreshes then never wait for a walk of the whole read)
            collect_and_freeze()
        store = None if data is None else data.store
        if self._poll is not None and self._poll.store is store:
            return  # the same store read again whole
        self._reads.cancel()
        self.workers.cancel(READ_JOB)
        self._after_reload = False
        if self._poll is not None:
            self._retire(self._poll)
        self._poll = None if store is None else Poll(store)
        if store is None:
            self.poll_timer.stop()
        else:
            self.poll_timer.start()

    def _retire(self, poll: Poll) -> None:
        """Close `poll`'s connection on the live lane, after the poll that may be using it."""
        self._retired.append(poll)
        closing = list(self._retired)

        def closed(_result) -> None:
            self._retired = [p for p in self._retired if p not in closing]
        self.workers.submit(POLL_JOB, lambda task: [p.close() for p in closing], on_done=closed, lane="live")

    def close(self) -> None:
        """The window closes (its jobs have ended): stop polling, close the polls' connections."""
        self.poll_timer.stop()
        self._reads.cancel()
        for p in [*self._retired, self._poll]:
            if p is not None:
                p.close()
        self._retired, self._poll = [], None

    # ------------------------------------------------------------ poll → read → apply
    def poll(self) -> None:
        """Ask on the live lane whether another process committed; if so, read what changed
        (paced: no sooner than REFRESH_GAP_S after the previous read began)."""
        poll = self._poll
        if poll is None or any(self.workers.running(j) for j in (POLL_JOB, READ_JOB, RELOAD_JOB, "open")):
            return

        def seen(changed: bool) -> None:
            if changed and poll is self._poll:
                self._reads.request()

        def failed(error: Exception) -> None:
            # a store's error (in use by an edit, locked, closed with the window) is retried at the
            # next tick; anything else is a bug in memviz, and is not hidden
            if not isinstance(error, (StoreError, apsw.Error)):
                traceback.print_exception(error)
        self.workers.submit(POLL_JOB, lambda task: poll.changed(), on_done=seen, on_error=failed, lane="live")

    def refresh(self) -> None:
        """Read what changed now (after the user's own edit): not paced, never lost."""
        self._reads.request(now=True)

    def _read(self) -> bool:
        """Start reading what changed (PacedCall's job); False when nothing was started."""
        data = self.state.data
        if data is None:
            return False
        if self.workers.running(RELOAD_JOB):
            self._after_reload = True  # read from the re-read's token once it is in
            return False
        loaded = self.state.loaded_arrays

        def job(task):
            t0 = time.thread_time()
            return read_changes(data, loaded), time.thread_time() - t0

        def done(out) -> None:
            fresh, cost = out
            try:
                kind = apply_changes(self.state, fresh)
                if kind == "misfit":
                    self.reload()
                else:
                    self.refreshes[kind] += 1
            finally:  # a read asked for meanwhile starts from what was just applied
                self._reads.finished(cost)

        def failed(err: Exception) -> None:
            self._reads.finished(0.0)
            self.message.emit(f"Could not read the store's changes: {err}", 8000)
        self.workers.submit(READ_JOB, job, on_done=done, on_error=failed, lane="live")
        return True

    def reload(self) -> None:
        """Re-read the whole open store (File ▸ Reload, or a change a delta cannot describe),
        keeping the selection and the view."""
        data = self.state.data
        if data is None:
            return
        store = data.store

        def done(new) -> None:
            if self.state.data is not None and self.state.data.store is store:
                self.refreshes["full"] += 1
                self.state.set_data(new)
            self._owed_after_reload()

        def failed(err: Exception) -> None:
            self._owed_after_reload()
            self.error.emit("Reload failed", str(translate(err, store.path)))
        self.workers.submit(RELOAD_JOB, lambda t: load_store_data(store), on_done=done, on_error=failed)

    def _owed_after_reload(self) -> None:
        if self._after_reload:
            self._after_reload = False
            self._reads.request(now=True)
