"""The PostgreSQL backend against a real server: the interface, edits with conflict detection,
vectors wider than pgvector indexes, and bad input said clearly (never a traceback, never
the password)."""
from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import unit_vectors
from pg_server import PASSWORD, PASSWORD_ROLE, db_name, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.cli import main
from memviz.store.interface import MemoryStore
from memviz.store.postgres import PgStore, redact
from memviz.store.postgres.dsn import scrub


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    yield s
    s.close()


def _records(n, dim=8, model="m", seed=0):
    v = unit_vectors(n, dim, seed)
    return [{"id": f"m{i}", "kind": "fact", "agent": "a" if i % 2 else "b", "content": f"memory number {i} about tea",
             "embedding": v[i], "embedding_model": model, "event_time": 1_700_000_000 + i, "tags": ["t"]}
            for i in range(n)]


def test_create_makes_the_native_schema_with_an_index_per_dimension(store, pg, pg_db):  # noqa: F811
    assert isinstance(store, PgStore) and isinstance(store, MemoryStore)
    assert not store.read_only
    store.insert_memories(_records(5, dim=8) + [{**r, "id": "w" + r["id"], "embedding_model": "wide"}
                                                for r in _records(2, dim=2048, seed=1)])
    with pg.admin(db_name(pg_db)) as c:
        tables = {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"memories", "entities", "memviz_audit", "memviz_layouts", "memviz_meta", "memviz_migrations"} <= tables
        assert c.execute("SELECT version FROM memviz_migrations ORDER BY 1").fetchall() == [(1,), (2,), (3,), (4,)]
        # room on each page for an edit's new row version (a HOT update: the HNSW index is not touched)
        assert c.execute("SELECT reloptions FROM pg_class WHERE relname = 'memories'").fetchone()[0] == \
            ["fillfactor=80"]
        idx = {r[0] for r in c.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'memories'")}
        assert any("hnsw (embedding_8 vector_cosine_ops)" in i for i in idx)
        assert not any("embedding_2048" in i for i in idx)  # pgvector indexes at most 2000 dims: exact search
    assert store.embedding_models() == [("m", 8, 5), ("wide", 2048, 2)]
    assert "searched exactly" in store.vector_index_notes()[0]
    wide = store.arrays(model="wide")
    assert wide.dim == 2048 and wide.has_embedding.sum() == 2
    assert store.vec_search(wide.embedding[5], 1)[0][0] == "wm0"
    assert store.vec_search(np.zeros(8, np.float32), 3) == []  # no direction: near nothing


def test_vectors_round_trip_bit_for_bit(store):
    recs = _records(50, dim=16)
    recs[3]["embedding"] = np.array([1e-38, -0.0, 3.4e38, 1.0000001] + [0.5] * 12, dtype=np.float32)
    store.insert_memories(recs)
    for r in recs:
        assert store.get(r["id"])["embedding"] == np.asarray(r["embedding"], dtype=np.float32).tobytes()
    a = store.arrays()
    assert list(a.ids) == [r["id"] for r in recs] and a.has_embedding.all()
    assert np.array_equal(a.embedding[10], recs[10]["embedding"])  # already unit length: untouched


def test_edits_are_audited_and_detect_conflicts(store, pg_db):  # noqa: F811
    store.insert_memories(_records(3))
    store.update_fields("m0", {"importance": 8, "tags": ["x"]}, expected={"importance": 5.0})
    other = ms.open(pg_db)  # another writer (the agent, or a second window)
    try:
        other.update_fields("m0", {"content": "changed elsewhere"})
        with pytest.raises(ms.ConflictError, match="changed by someone else") as e:
            store.update_fields("m0", {"content": "mine"}, expected={"content": "memory number 0 about tea"})
        assert e.value.current["content"] == "changed elsewhere"
        assert store.get("m0")["content"] == "changed elsewhere"
        with pytest.raises(ms.ConflictError):
            store.set_valid_until("m1", 1_800_000_000, expected={"importance": 1.0})
        store.set_valid_until("m1", 1_800_000_000, expected={"valid_until": None})
        with pytest.raises(ms.ConflictError, match="already retired"):
            other.supersede("m1", "new text")
        nid = store.supersede("m2", "the corrected text", expected={"content": "memory number 2 about tea"})
    finally:
        other.close()
    new = store.get(nid)
    assert new["attributes"] == {"supersedes": "m2", "needs_embedding": True} and new["embedding"] is None
    assert store.get("m2")["valid_until"] is not None
    assert ("supersedes" in {k for k in new["attributes"]}) and store.supersede_links() == [(nid, "m2")]
    actions = [h["action"] for h in store.history("m0")]
    assert actions == ["insert", "update", "update"]
    assert store.history("m0")[1]["before"] == {"importance": 5.0, "tags": '["t"]'}
    store.update_fields("m0", {"protected": True, "embedding": unit_vectors(1, 8, 9)[0], "embedding_model": "m"})
    assert store.get("m0")["protected"] is True
    with pytest.raises(ms.ValidationError, match="importance"):
        store.update_fields("m0", {"importance": 11})
    with pytest.raises(ms.ValidationError, match="already in the store"):
        store.insert_memories(_records(1))
    with pytest.raises(ms.ValidationError, match="dimensions"):
        store.insert_memories([{**_records(1)[0], "id": "z", "embedding": [1.0, 0.0]}])
    assert store.counts()["total"] == 4  # nothing half-written


def test_read_only_open_refuses_writes(store, pg_db):  # noqa: F811
    store.insert_memories(_records(2))
    with ms.open(pg_db, read_only=True) as ro:
        assert ro.read_only and "--read-only" in ro.read_only_reason
        with pytest.raises(ms.ReadOnlyError):
            ro.update_fields("m0", {"importance": 1})


def test_a_role_that_may_only_read_opens_read_only(store, pg, pg_db):  # noqa: F811
    store.insert_memories(_records(2))
    db = db_name(pg_db)
    with pg.admin(db) as c:
        c.execute("DROP ROLE IF EXISTS memviz_reader")
        c.execute("CREATE ROLE memviz_reader LOGIN")
        c.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO memviz_reader")
    try:
        with ms.open(pg.dsn(db, "memviz_reader")) as s:
            assert s.read_only and "memviz_reader may only read" in s.read_only_reason
            assert len(s.arrays()) == 2
    finally:
        with pg.admin(db) as c:
            c.execute("DROP OWNED BY memviz_reader")
            c.execute("DROP ROLE memviz_reader")


def test_vectors_read_beside_the_columns_match_a_read_on_one_connection(store, pg, pg_db):  # noqa: F811
    """The vectors come by binary COPY on a second connection in the same snapshot; a role
    that may hold only one connection reads everything on it: the same arrays either way,
    with rows of another model in the same column and rows without a vector left out."""
    from conftest import assert_same_arrays
    store.insert_memories(_records(6) + [{**r, "id": "o" + r["id"], "embedding_model": "other"} for r in _records(3, seed=2)]
                          + [{**r, "id": "n" + r["id"], "embedding": None, "embedding_model": None} for r in _records(2)])
    store.update_fields("m1", {"importance": 2})  # a row version elsewhere in the table: the COPY's order is not rowid's
    db = db_name(pg_db)
    with pg.admin(db) as c:
        c.execute("DROP ROLE IF EXISTS memviz_single")
        c.execute("CREATE ROLE memviz_single LOGIN CONNECTION LIMIT 1")
        c.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO memviz_single")
    try:
        with ms.open(pg.dsn(db, "memviz_single")) as single:
            for model in (None, "other"):
                beside, alone = store.arrays(model=model, preview=10), single.arrays(model=model, preview=10)
                assert store._sides and not single._sides  # the role's one connection is in use
                assert_same_arrays(beside, alone)
                want = {None: "m", "other": "other"}[model]
                assert beside.embedding_model == want and beside.has_embedding.sum() == (6 if want == "m" else 3)
                assert not beside.embedding[~beside.has_embedding].any()
            fresh = single.arrays_of([int(r) for r in beside.rowid[:4]], "other", 8)
            assert list(fresh.ids) == list(beside.ids[:4])
    finally:
        with pg.admin(db) as c:
            c.execute("DROP OWNED BY memviz_single")
            c.execute("DROP ROLE memviz_single")


def test_columns_read_in_two_halves_on_two_connections_match_a_read_on_one(store, pg, pg_db, monkeypatch):  # noqa: F811
    """A large table's columns are read in two page ranges, the second on a third connection in
    the same snapshot: the same arrays as one read (rowid order, rows moved by an edit, a row
    with bad JSON, rows without a vector). A role that may hold only two connections reads
    both halves on its first (as when the columns' side connection is lost)."""
    from conftest import assert_same_arrays

    from memviz.store.postgres import arrays as pg_arrays
    store.insert_memories([{**r, "content": r["content"] + " " + "x" * 300} for r in _records(400)]
                          + [{**r, "id": "n" + r["id"], "embedding": None, "embedding_model": None} for r in _records(5)]
                          + [{**_records(1)[0], "id": "lines", "content": "one\ntwo\tthree\r\nfour"}])
    for i in (3, 250, 399):
        store.update_fields(f"m{i}", {"importance": 2})  # a row version at the table's end
    db = db_name(pg_db)
    with pg.admin(db) as c:
        c.execute("UPDATE memories SET tags = 'not json' WHERE id = 'm7'")
        c.execute("ANALYZE memories")
        c.execute("DROP ROLE IF EXISTS memviz_two")
        c.execute("CREATE ROLE memviz_two LOGIN CONNECTION LIMIT 2")
        c.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO memviz_two")
    try:
        whole = store.arrays(preview=20)
        assert len(store._sides) == 1  # below SPLIT_ROWS: one read of the columns
        monkeypatch.setattr(pg_arrays, "SPLIT_ROWS", 1)
        assert pg_arrays.table_size(store.conn)[1] >= 2
        halves = store.arrays(preview=20)
        assert len(store._sides) == 2
        assert_same_arrays(whole, halves)
        assert list(halves.rowid) == sorted(halves.rowid) and halves.bad_json.sum() == 1
        assert halves.has_embedding.sum() == 401 and len(halves) == 406
        assert halves.preview[list(halves.ids).index("lines")] == "one two three  four"  # previews on one line
        with ms.open(pg.dsn(db, "memviz_two")) as two:
            assert_same_arrays(whole, two.arrays(preview=20))
            assert len(two._sides) == 1
    finally:
        with pg.admin(db) as c:
            c.execute("DROP OWNED BY memviz_two")
            c.execute("DROP ROLE memviz_two")


def test_wide_vectors_read_in_two_halves_on_two_connections_match_a_read_on_one(store, monkeypatch):
    """TOASTed vectors of a large table are read in two rowid ranges on two connections in the
    same snapshot, into one matrix that keeps the spare rows a live refresh appends into: the
    same arrays as one read (rows without a vector, a row moved by an edit, an odd count)."""
    from conftest import assert_same_arrays

    from memviz.store.postgres import arrays as pg_arrays
    store.insert_memories(_records(41, dim=600) + [{**r, "id": "n" + r["id"], "embedding": None, "embedding_model": None}
                                                   for r in _records(3, dim=600)])
    store.update_fields("m2", {"importance": 2})
    store.conn.execute("ANALYZE memories")
    for every_row in (False, True):
        if every_row:  # the matrix the halves were written into is the one kept
            store.conn.execute("DELETE FROM memories WHERE id LIKE 'n%'")
        monkeypatch.setattr(pg_arrays, "WIDE_SPLIT_ROWS", 10**9)
        one = store.arrays(preview=20)
        assert len(store._sides) == 1
        monkeypatch.setattr(pg_arrays, "WIDE_SPLIT_ROWS", 1)
        halves = store.arrays(preview=20)
        assert len(store._sides) == 2
        assert_same_arrays(one, halves)
        assert halves.has_embedding.sum() == 41 and len(halves) == 41 + 3 * (not every_row)
        base = halves.embedding.base
        assert base is not None and base.shape[0] > len(halves) and base.ctypes.data == halves.embedding.ctypes.data


def test_wrong_password_is_said_without_the_password(pg, pg_db, capsys):  # noqa: F811
    if not pg.managed:
        pytest.skip("needs the server the tests start (its pg_hba asks this role for a password)")
    db = db_name(pg_db)
    dsn = pg.dsn(db, PASSWORD_ROLE, "not-the-" + PASSWORD)
    with pytest.raises(ms.StoreError, match="wrong or missing password") as e:
        ms.open(dsn)
    assert PASSWORD not in str(e.value) and "not-the-" not in str(e.value)
    assert main(["stats", dsn]) == 2
    err = capsys.readouterr().err
    assert "wrong or missing password" in err and "not-the-" not in err and "Traceback" not in err


def test_unreachable_server_and_not_a_store(pg, pg_db, tmp_path):  # noqa: F811
    with pytest.raises(ms.StoreError, match="Cannot reach the PostgreSQL server"):
        ms.open(f"postgresql://someone:secret@/db?host={tmp_path}")
    with pytest.raises(ms.StoreError) as e:  # a TCP port nothing listens on
        ms.open("postgresql://someone:secret@127.0.0.1:1/db")
    # one sentence with libpq's reason, not its tab-indented hint ("...connections?. Is it running")
    assert str(e.value) == ("Cannot reach the PostgreSQL server at postgresql://someone@127.0.0.1:1/db "
                            "(Connection refused). Is it running, and are the host and port right?")
    with pytest.raises(ms.NotAStoreError, match="no `memories` table.*memviz create"):
        ms.open(pg_db)
    with pytest.raises(ms.StoreError, match="no such database"):
        ms.open(pg.dsn("no_such_db_here"))


def test_no_vector_extension_says_how_to_add_it(pg, pg_db):  # noqa: F811
    """A role that may not add the extension: create says what to run, and as whom."""
    db = db_name(pg_db)
    with pg.admin() as c:
        c.execute("DROP ROLE IF EXISTS memviz_owner")
        c.execute("CREATE ROLE memviz_owner LOGIN")
    owned = pg.fresh_db(owner="memviz_owner")
    try:
        with pytest.raises(ms.StoreError, match=r"no `vector` extension.*CREATE EXTENSION vector") as e:
            ms.create(pg.dsn(owned, "memviz_owner"))
        assert "may not add it" in str(e.value)
        with pg.admin(owned) as c:  # nothing half-made
            assert c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
        # a store whose database lost the extension cannot be opened, and says why
        ms.create(pg_db).close()
        with pg.admin(db) as c:
            c.execute("DROP EXTENSION vector CASCADE")
        with pytest.raises(ms.NotAStoreError, match="CREATE EXTENSION vector"):
            ms.open(pg_db)
    finally:
        pg.drop_db(owned)
        with pg.admin() as c:
            c.execute("DROP ROLE memviz_owner")


def test_dsn_passwords_are_never_shown():
    dsn = "postgresql://ann:s3cr%40t@db.example:5432/mem?sslmode=require&password=other"
    shown = redact(dsn)
    assert "s3cr" not in shown and "other" not in shown and shown.startswith("postgresql://ann@db.example:5432/mem")
    assert scrub("failed for s3cr%40t and other", dsn) == "failed for *** and ***"
    assert ms.is_dsn("postgres://x/y") and not ms.is_dsn("/tmp/x.db")


def test_layout_cache_and_change_watcher_work_on_postgres(store, pg_db):  # noqa: F811
    from memviz.layout.cache import LayoutCache
    from memviz.store.changes import ChangeWatcher

    store.insert_memories(_records(6))
    a = store.arrays()
    coords = np.arange(12, dtype=np.float32).reshape(6, 2)
    LayoutCache(store).put("umap", a, {"n_neighbors": 15}, coords)
    with ms.open(pg_db) as again:  # read back from the server, not from memory
        assert np.array_equal(LayoutCache(again).get("umap", again.arrays(), {"n_neighbors": 15}), coords)
        LayoutCache(again).forget("umap")
    assert LayoutCache(store).get("umap", a, {"n_neighbors": 15}) is None
    watcher = ChangeWatcher(store)
    assert watcher.poll() is not None  # the first look after subscribing (LISTEN) counts: nothing missed before it
    assert watcher.poll() is None
    with ms.open(pg_db) as agent:  # another process writes
        agent.insert_memories([{"id": "new1", "kind": "fact", "content": "written by the agent"}])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the server delivers the commit's NOTIFY a moment after it (the window polls every 250 ms)
        change = watcher.poll()
        if change is not None:
            break
        time.sleep(0.01)
    assert change is not None and change.new_ids == ["new1"]


@pytest.mark.parametrize("setting, error, message", [
    ("lock_timeout", ms.BusyError, "busy: another session holds the row"),
    ("statement_timeout", ms.StoreError, "cancelled the statement"),
])
def test_a_held_row_gives_a_clear_error_and_writes_nothing(store, pg, pg_db, setting, error, message):  # noqa: F811
    """The agent holds the row in an open transaction; the server's timeout ends our wait."""
    store.insert_memories(_records(2))
    store.get("m0")
    assert store.conn.info.transaction_status.name == "IDLE"  # reading left no transaction (and no lock) open
    sep = "&" if "?" in pg_db else "?"
    with pg.admin(db_name(pg_db)) as agent, ms.open(f"{pg_db}{sep}options=-c%20{setting}%3D300") as s:
        with agent.transaction():
            agent.execute("SELECT 1 FROM memories WHERE id = 'm0' FOR UPDATE")
            with pytest.raises(error, match=message):
                s.update_fields("m0", {"importance": 2}, expected={"importance": 5.0})
    assert store.get("m0")["importance"] == 5.0 and [h["action"] for h in store.history("m0")] == ["insert"]


def test_both_backends_implement_the_interface_alike():
    """Every method of the interface exists on both stores, with the same parameters."""
    import inspect

    from memviz.store.store import Store
    for name, fn in vars(MemoryStore).items():
        if name.startswith("_") or not callable(fn):
            continue
        want = list(inspect.signature(fn).parameters)
        for cls in (Store, PgStore):
            assert hasattr(cls, name), f"{cls.__name__} lacks {name}"
            got = list(inspect.signature(getattr(cls, name)).parameters)
            if want[:1] == ["self"] and got[:1] != ["self"]:  # a staticmethod (audit)
                got = ["self", *got]
            assert got == want, f"{cls.__name__}.{name}{got} differs from the interface {want}"


def test_arrays_pick_one_model_among_vectors_of_the_same_size(store):
    store.insert_memories(_records(5) + [{**r, "id": "o" + r["id"], "embedding_model": "other"}
                                         for r in _records(3, seed=4)])
    main, other = store.arrays(), store.arrays(model="other")
    assert main.embedding_model == "m" and list(main.has_embedding) == [True] * 5 + [False] * 3
    assert list(other.has_embedding) == [False] * 5 + [True] * 3
    assert not other.embedding[:5].any() and np.array_equal(other.embedding[5], unit_vectors(3, 8, 4)[0])
    sqlite_like = {"ids": list(main.ids), "rowid": list(main.rowid)}
    assert sqlite_like["rowid"] == sorted(sqlite_like["rowid"])


def test_labels_and_passwords_for_connection_strings():
    from memviz.store.postgres.dsn import label, with_password
    from memviz.store.postgres.password import remember_password, stored_password
    assert label("/data/agent.db") == "agent.db"
    assert label("postgresql://me:secret@db.example:5433/agents?sslmode=require") == "agents @ db.example:5433"
    assert label("postgresql://me@/agents?host=/run/postgresql") == "agents @ local"
    dsn = with_password("postgresql://me:old@db.example/agents?sslmode=require", "n3w/p@ss")
    assert dsn == "postgresql://me:n3w%2Fp%40ss@db.example/agents?sslmode=require"
    assert redact(dsn) == "postgresql://me@db.example/agents?sslmode=require"
    assert with_password("postgresql://me@db.example/agents", "") == "postgresql://me@db.example/agents"
    import keyring
    if "fail" in type(keyring.get_keyring()).__module__:  # no OS keyring here: not used, no error
        assert stored_password(dsn) is None and remember_password(dsn, "x") is False


def test_vectors_in_any_scan_order_land_on_their_rows():
    """The COPY's rows come in the heap's order: rowid order in runs (a synchronized scan
    starts mid-table, an edit moves a row) or any order; each vector lands on its row, those
    of rows read for another model are left out, in one block or many."""
    from memviz.store.postgres.arrays import _place
    rng = np.random.default_rng(0)
    n, d = 3000, 4
    rowid = np.arange(1, n + 1) * 3
    rows = rng.random((n, d)).astype(np.float32)
    for perm in (np.arange(n), np.roll(np.arange(n), n // 3), rng.permutation(n)):
        for block in (n, 777):
            parts = [rows[perm][i:i + block] for i in range(0, n, block)]
            for has in (np.ones(n, bool), np.arange(n) % 5 != 0):
                want = np.where(has[:, None], rows, 0)
                got = _place((rowid[perm], parts), rowid, has, np.zeros((0 if has.all() else n, d), np.float32))
                assert np.array_equal(got, want)

