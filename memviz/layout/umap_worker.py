"""UMAP in a warm worker process, so the GUI process never imports umap or compiles numba.

`warm_up()` starts one shared worker early: it imports umap and fits a tiny dataset, which
compiles the numba kernels once for the life of the worker; every later `UmapJob` reuses it.
The worker sets NUMBA_CACHE_DIR to a user cache folder and switches on numba's disk cache for
umap's and pynndescent's kernels (umap itself declares almost none cacheable), so a new
worker (the next run of the app, or after a cancel) loads compiled code instead of compiling.
Up to EXACT_KNN_MAX points the neighbour graph is exact and computed with numpy
(knn.nearest_self): pynndescent's NN-descent cannot be cached (numba refuses: dynamic globals)
and is compiled again in every new process, which costs more than the exact graph.
Only a `whole` job past that size uses NN-descent (the window's job fits at most
sampled.SAMPLE points); `warm_up(n_points)` compiles it in advance only when a job will need it.

A job reports its stages through a `memviz.tasks.Task` (`STAGE_TEXT`): "preparing" while
the worker imports umap and compiles (or loads the compiled code), then "nearest neighbours",
"neighbour graph", "initial layout", "optimising layout (epoch i/n)" and "placing". On a new
install `import umap` compiles umap's and pynndescent's cached kernels and the warm-up fit
compiles the rest, both while the job says "preparing" (see `prepare_text`); with the disk
cache filled both are short (bench/layout.py, the manual's performance page).
`task.cancel()` (or `job.cancel()`) terminates the worker process (numba
loops cannot be interrupted) and a fresh one is started and warmed, so the next job still
finds a worker. Messages carry the job id: anything from a stale job is dropped, and
submitting a job cancels the one still running. Progress and `on_done` run on the worker's
listener thread; a Qt caller forwards them with a signal. `result()` is meant for the thread
that owns the store (it writes the cache).
"""
from __future__ import annotations

import atexit
import itertools
import multiprocessing as mp
import os
import queue
import re
import sys
import threading
import time
import traceback
from concurrent import futures
from pathlib import Path

import numpy as np

from ..background import in_thread
from ..tasks import UNKNOWN, Cancelled, Task
from ..userdirs import user_cache_dir
from . import sampled
from .distinct import distinct_rows
from .pca import embedded_rows, pca_2d

DEFAULT_PARAMS = {"n_neighbors": 15, "min_dist": 0.1, "metric": "cosine", "seed": 42}
EXACT_KNN_MAX = 30_000   # above this many points umap's NN-descent builds the neighbour graph
LAYOUT_KEYS = tuple(DEFAULT_PARAMS)  # what shapes a layout (n_epochs is a test/bench knob, not cached apart)
STAGES = ("preparing", "neighbours", "graph", "init", "epochs", "placing", "done")
#: what the user reads for each stage ("epochs" gets "(epoch i/n)" appended)
STAGE_TEXT = {"preparing": "UMAP: preparing", "neighbours": "UMAP: nearest neighbours",
              "graph": "UMAP: neighbour graph", "init": "UMAP: initial layout",
              "epochs": "UMAP: optimising layout", "placing": "UMAP: placing", "done": "UMAP: done"}
#: where each stage sits in the job's 0..1 (preparing has no known length: a busy bar)
_SPAN = {"neighbours": (0.0, 0.25), "graph": (0.25, 0.28), "init": (0.28, 0.32), "epochs": (0.32, 0.97),
         "placing": (0.97, 1.0), "done": (1.0, 1.0)}


def umap_params(params: dict | None = None) -> dict:
    """The full UMAP parameters a layout is cached under: LayoutCache.get("umap", arrays, umap_params())."""
    full = {**DEFAULT_PARAMS, **(params or {})}
    return {k: full[k] for k in LAYOUT_KEYS}


def numba_cache_dir() -> Path:
    return user_cache_dir() / "numba"


def compiled_before(numba_dir) -> bool:
    """Whether numba's disk cache already holds compiled kernels (index files), i.e. the
    one-time compile of a new install has been paid."""
    return any(Path(numba_dir).rglob("*.nbi"))


def prepare_text(first_compile: bool, large: bool = False) -> str:
    """The honest "preparing" text: a new install compiles the UMAP code (about a minute on two
    cores); later sessions load it from the disk cache (a few seconds), except NN-descent
    (stores above EXACT_KNN_MAX), which numba cannot cache and compiles in every session."""
    if first_compile:
        return "UMAP: preparing (one-time compile of the UMAP code, ~1 min on a new install)"
    if large:
        return "UMAP: preparing (compiling the nearest-neighbour search, ~40 s once per session)"
    return "UMAP: preparing (loading the compiled UMAP code)"


