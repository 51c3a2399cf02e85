"""`memviz check` / `--repair` (issue 17): drifted FTS and vec0 indexes, broken links, bad JSON,
cycles; the repair rebuilds only derived data, in one audited transaction; stats and hybrid
queries tell about a damaged index instead of answering quietly."""
import hashlib
import json
import shutil
from pathlib import Path

import pytest

import memviz.store as ms
from memviz.cli import main
from memviz.store import check as hybrid_state
from memviz.store.check import REPAIR_ACTION, check_store, supersede_cycles
from memviz.store.connection import connect

SAMPLES = Path(__file__).resolve().parent.parent / "sample_dbs"


def _copy(tmp_path, name="assistant.db"):
    dst = tmp_path / name
    shutil.copy(SAMPLES / name, dst)
    return str(dst)


def _memories_digest(path) -> str:
    """Every byte of every memory row, in rowid order."""
    c = connect(path, readonly=True)
    try:
        h = hashlib.sha256()
        for row in c.execute("SELECT rowid, * FROM memories ORDER BY rowid"):
            h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        c.close()


def _drift(path) -> dict:
    """Damage the derived indexes the ways issue 17 names; returns the ids concerned."""
    c = connect(path)
    rows = c.execute("SELECT rowid, id, content FROM memories ORDER BY rowid LIMIT 3").fetchall()
    for rowid, _, text in rows:  # removed from the index by hand
        c.execute("INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)", (rowid, text))
    # an agent that wrote with the triggers dropped
    c.execute("DROP TRIGGER memories_fts_ai")
    src = c.execute("SELECT * FROM memories LIMIT 1 OFFSET 20").fetchone()
    cols = [r[1] for r in c.execute("PRAGMA table_info(memories)")]
    row = dict(zip(cols, src), id="agent-wrote-this", content="zanzibar platypus notes", embedding=None)
    c.execute(f"INSERT INTO memories ({','.join(row)}) VALUES ({','.join('?' * len(row))})", list(row.values()))
    vec = c.execute("SELECT name FROM sqlite_master WHERE name GLOB 'vec_memories_[0-9]*' AND sql LIKE '%vec0%'"
                    ).fetchone()[0]
    gone = [r[0] for r in c.execute("SELECT id FROM memories WHERE embedding IS NOT NULL LIMIT 2 OFFSET 5")]
    c.execute(f"DELETE FROM {vec} WHERE memory_id IN (?, ?)", gone)
    a, b = [r[0] for r in c.execute("SELECT id FROM memories WHERE embedding IS NOT NULL LIMIT 2 OFFSET 10")]
    c.execute(f"UPDATE {vec} SET embedding = (SELECT embedding FROM memories WHERE id = ?) WHERE memory_id = ?", (a, b))
    c.close()
    return {"fts": [r[1] for r in rows], "vec_missing": gone, "vec_differ": [b]}


@pytest.mark.parametrize("name", ["assistant.db", "simulation.db"])
def test_bundled_samples_are_clean(tmp_path, capsys, name):
    p = _copy(tmp_path, name)
    assert main(["check", p]) == 0
    assert "clean" in capsys.readouterr().out


def test_check_reports_drift_repair_fixes_it_and_memories_stay_byte_identical(tmp_path, capsys):
    p = _copy(tmp_path)
    damaged = _drift(p)
    before = _memories_digest(p)

    assert main(["check", "--json", p]) == 1
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert {"missing_triggers", "fts_drift", "vec_missing", "vec_differ"} <= set(found)
    assert all(found[c]["repairable"] for c in ("missing_triggers", "fts_drift", "vec_missing", "vec_differ"))
    assert set(damaged["fts"]) <= set(found["fts_drift"]["examples"]) and found["fts_drift"]["count"] == 4
    assert set(found["vec_missing"]["examples"]) == set(damaged["vec_missing"])
    assert found["vec_differ"]["examples"] == damaged["vec_differ"]

    # without --yes and without a terminal nothing is repaired
    assert main(["check", "--repair", p]) == 1
    out = capsys.readouterr()
    assert "repair will:" in out.out and "rebuild the full-text index" in out.out and "not repairing" in out.err
    assert main(["check", p]) == 1
    capsys.readouterr()

    assert main(["check", "--repair", "--yes", p]) == 0
    out = capsys.readouterr().out
    assert "rebuilt the full-text index" in out and "after repair:" in out
    assert main(["check", p]) == 0
    assert _memories_digest(p) == before
    with ms.open(p, read_only=True) as s:
        assert s.fts_search("zanzibar platypus")[0][0] == "agent-wrote-this"
        audit = s.conn.execute("SELECT action, before FROM memviz_audit WHERE action = ?", (REPAIR_ACTION,)).fetchall()
        assert len(audit) == 1 and "fts_drift" in audit[0][1]
        # the dropped trigger is back: a new row reaches the index again
    with ms.open(p) as s:
        s.insert_memories([dict(kind="fact", content="quokka sightings")])
        assert [h for h in s.fts_search("quokka")]
        assert check_store(s).clean


