"""UMAP in the worker process. Slow: each fresh worker imports umap (and compiles, the first
time; later runs load numba's cache, kept in pytest's cache folder rather than the user's)."""
import os
import sys
import threading

import numpy as np
import pytest
from test_layout_cache import clustered, insert

from memviz.layout import LayoutCache, UmapJob, UmapWorker, umap_params
from memviz.layout.umap_worker import STAGE_TEXT, STAGES, compiled_before, prepare_text
from memviz.tasks import Task

pytestmark = pytest.mark.slow
WAIT = 300


@pytest.fixture(scope="module")
def worker(request):
    w = UmapWorker(numba_dir=request.config.cache.mkdir("memviz-numba")).start()
    yield w
    w.close()


def stage_of(text):
    """The stage id whose user text `text` is ("UMAP: optimising layout (epoch 3/60)" -> "epochs")."""
    return next(k for k, v in STAGE_TEXT.items() if text == v or text.startswith(v + " ("))


def agreement(coords, labels, k=5):
    d = np.linalg.norm(coords[:, None] - coords[None], axis=2)
    np.fill_diagonal(d, np.inf)
    nn = np.argsort(d, axis=1)[:, :k]
    return (labels[nn] == labels[:, None]).mean()


def test_job_returns_coords_aligned_to_rows_deterministically_and_caches(store, worker):
    numba_before = "numba" in sys.modules  # the int8 retrieval kernel (another test) may have loaded it
    vecs, labels = clustered(300, seed=5)
    insert(store, vecs[:150])
    store.insert_memories([dict(id="no-vector", kind="fact", content="never embedded")])
    insert(store, vecs[150:], start=150)
    a = store.arrays()
    cache = LayoutCache(store)
    seen, done = [], threading.Event()
    task = Task(on_progress=lambda f, text: seen.append(stage_of(text)))
    job = UmapJob(a, {"n_epochs": 60}, worker=worker, cache=cache, task=task,
                  on_done=lambda j: done.set()).start()
    assert job.wait(WAIT), "the UMAP job did not finish"
    assert done.is_set() and job.state == "done", job.error
    coords = job.result()
    assert coords.shape == (301, 2) and coords.dtype == np.float32
    assert np.isnan(coords[a.index_of("no-vector")]).all()
    has = a.has_embedding
    assert np.isfinite(coords[has]).all()
    row_labels = np.array([labels[int(i[1:])] for i in a.ids[has]])
    assert agreement(coords[has], row_labels) > 0.9       # clusters stay together
    stages = list(dict.fromkeys(seen))
    assert stages[0] == "preparing" and stages[-1] == "done" and "neighbours" in stages and "epochs" in stages
    assert "umap" not in sys.modules  # this process never paid for them: the worker did
    assert numba_before or "numba" not in sys.modules

    again = UmapJob(a, {"n_epochs": 60}, worker=worker).run(timeout=WAIT)  # blocking form
    assert np.array_equal(again, coords, equal_nan=True)
    assert np.array_equal(cache.get("umap", a, umap_params()), coords, equal_nan=True)
    assert cache.get("umap", a, umap_params({"n_neighbors": 30})) is None
    other_seed = UmapJob(a, {"n_epochs": 60, "seed": 7}, worker=worker).start()
    assert other_seed.wait(WAIT) and not np.allclose(other_seed.result()[has], coords[has])


def _wait_for(cond, timeout=WAIT):
    ev = threading.Event()
    for _ in range(int(timeout * 10)):
        if cond():
            return True
        ev.wait(0.1)
    return False


def test_cancel_stops_the_worker_process_and_the_next_job_still_runs(worker):
    x, _ = clustered(2000, seed=6)
    job = UmapJob(x, {"n_epochs": 200_000}, worker=worker).start()
    assert _wait_for(lambda: job.stage == "epochs"), f"never reached the epochs: {job.state} {job.error}"
    pid = worker.pid
    job.cancel()
    assert job.state == "cancelled" and job.finished
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # terminated and reaped, not left computing
    with pytest.raises(RuntimeError, match="cancelled"):
        job.result()
    small, _ = clustered(100, seed=7)
    nxt = UmapJob(small, {"n_epochs": 30}, worker=worker).start()
    assert nxt.wait(WAIT) and nxt.state == "done", nxt.error
    assert worker.pid != pid and job.state == "cancelled"


