"""Every public way to read a store gives the same arrays — same columns, same bytes — on a store
of odd values: `ms.open(path).arrays()` with each argument the API offers (model, preview,
snapshot), `open_and_read` (the library's and the window's), a framework store's and a PostgreSQL
store's. And a large file opened for the library is read before SQLite's quick check runs, as the
window's open is: the check follows the read, and a write (or `read_only`) waits for its answer.
bench/scale.py times these paths; no timing is asserted here."""
from __future__ import annotations

import os
import threading

import apsw
import numpy as np
import pytest
from conftest import SCANS, assert_same_arrays, scan_as, unit_vectors
from hostile_store import BAD_UTF8
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.session.state import PREVIEW_CHARS, open_store_data
from memviz.store import store as store_mod
from memviz.store.arrays import load_arrays
from memviz.store.connection import connect, whole_file_mapped
from tests.test_store_snapshot import cache, join_snapshot_writes  # noqa: F401 - cache: an autouse fixture

#: id -> SQL values an agent wrote with its own statements (what the readers accept or flag)
ODD = {
    "imp_text": "importance = 'very high'",
    "imp_inf": "importance = 9e999",
    "conf_nan_text": "confidence = 'NaN'",
    "t_iso_z": "event_time = '2026-03-01T12:00:00Z'",
    "t_iso_offset": "event_time = '2026-03-01T14:00:00+02:00'",
    "t_space": "created_at = '2026-03-01 12:00:00'",
    "t_ms": "event_time = 1772366400000",
    "t_float": "event_time = 1772366400.5",
    "t_yesterday": "last_accessed = 'yesterday'",
    "until_iso": "valid_until = '2026-03-02T00:00:00Z'",
    "count_text": "access_count = '3'",
    "bad_json": "attributes = '{not json'",
    "lines": "content = 'first line' || char(10) || 'second' || char(9) || 'tabbed' || char(13) || 'end'",
    "unicode": "content = 'café ☕ 𝄞 ' || hex(randomblob(3)), agent = 'zoë'",
    "text_vector": "embedding = '[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]'",
    "odd_blob": "embedding = X'0102030405'",
    "not_unit": "embedding = ?",                 # a vector of the main model, 3.5 times too long
    "bad_utf8": "content = CAST(? AS TEXT)",     # invalid UTF-8 and a NUL
}


def records(n: int) -> list[dict]:
    """`n` memories of an 8-d main model (some retired, some without vectors) and 20 of a 4-d one."""
    v = unit_vectors(n + len(ODD) + 1, 8, seed=3)
    small = unit_vectors(20, 4, seed=4)
    recs = [dict(id=f"m-{i}", kind=("episode", "fact", "reflection")[i % 3], agent=("ann", "bob", "")[i % 3],
                 content=f"memory {i} about coffee and the river", importance=1 + i % 10,
                 event_time=1_700_000_000 + 3600 * i, confidence=0.123456789012345 if i == 5 else 1.0,
                 embedding=v[i] if i % 17 else None, embedding_model="main" if i % 17 else None,
                 valid_until=1_700_500_000.25 if i % 11 == 0 else None, tags=["t"] if i % 5 == 0 else [],
                 protected=i % 13 == 0, decay_rate=0.05 if i % 9 == 0 else 0.1, access_count=i % 4,
                 attributes={"n": i} if i % 7 == 0 else {}) for i in range(n)]
    recs += [dict(id=f"s-{i}", kind="fact", content=f"small {i}", embedding=small[i], embedding_model="small",
                  event_time=1_600_000_000 + i) for i in range(20)]
    return recs + [dict(id=mid, kind="fact", agent="ann", content=f"odd {mid}", event_time=1_650_000_000 + k,
                        embedding=v[n + k], embedding_model="main") for k, mid in enumerate(ODD)]


