"""Issue 19 cases 4-6: values an agent wrote in the wrong type or format are read in one place
(store/records.py read_time / read_number / read_values), flagged per row, never compared as
text; invalid UTF-8 content can be edited without its bytes being rewritten."""
import math

import numpy as np
import pytest
from hostile_store import BAD_UTF8, build_hostile

import memviz.store as ms
from memviz.cli import main
from memviz.edits.retired import retired
from memviz.store.arrays import load_arrays
from memviz.store.connection import connect
from memviz.store.records import read_number, read_time

ISO = 1772366400.0  # 2026-03-01T12:00:00Z


@pytest.mark.parametrize("value, expected", [
    (1772366400, (ISO, True)), (1772366400000, (ISO, True)), ("2026-03-01T12:00:00Z", (ISO, True)),
    ("2026-03-01 12:00:00", (ISO, True)), ("2026-03-01T13:00:00+01:00", (ISO, True)), ("1772366400", (ISO, True)),
    (1772366400.5, (ISO + 0.5, True)), (None, (None, True)), ("yesterday", (None, False)),
    (float("inf"), (None, False)), (b"\xff", (None, False))])
def test_read_time(value, expected):
    assert read_time(value) == expected


def test_read_number():
    assert read_number("very high", "importance") == (5.0, False)
    assert read_number(float("inf"), "importance") == (5.0, False)
    assert read_number("7.5", "importance") == (7.5, True)


@pytest.fixture
def hostile(tmp_path):
    return build_hostile(tmp_path / "hostile.db")


def test_rows_are_read_flagged_and_never_fail(hostile):
    with ms.open(hostile) as s:
        a = s.arrays()
        at = {m: i for i, m in enumerate(a.ids)}
        for mid in ("t_iso_z", "t_iso_space", "t_ms"):
            assert a.event_time[at[mid]] == ISO and not a.bad_value[at[mid]]
        assert a.event_time[at["t_float"]] == ISO + 0.5
        assert math.isnan(a.event_time[at["t_event_yesterday"]]) and a.bad_value[at["t_event_yesterday"]]
        assert math.isnan(a.created_at[at["t_created_yesterday"]]) and a.bad_value[at["t_created_yesterday"]]
        assert a.valid_until[at["t_until_iso"]] == ISO + 12 * 3600 and not a.live[at["t_until_iso"]]
        assert a.importance[at["imp_text"]] == 5.0 and a.bad_value[at["imp_text"]]
        assert a.bad_value[at["imp_inf"]] and not a.bad_value[at["plain"]]
        by_row = load_arrays(s.conn, in_sqlite=False, preview=20)  # the fallback scan finds the same
        for col in ("event_time", "created_at", "valid_until", "importance", "bad_value"):
            np.testing.assert_array_equal(getattr(by_row, col), getattr(a, col))
        rec = s.get("imp_text")
        assert rec["importance"] == 5.0 and any("'very high'" in p for p in rec["problems"])
        rec = s.get("t_event_yesterday")
        assert rec["event_time"] is None and any("unreadable time" in p for p in rec["problems"])
        assert s.get("t_iso_z")["event_time"] == ISO and s.get("t_iso_z")["problems"] == []
        rec = s.get("bad_utf8")
        assert rec["content"] == "hell\ufffd\x00 o" and rec["problems"]
        # the span is read through the reader: ISO text and milliseconds are 2026, not text sorted last
        assert s.time_span() == (1_700_000_000, ISO + 0.5)
        items = retired(s)
        assert [m.id for m in items] == ["t_until_iso"] and items[0].retired_at == ISO + 12 * 3600


def test_every_command_reads_the_hostile_store(hostile, capsys):
    assert main(["stats", hostile]) == 0
    assert "time span: 2023-11-14 22:13:20 .. 2026-03-01 12:00:00" in capsys.readouterr().out
    assert main(["edit", hostile, "retired"]) == 0
    assert "2026-03-02 00:00:00  t_until_iso" in capsys.readouterr().out
    assert main(["query", hostile, "coffee", "--preset", "hybrid"]) == 0
    assert main(["check", "--json", hostile]) == 1
    out = capsys.readouterr().out
    assert '"unreadable_values"' in out and '"dangling_entities"' in out and "no-such-entity" in out


def test_every_edit_works_on_invalid_utf8_and_keeps_its_bytes(hostile, capsys):
    def raw():
        c = connect(hostile, readonly=True)
        try:
            return c.execute("SELECT CAST(content AS BLOB) FROM memories WHERE id='bad_utf8'").fetchone()[0]
        finally:
            c.close()
    for args in (["delete", "bad_utf8"], ["restore", "bad_utf8"], ["importance", "7", "bad_utf8"],
                 ["tags", "bad_utf8", "--add", "x"], ["confirm", "bad_utf8"], ["unprotect", "bad_utf8"]):
        assert main(["edit", hostile, *args]) == 0, args
        assert raw() == BAD_UTF8, args
    with ms.open(hostile) as s:
        assert s.get("bad_utf8")["importance"] == 7.0
        s.update_fields("bad_utf8", {"content": "hello"})  # the user edits the text: now it is written
        entry = s.history("bad_utf8")[-1]
        assert entry["before"]["content"] == BAD_UTF8  # the audit keeps the bytes that were there
    assert raw() == b"hello"
    assert main(["edit", hostile, "correct", "t_event_yesterday", "a corrected text"]) == 0