# ====================================================================== worker process side
class _ProgressSink:
    """Stands in for stdout (umap's verbose stage lines) and for tqdm's file (epochs)."""

    _MARKS = (("Nearest Neighbor", "neighbours"), ("fuzzy simplicial", "graph"), ("Construct embedding", "init"))

    def __init__(self, conn, job_id):
        self.conn, self.job_id, self._last = conn, job_id, 0.0

    def send(self, stage, fraction, force=False):
        now = time.monotonic()
        if force or now - self._last > 0.1 or fraction >= 1.0:
            self._last = now
            self.conn.send(("progress", self.job_id, stage, fraction))

    def write(self, text):
        for mark, stage in self._MARKS:
            if mark in text:
                self.send(stage, 0.0, force=True)
        m = re.findall(r"(\d+)/(\d+)", text)
        if m:
            done, total = map(int, m[-1])
            now = time.monotonic()
            if total and (now - self._last > 0.1 or done >= total):
                self._last = now
                self.conn.send(("epoch", self.job_id, done, total))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def _fit(X, params, sink=None):
    """UMAP of X (float32, unit-norm rows). Up to EXACT_KNN_MAX points the neighbour graph is
    exact and computed here (see knn.py); above that umap's NN-descent does it."""
    import umap

    from .knn import nearest_self

    n = X.shape[0]
    k = int(min(params["n_neighbors"], max(2, n - 1)))
    kw = dict(n_components=2, n_neighbors=k, min_dist=float(params["min_dist"]), metric=params["metric"],
              random_state=int(params["seed"]), force_approximation_algorithm=bool(params.get("force_approximation")))
    if params.get("n_epochs"):
        kw["n_epochs"] = int(params["n_epochs"])
    if n <= int(params.get("exact_knn_max", EXACT_KNN_MAX)) and params["metric"] in ("cosine", "euclidean"):
        on_block = (lambda d, t: sink.send("neighbours", d / t)) if sink is not None else None
        idx, sim = nearest_self(X, k, on_block)
        dist = np.clip(1.0 - sim, 0.0, None) if params["metric"] == "cosine" else np.sqrt(np.clip(2 - 2 * sim, 0, None))
        dist[idx == np.arange(n)[:, None]] = 0.0
        kw["precomputed_knn"] = (idx, dist.astype(np.float32), None)
    if sink is not None:
        kw.update(verbose=True, tqdm_kwds={"file": sink, "bar_format": "{n}/{total}", "mininterval": 0.1,
                                           "disable": False})
    return umap.UMAP(**kw).fit_transform(X).astype(np.float32)


def _cache_all_kernels() -> int:
    """Let numba cache umap's own kernels on disk too: umap declares few of them `cache=True`,
    so without this every new worker process compiles them again (about a minute)."""
    import numba
    from numba.core.caching import NullCache

    count = 0
    for name, mod in list(sys.modules.items()):
        if not (name.startswith("umap") or name.startswith("pynndescent")) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, numba.core.dispatcher.Dispatcher) and isinstance(obj._cache, NullCache):
                try:
                    obj.enable_caching()
                    count += 1
                except RuntimeError:
                    pass  # not cacheable (no source file): compiled in each process
    return count


