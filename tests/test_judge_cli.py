"""`memviz judge`: import (JSON Lines, TREC), export, list, delete, eval and fit, on a small
store; every bad input refused whole with its line named, exit 2, the store's bytes unchanged."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

import memviz.store as ms
from memviz.cli import main
from memviz.judge import read_jsonl
from memviz.judge.stored import read_set

T0 = 1_700_000_000


@pytest.fixture
def db(tmp_path):
    """12 memories: m0…m11, one hour apart; m1 is the nearest to m0's vector, m2 the next."""
    rng = np.random.default_rng(4)
    v = rng.normal(size=(12, 8)).astype(np.float32)
    v[1] = v[0] + 0.05 * v[1]
    v[2] = v[0] + 0.3 * v[2]
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    path = str(tmp_path / "s.db")
    with ms.create(path) as s:
        s.insert_memories([{"id": f"m{i}", "kind": "fact", "agent": "ann", "content": f"memory {i}", "embedding": v[i],
                            "embedding_model": "m", "importance": 5, "event_time": T0 + 3600 * i,
                            "created_at": T0 + 3600 * i} for i in range(12)])
        s.set_meta("clock", {"mode": "simulated", "at": T0 + 3600 * 12})
    return path


def write(path, lines) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return str(path)


def good(tmp_path) -> str:
    return write(tmp_path / "set.jsonl", [
        {"id": "near", "like": "m0", "relevant": {"m1": 2, "m2": 1}, "as_of": T0 + 3600 * 12},
        {"id": "list", "like": "m5", "relevant": ["m4"], "as_of": "2023-11-15T10:00:00Z"},
        {"id": "text", "like": "m3", "relevant": {"m11": 1, "m7": 0}}])


def fingerprint(path) -> dict:
    return {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in (path, path + "-wal") if os.path.exists(p)}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_import_list_export_round_trip(db, tmp_path, capsys):
    code, out, _ = run(capsys, "judge", "import", db, good(tmp_path), "--name", "mine")
    assert code == 0 and out.strip() == "Saved 3 judged queries in 'mine' (3 new, 0 replaced)"
    code, out, _ = run(capsys, "judge", "list", db)
    assert code == 0 and "  mine  3 queries" in out and "parameter sets: 0" in out
    out_file = str(tmp_path / "back.jsonl")
    assert run(capsys, "judge", "export", db, "mine", "-o", out_file)[0] == 0
    assert read_jsonl(out_file, name="mine") == read_jsonl(good(tmp_path), name="mine")
    qrels, topics = str(tmp_path / "q.txt"), str(tmp_path / "t.tsv")
    code, _, err = run(capsys, "judge", "export", db, "mine", "--trec", qrels, topics)
    assert code == 2 and "has no text" in err   # queries by example only: TREC topics hold text
    # re-import replaces queries of the same ids; TREC import
    write(tmp_path / "t.tsv", ["near\tthe first memory"])
    write(tmp_path / "q.txt", ["near 0 m1 2", "near 0 m3 1"])
    code, out, _ = run(capsys, "judge", "import", db, "--qrels", qrels, "--topics", topics, "--name", "mine")
    assert code == 0 and "(0 new, 1 replaced)" in out
    with ms.open(db, read_only=True) as s:
        assert dict(read_set(s, "mine").by_id()["near"].relevant) == {"m1": 2, "m3": 1}
    assert run(capsys, "judge", "export", db, "nope", "-o", out_file)[0] == 2
    code, out, _ = run(capsys, "judge", "list", db, "--json")
    assert json.loads(out)["judged_sets"] == [{"name": "mine", "queries": 3}]


@pytest.mark.parametrize("line, what", [
    ({"id": "x", "like": "m0", "relevant": {"ghost": 1}}, "memory id 'ghost' names no memory in the store"),
    ({"id": "near", "like": "m0", "relevant": ["m1"]}, "the query id 'near' is already used on line 1"),
    ({"id": "x", "like": "m0", "relevant": {"m1": 3}}, "query 'x': the grade of 'm1' is 3"),
    ({"id": "x", "like": "m0", "relevant": ["m1"], "as_of": "last tuesday"}, 'as_of "last tuesday" is not a time'),
    ('{"id": "x", "like": "m0", "relevant": ["m1"]', "is not JSON"),
])
def test_a_bad_line_refuses_the_whole_file_and_changes_nothing(db, tmp_path, capsys, line, what):
    run(capsys, "judge", "import", db, good(tmp_path), "--name", "mine")
    before = fingerprint(db)
    with ms.open(db, read_only=True) as s:
        audit = s.audit_entries()
    bad = write(tmp_path / "bad.jsonl", [{"id": "near", "like": "m0", "relevant": ["m1"]},
                                         {"id": "fine", "like": "m1", "relevant": ["m2"]}, line])
    code, out, err = run(capsys, "judge", "import", db, bad, "--name", "mine")
    assert code == 2 and out == ""
    assert "bad.jsonl: 1 problem; nothing was read from it" in err and f"bad.jsonl:3: {what}" in err
    assert "Traceback" not in err
    assert fingerprint(db) == before
    with ms.open(db, read_only=True) as s:
        assert s.audit_entries() == audit and s.judged_sets() == [("mine", 3)]
    # the same file given to eval is refused the same way
    code, _, err = run(capsys, "judge", "eval", db, bad)
    assert code == 2 and f"bad.jsonl:3: {what}" in err


