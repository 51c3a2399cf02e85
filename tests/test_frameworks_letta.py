"""Letta's PostgreSQL opened in place (memviz/frameworks/letta.py): archival passages with their
zero-padded vectors trimmed, soft deletes retired, core memory blocks per agent, Letta's block
history; live changes as deltas; edits written the way Letta's managers write them and read back
as Letta reads them (tests/letta_db.py: the tables made by Letta's own ORM, in its own environment)."""
import json
import time

import numpy as np
import pytest
from letta_db import MAX_EMBEDDING_DIM, Letta
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.frameworks as fw
from memviz.edits.commands import Correct, Restore, SetTags, SoftDelete
from memviz.embed import LOCAL_DIM, LOCAL_MODEL, default_embedder
from memviz.frameworks.letta import LettaSource
from memviz.store import ReadOnlyError, StoreError, ValidationError
from memviz.store.changes import changes_since, token_now

T0 = 1_730_000_000


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def letta(pg_db, embedder):  # noqa: F811
    db = Letta(pg_db, embedder)
    db.dsn = pg_db
    db.ada = db.create_agent("ada", {"human": "Name: Priya. Vegetarian.", "persona": "I am Ada, a travel planner."}, limit=200)
    db.bo = db.create_agent("bo", {"persona": "I am Bo, a chess coach."})
    db.p1 = db.insert_passage(db.ada, "Priya wants a weekend in Lisbon in March.", ["trips", "lisbon"], created_at=T0)
    db.p2 = db.insert_passage(db.ada, "Priya avoids red-eye flights.", ["flights"], created_at=T0 + 60)
    db.p3 = db.insert_passage(db.bo, "Bo's student plays the Sicilian defence.", None, created_at=T0 + 120)
    db.p4 = db.insert_passage(db.ada, "Priya once liked steak.", ["food"], created_at=T0 + 180)
    db.delete_passage(db.p4)
    yield db
    db.close()


def ids_of(store, rowids):
    return {r[0] for r in store.conn.execute(f"SELECT id FROM memories WHERE rowid IN ({','.join(map(str, rowids)) or 'NULL'})")}


def blocks_of(db, agent):
    return dict(db.conn.execute("SELECT b.label, b.id FROM block b JOIN blocks_agents ba ON ba.block_id = b.id "
                                "WHERE ba.agent_id = %s", (agent,)).fetchall())


def test_recognised_and_fields_shown(letta, embedder):
    src = fw.recognise(letta.dsn)
    assert isinstance(src, LettaSource)
    assert "4 archival passages, 3 core memory blocks" in fw.describe(letta.dsn)
    with fw.open_source(letta.dsn) as s:
        p1 = s.get(letta.p1)
        assert (p1["agent"], p1["kind"], p1["content"]) == ("ada", "archival", "Priya wants a weekend in Lisbon in March.")
        assert p1["tags"] == ["trips", "lisbon"] and p1["created_at"] == T0 and p1["valid_until"] is None
        assert p1["embedding_model"] == LOCAL_MODEL
        vec = np.frombuffer(p1["embedding"], "<f4")
        assert vec.shape == (LOCAL_DIM,)  # trimmed from Letta's 4096
        assert np.allclose(vec, embedder.embed_one(p1["content"]), atol=1e-6)
        attrs = p1["attributes"]["letta"] if isinstance(p1["attributes"], dict) else json.loads(p1["attributes"])["letta"]
        assert attrs["archive"] == "ada's Archive" and attrs["agents"] == ["ada"] and attrs["embedding_dim"] == LOCAL_DIM
        p4 = s.get(letta.p4)
        assert p4["valid_until"] is not None and p4["valid_until"] >= T0 + 180  # soft-deleted: retired, kept
        assert s.get(letta.p3)["agent"] == "bo" and s.get(letta.p3)["tags"] == []
        core = {r["id"]: r for r in s.get_many([f"{b}/{letta.ada}" for b in blocks_of(letta, letta.ada).values()])}
        assert sorted((r["kind"], r["agent"], r["tags"][0], r["content"]) for r in core.values()) == [
            ("core", "ada", "human", "Name: Priya. Vegetarian."), ("core", "ada", "persona", "I am Ada, a travel planner.")]
        assert all(r["embedding"] is None for r in core.values())  # Letta does not embed blocks
        assert s.counts()["total"] == 7


