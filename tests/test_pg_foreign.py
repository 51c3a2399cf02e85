"""A `memories` table memviz did not make, on a real server: opened read-only with what
differs (nothing created in the database), refused only when nothing usable is there; a
statement over the server's statement_timeout said clearly; a vector column wider than
pgvector indexes said in `memviz stats`."""
from __future__ import annotations

import numpy as np
import pytest
from pg_server import db_name, pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.cli import main


def _other_app(pg, dsn):  # noqa: F811
    """mem0-like: uuid ids, a jsonb payload, timestamps, an unnamed-size-free vector column."""
    with pg.admin(db_name(dsn)) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute("CREATE TABLE memories (id integer PRIMARY KEY, content text NOT NULL, user_id text, "
                  "created_at timestamptz NOT NULL, payload jsonb, vec vector(3))")
        c.execute("INSERT INTO memories VALUES (1, 'likes tea', 'u1', '2024-01-01 00:00:00+00', '{\"a\": 1}', "
                  "'[1,0,0]'), (2, 'lives in Oslo', 'u2', '2024-01-02 00:00:00+00', NULL, '[0,1,0]')")


def test_a_foreign_memories_table_opens_read_only_with_what_differs(pg, pg_db, capsys):  # noqa: F811
    _other_app(pg, pg_db)
    with ms.open(pg_db) as s:
        assert s.read_only
        reason = s.read_only_reason
        assert "not made by memviz" in reason and "memories lacks agent, kind, importance" in reason
        assert "extra columns user_id, payload" in reason and "no table entities, memviz_meta, memviz_audit" in reason
        a = s.arrays()
        assert list(a.ids) == ["1", "2"] and a.dim == 3 and a.has_embedding.all()
        assert a.event_time.tolist() == [1704067200, 1704153600]  # from created_at
        assert s.get("2")["content"] == "lives in Oslo" and s.counts()["total"] == 2
        assert s.vec_search(np.array([0, 1, 0], dtype=np.float32), 1)[0][0] == "2"
        assert s.fts_search("tea")[0][0] == "1" and s.history("1") == []
        with pytest.raises(ms.ReadOnlyError, match="not made by memviz"):
            s.update_fields("1", {"importance": 3})
    with pg.admin(db_name(pg_db)) as c:  # nothing was created in the database
        assert [r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")] == ["memories"]
    assert main(["stats", pg_db]) in (0, 1)  # 1: the integrity part lists what the schema lacks
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "memories: 2" in out.out and "not made by memviz" in out.out


def test_the_stand_ins_come_back_after_a_reconnect(pg, pg_db):  # noqa: F811
    _other_app(pg, pg_db)
    with ms.open(pg_db) as s:
        with pg.admin() as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (s.conn.info.backend_pid,))
        assert len(s.arrays()) == 2


def test_a_table_without_anything_to_show_is_refused(pg, pg_db):  # noqa: F811
    with pg.admin(db_name(pg_db)) as c:
        c.execute("CREATE TABLE memories (key integer, blob bytea)")
    with pytest.raises(ms.NotAStoreError, match="cannot read: it lacks a text column `id` and a text column `content`"):
        ms.open(pg_db)


def test_a_statement_timeout_is_said_clearly(pg, pg_db):  # noqa: F811
    ms.create(pg_db).close()
    sep = "&" if "?" in pg_db else "?"
    # the limit leaves the open's own statements room on a loaded machine; the sleep outlasts it
    with ms.open(f"{pg_db}{sep}options=-c%20statement_timeout%3D1000") as s:
        with pytest.raises(ms.StoreError, match="statement_timeout") as e:
            s._q("SELECT pg_sleep(5)")
        assert "Nothing was written" not in str(e.value)  # a read


def test_stats_notes_a_vector_column_wider_than_pgvector_indexes(pg, pg_db, capsys):  # noqa: F811
    with ms.create(pg_db) as s:
        v = np.zeros(2048, dtype=np.float32)
        v[0] = 1
        s.insert_memories([{"id": "w", "kind": "fact", "content": "wide", "embedding": v, "embedding_model": "big"}])
    assert main(["stats", pg_db]) == 0
    assert "2048 dimensions are searched exactly: pgvector indexes at most 2000" in capsys.readouterr().out
