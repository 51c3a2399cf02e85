"""Array snapshots: an unchanged store reopens from its snapshot with exactly the same arrays;
any write, a damaged snapshot or awkward text means a normal read instead."""
from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace

import pytest

import memviz.store as ms
from memviz.store import snapshot
from memviz.store.arrays import load_arrays
from memviz.store.connection import connect
from tests.conftest import assert_same_arrays, unit_vectors


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(snapshot, "MIN_ROWS", 0)  # a small store stands in for a large one
    monkeypatch.setattr(snapshot, "WRITE_DELAY", 0.0)
    yield
    join_snapshot_writes()  # none may outlive its test and write while the next one runs


def join_snapshot_writes():
    for t in threading.enumerate():
        if t.name == "memviz-snapshot":
            t.join()


def make(path, n=50):
    s = ms.create(str(path))
    v = unit_vectors(n, 16)
    recs = [dict(id=f"m{i}", kind="fact" if i % 3 else "episode", agent="a" if i % 2 else "b",
                 content=f"line one {i}\nline two\ttabbed", importance=i % 10, event_time=1_700_000_000 + i,
                 embedding=v[i], embedding_model="m", valid_until=5.0 if i == 7 else None) for i in range(n)]
    recs.append(dict(id="plain", kind="note", content="no vector"))
    s.insert_memories(recs)
    s.close()
    return str(path)


def open_with_snapshot(path):
    store = ms.open(path)
    arrays = store.arrays(preview=20, snapshot=True)
    join_snapshot_writes()
    return store, arrays


def test_unchanged_store_reopens_from_its_snapshot_with_identical_arrays(tmp_path):
    path = make(tmp_path / "s.db")
    store, first = open_with_snapshot(path)
    store.close()
    assert len(list(snapshot.folder().glob("*.snap"))) == 1
    again = snapshot.load(path, 20)
    assert again is not None
    store = ms.open(path)
    assert_same_arrays(load_arrays(store.conn, preview=20), again)
    assert_same_arrays(first, again)
    assert again.preview[0] == "line one 0 line two " and again.embedding_model == "m"
    assert again.has_embedding.sum() == 50 and not again.has_embedding[-1]
    assert again.embedding.flags.writeable  # copy-on-write map: callers may scale it in place
    assert snapshot.load(path, 40) is None  # other preview length: not this snapshot
    store.close()


def test_any_write_makes_the_snapshot_stale(tmp_path):
    path = make(tmp_path / "s.db")
    store, _ = open_with_snapshot(path)
    store.close()
    agent = ms.open(path)  # another writer, kept open: its commit sits in the WAL
    agent.insert_memories([dict(id="new", kind="fact", content="added by the agent")])
    assert snapshot.load(path, 20) is None
    store = ms.open(path)
    arrays = store.arrays(preview=20, snapshot=True)
    assert "new" in set(arrays.ids)
    store.close()
    agent.close()  # checkpointed into the file now
    store, arrays = open_with_snapshot(path)
    store.close()
    again = snapshot.load(path, 20)
    assert again is not None and "new" in set(again.ids)
    # an update that leaves the row count alone is a change too
    agent = ms.open(path)
    agent.update_fields("m3", {"importance": 9})
    agent.close()
    assert snapshot.load(path, 20) is None


def test_a_write_hidden_from_the_clock_is_still_seen(tmp_path):
    # a rollback-journal store on a file system whose clock did not move: same inode, same size,
    # same mtime; SQLite's file change counter still tells
    path = make(tmp_path / "s.db")
    conn = connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    store, _ = open_with_snapshot(path)
    store.close()
    before = os.stat(path)
    assert snapshot.load(path, 20) is not None
    agent = ms.open(path)
    agent.update_fields("m4", {"importance": 7})
    agent.close()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert snapshot.load(path, 20) is None


def test_a_write_during_the_scan_is_not_saved_under_the_old_state(tmp_path):
    path = make(tmp_path / "s.db")
    before = snapshot.file_state(path)
    store = ms.open(path)
    arrays = load_arrays(store.conn, preview=20)
    store.update_fields("m1", {"importance": 1})
    snapshot._save(path, before, arrays, 20)
    assert not list(snapshot.folder().glob("*.snap"))
    store.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_snapshot_is_ignored_and_the_store_read(tmp_path, damage):
    path = make(tmp_path / "s.db")
    store, _ = open_with_snapshot(path)
    store.close()
    f = snapshot._file_for(snapshot.file_state(path))  # this store's snapshot, not any in the folder
    raw = f.read_bytes()
    f.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00junk" * 100, "empty": b""}[damage])
    os.utime(f)
    assert snapshot.load(path, 20) is None
    store, arrays = open_with_snapshot(path)
    assert len(arrays) == 51
    store.close()


def test_a_late_write_lands_in_the_folder_it_was_requested_for(tmp_path, monkeypatch):
    # a busy machine runs the write after the cache folder changed (here: the next test's);
    # it must neither land there nor leave its own folder without the snapshot
    path = make(tmp_path / "s.db")
    gate = threading.Event()
    monkeypatch.setattr(snapshot, "time", SimpleNamespace(sleep=lambda _s: gate.wait(), time=time.time))
    store = ms.open(path)
    store.arrays(preview=20, snapshot=True)
    requested_in = snapshot.folder()
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "elsewhere"))
    gate.set()
    join_snapshot_writes()
    store.close()
    assert not snapshot.folder().exists()
    assert [f.name for f in requested_in.glob("*.snap")] == [snapshot._file_for(snapshot.file_state(path)).name]


def test_text_with_nul_characters_falls_back_to_the_scan(tmp_path):
    path = make(tmp_path / "s.db")
    conn = connect(path)
    conn.execute("UPDATE memories SET id = 'm2' || char(0) || 'x' WHERE id = 'm2'")
    conn.close()
    store, arrays = open_with_snapshot(path)
    store.close()
    assert arrays.ids[2] == "m2\x00x"
    assert snapshot.load(path, 20) is None  # the joined ids do not split back


def test_small_stores_get_no_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MIN_ROWS", 1000)
    path = make(tmp_path / "s.db")
    store, _ = open_with_snapshot(path)
    store.close()
    assert not snapshot.folder().exists() or not list(snapshot.folder().glob("*.snap"))


def test_snapshots_are_pruned_to_the_most_recent_and_never_outlive_their_store(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "KEEP", 2)
    paths = [make(tmp_path / f"s{i}.db", n=5) for i in range(4)]
    for p in paths[:3]:
        store, _ = open_with_snapshot(p)
        store.close()
    assert len(list(snapshot.folder().glob("*.snap"))) == 2  # s0's was the least recently used
    assert snapshot.load(paths[0], 20) is None and snapshot.load(paths[2], 20) is not None
    os.remove(paths[2])  # the store is gone: its texts go with it at the next write
    store, _ = open_with_snapshot(paths[3])
    store.close()
    kept = {snapshot._store_of(f) for f in snapshot.folder().glob("*.snap")}
    assert os.path.realpath(paths[2]) not in kept and os.path.realpath(paths[3]) in kept
