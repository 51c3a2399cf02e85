"""LangGraph / LangMem stores opened in place (memviz/frameworks/langgraph.py): SqliteStore files
and PostgresStore databases written by LangGraph's own clients, read as memviz memories, live
changes as deltas, corrections written as `store.put` would and read back by `store.get` /
`store.search`, and the edits LangGraph lacks refused with a message."""
from __future__ import annotations

import datetime as dt
import json
import time

import numpy as np
import pytest
from langgraph_stores import postgres_store, run_ops, sqlite_agent
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.frameworks as fw
import memviz.store as ms
from memviz.edits.commands import Correct, SetImportance, SetTags, SoftDelete
from memviz.embed import LOCAL_MODEL, LocalEmbedder
from memviz.frameworks.langgraph import LangGraphPostgres, LangGraphSqlite, memory_id, namespace_roles
from memviz.store import ConflictError, ReadOnlyError, StoreError, ValidationError
from memviz.store.changes import changes_since, token_now


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


def put(ns, key, value, **kw):
    return {"op": "put", "ns": list(ns), "key": key, "value": value, **kw}


def get(ns, key):
    return {"op": "get", "ns": list(ns), "key": key}


FILL = [
    put(("memories", "alice"), "k1", {"content": "Alice drinks green tea every morning", "tags": ["preference"]}),
    put(("memories", "alice"), "k2", {"content": "Alice moved to Lisbon in May"}),
    put(("memories", "bob"), "k3", {"content": "Bob repairs bicycles"}, ttl=30),
    put(("memories", "bob"), "k4", {"kind": "Triple", "content": {"subject": "bob", "predicate": "likes", "object": "pie"}}),
    put(("memories", "bob"), "k5", {"content": "not indexed"}, index=False),
]


@pytest.fixture
def lg_file(tmp_path):
    path = tmp_path / "langgraph.db"
    sqlite_agent(path, FILL)
    return path


def _vec(text):
    return LocalEmbedder().embed_one(text)


# ------------------------------------------------------------------ recognising
def test_recognised_and_described(lg_file):
    src = fw.recognise(str(lg_file))
    assert isinstance(src, LangGraphSqlite)
    assert fw.describe(str(lg_file)) == f"LangGraph store (SQLite) at {lg_file}: 5 items in 2 namespaces, 4 vectors"


def test_no_false_match(tmp_path):
    native = tmp_path / "native.db"
    ms.create(str(native)).close()
    assert fw.recognise(str(native)) is None
    doc = tmp_path / "mem.json"
    doc.write_text(json.dumps([{"content": "x"}]))
    assert fw.recognise(str(doc)) is None
    # a LangGraph checkpoint file without the store's tables, and a table named `store` of something else
    import apsw
    other = tmp_path / "other.db"
    c = apsw.Connection(str(other))
    c.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB); CREATE TABLE store (id INTEGER, name TEXT)")
    c.close()
    assert fw.recognise(str(other)) is None
    with pytest.raises(ms.NotAStoreError, match=r"its tables: checkpoints, store\). memviz opens .* the stores of .*LangGraph"):
        fw.open_source(str(other))


def test_namespace_rule():
    roles = namespace_roles(["memories.alice", "memories.bob", "docs", "memories.alice.work", "memories.bob.home"])
    assert roles["memories.alice"] == ("alice", "memories")
    assert roles["docs"] == ("", "docs")
    assert roles["memories.alice.work"] == ("alice.work", "memories")
    assert namespace_roles(["u1.memories", "u2.memories"])["u1.memories"] == ("u1", "memories")
    assert namespace_roles(["user_123.memories"])["user_123.memories"] == ("user_123", "memories")


