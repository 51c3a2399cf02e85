"""Values an agent wrote in another form (text numbers, 'very high', inf, NaN, ISO times with Z,
offsets or a space, milliseconds, 'yesterday') are edited like any other: the conflict check reads
the stored row and the row the user was shown through the same reader, an edit of an unreadable
value is always possible (it is how the user repairs it), its undo puts the agent's value back as
it was stored, and a real change by another connection between show and edit is still a conflict."""
from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta, timezone

import apsw
import hypothesis.strategies as st
import pytest
from bad_stores import sample_copy
from hypothesis import HealthCheck, given, settings

import memviz.store as ms
from memviz.cli import main
from memviz.edits import Confirm, Correct, History, Restore, SetImportance, SetTags, SoftDelete, Unprotect, applicable, shown_in_arrays
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.store.records import shown_value

#: the columns agents write odd values into
COLUMNS = ("importance", "confidence", "decay_rate", "access_count", "event_time", "created_at", "valid_until",
           "last_accessed")
#: the columns an edit's conflict guard covers in every path (the window's snapshot holds these)
GUARDED = ("importance", "confidence", "decay_rate", "valid_until")
EDITS = ("correct", "confirm", "unprotect", "delete", "restore", "importance", "tags")
MID = "m"
OTHER_ID = "other"
_VEC = {}


def _vectors():
    if not _VEC:
        v = default_embedder().embed(["the memory an agent keeps writing to", "another memory", "a corrected text"])
        _VEC.update(m=v[0], other=v[1], new=v[2])
    return _VEC


_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
_MOMENTS = st.datetimes(datetime(2001, 1, 1), datetime(2035, 12, 31), timezones=_ZONES)


def _iso(dt: datetime, how: str) -> str:
    text = dt.isoformat(timespec="milliseconds" if how == "ms" else "seconds")
    if how == "Z" and dt.utcoffset() == timedelta(0):
        text = text.replace("+00:00", "Z")
    if how == "space":
        text = text.replace("T", " ")
    if how == "naive":
        text = dt.replace(tzinfo=None).isoformat()
    return text


#: every odd form the readers accept or flag, as an agent's SQL binds it
ODD_FORMS = st.one_of(
    st.floats(0, 10, allow_nan=False).map(lambda x: f" {x:.6g} "),           # a number as text (affinity may keep it)
    st.sampled_from(["very high", "high", "yesterday", "NaN", "inf", "-Infinity", "", "n/a"]),  # text no reader reads
    st.sampled_from([float("inf"), float("-inf")]),                          # non-finite reals (a NaN becomes NULL)
    st.tuples(_MOMENTS, st.sampled_from(["Z", "offset", "space", "ms", "naive"])).map(lambda t: _iso(*t)),
    _MOMENTS.map(lambda d: int(d.timestamp() * 1000) + 123),                 # milliseconds
    _MOMENTS.map(lambda d: str(int(d.timestamp()))),                         # seconds as text
    _MOMENTS.map(lambda d: d.timestamp() + 0.25),                            # fractional seconds
)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store with one memory to edit (and one beside it), every value plain."""
    vec = _vectors()
    path = tmp_path_factory.mktemp("odd") / "template.db"
    with ms.create(path) as s:
        s.insert_memories([
            dict(id=MID, kind="fact", agent="ann", content="the memory an agent keeps writing to", importance=4.0,
                 tags=["a"], event_time=1_700_000_000, last_accessed=1_700_000_500, access_count=2,
                 embedding=vec["m"], embedding_model=LOCAL_MODEL),
            dict(id=OTHER_ID, kind="fact", agent="ann", content="another memory", event_time=1_700_000_100,
                 embedding=vec["other"], embedding_model=LOCAL_MODEL)])
    return path


def _agent(path, sql: str, *args) -> None:
    """A write by another connection, as the agent makes it."""
    c = apsw.Connection(str(path))
    try:
        c.execute(sql, args)
    finally:
        c.close()


def _raw(path) -> dict:
    """The row as SQLite keeps it: each column's storage class and its exact text (quote())."""
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cols = [r[1] for r in c.execute("PRAGMA table_info(memories)")]
        sel = ", ".join(f"typeof({k}), quote({k})" for k in cols)
        row = c.execute(f"SELECT {sel} FROM memories WHERE id = ?", (MID,)).fetchone()
    finally:
        c.close()
    return {k: (row[2 * i], row[2 * i + 1]) for i, k in enumerate(cols)}


