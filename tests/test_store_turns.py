"""One thread at a time on a store's connection (Store._turn): apsw refuses a second thread
inside a call, so the window's workers (a reload beside the map's labels, the prompt view's
read) wait for each other instead of failing with "Connection is busy in another thread"; the
main thread waits briefly, then goes on without its turn: a call that needs no connection
answers, one that does meets the error its callers retry."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import apsw
import pytest

import memviz.store as ms

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"
LONG_QUERY = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000000) SELECT count(*) FROM n"


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


def test_the_main_thread_goes_on_without_its_turn_behind_a_long_read(store):
    started, out = threading.Event(), {}

    def long_read():  # a worker inside a long statement, holding its turn
        with store._turn():
            started.set()
            try:
                out["n"] = store.conn.execute(LONG_QUERY).fetchone()[0]
            except apsw.InterruptError:
                out["interrupted"] = True
    worker = threading.Thread(target=long_read)
    worker.start()
    assert started.wait(30)
    # what needs no connection answers at once (the window's menus ask it while a worker reads)
    assert store.refuses("content") is None and store.describe()
    with pytest.raises(apsw.ThreadingViolationError):  # what needs it meets the error callers retry
        store.set_meta("probe", 1)
    store.conn.interrupt()
    worker.join(60)
    assert not worker.is_alive() and out == {"interrupted": True}
    store.set_meta("probe", 2)  # the caller's retry
    assert store.meta("probe") == 2
