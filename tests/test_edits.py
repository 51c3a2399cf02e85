"""Every edit action with its undo and redo, headless, on a real store embedded by the local model."""
import os

import numpy as np
import pytest
from conftest import unit_vectors

import memviz.store as ms
from memviz.edits import (
    Confirm,
    Correct,
    EditKept,
    History,
    ProtectedError,
    Restore,
    SetImportance,
    SetTags,
    SoftDelete,
    Unprotect,
    consistency_problems,
    retired,
    shown,
)
from memviz.edits.verify import audit_problems, vector_problems
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.store.changes import ChangeWatcher
from memviz.store.connection import connect
from memviz.store.errors import ConflictError, ReadOnlyError, StoreError, ValidationError
from memviz.store.vectors import vec_table

TEXTS = [
    "Alice prefers green tea in the morning",
    "The project Alpha deadline is March 3",
    "Bob's dog is called Rex",
    "The office wifi password changes every month",
    "Carol moved to Berlin in 2023",
]


@pytest.fixture
def filled(store):
    vecs = default_embedder().embed(TEXTS)
    ids = store.insert_memories([
        {"id": f"m{i}", "kind": "fact", "agent": "helper", "content": t, "embedding": v, "embedding_model": LOCAL_MODEL,
         "importance": 5, "source_ids": ["src-1"] if i == 1 else [], "tags": ["seed"]}
        for i, (t, v) in enumerate(zip(TEXTS, vecs))])
    assert ids == [f"m{i}" for i in range(len(TEXTS))]
    return store


def actions_of(store, mid):
    return [e["action"] for e in store.history(mid)]


def test_confirm_undo_redo_each_audited(filled):
    h = History(filled)
    out = h.perform(Confirm("m0", shown_rows=filled.get("m0")))
    row = filled.get("m0")
    assert row["protected"] is True and row["decay_rate"] == 0
    assert out.ids == ["m0"] and h.undo_text.startswith("Confirm")
    h.undo()
    row = filled.get("m0")
    assert row["protected"] is False and row["decay_rate"] == pytest.approx(0.1)
    h.redo()
    assert filled.get("m0")["protected"] is True
    assert actions_of(filled, "m0") == ["insert", "confirm", "undo:confirm", "redo:confirm"]
    undo_entry = filled.history("m0")[2]
    assert undo_entry["before"] == {"protected": 1, "decay_rate": 0.0}
    assert undo_entry["after"] == {"protected": 1 - 1, "decay_rate": 0.1}
    assert consistency_problems(filled) == []


def test_unprotect_gives_back_the_decay_rate_before_confirm(filled):
    filled.update_fields("m1", {"decay_rate": 0.25})
    h = History(filled)
    h.perform(Confirm("m1"))
    h.perform(Unprotect("m1"))
    row = filled.get("m1")
    assert row["protected"] is False and row["decay_rate"] == pytest.approx(0.25)
    with pytest.raises(ValidationError, match="nothing to change"):
        h.perform(Unprotect("m1"))
    h.undo()
    assert filled.get("m1")["protected"] is True and filled.get("m1")["decay_rate"] == 0


def test_soft_delete_refuses_protected_memories_unless_told_to_include_them(filled):
    h = History(filled)
    h.perform(Confirm(["m1", "m2"]))
    with pytest.raises(ProtectedError, match=r"2 of the 3 memories chosen are protected \(m1, m2\)") as e:
        h.perform(SoftDelete(["m0", "m1", "m2"]))
    assert e.value.ids == ["m1", "m2"]
    assert all(filled.get(f"m{i}")["valid_until"] is None for i in range(3)) and len(h.done) == 1  # nothing written
    with pytest.raises(ProtectedError, match="1 memory is protected"):
        h.perform(SoftDelete("m1"))
    h.perform(SoftDelete(["m0", "m1", "m2"], include_protected=True))
    assert all(filled.get(f"m{i}")["valid_until"] is not None for i in range(3))
    h.undo()
    assert all(filled.get(f"m{i}")["valid_until"] is None for i in range(3))
    assert filled.get("m1")["protected"] is True
    h.redo()  # the user's choice to include them stands for the redo
    assert all(filled.get(f"m{i}")["valid_until"] is not None for i in range(3))