def test_eval_prints_the_measures_overall_and_per_query(db, tmp_path, capsys):
    path = good(tmp_path)
    code, out, err = run(capsys, "judge", "eval", db, path, "--preset", "dual-memory", "--alpha", "1", "--beta", "0",
                         "--gamma", "0", "-k", "2", "--json")
    assert code == 0 and "Traceback" not in err
    got = json.loads(out)
    assert set(got) == {"metrics", "per_query", "params"} and got["params"]["alpha"] == 1.0
    assert set(got["metrics"]) == {"recall@2", "ndcg@10", "mrr", "p@2"}
    near = got["per_query"]["near"]   # relevance alone: m1 then m2, the two judged, first
    assert near["recall@2"] == 1.0 and near["mrr"] == 1.0 and near["ndcg@10"] == pytest.approx(1.0)
    assert near["p@2"] == 1.0
    code, out, _ = run(capsys, "judge", "eval", db, path, "--alpha", "1", "--beta", "0", "--gamma", "0", "-k", "2")
    assert code == 0 and "3 judged queries, dual-memory (alpha 1, beta 0, gamma 0, tau_hours 24, k 2)" in out
    assert "near" in out and "recall@2" in out
    assert run(capsys, "judge", "eval", db, "nothing-here")[2].startswith(
        "memviz: error: nothing-here: no such file, and")
    code, _, err = run(capsys, "judge", "eval", db, path, "--preset", "nope")
    assert code == 2 and "unknown preset or parameter set 'nope'" in err


def test_fit_reports_saves_only_what_it_recommends_and_the_saved_set_is_a_preset(db, tmp_path, capsys):
    # relevant: each query's nearest memories, whatever their age: relevance alone is best
    lines = []
    with ms.open(db, read_only=True) as s:
        a = s.arrays()
    for i in range(12):
        near = np.argsort(-(a.embedding @ a.embedding[i]))[1:3]
        lines.append({"id": f"q{i}", "like": f"m{i}", "relevant": {f"m{j}": 2 if r == 0 else 1 for r, j in enumerate(near)}})
    path = write(tmp_path / "nn.jsonl", lines)
    code, out, err = run(capsys, "judge", "fit", db, path, "--folds", "3", "--json", "--save", "nn-fit")
    assert code == 0 and "Traceback" not in err
    rep = json.loads(out)
    assert rep["recommended"] and rep["saved"] == "nn-fit" and rep["after"] > rep["before"]
    def recency_share(p):   # importance is the same for every memory here: only α against β matters
        return p["beta"] / (p["alpha"] + p["beta"])
    assert recency_share(rep["fitted"]) < recency_share(rep["start"]) and len(rep["folds"]) == 3 and "gain_sd" in rep
    code, out, _ = run(capsys, "judge", "list", db)
    assert "nn-fit  dual-memory" in out
    code, out, _ = run(capsys, "judge", "eval", db, path, "--preset", "nn-fit", "--json")
    assert code == 0 and json.loads(out)["params"]["beta"] == pytest.approx(rep["fitted"]["beta"])
    code, out, _ = run(capsys, "judge", "fit", db, path, "--folds", "3")
    assert code == 0 and "held-out ndcg@10 over 3 folds" in out and "recommended: " in out
    code, _, err = run(capsys, "judge", "fit", db, path, "--preset", "hybrid")
    assert code == 2 and "the hybrid preset has no weights or knobs to fit" in err
    code, _, err = run(capsys, "judge", "fit", db, path, "--folds", "40")
    assert code == 2 and "40 folds of 12 queries" in err
    assert run(capsys, "judge", "delete", db, "nn-fit", "--parameters")[0] == 0
    assert "parameter sets: 0" in run(capsys, "judge", "list", db)[1]


def test_a_read_only_store_evaluates_but_keeps_nothing(db, tmp_path, capsys):
    import apsw
    c = apsw.Connection(db)   # a newer memviz's store: this one opens it read-only
    c.execute("INSERT INTO memviz_migrations VALUES (99, 'from the future', 0)")
    c.close()
    code, out, _ = run(capsys, "judge", "eval", db, good(tmp_path), "--json")
    assert code == 0 and "metrics" in json.loads(out)
    before = fingerprint(db)
    code, _, err = run(capsys, "judge", "import", db, good(tmp_path))
    assert code == 2 and "is open read-only (it was written by a newer memviz" in err and "Traceback" not in err
    assert fingerprint(db) == before


def test_importing_again_says_how_many_queries_the_set_holds_in_words(db, tmp_path, capsys):
    one = write(tmp_path / "one.jsonl", [{"id": "near", "like": "m0", "relevant": {"m1": 2}}])
    assert run(capsys, "judge", "import", db, one, "--name", "one")[0] == 0
    code, out, _ = run(capsys, "judge", "import", db, one, "--name", "one")
    assert code == 0 and out.strip().endswith("(0 new, 1 replaced); the set now holds 1 query")
    code, out, _ = run(capsys, "judge", "import", db, good(tmp_path), "--name", "one")
    assert code == 0 and out.strip().endswith("; the set now holds 3 queries")
