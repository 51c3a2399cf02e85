"""The ADA memory stream importer (ADA cognitive memory's stream.jsonl)."""
import hashlib
import json

import numpy as np
import pytest

import memviz.store as ms
from memviz.cli import main as cli_main
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.importers import ImportFailed, import_ada_stream

ENTRIES = [
    {"id": "abc123", "cycle": 188, "timestamp": "2026-02-08T13:23:00Z", "role": "research",
     "action": "MemGPT Literature Review", "importance": 8, "type": "action",
     "tags": ["memory", "research", "architecture"], "issueRefs": [95], "prRefs": [],
     "content": "Created docs/research/memgpt-analysis.md. Deep analysis of MemGPT paper.", "tokenEstimate": 85},
    {"id": "def456", "cycle": 187, "timestamp": "2026-02-08T13:05:00Z", "role": "growth",
     "action": "Demo Day Metrics Refresh", "importance": 6, "type": "observation", "tags": ["demo"],
     "issueRefs": [39], "prRefs": [41], "content": "Updated demo materials with current metrics.", "tokenEstimate": 45},
    {"id": "refl001", "cycle": 190, "timestamp": "2026-02-08T15:00:00Z", "role": "system",
     "action": "Reflection: Cycles 180-190", "importance": 9, "type": "reflection", "tags": ["meta", "patterns"],
     "content": "Pattern: double-merge cycles are 2x efficient when PRs have pre-approval."},
    {"id": "dec001", "cycle": 191, "timestamp": "2026-02-08T16:00:00Z", "role": "ops", "action": "ADR-001",
     "importance": 7, "type": "decision", "tags": [], "content": "Decision: JSONL over SQLite for recall memory."},
]


def write_stream(path, lines):
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_stream_entries_become_memories(tmp_path):
    src = write_stream(tmp_path / "stream.jsonl", ENTRIES)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    report = import_ada_stream(src, tmp_path / "ada.db")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest
    assert report.imported == 4 and not report.skipped and not report.quirks
    with ms.open(str(tmp_path / "ada.db")) as s:
        r = s.get("abc123")
        assert (r["agent"], r["kind"], r["importance"]) == ("research", "episode", 8)
        assert r["content"] == ENTRIES[0]["content"] and r["tags"] == ["memory", "research", "architecture"]
        assert r["event_time"] == ms.to_epoch("2026-02-08T13:23:00Z")
        assert r["attributes"] == {"cycle": 188, "action": "MemGPT Literature Review", "issueRefs": [95],
                                   "prRefs": [], "tokenEstimate": 85, "type": "action"}
        assert {i: s.get(i)["kind"] for i in ("def456", "refl001", "dec001")} == {
            "def456": "episode", "refl001": "reflection", "dec001": "fact"}
        assert s.get("def456")["attributes"]["type"] == "observation"
        assert s.get("dec001")["attributes"]["type"] == "decision"
        a = s.arrays()
        assert a.embedding_model == LOCAL_MODEL and a.has_embedding.all()
        want = default_embedder().embed_one(ENTRIES[2]["content"])
        assert np.allclose(a.embedding[a.index_of("refl001")], want, atol=1e-5)
        assert s.meta("import")["format"] == "ada-stream"
        assert sorted(s.counts()["by_agent"]) == ["growth", "ops", "research", "system"]


def test_bad_lines_are_reported_with_numbers_and_the_rest_imported(tmp_path):
    lines = [
        ENTRIES[0],
        '{"id": "broken", "content": "no closing brace"',                       # line 2
        "",                                                                       # blank: ignored
        "[1, 2, 3]",                                                              # line 4: not an object
        {"id": "x1", "role": "qa", "action": "Only an action", "type": "action", "importance": 4,
         "timestamp": "2026-02-08T10:00:00Z"},                                    # line 5: no content
        {"id": "x2", "role": "qa", "type": "musing", "importance": 14, "content": "Odd type",
         "timestamp": "yesterday"},                                               # line 6
        {"role": "qa", "type": "action", "content": "No id here", "timestamp": "2026-02-08T11:00:00Z"},  # line 7
        {"id": "abc123", "role": "qa", "type": "action", "content": "Same id again",
         "timestamp": "2026-02-08T12:00:00Z"},                                    # line 8
        {"id": "x3", "role": "qa", "type": "action"},                             # line 9: nothing to keep
    ]
    src = write_stream(tmp_path / "stream.jsonl", lines)
    report = import_ada_stream(src, tmp_path / "ada.db")
    assert [(i.where, i.code) for i in report.skipped] == [
        ("line 2", "malformed-json"), ("line 4", "not-an-object"), ("line 9", "no-content")]
    quirks = {(i.where, i.code) for i in report.quirks}
    assert {("line 5", "no-content"), ("line 6", "unknown-type"), ("line 6", "importance-clamped"),
            ("line 6", "bad-time"), ("line 7", "no-id"), ("line 8", "duplicate-id")} <= quirks
    assert report.imported == 5 and report.read == 8   # the blank line is not a record
    with ms.open(str(tmp_path / "ada.db")) as s:
        assert s.get("x1")["content"] == "Only an action"
        x2 = s.get("x2")
        assert x2["kind"] == "episode" and x2["importance"] == 10 and x2["attributes"]["type"] == "musing"
        assert s.get("line-7")["content"] == "No id here"
        again = s.get("abc123~2")
        assert again["content"] == "Same id again" and again["attributes"]["original_id"] == "abc123"
        assert s.get("abc123")["agent"] == "research"
        meta = s.meta("import")
        assert meta["skipped_by_code"] == {"malformed-json": 1, "not-an-object": 1, "no-content": 1}


def test_cli_reports_lines_and_exit_codes(tmp_path, capsys):
    src = write_stream(tmp_path / "stream.jsonl", [ENTRIES[0], "{oops", ENTRIES[1]])
    out = tmp_path / "ada.db"
    assert cli_main(["import", "ada-stream", str(src), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "imported 2 of 3" in text and "line 2" in text and "malformed-json" in text
    # the output exists now: refused with exit code 2 and a message naming --force
    assert cli_main(["import", "ada-stream", str(src), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert cli_main(["import", "ada-stream", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "m.db")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert cli_main(["import", "ada-stream", str(src), "-o", str(out), "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["imported"] == 2


def test_nothing_usable_is_an_error(tmp_path):
    src = write_stream(tmp_path / "stream.jsonl", ["not json", "{also not"])
    with pytest.raises(ImportFailed, match="no usable records"):
        import_ada_stream(src, tmp_path / "ada.db")
    assert not (tmp_path / "ada.db").exists()
    with pytest.raises(ImportFailed, match="is a folder"):
        import_ada_stream(tmp_path, tmp_path / "ada.db")
