"""`memviz reflect` and `memviz consolidate` on real stores, the LLM being the fake server."""
import io
import os
import subprocess
import sys

import pytest
from fake_openai import reply_error, reply_json, reply_text, slow
from test_reflect_flow import build_store

import memviz.store as ms
from memviz.cli import main

GOOD = [reply_json({"questions": ["How is Bob coping?", "What does Ann grow?"]}),
        reply_json({"insights": [{"insight": "Bob is stressed by the deadline.", "evidence": [1, 2]}]}),
        reply_json({"insights": [{"insight": "Ann grows tomatoes and herbs.", "evidence": [1]}]})]


@pytest.fixture
def db(tmp_path, monkeypatch, fake_openai):
    p = tmp_path / "mem.db"
    build_store(p).close()
    monkeypatch.setenv("MEMVIZ_LLM_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("MEMVIZ_LLM_MODEL", "fake-chat")
    monkeypatch.setenv("MEMVIZ_LLM_API_KEY", "cli-key")
    return str(p)


def reflections(path):
    with ms.open(path, read_only=True) as s:
        return [r[0] for r in s.conn.execute("SELECT content FROM memories WHERE kind='reflection' ORDER BY rowid")]


def test_dry_run_writes_nothing(db, fake_openai, capsys):
    fake_openai.push(*GOOD)
    assert main(["reflect", db, "--agent", "ann", "--dry-run", "--questions", "2"]) == 0
    out = capsys.readouterr().out
    assert "agent 'ann': importance" in out and "threshold 100" in out
    assert "[1] question: How is Bob coping?" in out and "reflection: Bob is stressed by the deadline." in out
    assert "evidence ann-" in out and "dry run: 2 reflections proposed, nothing written" in out
    assert reflections(db) == []
    assert fake_openai.requests[-1]["authorization"] == "Bearer cli-key"


def test_interactive_accept_one_reject_other(db, fake_openai, capsys, monkeypatch):
    fake_openai.push(*GOOD)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\ny\n"))
    assert main(["reflect", db, "--agent", "ann", "--questions", "2"]) == 0
    assert "wrote 1 reflection: " in capsys.readouterr().out
    assert reflections(db) == ["Ann grows tomatoes and herbs."]


def test_yes_accepts_all(db, fake_openai, capsys):
    fake_openai.push(*GOOD)
    assert main(["reflect", db, "--agent", "ann", "--questions", "2", "--yes"]) == 0
    assert reflections(db) == ["Bob is stressed by the deadline.", "Ann grows tomatoes and herbs."]
    capsys.readouterr()
    assert main(["reflect", db, "--agent", "ann", "--status"]) == 0
    assert "importance 0 of threshold 100" in capsys.readouterr().out


def test_llm_failure_is_one_line_and_writes_nothing(db, fake_openai, capsys):
    fake_openai.push(reply_text('{"questions": ["a', finish_reason="length"))
    assert main(["reflect", db, "--agent", "ann", "--yes"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("memviz: error: The model's reply was cut off") and "Traceback" not in err
    assert last.endswith("Nothing was written.")
    fake_openai.push(*[reply_error(500)] * 3)
    assert main(["reflect", db, "--agent", "ann", "--yes", "--retries", "0"]) == 2
    assert "server error (500)" in capsys.readouterr().err
    assert reflections(db) == []


def test_several_agents_need_a_choice(db, capsys):
    assert main(["reflect", db, "--dry-run"]) == 2
    assert "several agents (ann, bob)" in capsys.readouterr().err


def test_test_connection(db, fake_openai, capsys):
    fake_openai.push(reply_text("OK"))
    assert main(["reflect", "--test-connection"]) == 0
    assert "the model 'fake-chat' answers" in capsys.readouterr().out
    assert main(["reflect", "--test-connection", "--model", "other"]) == 1
    assert "does not list the model 'other'" in capsys.readouterr().out


@pytest.mark.slow
def test_reflect_runs_as_a_process(db, fake_openai):
    fake_openai.push(*GOOD)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "memviz.cli", "reflect", db, "--agent", "ann", "--questions", "2"],
                       input="y\nn\n", capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[1/6] Reading recent memories" in r.stderr
    assert "INFO" not in r.stderr  # no library chatter (wordllama used to turn on INFO logging)
    assert reflections(db) == ["Bob is stressed by the deadline."]


@pytest.mark.slow
def test_ctrl_c_cancels_the_reflection_and_writes_nothing(db, fake_openai):
    """Ctrl-C while the LLM is thinking: the task is cancelled, the wait ends at once, the
    command says nothing was written and exits 130 (no traceback)."""
    import signal
    fake_openai.push(slow(60, GOOD[0]))
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.Popen([sys.executable, "-m", "memviz.cli", "reflect", db, "--agent", "ann", "--yes"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    for line in p.stderr:   # wait until the question is being asked (the reply takes 60 s)
        lines.append(line)
        if "Asking fake-chat for questions" in line:
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    err = "".join(lines) + err
    assert p.returncode == 130, err
    assert "Cancelled; nothing was written." in err and "Traceback" not in err
    assert reflections(db) == []


def test_consolidate_cli(tmp_path, capsys, monkeypatch):
    p = str(tmp_path / "c.db")
    s = ms.create(p)
    s.insert_memories([dict(id="old", kind="fact", content="Ann lived in Oslo.", created_at="2020-01-01"),
                       dict(id="keep", kind="fact", content="Ann had a cat.", created_at="2020-01-01"),
                       dict(id="safe", kind="fact", content="Ann's birthday.", created_at="2020-01-01", protected=1),
                       dict(id="new", kind="fact", content="Ann likes tea.", created_at="2026-05-01")])
    s.close()
    assert main(["consolidate", p, "--as-of", "2026-05-02", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[x] prune old" in out and "[x] prune keep" in out and "safe" not in out
    assert "dry run: nothing written" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    assert main(["consolidate", p, "--as-of", "2026-05-02"]) == 1
    with ms.open(p, read_only=True) as s:
        assert s.get("old")["confidence"] == 1.0
    # a --keep naming no memory (a typo, a shortened id) is refused before anything is written: it
    # was ignored, and the memory meant was soft-deleted
    assert main(["consolidate", p, "--as-of", "2026-05-02", "--keep", "kee", "--yes"]) == 2
    assert "--keep 'kee': no memory with that id in this store" in capsys.readouterr().err
    with ms.open(p, read_only=True) as s:
        assert s.get("keep")["valid_until"] is None and s.get("old")["confidence"] == 1.0
    assert main(["consolidate", p, "--as-of", "2026-05-02", "--keep", "keep", "--yes"]) == 0
    assert "decayed 3, soft-deleted 1, skipped 0" in capsys.readouterr().out
    with ms.open(p, read_only=True) as s:
        assert s.get("old")["valid_until"] is not None and s.get("keep")["valid_until"] is None
        assert s.get("safe")["confidence"] == 1.0 and s.get("new")["confidence"] < 1.0
