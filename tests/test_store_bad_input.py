"""Bad input: each case gives a clear message and leaves the file exactly as it was."""
import hashlib
import os

import apsw
import numpy as np
import pytest

import memviz.store as ms
from memviz.cli import main as cli
from tests.conftest import unit_vectors


def digest(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.exists(p) else None


def filled(path, n=60):
    s = ms.create(str(path))
    v = unit_vectors(n, 16)
    s.insert_memories([dict(kind="episode", content=f"memory {i} " + "words " * 40, embedding=v[i],
                            embedding_model="m") for i in range(n)])
    s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s.conn.execute("PRAGMA journal_mode=DELETE")  # a single file, so byte surgery below is meaningful
    s.close()
    return path


@pytest.fixture
def unchanged():
    """Checks that a path's bytes (or absence) are the same at the end of the test."""
    seen = {}

    def watch(p):
        seen[str(p)] = digest(p)
        return str(p)
    yield watch
    for p, d in seen.items():
        assert digest(p) == d, f"{p} was changed"
        assert not os.path.exists(p + "-wal") or os.path.getsize(p + "-wal") == 0


def test_missing_path_is_not_created(tmp_path, unchanged):
    p = unchanged(tmp_path / "nope.db")
    with pytest.raises(ms.StoreError, match="No such file"):
        ms.open(p)
    assert not os.path.exists(p)
    assert cli(["stats", p]) == 2


def test_zero_byte_file(tmp_path, unchanged):
    p = tmp_path / "empty.db"
    p.write_bytes(b"")
    with pytest.raises(ms.NotAStoreError, match="empty"):
        ms.open(unchanged(p))


def test_non_sqlite_file(tmp_path, unchanged, capsys):
    p = tmp_path / "notes.db"
    p.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(ms.NotAStoreError, match="not an SQLite database"):
        ms.open(unchanged(p))
    assert cli(["stats", str(p)]) == 2
    assert "not an SQLite database" in capsys.readouterr().err


def test_truncated_file(tmp_path, unchanged):
    p = filled(tmp_path / "t.db")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ms.CorruptStoreError, match="truncated"):
        ms.open(unchanged(p))


def test_truncated_mid_page(tmp_path, unchanged):
    p = filled(tmp_path / "t.db")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) - 100])
    with pytest.raises(ms.CorruptStoreError, match="truncated"):
        ms.open(unchanged(p))


def test_flipped_bytes_in_a_page(tmp_path, unchanged):
    p = filled(tmp_path / "f.db")
    page = 4096
    conn = apsw.Connection(str(p))
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='memories'").fetchone()[0]
    conn.close()
    data = bytearray(p.read_bytes())
    off = (root - 1) * page
    for i in range(off, off + 64):  # the b-tree page header and first cell pointers
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    try:
        s = ms.open(unchanged(p))
    except ms.CorruptStoreError as e:
        assert "damaged" in str(e)
    else:
        assert s.read_only and "quick_check" in s.read_only_reason
        s.close()


def test_other_schema(tmp_path, unchanged):
    p = tmp_path / "other.db"
    c = apsw.Connection(str(p))
    c.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5)")
    c.close()
    with pytest.raises(ms.NotAStoreError, match="not a memviz memory store.*invoices"):
        ms.open(unchanged(p))


def test_memories_table_lacking_columns(tmp_path, unchanged):
    p = tmp_path / "old.db"
    c = apsw.Connection(str(p))
    c.execute("CREATE TABLE memories(id TEXT PRIMARY KEY, content TEXT)")
    c.close()
    with pytest.raises(ms.NotAStoreError, match="lacks the columns agent, kind"):
        ms.open(unchanged(p))


def test_vec_table_dimension_differs_from_embeddings(tmp_path, unchanged):
    p = filled(tmp_path / "v.db")
    s = ms.open(str(p))
    with s.transaction() as c:
        for name in ("vec_memories_16_ai", "vec_memories_16_ad", "vec_memories_16_au"):
            c.execute(f"DROP TRIGGER {name}")
        c.execute("DROP TABLE vec_memories_16")
        c.execute("CREATE VIRTUAL TABLE vec_memories_16 USING vec0(memory_id TEXT PRIMARY KEY, embedding float[32])")
    s.close()
    s = ms.open(unchanged(p))
    assert s.read_only and "declared for 32 dimensions, not the 16" in s.read_only_reason
    with pytest.raises(ms.ReadOnlyError, match="declared for 32 dimensions"):
        s.set_meta("x", 1)
    s.close()


@pytest.mark.parametrize("bad", [np.array([1.0, np.nan] + [0.0] * 14), np.array([np.inf] + [0.0] * 15),
                                 np.ones(15), np.ones((2, 8)), b"\x00\x01\x02"])
