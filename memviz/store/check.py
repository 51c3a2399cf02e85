"""`memviz check`: is a store sound, and what can be rebuilt from its own rows.

Each check gives Findings: what is wrong, what it means, how many rows (a few ids) and
whether `repair` can fix it. Repair only rebuilds what is derived from `memories` (the FTS5
index, the vec0 rows, memviz's own triggers) in one audited transaction; it never writes a
memory. Qt-free.
"""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field

import apsw
import numpy as np

from ..tasks import Task, quiet
from .connection import connect
from .errors import ReadOnlyError, StoreError
from .records import NUMBER_DEFAULTS, ODD_VALUES_SQL, TIME_COLUMNS, decode_text, read_values
from .schema import _V1, JSON_COLUMNS, NATIVE_TRIGGERS
from .vectors import NOT_REPAIRABLE_VECTORS, misdeclared_text, native_vec_triggers, vec_ddl, vec_table

FTS = "memories_fts"
#: index name -> the SQL memviz made it with
NATIVE_INDEXES = {re.match(r"CREATE INDEX (\S+)", sql).group(1): sql for sql in _V1 if sql.startswith("CREATE INDEX")}
EXAMPLES = 5
#: the action written to memviz_audit by a repair, and the memory_id it is filed under
REPAIR_ACTION, REPAIR_SUBJECT = "repair", "(store)"


@dataclass
class Finding:
    code: str           # stable key, e.g. "fts_drift"
    title: str          # one line: what is wrong
    meaning: str        # what it means for the user
    count: int = 0      # rows concerned (0 when not countable)
    examples: list[str] = field(default_factory=list)
    repairable: bool = False

    def describe(self) -> str:
        n = f" ({self.count} row{'s' if self.count != 1 else ''}" + (
            ": " + ", ".join(self.examples) + (" …" if self.count > len(self.examples) else "") if self.examples else ""
        ) + ")" if self.count else ""
        fix = "repairable with --repair" if self.repairable else "not repairable by memviz"
        return f"{self.title}{n}\n    {self.meaning}\n    {fix}"


@dataclass
class CheckReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # checks not run, with why
    checked: str = "SQLite, full-text and vector indexes, links and values"  # what a clean report vouches for

    @property
    def clean(self) -> bool:
        return not self.findings

    @property
    def repairable(self) -> list[Finding]:
        return [f for f in self.findings if f.repairable]

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self.findings)

    def as_dict(self) -> dict:
        return {"path": self.path, "clean": self.clean, "findings": [asdict(f) for f in self.findings],
                "skipped": self.skipped}


# ------------------------------------------------------------------ the checks
def check_store(store, task: Task | None = None) -> CheckReport:
    """Every check, in order, reporting progress to `task` and stopping (Cancelled) between steps."""
    task = task or quiet()
    report = CheckReport(store.path)
    steps = [("SQLite integrity", sqlite_integrity), ("schema", schema_findings), ("full-text index", fts_findings),
             ("vector index", vec_findings), ("JSON columns", json_findings), ("values", value_findings), ("links", link_findings)]
    if store.backend != "sqlite":  # the file's own checks and its derived indexes are SQLite's
        steps = [("schema", native_schema_findings), ("JSON columns", json_findings), ("links", link_findings)]
        report.checked = "the native schema, JSON columns and links"
        report.skipped.append(f"SQLite integrity, full-text and vector index checks: {store.backend} keeps its "
                              "pages and indexes itself (memviz makes none of them from the rows), so there is "
                              "nothing for memviz to compare or rebuild")
        report.skipped.append("unreadable values: not listed here on this server (its typed columns hold no text, "
                              "but a number may be inf or NaN and a time milliseconds; memviz reads those as on "
                              "SQLite and flags them ⚠ in the window)")
    for i, (label, step) in enumerate(steps):
        task.check()
        task.progress(i / len(steps), label)
        try:
            found, skipped = step(store)
        except (apsw.Error, StoreError, UnicodeError) as e:  # a damaged page or value: say so, go on
            found, skipped = [Finding("check_failed", f"the {label} check could not run: {e}",
                                      "A value it reads is damaged or cannot be decoded; the other checks "
                                      "ran. Restore a backup, or recover a copy (`sqlite3 DB .recover`).")], []
        report.findings.extend(found)
        report.skipped.extend(skipped)
    task.progress(1.0, "done")
    _tell_hybrid(report)
    return report