# ------------------------------------------------------------------ fields
def test_fields_shown(lg_file):
    s = fw.open_source(str(lg_file))
    try:
        rows = {r["id"]: r for r in s.get_many([memory_id(f"memories.{a}", k) for a, k in
                                                 [("alice", "k1"), ("alice", "k2"), ("bob", "k3"), ("bob", "k4"), ("bob", "k5")]])}
        k1 = rows["k1@memories.alice"]
        assert (k1["agent"], k1["kind"], k1["content"]) == ("alice", "memories", "Alice drinks green tea every morning")
        assert k1["tags"] == ["preference"] and abs(k1["created_at"] - time.time()) < 120
        assert k1["embedding_model"] == LOCAL_MODEL  # identified: memviz's model reproduces the vectors
        np.testing.assert_allclose(np.frombuffer(k1["embedding"], "<f4"), _vec(k1["content"]), atol=1e-6)
        lg = k1["attributes"]["langgraph"]
        assert lg["namespace"] == ["memories", "alice"] and lg["key"] == "k1" and lg["indexed_fields"] == ["content"]
        k3 = rows["k3@memories.bob"]["attributes"]["langgraph"]
        assert k3["ttl_minutes"] == 30 and k3["expires_at"] and rows["k3@memories.bob"]["valid_until"] is None
        k4 = rows["k4@memories.bob"]
        assert k4["kind"] == "Triple" and json.loads(k4["content"]) == {"subject": "bob", "predicate": "likes", "object": "pie"}
        assert rows["k5@memories.bob"]["embedding"] is None
        assert s.read_only is False and s.history(k1["id"]) == []
    finally:
        s.close()


def test_expired_items_are_retired_with_their_expiry(tmp_path):
    path = tmp_path / "ttl.db"
    sqlite_agent(path, [put(("notes",), "gone", {"content": "short-lived"}, ttl=0.001),  # 60 ms
                        put(("notes",), "kept", {"content": "long-lived"})])
    time.sleep(0.2)
    s = fw.open_source(str(path))
    try:
        gone = s.get("gone@notes")
        assert gone["attributes"]["langgraph"]["expires_at"] and gone["valid_until"] is not None
        assert abs(gone["valid_until"] - time.time()) < 30
        assert s.get("kept@notes")["valid_until"] is None
    finally:
        s.close()


# ------------------------------------------------------------------ live changes
def test_live_changes_arrive_as_a_delta(lg_file):
    s = fw.open_source(str(lg_file))
    try:
        tok = token_now(s)
        v0 = s.data_version()
        sqlite_agent(lg_file, [put(("memories", "carol"), "k9", {"content": "Carol plays chess"}),
                               put(("memories", "alice"), "k2", {"content": "Alice moved to Porto in June"}),
                               {"op": "delete", "ns": ["memories", "bob"], "key": "k5"}])
        assert s.data_version() != v0
        ch = changes_since(s, tok)
        assert len(ch.added) == 1 and len(ch.changed) == 2 and ch.full is None
        assert s.get("k9@memories.carol")["content"] == "Carol plays chess"
        assert s.get("k2@memories.alice")["content"] == "Alice moved to Porto in June"
        assert s.get("k5@memories.bob")["valid_until"] is not None  # deleted there, kept retired here
    finally:
        s.close()
    s = fw.open_source(str(lg_file))  # reopen: the mirror is reused
    try:
        assert s.counts()["total"] == 6
    finally:
        s.close()


def test_changes_are_read_without_reading_the_store_again(lg_file):
    """changed_since brings the items the agent put since the last read (store.updated_at), as a
    whole read would make them, and lists every id only when the count says one was deleted."""
    # the items were written in the same second as the newest: none is read again
    sqlite_agent(lg_file, [{"op": "sql", "sql": "UPDATE store SET updated_at = '2026-01-01 00:00:00'"},
                           {"op": "sql", "sql": "UPDATE store SET updated_at = '2026-01-02 00:00:00' WHERE key = 'k5'"}])
    src = LangGraphSqlite(str(lg_file))
    try:
        before = list(src.records())
        tok, known = src.token(), {r["id"] for r in before}
        sqlite_agent(lg_file, [put(("memories", "alice"), "k9", {"content": "Alice plays chess"}),
                               put(("memories", "alice"), "k2", {"content": "Alice moved to Porto in June"})])
        got, present = src.changed_since(tok, known)
        assert sorted(r["id"] for r in got) == ["k2@memories.alice", "k9@memories.alice"]
        assert set(present) == known | {"k9@memories.alice"}
        fresh = {r["id"]: r for r in LangGraphSqlite(str(lg_file)).records()}
        for r in got:
            assert {k: v for k, v in r.items() if k != "embedding"} == \
                {k: v for k, v in fresh[r["id"]].items() if k != "embedding"}
            np.testing.assert_array_equal(r.get("embedding"), fresh[r["id"]].get("embedding"))
        sqlite_agent(lg_file, [{"op": "delete", "ns": ["memories", "bob"], "key": "k5"}])
        got, present = src.changed_since(src.token(), set(present))
        assert set(present) == set(fresh) - {"k5@memories.bob"}
        sqlite_agent(lg_file, [put(("memories", "dora"), "d1", {"content": "Dora keeps bees"})])
        got, present = src.changed_since(src.token(), set(present))  # a new user: the others keep agent and kind
        assert [(r["id"], r["agent"], r["kind"]) for r in got] == [("d1@memories.dora", "dora", "memories")]
        sqlite_agent(lg_file, [put(("notes",), "n1", {"content": "a namespace of another length"})])
        got, present = src.changed_since(src.token(), set(present))
        assert [r["id"] for r in got] == ["n1@notes"]
        # more first segments than users now: the users become the kinds of every two-part namespace
        sqlite_agent(lg_file, [put((f"t{i}", who), "x", {"content": "flip"}) for i, who in
                               enumerate(["alice", "alice", "bob"])])
        assert src.changed_since(src.token(), set(present)) is None
    finally:
        src.close()


