"""The JSONL records importer (Wonda memory: {id, content, embedding?, metadata})."""
import json

import numpy as np
import pytest

import memviz.store as ms
from memviz.cli import main as cli_main
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.importers import ImportFailed, import_jsonl


def unit_vectors(n, dim, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


SEED_001 = [
    {"id": "m1", "content": "You are a pragmatic project manager.",
     "metadata": {"agent": "Alex", "type": "character", "category": "identity", "indexed_by": "who am I?"}},
    {"id": "m2", "content": "Location: Alex's apartment, living room.",
     "metadata": {"type": "scene", "category": "location"}},
    {"id": "m3", "content": "Jordan said: I love Italian food.",
     "metadata": {"type": "episodic", "category": "dialogue", "turn": "3", "speaker": "Jordan",
                  "timestamp": "2025-10-14T18:30:00Z"}},
    {"id": "m4", "content": "Jordan is a chef.", "metadata": {"agent": "Alex", "type": "character_knowledge",
                                                              "about": "Jordan", "importance": "7"}},
]


def write_lines(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_seed_001_records_without_vectors_are_embedded_locally(tmp_path):
    src = write_lines(tmp_path / "dump.jsonl", SEED_001)
    report = import_jsonl(src, tmp_path / "o.db")
    assert report.imported == 4 and not report.skipped and report.embedding["origin"] == "local"
    with ms.open(str(tmp_path / "o.db")) as s:
        m1, m2, m3, m4 = (s.get(i) for i in ("m1", "m2", "m3", "m4"))
        assert (m1["agent"], m1["kind"], m1["tags"]) == ("Alex", "character", ["identity"])
        assert m1["attributes"] == {"category": "identity", "indexed_by": "who am I?"}
        assert (m2["agent"], m2["kind"]) == ("", "scene")
        assert m3["kind"] == "episode" and m3["tags"] == ["dialogue"]
        assert m3["attributes"] == {"type": "episodic", "category": "dialogue", "turn": 3, "speaker": "Jordan"}
        assert m3["event_time"] == m3["created_at"] == ms.to_epoch("2025-10-14T18:30:00Z")
        assert m4["kind"] == "character_knowledge" and m4["importance"] == 7 and m4["attributes"] == {"about": "Jordan"}
        a = s.arrays()
        assert a.embedding_model == LOCAL_MODEL and a.has_embedding.all()
        assert np.allclose(a.embedding[a.index_of("m3")], default_embedder().embed_one(SEED_001[2]["content"]), atol=1e-5)


def test_given_vectors_of_one_dimension_are_kept(tmp_path):
    vecs = unit_vectors(4, dim=16, seed=3)
    recs = [{**r, "embedding": v.tolist()} for r, v in zip(SEED_001, vecs)]
    recs[3] = SEED_001[3]                               # one record without a vector
    src = write_lines(tmp_path / "dump.jsonl", recs)
    with pytest.raises(ImportFailed, match=r"16-d vectors but do not say which model.*--embedding-model"):
        import_jsonl(src, tmp_path / "o.db")
    assert not (tmp_path / "o.db").exists()
    report = import_jsonl(src, tmp_path / "o.db", embedding_model="nomic-embed-text")
    assert report.embedding == {"model": "nomic-embed-text", "dim": 16, "origin": "source", "count": 3}
    assert any("no usable vector on 1 record (line 4)" in w for w in report.warnings), report.warnings
    with ms.open(str(tmp_path / "o.db")) as s:
        assert s.embedding_models() == [("nomic-embed-text", 16, 3)]
        a = s.arrays()
        assert np.allclose(a.embedding[a.index_of("m2")], vecs[1], atol=1e-6)
        assert not a.has_embedding[a.index_of("m4")]
    # the model can also come from the records themselves
    recs = [{**r, "metadata": {**r["metadata"], "embedding_model": "my-model"}} for r in recs[:3]]
    report = import_jsonl(write_lines(tmp_path / "named.jsonl", recs), tmp_path / "named.db")
    assert report.embedding["model"] == "my-model"
    with ms.open(str(tmp_path / "named.db")) as s:
        assert "embedding_model" not in s.get("m1")["attributes"]


def test_local_model_vectors_are_completed_locally(tmp_path):
    emb = default_embedder()
    recs = [{**SEED_001[0], "embedding": emb.embed_one(SEED_001[0]["content"]).tolist(), "embedding_model": LOCAL_MODEL},
            SEED_001[1]]
    report = import_jsonl(write_lines(tmp_path / "d.jsonl", recs), tmp_path / "o.db")
    assert not report.warnings
    report = import_jsonl(tmp_path / "d.jsonl", tmp_path / "again.db", reembed=True)
    assert any(w.startswith("1 given vector was ignored (--reembed)") for w in report.warnings), report.warnings
    with ms.open(str(tmp_path / "o.db")) as s:
        assert s.embedding_models() == [(LOCAL_MODEL, 256, 2)]


def test_mixed_dimensions_name_the_lines_unless_reembedded(tmp_path):
    recs = [{**r, "embedding": unit_vectors(1, dim=8 if i != 2 else 5, seed=i)[0].tolist()}
            for i, r in enumerate(SEED_001)]
    src = write_lines(tmp_path / "dump.jsonl", recs)
    with pytest.raises(ImportFailed) as e:
        import_jsonl(src, tmp_path / "o.db", embedding_model="m")
    msg = str(e.value)
    assert "8-d on lines 1, 2, 4" in msg and "5-d on line 3" in msg and "--reembed" in msg
    assert not (tmp_path / "o.db").exists()
    report = import_jsonl(src, tmp_path / "o.db", reembed=True)
    assert any("4 given vectors were ignored" in w for w in report.warnings)
    with ms.open(str(tmp_path / "o.db")) as s:
        assert s.embedding_models() == [(LOCAL_MODEL, 256, 4)]


def test_malformed_lines_and_odd_fields(tmp_path):
    lines = [
        SEED_001[0],
        '{"id": "bad", "content": ',                                        # line 2
        {"id": "m5", "content": "vector of strings", "embedding": ["a", "b"]},  # line 3: vector dropped
        {"id": "m6", "metadata": {"type": "episodic"}},                      # line 4: no content
        {"id": "m7", "content": {"text": "structured"}, "metadata": "plain string"},  # line 5
        {"content": "no id", "metadata": {"timestamp": 1760466600000}},     # line 6: milliseconds
        {"id": "m8", "content": "the store rejects it", "confidence": "very"},  # line 7: not a number
    ]
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + "".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                                             for x in lines).encode() + b"\xff\xfe broken\n")
    report = import_jsonl(src, tmp_path / "o.db")
    assert [(i.where, i.code) for i in report.skipped] == [
        ("line 2", "malformed-json"), ("line 4", "no-content"), ("line 8", "not-utf8"), ("line 7", "invalid")]
    assert "m8: bad number" in report.skipped[-1].message and report.imported == 4
    quirks = {(i.where, i.code) for i in report.quirks}
    assert {("line 3", "bad-vector"), ("line 5", "content-not-text"), ("line 5", "metadata-not-object"),
            ("line 6", "no-id"), ("line 6", "time-in-ms")} <= quirks
    with ms.open(str(tmp_path / "o.db")) as s:
        assert s.get("m1")["agent"] == "Alex"          # the BOM did not spoil line 1
        assert s.get("m7")["content"] == '{"text": "structured"}'
        assert s.get("m7")["attributes"] == {"metadata": "plain string"}
        assert s.get("line-6")["event_time"] == 1760466600
        assert s.arrays().has_embedding.all()          # the dropped vector was replaced by a local one