def _warm(large: bool) -> float:
    """Compile what a fit needs by fitting a tiny dataset; `large` adds the NN-descent path."""
    t = time.perf_counter()
    X = np.random.default_rng(0).normal(size=(300, 16)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    base = dict(DEFAULT_PARAMS, n_epochs=5)
    _fit(X, base)
    if large:
        _fit(X, dict(base, exact_knn_max=0, force_approximation=True))
    return time.perf_counter() - t


def _worker_main(conn, numba_dir: str, cache_all: bool = True):
    os.environ["NUMBA_CACHE_DIR"] = numba_dir       # before numba is imported
    import warnings
    warnings.filterwarnings("ignore")               # umap's notes (n_jobs, spectral init) are not for users
    import umap  # noqa: F401 - the import itself is part of the warm-up
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")           # one core for background work: the GUI keeps the other
    if cache_all:
        _cache_all_kernels()
    real_stdout = sys.stdout
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            if msg[0] == "stop":
                return
            if msg[0] == "warm":
                conn.send(("warm", None, _warm(msg[1]), msg[1]))
            elif msg[0] == "fit":
                _, job_id, X, params = msg
                sink = _ProgressSink(conn, job_id)
                sys.stdout = sink
                try:
                    conn.send(("progress", job_id, "neighbours", 0.0))
                    coords = _fit(X, params, sink)
                    conn.send(("result", job_id, coords))
                except Exception as e:  # noqa: BLE001 - reported to the caller as the job's error
                    conn.send(("error", job_id, f"{type(e).__name__}: {e}"))
                finally:
                    sys.stdout = real_stdout
    except (EOFError, OSError):  # the window went away (closed, killed) mid-send: nobody to tell
        return


# ====================================================================== GUI process side
class UmapWorker:
    """One long-lived worker process (spawned, so it is clean of the caller's Qt state).
    Nothing here blocks the caller: messages go out through a sender thread (a 100 MB matrix
    would otherwise stall the GUI while the worker is still compiling) and come back on a
    listener thread."""

    def __init__(self, numba_dir: str | os.PathLike | None = None, *, cache_all_kernels: bool = True):
        self.numba_dir = str(numba_dir or numba_cache_dir())
        self.cache_all_kernels = cache_all_kernels
        self._ctx = mp.get_context("spawn")
        self._lock = threading.RLock()
        self._proc = None
        self._outbox: queue.Queue | None = None
        self._job: UmapJob | None = None
        self.warm = threading.Event()          # set when the last requested warm-up finished
        self._large = False                    # warm the NN-descent path too (a store above EXACT_KNN_MAX)
        self._warmed_large = None              # what this process was asked to warm: None, False, True
        self.warm_seconds: float | None = None  # compile time of the last warm-up
        self.started_at: float | None = None
        self.first_compile = False             # this process compiles into an empty numba cache

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self, warm: bool = True, large: bool = False) -> UmapWorker:
        """Spawn the process if it is not running; `warm` compiles on a tiny dataset in the
        background, `large` also compiles the NN-descent path needed above EXACT_KNN_MAX points."""
        with self._lock:
            self._large = self._large or large
            if not self.alive:
                os.makedirs(self.numba_dir, exist_ok=True)
                self.first_compile = not compiled_before(self.numba_dir)  # before this process fills it
                parent, child = self._ctx.Pipe()
                proc = self._ctx.Process(target=_worker_main, args=(child, self.numba_dir, self.cache_all_kernels),
                                         daemon=True, name="memviz-umap")
                proc.start()
                child.close()
                self._proc, self._outbox = proc, queue.Queue()
                self._warmed_large = None
                self.warm.clear()
                self.started_at = time.perf_counter()
                outbox = self._outbox
                sender = in_thread(lambda: self._send_loop(parent, outbox), "memviz-umap-sender")
                in_thread(lambda: self._listen(proc, parent, outbox, sender), "memviz-umap-listener")
            if warm and self._warmed_large is not True and (self._warmed_large is None or self._large):
                self._warmed_large = self._large
                self.warm.clear()
                self._outbox.put(("warm", self._large))
        return self

    @staticmethod
    def _send_loop(conn, outbox):
        """Sends until told to stop (None) or the process is gone. It never closes `conn`: the
        listener does, once this thread has ended, so a send is never cut off by a close."""
        while True:
            msg = outbox.get()
            if msg is None:
                return
            try:
                conn.send(msg)
            except (OSError, ValueError, TypeError):  # the process was terminated (broken pipe), or its pipe
                return                                # closed mid-send (TypeError from a handle gone): nothing more to send

    def _listen(self, proc, conn, outbox, sender):
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            kind, job_id = msg[0], msg[1]
            if kind == "warm":
                self.warm_seconds = msg[2]
                if msg[3] == self._warmed_large:
                    self.warm.set()
                continue
            job = self._job
            if job is None or job.id != job_id:
                continue  # a stale job's message
            if kind == "progress":
                job._progress(msg[2], msg[3])
            elif kind == "epoch":
                job._epoch(msg[2], msg[3])
            elif kind in ("result", "error"):
                with self._lock:
                    if self._job is job:
                        self._job = None
                job._finish("done", coords=msg[2]) if kind == "result" else job._finish("failed", error=msg[2])
        # The process is gone: stop the sender (its send fails or it is idle), then close.
        outbox.put(None)
        futures.wait((sender,))
        conn.close()
        with self._lock:  # the process ended: whoever was waiting on it learns why
            job = self._job if proc is self._proc else None
            if job is not None:
                self._job = None
        if job is not None and not job.finished:
            job._finish("failed", error=f"the UMAP worker process ended unexpectedly (exit code {proc.exitcode})")

    def submit(self, job: UmapJob) -> None:
        """Run `job`; a job still running here is stale and is cancelled first."""
        with self._lock:
            if self._job is not None and not self._job.finished:
                self._job.cancel()
            self.start(warm=False)
            self._job = job
            self._outbox.put(("fit", job.id, job._X, job.params))

    def terminate(self, restart: bool = True) -> None:
        """Stop the process now (what cancel needs); optionally start and warm a fresh one."""
        with self._lock:
            proc, outbox = self._proc, self._outbox
            self._proc = self._outbox = None
            self._job = None
        if proc is not None:
            outbox.put(None)
            proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        if restart:
            self.start(warm=True)

    def close(self) -> None:
        """Ask the process to finish; stop it if it is busy (it holds nothing worth waiting for)."""
        with self._lock:
            proc, outbox = self._proc, self._outbox
            self._proc = self._outbox = None
            self._job = None
        if proc is None:
            return
        outbox.put(("stop",))
        outbox.put(None)
        proc.join(0.5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)