def odd_store(path, n: int = 300) -> str:
    """records(n), then the values of ODD written as an agent would."""
    path = str(path)
    with ms.create(path) as s:
        s.insert_memories(records(n))
    conn = connect(path)   # sqlite-vec loaded: memviz's triggers keep its tables as the agent writes
    with conn:
        values = {"not_unit": ((unit_vectors(3, 8, seed=3)[2] * 3.5).astype("<f4").tobytes(),), "bad_utf8": (BAD_UTF8,)}
        for mid, sets in ODD.items():
            conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*values.get(mid, ()), mid))
    conn.close()
    return path


@pytest.fixture
def odd(tmp_path):
    return odd_store(tmp_path / "odd.db")


def same(a, b, name: str) -> None:
    """assert_same_arrays, naming the read path that differs."""
    try:
        assert_same_arrays(a, b)
    except AssertionError as e:
        raise AssertionError(f"{name}: {e}") from None


def reference(path, preview: int = 0, model=None):
    """The arrays read row by row (the exact reader every fast path is checked against)."""
    with ms.open(path, read_only=True) as s:
        return load_arrays(s.conn, model, preview=preview, in_sqlite=False)


@pytest.mark.parametrize("scan", SCANS)
def test_every_sqlite_read_path_gives_the_same_arrays(odd, monkeypatch, scan):
    # through the read index, the table, or the table shared with a second connection at any size
    conn = apsw.Connection(str(odd))
    scan_as(scan, conn, monkeypatch)
    conn.close()
    want = reference(odd)
    want_preview = reference(odd, PREVIEW_CHARS)
    assert want.embedding_model == "main" and want.dim == 8 and want.bad_value.any() and want.bad_json.any()
    got = {}
    with ms.open(odd) as s:
        got["ms.open().arrays()"] = s.arrays()
        got["arrays(model=main)"] = s.arrays(model="main")
        got["arrays(preview)"] = s.arrays(preview=PREVIEW_CHARS)
    with ms.open(odd, read_only=True) as s:
        got["read-only open"] = s.arrays()
    s, got["open_and_read"] = ms.open_and_read(odd, lambda st: st.arrays())
    s.close()
    s, got["open_and_read(check_later)"] = ms.open_and_read(odd, lambda st: st.arrays(), check_later=True)
    s.close()
    monkeypatch.setattr(store_mod, "CHECK_LATER_BYTES", 0)   # the same, as a large file is read
    with ms.open(odd) as s:
        got["ms.open().arrays(), large"] = s.arrays()
    s, got["open_and_read, large"] = ms.open_and_read(odd, lambda st: st.arrays())
    s.close()
    s, data = ms.open_and_read(odd, open_store_data, check_later=True)   # the window's, a snapshot written
    s.close()
    join_snapshot_writes()
    got["window (preview)"] = data.arrays
    with ms.open(odd) as s:
        got["snapshot (preview)"] = s.arrays(preview=PREVIEW_CHARS, snapshot=True)   # from the window's snapshot
        got["snapshot"] = s.arrays(snapshot=True)                  # the same snapshot, previews left out
        got["snapshot, shorter preview"] = s.arrays(preview=12, snapshot=True)
        got["snapshot, model=main"] = s.arrays(model="main", snapshot=True)
        small = s.arrays(model="small", snapshot=True)             # not the snapshot's model: a scan
    shorter = reference(odd, 12)
    for name, arrays in got.items():
        same(arrays, shorter if "shorter" in name else want_preview if "preview" in name else want, name)
    assert_same_arrays(small, reference(odd, model="small"))
    assert small.dim == 4 and small.has_embedding.sum() == 20
    snap = got["snapshot"]
    assert isinstance(snap.embedding, np.memmap) or snap.embedding.base is not None   # it came from the file