def test_an_expiry_arrives_as_a_change(tmp_path):
    """An item whose TTL runs out after memviz read it comes back from changed_since retired."""
    path = tmp_path / "ttl.db"
    sqlite_agent(path, [put(("notes",), "soon", {"content": "short-lived"}, ttl=0.2),  # 12 s
                        put(("notes",), "kept", {"content": "long-lived"})])
    src = LangGraphSqlite(str(path))
    try:
        before = {r["id"]: r for r in src.records()}
        assert before["soon@notes"]["valid_until"] is None
        tok = src.token()
        expires = before["soon@notes"]["attributes"]["langgraph"]["expires_at"]
        time.sleep(max(0.0, dt.datetime.fromisoformat(expires).timestamp() - time.time()) + 0.5)
        got, _present = src.changed_since(tok, set(before))
        assert [r["id"] for r in got] == ["soon@notes"] and got[0]["valid_until"] is not None
    finally:
        src.close()


def test_after_a_reopen_changes_come_without_a_whole_read(lg_file):
    """A reopened mirror (the source's token unchanged) tells the source where it stands
    (in_step): the agent's next put arrives through changed_since, its vector named as the
    whole read named the others (memviz's local model)."""
    fw.open_source(str(lg_file)).close()
    s = fw.open_source(str(lg_file))
    try:
        assert s.source._since is not None and s.source.model == LOCAL_MODEL  # noqa: SLF001 - what in_step noted
        tok = token_now(s)
        sqlite_agent(lg_file, [put(("memories", "alice"), "k8", {"content": "Alice sings in a choir"})])
        ch = changes_since(s, tok)
        assert len(ch.added) == 1
        assert s.get("k8@memories.alice")["embedding_model"] == LOCAL_MODEL
    finally:
        s.close()