#: what is known this session about each store's full-text index: path -> warning (None = sound).
#: Checks and repairs fill it; otherwise the first hybrid query on a store probes once (the
#: indexed documents against the rows: cheap, below a size limit). The engine's hybrid preset
#: adds the warning to its result.
_FTS_STATE: dict[str, str | None] = {}
_FTS_LOCK = threading.Lock()
WARNING = "warning: "


def known_fts_damage(store) -> str | None:
    """The warning for a store whose full-text index is known to be out of step, else None.
    (SQLite's FTS5 index only: a PostgreSQL store's full-text column is generated by the server.)"""
    if store.backend != "sqlite":
        return None
    with _FTS_LOCK:
        if store.path in _FTS_STATE:
            return _FTS_STATE[store.path]
    found = quick_fts_probe(store.conn)
    with _FTS_LOCK:
        _FTS_STATE.setdefault(store.path, None if found is None else WARNING + found)
        return _FTS_STATE[store.path]


def note_fts_state(path: str, damage: str | None) -> None:
    """Record what a check (or a repair: None) found about a store's full-text index."""
    with _FTS_LOCK:
        _FTS_STATE[path] = None if damage is None else WARNING + damage


def _tell_hybrid(report: CheckReport) -> None:
    """Hybrid queries warn from what the last check of this store found."""
    fts = [f for f in report.findings if f.code in ("fts_drift", "missing_triggers")]
    note_fts_state(report.path, None if not fts else
                   "; ".join(f.title for f in fts) + ": text matches are incomplete; run `memviz check --repair`")


def sqlite_integrity(store):
    bad = [r[0] for r in store.conn.execute("PRAGMA integrity_check(50)") if r[0] != "ok"]
    if not bad:
        return [], []
    return [Finding("sqlite_integrity", "SQLite's integrity_check reports damage: " + "; ".join(bad[:3]),
                    "The file itself is damaged; memviz opens it read-only. Restore a backup, or copy out what "
                    "can be read (`sqlite3 DB .recover`).", len(bad))], []


def native_schema_findings(store):
    """What a non-SQLite store's own integrity() finds missing from memviz's schema."""
    return [Finding("schema_problem", p, "memviz opens this store read-only until the schema is complete.")
            for p in store.integrity()], []


