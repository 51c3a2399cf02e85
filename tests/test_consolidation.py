"""The assistant memory's consolidation on a real store: decay as the formula says (and never compounding),
prune below 0.05 with per-item untick, protected memories untouched, audited, undoable."""
import math

import pytest

from memviz.reflect import apply_consolidation, plan_consolidation, undo_consolidation
from memviz.reflect.consolidation import describe

DAY = 86400.0
NOW = 1_780_000_000.0


def decayed(confidence, rate, days):
    """The decay as the assistant memory's design states it (seed 002), worked out here."""
    return confidence * math.exp(-rate * days ** 0.8)


def seed(store):
    """Facts of various ages; one protected, one episode (no decay by default), one retired."""
    recs = [
        dict(id="young", kind="fact", agent="ann", content="Ann likes tea.", created_at=NOW - 2 * DAY),
        dict(id="old", kind="fact", agent="ann", content="Ann lived in Oslo.", created_at=NOW - 400 * DAY),
        dict(id="accessed", kind="preference", agent="ann", content="Ann prefers short answers.",
             created_at=NOW - 400 * DAY, last_accessed=NOW - 1 * DAY),
        dict(id="weak", kind="fact", agent="ann", content="Ann maybe owns a cat.", created_at=NOW - 30 * DAY,
             confidence=0.06),
        dict(id="shaky-episode", kind="episode", agent="ann", content="Someone said something.",
             created_at=NOW - 900 * DAY, confidence=0.01),
        dict(id="guarded", kind="fact", agent="ann", content="Ann's birthday is in May.", created_at=NOW - 900 * DAY,
             confidence=0.01, protected=1, decay_rate=0.1),
        dict(id="gone", kind="fact", agent="ann", content="retired", created_at=NOW - 900 * DAY, valid_until=NOW - DAY),
        dict(id="bob-old", kind="fact", agent="bob", content="Bob lived in Rome.", created_at=NOW - 400 * DAY),
    ]
    store.insert_memories(recs)


def conf(store, mid):
    return store.get(mid)["confidence"]


def test_plan_follows_the_formula_and_writes_nothing(store):
    seed(store)
    audit = store.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0]
    plan = plan_consolidation(store, now=NOW)
    by_id = {d.id: d for d in plan.decay}
    assert set(by_id) == {"young", "old", "accessed", "weak", "bob-old"}  # fact/preference, live, unprotected
    assert by_id["old"].after == pytest.approx(math.exp(-0.1 * 400 ** 0.8))
    assert by_id["accessed"].after == pytest.approx(math.exp(-0.1 * 1 ** 0.8))  # age counts from the last access
    assert by_id["weak"].after == pytest.approx(decayed(0.06, 0.1, 30))
    assert {p.id for p in plan.prune} == {"old", "weak", "shaky-episode", "bob-old"}
    assert plan.protected_skipped == 1
    assert "4 fall below 0.05" in describe(plan)
    assert store.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0] == audit
    assert conf(store, "old") == 1.0

    ann = plan_consolidation(store, now=NOW, agent="ann", kinds=None)
    assert "bob-old" not in {d.id for d in ann.decay} | {p.id for p in ann.prune}
    assert "shaky-episode" in {d.id for d in ann.decay}


def test_apply_with_untick_is_one_audited_transaction_and_undoable(store):
    seed(store)
    plan = plan_consolidation(store, now=NOW)
    plan.untick("weak")
    res = apply_consolidation(store, plan)
    assert sorted(res.pruned) == ["bob-old", "old", "shaky-episode"] and res.skipped == []
    assert store.get("weak")["valid_until"] is None  # unticked: kept, but decayed
    assert conf(store, "weak") == pytest.approx(decayed(0.06, 0.1, 30))
    assert store.get("old")["valid_until"] is not None
    g = store.get("guarded")
    assert g["confidence"] == 0.01 and g["valid_until"] is None and store.history("guarded")[-1]["action"] == "insert"
    actions = [h["action"] for h in store.history("old")]
    assert actions == ["insert", "decay", "prune"]
    assert store.history("old")[1]["after"]["confidence"] == pytest.approx(math.exp(-0.1 * 400 ** 0.8))

    skipped = undo_consolidation(store, res)
    assert skipped == []
    assert conf(store, "old") == 1.0 and store.get("old")["valid_until"] is None
    assert conf(store, "weak") == 0.06
    # after undo, decaying again gives the same plan as the first time
    again = plan_consolidation(store, now=NOW)
    assert {d.id: round(d.after, 12) for d in again.decay} == {d.id: round(d.after, 12) for d in plan.decay}


def test_decay_never_compounds(store):
    store.insert_memories([dict(id="f", kind="fact", content="x", created_at=NOW - 10 * DAY)])
    for day in range(1, 6):  # applied every night for five nights
        apply_consolidation(store, plan_consolidation(store, now=NOW + day * DAY))
    assert conf(store, "f") == pytest.approx(decayed(1.0, 0.1, 15))
    # a plan at the same moment changes nothing more
    assert plan_consolidation(store, now=NOW + 5 * DAY).decay == []


def test_apply_rechecks_rows_changed_since_the_preview(store):
    seed(store)
    plan = plan_consolidation(store, now=NOW)
    store.update_fields("old", {"protected": True})          # the user confirmed it meanwhile
    store.update_fields("young", {"confidence": 0.5})         # the agent changed it meanwhile
    store.set_valid_until("bob-old", NOW)                    # retired meanwhile
    store.update_fields("shaky-episode", {"confidence": 0.9})  # now well above the threshold
    res = apply_consolidation(store, plan)
    why = dict(res.skipped)
    assert why["old"] == "it is protected"
    assert why["young"] == "its confidence changed since the preview"
    assert why["bob-old"] == "it was retired meanwhile"
    assert why["shaky-episode"].startswith("its confidence is 0.900 now")
    assert conf(store, "old") == 1.0 and store.get("old")["valid_until"] is None
    assert conf(store, "young") == 0.5
    assert res.pruned == ["weak"]


def test_read_only_store_cannot_apply(tmp_path):
    import memviz.store as ms
    from memviz.store.errors import ReadOnlyError

    p = str(tmp_path / "m.db")
    s = ms.create(p)
    seed(s)
    s.close()
    ro = ms.open(p, read_only=True)
    plan = plan_consolidation(ro, now=NOW)
    assert plan.prune
    with pytest.raises(ReadOnlyError):
        apply_consolidation(ro, plan)
    ro.close()