def test_a_new_job_makes_the_running_one_stale(worker):
    x, _ = clustered(2000, seed=8)
    old = UmapJob(x, {"n_epochs": 200_000}, worker=worker).start()
    assert _wait_for(lambda: old.stage in ("graph", "init", "epochs"))
    new = UmapJob(clustered(80, seed=9)[0], {"n_epochs": 30}, worker=worker).start()
    assert old.state == "cancelled"
    assert new.wait(WAIT) and new.state == "done", new.error


def test_bad_parameters_fail_the_job_with_a_message_and_the_worker_lives_on(worker):
    x, _ = clustered(100, seed=10)
    bad = UmapJob(x, {"metric": "no-such-metric", "n_epochs": 20}, worker=worker).start()
    assert bad.wait(WAIT) and bad.state == "failed"
    assert "no-such-metric" in bad.error or "metric" in bad.error.lower()
    pid = worker.pid
    ok = UmapJob(x, {"n_epochs": 20}, worker=worker).start()
    assert ok.wait(WAIT) and ok.state == "done" and worker.pid == pid


def test_too_few_points_need_no_worker():
    job = UmapJob(np.eye(3, 8, dtype=np.float32), worker=None).start()
    assert job.state == "done" and job.worker is None
    assert job.result().shape == (3, 2)


def test_stages_arrive_in_order_with_honest_texts_from_a_fresh_worker(request):
    """A worker that has not warmed up yet: the job says it is preparing (and why) until the
    worker is ready, then each stage of the fit, the epochs counted, then placing."""
    w = UmapWorker(numba_dir=request.config.cache.mkdir("memviz-numba"))
    seen = []
    try:
        x, _ = clustered(400, seed=11)
        job = UmapJob(x, {"n_epochs": 50}, worker=w, task=Task(on_progress=lambda f, text: seen.append((f, text))))
        job.start()
        assert job.wait(WAIT) and job.state == "done", job.error
    finally:
        w.close()
    texts = [t for _, t in seen]
    assert texts[0].startswith(STAGE_TEXT["preparing"] + " (")      # why it waits: compiling or loading
    order = [STAGES.index(stage_of(t)) for t in texts]
    assert order == sorted(order)                                     # stages only move forward
    shown = list(dict.fromkeys(stage_of(t) for t in texts))
    assert shown[0] == "preparing" and shown[-3:] == ["epochs", "placing", "done"]
    assert "neighbours" in shown
    epochs = [t for t in texts if stage_of(t) == "epochs"]
    assert epochs and epochs[-1] == STAGE_TEXT["epochs"] + " (epoch 50/50)"
    known = [f for f, _ in seen if f >= 0]
    assert seen[0][0] < 0 and known == sorted(known) and known[-1] == 1.0  # busy while preparing, then 0..1


def test_preparing_says_whether_this_is_the_one_time_compile(tmp_path):
    assert not compiled_before(tmp_path)
    assert "one-time compile" in prepare_text(True)
    (tmp_path / "umap").mkdir()
    (tmp_path / "umap" / "layouts.optimize-1.py312.nbi").write_bytes(b"")
    assert compiled_before(tmp_path)
    assert "one-time" not in prepare_text(False) and "loading" in prepare_text(False)
    assert "nearest-neighbour" in prepare_text(False, large=True)


