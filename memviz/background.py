"""The one way the core runs work in a thread: `in_thread(fn, name)` starts `fn` in a daemon
thread and hands back a Future of what it returned or raised (the store's quick check beside
the read, the launch's read before Qt is imported, the int8 index, the snapshot's write, a
mirror's indexes, an LLM request, a second core's share of a retrieval pass). `wait_for`
waits for such a Future unless a `memviz.tasks.Task` is cancelled first; a job that can be
stopped mid-statement registers its stop with `task.on_cancel` (e.g. `conn.interrupt`).
`read_ahead` reads a source in a thread ahead of its consumer; `gc_paused` holds the cyclic
garbage collector back while many objects are made at once, `collect_and_freeze` keeps a
store's read out of its later walks. `as_worker(name)` is what every
worker thread (these and the window's worker lanes) is: named for the system (top -H, py-spy,
bench/live.py's per-thread figures).

No other core module starts a thread (tests/test_contracts.py checks it). The window's jobs
use the worker lanes of memviz/app/workers.py, UMAP its own process (memviz/layout/umap_worker.py)."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TypeVar

from .tasks import Task

T = TypeVar("T")


_prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl if sys.platform == "linux" else None
_PR_SET_NAME = 15


def as_worker(name: str) -> None:
    """Make the calling thread a worker named `name` for the system (Linux: the first 15 bytes,
    what /proc/<pid>/task/<tid>/comm shows), so a profiler or a per-thread measure tells the
    workers apart. (Python's name is threading.Thread's; a Qt pool thread has none to keep.)"""
    if _prctl is not None:
        _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def in_thread(fn: Callable[[], T], name: str) -> Future:
    """Start `fn` in a daemon thread (a worker, `as_worker(name)`); the Future holds what it
    returned or raised."""
    fut: Future = Future()

    def work() -> None:
        as_worker(name)
        try:
            fut.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to whoever asks the Future
            fut.set_exception(e)
    threading.Thread(target=work, name=name, daemon=True).start()
    return fut


def wait_for(fut: Future, task: Task | None) -> T:
    """What `fut` returned (or raise what it raised), unless `task` is cancelled first: then
    `tasks.Cancelled` at once, and the thread is left to end by itself."""
    if task is None:
        return fut.result()
    done = threading.Event()
    task.on_cancel(done.set)
    fut.add_done_callback(lambda _: done.set())
    done.wait()
    task.check()
    return fut.result()


_gc_lock = threading.Lock()
_gc_holds = 0          # gc_paused blocks running now, in any thread
_gc_was_enabled = False


@contextmanager
def gc_paused():
    """Python's cycle collector off for the block (and back on after the last such block of
    any thread ends, if it was on). Building 100k records and rows makes millions of
    containers, and each collection walks every one already made: a third of a 100k mirror's
    read was the collector. Only cycles wait; reference counting frees everything else."""
    global _gc_holds, _gc_was_enabled
    with _gc_lock:
        if _gc_holds == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holds += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holds -= 1
            if _gc_holds == 0 and _gc_was_enabled:
                gc.enable()


def collect_and_freeze() -> None:
    """After a store is read whole: collect the cycles of what came before (a closed store's),
    then keep every object alive now out of the cyclic collector's later walks (gc.freeze).
    A full collection walks every element of every tracked list and dict, holding the GIL in
    whichever thread set it off, while the GUI thread waits (bench/live.py's stalls; figures in
    performance.md). Frozen objects are still freed by reference counting; only their cycles
    wait, for the next call, which the GUI thread makes (a Qt object in a cycle dies there)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def read_ahead(produce: Callable[[], Iterable[T]], batch: int, name: str, depth: int = 4) -> Iterator[list[T]]:
    """What `produce()` yields, in lists of `batch`, read in a daemon thread up to `depth` lists
    ahead of the consumer: a source's read (a database server, SQLite, a socket: they release
    the GIL) overlaps with the consumer's writing. An error in `produce` is raised here; when the
    consumer stops early (an error, a cancel) the thread stops at its next list."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            chunk: list[T] = []
            for item in produce():
                chunk.append(item)
                if len(chunk) >= batch:
                    if not put(chunk):
                        return
                    chunk = []
            if chunk and not put(chunk):
                return
            put(done)
        except BaseException as e:  # noqa: BLE001 - raised in the consumer
            put(_Failed(e))
    in_thread(work, name)
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error