_shared: UmapWorker | None = None
_shared_lock = threading.Lock()


def shared_worker() -> UmapWorker:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = UmapWorker()
            atexit.register(_shared.close)
        return _shared


def warm_up(n_points: int = 0) -> UmapWorker:
    """Start (if needed) the shared worker and let it compile in the background; returns at once.
    Pass the store's size: when the job will fit more than EXACT_KNN_MAX points the NN-descent
    path is compiled as well. The window's job fits at most sampled.SAMPLE of them, so it never
    is: that compile (~40 s of a core) would only hold up the fit queued behind it."""
    return shared_worker().start(warm=True, large=needs_nn_descent(n_points))


def needs_nn_descent(n_points: int) -> bool:
    """Whether the window's job for a store of `n_points` vectors builds its graph by NN-descent."""
    return min(n_points, sampled.SAMPLE) > EXACT_KNN_MAX


_job_ids = itertools.count(1)


class UmapJob:
    """One UMAP of the rows that have a vector; the result is (n, 2) aligned to the input rows
    (NaN where a row has no vector). Deterministic for a given seed.

        job = UmapJob(arrays, {"n_neighbors": 15}, task=task, on_done=cb, cache=layout_cache).start()
        ... task.cancel() (or job.cancel())  |  job.wait(); coords = job.result()

    `task` (a memviz.tasks.Task) gets the stages as (fraction, text); cancelling it cancels the job.
    """

    def __init__(self, arrays, params: dict | None = None, *, task: Task | None = None,
                 worker: UmapWorker | None = None, on_done=None, cache=None, method: str = "umap",
                 whole: bool = False):
        self.id = next(_job_ids)
        self.params = {**DEFAULT_PARAMS, **(params or {})}
        if isinstance(arrays, np.ndarray):
            self.arrays, emb, mask = None, arrays, embedded_rows(arrays)
        else:
            self.arrays, emb, mask = arrays, arrays.embedding, np.asarray(arrays.has_embedding, dtype=bool)
        self.n = emb.shape[0]
        self.mask = mask
        # fitted on distinct vectors only: copies (GA's "… is idle") share their original's place
        laid = emb[mask]
        self.distinct = distinct_rows(laid)
        self._X = np.ascontiguousarray(laid[self.distinct.first], dtype=np.float32)
        # a large store: UMAP of a sample, the other vectors placed from their neighbours (sampled.py)
        # (`whole`: every vector all the same); `method_text` says which, for the window
        self._all, self._sample = None, None
        n_distinct = len(self._X)
        if sampled.needs_sample(n_distinct) and not whole:
            self._all, self._sample = self._X, sampled.choose_sample(n_distinct, sampled.SAMPLE)
            self._X = np.ascontiguousarray(self._all[self._sample])
            self.params.setdefault("n_epochs", sampled.EPOCHS)
        unit = "memories" if n_distinct == len(laid) else "distinct vectors"
        self.method_text = sampled.method_text(n_distinct, len(self._X), unit)
        self.worker = worker
        self.task = task if task is not None else Task("umap")
        self.on_done = on_done
        self.cache, self.method = cache, method
        self.state = "pending"      # pending | running | done | failed | cancelled
        self.stage, self.fraction, self.text = "preparing", 0.0, STAGE_TEXT["preparing"]
        self.error: str | None = None
        self.elapsed: float | None = None
        self._coords = None
        self._cached = False
        self._t0 = None
        self._done = threading.Event()       # finished: the state and coordinates are final
        self._delivered = threading.Event()  # and on_done has run: what wait() waits for

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    def start(self) -> UmapJob:
        self._t0 = time.perf_counter()
        self.state = "running"
        self.task.on_cancel(self.cancel)
        if self.finished:  # the task was cancelled before the job started
            return self
        if self._X.shape[0] < 4:  # too few points for a neighbour graph: PCA says all there is
            coords = pca_2d(self._X, np.ones(self._X.shape[0], bool)) if len(self._X) else np.zeros((0, 2), np.float32)
            self._finish("done", coords=coords)
            return self
        if self.worker is None:
            self.worker = shared_worker()
        w = self.worker
        large = self._X.shape[0] > int(self.params.get("exact_knn_max", EXACT_KNN_MAX))
        if w.alive and w.warm.is_set() and (w._warmed_large or not large):
            text = STAGE_TEXT["preparing"]  # compiled and loaded: the fit starts at once
        else:
            text = prepare_text(w.first_compile if w.alive else not compiled_before(w.numba_dir), large)
        self._progress("preparing", 0.0, text)
        w.submit(self)
        return self

    def cancel(self) -> None:
        """Stop the work now: the worker process is terminated and a fresh one warmed."""
        if self.finished:
            return
        self._finish("cancelled")
        if self.worker is not None and self.worker._job is self:
            self.worker.terminate(restart=True)

    def wait(self, timeout: float | None = None) -> bool:
        """True once the job has finished and its `on_done` has run (a caller that waits and also
        gave a callback sees what the callback did: it ran on the listener thread after the finish)."""
        return self._delivered.wait(timeout)

    def result(self) -> np.ndarray:
        """(n, 2) float32 aligned to the input rows. Stores into the cache (once) if one was given."""
        if self.state != "done":
            raise RuntimeError(self.error or f"the UMAP job is {self.state}")
        if self.cache is not None and self.arrays is not None and not self._cached:
            self.cache.put(self.method, self.arrays, self.cache_params(), self._coords)
            self._cached = True
        return self._coords

    def run(self, timeout: float | None = None) -> np.ndarray:
        """Start, wait and return result(): for a caller already on a background thread
        (with a cache, that thread must own the store; else call result() on the owner)."""
        if self.state == "pending":
            self.start()
        if not self.wait(timeout):
            raise TimeoutError(f"UMAP did not finish within {timeout} s")
        return self.result()

    def cache_params(self) -> dict:
        return umap_params(self.params)

    # called from the listener thread
    def _progress(self, stage: str, fraction: float, text: str | None = None) -> None:
        if STAGES.index(stage) < STAGES.index(self.stage):
            return  # umap's log order varies by path; the bar only moves forward
        if text is None:
            text = STAGE_TEXT[stage]
            if stage == "epochs" and self._epochs is not None:
                text += f" (epoch {self._epochs[0]}/{self._epochs[1]})"
        self.stage, self.fraction, self.text = stage, fraction, text
        lo, hi = _SPAN.get(stage, (UNKNOWN, UNKNOWN))
        self.task.progress(UNKNOWN if lo < 0 else lo + (hi - lo) * min(max(fraction, 0.0), 1.0), text)

    _epochs: tuple[int, int] | None = None

    def _epoch(self, done: int, total: int) -> None:
        self._epochs = (done, total)
        self._progress("epochs", done / total)

    def _finish(self, state: str, coords=None, error: str | None = None) -> None:
        if self.finished:
            return
        if coords is not None and self._all is not None:
            coords = self._place_rest(coords)
            if coords is None or self.finished:
                return   # cancelled while placing
        if coords is not None:  # one row per distinct vector: every copy gets its original's place
            self._progress("placing", 0.0)
            full = np.full((self.n, 2), np.nan, np.float32)
            full[self.mask] = self.distinct.expand(coords)
            self._coords = full
        self.state, self.error = state, error
        self.elapsed = time.perf_counter() - (self._t0 or time.perf_counter())
        # the inputs are not needed once finished, and a finished job may be held on (the worker's
        # listener thread keeps its last job until the next message): a 1M store's copy is 1 GB
        self._X = self._all = self._sample = None
        self._done.set()
        try:
            if state == "done":
                self._progress("done", 1.0)
            _call(self.on_done, self)
        finally:
            self._delivered.set()


    def _place_rest(self, fitted):
        """The sample's layout extended to every distinct vector, on the listener thread
        (cancelling the job's task stops it between blocks); None if cancelled."""
        placing = Task("placing", lambda f, text: self._progress("placing", f, f"UMAP: {text}"))
        self.task.on_cancel(placing.cancel)
        try:
            out = sampled.place_rest(self._all, self._sample, fitted, task=placing)
        except Cancelled:
            return None
        return out.coords


def _call(callback, *args) -> None:
    """Run a caller's callback on the listener thread without letting its error kill the thread."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
