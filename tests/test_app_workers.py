"""The window's workers speak memviz.tasks: a job gets a Task, its progress reaches the GUI
thread, a newer job of the same name cancels the older one (hooks run, result dropped); a
PacedCall coalesces requests and keeps its gap, and a paced job runs until it finishes."""
from __future__ import annotations

import sys
import threading
import time

import pytest

from memviz.app.workers import Workers  # noqa: E402
from memviz.tasks import Cancelled, Task  # noqa: E402


def test_progress_reaches_the_gui_thread_and_parts_map_onto_it(qtbot):
    workers = Workers()
    gui = threading.current_thread()
    seen, done = [], []

    def job(task):
        assert isinstance(task, Task)
        task.progress(0.5, "half")
        task.part(0.5, 1.0).progress(0.5, "three quarters")
        return 42

    workers.submit("j", job, on_done=done.append,
                   on_progress=lambda f, text: seen.append((f, text, threading.current_thread() is gui)))
    qtbot.waitUntil(lambda: done == [42], timeout=10000)
    assert seen == [(0.5, "half", True), (0.75, "three quarters", True)]
    assert not workers.running("j")


def test_a_newer_job_cancels_the_older_one_its_hook_runs_and_its_result_is_dropped(qtbot):
    workers = Workers()
    started, release, hooks, done = threading.Event(), threading.Event(), [], []

    def slow(task):
        task.on_cancel(lambda: hooks.append("old cancelled"))   # e.g. a UMAP job's own cancel
        started.set()
        release.wait(10)
        return "stale"

    old = workers.submit("j", slow, on_done=done.append)
    assert started.wait(10)
    workers.submit("j", lambda task: "fresh", on_done=done.append)
    assert old.cancelled and hooks == ["old cancelled"]
    with pytest.raises(Cancelled):
        old.check()
    release.set()
    qtbot.waitUntil(lambda: done == ["fresh"], timeout=10000)
    workers.wait()
    qtbot.wait(50)   # let any late delivery of the stale result arrive (it must be dropped)
    assert done == ["fresh"]


def test_a_job_that_raises_cancelled_ends_quietly(qtbot):
    workers = Workers()
    errors, ended = [], []
    workers.finished.connect(ended.append)

    def job(task):
        task.cancel()
        task.check()

    workers.submit("j", job, on_done=lambda r: errors.append(("done", r)), on_error=errors.append)
    qtbot.waitUntil(lambda: not workers.running("j"), timeout=10000)
    assert errors == [] and ended == ["j"]


def test_paced_calls_coalesce_and_keep_their_gap(qtbot):
    """A burst of requests is one run; the next waits min_ms from the last run's start; now=True
    runs at once."""
    from memviz.app.workers import PacedCall

    runs = []
    paced = PacedCall(lambda: runs.append(time.monotonic()), share=1.0, min_ms=300)
    for _ in range(5):
        paced.request()
    qtbot.waitUntil(lambda: len(runs) == 1, timeout=5000)
    paced.request()
    paced.request()
    qtbot.waitUntil(lambda: len(runs) == 2, timeout=5000)
    assert runs[1] - runs[0] >= 0.3 - 0.002
    qtbot.wait(50)
    assert len(runs) == 2 and not paced.isActive()
    paced.request(now=True)  # (what the user asked for: no gap)
    assert len(runs) == 3


def test_a_paced_job_runs_until_it_finishes_and_requests_meanwhile_run_once_after(qtbot):
    from memviz.app.workers import PacedCall

    started = []
    paced = PacedCall(lambda: started.append(time.monotonic()) or True, share=0.5, max_ms=None, job=True)
    paced.request()
    qtbot.waitUntil(lambda: len(started) == 1, timeout=5000)
    for _ in range(3):
        paced.request()
    qtbot.wait(50)
    assert len(started) == 1 and paced.isActive()  # the job still runs: nothing else starts
    ended = time.monotonic()
    paced.finished(0.2)  # it cost 0.2 s of CPU: at share 0.5 the next waits as long again
    qtbot.waitUntil(lambda: len(started) == 2, timeout=5000)
    assert started[1] - ended >= 0.2 - 0.002
    paced.finished(None)  # no work done: no gap owed
    paced.request()
    qtbot.waitUntil(lambda: len(started) == 3, timeout=5000)
    paced.cancel()
    assert not paced.isActive()
    paced.finished(1.0)  # a job forgotten by cancel: its end changes nothing
    paced.request()
    qtbot.waitUntil(lambda: len(started) == 4, timeout=5000)


def system_name() -> str:
    """The calling thread's name as the system shows it (top -H, py-spy, /proc)."""
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
        return f.read().strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names in /proc are Linux's")
def test_each_lane_s_jobs_run_in_threads_the_system_knows_by_the_lane(qtbot):
    workers = Workers()
    names = {}
    for lane in ("live", "place", "bg"):
        workers.submit(f"j-{lane}", lambda task, lane=lane: names.__setitem__(lane, system_name()), on_done=lambda _: None,
                       lane=lane)
    qtbot.waitUntil(lambda: len(names) == 3, timeout=10000)
    assert names == {"live": "memviz-live", "place": "memviz-place", "bg": "memviz-bg"}
