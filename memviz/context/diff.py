"""What changed: between two moments of one store, two stores, or two agents in one store.

Every difference is a `Change` record naming the memory ids involved, so a panel can list
them and select the memories everywhere. Kinds:
  added, retired, restored, corrected (old -> new text), content, importance, protected, tags,
  reflection (a reflection gained, with its evidence ids), rank (a query's top k moved),
  missing (in the first store, not in the second), only_a / only_b (agents: text one knows and
  the other does not).
Moments are compared on the as-of views (asof.py), memory by memory; stores by memory id;
agents by memory text (two agents never share ids).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..store.records import decode_json, decode_text
from .asof import AsOfView, Timeline
from .texts import parse_tags

ORDER = ("added", "reflection", "corrected", "retired", "restored", "missing", "content", "importance",
         "protected", "tags", "only_a", "only_b", "rank")


@dataclass
class Change:
    kind: str
    ids: list[str]
    summary: str
    before: object = None
    after: object = None
    evidence: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Diff:
    what: str                       # "moments" | "stores" | "agents"
    a_label: str
    b_label: str
    changes: list[Change]
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out

    def as_dict(self) -> dict:
        return {"what": self.what, "a": self.a_label, "b": self.b_label, "counts": self.counts(),
                "notes": self.notes, "changes": [c.as_dict() for c in self.changes]}


def _sorted(changes: list[Change]) -> list[Change]:
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(changes, key=lambda c: rank.get(c.kind, len(ORDER)))


# ------------------------------------------------------------------ reading a few rows
def _rows_info(store, ids) -> dict[str, dict]:
    """id -> content, tags, source_ids, supersedes for just these ids (one query per 500)."""
    ids = list(dict.fromkeys(ids))
    out = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        q = ("SELECT id, CAST(content AS BLOB), tags, source_ids, attributes FROM memories "
             f"WHERE id IN ({','.join('?' * len(chunk))})")
        for mid, content, tags, sources, attrs in store.conn.execute(q, chunk):
            attrs_d, _ = decode_json(attrs, "attributes")
            out[mid] = {"content": decode_text(content)[0], "tags": parse_tags(tags),
                        "source_ids": [str(s) for s in decode_json(sources, "source_ids")[0]],
                        "supersedes": attrs_d.get("supersedes") if isinstance(attrs_d, dict) else None}
    return out


def _short(text: str, width: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _fmt_num(v) -> str:
    return f"{float(v):g}"


# ------------------------------------------------------------------ one side of a comparison
@dataclass
class _Side:
    """The memories of one side: rows into `arrays`, matched to the other side by `keys`."""

    store: object
    arrays: object
    rows: np.ndarray          # the rows that exist on this side
    keys: np.ndarray          # object: match key per row of `rows`
    content: dict             # row -> text where it differs from the store's current text
    tags: dict                # row -> tags where they differ from the store's current tags

    def live(self) -> np.ndarray:
        return np.isnan(self.arrays.valid_until[self.rows])


def _view_side(store, view: AsOfView, rows=None, keys=None) -> _Side:
    rows = np.flatnonzero(view.visible) if rows is None else rows
    keys = view.arrays.ids[rows] if keys is None else keys
    return _Side(store, view.arrays, rows, keys, view.content, view.tags)


def _compare(a: _Side, b: _Side, *, tag_rows=None, by_text=False) -> list[Change]:
    """Records for the memories of b against those of a. `tag_rows`: (rows of a, rows of b)
    whose tags may differ (None = compare every matched memory's tags)."""
    changes: list[Change] = []
    index_b = {k: j for j, k in enumerate(b.keys.tolist())}
    match = np.fromiter((index_b.get(k, -1) for k in a.keys.tolist()), np.int64, count=len(a.rows))
    has = match >= 0
    ia, ib = np.flatnonzero(has), match[has]
    ra, rb = a.rows[ia], b.rows[ib]
    live_a, live_b = a.live(), b.live()
    only_b = np.ones(len(b.rows), bool)
    only_b[ib] = False
    aa, ab = a.arrays, b.arrays
    need_ids = set(ab.ids[b.rows[only_b]].tolist()) | set(aa.ids[a.rows[~has]].tolist())
    retired = ia[live_a[ia] & ~live_b[ib]]
    need_ids |= set(aa.ids[a.rows[retired]].tolist())
    info_b = _rows_info(b.store, [i for i in need_ids if b.arrays.index_of(i) is not None])
    info_a = _rows_info(a.store, [i for i in need_ids if a.arrays.index_of(i) is not None]) if a.store is not b.store else info_b

    def text(side, info, r):
        return side.content.get(r) if r in side.content else info.get(side.arrays.ids[r], {}).get("content", "")

    # successors in b of the memories they replace (corrections)
    successor = {}
    for j in np.flatnonzero(only_b).tolist():
        mid = ab.ids[b.rows[j]]
        old = info_b.get(mid, {}).get("supersedes")
        if old:
            successor[str(old)] = mid
    corrected_new = set()
    for i in retired.tolist():
        r_old = a.rows[i]
        old_id = aa.ids[r_old]
        new_id = successor.get(old_id)
        if new_id is not None and not by_text:
            corrected_new.add(new_id)
            old_t, new_t = text(a, info_a, r_old), info_b.get(new_id, {}).get("content", "")
            changes.append(Change("corrected", [old_id, new_id], f"corrected: {_short(old_t, 40)} → {_short(new_t, 40)}",
                                  old_t, new_t))
        else:
            changes.append(Change("retired", [old_id], f"retired: {_short(text(a, info_a, r_old))}"))
    for i in ia[~live_a[ia] & live_b[match[ia]]].tolist():
        r = a.rows[i]
        changes.append(Change("restored", [aa.ids[r]], f"restored: {_short(text(a, info_a, r))}"))

    # memories only in b: added (moments, stores) or only_b (agents)
    for j in np.flatnonzero(only_b).tolist():
        r = b.rows[j]
        mid = ab.ids[r]
        if mid in corrected_new:
            continue
        inf = info_b.get(mid, {})
        t = text(b, info_b, r)
        if by_text:
            changes.append(Change("only_b", [mid], f"only in {ab.agent[r]}: {_short(t)}"))
        elif ab.kind[r] == "reflection":
            ev = inf.get("source_ids", [])
            changes.append(Change("reflection", [mid] + ev, f"reflection gained from {len(ev)} memories: {_short(t)}",
                                  None, t, ev))
        else:
            state = "" if live_b[j] else " (retired since)"
            changes.append(Change("added", [mid], f"added [{ab.kind[r]}]{state}: {_short(t)}", None, t))
    for i in np.flatnonzero(~has).tolist():
        r = a.rows[i]
        t = text(a, info_a, r)
        if by_text:
            changes.append(Change("only_a", [aa.ids[r]], f"only in {aa.agent[r]}: {_short(t)}"))
        else:
            changes.append(Change("missing", [aa.ids[r]], f"not in the second store: {_short(t)}", t, None))

    # field changes of matched memories
    ids_pair = lambda x, y: [aa.ids[x]] if aa.ids[x] == ab.ids[y] else [aa.ids[x], ab.ids[y]]  # noqa: E731
    for x, y in zip(*_differ(aa.importance[ra], ab.importance[rb], ra, rb)):
        changes.append(Change("importance", ids_pair(x, y),
                              f"importance {_fmt_num(aa.importance[x])} → {_fmt_num(ab.importance[y])}",
                              float(aa.importance[x]), float(ab.importance[y])))
    for x, y in zip(*_differ(aa.protected[ra], ab.protected[rb], ra, rb)):
        what = "protected" if ab.protected[y] else "unprotected"
        changes.append(Change("protected", ids_pair(x, y), what, bool(aa.protected[x]), bool(ab.protected[y])))
    if not by_text:
        changes += _content_changes(a, b, ra, rb, ids_pair)
    changes += _tag_changes(a, b, ra, rb, tag_rows, ids_pair)
    return changes


def _differ(x, y, ra, rb):
    d = np.flatnonzero(x != y)
    return ra[d].tolist(), rb[d].tolist()


def _content_changes(a, b, ra, rb, ids_pair) -> list[Change]:
    """Text changed in place (same id): only rows an audit entry or an as-of override names, or,
    between stores, all matched rows (compared in SQL-sized chunks)."""
    out = []
    rows = set(a.content) | set(b.content)
    pairs = [(x, y) for x, y in zip(ra.tolist(), rb.tolist()) if x in rows or y in rows] if a.store is b.store \
        else list(zip(ra.tolist(), rb.tolist()))
    if not pairs:
        return out
    ids = [a.arrays.ids[x] for x, _ in pairs]
    info_a = _rows_info(a.store, ids)
    info_b = info_a if a.store is b.store else _rows_info(b.store, ids)
    for x, y in pairs:
        ta = a.content.get(x, info_a.get(a.arrays.ids[x], {}).get("content"))
        tb = b.content.get(y, info_b.get(b.arrays.ids[y], {}).get("content"))
        if ta != tb:
            out.append(Change("content", ids_pair(x, y), f"text changed: {_short(ta, 40)} → {_short(tb, 40)}", ta, tb))
    return out


def _tag_changes(a, b, ra, rb, tag_rows, ids_pair) -> list[Change]:
    if tag_rows is not None:
        wanted = set(tag_rows)
        pairs = [(x, y) for x, y in zip(ra.tolist(), rb.tolist()) if x in wanted]
    else:
        pairs = list(zip(ra.tolist(), rb.tolist()))
    if not pairs:
        return []
    info_a = _rows_info(a.store, [a.arrays.ids[x] for x, _ in pairs])
    info_b = info_a if a.store is b.store and all(a.arrays.ids[x] == b.arrays.ids[y] for x, y in pairs) \
        else _rows_info(b.store, [b.arrays.ids[y] for _, y in pairs])
    out = []
    for x, y in pairs:
        ta = a.tags.get(x, info_a.get(a.arrays.ids[x], {}).get("tags", []))
        tb = b.tags.get(y, info_b.get(b.arrays.ids[y], {}).get("tags", []))
        if list(ta) != list(tb):
            gained = [t for t in tb if t not in ta]
            lost = [t for t in ta if t not in tb]
            text = ", ".join([f"+{t}" for t in gained] + [f"-{t}" for t in lost]) or "reordered"
            out.append(Change("tags", ids_pair(x, y), f"tags {text}", list(ta), list(tb)))
    return out


# ------------------------------------------------------------------ rank changes of a query
def rank_changes(store, view_a: AsOfView, view_b: AsOfView, query: str, preset_name: str, k: int,
                 store_b=None) -> tuple[list[Change], list[str]]:
    """How the query's top k moved between two views (each scored as of its own moment)."""
    from ..embed import EmbedderUnavailable  # noqa: PLC0415
    from ..retrieval import Engine, preset_params  # noqa: PLC0415

    results, notes = [], []
    for st, view in ((store, view_a), (store_b or store, view_b)):
        eng = Engine(st, arrays=view.arrays, now=None if np.isinf(view.T) else view.T)
        try:
            eng.set_query(query)
        except EmbedderUnavailable as e:
            notes.append(str(e))
        params = preset_params(preset_name, k=k, as_of=None if np.isinf(view.T) else view.T)
        results.append(eng.score(params))
    before, after = results
    changes = []
    ids = list(dict.fromkeys(list(before.ids) + list(after.ids)))
    for mid in ids:
        r0, r1 = before.rank_of(mid), after.rank_of(mid)
        if r0 == r1:
            continue
        if r0 is None:
            what = f"entered the top {k} at {r1}"
        elif r1 is None:
            what = f"left the top {k} (was {r0})"
        else:
            what = f"rank {r0} → {r1}"
        changes.append(Change("rank", [mid], f"{query!r}: {what}", r0, r1))
    return changes, notes


# ------------------------------------------------------------------ the three diffs
def diff_moments(store, timeline: Timeline, t1: float, t2: float | None = None, *, query: str | None = None,
                 preset: str = "dual-memory", k: int = 10, agents=None) -> Diff:
    """Changes between moments t1 and t2 of one store (t2 None = now)."""
    t2f = np.inf if t2 is None else float(t2)
    if t1 is None:
        raise ValueError("give the first moment (--from)")
    if float(t1) > t2f:
        raise ValueError("the first moment is after the second")
    va, vb = timeline.at(t1), timeline.at(t2)
    rows_a, rows_b = np.flatnonzero(va.visible), np.flatnonzero(vb.visible)
    if agents:
        keep = np.isin(timeline.arrays.agent, np.array(list(agents), dtype=object))
        rows_a, rows_b = rows_a[keep[rows_a]], rows_b[keep[rows_b]]
    a, b = _view_side(store, va, rows_a), _view_side(store, vb, rows_b)
    tag_rows = timeline.changed_rows("tags", float(t1), t2f).tolist()
    changes = _compare(a, b, tag_rows=tag_rows)
    notes = []
    if query:
        rc, notes = rank_changes(store, va, vb, query, preset, k)
        changes += rc
    from ..store import iso  # noqa: PLC0415
    return Diff("moments", iso(t1), "now" if t2 is None else iso(t2), _sorted(changes), notes)


def diff_stores(store_a, store_b, *, arrays_a=None, arrays_b=None, query: str | None = None,
                preset: str = "dual-memory", k: int = 10, agents=None) -> Diff:
    """Changes from store_a to store_b (e.g. two copies of one agent's store), matched by id."""
    aa = arrays_a if arrays_a is not None else store_a.arrays()
    ab = arrays_b if arrays_b is not None else store_b.arrays()
    va, vb = AsOfView(np.inf, aa, np.ones(len(aa), bool)), AsOfView(np.inf, ab, np.ones(len(ab), bool))
    rows_a, rows_b = np.arange(len(aa)), np.arange(len(ab))
    if agents:
        want = np.array(list(agents), dtype=object)
        rows_a, rows_b = rows_a[np.isin(aa.agent, want)], rows_b[np.isin(ab.agent, want)]
    a, b = _view_side(store_a, va, rows_a), _view_side(store_b, vb, rows_b)
    changes = _compare(a, b)
    notes = []
    if query:
        rc, notes = rank_changes(store_a, va, vb, query, preset, k, store_b=store_b)
        changes += rc
    return Diff("stores", store_a.path, store_b.path, _sorted(changes), notes)


def diff_agents(store, arrays, agent_a: str, agent_b: str, *, view: AsOfView | None = None) -> Diff:
    """What one agent's memory holds that the other's does not, matched by text (live memories
    only); for texts both hold: differences of importance, protection and tags."""
    view = view or AsOfView(np.inf, arrays, np.ones(len(arrays), bool))
    known = set(view.arrays.agent[view.visible].tolist())
    for ag in (agent_a, agent_b):
        if ag not in known:
            raise ValueError(f"no memories of agent {ag!r}" + (f" (agents: {', '.join(sorted(known))})" if known else ""))
    live = view.live
    sides = []
    for ag in (agent_a, agent_b):
        rows = np.flatnonzero(live & (view.arrays.agent == ag))
        info = _rows_info(store, view.arrays.ids[rows].tolist())
        keys = np.empty(len(rows), dtype=object)
        keys[:] = [" ".join(view.content.get(r, info.get(view.arrays.ids[r], {}).get("content", "")).split()).lower()
                   for r in rows.tolist()]
        first = np.unique(keys, return_index=True)[1] if len(keys) else np.zeros(0, np.int64)
        first.sort()  # a text an agent holds twice is matched once
        sides.append(_view_side(store, view, rows[first], keys[first]))
    changes = _compare(sides[0], sides[1], by_text=True)
    return Diff("agents", agent_a, agent_b, _sorted(changes))
