"""The store's own clock: the "now" that recency, decay, consolidation and the importance
meter measure from.

A live agent's store runs on the wall clock. A simulation (Generative Agents' curr_time,
the bundled samples) or a historical import runs on its own time, recorded in memviz_meta
under "clock"; measuring its memories from the wall clock makes every one months old and
every recency 0. A store that records no clock but whose newest memory is far in the past
is offered its newest time as "now". Nothing here imports Qt.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .records import read_time
from .times import iso, to_epoch

META_KEY = "clock"
WALL, SIMULATED, NEWEST = "wall", "simulated", "newest memory"
#: a store whose newest memory is older than this is taken as a record of the past
STALE_AFTER = 30 * 86400.0


@dataclass(frozen=True)
class Clock:
    mode: str                 # WALL | SIMULATED | NEWEST
    at: float | None = None   # the fixed time of a simulated or newest-memory clock
    source: str = ""          # where it comes from, for the user

    def now(self) -> float:
        return time.time() if self.at is None else float(self.at)

    @property
    def fixed(self) -> bool:
        return self.at is not None

    def describe(self) -> str:
        """'2023-02-14 00:02:20 UTC (simulated)' — what the status bar and the CLI print."""
        return f"{iso(self.now())} UTC ({self.mode})"

    def to_meta(self) -> dict:
        return {"mode": self.mode, "at": self.at, "source": self.source}


def simulated(at, source: str = "") -> Clock:
    return Clock(SIMULATED, float(to_epoch(at)), source)


def newest_time(store, arrays=None) -> float | None:
    """The latest event, creation or access time of any memory (from `arrays` when given)."""
    if arrays is None and store.backend != "sqlite":  # typed columns: no SQLite typeof to read them with
        arrays = store.arrays()
    if arrays is not None:
        t = np.concatenate([arrays.event_time, arrays.created_at, arrays.last_accessed])
        t = t[~np.isnan(t)]
        return float(t.max()) if len(t) else None
    # numbers compared as numbers; text (ISO, 'yesterday') read one by one: SQLite's max() ranks
    # any text above every number
    cols = ("event_time", "created_at", "last_accessed")
    num = ", ".join(f"max(CASE WHEN typeof({c}) IN ('integer', 'real') THEN {c} END)" for c in cols)
    values = list(store.conn.execute(f"SELECT {num} FROM memories").fetchone())
    text = " OR ".join(f"typeof({c}) IN ('text', 'blob')" for c in cols)
    for row in store.conn.execute(f"SELECT {', '.join(cols)} FROM memories WHERE {text}"):
        values += [v for v in row if isinstance(v, (str, bytes))]
    times = [t for t, ok in map(read_time, values) if ok and t is not None and np.isfinite(t)]
    return float(max(times)) if times else None


def recorded_clock(store) -> Clock | None:
    """The clock written in the store, if any (a damaged entry counts as none)."""
    value = store.meta(META_KEY)
    if not isinstance(value, dict):
        return None
    mode = value.get("mode")
    if mode == WALL:
        return Clock(WALL, None, str(value.get("source") or "recorded"))
    if mode == SIMULATED:
        try:
            return simulated(value.get("at"), str(value.get("source") or ""))
        except (TypeError, ValueError):
            return None
    return None


def store_clock(store, arrays=None, *, wall: float | None = None) -> Clock:
    """The clock in force: the session's choice (`store.clock_override`), else the recorded
    one, else the newest memory's time when that is long past, else the wall clock.
    `arrays` (the store's MemoryArrays, if the caller has them) spares a scan of the table."""
    if store.clock_override is not None:
        return store.clock_override
    rec = recorded_clock(store)
    if rec is not None:
        return rec
    newest = newest_time(store, arrays)
    wall = time.time() if wall is None else wall
    if newest is not None and wall - newest > STALE_AFTER:
        return Clock(NEWEST, newest, "no clock recorded; the newest memory is long past")
    return Clock(WALL)


def record_clock(store, clock: Clock | None) -> None:
    """Write the clock into the store (None: forget it, back to the automatic choice)."""
    if clock is None:
        with store.transaction() as c:
            c.execute("DELETE FROM memviz_meta WHERE key = ?", (META_KEY,))
    else:
        store.set_meta(META_KEY, clock.to_meta())


def parse_clock(text: str, store) -> Clock:
    """A clock from the user's words: 'wall', 'newest', or an ISO 8601 time (UTC unless zoned)."""
    t = (text or "").strip().lower()
    if t == "wall":
        return Clock(WALL, None, "chosen")
    if t in ("newest", "newest memory"):
        at = newest_time(store)
        if at is None:
            raise ValueError("the store holds no memories, so it has no newest time")
        return Clock(NEWEST, at, "chosen")
    try:
        return simulated(text, "chosen")
    except ValueError as e:
        raise ValueError(f"{e} (or 'wall', 'newest')") from None