def test_bad_embeddings_rejected_before_insert(store, bad):
    store.insert_memories([dict(kind="episode", content="ok", embedding=np.ones(16), embedding_model="m")])
    before = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    with pytest.raises(ms.ValidationError, match="embedding"):
        store.insert_memories([dict(kind="episode", content="fine", embedding=np.ones(16), embedding_model="m"),
                               dict(kind="episode", content="bad", embedding=bad, embedding_model="m")])
    assert store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == before


def test_malformed_json_columns_flag_the_row_and_the_rest_loads(store):
    ids = store.insert_memories([dict(kind="fact", content=f"f{i}") for i in range(3)])
    with store.transaction() as c:  # as a foreign writer might leave them
        c.execute("UPDATE memories SET tags='[\"a\",' WHERE id=?", (ids[0],))
        c.execute("UPDATE memories SET source_ids='{not json' WHERE id=?", (ids[1],))
    a = store.arrays()
    assert a.bad_json.tolist() == [True, True, False]
    row = store.get(ids[0])
    assert row["tags"] == [] and any("tags" in p for p in row["problems"])
    assert store.get(ids[1])["source_ids"] == [] and store.get(ids[2])["problems"] == []
    assert store.provenance().sources == []
    with pytest.raises(ms.ValidationError, match="not valid JSON"):
        store.insert_memories([dict(kind="fact", content="x", tags="[oops")])


def test_invalid_utf8_content_is_shown_replaced(store):
    mid, = store.insert_memories([dict(kind="fact", content="placeholder")])
    with store.transaction() as c:
        c.execute("UPDATE memories SET content = CAST(? AS TEXT) WHERE id=?", (b"caf\xe9 \xff ok", mid))
    row = store.get(mid)
    assert row["content"] == "caf\ufffd \ufffd ok"
    assert any("UTF-8" in p for p in row["problems"])
    assert len(store.arrays()) == 1


def test_foreign_trigger_or_view_refuses_writes_and_shows_sql(tmp_path, unchanged):
    p = filled(tmp_path / "trig.db", n=3)
    c = apsw.Connection(str(p))
    c.execute("CREATE TABLE log(x); CREATE TRIGGER spy AFTER UPDATE ON memories BEGIN INSERT INTO log VALUES (new.id); END;"
              "CREATE VIEW recent AS SELECT id FROM memories")
    c.close()
    s = ms.open(unchanged(p))
    assert s.read_only
    assert "CREATE TRIGGER spy AFTER UPDATE ON memories" in s.read_only_reason
    assert "view recent" in s.read_only_reason
    with pytest.raises(ms.ReadOnlyError, match="spy"):
        s.update_fields(s.arrays().ids[0], {"importance": 9})
    s.close()


def test_modified_native_trigger_counts_as_foreign(tmp_path, unchanged):
    p = filled(tmp_path / "mod.db", n=3)
    c = apsw.Connection(str(p))
    c.execute("DROP TRIGGER memories_fts_ai; CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN SELECT 1; END;")
    c.close()
    s = ms.open(unchanged(p))
    assert s.read_only and "memories_fts_ai" in s.read_only_reason
    s.close()


def test_empty_sqlite_database(tmp_path, unchanged):
    p = tmp_path / "blank.db"
    c = apsw.Connection(str(p))
    c.execute("PRAGMA user_version=1")
    c.close()
    with pytest.raises(ms.NotAStoreError):
        ms.open(unchanged(p))


@pytest.mark.parametrize("read", [None, lambda s: s.arrays()], ids=["open", "open_and_read"])
def test_damaged_index_opens_read_only_whether_checked_first_or_alongside(tmp_path, unchanged, read):
    # quick_check finds the broken index page; the table itself still reads. open_and_read runs
    # the check beside the read and must end in the same place as checking first.
    p = filled(tmp_path / "i.db")
    conn = apsw.Connection(str(p))
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='idx_memories_event_time'").fetchone()[0]
    conn.close()
    data = bytearray(p.read_bytes())
    off = (root - 1) * 4096
    for i in range(off, off + 12):  # the index page's b-tree header
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    store, arrays = ms.open_and_read(unchanged(p), read)
    try:
        assert store.read_only and "quick_check found damage" in store.read_only_reason
        assert arrays is None if read is None else len(arrays) == 60
        with pytest.raises(ms.ReadOnlyError):
            store.set_valid_until("m-any", 1.0)
    finally:
        store.close()


def test_open_and_read_returns_the_read_and_a_writable_store(tmp_path):
    p = filled(tmp_path / "ok.db")
    store, arrays = ms.open_and_read(str(p), lambda s: s.arrays(preview=12))
    with store:
        assert not store.read_only and len(arrays) == 60
        assert arrays.preview[0] == "memory 0 wor"
        store.set_valid_until(arrays.ids[0], 1.0)  # writable once the check has answered