def _action(key: str, shown_rows):
    kw = {} if shown_rows is None else {"shown_rows": shown_rows}
    if key == "correct":
        vec = _vectors()["new"]
        return Correct(MID, "a corrected text", embedded=(vec, LOCAL_MODEL, None), **kw)
    return {"confirm": lambda: Confirm(MID, **kw), "unprotect": lambda: Unprotect(MID, **kw),
            "delete": lambda: SoftDelete(MID, when=1_800_000_000, include_protected=True, **kw),  # the user said yes
            "restore": lambda: Restore(MID, **kw),
            "importance": lambda: SetImportance(MID, 7, **kw), "tags": lambda: SetTags(MID, add=["b"], **kw)}[key]()


def _shown(store, how: str):
    """The row as the user was shown it: the CLI reads it inside the edit (None); the detail panel
    shows store.get; the window's edits snapshot the loaded arrays."""
    if how == "cli":
        return None
    if how == "row":
        return {MID: {**store.get(MID)}}
    snap = shown_in_arrays(store.arrays(), [MID])
    snap[MID]["content"] = store.get(MID)["content"]  # the correct dialog adds the text it showed
    return snap


def _prepare(path, key: str, column: str, form) -> None:
    """The memory in the state the edit applies to, then the agent's odd value in `column`."""
    if key == "unprotect":
        _agent(path, "UPDATE memories SET protected = 1, decay_rate = 0 WHERE id = ?", MID)
    if key == "restore" and column != "valid_until":
        _agent(path, "UPDATE memories SET valid_until = 1750000000 WHERE id = ?", MID)
    _agent(path, f"UPDATE memories SET {column} = ? WHERE id = ?", form, MID)


def _different(store, column: str) -> tuple[str, object]:
    """A guarded column and a plain value for it that shows differently from what is shown now."""
    col = column if column in GUARDED else "importance"
    now = store.get(MID)
    # the agent's odd value may itself read as one of the candidates (" 0.25 " is 0.25): take another
    candidates = {"importance": (9.5, 1.5), "confidence": (0.25, 0.75), "decay_rate": (0.75, 0.25),
                  "valid_until": (1_650_000_000, 1_600_000_000) if now["valid_until"] is not None else (None,)}[col]
    value = next(v for v in candidates if shown_value(v, col) != shown_value(now[col], col))
    return col, value


def _run_edit(path, key: str, column: str, form, how: str) -> None:
    _prepare(path, key, column, form)
    before = _raw(path)
    with ms.open(path) as store:
        history = History(store)
        why = applicable.refusal(key, store.arrays(), [MID])
        shown_rows = _shown(store, how)
        if why is not None:  # the window would not offer it; the command refuses it too (not a conflict)
            with pytest.raises(ms.ValidationError):
                history.perform(_action(key, shown_rows))
            assert _raw(path) == before
            return
        history.perform(_action(key, shown_rows))
        after = _raw(path)
        assert after != before
        history.undo()
        assert _raw(path) == before, "the undo puts back the value as the agent stored it"
        history.redo()
        assert {k: v for k, v in _raw(path).items() if k != "valid_until" or key != "correct"} == \
            {k: v for k, v in after.items() if k != "valid_until" or key != "correct"}
        history.undo()
        assert _raw(path) == before
        if how == "cli":
            return
        # a real change between show and edit: another connection writes a value that shows differently
        shown_rows = _shown(store, how)
        col, value = _different(store, column)
        _agent(path, f"UPDATE memories SET {col} = ? WHERE id = ?", value, MID)
        changed = _raw(path)
        with pytest.raises(ms.ConflictError, match="changed by someone else"):
            history.perform(_action(key, shown_rows))
        assert _raw(path) == changed


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(EDITS), column=st.sampled_from(COLUMNS), form=ODD_FORMS,
       how=st.sampled_from(["cli", "row", "window"]))
def test_every_edit_of_an_odd_value_applies_undoes_and_still_sees_real_conflicts(template, tmp_path_factory, key,
                                                                                  column, form, how):
    path = tmp_path_factory.mktemp("case") / "m.db"
    shutil.copyfile(template, path)
    _run_edit(path, key, column, form, how)


