"""`memviz query`: JSON per the contract, clear errors."""
import json

import numpy as np
import pytest

from memviz.cli import main
from memviz.embed import default_embedder

TEXTS = ["Alice said the new Italian restaurant downtown is wonderful", "Bob fixed the bicycle",
         "Alice dislikes crowded restaurants on Fridays", "The weather was rainy all week"]


@pytest.fixture
def db(store, store_path):
    emb = default_embedder()
    V = emb.embed(TEXTS)
    store.insert_memories([dict(id=f"m{i}", agent="alice" if i % 2 == 0 else "bob", kind="episode", content=t,
                                importance=3 + i, embedding=V[i], embedding_model=emb.model,
                                created_at=f"2026-02-1{i}T12:00") for i, t in enumerate(TEXTS)])
    return str(store_path)


def run(capsys, *argv):
    code = main(["query", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output(db, capsys):
    code, out, _ = run(capsys, db, "what did Alice say about restaurants?", "--preset", "dual-memory",
                       "--alpha", "0.5", "--beta", "0.3", "--gamma", "0.2", "-k", "3", "--json",
                       "--now", "wall")  # months after the memories: recency 0, relevance decides
    assert code == 0
    items = json.loads(out)
    assert [it["rank"] for it in items] == [1, 2, 3]
    for it in items:
        for key in ("id", "score", "relevance", "recency", "importance", "relevance_weighted",
                    "recency_weighted", "importance_weighted", "content"):
            assert key in it
        assert it["score"] == pytest.approx(it["relevance_weighted"] + it["recency_weighted"] + it["importance_weighted"])
    assert {items[0]["id"], items[1]["id"]} == {"m0", "m2"}        # the two restaurant memories
    scores = [it["score"] for it in items]
    assert scores == sorted(scores, reverse=True)


def test_filters_as_of_and_like(db, capsys):
    code, out, _ = run(capsys, db, "restaurants", "--agent", "bob", "--json")
    assert code == 0 and {it["agent"] for it in json.loads(out)} == {"bob"}
    code, out, _ = run(capsys, db, "restaurants", "--as-of", "2026-02-11T13:00", "--json")
    assert sorted(it["id"] for it in json.loads(out)) == ["m0", "m1"]
    code, out, err = run(capsys, db, "--like", "m0", "--preset", "generative-agents", "--json")
    items = json.loads(out)
    assert code == 0 and "m0" not in [it["id"] for it in items] and "m2" in [it["id"] for it in items]
    assert "each is ranked on its own" in err  # alice and bob: two personas, each ranked alone
    code, out, _ = run(capsys, db, "--like", "m1", "--preset", "generative-agents", "--agent", "bob", "--json")
    assert code == 0 and [it["id"] for it in json.loads(out)] == ["m3"]
    code, out, _ = run(capsys, db, "restaurants", "--preset", "hybrid")
    assert code == 0 and "hybrid" in out and "restaurant" in out


def test_errors(db, capsys, store):
    code, _, err = run(capsys, db, "--like", "nope")
    assert code == 2 and "no memory with id 'nope'" in err
    code, _, err = run(capsys, db, "x", "--as-of", "last tuesday")
    assert code == 2 and "--as-of" in err and "ISO 8601" in err
    code, _, err = run(capsys, db)
    assert code == 2 and "--like" in err


def test_model_unavailable(tmp_path, capsys):
    import memviz.store as ms
    path = str(tmp_path / "other.db")
    with ms.create(path) as s:
        s.insert_memories([dict(id="a", kind="fact", content="the cat sat on the mat",
                                embedding=np.ones(8, np.float32), embedding_model="somewhere/model-8")])
    code, _, err = run(capsys, path, "cat")
    assert code == 2 and "--like" in err and "hybrid" in err
    code, out, err = run(capsys, path, "cat", "--preset", "hybrid", "--json")   # full-text still answers
    assert code == 0 and json.loads(out)[0]["id"] == "a" and "note" in err
