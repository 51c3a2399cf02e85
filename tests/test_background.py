"""background.gc_paused: the cycle collector is off inside any pause, of any thread, and back
on after the last one ends — unless it was off before the first began."""
from __future__ import annotations

import gc
import sys
import threading

import pytest

from memviz.background import collect_and_freeze, gc_paused, in_thread


def test_the_collector_comes_back_after_the_last_pause_of_any_thread():
    assert gc.isenabled()
    inside, leave = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            leave.wait(10)
    t = threading.Thread(target=other)
    with gc_paused():
        assert not gc.isenabled()
        t.start()
        assert inside.wait(10)
    assert not gc.isenabled()       # the other thread's pause still runs
    leave.set()
    t.join(10)
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_ends_the_pause():
    try:
        with gc_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names in /proc are Linux's")
def test_a_thread_started_in_thread_carries_its_name_for_the_system_too():
    def names():
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
            return threading.current_thread().name, f.read().strip()
    assert in_thread(names, "memviz-a-long-name-for-a-job").result(10) == ("memviz-a-long-name-for-a-job", "memviz-a-long-n")


def test_collect_and_freeze_keeps_what_lives_out_of_later_walks_and_collects_earlier_cycles():
    import weakref

    class Node:
        pass
    try:
        old = Node()
        old.me = old
        gone = weakref.ref(old)
        collect_and_freeze()
        del old  # a cycle frozen: left for the next call
        kept = [Node()]
        collect_and_freeze()
        assert gone() is None
        assert gc.is_tracked(kept) and not any(o is kept for o in gc.get_objects())
        assert isinstance(kept[0], Node)
    finally:
        gc.unfreeze()