@pytest.mark.parametrize("key", EDITS)
@pytest.mark.parametrize("column, form", [("importance", "very high"), ("confidence", float("inf")),
                                          ("valid_until", "2025-01-01T00:00:00Z"), ("event_time", "yesterday"),
                                          ("decay_rate", "NaN"), ("valid_until", "yesterday"),
                                          ("last_accessed", 1_772_366_400_000)])
def test_the_window_edits_the_forms_of_the_issue(template, tmp_path, key, column, form):
    """The window's path (its snapshot of the loaded arrays) on the forms the issue names, each edit."""
    path = tmp_path / "m.db"
    shutil.copyfile(template, path)
    _run_edit(path, key, column, form, "window")


def test_the_cli_edits_what_the_issue_showed(tmp_path, capsys):
    """The issue's reproduction on a copy of the sample: no false conflict, no false "nothing to change"."""
    db = sample_copy(tmp_path)
    c = apsw.Connection(str(db))
    a, b = [r[0] for r in c.execute("SELECT id FROM memories WHERE valid_until IS NULL ORDER BY rowid LIMIT 2")]
    c.execute("UPDATE memories SET importance = 'very high' WHERE id = ?", (a,))
    c.execute("UPDATE memories SET valid_until = '2025-01-01T00:00:00Z' WHERE id = ?", (b,))
    c.close()
    assert main(["edit", str(db), "importance", "5", a]) == 0, capsys.readouterr().err
    assert "Set importance 5 on 1 memory" in capsys.readouterr().out
    with ms.open(db) as s:
        assert s.get(a)["importance"] == 5.0 and s.get(a)["problems"] == []
        assert s.history(a)[-1]["before"] == {"importance": "very high"}
    assert main(["edit", str(db), "importance", "6", a]) == 0, capsys.readouterr().err
    assert main(["edit", str(db), "restore", b]) == 0, capsys.readouterr().err
    with ms.open(db) as s:
        assert s.get(a)["importance"] == 6.0 and s.get(b)["valid_until"] is None
        assert s.history(b)[-1]["before"] == {"valid_until": "2025-01-01T00:00:00Z"}


def test_an_unreadable_retirement_is_retired_everywhere(template, tmp_path):
    """valid_until = 'yesterday' counts as retired in the detail as in the arrays: restore applies
    (the way to repair it), correct asks for the restore first, and both say the same."""
    path = tmp_path / "m.db"
    shutil.copyfile(template, path)
    _agent(path, "UPDATE memories SET valid_until = 'yesterday' WHERE id = ?", MID)
    with ms.open(path) as s:
        row, a = s.get(MID), s.arrays()
        assert row["valid_until"] == 0 and "valid_until" in row["unreadable"]
        assert any("counts as retired" in p for p in row["problems"])
        assert not a.live[a.index_of(MID)]
        assert applicable.refusal("restore", a, [MID]) is None and applicable.refusal("correct", a, [MID])
        with pytest.raises(ms.ValidationError, match="restore it"):
            History(s).perform(Correct(MID, "new text", embedded=(_vectors()["new"], LOCAL_MODEL, None)))
        History(s).perform(Restore(MID))
        assert s.get(MID)["valid_until"] is None


def test_setting_the_value_shown_for_an_unreadable_one_repairs_it(template, tmp_path):
    """'very high' shows as 5: importance 5 writes 5 (it is not "nothing to change"); tags shown as
    empty from malformed JSON are written too; a readable value already so is still nothing to change."""
    path = tmp_path / "m.db"
    shutil.copyfile(template, path)
    _agent(path, "UPDATE memories SET importance = 'very high', tags = '[not json' WHERE id = ?", MID)
    with ms.open(path) as s:
        h = History(s)
        h.perform(SetImportance(MID, 5))
        assert s.get(MID)["importance"] == 5.0 and "importance" not in s.get(MID)["unreadable"]
        with pytest.raises(ms.ValidationError, match="nothing to change"):
            h.perform(SetImportance(MID, 5))
        h.perform(SetTags(MID, []))
        assert _raw(path)["tags"] == ("text", "'[]'")
        h.undo()
        assert _raw(path)["tags"] == ("text", "'[not json'")
        h.undo()
        assert _raw(path)["importance"] == ("text", "'very high'")
