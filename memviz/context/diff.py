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

from .asof import AsOfView, Timeline
from .texts import parse_tags

ORDER = ("added", "reflection", "corrected", "retired", "restored", "missing", "content", "importance",
         "protected", "tags", "only_a", "only_b", "rank")
#: each kind in a user's words, as the Diff panel and `memviz diff` head its group
KIND_TITLES = {
    "added": "added", "reflection": "reflections gained", "corrected": "corrected", "retired": "retired",
    "restored": "restored", "missing": "missing from the second", "content": "text changed",
    "importance": "importance", "protected": "protection", "tags": "tags", "only_a": "only the first agent knows",
    "only_b": "only the second agent knows", "rank": "the query's top k",
}


def heading(kind: str, n: int) -> str:
    """The heading of the `n` changes of `kind`: "reflections gained (16)"."""
    return f"{KIND_TITLES.get(kind, kind)} ({n:,})"


@dataclass(slots=True)
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

    def headings(self) -> list[str]:
        """Every kind of change there is, with its count, in a user's words (ORDER)."""
        return [heading(k, n) for k, n in self.counts().items()]

    def as_dict(self) -> dict:
        return {"what": self.what, "a": self.a_label, "b": self.b_label, "counts": self.counts(),
                "notes": self.notes, "changes": [c.as_dict() for c in self.changes]}


def _sorted(changes: list[Change]) -> list[Change]:
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(changes, key=lambda c: rank.get(c.kind, len(ORDER)))


# ------------------------------------------------------------------ reading only the rows a change names
def _fields(store, ids, field: str) -> dict:
    """id -> one column of those memories (as get() reads it), without their vectors."""
    return {r["id"]: r[field] for r in store.get_many(list(dict.fromkeys(ids)), fields=(field,))}


def _texts(store, ids) -> dict[str, str]:
    return _fields(store, ids, "content")


def _tags(store, ids) -> dict[str, list]:
    return {k: parse_tags(v) for k, v in _fields(store, ids, "tags").items()}


def _sources(store, ids) -> dict[str, list]:
    return {k: [str(x) for x in v] for k, v in _fields(store, ids, "source_ids").items()}


def _snippets(side, rows: np.ndarray) -> list[str]:
    """The start of each row's text on one line: the as-of override, else the arrays' preview,
    else read from the store (a short substring only)."""
    a = side.arrays
    if a.preview is not None:
        out = a.preview[rows].tolist()
    else:
        ids = a.ids[rows].tolist()
        got = _texts(side.store, ids)
        out = [got.get(m, "")[:120] for m in ids]
    if side.content:
        out = [side.content[r].replace("\n", " ") if r in side.content else t for r, t in zip(rows.tolist(), out)]
    return out


def _short(text: str, width: int = 70) -> str:
    text = (text or "").replace("\n", " ")
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
    by_row: bool = False      # keys are the memory ids of `rows` (so equal rows match)

    def live(self) -> np.ndarray:
        return np.isnan(self.arrays.valid_until[self.rows])


def _view_side(store, view: AsOfView, rows=None, keys=None) -> _Side:
    rows = np.flatnonzero(view.visible) if rows is None else rows
    by_row = keys is None
    keys = view.arrays.ids[rows] if keys is None else keys
    return _Side(store, view.arrays, rows, keys, view.content, view.tags, by_row)