@pytest.fixture
def identified(monkeypatch):
    """How many times a LangGraph source named its model by embedding texts (identify_model,
    counted around the real one)."""
    import memviz.frameworks.langgraph as lg
    calls = []
    real = lg.identify_model
    monkeypatch.setattr(lg, "identify_model", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    return calls


def test_a_reopen_in_step_takes_the_model_the_mirror_holds(lg_file, identified):
    """The first open names the model by embedding the items' texts; a reopen with nothing
    written since takes it from the mirror (no embedding) and names the same one."""
    s = fw.open_source(str(lg_file))
    first = (s.source.model, s.source.dim)
    s.close()
    assert identified == [first[1]] and first == (LOCAL_MODEL, LocalEmbedder().dim)
    s = fw.open_source(str(lg_file))
    try:
        assert identified == [first[1]]  # not again
        assert (s.source.model, s.source.dim) == first and s.source._since is not None  # noqa: SLF001
    finally:
        s.close()


def test_a_mirror_that_did_not_keep_its_model_counts_it_once(lg_file, identified):
    """A mirror built before it kept its model (its meta without it) is counted at the reopen in
    step, without embedding anything, and keeps it for the next."""
    import apsw

    from memviz.frameworks.mirror import mirror_path
    fw.open_source(str(lg_file)).close()
    path = mirror_path(fw.recognise(str(lg_file)))
    conn = apsw.Connection(path)
    conn.execute("DELETE FROM memviz_meta WHERE key = 'mirror.model'")
    conn.close()
    s = fw.open_source(str(lg_file))
    try:
        assert s.source.model == LOCAL_MODEL and len(identified) == 1
        assert s.meta("mirror.model") == [LOCAL_MODEL, LocalEmbedder().dim]
    finally:
        s.close()


def test_a_store_changed_since_its_mirror_names_its_model_again(lg_file, identified):
    """Something written while memviz was closed: the reopen reads the store and names its
    model from its vectors, as the first open did."""
    fw.open_source(str(lg_file)).close()
    sqlite_agent(lg_file, [put(("memories", "alice"), "k8", {"content": "Alice sings in a choir"})])
    s = fw.open_source(str(lg_file))
    try:
        assert len(identified) == 2 and s.source.model == LOCAL_MODEL
        assert s.get("k8@memories.alice")["embedding_model"] == LOCAL_MODEL
    finally:
        s.close()


def test_a_change_to_another_model_is_not_taken_from_the_mirror(tmp_path, identified):
    """The mirror keeps its model until a change brings vectors of another: then a reopen in
    step counts the mirror again (here: most vectors now of a 4-d model memviz does not know)."""
    path = tmp_path / "lg.db"
    sqlite_agent(path, [put(("notes",), "a", {"text": "a note"})], fields=("text",))
    s = fw.open_source(str(path))
    try:
        assert s.get("a@notes")["embedding_model"] == LOCAL_MODEL
        sqlite_agent(path, [put(("notes",), k, {"text": f"note {k}"}) for k in "bcd"], embed="toy:4", fields=("text",))
        assert s.sync()["added"] == 3 and s.get("b@notes")["embedding_model"] == "unknown/langgraph-4d"
        assert s.meta("mirror.model") is None  # may have moved: not kept
    finally:
        s.close()
    fw.open_source(str(path)).close()  # (the token kept holds the closed connection's data_version: this open reads the store whole)
    named = len(identified)
    s = fw.open_source(str(path))
    try:
        assert s.meta("mirror.model") == ["unknown/langgraph-4d", 4] and s.source.model == "unknown/langgraph-4d"
        assert len(identified) == named
    finally:
        s.close()


# ------------------------------------------------------------------ edits
NEW_TEXT = "Alice drinks jasmine tea in the evening"


def _correct_and_read_back(s, client):
    """Correct k1 through memviz; the client's get and search see it as a put of it."""
    mid = "k1@memories.alice"
    (before,) = client([get(("memories", "alice"), "k1")])
    out = Correct(mid, NEW_TEXT).apply(s)
    assert out.ids == [mid] and out.text == f"Corrected {mid} in place"  # the whole key@namespace, not 8 characters
    item, hits = client([get(("memories", "alice"), "k1"),
                         {"op": "search", "ns": ["memories"], "query": NEW_TEXT, "limit": 1}])
    assert item["value"] == {"content": NEW_TEXT, "tags": ["preference"]}
    assert item["created_at"] == before["created_at"] and item["updated_at"] >= before["updated_at"]
    assert hits[0]["key"] == "k1" and hits[0]["score"] > 0.99  # the new vector is the new text's
    row = s.get(mid)
    assert row["content"] == NEW_TEXT
    np.testing.assert_allclose(np.frombuffer(row["embedding"], "<f4"), _vec(NEW_TEXT), atol=1e-6)
    return item


def _ttl_restarted_and_undone(s, client, expires_sql):
    (before,) = client([{"op": "sql", "sql": expires_sql}])
    time.sleep(1.1)  # SqliteStore's times have whole seconds
    c = Correct("k3@memories.bob", "Bob repairs old bicycles")
    c.apply(s)
    (after,) = client([{"op": "sql", "sql": expires_sql}])
    assert after[0][1] == before[0][1] == 30 and str(after[0][0]) > str(before[0][0])  # as a put with its ttl
    c.revert(s)
    (item,) = client([get(("memories", "bob"), "k3")])
    assert item["value"] == {"content": "Bob repairs bicycles"}


def test_correction_written_as_put_and_read_back_by_sqlite_store(lg_file):
    s = fw.open_source(str(lg_file))
    try:
        client = lambda ops: sqlite_agent(lg_file, ops)  # noqa: E731
        _correct_and_read_back(s, client)
        _ttl_restarted_and_undone(s, client, "SELECT expires_at, ttl_minutes FROM store WHERE key = 'k3'")
    finally:
        s.close()


def test_cli_correct_and_refusal(lg_file, capsys):
    from memviz.cli import main
    assert main(["edit", str(lg_file), "correct", "k2@memories.alice", "Alice moved to Lisbon in April"]) == 0
    assert sqlite_agent(lg_file, [get(("memories", "alice"), "k2")])[0]["value"] == {"content": "Alice moved to Lisbon in April"}
    assert main(["edit", str(lg_file), "delete", "k2@memories.alice"]) == 2
    assert "memviz cannot write retiring" in capsys.readouterr().err


def test_cli_stats_check_and_clock_take_the_store_where_it_lives(lg_file, capsys):
    """Every command that takes a DB takes another system's store (the manual's command-line
    page): `check` and `clock` said it was "not a memviz memory store", and `stats` at its first
    open said its vectors had no vector index."""
    from memviz.cli import main
    assert main(["stats", str(lg_file)]) == 0
    out = capsys.readouterr().out
    assert "no vector index" not in out and "integrity: ok" in out
    assert main(["check", str(lg_file)]) == 0
    assert capsys.readouterr().out.strip() == f"{lg_file}: clean"
    assert main(["clock", str(lg_file)]) == 0
    assert capsys.readouterr().out.startswith("clock: ")


def test_unsupported_edits_refused(lg_file):
    s = fw.open_source(str(lg_file))
    try:
        for action in (SetImportance(["k1@memories.alice"], 9), SetTags(["k1@memories.alice"], ["x"]),
                       SoftDelete(["k1@memories.alice"])):
            with pytest.raises(ReadOnlyError, match="is a LangGraph store: memviz cannot write"):
                action.apply(s)
        with pytest.raises(ValidationError, match="not a string"):
            Correct("k4@memories.bob", "bob likes cake").apply(s)
        (item,) = sqlite_agent(lg_file, [get(("memories", "alice"), "k1")])
        assert item["value"]["content"] == "Alice drinks green tea every morning"
    finally:
        s.close()


def test_correction_refused_when_the_model_is_unknown(tmp_path):
    """Vectors memviz cannot reproduce (the user's own model): a new text would keep the old
    vector, so the correction is refused and nothing is written."""
    path = tmp_path / "other.db"
    sqlite_agent(path, [put(("notes",), "a", {"text": "a note"})], embed="toy:4", fields=("text",))
    s = fw.open_source(str(path))
    try:
        assert s.get("a@notes")["embedding_model"] == "unknown/langgraph-4d"
        with pytest.raises(StoreError, match="does not record which model"):
            Correct("a@notes", "a better note").apply(s)
        assert sqlite_agent(path, [get(("notes",), "a")], embed=None)[0]["value"] == {"text": "a note"}
    finally:
        s.close()


def test_conflicting_agent_write_is_not_overwritten(lg_file):
    s = fw.open_source(str(lg_file))
    try:
        row = s.get("k2@memories.alice")
        sqlite_agent(lg_file, [put(("memories", "alice"), "k2", {"content": "Alice moved to Faro"})])
        with pytest.raises(ConflictError):
            s.source.write({row["id"]: row}, {row["id"]: {"content": "Alice moved to Braga"}})
        assert sqlite_agent(lg_file, [get(("memories", "alice"), "k2")])[0]["value"] == {"content": "Alice moved to Faro"}
    finally:
        s.close()


def test_damaged_file_gives_a_store_error(lg_file):
    data = bytearray(lg_file.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page but the schema's
    lg_file.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        fw.open_source(str(lg_file)).close()


# ------------------------------------------------------------------ PostgresStore
def test_postgres_store_read_live_and_corrected(pg_db):  # noqa: F811
    with postgres_store(pg_db) as store:
        client = lambda ops: run_ops(store, ops)  # noqa: E731
        client(FILL)
        assert isinstance(fw.recognise(pg_db), LangGraphPostgres)
        assert fw.describe(pg_db).endswith("5 items in 2 namespaces, 4 vectors")
        s = fw.open_source(pg_db)
        try:
            k1 = s.get("k1@memories.alice")
            assert (k1["agent"], k1["kind"], k1["embedding_model"]) == ("alice", "memories", LOCAL_MODEL)
            np.testing.assert_allclose(np.frombuffer(k1["embedding"], "<f4"), _vec(k1["content"]), atol=1e-6)
            assert s.get("k4@memories.bob")["kind"] == "Triple"
            tok = token_now(s)
            client([put(("memories", "carol"), "k9", {"content": "Carol plays chess"})])
            ch = changes_since(s, tok)
            assert len(ch.added) == 1 and s.get("k9@memories.carol")["agent"] == "carol"
            _correct_and_read_back(s, client)
            _ttl_restarted_and_undone(s, client, "SELECT expires_at, ttl_minutes FROM store WHERE key = 'k3'")
            with pytest.raises(ReadOnlyError):
                SetImportance(["k1@memories.alice"], 3).apply(s)
        finally:
            s.close()


# ------------------------------------------------------------------ the window
def test_window_opens_a_langgraph_store(lg_file, make_window, qtbot):
    """The window shows the store, a correction is written back, and the agent's own put
    arrives live."""
    win = make_window(lg_file)
    data = win.state.data
    assert len(data.arrays) == 5 and isinstance(data.store.source, LangGraphSqlite)
    assert "langgraph.db" in win.windowTitle() and not data.store.read_only
    Correct("k2@memories.alice", "Alice moved to Lisbon in March").apply(data.store)
    sqlite_agent(lg_file, [put(("memories", "dan"), "k7", {"content": "Dan collects stamps"})])
    qtbot.waitUntil(lambda: len(win.state.data.arrays) == 6, timeout=20000)
    assert win.state.data.store.get("k2@memories.alice")["content"] == "Alice moved to Lisbon in March"
    assert sqlite_agent(lg_file, [get(("memories", "alice"), "k2")])[0]["value"] == {"content": "Alice moved to Lisbon in March"}


@pytest.mark.parametrize("text", ['{"content": "tea", "n": 1}', '{"id": 12345678901234567890123}', '{"x": 9223372036854775807}',
                                  '{"f": 1.5e300, "g": 0.1, "h": -0.0, "s": "é\\u0000😀"}', '{"big": 1e400}', '"a string"',
                                  "5", "null", "[1, 2.0, -0]", '{"a": {"b": [true, false, null]}}'])
def test_postgres_values_are_what_json_loads_makes_of_them(text):
    """A PostgresStore value (jsonb read as text) is what psycopg's loader, json.loads, made of it:
    orjson where it agrees, json.loads for the long integers and infinities it would change."""
    from memviz.frameworks.langgraph import _pg_values
    got = _pg_values([("p", "k", text, None, None, None, None)])[0]
    want = json.loads(text)
    assert got[:2] == ("p", "k") and type(got[2]) is type(want) and json.dumps(got[2]) == json.dumps(want)


def test_postgres_items_read_in_small_batches_are_the_items_read_whole(pg_db, monkeypatch):  # noqa: F811
    """A whole read streams items with their vectors joined, one row per indexed field: an item whose
    fields' rows fall on both sides of a batch's end is still one memory with all its fields."""
    import memviz.frameworks.langgraph as lg
    ops = [put(("memories", f"u{i % 3}"), f"k{i}", {"content": f"fact {i} about tea", "text": f"note {i}"}) for i in range(11)]
    ops.append(put(("memories", "u0"), "plain", {"content": "not indexed"}, index=False))
    with postgres_store(pg_db, fields=("content", "text")) as store:
        run_ops(store, ops)

    def read(batch):
        monkeypatch.setattr(lg, "_PG_BATCH", batch)
        src = fw.recognise(pg_db)
        try:
            return {r["id"]: r for r in src.records()}
        finally:
            src.close()
    whole = read(5000)
    assert len(whole) == 12
    k4 = whole["k4@memories.u1"]
    assert k4["attributes"]["langgraph"]["indexed_fields"] == ["content", "text"] and k4["embedding_model"] == LOCAL_MODEL
    np.testing.assert_allclose(np.frombuffer(k4["embedding"], "<f4"), _vec("fact 4 about tea"), atol=1e-6)
    assert whole["plain@memories.u0"].get("embedding") is None
    for batch in (1, 2, 3):   # every item's two rows split across batches somewhere
        assert read(batch) == whole


# ------------------------------------------------------------------ the default index: fields ["$"]
WHOLE = [put(("memories", "alice"), f"w{i}", {"content": f"memories/alice item {i}: {t}", "kind": "fact"})
         for i, t in enumerate(["prefers tea", "lives in Lisbon", "plays the cello"])]
WHOLE += [put(("memories", "alice"), "triple", {"subject": "alice", "predicate": "likes", "object": "figs"}),
          put(("memories", "alice"), "noted", {"text": "a note in the text field", "source": "chat"})]


def _whole(value) -> str:
    """The text LangGraph embeds for the field "$": the whole value as JSON (get_text_at_path)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _check_whole_value_store(s, client):
    """An index of fields ["$"] (LangGraph's default) has one vector per item, of the whole value:
    the memory's text is the value's main text field (content, text, … in MAIN_FIELDS' order), its
    vector that "$" vector; the whole value stays in the detail; a correction re-embeds the whole
    value, as LangGraph's put does, and LangGraph's own search finds it."""
    w0 = s.get("w0@memories.alice")
    assert w0["content"] == "memories/alice item 0: prefers tea" and w0["kind"] == "fact"
    lg = w0["attributes"]["langgraph"]
    assert lg["field"] == "content" and lg["vector_field"] == "$" and lg["indexed_fields"] == ["$"]
    assert lg["value"] == {"content": "memories/alice item 0: prefers tea", "kind": "fact"}
    assert w0["embedding_model"] == LOCAL_MODEL
    np.testing.assert_allclose(np.frombuffer(w0["embedding"], "<f4"), _vec(_whole(lg["value"])), atol=1e-6)
    assert s.get("noted@memories.alice")["content"] == "a note in the text field"
    triple = s.get("triple@memories.alice")  # no text field: the whole value is its text, as before
    assert json.loads(triple["content"]) == {"subject": "alice", "predicate": "likes", "object": "figs"}
    a = s.arrays(preview=60)
    assert not any(p.startswith("{") for i, p in zip(a.ids, a.preview) if i != "triple@memories.alice")
    new = "memories/alice item 0: prefers jasmine tea"
    Correct("w0@memories.alice", new).apply(s)
    item, hits = client([get(("memories", "alice"), "w0"),
                         {"op": "search", "ns": ["memories", "alice"], "query": _whole({"content": new, "kind": "fact"}),
                          "limit": 1}])
    assert item["value"] == {"content": new, "kind": "fact"}
    assert hits[0]["key"] == "w0" and hits[0]["score"] > 0.99  # the stored "$" vector is the new whole value's
    row = s.get("w0@memories.alice")
    assert row["content"] == new and row["attributes"]["langgraph"]["value"] == {"content": new, "kind": "fact"}
    np.testing.assert_allclose(np.frombuffer(row["embedding"], "<f4"), _vec(_whole(item["value"])), atol=1e-6)
    with pytest.raises(ValidationError, match="the whole value"):
        Correct("triple@memories.alice", "alice likes dates").apply(s)


def test_a_sqlite_store_indexed_whole_shows_the_values_text(tmp_path):
    path = tmp_path / "whole.db"
    sqlite_agent(path, WHOLE, fields=("$",))
    s = fw.open_source(str(path))
    try:
        _check_whole_value_store(s, lambda ops: sqlite_agent(path, ops, fields=("$",)))
    finally:
        s.close()


def test_a_postgres_store_indexed_whole_shows_the_values_text(pg_db):  # noqa: F811
    with postgres_store(pg_db, fields=("$",)) as store:
        run_ops(store, WHOLE)
        s = fw.open_source(pg_db)
        try:
            _check_whole_value_store(s, lambda ops: run_ops(store, ops))
        finally:
            s.close()
