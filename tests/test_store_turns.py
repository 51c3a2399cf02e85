"""One thread at a time on a store's connection (Store._turn): apsw refuses a second thread
inside a call, so the window's workers (a reload beside the map's labels, the prompt view's
read) wait for each other instead of failing with "Connection is busy in another thread"; the
main thread waits briefly and then gives way with the error its callers retry."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import apsw
import pytest

import memviz.store as ms

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "assistant.db"
    shutil.copy(SAMPLE, path)
    with ms.open(str(path)) as s:
        yield s


def test_workers_reading_one_store_at_once_all_get_their_answers(store):
    n = len(store.arrays())
    errors, sizes = [], []

    def reader(read, times):
        try:
            for _ in range(times):
                sizes.append(read())
        except Exception as e:  # noqa: BLE001 - the test reports whatever a worker met
            errors.append(e)
    threads = [threading.Thread(target=reader, args=(lambda: len(store.arrays(preview=80)), 15)),
               threading.Thread(target=reader, args=(lambda: len(store.arrays()), 15)),
               threading.Thread(target=reader, args=(lambda: store.counts()["total"], 300))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and len(sizes) == 330 and set(sizes) == {n}


def test_the_main_thread_waits_briefly_then_gives_way_and_a_write_after_lands(store):
    held, release = threading.Event(), threading.Event()

    def long_read():
        with store._turn():
            held.set()
            release.wait(30)
    worker = threading.Thread(target=long_read)
    worker.start()
    assert held.wait(30)
    with pytest.raises(apsw.ThreadingViolationError):
        store.set_meta("probe", 1)
    release.set()
    worker.join(30)
    store.set_meta("probe", 2)  # the caller's retry
    assert store.meta("probe") == 2
