"""As of T against the store as it really was at T (captured step by step), and diffs of known
changes between moments, stores and agents. The clock is a counter (time.time patched) so each
write has its own second and every checkpoint falls between writes."""
import time

import numpy as np
import pytest

import memviz.store as ms
from memviz.context import Timeline, diff_agents, diff_moments, diff_stores, load_texts
from memviz.edits import Confirm, Correct, History, SetImportance, SetTags, SoftDelete

START = 1_700_000_000.0
FIELDS = ("importance", "protected", "valid_until", "decay_rate", "confidence", "kind", "agent", "event_time",
          "created_at")


@pytest.fixture
def clock(monkeypatch):
    now = [START]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def capture(store):
    """What the store holds now, by id: every array field, text and tags."""
    a = store.arrays()
    content, tags = load_texts(store, a)
    return {a.ids[i]: {**{f: getattr(a, f)[i] for f in FIELDS}, "content": content[i], "tags": tags[i]}
            for i in range(len(a))}


def as_seen(view, content, tags):
    a = view.arrays
    out = {}
    for i in np.flatnonzero(view.visible).tolist():
        out[a.ids[i]] = {**{f: getattr(a, f)[i] for f in FIELDS}, "content": view.content.get(i, content[i]),
                         "tags": view.tags.get(i, tags[i])}
    return out


def same(x, y):
    assert set(x) == set(y)
    for mid in x:
        for k, v in x[mid].items():
            w = y[mid][k]
            if isinstance(v, float) and np.isnan(v):
                assert isinstance(w, float) and np.isnan(w), (mid, k, v, w)
            else:
                assert v == w, (mid, k, v, w)


@pytest.fixture
def lived(store, clock, tmp_path):
    """A store that went through inserts, edits, a correction, an undo, a reflection and an
    agent's audited write; with its state and a copy of the file at each checkpoint."""
    hist = History(store)
    checkpoints = []

    def step(fn):
        clock[0] += 100
        fn()
        clock[0] += 50
        copy = str(tmp_path / f"at{len(checkpoints)}.db")
        store.conn.execute("VACUUM INTO ?", (copy,))
        checkpoints.append((clock[0], capture(store), copy))

    base = {"kind": "fact", "agent": "helper", "importance": 5}
    step(lambda: store.insert_memories([{**base, "id": "m1", "content": "Alice drinks green tea"},
                                        {**base, "id": "m2", "content": "Bob owns a dog called Rex"},
                                        {**base, "id": "m3", "content": "The office is on floor 3"}]))
    step(lambda: hist.perform(SetImportance(["m1"], 9)))
    step(lambda: hist.perform(Confirm(["m2"])))
    step(lambda: hist.perform(SetTags(["m3"], ["office", "place"])))
    step(lambda: store.insert_memories([{**base, "id": "m4", "content": "Carol moved to Berlin"}]))
    step(lambda: hist.perform(Correct("m1", "Alice drinks black coffee now")))
    step(lambda: hist.perform(SoftDelete(["m2"], include_protected=True)))  # m2 is protected: on purpose
    step(lambda: hist.undo())
    step(lambda: hist.perform(SoftDelete(["m3"])))
    step(lambda: store.update_fields("m4", {"importance": 2}, actor="agent"))
    step(lambda: store.insert_memories([{**base, "id": "r1", "kind": "reflection", "content": "Bob and Carol are friends",
                                         "source_ids": ["m2", "m4"]}]))
    step(lambda: store.update_fields("m4", {"content": "Carol moved to Munich"}, actor="agent"))
    return store, checkpoints


def test_as_of_each_checkpoint_equals_the_store_then(lived):
    store, checkpoints = lived
    arrays = store.arrays(preview=240)
    content, tags = load_texts(store, arrays)
    timeline = Timeline(store, arrays)
    assert not timeline.at(START).visible.any()  # before the first write: nothing
    for T, truth, _ in checkpoints:
        same(as_seen(timeline.at(T), content, tags), truth)
    # the store itself was not touched
    same(capture(store), checkpoints[-1][1])


def test_as_of_shows_later_changes_as_they_were(lived):
    store, checkpoints = lived
    arrays = store.arrays()
    timeline = Timeline(store, arrays)
    T_tags = checkpoints[3][0]   # after SetTags, before the correction and the deletes
    view = timeline.at(T_tags)
    i1, i3 = arrays.index_of("m1"), arrays.index_of("m3")
    assert np.isnan(view.arrays.valid_until[i1]) and not np.isnan(arrays.valid_until[i1])  # corrected later
    assert view.live[i3] and not np.isnan(arrays.valid_until[i3])                             # retired later
    assert view.arrays.importance[i1] == 9
    new = [m for m in arrays.ids if m.startswith("m") is False and m != "r1"]
    assert new and not view.visible[arrays.index_of(new[0])]                                  # created later
    assert timeline.at(checkpoints[0][0]).arrays.importance[i1] == 5


def kinds(diff):
    return sorted((c.kind, tuple(c.ids)) for c in diff.changes)


