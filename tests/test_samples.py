"""The sample generator (scripts/make_samples.py, memviz.samples) and the committed sample stores."""
import json
import math
import os
import shutil
import subprocess
import sys

import apsw
import numpy as np
import pytest

import memviz.store as ms
from memviz.embed import LOCAL_DIM, LOCAL_MODEL, default_embedder
from memviz.samples import assistant, simulation
from memviz.store.schema import SCHEMA_VERSION, applied_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = 0.05
CONTENT_COLUMNS = ("id", "agent", "kind", "content", "importance", "embedding", "embedding_model", "event_time",
                   "created_at", "valid_until", "confidence", "access_count", "last_accessed", "decay_rate",
                   "protected", "source_ids", "entity_ids", "tags", "attributes")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The small-scale samples generated twice, by the script, into two folders."""
    dirs = []
    for name in ("a", "b"):
        out = tmp_path_factory.mktemp(name)
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_samples.py"), "--out", str(out),
                        "--scale", str(SMALL)], check=True, capture_output=True, cwd=ROOT)
        dirs.append(out)
    return dirs


def _rows(path):
    with ms.open(str(path), read_only=True) as s:
        mem = s.conn.execute(f"SELECT {', '.join(CONTENT_COLUMNS)} FROM memories ORDER BY rowid").fetchall()
        ent = s.conn.execute("SELECT * FROM entities ORDER BY id").fetchall()
    return mem, ent


def _memories(path):
    with ms.open(str(path), read_only=True) as s:
        ids = [r[0] for r in s.conn.execute("SELECT id FROM memories ORDER BY rowid")]
        rows = {r["id"]: r for r in s.get_many(ids)}
        entities = {e["id"]: e for e in s.entities()}
        prov = s.provenance()
    return [rows[i] for i in ids], entities, prov


@pytest.mark.parametrize("name", ["simulation", "assistant"])
def test_generating_twice_gives_identical_memories(generated, name):
    first, second = (_rows(d / f"{name}.db") for d in generated)
    assert len(first[0]) > 100
    assert first == second  # ids, text, times, vectors, JSON columns and entities


@pytest.mark.parametrize("name", ["simulation", "assistant"])
def test_embeddings_are_unit_vectors_of_the_local_model(generated, name):
    path = str(generated[0] / f"{name}.db")
    with ms.open(path, read_only=True) as s:
        assert s.embedding_models() == [(LOCAL_MODEL, LOCAL_DIM, s.counts()["total"])]
        arr = s.arrays()
        assert arr.has_embedding.all() and arr.embedding.shape == (len(arr), LOCAL_DIM)
        raw = np.stack([np.frombuffer(b, "<f4") for (b,) in s.conn.execute("SELECT embedding FROM memories ORDER BY rowid")])
        np.testing.assert_allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-5)
        picks = [0, len(arr) // 3, len(arr) // 2, len(arr) - 1]
        texts = [s.get(arr.ids[i])["content"] for i in picks]
    again = default_embedder().embed(texts)
    np.testing.assert_allclose(raw[picks], again, atol=1e-5)


def _check_reflections(rows, by_id):
    refl = [r for r in rows if r["kind"] == "reflection"]
    levels = {}
    for r in refl:
        a = r["attributes"]
        assert r["importance"] >= 8 and r["source_ids"] and a["questions_addressed"], r["content"]
        cited = [by_id[s] for s in r["source_ids"]]  # KeyError = a dangling citation
        assert all(c["event_time"] <= r["event_time"] for c in cited)
        if a["level"] == 1:
            assert any(c["kind"] != "reflection" for c in cited)
        else:
            assert all(c["kind"] == "reflection" and c["attributes"]["level"] == a["level"] - 1 for c in cited)
        levels[a["level"]] = levels.get(a["level"], 0) + 1
    assert levels.get(1) and levels.get(2), levels
    return levels


def test_simulation_structure(generated):
    rows, entities, prov = _memories(generated[0] / "simulation.db")
    by_id = {r["id"]: r for r in rows}
    kinds = {r["kind"] for r in rows}
    assert {"character", "scene", "character_knowledge", "episode", "reflection"} <= kinds
    agents = {r["agent"] for r in rows if r["kind"] == "character"}
    assert 4 <= len(agents) <= 6
    for r in rows:
        if r["kind"] == "character":
            assert r["attributes"]["category"] in r["tags"] and r["protected"] and r["decay_rate"] == 0
        if r["kind"] == "character_knowledge":
            assert r["attributes"]["about"] in agents - {r["agent"]}
    dialogue = [r for r in rows if r["kind"] == "episode" and r["attributes"]["category"] == "dialogue"]
    assert len(dialogue) > 50
    for r in dialogue:
        a = r["attributes"]
        assert r["content"].startswith(f"{a['speaker']} said: ") and r["agent"] == a["speaker"]
        assert a["location"] and a["turn"] >= 1 and r["agent"] in a["listeners"]
    turns = [r["attributes"]["turn"] for r in dialogue]
    assert turns == sorted(turns)
    days = {r["attributes"]["day"] for r in dialogue}
    assert len(days) >= 5
    assert {"location", "atmosphere", "time", "context"} <= {r["attributes"]["category"] for r in rows if r["kind"] == "scene"}
    levels = _check_reflections(rows, by_id)
    assert levels.get(3)
    assert not prov.dangling and len(prov.sources) == sum(len(r["source_ids"]) for r in rows)
    assert all(e in entities for r in rows for e in r["entity_ids"])
    assert any(r["access_count"] > 0 and r["last_accessed"] for r in rows if r["kind"] == "character")


def test_assistant_structure(generated):
    rows, entities, prov = _memories(generated[0] / "assistant.db")
    by_id = {r["id"]: r for r in rows}
    assert {"episode", "fact", "preference", "reflection"} <= {r["kind"] for r in rows}
    assert {"person", "project", "org", "tool"} <= {e["type"] for e in entities.values()}
    for r in rows:
        assert all(e in entities for e in r["entity_ids"])
    for e in entities.values():
        assert e["mention_count"] == sum(e["id"] in r["entity_ids"] for r in rows)

    facts = [r for r in rows if r["kind"] in ("fact", "preference")]
    assert facts and all(r["source_ids"] and by_id[r["source_ids"][0]]["kind"] == "episode" for r in facts)
    assert any(len(r["source_ids"]) > 1 for r in facts)  # merged repeats

    # superseded facts: old row retired when the new one arrived, new row points at it; one chain of three
    new = [r for r in rows if "supersedes" in r["attributes"]]
    assert len(new) >= 3
    for r in new:
        old = by_id[r["attributes"]["supersedes"]]
        assert old["valid_until"] == r["created_at"] and old["kind"] == r["kind"]
    heads = {r["attributes"]["supersedes"] for r in new}
    assert any(by_id[r["attributes"]["supersedes"]]["attributes"].get("supersedes") for r in new)
    assert prov.supersedes and not prov.dangling and len(heads) == len(new)

    # soft-deleted episodes the user asked to forget, and facts pruned by decay
    forgotten = [r for r in rows if r["attributes"].get("deleted_by") == "user"]
    assert forgotten and all(r["valid_until"] and r["kind"] == "episode" for r in forgotten)
    pruned = [r for r in rows if r["attributes"].get("pruned")]
    assert pruned and all(r["valid_until"] and r["confidence"] < 0.05 for r in pruned)

    protected = [r for r in rows if r["protected"]]
    assert len(protected) >= 5
    assert all(r["decay_rate"] == 0 and r["confidence"] == 1.0 and r["valid_until"] is None for r in protected)

    # decayed confidence follows the assistant memory (ADR 005): base × exp(−rate × days^0.8), days since last access
    decayed = [r for r in facts if not r["protected"] and "decayed_as_of" in r["attributes"]]
    assert decayed and any(r["confidence"] < 0.5 for r in decayed)
    for r in decayed:
        ref = r["last_accessed"] or r["created_at"]
        days = (r["attributes"]["decayed_as_of"] - ref) / 86400
        expect = r["attributes"]["base_confidence"] * math.exp(-r["decay_rate"] * days ** 0.8)
        assert r["confidence"] == pytest.approx(expect, rel=1e-9)

    _check_reflections(rows, by_id)
    assert any(r["access_count"] and r["last_accessed"] for r in facts)


def test_times_have_daytime_activity_and_gaps(generated):
    rows, _, _ = _memories(generated[0] / "assistant.db")
    eps = sorted(r["event_time"] for r in rows if r["kind"] == "episode")
    hours = [(t // 3600) % 24 for t in eps]
    assert sum(6 <= h <= 22 for h in hours) == len(hours)
    assert max(np.diff(eps)) > 2 * 86400                     # quiet days
    assert (eps[-1] - eps[0]) > 150 * 86400                   # several months


# ----------------------------------------------------------------- the committed stores
@pytest.mark.parametrize("name", ["simulation", "assistant"])
def test_committed_sample_opens_and_is_sound(tmp_path, name):
    src = os.path.join(ROOT, "sample_dbs", f"{name}.db")
    assert os.path.getsize(src) < 15e6
    copy = tmp_path / f"{name}.db"
    shutil.copy(src, copy)                      # open writable without touching the committed file
    with ms.open(str(copy)) as s:
        assert not s.read_only, s.read_only_reason
        assert s.counts()["total"] >= 1500
        assert s.integrity() == []
        assert s.main_model() == (LOCAL_MODEL, LOCAL_DIM)
        assert s.meta("sample")["name"] == name
        committed = s.conn.execute("SELECT id, kind, agent, content, event_time, created_at, valid_until "
                                   "FROM memories ORDER BY rowid").fetchall()
    # the committed file is what the generator makes at full scale (text and times; vectors checked above)
    built = simulation.build(1.0)[0] if name == "simulation" else assistant.build(1.0)[0]
    built = sorted(built, key=lambda r: r["created_at"])
    assert committed == [(r["id"], r["kind"], r["agent"], r["content"], r["event_time"], r["created_at"],
                          r.get("valid_until")) for r in built]


@pytest.mark.parametrize("name", ["simulation", "assistant"])
def test_committed_sample_is_at_the_latest_migration(name):
    """A user's first writable open of a sample (even `memviz query`) migrates nothing: the committed
    files are at the current schema (regenerate them with scripts/make_samples.py after adding a
    migration). Read as immutable: nothing is written beside the committed file."""
    path = os.path.join(ROOT, "sample_dbs", f"{name}.db")
    c = apsw.Connection(f"file:{path}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        assert applied_version(c) == SCHEMA_VERSION
    finally:
        c.close()


def test_script_rejects_bad_scale(tmp_path):
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_samples.py"), "--out", str(tmp_path),
                          "--scale", "0"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2 and "--scale must be positive" in res.stderr
    assert not os.listdir(tmp_path)


def test_json_columns_are_well_formed(generated):
    with ms.open(str(generated[0] / "assistant.db"), read_only=True) as s:
        assert not s.arrays().bad_json.any()
        attrs = [json.loads(a) for (a,) in s.conn.execute("SELECT attributes FROM memories")]
    assert all(isinstance(a, dict) for a in attrs)


def test_the_committed_samples_rarely_repeat_themselves_verbatim():
    """Real agent memory seldom holds the same sentence from the same speaker twice: the
    assistant sample used to hold 849 verbatim copies in 1,660 memories (half its map)."""
    for name, at_most in (("assistant", 0.01), ("simulation", 0.06)):
        with ms.open(os.path.join(ROOT, "sample_dbs", f"{name}.db"), read_only=True) as s:
            total, distinct = s.conn.execute(
                "SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT agent, content FROM memories)) "
                "FROM memories").fetchone()
        assert (total - distinct) / total <= at_most, (name, total - distinct)


def test_a_retold_text_is_framed_by_when_it_was_said():
    from memviz.samples.variety import Retelling

    r = Retelling()
    day = 86400
    said = [r.say("user", "Book the ryokan.", 1736000000 + i * day) for i in range(30)]
    assert said[0] == "Book the ryokan." and len(set(said)) == 30
    assert all("Book the ryokan." in s for s in said)
    assert r.say("agent", "Book the ryokan.", 1736000000) == "Book the ryokan."  # another speaker's first telling


# ----------------------------------------------------------------- the user's sample (the window's default)
def test_the_users_sample_is_made_on_first_use_as_the_committed_one_and_then_kept(tmp_path, monkeypatch):
    """An installed memviz has no sample_dbs/: the generator makes the user's copy, at the
    current schema, the same memories as the committed store; later calls keep the user's edits."""
    from memviz.samples.bundled import user_sample, user_sample_path
    from memviz.tasks import Task

    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "data"))
    said = []
    path = user_sample(Task(on_progress=lambda f, text: said.append((f, text))))
    assert path == str(user_sample_path()) == str(tmp_path / "data" / "samples" / "assistant.db")
    assert said[0] == (-1, "Making the sample store (first run)")
    assert said[-1][1] == "Making the sample: writing the store"
    fractions = [f for f, text in said if "embedding" in text]
    assert len(fractions) > 2 and fractions == sorted(fractions) and 0 < fractions[-1] <= 0.8
    assert os.listdir(tmp_path / "data" / "samples") == ["assistant.db"]  # no part file left
    assert _rows(path) == _rows(os.path.join(ROOT, "sample_dbs", "assistant.db"))
    with ms.open(path) as s:
        assert s.schema_version() == SCHEMA_VERSION and not s.read_only
        first = s.arrays().ids[0]
        s.set_valid_until(first, 1_700_000_000)
    said.clear()
    assert user_sample(Task(on_progress=lambda f, text: said.append(text))) == path and said == []
    with ms.open(path, read_only=True) as s:
        assert s.get(first)["valid_until"] == 1_700_000_000  # the user's edit stays