def test_cancel_while_the_matrix_is_being_sent_prints_nothing(request, capfd):
    """Cancel while the sender thread is still pushing a large matrix to a worker that is busy
    starting up: the process is killed under the send. Neither helper thread may raise
    (BrokenPipeError, or TypeError from a connection closed under a send)."""
    errors = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: errors.append((args.thread.name, args.exc_type.__name__))
    try:
        x = np.random.default_rng(0).normal(size=(40_000, 384)).astype(np.float32)  # 61 MB to send
        for _ in range(3):
            w = UmapWorker(numba_dir=request.config.cache.mkdir("memviz-numba"))
            threads = set(threading.enumerate())
            task = Task()
            job = UmapJob(x, {"n_epochs": 5}, worker=w, task=task).start()
            _wait_for(w._outbox.empty)   # the sender has taken the matrix and is pushing it
            task.cancel()
            assert job.state == "cancelled"
            w.close()
            for t in set(threading.enumerate()) - threads:
                if t.name.startswith("memviz-umap"):
                    t.join(30)
                    assert not t.is_alive(), f"{t.name} did not end"
    finally:
        threading.excepthook = old_hook
    assert errors == []
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
def test_duplicates_share_one_position_and_the_fit_sees_distinct_vectors_only(worker):
    x, labels = clustered(200, seed=11)
    rng = np.random.default_rng(11)
    copies = rng.integers(0, 200, 300)                 # 300 verbatim copies, like GA's "… is idle"
    X = np.concatenate([x, x[copies]])
    seen = []
    real_submit = worker.submit
    worker.submit = lambda job: (seen.append(job._X.shape[0]), real_submit(job))[1]
    try:
        job = UmapJob(X, {"n_epochs": 40}, worker=worker).start()
        assert job.wait(WAIT) and job.state == "done", job.error
    finally:
        del worker.submit
    assert seen == [200]                               # the fit saw each vector once
    coords = job.result()
    assert coords.shape == (500, 2) and np.isfinite(coords).all()
    assert np.array_equal(coords[200:], coords[copies])  # every copy sits on its original
    assert list(job.distinct.copies[:200]) == list(np.bincount(copies, minlength=200)[:200] + 1)


def test_a_large_store_is_laid_out_from_a_sample(store, worker, monkeypatch):
    """Past sampled.SAMPLE_ABOVE distinct vectors the job fits UMAP on a sample and places the
    rest from their neighbours (layout/sampled.py), and says so in `method_text`."""
    import memviz.layout.sampled as sampled
    monkeypatch.setattr(sampled, "SAMPLE_ABOVE", 500)
    monkeypatch.setattr(sampled, "SAMPLE", 300)
    vecs, labels = clustered(900, seed=3)
    insert(store, vecs)
    a = store.arrays()
    seen = []
    job = UmapJob(a, {"n_epochs": 60}, worker=worker, task=Task(on_progress=lambda f, t: seen.append(t)))
    assert len(job._X) == 300                        # the worker fits the sample only
    coords = job.run(timeout=WAIT)
    assert coords.shape == (900, 2) and np.isfinite(coords).all()
    row_labels = np.array([labels[int(i[1:])] for i in a.ids])
    assert agreement(coords, row_labels) > 0.9       # placed memories land in their own cluster
    assert job.method_text == "UMAP of a random 300 of 900 memories; the other 600 placed by neighbours"
    assert any(t.startswith("UMAP: placing 600 of 600") for t in seen)
    whole = UmapJob(a, {"n_epochs": 60}, worker=worker, whole=True)
    assert len(whole._X) == 900 and whole.method_text == "UMAP of all 900 memories"


def test_wait_returns_once_on_done_has_run(store, worker):
    # the job's finish and its on_done run on the listener thread; wait() answered between the two,
    # so a caller that waited could miss what on_done did (seen once in CI)
    import time
    vecs, _ = clustered(120, seed=9)
    insert(store, vecs)
    seen = []

    def slow_callback(job):
        time.sleep(0.3)
        seen.append(job.state)
    job = UmapJob(store.arrays(), {"n_epochs": 30}, worker=worker, on_done=slow_callback).start()
    assert job.wait(WAIT), "the UMAP job did not finish"
    assert seen == ["done"]
