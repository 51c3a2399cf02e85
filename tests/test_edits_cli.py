"""`memviz edit` from the shell, and the retired view for memories the agent retired itself."""
import json

import pytest
from conftest import unit_vectors

from memviz.cli import main
from memviz.edits import retired
from memviz.store.connection import connect


@pytest.fixture
def small(store):
    store.insert_memories([{"id": f"k{i}", "kind": "fact", "content": f"remote fact number {i}", "embedding": v,
                            "embedding_model": "remote-model"} for i, v in enumerate(unit_vectors(4, 8))])
    return store


def test_cli_actions_history_and_retired(small, capsys):
    db = str(small.path)
    assert main(["edit", db, "delete", "k1", "k2", "--note", "stale"]) == 0
    assert "Deleted 2 memories" in capsys.readouterr().out
    assert main(["edit", db, "restore", "k2"]) == 0
    assert main(["edit", db, "importance", "7", "k0"]) == 0
    assert main(["edit", db, "tags", "k0", "--add", "home", "--add", "todo"]) == 0
    assert main(["edit", db, "confirm", "k3"]) == 0
    assert main(["edit", db, "correct", "k0", "remote", "fact", "corrected"]) == 0
    out = capsys.readouterr().out
    assert "Corrected k0" in out and "warning:" in out and "needs" in out  # remote-model cannot be reached here
    named = [ln.split()[2] for ln in out.splitlines() if ln.startswith("new memory: ")]
    assert len(named) == 1 and small.get(named[0])["content"] == "remote fact corrected", out  # whole, usable in the next command
    assert small.get("k0")["importance"] == 7 and small.get("k0")["tags"] == ["home", "todo"]
    assert small.get("k3")["protected"] is True and small.get("k2")["valid_until"] is None
    assert main(["edit", db, "retired", "--json"]) == 0
    items = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(items) == {"k0", "k1"} and items["k1"]["why"] == "deleted" and items["k1"]["note"] == "stale"
    assert items["k0"]["why"].startswith("corrected: superseded by ")
    assert main(["edit", db, "history", "k0"]) == 0
    assert [ln.split()[2] for ln in capsys.readouterr().out.splitlines()] == [
        "insert", "set_importance", "set_tags", "supersede"]


def test_cli_refusals_are_one_line(small, capsys):
    db = str(small.path)
    assert main(["edit", db, "restore", "k0"]) == 2
    assert "not retired" in capsys.readouterr().err
    assert main(["edit", db, "importance", "12", "k0"]) == 2
    assert "outside 0-10" in capsys.readouterr().err
    assert main(["edit", db, "tags", "k0"]) == 2
    assert "--set, --add or --remove" in capsys.readouterr().err
    assert main(["edit", db, "confirm", "k0", "--read-only"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert small.history("k0")[-1]["action"] == "insert"
    # a history of an id the store does not hold says so (it printed nothing and exited 0)
    assert main(["edit", db, "history", "k9"]) == 2
    assert "No memory with id 'k9' in this store" in capsys.readouterr().err
    small.insert_memories([{"id": "quiet", "kind": "fact", "content": "written by the agent"}], audit=False)
    assert main(["edit", db, "history", "quiet"]) == 0
    assert capsys.readouterr().out.strip() == "quiet: nothing in the audit log (no edit of it recorded)"


def test_retired_view_names_the_agents_own_retirements(small):
    agent = connect(str(small.path))
    agent.execute("UPDATE memories SET valid_until = 100 WHERE id = 'k1'")
    agent.execute("UPDATE memories SET valid_until = 200 WHERE id = 'k2'")
    agent.execute("INSERT INTO memories(id, kind, content, event_time, created_at, attributes) "
                  "VALUES ('k9', 'fact', 'newer', 1, 1, '{\"supersedes\": \"k2\"}')")
    agent.close()
    view = {r.id: r for r in retired(small)}
    assert view["k1"].why == "retired by the agent (no memviz audit entry)" and view["k1"].action is None
    assert view["k2"].why == "corrected: superseded by k9 (by the agent)" and view["k2"].superseded_by == "k9"
    assert [r.id for r in retired(small)] == ["k2", "k1"]  # most recently retired first
    assert [r.id for r in retired(small, limit=1)] == ["k2"]


def test_cli_delete_refuses_protected_memories_unless_included(small, capsys):
    db = str(small.path)
    assert main(["edit", db, "confirm", "k1", "k2"]) == 0
    capsys.readouterr()
    assert main(["edit", db, "delete", "k0", "k1", "k2"]) == 2
    err = capsys.readouterr().err
    assert "2 of the 3 memories chosen are protected (k1, k2)" in err and "--include-protected" in err
    assert all(small.get(i)["valid_until"] is None for i in ("k0", "k1", "k2"))  # nothing written, not even k0
    assert small.history("k0")[-1]["action"] == "insert"
    assert main(["edit", db, "delete", "k1", "--include-protected", "--note", "really"]) == 0
    assert "Deleted 1 memory" in capsys.readouterr().out
    assert small.get("k1")["valid_until"] is not None and small.get("k1")["protected"] is True
