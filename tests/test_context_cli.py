"""`memviz context` and `memviz diff` run as subprocesses on small stores with known contents."""
import json
import os
import subprocess
import sys

import pytest

import memviz.store as ms

NOW = 1_800_000_000
H = 3600
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "memviz", *map(str, args)], capture_output=True, text=True, env=env,
                          check=False)


def make(path):
    s = ms.create(str(path))
    # balanced: importance / (1 + age hours) -> c 9/3 = 3, d 5/2 = 2.5, b 2/1 = 2, a 8/11 = .73
    for mid, imp, hours, text in (("a", 8, 10, "alpha " * 8), ("b", 2, 0, "bravo " * 8), ("c", 9, 2, "charlie " * 8),
                                  ("d", 5, 1, "delta " * 8)):
        t = NOW - hours * H
        s.insert_memories([{"id": mid, "kind": "fact", "agent": "ann", "content": text.strip(), "importance": imp,
                            "created_at": t, "event_time": t, "last_accessed": t}])
    return s


def test_context_json_orders_and_cuts(tmp_path):
    s = make(tmp_path / "m.db")
    s.close()
    r = cli("context", tmp_path / "m.db", "--budget", 30, "--strategy", "balanced", "--now", NOW, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # Llama 2 pieces: "alpha"/"delta" one each, "bravo"/"charlie" two: a 8, b 16, c 16, d 8 tokens
    # 48 tokens > 30: evict 18, lowest importance/(seconds since access + 1) first:
    # a 8/36001 (8 tokens, not enough), then c 9/7201 (16: 24 freed); d 5/3601 and b 2/1 stay
    assert out["usable"] == 27 and out["exact_tokens"] and out["evicted"] == 2
    assert [(i["id"], i["tokens"], i["cumulative"]) for i in out["included"]] == [("d", 8, 8), ("b", 16, 24)]
    assert [(d["id"], d["stage"]) for d in out["below"]] == [("a", "evicted"), ("c", "evicted")]
    assert out["text"] == "\n\n".join(i["content"] for i in out["included"])
    # budget 48: nothing evicted, 43 usable: c 16, d 24, b 40, and a (8) would make 48
    out = json.loads(cli("context", tmp_path / "m.db", "--budget", 48, "--now", NOW, "--json").stdout)
    assert [(i["id"], i["cumulative"]) for i in out["included"]] == [("c", 16), ("d", 24), ("b", 40)]
    first = out["below"][0]
    assert first["id"] == "a" and first["stage"] == "cut" and "needs 8 tokens, 3 left of 43" in first["reason"]
    assert out["text"] == "\n\n".join(i["content"] for i in out["included"])


def test_context_measures_ages_from_the_stores_clock(tmp_path):
    """Without --now the ages are the store clock's, as every command measures them (it took the
    wall clock: a simulation's or the sample's memories were all months old, and balanced ranked
    by importance alone)."""
    from memviz.store.clock import record_clock, simulated
    s = make(tmp_path / "m.db")
    record_clock(s, simulated(NOW))
    s.close()
    at_clock = json.loads(cli("context", tmp_path / "m.db", "--budget", 48, "--json").stdout)
    told = json.loads(cli("context", tmp_path / "m.db", "--budget", 48, "--now", NOW, "--json").stdout)
    assert at_clock["now"] == told["now"] and at_clock["now"].startswith("2027-01-15")
    assert [i["id"] for i in at_clock["included"]] == [i["id"] for i in told["included"]] == ["c", "d", "b"]


def test_context_text_is_exactly_the_assembled_context(tmp_path):
    s = make(tmp_path / "m.db")
    s.close()
    r = cli("context", tmp_path / "m.db", "--budget", 1000, "--strategy", "recent", "--now", NOW, "--text")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "\n\n".join(["bravo " * 8, "delta " * 8, "charlie " * 8, "alpha " * 8]).replace(" \n", "\n") \
        .rstrip() + "\n"


def test_context_as_of_hides_later_memories(tmp_path):
    s = make(tmp_path / "m.db")
    s.close()
    r = cli("context", tmp_path / "m.db", "--strategy", "important", "--as-of", NOW - 3 * H, "--json")
    assert r.returncode == 0, r.stderr
    assert [i["id"] for i in json.loads(r.stdout)["included"]] == ["a"]  # only a existed 3 h before NOW


def test_context_bad_input_is_one_line(tmp_path):
    s = make(tmp_path / "m.db")
    s.close()
    for args, msg in ((("--budget", 0), "at least 1 token"), (("--strategy", "query"), "needs --query"),
                      (("--as-of", "yesterday"), "--as-of: cannot read")):
        r = cli("context", tmp_path / "m.db", *args)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_diff_two_stores_and_moments(tmp_path):
    s = make(tmp_path / "m.db")
    s.conn.execute("VACUUM INTO ?", (str(tmp_path / "before.db"),))
    s.update_fields("a", {"importance": 1})
    s.insert_memories([{"id": "e", "kind": "fact", "agent": "bob", "content": "echo", "created_at": NOW + 10}])
    s.close()
    r = cli("diff", tmp_path / "before.db", tmp_path / "m.db", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["counts"] == {"added": 1, "importance": 1}
    assert {(c["kind"], tuple(c["ids"])) for c in d["changes"]} == {("added", ("e",)), ("importance", ("a",))}
    r = cli("diff", tmp_path / "m.db", "--from", NOW + 5)
    assert r.returncode == 0 and "added (1)" in r.stdout and "echo" in r.stdout, r.stderr
    r = cli("diff", tmp_path / "m.db", "--agent", "ann", "--vs-agent", "bob", "--json")
    assert json.loads(r.stdout)["counts"] == {"only_a": 4, "only_b": 1}
    # in words, the Diff panel's: the summary and each group's heading, no internal kind names
    r = cli("diff", tmp_path / "m.db", "--agent", "ann", "--vs-agent", "bob")
    lines = r.stdout.splitlines()
    assert lines[1] == "only the first agent knows (4), only the second agent knows (1)", r.stdout
    assert "only the second agent knows (1):" in lines and "only_a" not in r.stdout and "only_b" not in r.stdout
    r = cli("diff", tmp_path / "m.db")
    assert r.returncode == 2 and "give a second store" in r.stderr


def test_context_query_strategy_follows_the_presets_ranking(tmp_path):
    s = make(tmp_path / "m.db")
    s.close()
    r = cli("context", tmp_path / "m.db", "--query", "delta charlie", "--preset", "hybrid", "--budget", 30,
            "--now", NOW, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # hybrid without vectors: full-text ranks only, 1/(60 + rank). c and d match one query word
    # each, equally often in equally long texts (a bm25 tie, left in store order: c, d); a and b
    # score 0 and follow in store order. Usable 27: c 16, d 24, a would make 32.
    assert out["strategy"] == "query"
    assert [(i["id"], i["cumulative"]) for i in out["included"]] == [("c", 16), ("d", 24)]
    assert [i["score"] for i in out["included"]] == pytest.approx([1 / 61, 1 / 62])
    first = out["below"][0]
    assert first["id"] == "a" and "needs 8 tokens, 3 left of 27" in first["reason"]