def schema_findings(store):
    """memviz's own triggers missing or changed, and objects it did not make."""
    out = []
    have = {n: sql for n, sql in store.conn.execute("SELECT name, sql FROM sqlite_master WHERE type='trigger'")}
    want = dict(NATIVE_TRIGGERS)
    for dim in (store.report.vec_tables if store.report else {}):
        want.update(native_vec_triggers(dim))
    missing = sorted(n for n in want if n not in have)
    if missing:
        out.append(Finding("missing_triggers", "memviz's index triggers are missing: " + ", ".join(missing),
                           "Rows written since they were dropped are not in the full-text or vector index.",
                           repairable=True))
    indexes = {n for (n,) in store.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    lost = sorted(n for n in NATIVE_INDEXES if n not in indexes)
    if lost:
        out.append(Finding("missing_indexes", "memviz's indexes are missing: " + ", ".join(lost),
                           "Filters by time, agent and kind, and the retired list, read every row.",
                           repairable=True))
    rep = store.report
    if rep is not None and rep.foreign_objects:
        names = [f"{t} {n}" for t, n, _ in rep.foreign_objects]
        out.append(Finding("foreign_objects", "triggers or views memviz did not make: " + ", ".join(names[:EXAMPLES]),
                           "They would run on every edit, so memviz opens the store read-only; remove them with "
                           "sqlite3 if they are not the agent's.", len(names), names[:EXAMPLES]))
    for p in (rep.problems if rep is not None else []):
        out.append(Finding("schema_problem", p, "The vector table does not match what memviz made."))
    return out, []


def fts_findings(store):
    """Documents missing from or left over in the FTS5 index (by rowid), then FTS5's own
    check of the index against the content (rank=1), which needs a writable handle."""
    out, skipped = [], []
    missing, stale = fts_doc_drift(store.conn)
    if missing or stale:
        ids = _ids_of_rowids(store.conn, missing[:EXAMPLES])
        out.append(Finding(
            "fts_drift", "the full-text index is out of step with memories: " + ", ".join(
                part for part in (f"{len(missing)} memories not indexed" if missing else "",
                                  f"{len(stale)} entries for rows that are gone" if stale else "") if part),
            "Text search and the hybrid preset miss or mis-rank these memories.", len(missing) + len(stale),
            ids + [f"rowid {r}" for r in stale[:EXAMPLES - len(ids)]], repairable=True))
    error, why_skipped = fts_integrity_error(store)
    if why_skipped:
        skipped.append(f"full-text content check: {why_skipped}")
    elif error and not out:
        out.append(Finding("fts_drift", f"the full-text index does not match the memories' text ({error})",
                           "Text search and the hybrid preset answer from stale text.", repairable=True))
    return out, skipped


def fts_doc_drift(conn) -> tuple[list[int], list[int]]:
    """(rowids of memories not in the index, rowids in the index with no memory). FTS5 keeps
    one `_docsize` row per indexed document, written and removed with its index entries, so
    comparing keys is enough: two integer-key scans, read-only, no temporary table (it also
    runs on the window's shared connection, for the hybrid warning)."""
    try:
        missing = [r for (r,) in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid NOT IN (SELECT id FROM {FTS}_docsize) ORDER BY rowid")]
        stale = [r for (r,) in conn.execute(
            f"SELECT id FROM {FTS}_docsize WHERE id NOT IN (SELECT rowid FROM memories) ORDER BY id")]
    except apsw.SQLError:  # no docsize table (an FTS5 table made with columnsize=0): ask the index itself
        return _fts_doc_drift_from_index(conn)
    return missing, stale


def _fts_doc_drift_from_index(conn) -> tuple[list[int], list[int]]:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memviz_fts_docs USING fts5vocab(main, {FTS}, 'instance')")
    try:
        indexed = {r[0] for r in conn.execute("SELECT DISTINCT doc FROM temp.memviz_fts_docs")}
    finally:
        conn.execute("DROP TABLE temp.memviz_fts_docs")
    rows = {r: bool(t) for r, t in conn.execute("SELECT rowid, length(CAST(content AS BLOB)) > 0 FROM memories")}
    # a text with no word (empty, punctuation only) has no index entry
    missing = sorted(r for r, has_text in rows.items() if r not in indexed and has_text and _has_token(conn, r))
    return missing, sorted(indexed - rows.keys())


def _has_token(conn, rowid) -> bool:
    row = conn.execute("SELECT CAST(content AS BLOB) FROM memories WHERE rowid=?", (rowid,)).fetchone()
    return any(ch.isalnum() for ch in decode_text(row[0] if row else None)[0])


def fts_integrity_error(store) -> tuple[str | None, str | None]:
    """(FTS5's error, None) or (None, why it was skipped). On a read-only open the check runs on
    a short-lived second connection when the file may be written (the check itself writes nothing)."""
    sql = f"INSERT INTO {FTS}({FTS}, rank) VALUES ('integrity-check', 1)"
    conn, own = store.conn, False
    if store.read_only:
        path = store.conn_path  # the file SQLite opens (a framework store's mirror)
        if not os.access(path, os.W_OK) or not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
            return None, "the file is not writable, and FTS5 runs this check only on a writable handle"
        try:
            conn, own = connect(path), True
        except apsw.Error as e:
            return None, f"could not open a second handle ({e})"
    try:
        conn.execute(sql)
        return None, None
    except apsw.ReadOnlyError:
        return None, "FTS5 runs this check only on a writable handle"
    except apsw.BusyError:
        return None, "the store is busy (another process is writing)"
    except apsw.Error as e:
        return str(e), None
    finally:
        if own:
            conn.close()


def vec_findings(store):
    """Each embedding in the vec0 table of its dimension with the same bytes; nothing else there.
    Also what no table can hold (a blob that is no float32 vector, a vector with NaN or infinite
    values) and vec0 tables declared for another dimension than their name's."""
    conn = store.conn
    misdeclared = store.report.misdeclared if store.report else {}
    want: dict[int, dict[str, bytes]] = {}
    not_vectors, not_finite = [], []
    for mid, blob in conn.execute("SELECT CAST(id AS BLOB), embedding FROM memories WHERE typeof(embedding) = 'blob'"):
        if len(blob) and len(blob) % 4 == 0:
            want.setdefault(len(blob) // 4, {})[_text(mid)] = bytes(blob)
        else:
            not_vectors.append((_text(mid), len(blob)))
    for vectors in want.values():
        matrix = np.frombuffer(b"".join(vectors.values()), dtype="<f4").reshape(len(vectors), -1)
        not_finite += [mid for mid, ok in zip(vectors, np.isfinite(matrix).all(axis=1)) if not ok]
    tables = {int(n[len("vec_memories_"):]) for (n,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'vec_memories_[0-9]*' "
        "AND name NOT GLOB 'vec_memories_*_*' AND sql LIKE '%vec0%'") if n not in misdeclared}
    out = [Finding("vec_table_misdeclared", misdeclared_text(name, dim),
                   "Vector search cannot use it, and memviz opens the store read-only (its triggers would fail "
                   "every write of a vector). It holds only copies of memories.embedding: the repair makes it again.",
                   examples=[name], repairable=True) for name, dim in misdeclared.items()]
    no_table = {d: len(v) for d, v in want.items() if d not in tables and vec_table(d) not in misdeclared}
    if no_table:
        n = sum(no_table.values())
        out.append(Finding("vec_table_missing", "embeddings with no vector table: " + ", ".join(
            f"{c} of {d} dimensions" for d, c in sorted(no_table.items())),
            "Vector search does not see them (an agent wrote them with plain SQL); the repair makes the table.",
            n, repairable=True))
    if not_vectors:
        sizes = sorted({size for _, size in not_vectors})
        out.append(Finding("vec_not_a_vector", "embeddings of " + ", ".join(map(str, sizes)) + " bytes, which is no "
                           "float32 vector", "These memories have no vector: search and the map leave them out. "
                           + NOT_REPAIRABLE_VECTORS + ".", len(not_vectors), [m for m, _ in not_vectors[:EXAMPLES]]))
    if not_finite:
        out.append(Finding("vec_not_finite", "embeddings holding NaN or infinite values",
                           "No distance to them can be computed: vector search and the map cannot place them. "
                           + NOT_REPAIRABLE_VECTORS + ".", len(not_finite), not_finite[:EXAMPLES]))
    missing, extra, differ = [], [], []
    for dim in sorted(tables):
        expect = want.get(dim, {})
        have: dict[str, bytes] = {}
        for mid, blob in conn.execute(f"SELECT CAST(memory_id AS BLOB), embedding FROM {vec_table(dim)}"):
            have[_text(mid)] = bytes(blob)
        missing += sorted(expect.keys() - have.keys())
        extra += sorted(have.keys() - expect.keys())
        differ += sorted(m for m in expect.keys() & have.keys() if expect[m] != have[m])
    for code, ids, title, meaning in (
            ("vec_missing", missing, "embeddings missing from the vector index",
             "Vector search and the hybrid preset never return these memories."),
            ("vec_extra", extra, "vector-index rows with no such embedding in memories",
             "Vector search may return memories for a vector they no longer have, or ids that are gone."),
            ("vec_differ", differ, "vector-index rows whose vector differs from memories.embedding",
             "Vector search ranks these memories by an old vector.")):
        if ids:
            out.append(Finding(code, title, meaning, len(ids), ids[:EXAMPLES], repairable=True))
    return out, []


def json_findings(store):
    out = []
    for col in JSON_COLUMNS:
        bad = store.malformed_json(col)
        if bad:
            out.append(Finding(f"bad_json_{col}", f"`{col}` does not hold a JSON {'object' if col == 'attributes' else 'list'}",
                               "memviz shows it as empty; the agent that wrote it may misread it too. Fix the rows "
                               "in the agent or with an edit.", len(bad), bad[:EXAMPLES]))
    return out, []


def value_findings(store):
    """Times and numbers an agent wrote in a form memviz cannot read (the row reader's flags)."""
    cols = TIME_COLUMNS + tuple(NUMBER_DEFAULTS)
    bad = []
    for mid, *values in store.conn.execute(
            f"SELECT CAST(id AS BLOB), {', '.join(cols)} FROM memories WHERE {ODD_VALUES_SQL}"):
        if read_values(dict(zip(cols, values))):
            bad.append(_text(mid))
    if not bad:
        return [], []
    return [Finding("unreadable_values", "times or numbers that cannot be read ('yesterday', 'very high', inf …)",
                    "Shown as \"unreadable time\" or the column's default and flagged ⚠; such a memory sorts and "
                    "scores as if it had no time. Fix them in the agent, or edit them in memviz: Set importance "
                    "writes over an unreadable importance, Restore over an unreadable retirement time, Confirm over "
                    "an unreadable decay rate (undo puts the agent's value back).",
                    len(bad), bad[:EXAMPLES])], []


def link_findings(store):
    """Dangling source_ids, supersedes and entity_ids; supersede cycles."""
    out = []
    prov = store.provenance()
    for kind, title in (("source", "`source_ids` naming memories that do not exist"),
                        ("supersedes", "`attributes.supersedes` naming memories that do not exist")):
        rows = sorted({f"{a} -> {b}" for a, b, k in prov.dangling if k == kind})
        if rows:
            out.append(Finding(f"dangling_{kind}", title, "Shown as broken links; the memory they came from is gone "
                               "or was never imported.", len(rows), rows[:EXAMPLES]))
    known = {e["id"] for e in store.entities()}
    rows = [(mid, e) for mid, e in store.entity_links() if e not in known]
    if rows:
        out.append(Finding("dangling_entities", "`entity_ids` naming entities that do not exist",
                           "Shown as broken links; the entity graph lacks them.", len(rows),
                           [f"{a} -> {b}" for a, b in rows[:EXAMPLES]]))
    cycles = supersede_cycles(prov.supersedes)
    if cycles:
        out.append(Finding("supersede_cycle", "memories that supersede each other in a circle",
                           "Each retires the other: which one is current cannot be told. Restore the right one "
                           "and retire the rest by hand.", len(cycles),
                           [" -> ".join(c) for c in cycles[:EXAMPLES]]))
    return out, []


def supersede_cycles(links) -> list[list[str]]:
    """Each cycle in the supersedes graph (new -> old), once, starting at its smallest id."""
    nxt: dict[str, list[str]] = {}
    for new, old in links:
        nxt.setdefault(new, []).append(old)
    seen, cycles = set(), []
    for start in sorted(nxt):
        path, on_path, stack = [], {}, [(start, iter(nxt.get(start, ())))]
        if start in seen:
            continue
        path.append(start)
        on_path[start] = 0
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                seen.add(path.pop())
                on_path.pop(node, None)
                continue
            if child in on_path:
                cyc = path[on_path[child]:]
                i = cyc.index(min(cyc))
                cyc = cyc[i:] + cyc[:i]
                if cyc not in cycles:
                    cycles.append(cyc)
            elif child not in seen and child in nxt:
                on_path[child] = len(path)
                path.append(child)
                stack.append((child, iter(nxt[child])))
    return cycles


def _ids_of_rowids(conn, rowids) -> list[str]:
    """The ids of these rows; a rowid the (damaged) table no longer yields is named as such."""
    out = []
    for r in rowids:
        row = conn.execute("SELECT CAST(id AS BLOB) FROM memories WHERE rowid=?", (r,)).fetchone()
        out.append(f"(rowid {r}, unreadable)" if row is None else _text(row[0]))
    return out


def _text(raw) -> str:
    """An id or text read as bytes (it may not be valid UTF-8: an agent wrote it)."""
    return decode_text(raw)[0] if isinstance(raw, (bytes, bytearray, memoryview)) else str(raw)


# ------------------------------------------------------------------ repair
def repair_plan(report: CheckReport) -> list[str]:
    """What `repair` will do, one line each (empty: nothing it can fix)."""
    codes = {f.code for f in report.repairable}
    plan = []
    if "missing_indexes" in codes:
        plan.append("re-create memviz's missing indexes")
    if "missing_triggers" in codes:
        plan.append("re-create memviz's missing index triggers")
    if "fts_drift" in codes or "missing_triggers" in codes:
        plan.append("rebuild the full-text index from memories.content (FTS5 'rebuild')")
    misdeclared = [f.examples[0] for f in report.repairable if f.code == "vec_table_misdeclared"]
    if misdeclared:
        plan.append(f"drop the vector table{'s' if len(misdeclared) > 1 else ''} {', '.join(misdeclared)} "
                    "(declared for another dimension) and make it again")
    if codes & {"vec_table_missing", "vec_missing", "vec_extra", "vec_differ", "missing_triggers",
                "vec_table_misdeclared"}:
        plan.append("rebuild the vector tables' rows from memories.embedding")
    if plan:
        plan.append("write one audit entry; no memory is changed")
    return plan


def repair(store, report: CheckReport, *, actor: str = "memviz", note: str | None = None) -> list[str]:
    """Carry out repair_plan(report) in one audited transaction; returns what was done."""
    plan = repair_plan(report)
    if not plan:
        return []
    if store.read_only:
        raise ReadOnlyError(f"{store.path} is open read-only ({store.read_only_reason}); nothing was repaired.")
    codes = {f.code for f in report.repairable}
    done = []
    with store.transaction() as c:
        for code, kind, native, said in (("missing_indexes", "index", NATIVE_INDEXES, "re-created the indexes"),
                                         ("missing_triggers", "trigger", NATIVE_TRIGGERS, "re-created the index triggers")):
            if code in codes:
                have = {n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}
                for name, sql in native.items():
                    if name not in have:
                        c.execute(sql)
                done.append(said)
        if any(line.startswith("rebuild the full-text") for line in plan):
            c.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')")
            done.append("rebuilt the full-text index")
        misdeclared = dict(store.report.misdeclared) if store.report else {}
        for name in misdeclared:  # vec0 drops its shadow tables with it; the triggers on memories stay
            c.execute(f'DROP TABLE "{name}"')
            done.append(f"rebuilt {name}")
        if any(line.startswith("rebuild the vector") for line in plan):
            dims = [int(d) for (d,) in c.execute(
                "SELECT DISTINCT length(embedding) / 4 FROM memories WHERE typeof(embedding) = 'blob' "
                "AND length(embedding) > 0 AND length(embedding) % 4 = 0")]
            dims = sorted(set(dims) | set(store.report.vec_tables if store.report else ())
                          | {int(n.rsplit("_", 1)[1]) for n in misdeclared if n.rsplit("_", 1)[1].isdigit()})
            for dim in dims:
                t = vec_table(dim)
                have = {n for (n,) in c.execute("SELECT name FROM sqlite_master")}
                for sql in vec_ddl(dim):
                    name = sql.split()[2] if sql.startswith("CREATE TRIGGER") else t
                    if name not in have:
                        c.execute(sql)
                c.execute(f"DELETE FROM {t}")
                c.execute(f"INSERT INTO {t}(memory_id, embedding) SELECT id, embedding FROM memories "
                          f"WHERE typeof(embedding) = 'blob' AND length(embedding) = {4 * dim}")
            done.append("rebuilt the vector rows of " + ", ".join(f"{d}-d" for d in dims))
        store.audit(c, REPAIR_ACTION, REPAIR_SUBJECT, {"findings": [f.code for f in report.repairable]},
                    {"done": done, "at": time.time()}, actor, note or "memviz check --repair")
    if store.report is not None:
        from . import schema  # the vec tables may be new
        store.report = schema.inspect(store.conn)
    return done


def quick_fts_probe(conn, limit: int = 200_000) -> str | None:
    """A cheap look at the FTS index (its documents against the rows, fts_doc_drift): a message
    when they differ; None when they agree or the store is too large to look cheaply. Run on
    a store's first hybrid query to warn it (retrieval/hybrid.py)."""
    try:
        n = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        if n > limit:
            return None
        missing, stale = fts_doc_drift(conn)
    except (apsw.Error, StoreError):
        return None
    if missing or stale:
        return (f"the full-text index is out of step with the memories ({len(missing)} missing, {len(stale)} "
                "left over): text matches are incomplete; run `memviz check --repair`")
    return None
