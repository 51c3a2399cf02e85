"""A store holding what agents have been seen to write with plain SQL (issue 19 cases 4-7)."""
import memviz.store as ms
from memviz.store.connection import connect

BAD_UTF8 = bytes.fromhex("68656c6cff00206f")  # 'hell', an invalid byte, a NUL, ' o'
HUGE_CHARS = 10_000_000

#: id -> (column, SQL value)
ODD = {
    "imp_text": ("importance", "'very high'"),
    "imp_inf": ("importance", "9e999"),
    "t_iso_z": ("event_time", "'2026-03-01T12:00:00Z'"),
    "t_iso_space": ("event_time", "'2026-03-01 12:00:00'"),
    "t_ms": ("event_time", "1772366400000"),
    "t_float": ("event_time", "1772366400.5"),
    "t_created_yesterday": ("created_at", "'yesterday'"),
    "t_event_yesterday": ("event_time", "'yesterday'"),
    "t_until_iso": ("valid_until", "'2026-03-02T00:00:00Z'"),
    "bad_utf8": ("content", "CAST(X'" + BAD_UTF8.hex() + "' AS TEXT)"),
    "ghost_entity": ("entity_ids", "'[\"no-such-entity\"]'"),
}


def build_hostile(path, huge: bool = False) -> str:
    path = str(path)
    with ms.create(path) as s:
        s.insert_memories([dict(id=mid, kind="fact", agent="ann", content=f"memory {mid} about coffee",
                                event_time=1_700_000_000 + i * 3600) for i, mid in enumerate(["plain", *ODD])])
        if huge:
            s.insert_memories([dict(id="huge", kind="episode", agent="ann", content="word " * (HUGE_CHARS // 5),
                                    event_time=1_700_100_000)])
    c = connect(path)
    for mid, (col, sql) in ODD.items():
        c.execute(f"UPDATE memories SET {col} = {sql} WHERE id = ?", (mid,))
    c.close()
    return path