def test_soft_delete_restore_and_retired_view(filled):
    h = History(filled)
    h.perform(SoftDelete(["m2", "m3"], note="duplicates"))
    assert filled.get("m2")["valid_until"] is not None and filled.get("m3")["valid_until"] is not None
    view = {r.id: r for r in retired(filled)}
    assert set(view) == {"m2", "m3"}
    assert view["m2"].why == "deleted" and view["m2"].note == "duplicates" and view["m2"].actor == "memviz"
    assert view["m2"].content == TEXTS[2] and view["m2"].retired_at == filled.get("m2")["valid_until"]
    with pytest.raises(ValidationError, match="already retired"):
        h.perform(SoftDelete("m2"))
    h.perform(Restore("m2"))
    assert filled.get("m2")["valid_until"] is None
    assert [r.id for r in retired(filled)] == ["m3"]
    with pytest.raises(ValidationError, match="not retired"):
        h.perform(Restore("m2"))
    h.undo()  # the restore
    assert filled.get("m2")["valid_until"] is not None
    assert {r.id: r.why for r in retired(filled)}["m2"] == "deleted (its restore was undone)"
    h.undo()  # the soft-delete of both, in one step
    assert retired(filled) == []
    h.redo()
    assert {r.id for r in retired(filled)} == {"m2", "m3"}
    assert filled.counts()["total"] == len(TEXTS)  # nothing physically deleted
    assert consistency_problems(filled) == []


def test_importance_and_tags(filled):
    h = History(filled)
    h.perform(SetImportance(["m0", "m1"], 8.5))
    assert [filled.get(i)["importance"] for i in ("m0", "m1")] == [8.5, 8.5]
    h.perform(SetTags("m0", add=["family", "tea"], remove=["seed"]))
    assert filled.get("m0")["tags"] == ["family", "tea"]
    h.perform(SetTags(["m0", "m1"], "a, b ,a"))
    assert filled.get("m0")["tags"] == ["a", "b"] and filled.get("m1")["tags"] == ["a", "b"]
    h.undo()
    assert filled.get("m0")["tags"] == ["family", "tea"] and filled.get("m1")["tags"] == ["seed"]
    h.undo()
    h.undo()
    assert filled.get("m0")["importance"] == 5 and filled.get("m0")["tags"] == ["seed"]
    assert not h.can_undo and h.can_redo
    with pytest.raises(ValidationError, match="outside 0-10"):
        SetImportance("m0", 11)
    with pytest.raises(ValidationError, match="number"):
        SetImportance("m0", "high")
    with pytest.raises(ValidationError, match="nothing to change"):
        h.perform(SetImportance("m0", 5))
    assert h.can_redo, "a refused edit does not clear the redo stack"
    h.perform(SetImportance("m0", 2))
    assert not h.can_redo, "a new edit clears the redo stack"
    assert consistency_problems(filled) == []


def test_correct_supersedes_with_a_new_embedding_and_undo_redo(filled):
    h = History(filled)
    text = "Alice prefers black coffee in the morning"
    act = Correct("m0", text, shown_rows=filled.get("m0"))
    out = h.perform(act)
    assert out.warning is None
    old, new = filled.get("m0"), filled.get(act.new_id)
    assert old["valid_until"] is not None and new["valid_until"] is None
    assert new["content"] == text and new["attributes"]["supersedes"] == "m0"
    assert "needs_embedding" not in new["attributes"]
    assert (new["kind"], new["agent"], new["source_ids"], new["tags"]) == ("fact", "helper", [], ["seed"])
    vec = np.frombuffer(new["embedding"], dtype="<f4")
    assert new["embedding_model"] == LOCAL_MODEL
    assert np.allclose(vec, default_embedder().embed_one(text), atol=1e-6)
    assert filled.vec_search(default_embedder().embed_one(text), k=1)[0][0] == act.new_id
    assert [i for i, _ in filled.fts_search("coffee")] == [act.new_id]
    assert retired(filled)[0].why == f"corrected: superseded by {act.new_id}"
    assert actions_of(filled, "m0")[-1] == "supersede" and actions_of(filled, act.new_id) == ["insert"]

    h.undo()
    assert filled.get("m0")["valid_until"] is None and filled.get(act.new_id)["valid_until"] is not None
    assert [r.id for r in retired(filled)] == [act.new_id]
    assert retired(filled)[0].why.startswith("correction withdrawn")
    h.redo()
    assert filled.get("m0")["valid_until"] is not None and filled.get(act.new_id)["valid_until"] is None
    assert filled.counts()["total"] == len(TEXTS) + 1, "redo revives the same new row"
    assert actions_of(filled, act.new_id) == ["insert", "undo:correct", "redo:correct"]
    assert consistency_problems(filled) == []
    with pytest.raises(ValidationError, match="retired"):
        h.perform(Correct("m0", "again"))


def test_correct_without_the_model_marks_needs_embedding_and_says_so(store, monkeypatch):
    for var in ("MEMVIZ_EMBED_BASE_URL", "MEMVIZ_EMBED_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    store.insert_memories([{"id": f"r{i}", "kind": "fact", "content": f"remote fact {i}", "embedding": v,
                            "embedding_model": "text-embedding-3-small"} for i, v in enumerate(unit_vectors(3, 8))])
    h = History(store)
    act = Correct("r1", "remote fact one, corrected")
    out = h.perform(act)
    assert out.warning and "needs" in out.warning and "OPENAI" in out.warning.upper()
    new = store.get(act.new_id)
    assert new["attributes"]["needs_embedding"] is True and new["embedding"] is None and not new["embedding_model"]
    assert [r[0] for r in store.conn.execute(f"SELECT memory_id FROM {vec_table(8)}")] == ["r0", "r1", "r2"]
    assert consistency_problems(store) == []


