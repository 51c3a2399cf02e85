"""Odd values on PostgreSQL: its typed columns hold no text, but a double precision column holds
inf, -inf and NaN and a bigint time milliseconds (an agent's SQL writes them). They are read as
the SQLite store reads them (the arrays too), every edit applies and undoes (the value comes back
as it was), and a real change by another session between show and edit is still a conflict."""
from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz.store as ms
from memviz.edits import Confirm, Correct, History, Restore, SetImportance, SetTags, SoftDelete, Unprotect, applicable, shown_in_arrays

#: (column, the agent's value as SQL) that a typed PostgreSQL column can hold
FORMS = [("importance", "'Infinity'"), ("importance", "'NaN'"), ("confidence", "'-Infinity'"),
         ("decay_rate", "'NaN'"), ("event_time", "1772366400123"), ("valid_until", "1772366400000"),
         ("last_accessed", "1772366400999"), ("created_at", "1772366400000")]
EDITS = ("correct", "confirm", "unprotect", "delete", "restore", "importance", "tags")


def _sql(dsn, statement, *args):
    with psycopg.connect(dsn, autocommit=True) as c:  # another session: the agent
        return c.execute(statement, args).fetchall() if statement.lstrip().upper().startswith("SELECT") \
            else c.execute(statement, args)


def _raw(dsn):
    cols = ("importance", "confidence", "decay_rate", "access_count", "event_time", "created_at", "valid_until",
            "last_accessed", "protected", "tags")
    row = _sql(dsn, f"SELECT {', '.join(c + '::text' for c in cols)} FROM memories WHERE id = 'm'")[0]
    return dict(zip(cols, row))


def _action(key, shown_rows):
    kw = {"shown_rows": shown_rows}
    return {"correct": lambda: Correct("m", "a corrected text", embedded=(None, None, "no model here"), **kw),
            "confirm": lambda: Confirm("m", **kw), "unprotect": lambda: Unprotect("m", **kw),
            "delete": lambda: SoftDelete("m", when=1_800_000_000, include_protected=True, **kw),  # the user said yes
            "restore": lambda: Restore("m", **kw),
            "importance": lambda: SetImportance("m", 7, **kw), "tags": lambda: SetTags("m", add=["b"], **kw)}[key]()


@pytest.fixture
def store(pg_db):  # noqa: F811
    s = ms.create(pg_db)
    s.insert_memories([dict(id="m", kind="fact", agent="ann", content="an agent's memory", importance=4.0, tags=["a"],
                            event_time=1_700_000_000, last_accessed=1_700_000_500),
                       dict(id="n", kind="fact", agent="ann", content="another", event_time=1_700_000_100)])
    yield s
    s.close()


def test_odd_values_are_read_as_sqlite_reads_them(store, pg_db):  # noqa: F811
    for col, sql in FORMS:
        _sql(pg_db, f"UPDATE memories SET {col} = {sql} WHERE id = 'm'")
    row, a = store.get("m"), store.arrays()
    i = a.index_of("m")
    assert row["importance"] == a.importance[i] == 5.0 and row["decay_rate"] == a.decay_rate[i] == 0.1
    assert row["confidence"] == a.confidence[i] == 1.0 and a.bad_value[i] and not a.bad_value[a.index_of("n")]
    assert set(row["unreadable"]) == {"importance", "confidence", "decay_rate"}
    assert row["event_time"] == a.event_time[i] == 1772366400.123  # milliseconds, read as seconds
    assert row["valid_until"] == a.valid_until[i] == 1772366400 and not a.live[i]
    assert math.isclose(a.last_accessed[i], 1772366400.999)
    assert np.isfinite(a.importance).all()


@pytest.mark.parametrize("key", EDITS)
@pytest.mark.parametrize("how", ["row", "window"])
def test_every_edit_applies_undoes_and_sees_real_conflicts(store, pg_db, key, how):  # noqa: F811
    for col, sql in FORMS:
        if col != "valid_until" or key in ("restore",):
            _sql(pg_db, f"UPDATE memories SET {col} = {sql} WHERE id = 'm'")
    if key == "unprotect":
        _sql(pg_db, "UPDATE memories SET protected = 1, decay_rate = 0 WHERE id = 'm'")
    before = _raw(pg_db)
    history = History(store)

    def shown():
        return {"m": store.get("m")} if how == "row" else shown_in_arrays(store.arrays(), ["m"])
    assert applicable.refusal(key, store.arrays(), ["m"]) is None
    history.perform(_action(key, shown()))
    assert _raw(pg_db) != before
    history.undo()
    assert _raw(pg_db) == before, "the undo puts back the agent's value"
    snap = shown()
    _sql(pg_db, "UPDATE memories SET importance = 9.5 WHERE id = 'm'")  # a real change between show and edit
    with pytest.raises(ms.ConflictError, match="changed by someone else"):
        history.perform(_action(key, snap))


def test_check_does_not_claim_every_value_is_readable(store, pg_db):  # noqa: F811
    from memviz.store.check import check_store
    _sql(pg_db, "UPDATE memories SET importance = 'Infinity' WHERE id = 'm'")
    skipped = " ".join(check_store(store).skipped)
    assert "every time and number is readable" not in skipped and "inf or NaN" in skipped
