"""A large framework mirror's first build for the window (frameworks.open_and_read check_later):
the rows are committed and read first, the full-text and vector indexes and the fingerprints
after (mirror.py `indexing`). Meanwhile edits are refused with the reason and the searches of
those indexes (the hybrid preset's full text, vec_search) wait rather than answer from an empty
index; afterwards the mirror equals one built whole; a mirror left without them (the process
ended, the store closed) is rebuilt at its next open. On a real LangGraph SqliteStore file."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import apsw
import numpy as np
import pytest

import memviz.frameworks as fw
import memviz.store as ms
from memviz.frameworks import mirror as mirror_mod
from memviz.frameworks.mirror import INDEXING, mirror_path, open_mirrored
from memviz.store.changes import changes_since, token_now
from memviz.store.check import check_store

sys.path.insert(0, os.path.dirname(__file__))
from test_fw_mirror_build import N, langgraph_file  # noqa: E402,F401 - the fixture: N items past one batch


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def held(monkeypatch):
    """Every first build counts as large; the real index step can be held back at its start."""
    monkeypatch.setattr(mirror_mod, "INDEX_LATER_ROWS", 0)
    gate = threading.Event()
    gate.set()
    real = mirror_mod.fill_indexes

    def fill(conn, upto, dims):
        assert gate.wait(30)
        return real(conn, upto, dims)
    monkeypatch.setattr(mirror_mod, "fill_indexes", fill)
    return gate


def derived(store) -> dict:
    """What the index step writes, as sets to compare: FTS rows, vec0 rows, fingerprints, meta."""
    c = store.conn
    return {
        "fts": c.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0],
        "match": sorted(store.fts_search("fact 4321 tea", limit=20)),
        "vec": {(i, bytes(e)) for i, e in c.execute("SELECT memory_id, embedding FROM vec_memories_8")},
        "fp": dict(c.execute("SELECT id, fp FROM memviz_mirror")),
        "pending": store.meta("mirror.pending"),
    }


def test_indexes_after_the_first_read_equal_a_whole_build(langgraph_file, held, tmp_path, monkeypatch):  # noqa: F811 - the fixture
    held.clear()
    store, arrays = fw.open_and_read(langgraph_file, lambda s: s.arrays(), check_later=True)
    try:
        assert len(arrays) == N and store.indexing
        assert store.read_only and store.read_only_reason == INDEXING
        rid = arrays.ids[0]
        with pytest.raises(ms.ReadOnlyError, match="building the mirror's full-text and vector indexes"):
            store.supersede(rid, "corrected while indexing")
        other = store.reopen()  # a second connection (the check dialog's) waits too
        assert other.read_only
        token = token_now(store)
        # the hybrid preset's full-text hits wait for the index instead of answering from an empty one
        got = {}
        asking = threading.Thread(target=lambda: got.update(hits=store.fts_hits("fact 4321")))
        asking.start()
        asking.join(0.5)
        assert asking.is_alive() and not got
        held.set()
        asking.join(30)
        assert rid in store.get_many([rid])[0]["id"]
        hit_ids = {store.conn.execute("SELECT id FROM memories WHERE rowid = ?", (int(r),)).fetchone()[0]
                   for r in got["hits"][:, 0]}
        assert any(i.startswith("item-4321@") for i in hit_ids)
        store.indexed()
        assert not store.indexing and not store.read_only and not other.read_only
        assert changes_since(store, token).empty   # the window's live refresh reads nothing of the step
        later = derived(store)
        other.close()
    finally:
        store.close()
    assert later["pending"] is None and later["fts"] == N and len(later["vec"]) == N and len(later["fp"]) == N
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "whole"))
    whole = open_mirrored(fw.recognise(langgraph_file))  # built in one go (no window)
    try:
        assert not whole.indexing
        assert later == derived(whole)
    finally:
        whole.close()


def test_the_indexed_mirror_is_sound_and_its_fingerprints_those_a_sync_computes(langgraph_file, held):  # noqa: F811 - the fixture
    store, _ = fw.open_and_read(langgraph_file, lambda s: s.arrays(), check_later=True)
    try:
        store.indexed()
        store._synced_token = None   # a full re-read: every fingerprint matches, nothing rewritten
        assert store.sync() == {"added": 0, "changed": 0, "gone": 0}
    finally:
        store.close()
    native = ms.open_store(mirror_path(fw.recognise(langgraph_file)))
    try:
        report = check_store(native)
        assert report.clean, [f.describe() for f in report.findings]
    finally:
        native.close()


def test_vector_search_waits_for_the_vectors(langgraph_file, held):  # noqa: F811 - the fixture
    held.clear()
    store, arrays = fw.open_and_read(langgraph_file, lambda s: s.arrays(), check_later=True)
    try:
        vec = store.conn.execute("SELECT embedding FROM memories WHERE id = ?", (arrays.ids[17],)).fetchone()[0]
        threading.Timer(0.3, held.set).start()
        t = time.perf_counter()
        assert store.vec_search(np.frombuffer(vec, np.float32), 1)[0][0] == arrays.ids[17]
        assert time.perf_counter() - t >= 0.25
    finally:
        store.close()


def test_a_store_closed_while_indexing_is_rebuilt_at_its_next_open(langgraph_file, held):  # noqa: F811 - the fixture
    held.clear()
    store, _ = fw.open_and_read(langgraph_file, None, check_later=True)
    assert store.indexing
    store.reopen().close()   # another connection's close (the check dialog's) does not stop the step
    assert store.indexing and not store._indexing.task.cancelled
    threading.Timer(0.3, held.set).start()
    store.close()   # interrupts the step; nothing of it is committed
    path = mirror_path(fw.recognise(langgraph_file))
    native = ms.open_store(path)
    try:
        assert native.meta("mirror.pending") is not None
        assert native.conn.execute("SELECT count(*) FROM memviz_mirror").fetchone()[0] == 0
    finally:
        native.close()
    again = open_mirrored(fw.recognise(langgraph_file))
    try:
        assert not again.indexing and again.meta("mirror.pending") is None
        d = derived(again)
        assert d["fts"] == N and len(d["vec"]) == N and len(d["fp"]) == N
    finally:
        again.close()


def test_indexes_that_cannot_be_written_leave_the_store_read_only_and_say_why(langgraph_file, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.setattr(mirror_mod, "INDEX_LATER_ROWS", 0)

    def full(conn, upto, dims):
        raise apsw.FullError("database or disk is full")
    monkeypatch.setattr(mirror_mod, "fill_indexes", full)
    store, arrays = fw.open_and_read(langgraph_file, lambda s: s.arrays(), check_later=True)
    try:
        assert len(arrays) == N
        with pytest.raises(ms.StoreError, match="disk is full"):
            store.indexed()
        assert not store.indexing and store.read_only and "indexes could not be built" in store.read_only_reason
        with pytest.raises(ms.StoreError, match="disk is full"):
            store.fts_search("fact 4321")   # an error, not an answer from the empty index
    finally:
        store.close()
    monkeypatch.undo()
    again = open_mirrored(fw.recognise(langgraph_file))   # rebuilt
    try:
        assert not again.read_only and len(derived(again)["fp"]) == N
    finally:
        again.close()


def test_a_process_that_ended_before_the_indexes_leaves_a_mirror_rebuilt_at_the_next_open(langgraph_file, tmp_path):  # noqa: F811 - the fixture
    code = ("import os, sys; import memviz.frameworks as fw; from memviz.frameworks import mirror as m; "
            "m.INDEX_LATER_ROWS = 0; s = m.open_mirrored(fw.recognise(sys.argv[1]), later=True); "
            "assert s.indexing; os._exit(0)")  # the rows committed, the index step never run
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(fw.__file__))))
    subprocess.run([sys.executable, "-c", code, langgraph_file], check=True, env=env, timeout=120)
    path = mirror_path(fw.recognise(langgraph_file))
    native = ms.open_store(path)
    try:
        assert native.meta("mirror.pending") is not None and native.counts()["total"] == N
    finally:
        native.close()
    store = open_mirrored(fw.recognise(langgraph_file))
    try:
        d = derived(store)
        assert d["pending"] is None and d["fts"] == N and len(d["vec"]) == N and len(d["fp"]) == N
        assert store.sync() == {"added": 0, "changed": 0, "gone": 0}
    finally:
        store.close()


def test_small_first_builds_are_indexed_before_the_window_reads_them(langgraph_file):  # noqa: F811 - the fixture
    assert N < mirror_mod.INDEX_LATER_ROWS
    store, _ = fw.open_and_read(langgraph_file, lambda s: s.arrays(), check_later=True)
    try:
        assert not store.indexing and not store.read_only and store.meta("mirror.pending") is None
    finally:
        store.close()
