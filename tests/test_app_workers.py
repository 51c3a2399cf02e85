"""The window's workers speak memviz.tasks: a job gets a Task, its progress reaches the GUI
thread, a newer job of the same name cancels the older one (hooks run, result dropped)."""
from __future__ import annotations

import threading

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