def test_no_false_match(tmp_path, pg):  # noqa: F811
    import memviz.store as ms
    native = ms.create(pg.dsn(pg.fresh_db()))
    native.close()
    assert fw.recognise(native.dsn if hasattr(native, "dsn") else native.path) is None
    other = pg.fresh_db()
    with pg.admin(other) as c:  # a database with a `block` table of something else
        c.execute("CREATE TABLE block (id text, height int); CREATE TABLE agents (id text)")
    assert fw.recognise(pg.dsn(other)) is None
    for ddl in ("CREATE TABLE mem0 (id uuid PRIMARY KEY, vector vector(8), payload jsonb)",   # mem0's pgvector collection
                "CREATE TABLE store (prefix text, key text, value jsonb, created_at timestamptz, updated_at timestamptz, "
                "expires_at timestamptz, ttl_minutes float, PRIMARY KEY (prefix, key))"):        # LangGraph's PostgresStore
        name = pg.fresh_db()
        with pg.admin(name) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS vector")
            c.execute(ddl)
        assert not isinstance(fw.recognise(pg.dsn(name)), LettaSource)
        pg.drop_db(name)
    js = tmp_path / "x.json"
    js.write_text('{"archival_passages": []}')
    assert fw.recognise(str(js)) is None
    sq = tmp_path / "n.db"
    ms.create(str(sq)).close()
    assert fw.recognise(str(sq)) is None
    pg.drop_db(other)


def test_live_changes_arrive_as_deltas(letta):
    with fw.open_source(letta.dsn) as s:
        tok = token_now(s)
        new = letta.insert_passage(letta.bo, "Bo's student should study the Najdorf.", ["chess"])
        letta.update_passage_text(letta.p2, "Priya avoids red-eye flights and long layovers.")
        letta.delete_passage(letta.p1)
        letta.update_block(blocks_of(letta, letta.bo)["persona"], "I am Bo, a patient chess coach.")
        ch = changes_since(s, tok)
        assert ch.full is None
        assert ids_of(s, ch.added) == {new}
        assert ids_of(s, ch.changed) == {letta.p2, letta.p1, f"{blocks_of(letta, letta.bo)['persona']}/{letta.bo}"}
        assert s.get(new)["tags"] == ["chess"] and s.get(letta.p1)["valid_until"] is not None
        assert s.get(letta.p2)["content"] == "Priya avoids red-eye flights and long layovers."
        audit = s.history(letta.p2)
        assert audit[-1]["actor"] == "letta"
        # only what moved is read again: one passage's text, then one passage removed for good
        letta.update_passage_text(letta.p3, "Bo's student now plays the French defence.")
        assert s.sync() == {"added": 0, "changed": 1, "gone": 0}
        letta.conn.execute("DELETE FROM archival_passages WHERE id = %s", (letta.p3,))
        assert s.sync() == {"added": 0, "changed": 0, "gone": 1}
        assert s.get(letta.p3)["valid_until"] is not None  # kept here, retired
        # an agent renamed: every memory of it read again under its new name
        letta.conn.execute("UPDATE agents SET name = 'ada-2', updated_at = now() WHERE id = %s", (letta.ada,))
        s.sync()
        assert s.get(letta.p2)["agent"] == "ada-2" and s.get(f"{blocks_of(letta, letta.ada)['human']}/{letta.ada}")["agent"] == "ada-2"


def test_correction_writes_text_and_padded_vector_as_letta_reads_them(letta, embedder):
    with fw.open_source(letta.dsn) as s:
        text = "Priya wants a long weekend in Porto in April."
        c = Correct(letta.p1, text, embedder=embedder)
        c.apply(s)
        assert c.in_place and s.get(letta.p1)["content"] == text
        back = letta.passage(letta.p1)
        assert back["text"] == text and back["full"].shape == (MAX_EMBEDDING_DIM,)
        assert not back["full"][LOCAL_DIM:].any()  # zero-padded as Letta pads
        assert np.allclose(back["embedding"], embedder.embed_one(text), atol=1e-6)
        assert letta.search(letta.ada, "Porto in April", k=1) == [text]  # Letta's own archival search finds it
        c.revert(s)
        assert letta.passage(letta.p1)["text"] == "Priya wants a weekend in Lisbon in March."
        assert np.allclose(letta.passage(letta.p1)["embedding"], embedder.embed_one("Priya wants a weekend in Lisbon in March."),
                           atol=1e-6)


def test_soft_delete_restore_and_tags_round_trip(letta):
    with fw.open_source(letta.dsn) as s:
        SoftDelete([letta.p2]).apply(s)
        assert letta.passage(letta.p2)["is_deleted"] is True
        assert "Priya avoids red-eye flights." not in letta.search(letta.ada, "red-eye flights")
        Restore([letta.p4]).apply(s)
        assert letta.passage(letta.p4)["is_deleted"] is False and s.get(letta.p4)["valid_until"] is None
        SetTags([letta.p1], add=["portugal"], remove=["lisbon"]).apply(s)
        back = letta.passage(letta.p1)
        assert sorted(back["tags"]) == ["portugal", "trips"] and back["passage_tags"] == ["portugal", "trips"]
        assert sorted(s.get(letta.p1)["tags"]) == ["portugal", "trips"]
        tok = token_now(s)
        assert changes_since(s, tok).empty  # memviz's own writes are not seen again as Letta's
        assert not [h for h in s.history(letta.p1) if h["actor"] == "letta"]


