"""bench/locomo.py builds a store and a judged set from data shaped like LoCoMo's (made here:
the real data is fetched at bench time, never part of the repository)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from calendar import timegm

import pytest

import memviz.store as ms
from memviz.judge import read_jsonl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench", "locomo.py")


def conversation(a, b, sessions, qa):
    conv = {"speaker_a": a, "speaker_b": b}
    for n, (when, turns) in enumerate(sessions, 1):
        conv[f"session_{n}_date_time"] = when
        conv[f"session_{n}"] = [{"speaker": (a, b)[i % 2], "dia_id": f"D{n}:{i + 1}", "text": t} | extra
                                for i, (t, extra) in enumerate(turns)]
    conv["session_9_date_time"] = "1:00 pm on 1 January, 2030"  # a date without turns, as in the data
    return conv, qa


def tiny_zip(path):
    flat, qa = conversation("Ann", "Bo", [
        ("1:56 pm on 8 May, 2023", [("I adopted a cat.", {}), ("Nice! Look at this.", {"blip_caption": "a photo of a dog"})]),
        ("9:05 am on 10 May, 2023", [("The cat is called Tom.", {}), ("Cute.", {})]),
    ], [
        {"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the cat's name and what did Ann adopt?", "answer": "Tom", "evidence": ["D2:1; D1:1"],
         "category": 1},
        {"question": "What did Bo adopt?", "evidence": ["D1:1"], "category": 5, "adversarial_answer": "a cat"},
        {"question": "When?", "answer": "May", "evidence": ["D:2:01"], "category": 2},
        {"question": "Lost?", "answer": "?", "evidence": ["D7:1"], "category": 3},
    ])
    flat["qa"] = qa
    nested_conv, nested_qa = conversation("Cy", "Di", [("10:00 pm on 1 June, 2022", [("Hello.", {}), ("Hi.", {})])],
                                          [{"question": "Who said hi?", "answer": "Di", "evidence": ["D1:2"], "category": 4}])
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data/locomo/26.json", json.dumps(flat))
        z.writestr("data/locomo/3.json", json.dumps({"sample_id": "conv-3", "conversation": nested_conv, "qa": nested_qa}))


def run(*args, env=None):
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True, env=env, timeout=600)


def test_a_store_and_a_judged_set_from_locomo_shaped_data(tmp_path):
    tiny_zip(tmp_path / "tiny.zip")
    out = run("--data", str(tmp_path / "tiny.zip"), "--out", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    assert "memories (turns)" in out.stdout and "judged queries" in out.stdout

    store = ms.open_store(str(tmp_path / "out" / "locomo.db"), read_only=True)
    try:
        a = store.arrays()
        ids = a.ids.tolist()
        assert ids == ["conv-3/D1:1", "conv-3/D1:2", "conv-26/D1:1", "conv-26/D1:2", "conv-26/D2:1", "conv-26/D2:2"]
        start = timegm((2023, 5, 8, 13, 56, 0, 0, 0, 0))
        assert a.event_time[2:].tolist() == [start, start + 30, start + 86400 * 2 - 4 * 3600 - 51 * 60,
                                             start + 86400 * 2 - 4 * 3600 - 51 * 60 + 30]
        assert set(a.kind) == {"episode"} and a.agent.tolist()[:2] == ["conv-3"] * 2
        assert set(a.importance) == {5.0} and a.has_embedding.all()
        assert store.get("conv-26/D1:2")["content"] == "Bo: Nice! Look at this. [image: a photo of a dog]"
    finally:
        store.close()

    judged = read_jsonl(tmp_path / "out" / "locomo.jsonl", known_ids=set(ids))
    got = {q.id: (q.query, dict(q.relevant), q.agents) for q in judged}
    assert got == {
        "conv-3/qa0": ("Who said hi?", {"conv-3/D1:2": 1}, ("conv-3",)),
        "conv-26/qa0": ("What did Ann adopt?", {"conv-26/D1:1": 1}, ("conv-26",)),
        "conv-26/qa1": ("What is the cat's name and what did Ann adopt?", {"conv-26/D2:1": 1, "conv-26/D1:1": 1},
                        ("conv-26",)),
        "conv-26/qa3": ("When?", {"conv-26/D2:1": 1}, ("conv-26",)),  # "D:2:01" read as D2:1
    }  # qa2 is adversarial, qa4's evidence names no turn
    last = timegm((2023, 5, 10, 9, 5, 0, 0, 0, 0)) + 30
    assert {q.as_of for q in judged if q.agents == ("conv-26",)} == {last + 30}


@pytest.mark.parametrize("data, message", [("absent.zip", "no such file"), ("bad.zip", "is not LoCoMo's data")])
def test_bad_data_is_a_clear_message(tmp_path, data, message):
    (tmp_path / "bad.zip").write_text("not a zip, not json")
    out = run("--data", str(tmp_path / data), "--out", str(tmp_path / "out"))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
