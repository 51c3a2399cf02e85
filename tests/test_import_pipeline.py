"""What every import shares: the output is complete or absent, an existing output is kept unless
--force, cancel and progress work, and the source is never written."""
import hashlib
import json
import os

import numpy as np
import pytest
from progress_log import units

import memviz.store as ms
from memviz.importers import FORMATS, ImportFailed, detect_format, import_jsonl, import_source
from memviz.tasks import Cancelled, Task


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def dump(path, n, dim=8):
    """n records with given vectors (so no embedding work: the time goes into writing)."""
    v = np.random.default_rng(0).normal(size=(n, dim))
    path.write_text("".join(json.dumps({"id": f"r{i}", "content": f"memory number {i}", "embedding": v[i].tolist(),
                                        "metadata": {"agent": "a", "type": "episodic"}}) + "\n" for i in range(n)))
    return path


def others(folder, keep):
    return sorted(set(os.listdir(folder)) - set(keep))


def test_existing_output_is_refused_then_replaced_with_force(tmp_path):
    src = dump(tmp_path / "d.jsonl", 5)
    out = tmp_path / "o.db"
    out.write_bytes(b"precious")
    with pytest.raises(ImportFailed, match="already exists.*--force"):
        import_jsonl(src, out, embedding_model="m")
    assert out.read_bytes() == b"precious"
    (tmp_path / "o.db-wal").write_bytes(b"stale log of the old file")   # must not be replayed onto the new one
    (tmp_path / "o.db-journal").write_bytes(b"stale journal")
    import_jsonl(src, out, embedding_model="m", force=True)
    assert others(tmp_path, ["d.jsonl", "o.db"]) == []
    with ms.open(str(out)) as s:
        assert s.counts()["total"] == 5 and s.integrity() == []


def test_output_checks(tmp_path):
    src = dump(tmp_path / "d.jsonl", 2)
    with pytest.raises(ImportFailed, match="is the source itself"):
        import_jsonl(src, src, embedding_model="m", force=True)
    with pytest.raises(ImportFailed, match="does not exist"):
        import_jsonl(src, tmp_path / "no" / "o.db", embedding_model="m")
    with pytest.raises(ImportFailed, match="is a folder"):
        import_jsonl(src, tmp_path, embedding_model="m", force=True)
    with pytest.raises(ImportFailed, match="Unknown import format 'csv'"):
        import_source("csv", src, tmp_path / "o.db")
    assert set(FORMATS) == {"generative-agents", "ada-stream", "jsonl", "letta-af", "openmemory"}
    assert others(tmp_path, ["d.jsonl"]) == []


@pytest.mark.parametrize("existing", [False, True])
def test_cancel_mid_write_leaves_output_complete_or_absent(tmp_path, existing):
    src = dump(tmp_path / "d.jsonl", 1300)
    digest = sha(src)
    out = tmp_path / "o.db"
    if existing:
        import_jsonl(dump(tmp_path / "old.jsonl", 3), out, embedding_model="m")
    old = sha(out) if existing else None
    state = {"calls": [], "temp_seen": False}

    def progress(fraction, text):
        done, total = units(text)
        state["calls"].append((done, total))
        if done >= 500:   # one batch written: the temporary store exists beside the output
            state["temp_seen"] |= any(f.startswith(".o.db.importing-") for f in os.listdir(tmp_path))
            task.cancel()

    task = Task(on_progress=progress)
    with pytest.raises(Cancelled, match="nothing was written"):
        import_jsonl(src, out, embedding_model="m", force=existing, task=task)
    assert state["temp_seen"] and state["calls"][-1] == (500, 1300)
    assert sha(src) == digest
    keep = ["d.jsonl", "old.jsonl", "o.db"] if existing else ["d.jsonl"]
    assert others(tmp_path, keep) == []          # no temporary file left
    if existing:
        assert sha(out) == old                    # the old output is untouched and still opens
        with ms.open(str(out)) as s:
            assert s.counts()["total"] == 3
    else:
        assert not out.exists()


def test_interrupt_from_the_progress_callback_cleans_up(tmp_path):
    src = dump(tmp_path / "d.jsonl", 700)

    def progress(fraction, text):
        if units(text)[0] >= 500:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_jsonl(src, tmp_path / "o.db", embedding_model="m", task=Task(on_progress=progress))
    assert others(tmp_path, ["d.jsonl"]) == []


def test_cancel_while_embedding(tmp_path):
    src = tmp_path / "d.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "content": f"note {i}"}) + "\n" for i in range(600)))
    seen = []

    def progress(fraction, text):
        seen.append(units(text))
        if len(seen) > 1:   # the old `cancelled=lambda: len(seen) > 1`
            task.cancel()

    task = Task(on_progress=progress)
    with pytest.raises(Cancelled):
        import_jsonl(src, tmp_path / "o.db", task=task)
    assert seen == [(0, 1200), (256, 1200)]       # stopped after the first embedding batch
    assert others(tmp_path, ["d.jsonl"]) == []


def test_malformed_input_that_aborts_keeps_the_old_output(tmp_path):
    out = tmp_path / "o.db"
    import_jsonl(dump(tmp_path / "good.jsonl", 3), out, embedding_model="m")
    old = sha(out)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "a", "content": "x"}, {"id": "b", ')   # a JSON array cut short
    with pytest.raises(ImportFailed, match="not valid JSON"):
        import_jsonl(bad, out, force=True)
    assert sha(out) == old and others(tmp_path, ["good.jsonl", "bad.json", "o.db"]) == []


def test_provenance_records_source_time_counts_and_skips(tmp_path):
    src = dump(tmp_path / "d.jsonl", 4)
    with open(src, "a") as f:
        f.write("{not json}\n")
    report = import_jsonl(src, tmp_path / "o.db", embedding_model="m")
    with ms.open(str(tmp_path / "o.db")) as s:
        meta = s.meta("import")
    assert meta["format"] == "jsonl" and meta["source"] == str(src)
    assert meta["counts"] == {"read": 5, "imported": 4, "skipped": 1, "quirks": 0}
    assert meta["skipped"] == [{"where": "line 5", "code": "malformed-json",
                                "message": "not valid JSON: Expecting property name enclosed in double quotes at column 2"}]
    assert meta["started_at"] <= meta["finished_at"] and meta["agents"] == ["a"]
    assert meta["embedding"] == {"model": "m", "dim": 8, "origin": "source", "count": 4}
    assert report.summary()[0].startswith("imported 4 of 5 memories")


def test_detect_format(tmp_path):
    ga = tmp_path / "Ann" / "bootstrap_memory" / "associative_memory"
    ga.mkdir(parents=True)
    (ga / "nodes.json").write_text("{}")
    assert detect_format(tmp_path / "Ann") == "generative-agents"
    assert detect_format(ga / "nodes.json") == "generative-agents"
    ada = tmp_path / "stream.jsonl"
    ada.write_text('\n{"id": "a", "cycle": 1, "role": "ops", "content": "x"}\n')
    assert detect_format(ada) == "ada-stream"
    assert detect_format(dump(tmp_path / "d.jsonl", 2)) == "jsonl"
    (tmp_path / "arr.json").write_text('[{"content": "x"}]')
    assert detect_format(tmp_path / "arr.json") == "jsonl"
    (tmp_path / "notes.txt").write_text("hello")
    assert detect_format(tmp_path / "notes.txt") is None
    assert detect_format(tmp_path / "missing") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert detect_format(empty) is None
