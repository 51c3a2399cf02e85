"""A whole read of a store without the read index checks the JSON columns of every row on its
second connection, beside the scan and after the arrays are handed out: the read does not wait for
that check, `bad_json` does (its first read waits for the answer, which is exact), and a check
that cannot run on the second connection runs on a connection of its own, or says what happened.
With the read index (schema.READ_INDEX: each row's answer is in it) the check reads the index."""
from __future__ import annotations

import threading

import apsw
import pytest

import memviz.store as ms
from memviz.store import arrays as A
from memviz.store.schema import READ_INDEX

BAD = {"m-3": "attributes = '{not json'", "m-7": "tags = '[\"a\",'"}


def json_store(p: str, index: bool) -> str:
    """A store of 12 memories, two with a malformed JSON column (BAD); `index`: it keeps the read index."""
    with ms.create(p) as s:
        s.insert_memories([dict(id=f"m-{i}", kind="fact", content=f"memory {i}", attributes={"n": i})
                           for i in range(12)])
        with s.transaction() as c:
            for mid, sets in BAD.items():
                c.execute(f"UPDATE memories SET {sets} WHERE id = ?", (mid,))
            if not index:
                c.execute(f"DROP INDEX {READ_INDEX}")
    return p


@pytest.fixture
def path(tmp_path):
    return json_store(str(tmp_path / "json.db"), index=False)


def want(a) -> list[str]:
    return sorted(a.ids[a.bad_json].tolist())


@pytest.fixture
def held(monkeypatch):
    """The JSON check of a whole read held until `release` is set (`began`: it has started);
    the rows split over two connections, as a large store's are."""
    monkeypatch.setattr(A, "_SPLIT_FROM", 0)
    release, began = threading.Event(), threading.Event()
    check = A._bad_json_rows

    def holding(conn, again=False):
        began.set()
        assert release.wait(10)
        return check(conn, again)
    monkeypatch.setattr(A, "_bad_json_rows", holding)
    return release, began


def test_the_read_returns_before_the_json_check_and_bad_json_waits_for_it(path, held):
    release, began = held
    with ms.open(path, read_only=True) as s:
        a = s.arrays()   # returns while the check is held
        assert began.wait(10) and not release.is_set()
        answer = []
        reader = threading.Thread(target=lambda: answer.append(want(a)))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not answer   # a reader of bad_json waits for the answer
        release.set()
        reader.join(10)
        assert answer == [["m-3", "m-7"]]
        assert want(a) == ["m-3", "m-7"]
        exact = A.load_arrays(s.conn, in_sqlite=False)   # the row-by-row reader checks in the read
        assert want(exact) == ["m-3", "m-7"]


class Failing:
    """A connection to the same file whose statements fail (as an out-of-memory error would)."""

    def __init__(self, conn):
        self.filename, self.open_vfs = conn.filename, conn.open_vfs

    def execute(self, *_args):
        raise apsw.NoMemError("out of memory")


def test_a_check_the_second_connection_cannot_make_runs_on_its_own_connection(path, monkeypatch):
    monkeypatch.setattr(A, "_SPLIT_FROM", 0)
    check, used = A._bad_json_rows, []

    def failing(conn, again=False):
        used.append(again)
        return check(Failing(conn) if again else conn, again)
    monkeypatch.setattr(A, "_bad_json_rows", failing)
    with ms.open(path, read_only=True) as s:
        assert want(s.arrays()) == ["m-3", "m-7"]
    assert used == [True]   # the second connection's check failed, and a connection of its own answered


def test_a_check_that_cannot_run_anywhere_says_so(path, monkeypatch):
    monkeypatch.setattr(A, "_SPLIT_FROM", 0)
    monkeypatch.setattr(A, "_BAD_JSON", "SELECT no_such_function()")
    with ms.open(path, read_only=True) as s:
        a = s.arrays()
        with pytest.raises(ms.StoreError, match="checking the JSON columns") as e:
            a.bad_json.any()
        assert not isinstance(e.value, apsw.Error)


def test_the_windows_load_waits_for_the_check_so_no_paint_does(path, held):
    """load_store_data runs in a loading thread and hands its arrays to the GUI thread, whose
    table reads bad_json in a paint: the loading thread waits for the check, the paint never."""
    from memviz.session.state import load_store_data
    release, began = held
    with ms.open(path, read_only=True) as s:
        loaded = []
        loader = threading.Thread(target=lambda: loaded.append(load_store_data(s)))
        loader.start()
        assert began.wait(10)
        loader.join(0.3)
        assert loader.is_alive() and not loaded   # still loading: the check is part of it
        release.set()
        loader.join(10)
        a = loaded[0].arrays
        assert want(a) == ["m-3", "m-7"]


def test_with_the_read_index_the_check_reads_the_index_and_is_exact(tmp_path, monkeypatch):
    p = json_store(str(tmp_path / "indexed.db"), index=True)
    with ms.open(p, read_only=True) as s:
        plan = " ".join(r[3] for r in s.conn.execute("EXPLAIN QUERY PLAN " + A._BAD_JSON))
        assert f"COVERING INDEX {READ_INDEX}" in plan   # the index holds each row's answer: no table page read
        assert want(s.arrays()) == ["m-3", "m-7"]
        monkeypatch.setattr(A, "_BAD_JSON", "SELECT no_such_function()")
        assert want(s.arrays()) == ["m-3", "m-7"]   # the check cannot run: the rows are read one by one
