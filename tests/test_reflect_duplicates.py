"""Issue 19 case 12: an insight that repeats a live memory (word for word, or cosine >= 0.97)
or an earlier proposal is marked "duplicate of …" in the preview and not written by --yes;
the original is never touched. The LLM is the fake OpenAI server over real HTTP."""
import pytest
from fake_openai import reply_json
from test_reflect_flow import build_store

import memviz.store as ms
from memviz.cli import main

QUESTIONS = reply_json({"questions": ["How is Bob coping?", "What does Ann grow?"]})


def insight(text, evidence=(1,)):
    return reply_json({"insights": [{"insight": text, "evidence": list(evidence)}]})


@pytest.fixture
def db(tmp_path, monkeypatch, fake_openai):
    p = tmp_path / "mem.db"
    build_store(p).close()
    monkeypatch.setenv("MEMVIZ_LLM_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMVIZ_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("MEMVIZ_LLM_API_KEY", "k")
    return str(p)


def reflections(path):
    with ms.open(path, read_only=True) as s:
        return s.conn.execute("SELECT id, content, valid_until, importance FROM memories WHERE kind='reflection' "
                              "ORDER BY rowid").fetchall()


def test_yes_does_not_write_a_repeat_of_an_existing_reflection(db, fake_openai, capsys):
    fake_openai.push(QUESTIONS, insight("Bob is stressed by the deadline.", [1, 2]),
                     insight("Ann grows tomatoes and herbs."))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--yes"]) == 0
    first = reflections(db)
    assert [r[1] for r in first] == ["Bob is stressed by the deadline.", "Ann grows tomatoes and herbs."]
    capsys.readouterr()
    # the LLM repeats one word for word and the other with a trailing space and other case
    fake_openai.push(QUESTIONS, insight("Bob is stressed by the deadline.", [1, 2]),
                     insight("ann grows tomatoes and  herbs."))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--yes"]) == 0
    out = capsys.readouterr().out
    assert out.count("duplicate of memory ") == 2 and "not written by --yes" in out
    assert f"duplicate of memory {first[0][0]} (identical text)" in out
    assert "wrote 0 reflections; rejected 2 (2 duplicates)" in out
    assert reflections(db) == first  # no copy written, the originals untouched


def test_near_identical_and_repeats_within_a_run_are_marked(db, fake_openai, capsys):
    fake_openai.push(QUESTIONS, insight("Bob is stressed by the deadline.", [1, 2]),
                     insight("Ann grows tomatoes and herbs."))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--yes"]) == 0
    capsys.readouterr()
    fake_openai.push(QUESTIONS, insight("Bob is stressed by the deadline!", [1, 2]),
                     insight("Bob is stressed by the deadline!", [1]))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "duplicate of memory " in out and "(cosine 0.9" in out
    assert "duplicate of proposal 1 (identical text)" in out
    # something new is not marked and is written
    fake_openai.push(QUESTIONS, insight("Bob sleeps badly before releases.", [1, 2]),
                     insight("Ann grows tomatoes and herbs."))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--yes"]) == 0
    out = capsys.readouterr().out
    assert out.count("duplicate of") == 1 and "wrote 1 reflection: " in out