def test_diff_between_moments_lists_the_known_changes(lived):
    store, checkpoints = lived
    arrays = store.arrays()
    timeline = Timeline(store, arrays)
    new_id = next(m for m in arrays.ids if m not in ("m1", "m2", "m3", "m4", "r1"))
    d = diff_moments(store, timeline, checkpoints[0][0], None)
    assert kinds(d) == sorted([
        ("added", ("m4",)), ("corrected", ("m1", new_id)), ("importance", ("m1",)), ("protected", ("m2",)),
        ("reflection", ("r1", "m2", "m4")), ("retired", ("m3",)), ("tags", ("m3",)),
    ])
    corr = next(c for c in d.changes if c.kind == "corrected")
    assert (corr.before, corr.after) == ("Alice drinks green tea", "Alice drinks black coffee now")
    refl = next(c for c in d.changes if c.kind == "reflection")
    assert refl.evidence == ["m2", "m4"]
    tag = next(c for c in d.changes if c.kind == "tags")
    assert (tag.before, tag.after) == ([], ["office", "place"])
    # m2 was deleted and the delete undone in between: no change; within a window that ends
    # between the two, it is a retirement
    assert kinds(diff_moments(store, timeline, checkpoints[5][0], checkpoints[6][0])) == [("retired", ("m2",))]
    assert kinds(diff_moments(store, timeline, checkpoints[6][0], checkpoints[7][0])) == [("restored", ("m2",))]
    text = diff_moments(store, timeline, checkpoints[10][0], checkpoints[11][0]).changes
    assert [(c.kind, c.ids, c.before, c.after) for c in text] == [
        ("content", ["m4"], "Carol moved to Berlin", "Carol moved to Munich")]
    # later window: m4's importance changed by the agent
    late = diff_moments(store, timeline, checkpoints[8][0], checkpoints[9][0])
    assert [(c.kind, c.before, c.after) for c in late.changes] == [("importance", 5.0, 2.0)]


def test_diff_between_two_copies_of_a_store_matches_the_moments(lived):
    store, checkpoints = lived
    timeline = Timeline(store, store.arrays())
    first = ms.open(checkpoints[0][2], read_only=True)
    try:
        by_copy = diff_stores(first, store)
    finally:
        first.close()
    assert kinds(by_copy) == kinds(diff_moments(store, timeline, checkpoints[0][0], None))


def test_diff_between_two_agents_by_text(store):
    store.insert_memories([
        {"id": "a1", "kind": "fact", "agent": "ann", "content": "The bakery opens at 7", "importance": 3,
         "tags": ["food"]},
        {"id": "a2", "kind": "fact", "agent": "ann", "content": "Ann lives in Paris", "importance": 5},
        {"id": "b1", "kind": "fact", "agent": "ben", "content": "The bakery opens at 7", "importance": 8},
        {"id": "b2", "kind": "fact", "agent": "ben", "content": "Ben has a dog", "importance": 5},
    ])
    d = diff_agents(store, store.arrays(), "ann", "ben")
    assert kinds(d) == [("importance", ("a1", "b1")), ("only_a", ("a2",)), ("only_b", ("b2",)), ("tags", ("a1", "b1"))]
    tag = next(c for c in d.changes if c.kind == "tags")
    assert (tag.before, tag.after) == (["food"], [])
    with pytest.raises(ValueError, match="no memories of agent 'cat'"):
        diff_agents(store, store.arrays(), "ann", "cat")


def test_a_query_as_of_T_on_the_view_equals_the_query_on_the_store_then(lived):
    from memviz.retrieval import Engine, preset_params
    store, checkpoints = lived
    arrays = store.arrays()
    timeline = Timeline(store, arrays)
    for T, _, copy in checkpoints:
        view = timeline.at(T)
        params = preset_params("working-memory", k=10)
        now_view = Engine(store, view.arrays, now=T).score(params.replace(as_of=T))
        then = ms.open(copy, read_only=True)
        try:
            on_copy = Engine(then, then.arrays(), now=T).score(params)
        finally:
            then.close()
        assert now_view.ids == on_copy.ids
        assert now_view.score.tolist() == pytest.approx(on_copy.score.tolist())


def test_diff_reports_how_a_querys_top_k_moved(lived):
    store, checkpoints = lived
    timeline = Timeline(store, store.arrays())
    # working-memory preset, importance × 1/(1 + age hours), measured at each moment. Before m4
    # (checkpoint 3, all 500 s old): m1 (9) first, then m2 and m3 (5, ties in store order). After
    # (checkpoint 4): m1 9/(1 + 650/3600) = 7.6, m4 5/(1 + 50/3600) = 4.93, m2 5/(1 + 650/3600) = 4.23
    d = diff_moments(store, timeline, checkpoints[3][0], checkpoints[4][0], query="anything",
                     preset="working-memory", k=3)
    ranks = {c.ids[0]: (c.before, c.after) for c in d.changes if c.kind == "rank"}
    assert ranks == {"m4": (None, 2), "m2": (2, 3), "m3": (3, None)}
    assert [(c.kind, c.ids) for c in d.changes if c.kind != "rank"] == [("added", ["m4"])]