def test_stats_reports_the_index_checks(tmp_path, capsys):
    p = _copy(tmp_path)
    assert main(["stats", p]) == 0
    assert "integrity: ok (SQLite, full-text index, vector index)" in capsys.readouterr().out
    _drift(p)
    assert main(["stats", p]) == 1
    out = capsys.readouterr().out
    assert "full-text index is out of step" in out and "embeddings missing from the vector index" in out
    assert "integrity: ok" not in out


def test_hybrid_query_warns_about_a_damaged_index(tmp_path, capsys):
    p = _copy(tmp_path)
    assert main(["query", p, "sleep", "--preset", "hybrid"]) == 0
    assert "warning" not in capsys.readouterr().err
    _drift(p)
    hybrid_state.note_fts_state(p, None)  # forget what this session saw before the damage
    with ms.open(p, read_only=True) as s:
        hybrid_state._FTS_STATE.pop(p)
        assert "out of step" in hybrid_state.known_fts_damage(s)  # the cheap probe on first use
    assert main(["query", p, "sleep", "--preset", "hybrid"]) == 0
    err = capsys.readouterr().err
    assert "warning: the full-text index is out of step" in err and "memviz check --repair" in err
    assert main(["check", "--repair", "--yes", p]) == 0  # the repair is what this session now knows
    capsys.readouterr()
    assert main(["query", p, "sleep", "--preset", "hybrid"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_links_json_and_cycles(tmp_path, capsys):
    p = str(tmp_path / "s.db")
    with ms.create(p) as s:
        s.insert_memories([dict(id="a", kind="fact", content="a", source_ids=["ghost"], entity_ids=["nobody"]),
                           dict(id="b", kind="fact", content="b", attributes={"supersedes": "c"}),
                           dict(id="c", kind="fact", content="c", attributes={"supersedes": "b"})])
    c = connect(p)
    c.execute("UPDATE memories SET tags = '[\"x\"' WHERE id = 'b'")
    c.execute("UPDATE memories SET attributes = '[1]' WHERE id = 'a'")
    c.close()
    assert main(["check", "--json", p]) == 1
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["dangling_source"]["examples"] == ["a -> ghost"]
    assert found["dangling_entities"]["examples"] == ["a -> nobody"]
    assert found["supersede_cycle"]["examples"] == ["b -> c"]
    assert found["bad_json_tags"]["examples"] == ["b"] and found["bad_json_attributes"]["examples"] == ["a"]
    assert not any(f["repairable"] for f in found.values())
    assert main(["check", "--repair", "--yes", p]) == 1
    assert "nothing here can be repaired" in capsys.readouterr().out


def test_supersede_cycles_finds_each_once():
    assert supersede_cycles([("a", "b"), ("b", "c"), ("c", "a"), ("d", "e"), ("x", "x")]) == [["a", "b", "c"], ["x"]]
    assert supersede_cycles([("a", "b"), ("b", "c")]) == []


def test_check_of_a_missing_file_is_exit_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "none.db")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_the_index_itself_agrees_with_the_docsize_comparison(tmp_path):
    from memviz.store.check import _fts_doc_drift_from_index, fts_doc_drift
    p = _copy(tmp_path)
    _drift(p)
    with ms.open(p, read_only=True) as s:
        missing, stale = fts_doc_drift(s.conn)
        assert len(missing) == 4 and stale == []
        assert _fts_doc_drift_from_index(s.conn) == (missing, stale)


def test_a_dropped_index_is_found_and_rebuilt(tmp_path, capsys):
    p = _copy(tmp_path)
    c = connect(p)
    c.execute("DROP INDEX idx_memories_valid_until")
    c.close()
    assert main(["check", "--json", p]) == 1
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert set(found) == {"missing_indexes"} and "idx_memories_valid_until" in found["missing_indexes"]["title"]
    assert main(["check", "--repair", "--yes", p]) == 0
    with ms.open(p, read_only=True) as s:
        assert s.conn.execute("SELECT 1 FROM sqlite_master WHERE name='idx_memories_valid_until'").fetchone()


def test_bit_flips_in_cell_data_are_reported_not_a_traceback(tmp_path, capsys):
    """Damage quick_check misses (issue 19 case 1's kind): the check names it and goes on."""
    import random
    p = _copy(tmp_path)
    data = bytearray(Path(p).read_bytes())
    rnd = random.Random(3)
    for _ in range(20):
        data[rnd.randrange(200_000, len(data) - 1000)] ^= 0xFF
    Path(p).write_bytes(bytes(data))
    assert main(["check", "--json", p]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert found and all(f["title"] for f in found)


def test_stats_says_when_it_skips_the_index_checks(tmp_path, capsys, monkeypatch):
    from memviz.commands import stats
    p = _copy(tmp_path)
    _drift(p)
    monkeypatch.setattr(stats, "INDEX_CHECK_LIMIT", 100)
    with ms.open(p, read_only=True) as s:
        n = s.counts()["total"]
    assert main(["stats", p]) == 0
    out = capsys.readouterr().out
    assert f"integrity: ok (SQLite only; full-text and vector checks skipped on {n} memories" in out