def _compare(a: _Side, b: _Side, *, tag_rows=None, by_text=False) -> list[Change]:
    """Records for the memories of b against those of a. `tag_rows`: rows of a whose tags may
    differ (None = compare every matched memory's tags)."""
    changes: list[Change] = []
    match = _match(a, b)
    has = match >= 0
    ia, ib = np.flatnonzero(has), match[has]
    ra, rb = a.rows[ia], b.rows[ib]
    live_a, live_b = a.live(), b.live()
    only_b = np.ones(len(b.rows), bool)
    only_b[ib] = False
    aa, ab = a.arrays, b.arrays
    new_rows = b.rows[only_b]
    retired = ra[live_a[ia] & ~live_b[ib]]
    restored = ra[~live_a[ia] & live_b[ib]]
    gone = a.rows[~has]
    snip_a = dict(zip(np.concatenate([retired, restored, gone]).tolist(),
                      _snippets(a, np.concatenate([retired, restored, gone]).astype(np.int64))))

    # corrections: a retired memory whose successor (attributes.supersedes) is new in b
    successor = {}
    if not by_text and len(retired):
        new_ids = set(ab.ids[new_rows].tolist())
        successor = {old: new for new, old in b.store.supersede_links() if new in new_ids}
    pairs = [(r, successor[aa.ids[r]]) for r in retired.tolist() if aa.ids[r] in successor]
    full_a = _texts(a.store, [aa.ids[r] for r, _ in pairs])
    full_b = _texts(b.store, [n for _, n in pairs])
    corrected_new = set()
    for r, new_id in pairs:
        old_id = aa.ids[r]
        corrected_new.add(new_id)
        old_t, new_t = a.content.get(r, full_a.get(old_id, "")), full_b.get(new_id, "")
        changes.append(Change("corrected", [old_id, new_id], f"corrected: {_short(old_t, 40)} → {_short(new_t, 40)}",
                              old_t, new_t))
    for r in retired.tolist():
        if aa.ids[r] not in successor:
            changes.append(Change("retired", [aa.ids[r]], f"retired: {_short(snip_a[r])}"))
    for r in restored.tolist():
        changes.append(Change("restored", [aa.ids[r]], f"restored: {_short(snip_a[r])}"))

    # memories only in b: added (moments, stores) or only_b (agents)
    new_ids, new_kinds = ab.ids[new_rows].tolist(), ab.kind[new_rows].tolist()
    reflections = [] if by_text else [m for m, k in zip(new_ids, new_kinds) if k == "reflection"]
    evidence = _sources(b.store, reflections) if reflections else {}
    snips = [t if len(t) <= 70 else t[:69] + "…" for t in _snippets(b, new_rows)]
    new = [i for i, m in enumerate(new_ids) if m not in corrected_new]
    if by_text:
        agents = ab.agent[new_rows].tolist()
        changes += [Change("only_b", [new_ids[i]], f"only in {agents[i]}: {snips[i]}") for i in new]
    else:
        live_new = live_b[only_b].tolist()
        changes += [Change("reflection", [new_ids[i]] + ev, f"reflection gained from {len(ev)} memories: {snips[i]}",
                           evidence=ev)
                    for i in new if (ev := evidence.get(new_ids[i])) is not None]
        changes += [Change("added", [new_ids[i]],
                           f"added [{new_kinds[i]}]{'' if live_new[i] else ' (retired since)'}: {snips[i]}")
                    for i in new if new_ids[i] not in evidence]
    for r in gone.tolist():
        if by_text:
            changes.append(Change("only_a", [aa.ids[r]], f"only in {aa.agent[r]}: {_short(snip_a[r])}"))
        else:
            changes.append(Change("missing", [aa.ids[r]], f"not in the second store: {_short(snip_a[r])}"))

    # field changes of matched memories
    def ids_pair(x, y):
        return [aa.ids[x]] if aa.ids[x] == ab.ids[y] else [aa.ids[x], ab.ids[y]]
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


def _match(a: _Side, b: _Side) -> np.ndarray:
    """For each memory of a, its position in b (-1: none). Two moments of one load share their
    rows, so the match is positional, without a dictionary of 100k ids."""
    if a.arrays.ids is b.arrays.ids and a.keys is not None and b.keys is not None and a.by_row and b.by_row:
        pos = np.full(len(a.arrays), -1, np.int64)
        pos[b.rows] = np.arange(len(b.rows))
        return pos[a.rows]
    index_b = {k: j for j, k in enumerate(b.keys.tolist())}
    return np.fromiter((index_b.get(k, -1) for k in a.keys.tolist()), np.int64, count=len(a.rows))


def _differ(x, y, ra, rb):
    d = np.flatnonzero(x != y)
    return ra[d].tolist(), rb[d].tolist()


def _content_changes(a, b, ra, rb, ids_pair) -> list[Change]:
    """Text changed in place (same id). In one store only rows an as-of override names can
    differ; between stores every matched row is compared."""
    out = []
    if a.store is b.store:
        rows = set(a.content) | set(b.content)
        pairs = [(x, y) for x, y in zip(ra.tolist(), rb.tolist()) if x in rows or y in rows]
    else:
        pairs = list(zip(ra.tolist(), rb.tolist()))
    if not pairs:
        return out
    ids_a, ids_b = [a.arrays.ids[x] for x, _ in pairs], [b.arrays.ids[y] for _, y in pairs]
    if a.store is b.store:
        text_a = text_b = _texts(a.store, ids_a + ids_b)
    else:
        text_a, text_b = _texts(a.store, ids_a), _texts(b.store, ids_b)
    for x, y in pairs:
        ta = a.content.get(x, text_a.get(a.arrays.ids[x]))
        tb = b.content.get(y, text_b.get(b.arrays.ids[y]))
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
    ids_a, ids_b = [a.arrays.ids[x] for x, _ in pairs], [b.arrays.ids[y] for _, y in pairs]
    if a.store is b.store:
        tags_a = tags_b = _tags(a.store, ids_a + ids_b)
    else:
        tags_a, tags_b = _tags(a.store, ids_a), _tags(b.store, ids_b)
    out = []
    for x, y in pairs:
        ta = a.tags.get(x, tags_a.get(a.arrays.ids[x], []))
        tb = b.tags.get(y, tags_b.get(b.arrays.ids[y], []))
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
    from ..embed import EmbedderUnavailable
    from ..retrieval import Engine, preset_params

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
    from ..store import iso
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
        texts = _texts(store, view.arrays.ids[rows].tolist())
        keys = np.empty(len(rows), dtype=object)
        keys[:] = [" ".join(view.content.get(r, texts.get(view.arrays.ids[r], "")).split()).lower()
                   for r in rows.tolist()]
        first = np.unique(keys, return_index=True)[1] if len(keys) else np.zeros(0, np.int64)
        first.sort()  # a text an agent holds twice is matched once
        sides.append(_view_side(store, view, rows[first], keys[first]))
    changes = _compare(sides[0], sides[1], by_text=True)
    return Diff("agents", agent_a, agent_b, _sorted(changes))