def test_correct_refuses_an_embedder_of_another_model(filled):
    class Other:
        model, dim = "other-model", 256

        def embed_one(self, text):  # never called: the mismatch is caught first
            raise AssertionError
    act = Correct("m1", "The project Alpha deadline moved to April 1", embedder=Other())
    out = History(filled).perform(act)
    assert "other-model" in out.warning and filled.get(act.new_id)["attributes"]["needs_embedding"] is True


def test_conflict_carries_both_versions_and_writes_nothing(filled):
    h = History(filled)
    row = filled.get("m3")
    agent = connect(str(filled.path))
    agent.execute("UPDATE memories SET content = 'The office wifi password is on the fridge' WHERE id = 'm3'")
    act = SoftDelete("m3", shown_rows=row)
    with pytest.raises(ConflictError) as e:
        h.perform(act)
    assert e.value.expected["content"] == TEXTS[3]
    assert e.value.current["content"] == "The office wifi password is on the fridge"
    assert e.value.action is act and len(h.pending) == 0
    assert filled.get("m3")["valid_until"] is None and actions_of(filled, "m3") == ["insert"]
    # the user keeps the agent's version and applies the edit to it
    h.perform(act.retarget(filled.get("m3")))
    assert filled.get("m3")["valid_until"] is not None
    assert filled.get("m3")["content"] == "The office wifi password is on the fridge"
    # recall counters bumped by the agent are no conflict
    row = filled.get("m4")
    agent.execute("UPDATE memories SET access_count = access_count + 1, last_accessed = 5 WHERE id = 'm4'")
    h.perform(SetImportance("m4", 9, shown_rows=row))
    agent.close()


def test_undo_after_the_agent_changed_the_row_is_a_conflict(filled):
    h = History(filled)
    h.perform(SetImportance("m2", 9))
    agent = connect(str(filled.path))
    agent.execute("UPDATE memories SET importance = 3 WHERE id = 'm2'")
    agent.close()
    with pytest.raises(ConflictError, match="changed by someone else"):
        h.undo()
    assert filled.get("m2")["importance"] == 3 and h.can_undo and h.undo_text.startswith("Set importance 9")


def test_correct_conflict_when_the_text_changed(filled):
    row = filled.get("m4")
    filled.update_fields("m4", {"content": "Carol moved to Munich in 2023"})
    with pytest.raises(ConflictError) as e:
        History(filled).perform(Correct("m4", "Carol moved to Hamburg in 2023", shown_rows=row))
    assert e.value.current["content"] == "Carol moved to Munich in 2023" and e.value.expected["content"] == TEXTS[4]
    assert filled.counts()["total"] == len(TEXTS)


def test_read_only_store_refuses_with_the_reason(filled):
    path = str(filled.path)
    filled.close()
    with ms.open(path, read_only=True) as ro:
        h = History(ro)
        with pytest.raises(ReadOnlyError, match="--read-only"):
            h.perform(Confirm("m0"))
        assert len(h.pending) == 0 and not h.can_undo
        assert ro.get("m0")["protected"] is False


def test_busy_edit_is_kept_and_retried_in_order(filled):
    filled.conn.set_busy_timeout(50)
    h = History(filled, attempts=2, pause=0.01)
    seen = []
    h.listeners.append(lambda hist: seen.append(len(hist.pending)))
    agent = connect(str(filled.path))
    agent.execute("BEGIN IMMEDIATE")
    agent.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('a1', 'episode', 'agent', 1, 1)")
    with pytest.raises(EditKept, match="busy.*kept.*retry") as e:
        h.perform(SetImportance("m0", 7))
    assert isinstance(e.value, ms.BusyError) and len(e.value.kept) == 1
    with pytest.raises(EditKept) as e:
        h.perform(SetImportance("m0", 1))
    assert len(h.pending) == 2 and len(e.value.kept) == 2 and not h.can_undo
    with pytest.raises(EditKept):
        h.undo()  # pending edits go first, and they are still held up
    assert filled.get("m0")["importance"] == 5
    agent.execute("COMMIT")
    out = h.retry()
    assert "importance" in out.text.lower() and len(h.pending) == 0
    assert filled.get("m0")["importance"] == 1
    assert actions_of(filled, "m0") == ["insert", "set_importance", "set_importance"]
    assert [a.label for a in h.done] == ["Set importance 7 m0", "Set importance 1 m0"]
    assert seen[-1] == 0 and 2 in seen
    # discarding is only ever explicit
    agent.execute("BEGIN IMMEDIATE")
    with pytest.raises(EditKept):
        h.perform(Confirm("m1"))
    agent.execute("ROLLBACK")
    assert [a.label for a in h.discard_pending()] == ["Confirm m1"]
    assert filled.get("m1")["protected"] is False
    agent.close()


