"""Reading JSON Lines (and JSON arrays of records) where a bad line is reported, not fatal."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator

from ..store.times import to_epoch
from ..tasks import Task
from .pipeline import ImportFailed, ImportReport

CANCEL_EVERY = 5000


def read_objects(path: str, report: ImportReport, task: Task, *, allow_array: bool = False
                 ) -> Iterator[tuple[str, dict]]:
    """(where, object) for every JSON object in the file, one per line ("line N"); blank lines
    are ignored, malformed or non-object lines are reported as skipped. With `allow_array`, a
    file that is one JSON array of objects is read too ("record N")."""
    if os.path.isdir(path):
        raise ImportFailed(f"{path} is a folder; this format reads one .jsonl file.")
    with open(path, "rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
        if allow_array and head.startswith(b"["):
            f.seek(0)
            yield from _read_array(path, f.read(), report)
            return
        f.seek(0)
        for n, raw in enumerate(f, start=1):
            if n % CANCEL_EVERY == 0:
                task.check()
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
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
            yield where, obj


def _read_array(path: str, data: bytes, report: ImportReport):
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise ImportFailed(f"{path} is not UTF-8 text (byte {e.start + 1}).") from None
    except json.JSONDecodeError as e:
        raise ImportFailed(f"{path} looks like a JSON array but is not valid JSON: {e.msg} "
                           f"(line {e.lineno}, column {e.colno}).") from None
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
