"""mem0 on PostgreSQL + pgvector, opened in place (memviz/frameworks/mem0.py). The stores are
written by mem0ai's own `Memory` (pgvector store, OpenAI embedder pointed at the fake server on
127.0.0.1, which serves real local WordLlama vectors; `infer=False`, so no LLM call), and what
memviz writes is read back by mem0's `get`, `search` and `history`."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

from memviz.edits.commands import Correct
from memviz.frameworks import describe, open_source, recognise
from memviz.store import ReadOnlyError, StoreError
from memviz.store.changes import changes_since, token_now
from memviz.store.times import to_epoch

# mem0 reads these when imported: no telemetry upload, no ~/.mem0 made by the tests
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-tests-"))
import mem0  # noqa: E402,F401 - after the settings above, which mem0 reads when first imported

DIM = 256


@pytest.fixture
def env(tmp_path, monkeypatch, fake_openai):
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0dir"))
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("MEMVIZ_MEM0_EMBEDDER", "fake-embed")
    monkeypatch.setenv("MEMVIZ_EMBED_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMVIZ_MEM0_HISTORY", str(tmp_path / "history.db"))
    return tmp_path


def memory(dsn, tmp_path, base_url, collection="mem0"):
    from mem0 import Memory
    return Memory.from_config({
        "vector_store": {"provider": "pgvector", "config": {
            "connection_string": dsn, "collection_name": collection, "embedding_model_dims": DIM, "hnsw": False}},
        "embedder": {"provider": "openai", "config": {
            "model": "fake-embed", "openai_base_url": base_url, "api_key": "test", "embedding_dims": DIM}},
        "llm": {"provider": "openai", "config": {"model": "fake-chat", "openai_base_url": base_url, "api_key": "test"}},
        "history_db_path": str(tmp_path / "history.db"),
    })


FACTS = [("Alice prefers green tea in the morning", {"user_id": "alice"}),
         ("Alice is allergic to peanuts", {"user_id": "alice"}),
         ("The deploy bot restarts the staging cluster at midnight", {"agent_id": "deploy-bot"}),
         ("Bob's flight to Lisbon leaves on Friday", {"user_id": "bob", "run_id": "trip-1"})]


@pytest.fixture
def m0(env, pg_db, fake_openai):  # noqa: F811
    m = memory(pg_db, env, fake_openai.base_url)
    ids = []
    for text, scope in FACTS:
        out = m.add(text, infer=False, metadata={"source": "test"}, **scope)
        ids.append(out["results"][0]["id"])
    yield m, ids, pg_db
    m.vector_store.connection_pool.close()
    m.db.close()


def test_recognised_and_described(m0):
    m, ids, dsn = m0
    src = recognise(dsn)
    assert src is not None and src.system == "mem0" and src.collections == ["mem0"]
    text = describe(dsn)
    assert "mem0 store" in text and "collection mem0" in text and "fake-embed" in text and "history.db" in text
    assert "password" not in text


def test_fields_shown_right(m0):
    m, ids, dsn = m0
    with open_source(dsn) as s:
        counts = s.counts()
        assert counts["live"] == 4 and counts["by_agent"]["alice"] == [2, 0]
        rows = {r["id"]: r for r in s.get_many(ids)}
        assert len(rows) == 4
        a = rows[ids[0]]
        assert a["content"] == FACTS[0][0] and a["agent"] == "alice" and a["kind"] == "fact"
        assert rows[ids[2]]["agent"] == "deploy-bot"
        assert rows[ids[3]]["agent"] == "bob"  # user before run
        own = a["attributes"]["mem0"]
        got = m.get(ids[0])
        assert own["hash"] == got["hash"] and own["user_id"] == "alice" and own["collection"] == "mem0"
        assert own["metadata"] == {"source": "test"}
        assert a["created_at"] == to_epoch(got["created_at"])
        assert a["embedding_model"] == "fake-embed"
        vec = np.frombuffer(a["embedding"], "<f4") if isinstance(a["embedding"], bytes) else np.asarray(a["embedding"])
        assert vec.shape == (DIM,)
        # mem0's history (ADD events) arrives as the memory's history
        hist = s.history(ids[0])
        assert any("mem0 history: ADD" in (h.get("note") or "") for h in hist)


def test_live_change_arrives_as_delta(m0):
    m, ids, dsn = m0
    with open_source(dsn) as s:
        tok = token_now(s)
        new = m.add("Carol moved to Oslo", user_id="carol", infer=False)["results"][0]["id"]
        m.update(ids[1], "Alice is allergic to peanuts and shellfish")
        m.delete(ids[2])
        ch = changes_since(s, tok)
        assert ch is not None and ch.full is None
        assert len(ch.added) == 1 and len(ch.changed) == 2  # a delta: the new one, the updated and the deleted
        assert s.get(ids[1])["content"] == "Alice is allergic to peanuts and shellfish"
        assert s.get(ids[2])["valid_until"] is not None  # mem0 deleted it: kept retired here
        assert s.get(new)["agent"] == "carol"


def test_correction_written_as_mem0_update_and_read_back(m0):
    m, ids, dsn = m0
    before = m.get(ids[0])
    with open_source(dsn) as s:
        c = Correct(ids[0], "Alice prefers jasmine tea in the morning")
        out = c.apply(s)
        assert c.in_place and out.warning is None
        got = m.get(ids[0])
        import hashlib
        assert got["memory"] == "Alice prefers jasmine tea in the morning"
        assert got["hash"] == hashlib.md5(got["memory"].encode()).hexdigest()
        assert got["created_at"] == before["created_at"] and got["updated_at"] != before["updated_at"]
        assert got["user_id"] == "alice" and got["metadata"] == {"source": "test"}
        hist = m.history(ids[0])
        assert [h["event"] for h in hist][-1] == "UPDATE"
        assert hist[-1]["old_memory"] == FACTS[0][0] and hist[-1]["new_memory"] == got["memory"]
        # the new vector is the model's vector of the new text: mem0's search finds it first
        hits = m.search("jasmine tea in the morning", filters={"user_id": "alice"}, top_k=1)["results"]
        assert hits[0]["id"] == ids[0]
        assert s.get(ids[0])["content"] == got["memory"]
        # undo swaps the text back, in mem0 too
        c.revert(s)
        assert m.get(ids[0])["memory"] == FACTS[0][0]
    with open_source(dsn) as s:  # reopen: nothing re-read as a foreign change
        assert s.get(ids[0])["content"] == FACTS[0][0]


def test_correction_without_a_vector_is_refused_and_nothing_changes(m0, monkeypatch):
    m, ids, dsn = m0
    monkeypatch.delenv("MEMVIZ_EMBED_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    with open_source(dsn) as s:
        with pytest.raises(ReadOnlyError) as e:
            Correct(ids[0], "Alice prefers coffee").apply(s)
        assert "fake-embed" in str(e.value) and "MEMVIZ_EMBED_BASE_URL" in str(e.value) and "nothing was written" in str(e.value)
    assert m.get(ids[0])["memory"] == FACTS[0][0]
    assert [h["event"] for h in m.history(ids[0])] == ["ADD"]


def test_unsupported_edits_refused(m0):
    m, ids, dsn = m0
    with open_source(dsn) as s:
        for fields in ({"importance": 9}, {"tags": ["x"]}, {"valid_until": 1}):
            with pytest.raises(ReadOnlyError) as e:
                s.update_fields(ids[0], fields)
            assert "mem0 store" in str(e.value) and "memviz copy" in str(e.value)
        # the window's menus ask the same question before anything is tried (edits.applicable)
        from memviz.edits import applicable
        arrays = s.arrays()
        assert "cannot write retiring" in applicable.refusal("delete", arrays, [ids[0]], s)
        assert "cannot write changing importance" in applicable.refusal("importance", arrays, [ids[0]], s)
        assert applicable.refusal("correct", arrays, [ids[0]], s) is None
        assert "adding memories" in s.refuses("insert")  # reflection is off for it
    assert m.get(ids[0])["memory"] == FACTS[0][0]


def test_no_false_match(pg, pg_db, env, tmp_path):  # noqa: F811
    with pg.admin(db_name(pg_db)) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute("CREATE TABLE items (id uuid PRIMARY KEY, vector vector(3), payload jsonb)")
        c.execute("""INSERT INTO items VALUES (gen_random_uuid(), '[1,2,3]', '{"name": "x"}')""")
        c.execute("CREATE TABLE nodes (id bigserial, key text, value text)")
    assert recognise(pg_db) is None
    p = tmp_path / "x.json"
    p.write_text('[{"content": "hi"}]')
    assert recognise(str(p)) is None


def test_odd_rows_are_shown_and_a_role_without_rights_is_told(m0, pg):  # noqa: F811
    m, ids, dsn = m0
    odd = "6f1d7e0c-0000-4000-8000-000000000001"
    with pg.admin(db_name(dsn)) as c:
        c.execute(f"""INSERT INTO mem0 VALUES ('{odd}', NULL, '{{"data": 5, "hash": "x", "created_at": "soon"}}')""")
    with open_source(dsn) as s:  # an odd row is shown as it is, not a traceback
        row = s.get(odd)
        assert row["content"] == "5" and row["embedding"] is None
    with pg.admin(db_name(dsn)) as c:  # a role that may not read the collection does not see it
        c.execute("CREATE ROLE mem0_noread LOGIN")
    with pytest.raises(StoreError) as e:
        open_source(dsn.replace("postgresql://postgres@", "postgresql://mem0_noread@", 1))
    assert "holds no memviz memory store" in str(e.value)


def test_a_history_file_that_is_not_mem0s_is_said(m0, env, monkeypatch):
    import apsw
    m, ids, dsn = m0
    other = env / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE history (id, what)")
    conn.close()
    monkeypatch.setenv("MEMVIZ_MEM0_HISTORY", str(other))
    with pytest.raises(StoreError) as e:
        open_source(dsn)
    assert "not mem0's history file" in str(e.value) and "MEMVIZ_MEM0_HISTORY" in str(e.value)


def test_commands_open_it(m0, capsys):
    from memviz.cli import main
    m, ids, dsn = m0
    assert main(["stats", dsn]) == 0
    out = capsys.readouterr().out
    assert "4" in out and "alice" in out
    # consolidation would rewrite the mirror alone: refused, nothing written to mem0 or the mirror
    before = [m.get(i) for i in ids]
    with open_source(dsn) as s:
        audited = len(s.audit_entries())
    assert main(["consolidate", dsn, "--below", "1.01", "--yes"]) != 0
    err = capsys.readouterr().err
    assert "mem0 store" in err and "adding memories (reflections, consolidation)" in err and "Traceback" not in err
    assert [m.get(i) for i in ids] == before
    with open_source(dsn) as s:
        assert len(s.audit_entries()) == audited


def test_reopened_unchanged_then_changed_reads_only_the_change(m0):
    m, ids, dsn = m0
    open_source(dsn).close()
    with open_source(dsn) as s:  # the mirror matches: nothing read, the source notes its row versions
        tok = token_now(s)
        assert s.source._versions is not None and len(s.source._versions) == 4
        m.update(ids[3], "Bob's flight to Lisbon leaves on Saturday")
        delta = s.source.changed_since(None, ())
        assert [r["id"] for r in delta[0]] == [ids[3]] and sorted(delta[1]) == sorted(ids)
        s.source._versions = None  # the mirror's own poll reads it again (in full: it cannot tell)
        ch = changes_since(s, tok)
        assert ch is not None and len(ch.changed) == 1
        assert s.get(ids[3])["content"] == "Bob's flight to Lisbon leaves on Saturday"