def test_vectors_are_replaced_by_delete_then_insert(filled):
    dim = 256
    table = vec_table(dim)
    new_vec = default_embedder().embed_one("completely different: tax return forms")
    filled.update_fields("m2", {"embedding": new_vec, "embedding_model": LOCAL_MODEL})
    rows = filled.conn.execute(f"SELECT memory_id, embedding FROM {table} WHERE memory_id = 'm2'").fetchall()
    assert len(rows) == 1 and bytes(rows[0][1]) == new_vec.astype("<f4").tobytes()
    assert filled.vec_search(new_vec, k=1)[0][0] == "m2"
    # the agent's own plain-SQL update goes through the same triggers
    agent = connect(str(filled.path))
    other = unit_vectors(1, dim, seed=3)[0]
    agent.execute("UPDATE memories SET embedding = ? WHERE id = 'm3'", (other.astype("<f4").tobytes(),))
    agent.execute("UPDATE memories SET embedding = NULL WHERE id = 'm4'")
    agent.close()
    n = filled.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    assert n == len(TEXTS) - 1
    assert filled.vec_search(other, k=1)[0][0] == "m3"
    assert vector_problems(filled) == []


def test_change_watcher_sees_other_processes_only(filled):
    w = ChangeWatcher(filled)
    assert w.poll() is None
    History(filled).perform(Confirm("m0"))
    assert w.poll() is None, "our own writes do not count as outside changes"
    agent = connect(str(filled.path))
    agent.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('a9', 'episode', 'hi', 1, 1)")
    change = w.poll()
    assert change is not None and change.new_ids == ["a9"]
    assert w.poll() is None
    agent.execute("UPDATE memories SET importance = 2 WHERE id = 'm1'")
    change = w.poll()
    assert change is not None and change.new_ids == []
    agent.close()


def test_verifier_finds_changes_behind_the_audit_log(filled):
    History(filled).perform(SetImportance("m1", 9))
    assert audit_problems(filled) == []
    agent = connect(str(filled.path))
    agent.execute("UPDATE memories SET importance = 4 WHERE id = 'm1'")
    agent.execute(f"DELETE FROM {vec_table(256)} WHERE memory_id = 'm0'")
    agent.close()
    assert any("m1: importance" in p for p in audit_problems(filled))
    assert any("lacks the vector of m0" in p for p in vector_problems(filled))


def test_state_guards(filled):
    act = Confirm("m0")
    with pytest.raises(StoreError, match="not done"):
        act.revert(filled)
    act.apply(filled)
    with pytest.raises(StoreError, match="already done"):
        act.apply(filled)
    with pytest.raises(StoreError, match="No memory"):
        History(filled).perform(SoftDelete("nope"))
    with pytest.raises(ValidationError, match="empty"):
        Correct("m0", "   ")
    assert shown(filled.get("m0"))["protected"] is True and "access_count" not in shown(filled.get("m0"))


def test_edits_keep_a_foreign_journal_mode(tmp_path):
    """An agent's file in rollback-journal mode stays so: memviz never switches it to WAL."""
    path = str(tmp_path / "agent.db")
    ms.create(path).close()
    raw = connect(path)
    raw.execute("PRAGMA journal_mode=DELETE")
    raw.execute("INSERT INTO memories(id, kind, content, event_time, created_at) VALUES ('j1', 'fact', 'journal', 1, 1)")
    raw.close()
    with ms.open(path) as s:
        h = History(s)
        h.perform(Confirm("j1"))
        h.perform(Correct("j1", "journal mode stays delete"))
        h.undo()
        h.redo()
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert consistency_problems(s) == []
    assert not os.path.exists(path + "-wal")


def test_shown_ids_are_readable():
    from memviz.edits import shown_id
    assert shown_id("3f2a9c1e0b7d4e6f8a9b0c1d2e3f4a5b") == "3f2a9c1e"  # generated: its start tells it apart
    assert shown_id("38cfd99c-1c08-4640-a896-15f99e665ef2@memories.user0") == "38cfd99c@memories.user0"
    assert shown_id("k1@memories.alice") == "k1@memories.alice"  # a LangGraph key@namespace, whole
    assert shown_id("user_preference_theme_dark@prefs") == "user_preference_…@prefs"
    assert shown_id("n5@notes") == "n5@notes" and shown_id("k0") == "k0"
