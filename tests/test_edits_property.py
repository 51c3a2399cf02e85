"""Random sequences of edits, undos and redos against a plain in-memory model of the store."""
import shutil
import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import memviz.store as ms
from memviz.edits import Confirm, Correct, History, Restore, SetImportance, SetTags, SoftDelete, Unprotect, consistency_problems
from memviz.embed import LOCAL_MODEL, default_embedder

SEED_TEXTS = ["the cat sleeps on the sofa", "rent is due on the first", "Dana speaks Portuguese"]
_VECS = {}


def _seed_vectors():
    if not _VECS:
        _VECS["v"] = default_embedder().embed(SEED_TEXTS)
    return _VECS["v"]


class EditingMachine(RuleBasedStateMachine):
    """The model: id -> fields, and undo/redo stacks of deltas {id: (before, after)}."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="memviz-prop-")
        self.store = ms.create(self.dir + "/p.db")
        self.store.insert_memories([
            {"id": f"p{i}", "kind": "fact", "content": t, "embedding": v, "embedding_model": LOCAL_MODEL}
            for i, (t, v) in enumerate(zip(SEED_TEXTS, _seed_vectors()))])
        self.history = History(self.store)
        self.embedder = default_embedder()
        self.model = {f"p{i}": {"content": t, "live": True, "protected": False, "decay_rate": 0.1, "importance": 5.0,
                                "tags": []} for i, t in enumerate(SEED_TEXTS)}
        self.rate_before_confirm = {}
        self.undo_stack, self.redo_stack = [], []
        self.counter = 0

    def teardown(self):
        try:
            assert consistency_problems(self.store) == []
        finally:
            self.store.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------ model helpers
    def pick(self, i):
        ids = sorted(self.model)
        return ids[i % len(ids)]

    def apply_delta(self, step, side):
        kind, delta = step
        for mid, pair in delta.items():
            if kind == "confirm" and side == 1 and self.model[mid]["decay_rate"]:
                # Unprotect later gives back the rate a confirm (or its redo) replaced
                self.rate_before_confirm[mid] = self.model[mid]["decay_rate"]
            self.model[mid].update(pair[side])

    def push(self, kind, delta):
        step = (kind, delta)
        self.apply_delta(step, 1)
        self.undo_stack.append(step)
        self.redo_stack.clear()

    def expect(self, action, delta):
        """Run `action`; `delta` None means the model says it must be refused."""
        try:
            self.history.perform(action)
        except ms.ValidationError:
            assert delta is None, f"{action.label} was refused"
            return False
        assert delta is not None, f"{action.label} should have been refused"
        self.push(action.name, delta)
        return True

    # ------------------------------------------------------------ rules
    @rule(i=st.integers(0, 50), include=st.booleans())
    def soft_delete(self, i, include):
        mid = self.pick(i)
        m = self.model[mid]
        ok = m["live"] and (include or not m["protected"])  # a protected memory only when told to include it
        self.expect(SoftDelete(mid, shown_rows=self.store.get(mid), include_protected=include),
                    {mid: ({"live": True}, {"live": False})} if ok else None)

    @rule(i=st.integers(0, 50))
    def restore(self, i):
        mid = self.pick(i)
        live = self.model[mid]["live"]
        self.expect(Restore(mid), None if live else {mid: ({"live": False}, {"live": True})})

    @rule(i=st.integers(0, 50))
    def confirm(self, i):
        mid = self.pick(i)
        m = self.model[mid]
        done = m["protected"] and m["decay_rate"] == 0
        self.expect(Confirm(mid), None if done else {mid: ({"protected": m["protected"], "decay_rate": m["decay_rate"]},
                                                           {"protected": True, "decay_rate": 0.0})})

    @rule(i=st.integers(0, 50))
    def unprotect(self, i):
        mid = self.pick(i)
        m = self.model[mid]
        rate = m["decay_rate"] or self.rate_before_confirm.get(mid, 0.1)
        self.expect(Unprotect(mid), {mid: ({"protected": True, "decay_rate": m["decay_rate"]},
                                           {"protected": False, "decay_rate": rate})} if m["protected"] else None)

    @rule(ids=st.lists(st.integers(0, 50), min_size=1, max_size=3), value=st.sampled_from([1.0, 2.5, 5.0, 9.0]))
    def set_importance(self, ids, value):
        mids = list(dict.fromkeys(self.pick(i) for i in ids))
        delta = {m: ({"importance": self.model[m]["importance"]}, {"importance": value})
                 for m in mids if self.model[m]["importance"] != value}
        self.expect(SetImportance(mids, value), delta or None)

    @rule(i=st.integers(0, 50), tags=st.lists(st.sampled_from(["home", "work", "todo"]), max_size=3, unique=True))
    def set_tags(self, i, tags):
        mid = self.pick(i)
        old = self.model[mid]["tags"]
        self.expect(SetTags(mid, tags), None if tags == old else {mid: ({"tags": old}, {"tags": tags})})

    @rule(i=st.integers(0, 50), word=st.sampled_from(["now", "actually", "since May", "corrected"]))
    def correct(self, i, word):
        mid = self.pick(i)
        m = self.model[mid]
        self.counter += 1
        text = f"{m['content'].split(' |')[0]} | {word} {self.counter}"
        action = Correct(mid, text, embedder=self.embedder, shown_rows=self.store.get(mid))
        if not m["live"]:
            self.expect(action, None)
            return
        self.history.perform(action)
        new = action.new_id
        self.model[new] = {**{k: m[k] for k in ("protected", "decay_rate", "importance", "tags")},
                           "content": text, "live": False}
        self.push("correct", {new: ({"live": False}, {"live": True}), mid: ({"live": True}, {"live": False})})

    @rule()
    def undo(self):
        out = self.history.undo()
        assert (out is None) == (not self.undo_stack)
        if self.undo_stack:
            delta = self.undo_stack.pop()
            self.apply_delta(delta, 0)
            self.redo_stack.append(delta)

    @precondition(lambda self: self.redo_stack)
    @rule()
    def redo(self):
        self.history.redo()
        delta = self.redo_stack.pop()
        self.apply_delta(delta, 1)
        self.undo_stack.append(delta)

    # ------------------------------------------------------------ the store equals the model
    @invariant()
    def store_matches_model(self):
        rows = {r["id"]: r for r in self.store.get_many(list(self.model))}
        assert self.store.counts()["total"] == len(self.model)
        for mid, m in self.model.items():
            r = rows[mid]
            got = {"content": r["content"], "live": r["valid_until"] is None, "protected": r["protected"],
                   "decay_rate": r["decay_rate"], "importance": r["importance"], "tags": r["tags"]}
            assert got == m, mid
        assert self.history.can_undo == bool(self.undo_stack)
        assert self.history.can_redo == bool(self.redo_stack)


TestEditing = EditingMachine.TestCase
TestEditing.settings = settings(max_examples=30, stateful_step_count=20, deadline=None,
                                suppress_health_check=[HealthCheck.too_slow])
