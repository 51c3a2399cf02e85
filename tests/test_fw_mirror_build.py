"""A framework mirror's first build (memviz/frameworks/mirror.py `_build`, through store/bulk.py):
on a real LangGraph SqliteStore file (tables made by SqliteStore.setup(), items written with plain
SQL in bulk past one build batch), the mirror is a sound native store (opens writable, `memviz
check` clean, search and vector search find the items), its fingerprints are those later syncs
compute (nothing is rewritten when the source's token moves with no change), and a cancelled
build leaves no mirror file."""
from __future__ import annotations

import json
import os
import sys

import apsw
import numpy as np
import pytest

import memviz.frameworks as fw
import memviz.store as ms
from memviz.frameworks.mirror import mirror_path, open_mirrored
from memviz.store.check import check_store
from memviz.tasks import Cancelled, Task

sys.path.insert(0, os.path.dirname(__file__))
from langgraph_stores import sqlite_agent  # noqa: E402

N = 6500  # past one batch of the build (5000): the read runs ahead of the writes
DIM = 8


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def langgraph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lg") / "langgraph.db"
    sqlite_agent(path, [], embed=f"toy:{DIM}")  # SqliteStore.setup(): its tables and migrations
    rng = np.random.default_rng(0)
    conn = apsw.Connection(str(path))
    with conn:
        for k in range(N):
            ns, key = f"memories.user{k % 7}", f"item-{k}"
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)",
                         (ns, key, json.dumps({"content": f"user {k % 7} remembers fact {k} about tea"}).encode()))
            conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?, ?, 'content', ?)",
                         (ns, key, rng.normal(size=DIM).astype(np.float32).tobytes()))
    conn.close()
    return str(path)


def test_the_first_build_is_a_sound_native_store(langgraph_file):
    source = fw.recognise(langgraph_file)
    store = open_mirrored(source)
    try:
        assert store.counts()["total"] == N
        hits = store.fts_search("fact 4321")
        assert hits and any(i.startswith("item-4321@") for i, _ in hits)
        row = store.conn.execute("SELECT embedding FROM memories WHERE id LIKE 'item-17@%'").fetchone()
        assert store.vec_search(np.frombuffer(row[0], np.float32), 1)[0][0].startswith("item-17@")
        # a full re-read (as when the token moved and the source cannot say what changed):
        # every record's fingerprint matches the one the build stored, nothing is rewritten
        store._synced_token = None
        assert store.sync() == {"added": 0, "changed": 0, "gone": 0}
    finally:
        store.close()
    native = ms.open_store(mirror_path(source))
    try:
        assert not native.read_only, native.read_only_reason
        report = check_store(native)
        assert report.clean, [f.describe() for f in report.findings]
    finally:
        native.close()


def test_a_cancelled_first_build_leaves_no_mirror(langgraph_file):
    source = fw.recognise(langgraph_file)
    seen = []

    def progress(fraction, text):
        seen.append(text)
        if "items" in text:  # the source is being read: the user cancels
            task.cancel()
    task = Task("open", on_progress=progress)
    with pytest.raises(Cancelled):
        open_mirrored(source, task)
    assert seen
    path = mirror_path(source)
    assert not any(os.path.exists(path + s) for s in ("", "-wal", "-shm"))
    store = open_mirrored(fw.recognise(langgraph_file))  # and the next open builds it whole
    try:
        assert store.counts()["total"] == N
    finally:
        store.close()


def test_the_first_read_after_a_build_equals_a_scan(langgraph_file):
    """The window's first read after the build is made from the columns just written, not read
    back (arrays.WrittenColumns): the arrays are those a scan of the mirror makes, column by
    column, dtypes included (vectors of the toy model normalised, previews on one line)."""
    from dataclasses import fields

    from memviz.store.arrays import MemoryArrays, load_arrays
    store = open_mirrored(fw.recognise(langgraph_file))
    try:
        fresh = store.arrays(preview=240)
        scanned = load_arrays(store.conn, preview=240)
        for f in fields(MemoryArrays):
            if f.name.startswith("_"):
                continue
            a, b = getattr(fresh, f.name), getattr(scanned, f.name)
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype and a.shape == b.shape, f.name
                np.testing.assert_array_equal(a, b, err_msg=f.name)
            else:
                assert a == b, f.name
        assert fresh.has_embedding.all() and fresh.dim == DIM
    finally:
        store.close()