def test_core_block_correction_and_refusals(letta, embedder):
    human = blocks_of(letta, letta.ada)["human"]
    with fw.open_source(letta.dsn) as s:
        rid = f"{human}/{letta.ada}"
        Correct(rid, "Name: Priya. Vegetarian. Lives in Leeds.", embedder=embedder).apply(s)
        assert letta.core_memory(letta.ada)["human"] == "Name: Priya. Vegetarian. Lives in Leeds."
        assert letta.block(human)["version"] == 2
        with pytest.raises(ReadOnlyError, match="its tag is its label"):
            SetTags([rid], add=["x"]).apply(s)
        with pytest.raises(ReadOnlyError, match="no soft delete"):
            SoftDelete([rid]).apply(s)
        with pytest.raises(ValidationError, match="at most 200 characters"):
            Correct(rid, "x" * 201, embedder=embedder).apply(s)
        assert letta.core_memory(letta.ada)["human"] == "Name: Priya. Vegetarian. Lives in Leeds."
        with pytest.raises(ReadOnlyError, match="importance"):
            s.update_fields(letta.p1, {"importance": 9})


def test_correction_without_the_passage_model_is_refused(letta):
    with fw.open_source(letta.dsn) as s:
        letta.conn.execute("UPDATE archival_passages SET embedding_config = jsonb_set(embedding_config::jsonb, "
                           "'{embedding_model}', '\"text-embedding-3-small\"')::json, updated_at = now() WHERE id = %s", (letta.p3,))
        s.sync()
        with pytest.raises(ReadOnlyError, match="text-embedding-3-small"):
            s.update_rows({letta.p3: {"content": "a new text"}})
        assert letta.passage(letta.p3)["text"] == "Bo's student plays the Sicilian defence."


def test_block_history_is_the_blocks_audit(letta):
    persona = blocks_of(letta, letta.bo)["persona"]
    letta.checkpoint_block(persona)
    letta.update_block(persona, "I am Bo, a strict chess coach.")
    letta.checkpoint_block(persona)
    with fw.open_source(letta.dsn) as s:
        notes = [h["note"] for h in s.history(f"{persona}/{letta.bo}") if h.get("note")]
        assert any("Letta block checkpoint 1" in n for n in notes) and any("checkpoint 2" in n for n in notes)


def test_a_broken_store_gives_a_clear_error(letta):
    letta.conn.execute("ALTER TABLE archival_passages ALTER COLUMN embedding TYPE text USING embedding::text")
    with pytest.raises(StoreError, match="not a pgvector vector"):
        fw.open_source(letta.dsn)


def test_a_dropped_table_while_open_is_a_store_error(letta):
    s = fw.open_source(letta.dsn)
    try:
        letta.conn.execute("DROP TABLE block_history CASCADE; DROP TABLE blocks_agents CASCADE")  # Letta: block refers to its history
        time.sleep(0.01)
        with pytest.raises(StoreError):
            s.sync()
    finally:
        s.close()


def test_cli_stats_and_an_editable_native_copy(letta, tmp_path, capsys):
    from memviz.cli import main as cli_main
    assert cli_main(["stats", letta.dsn, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert json.dumps(stats).count("archival") >= 1 and json.dumps(stats).count("core") >= 1
    assert cli_main(["copy", letta.dsn, str(tmp_path / "copy.db")]) == 0
    import memviz.store as ms
    with ms.open(str(tmp_path / "copy.db")) as c:
        assert c.counts()["total"] == 7 and not c.read_only
        assert c.get(letta.p1)["content"] == "Priya wants a weekend in Lisbon in March."


def test_times_with_microseconds_and_before_1970_are_the_seconds_python_makes(letta):
    """Passage times come from the server as epoch seconds (date_part): whole seconds as Python's
    int(datetime.timestamp()) gives them, fractions and dates before 1970 included."""
    import datetime as dt
    moments = [T0 + 0.999999, T0 + 59.5, -0.5, -86_400 * 365 * 30 - 0.25, 2_000_000_000.000001]
    pids = [letta.insert_passage(letta.bo, f"moment {i}", created_at=m) for i, m in enumerate(moments)]
    stored = dict(letta.conn.execute("SELECT id, created_at FROM archival_passages WHERE id = ANY(%s)", (pids,)).fetchall())
    s = fw.open_source(letta.dsn)
    try:
        for pid in pids:
            want = int(stored[pid].timestamp())
            assert s.get(pid)["created_at"] == want, (pid, stored[pid])
        assert {int(stored[p].timestamp()) for p in pids} >= {0, T0 + 59}   # the cases are there
        assert isinstance(stored[pids[0]], dt.datetime)
    finally:
        s.close()
