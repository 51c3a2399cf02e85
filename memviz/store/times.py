"""Times are stored one way: UTC epoch seconds. Everything else is converted here."""
from __future__ import annotations

import math
from datetime import UTC, datetime


def to_epoch(value) -> int | None:
    """Epoch seconds from a number, an aware/naive datetime (naive = UTC) or an ISO string."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"not a time: {value!r}")
        return int(value)
    if isinstance(value, str):
        value = parse_time(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp())
    raise ValueError(f"not a time: {value!r}")


def parse_time(text: str) -> datetime:
    """ISO 8601 ('2026-03-01T12:00', '2026-03-01 12:00:00Z', '2026-03-01'); naive means UTC."""
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a time; use ISO 8601 such as 2026-03-01T12:00") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def iso(epoch) -> str:
    """'YYYY-MM-DD HH:MM:SS' UTC; '' for None/NaN (no time); 'unreadable time' for anything
    that is not a number of seconds in range (read values through records.read_time first)."""
    if epoch is None or (isinstance(epoch, float) and math.isnan(epoch)):
        return ""
    try:
        return datetime.fromtimestamp(float(epoch), tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return "unreadable time"