def test_a_framework_stores_arrays_are_its_mirrors(tmp_path):
    import memviz.frameworks as fw
    from memviz.frameworks.mirror import mirror_path
    from tests.langgraph_stores import sqlite_agent

    path = tmp_path / "langgraph.db"
    sqlite_agent(path, [], embed="toy:8")
    rng = np.random.default_rng(0)
    conn = apsw.Connection(str(path))
    with conn:
        for k in range(200):
            ns, key = f"memories.user{k % 3}", f"item-{k}"
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)",
                         (ns, key, f'{{"content": "user {k % 3} fact {k}\\nline two"}}'.encode()))
            conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?, ?, 'content', ?)",
                         (ns, key, rng.normal(size=8).astype(np.float32).tobytes()))
    conn.close()
    first, built = fw.open_and_read(str(path), lambda st: st.arrays(preview=PREVIEW_CHARS), check_later=True)
    first.checked()
    first.close()
    with fw.open_source(str(path)) as again:
        reread = again.arrays(preview=PREVIEW_CHARS)
        plain = again.arrays()
        native = mirror_path(fw.recognise(str(path)))
    assert len(built) == 200 and built.has_embedding.all()
    assert_same_arrays(built, reference(native, PREVIEW_CHARS))   # what the build wrote, not read back
    assert_same_arrays(reread, reference(native, PREVIEW_CHARS))
    assert_same_arrays(plain, reference(native))
    with ms.open(native) as s:
        assert_same_arrays(s.arrays(), plain)


def test_every_postgres_read_path_gives_the_same_arrays(tmp_path, pg_db):  # noqa: F811 - the fixture
    import psycopg

    with ms.create(pg_db) as s:
        s.insert_memories(records(300))
    with psycopg.connect(pg_db, autocommit=True) as c:   # what PostgreSQL's typed columns can hold of ODD
        for mid, sets in (("imp_inf", "importance = 'Infinity'"), ("conf_nan_text", "confidence = 'NaN'"),
                          ("t_ms", "event_time = 1772366400000"), ("bad_json", "attributes = '{not json'"),
                          ("lines", "content = E'first line\\nsecond\\ttabbed\\rend'"),
                          ("unicode", "content = 'café ☕ 𝄞', agent = 'zoë'")):
            c.execute(f"UPDATE memories SET {sets} WHERE id = %s", (mid,))
    got = {}
    with ms.open(pg_db) as s:
        got["arrays()"] = s.arrays()
        got["model=main"] = s.arrays(model="main")
        got["snapshot"] = s.arrays(snapshot=True)
        got["preview"] = s.arrays(preview=PREVIEW_CHARS)
    s, got["open_and_read"] = ms.open_and_read(pg_db, lambda st: st.arrays())
    s.close()
    s, data = ms.open_and_read(pg_db, open_store_data, check_later=True)
    s.close()
    got["window (preview)"] = data.arrays
    first = got["arrays()"]
    for name, arrays in got.items():
        same(arrays, got["preview"] if "preview" in name else first, name)
    assert first.bad_value.any() and first.bad_json.any() and got["preview"].preview[list(first.ids).index("lines")] \
        == "first line second tabbed end"
    # the same memories as an SQLite store of the same records, vector for vector (in the order
    # each backend gave them rowids)
    with ms.create(str(tmp_path / "same.db")) as s:
        s.insert_memories(records(300))
    want = reference(str(tmp_path / "same.db"))
    mine, theirs = np.argsort(first.ids), np.argsort(want.ids)
    assert first.ids[mine].tolist() == want.ids[theirs].tolist() and first.embedding_model == want.embedding_model
    assert np.array_equal(first.has_embedding[mine], want.has_embedding[theirs])
    assert first.embedding[mine].tobytes() == want.embedding[theirs].tobytes()


