"""The one progress/cancel protocol (memviz.tasks): nested parts map progress onto one
fraction, cancel hooks run once, check()/wait() raise the one Cancelled, Steps count units;
batch embedding and the CLI's Ctrl-C speak it too."""
import signal
import threading
import time

import numpy as np
import pytest

from memviz.commands.interrupt import command_task
from memviz.embed import Embedder
from memviz.tasks import UNKNOWN, Cancelled, Steps, Task, quiet


def recording():
    seen = []
    return Task("job", on_progress=lambda f, text: seen.append((round(f, 6), text))), seen


def test_nested_parts_map_onto_the_whole():
    task, seen = recording()
    task.progress(0.1, "start")
    second = task.part(0.5, 1.0)
    second.progress(0.5, "half of the second half")
    inner = second.part(0.0, 0.5)          # the first half of the second half: 0.5 .. 0.75
    inner.progress(1.0, "inner done")
    inner.progress(2.0, "clamped")         # never past its own end
    second.progress(-1, "unknown")         # "not known yet" passes through as -1
    assert seen == [(0.1, "start"), (0.75, "half of the second half"), (0.75, "inner done"),
                    (0.75, "clamped"), (UNKNOWN, "unknown")]
    assert inner.name == "job"


def test_cancel_runs_hooks_once_and_late_hooks_at_once():
    task = Task()
    calls = []
    task.on_cancel(lambda: calls.append("a"))
    task.part(0, 0.5).on_cancel(lambda: calls.append("b"))   # a part registers on its parent
    task.part(0.5, 1).cancel()                               # a part cancels the whole task
    task.cancel()
    assert calls == ["a", "b"] and task.cancelled
    task.on_cancel(lambda: calls.append("late"))
    assert calls == ["a", "b", "late"]


def test_check_wait_and_progress_after_cancel():
    task, seen = recording()
    part = task.part(0.2, 0.4)
    part.check()                            # not cancelled: no error
    task.cancel()
    for call in (task.check, part.check, lambda: part.wait(30)):
        with pytest.raises(Cancelled, match="nothing was written"):
            call()
    task.progress(0.5, "after cancel")       # a cancelled job's progress is not reported
    assert seen == [] and part.cancelled


def test_wait_returns_after_its_time_and_stops_on_cancel():
    task = Task()
    t = time.monotonic()
    task.wait(0.05)                         # not cancelled: just sleeps
    assert time.monotonic() - t >= 0.05
    cancelled_at = []
    threading.Timer(0.05, lambda: (cancelled_at.append(time.monotonic()), task.cancel())).start()
    with pytest.raises(Cancelled):
        task.wait(60)
    assert time.monotonic() - cancelled_at[0] < 10  # ended by the cancel, not by the 60 s


def test_steps_count_units_and_stop_between_them():
    task, seen = recording()
    steps = Steps(task.part(0.0, 0.5), label="Importing")
    steps.start(2000)
    steps.advance(1000)
    steps.advance(500, "own text")
    assert seen == [(0.0, "Importing 0/2,000"), (0.25, "Importing 1,000/2,000"), (0.375, "own text")]
    task.cancel()
    with pytest.raises(Cancelled):
        steps.advance(1)
    unknown, seen2 = recording()
    Steps(unknown).advance(1)
    assert seen2 == [(UNKNOWN, "1/0")]
    assert not quiet().cancelled


class Counting(Embedder):
    model, dim = "count", 4

    def __init__(self):
        self.calls = []

    def _embed(self, texts):
        self.calls.append(len(texts))
        return np.ones((len(texts), 4), np.float32)


def test_embed_many_reports_batches_and_stops_between_them():
    emb = Counting()
    task, seen = recording()
    out = emb.embed_many([f"t{i}" for i in range(5)], task, batch=2)
    assert out.shape == (5, 4) and np.allclose(np.linalg.norm(out, axis=1), 1)
    assert emb.calls == [2, 2, 1]
    assert [t for _, t in seen] == ["Embedding 2/5", "Embedding 4/5", "Embedding 5/5"] and seen[-1][0] == 1.0

    emb = Counting()
    stopper = Task(on_progress=lambda f, text: stopper.cancel())   # cancel after the first batch
    with pytest.raises(Cancelled):
        emb.embed_many([f"t{i}" for i in range(5)], stopper, batch=2)
    assert emb.calls == [2]                 # the second batch never went to the provider
    assert Counting().embed_many(["a"]).shape == (1, 4)   # no task: nobody watches


def test_ctrl_c_cancels_the_command_task_and_a_second_one_interrupts(capsys):
    before = signal.getsignal(signal.SIGINT)
    with command_task("import", show="none") as task:
        signal.raise_signal(signal.SIGINT)
        assert task.cancelled              # the job stops at its next check
        with pytest.raises(Cancelled):
            task.check()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
    assert "cancelling" in capsys.readouterr().err


def test_command_task_prints_one_line_per_step_when_asked(capsys):
    with command_task("reflect", show="lines") as task:
        task.progress(0.0, "Reading recent memories")
        task.progress(0.0, "Reading recent memories")   # the same text again is not repeated
        task.progress(0.5, "Asking for questions")
    assert capsys.readouterr().err.splitlines() == ["Reading recent memories", "Asking for questions"]
