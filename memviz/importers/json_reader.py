"""Reading JSON Lines (and JSON arrays of records) where a bad line is reported, not fatal."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator

from ..sniff import NOT_JSON, sniff
from ..store.times import to_epoch
from ..tasks import Task
from .pipeline import ImportFailed, ImportReport, NotThisFormat

CANCEL_EVERY = 5000
#: a file whose first this many non-blank lines are all unreadable is not JSON Lines: one message, not one per line
GIVE_UP_AFTER = 20


def read_objects(path: str, report: ImportReport, task: Task, *, allow_array: bool = False
                 ) -> Iterator[tuple[str, dict]]:
    """(where, object) for every JSON object in the file, one per line ("line N"); blank lines
    are ignored, malformed or non-object lines are reported as skipped. With `allow_array`, a
    file that is one JSON array of objects is read too ("record N")."""
    if os.path.isdir(path):
        raise ImportFailed(f"{path} is a folder; this format reads one .jsonl file.")
    s = sniff(path)
    if allow_array and s.head[:1] == b"[" and len(s.lines) < 2:
        items, error = _whole(path)  # any size: an array is read whole anyway
        if isinstance(items, list):
            yield from _read_array(path, items, report)
            return
        if items is NOT_JSON and s.starts_like_json and not error.startswith("Extra data"):  # else "[..." text lines
            raise ImportFailed(f"{path} looks like a JSON array but is not valid JSON ({error}).")
    doc = s.document
    if doc is not NOT_JSON and not (isinstance(doc, dict) and s.one_line):
        raise NotThisFormat(f"{path} is {s.looks_like()}: one JSON document, not JSON Lines (one record per line).")
    readable = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            if n % CANCEL_EVERY == 0:
                task.check()
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            if not readable and len(report.skipped) >= GIVE_UP_AFTER:
                raise _not_lines(path, s, report)
            where = f"line {n}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                report.skip(where, "not-utf8", f"not UTF-8 text (byte {e.start + 1})")
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                report.skip(where, "malformed-json", f"not valid JSON: {e.msg} at column {e.colno}")
                continue
            if not isinstance(obj, dict):
                report.skip(where, "not-an-object", f"a JSON {type(obj).__name__}, not an object")
                continue
            readable += 1
            yield where, obj


def _not_lines(path: str, s, report: ImportReport) -> NotThisFormat:
    """The first lines hold no JSON object: the file is not JSON Lines (one message, not one a line)."""
    return NotThisFormat(f"{path} is {s.looks_like()}, not JSON Lines: none of its first {GIVE_UP_AFTER} lines is a "
                         f"JSON object ({report.skipped[0].where}: {report.skipped[0].message}).")


def _whole(path: str) -> tuple[object, str]:
    """(the file as one JSON value, "") or (NOT_JSON, why not)."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8-sig")), ""
    except UnicodeDecodeError as e:
        return NOT_JSON, f"not UTF-8 text at byte {e.start + 1}"
    except json.JSONDecodeError as e:
        return NOT_JSON, f"{e.msg} at line {e.lineno}, column {e.colno}"
    except OSError as e:
        return NOT_JSON, e.strerror or str(e)


def _read_array(path: str, items: list, report: ImportReport):
    for n, obj in enumerate(items, start=1):
        where = f"record {n}"
        if not isinstance(obj, dict):
            report.skip(where, "not-an-object", f"a JSON {type(obj).__name__}, not an object")
            continue
        yield where, obj


# ----------------------------------------------------------------------- field helpers
def as_importance(value, where: str, report: ImportReport) -> float | None:
    """A 0-10 importance, clamped with a note; None (default) when absent or unreadable."""
    if value is None or value == "":
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        report.quirk(where, "bad-importance", f"importance {value!r} is not a number; the default (5) is used")
        return None
    if not math.isfinite(v):
        report.quirk(where, "bad-importance", f"importance {value!r} is not a number; the default (5) is used")
        return None
    if not 0 <= v <= 10:
        clamped = min(10.0, max(0.0, v))
        report.quirk(where, "importance-clamped", f"importance {value!r} is outside 0-10; stored as {clamped:g}")
        return clamped
    return v


def as_time(value, where: str, report: ImportReport, what: str = "timestamp") -> int | None:
    """UTC epoch seconds (naive times are taken as UTC); None with a note when unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > 1e11:
        report.quirk(where, "time-in-ms", f"{what} {value!r} is read as milliseconds since 1970")
        value = value / 1000
    try:
        return to_epoch(value)
    except (TypeError, ValueError):
        report.quirk(where, "bad-time", f"{what} {value!r} is not a time; the import time is used")
        return None


def as_tags(value, where: str, report: ImportReport) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, (list, tuple)):
        return [str(t) for t in value if t is not None and str(t) != ""]
    report.quirk(where, "bad-tags", f"tags {value!r} are not a list; stored as one tag")
    return [json.dumps(value, ensure_ascii=False)]


def as_int_if_whole(value):
    """'3' -> 3 and 3.0 -> 3 (Wonda's records store turn numbers as strings); anything else unchanged."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