# ------------------------------------------------------------------ a large file: the check after the read
@pytest.fixture
def large(monkeypatch):
    """Every file counts as large; SQLite's quick check can be held back, and how it began is kept
    ("thread": started in a thread of its own; "at once": run by the thread that opened)."""
    monkeypatch.setattr(store_mod, "CHECK_LATER_BYTES", 0)
    gate, started = threading.Event(), []
    gate.set()
    real, real_thread = store_mod._quick_check, store_mod._checked_in_thread

    def held(conn, path):
        if threading.current_thread().name != "memviz-quick-check":
            started.append("at once")
        assert gate.wait(30)
        return real(conn, path)

    def thread(*args, **kwargs):
        started.append("thread")
        return real_thread(*args, **kwargs)
    monkeypatch.setattr(store_mod, "_quick_check", held)
    monkeypatch.setattr(store_mod, "_checked_in_thread", thread)
    return gate, started


def test_the_library_open_reads_before_the_check_and_writes_wait_for_it(odd, large):
    gate, started = large
    gate.clear()
    store = ms.open(odd)
    try:
        assert started == [] and store.checking          # due, not begun: nothing competes with the read
        arrays = store.arrays()
        assert started == ["thread"]                     # begun once the store was read
        assert store.checking and not store.answers_later
        result = {}
        writer = threading.Thread(target=lambda: result.update(done=store.set_valid_until(arrays.ids[0], 1.0)))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive()                         # the write waits for the check, it is not refused
        gate.set()
        writer.join(30)
        assert "done" in result and not store.checking and not store.read_only
        assert store.checked() == []
    finally:
        store.close()
    assert reference(odd).valid_until[0] == 1.0


def test_a_check_nobody_began_runs_when_its_answer_is_asked(odd, large):
    _gate, started = large
    with ms.open(odd) as store:
        assert started == []
        assert not store.read_only                       # asking is what begins it, and waits for it
        assert started == ["thread"] and not store.checking


def test_damage_found_after_a_library_read_makes_the_store_read_only(tmp_path, large):
    from tests.test_store_check_later import damaged

    _gate, started = large
    store = ms.open(damaged(tmp_path))
    try:
        assert len(store.arrays()) == 60 and started
        assert store.read_only and "quick_check found damage" in store.read_only_reason
        with pytest.raises(ms.ReadOnlyError, match="quick_check found damage"):
            store.set_valid_until(store.arrays().ids[0], 1.0)
    finally:
        store.close()
    (tmp_path / "again").mkdir()
    s, _ = ms.open_and_read(damaged(tmp_path / "again"), lambda st: st.arrays())
    with s:
        assert s.read_only and "quick_check found damage" in s.read_only_reason


# ------------------------------------------------------------------ the memory map: none kept, none for a scan
def mapped(path) -> bool:
    """Whether this process has the file memory-mapped (Linux's /proc/self/maps)."""
    with open("/proc/self/maps") as fh:
        return any(line.rstrip().endswith(str(path)) for line in fh)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc/self/maps")
def test_a_store_keeps_no_map_and_a_search_of_every_vector_maps_the_file_only_while_it_lasts(odd):
    with ms.open(odd) as s:
        assert s.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
        with whole_file_mapped(s.conn):
            assert s.conn.execute("SELECT count(*) FROM memories").fetchone()[0] > 300
            assert mapped(odd)                             # the read went through a map of the file
        assert not mapped(odd) and s.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
        arrays = s.arrays()
        assert not mapped(odd)                             # the scan reads through SQLite's page cache
        assert len(s.vec_search(arrays.embedding[np.flatnonzero(arrays.has_embedding)[0]], 5)) == 5
        assert s.integrity() == []
        assert not mapped(odd)                             # KNN and integrity_check let their map go
        assert s.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
    same(arrays, reference(odd), "read")


def test_a_read_through_a_map_gives_the_same_arrays_and_a_file_sqlite_cannot_map_is_searched(odd):
    with ms.open(odd) as s:
        s.conn.execute(f"PRAGMA mmap_size={1 << 40}")          # a caller's own map changes nothing read
        same(s.arrays(), reference(odd), "read through a map")
    memory = apsw.Connection(":memory:")                     # nothing to map: the search goes on as it is
    with whole_file_mapped(memory):
        assert memory.execute("SELECT 1").fetchone() == (1,)
    memory.close()