def test_a_sample_another_memviz_made_meanwhile_is_not_replaced(tmp_path):
    """Two windows started at once both make the sample: the first one published may be open
    already, so the second keeps it (an SQLite file replaced under an open store would meet the
    other's -wal)."""
    from memviz.samples.bundled import _publish

    dst, part = tmp_path / "assistant.db", tmp_path / ".assistant.db.1.part"
    dst.write_bytes(b"the first one")
    part.write_bytes(b"the second one")
    _publish(part, dst)
    assert dst.read_bytes() == b"the first one"
    fresh = tmp_path / "other.db"
    _publish(part, fresh)
    assert fresh.read_bytes() == b"the second one"


def test_a_sample_that_cannot_be_made_says_why_and_leaves_nothing(tmp_path, monkeypatch):
    from memviz.samples.bundled import user_sample
    from memviz.tasks import Cancelled, Task

    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(blocker))
    with pytest.raises(OSError) as e:
        user_sample()
    assert str(e.value).startswith(f"Cannot make the sample store: the folder {blocker / 'samples'} cannot be created")
    assert "MEMVIZ_DATA_DIR" in str(e.value)

    monkeypatch.setenv("MEMVIZ_DATA_DIR", str(tmp_path / "d2"))
    task = Task(on_progress=lambda f, text: f > 0.3 and task.cancel())  # cancelled while embedding
    with pytest.raises(Cancelled):
        user_sample(task)
    assert os.listdir(tmp_path / "d2" / "samples") == []