def test_json_array_and_native_fields_round_trip(tmp_path):
    native = [{"id": "r1", "kind": "reflection", "agent": "a", "content": "Insight", "importance": 9,
               "event_time": "2026-01-02T03:04:05Z", "source_ids": ["e1"], "tags": ["t"], "protected": True,
               "attributes": {"questions_addressed": ["why?"]}, "location": "lab"},
              {"id": "e1", "kind": "episode", "agent": "a", "content": "Event", "metadata": {"type": "semantic"}}]
    src = tmp_path / "dump.json"
    src.write_text(json.dumps(native, indent=2))
    import_jsonl(src, tmp_path / "o.db")
    with ms.open(str(tmp_path / "o.db")) as s:
        r1 = s.get("r1")
        assert (r1["kind"], r1["importance"], r1["protected"], r1["source_ids"], r1["tags"]) == (
            "reflection", 9, True, ["e1"], ["t"])
        assert r1["attributes"] == {"questions_addressed": ["why?"], "location": "lab"}
        assert r1["event_time"] == ms.to_epoch("2026-01-02T03:04:05Z")
        assert s.get("e1")["kind"] == "episode"      # an explicit kind wins over metadata.type
        assert s.provenance().sources == [("r1", "e1")]
    # a source id naming no record is kept as a broken link and reported
    native[0]["source_ids"] = ["e1", "gone"]
    src.write_text(json.dumps(native))
    report = import_jsonl(src, tmp_path / "o2.db")
    assert [(i.where, i.code) for i in report.quirks] == [("record 1", "dangling-source")]
    with ms.open(str(tmp_path / "o2.db")) as s:
        assert s.provenance().dangling == [("r1", "gone", "source")]


def test_cli_embedding_model_option(tmp_path, capsys):
    recs = [{**r, "embedding": v.tolist()} for r, v in zip(SEED_001, unit_vectors(4, dim=6))]
    src = write_lines(tmp_path / "d.jsonl", recs)
    out = tmp_path / "o.db"
    assert cli_main(["import", "jsonl", str(src), "-o", str(out)]) == 2
    assert "--embedding-model" in capsys.readouterr().err
    assert cli_main(["import", "jsonl", str(src), "-o", str(out), "--embedding-model", "tiny-6"]) == 0
    assert "4 x 6-d tiny-6 (source)" in capsys.readouterr().out
    assert cli_main(["import", "ada-stream", str(src), "-o", str(tmp_path / "x.db"), "--embedding-model", "m"]) == 2
