"""What every importer shares: the report of skipped and fixed-up items, progress and
cancel (a `memviz.tasks.Task`: progress counts texts embedded + records written, text
"Importing done/total"; a cancel raises Cancelled), local embedding, and writing the native store.

The store is built at a hidden temporary path beside the output and moved into place
only once it is complete, so an interrupted or failed import leaves the output either
complete (the old file, or the new one) or absent — never half-written. The source is
only ever read. Into a PostgreSQL database (`-o postgresql://…`, an empty one) the store is
built as a temporary file the same way and then copied in (`store.copy`, one transaction).
"""
from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import memviz

from ..store import create as create_store
from ..store.bulk import bulk_load
from ..store.copy import copy_store, database_refusal
from ..store.errors import StoreError, ValidationError
from ..store.postgres.dsn import is_dsn, redact
from ..store.records import normalize
from ..tasks import Cancelled, Steps, Task, quiet

EMBED_BATCH = 256
INSERT_BATCH = 500
#: at most this many skipped/quirk items are kept in the store's provenance (counts are always exact)
META_ITEMS = 500


class ImportFailed(ValueError):
    """The import cannot be done; the message says why (and nothing was written)."""


class NotThisFormat(ImportFailed):
    """The source is not in the format asked for (import_source adds which format it is in,
    or what it looked like and what memviz imports)."""


@dataclass
class Issue:
    where: str     # "line 12", "node_881", "Isabella Rodriguez/node_12"
    code: str      # short category, e.g. "malformed-json", "filling-string"
    message: str


@dataclass
class ImportReport:
    """What an import read, wrote, skipped (lost) and fixed up (kept, with a note)."""

    format: str
    source: str
    output: str | None = None
    read: int = 0
    imported: int = 0
    agents: list[str] = field(default_factory=list)
    skipped: list[Issue] = field(default_factory=list)
    quirks: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    embedding: dict = field(default_factory=dict)   # model, dim, origin ("source" | "local"), count
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def skip(self, where: str, code: str, message: str) -> None:
        self.skipped.append(Issue(where, code, message))

    def quirk(self, where: str, code: str, message: str) -> None:
        self.quirks.append(Issue(where, code, message))

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    @staticmethod
    def _grouped(issues: list[Issue]) -> dict[str, int]:
        return dict(Counter(i.code for i in issues))

    def to_meta(self) -> dict:
        """The provenance written to memviz_meta["import"]."""
        def items(issues):
            return [{"where": i.where, "code": i.code, "message": i.message} for i in issues[:META_ITEMS]]
        return {
            "format": self.format, "source": self.source, "memviz_version": memviz.__version__,
            "started_at": self.started_at, "finished_at": self.finished_at,
            "counts": {"read": self.read, "imported": self.imported, "skipped": len(self.skipped),
                       "quirks": len(self.quirks)},
            "agents": self.agents, "embedding": self.embedding,
            "skipped": items(self.skipped), "skipped_by_code": self._grouped(self.skipped),
            "quirks": items(self.quirks), "quirks_by_code": self._grouped(self.quirks),
            "warnings": self.warnings,
        }

    def summary(self, limit: int = 10) -> list[str]:
        """Lines for a person: what was imported, then each kind of problem with examples."""
        emb = self.embedding
        lines = [f"imported {self.imported} of {self.read} memories from {self.source} ({self.format})"
                 + (f" into {self.output}" if self.output else "")]
        if self.agents:
            lines.append("agents: " + ", ".join(a or "(none)" for a in self.agents))
        if emb.get("model"):
            lines.append(f"embeddings: {emb['count']} x {emb['dim']}-d {emb['model']} ({emb['origin']})")
        for title, issues in (("skipped", self.skipped), ("kept with a note", self.quirks)):
            by_code: dict[str, list[Issue]] = {}
            for i in issues:
                by_code.setdefault(i.code, []).append(i)
            for code, group in by_code.items():
                shown = "; ".join(f"{i.where}: {i.message}" for i in group[:limit])
                more = f" (and {len(group) - limit} more)" if len(group) > limit else ""
                lines.append(f"{title} [{code}] x{len(group)}: {shown}{more}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return lines


@dataclass
class Prepared:
    """What an importer read, ready to write. `embed_text[i]` is the text to embed locally
    for records[i] (None when it carries its vector or gets none); `where[i]` names it in reports."""

    records: list[dict] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    embed_text: list[str | None] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def add(self, record: dict, where: str, embed_text: str | None = None) -> None:
        self.records.append(record)
        self.where.append(where)
        self.embed_text.append(embed_text)


# --------------------------------------------------------------------------- output path
_SIDECARS = ("-wal", "-shm", "-journal")


def check_output(output, force: bool, sources=()) -> str:
    """The absolute output path, or ImportFailed saying why it cannot be written."""
    out = os.path.abspath(os.fspath(output))
    folder = os.path.dirname(out)
    if not os.path.isdir(folder):
        raise ImportFailed(f"The folder {folder} does not exist; create it first.")
    if os.path.isdir(out):
        raise ImportFailed(f"{out} is a folder; give the path of the store file to write (e.g. {out}/memory.db).")
    for src in sources:
        src = os.path.abspath(os.fspath(src))
        if out == src or (os.path.exists(out) and os.path.exists(src) and os.path.samefile(out, src)):
            raise ImportFailed(f"The output {out} is the source itself; the source is never overwritten.")
    if os.path.exists(out) and not force:
        raise ImportFailed(f"{out} already exists; choose another output or pass --force to replace it.")
    return out


def _remove_db_files(path: str) -> None:
    for p in (path, *(path + s for s in _SIDECARS)):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _place(tmp: str, out: str, force: bool) -> None:
    """Move the finished store into place: without --force never over an existing file."""
    if not force:
        try:
            os.link(tmp, out)   # atomic and refuses an existing file, unlike rename
        except FileExistsError:
            raise ImportFailed(f"{out} appeared while importing; nothing was replaced (pass --force to replace it).") from None
        except OSError:         # a filesystem without hard links
            if os.path.exists(out):
                raise ImportFailed(f"{out} appeared while importing; nothing was replaced.") from None
            os.replace(tmp, out)
            return
        os.unlink(tmp)
        return
    # A journal or WAL left by the old file would be replayed onto the new one: remove them.
    for s in _SIDECARS:
        try:
            os.unlink(out + s)
        except FileNotFoundError:
            pass
    os.replace(tmp, out)


# --------------------------------------------------------------------------- embedding + writing
def embed_texts(texts: list[str], embedder, steps: Steps) -> dict[str, object]:
    """text -> unit vector, each distinct text embedded once, in batches (progress between)."""
    unique = list(dict.fromkeys(texts))
    return dict(zip(unique, embedder.embed_many(unique, steps, batch=EMBED_BATCH)))


def _dedupe_ids(prep: Prepared, report: ImportReport) -> None:
    seen: set[str] = set()
    for rec, where in zip(prep.records, prep.where):
        rid = str(rec["id"])
        if rid in seen:
            k = 2
            while f"{rid}~{k}" in seen:
                k += 1
            new = f"{rid}~{k}"
            rec["attributes"] = {**rec.get("attributes", {}), "original_id": rid}
            rec["id"] = new
            report.quirk(where, "duplicate-id", f"id {rid!r} was already used; stored as {new!r}")
            rid = new
        seen.add(rid)


def _report_dangling(prep: Prepared, report: ImportReport) -> None:
    """Source ids naming no imported record are kept (the graph shows them as broken links) and reported."""
    ids = {str(r["id"]) for r in prep.records}
    for rec, where in zip(prep.records, prep.where):
        srcs = rec.get("source_ids")
        if isinstance(srcs, list):
            for s in srcs:
                if str(s) not in ids:
                    report.quirk(where, "dangling-source", f"source id {s!r} is not among the imported records; "
                                                           "kept as a broken link")


def _insert(load, records: list[dict], wheres: list[str], report: ImportReport) -> int:
    """Insert one batch into the bulk load (store/bulk.py); when it rejects the batch, validate
    each record the way the store does so only the bad ones are skipped (and reported).
    Returns how many were inserted."""
    try:
        return len(load.add(records))
    except ValidationError:
        pass
    dims = dict(load.model_dims)
    good = []
    for rec, where in zip(records, wheres):
        try:
            row = normalize(rec, model_dims=dims)
        except ValidationError as e:
            report.skip(where, "invalid", str(e))
            continue
        if row["embedding"] is not None:
            dims.setdefault(row["embedding_model"], len(row["embedding"]) // 4)
        good.append(rec)
    return len(load.add(good))


def write_store(prep: Prepared, report: ImportReport, output: str, *, force: bool, task: Task,
                embedder=None) -> None:
    """Embed what needs it, write every record and the provenance into a temporary store,
    then move it to `output`. Raises ImportFailed / Cancelled with nothing written."""
    if not prep.records:
        raise ImportFailed(f"Nothing to import from {report.source}: no usable records were found."
                           + (" " + "; ".join(report.summary()[1:4]) if report.skipped else ""))
    _dedupe_ids(prep, report)
    _report_dangling(prep, report)
    to_embed = [t for t in prep.embed_text if t is not None]
    n_unique = len(set(to_embed))
    steps = Steps(task, label="Importing")
    steps.start(n_unique + len(prep.records))
    if to_embed:
        if embedder is None:
            from ..embed import default_embedder  # loads the model only when needed
            embedder = default_embedder()
        try:
            vectors = embed_texts(to_embed, embedder, steps)
        except Cancelled:
            raise
        except Exception as e:  # EmbedderUnavailable / EmbeddingError carry a user message
            raise ImportFailed(f"Embedding with {getattr(embedder, 'model', 'the local model')} failed: {e}") from None
        for rec, text in zip(prep.records, prep.embed_text):
            if text is not None:
                rec["embedding"] = vectors[text]
                rec["embedding_model"] = embedder.model

    # About 20 batches: progress and cancel between them.
    size = max(INSERT_BATCH, -(-len(prep.records) // 20))
    folder, name = os.path.split(output)
    tmp = os.path.join(folder, f".{name}.importing-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    store = None
    try:
        store = create_store(tmp)
        imported = 0
        with bulk_load(store) as load:  # one transaction; the indexes built once at the end
            for i in range(0, len(prep.records), size):
                imported += _insert(load, prep.records[i:i + size], prep.where[i:i + size], report)
                steps.advance(len(prep.records[i:i + size]))
        if not imported:
            raise ImportFailed(f"Nothing to import from {report.source}: every record was invalid "
                               f"({report.skipped[0].where}: {report.skipped[0].message}).")
        report.imported = imported
        report.output = output
        models = store.embedding_models()
        if models and not report.embedding.get("model"):
            report.embedding = {"model": models[0][0], "dim": models[0][1], "count": models[0][2], "origin": "local"}
        elif models:
            report.embedding["count"] = sum(n for m, _, n in models if m == report.embedding["model"])
        if n_unique:
            report.embedding["texts_embedded"] = n_unique
        report.finished_at = time.time()
        for key, value in prep.meta.items():
            store.set_meta(key, value)
        store.set_meta("import", report.to_meta())
        task.check()
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        store = None
        _place(tmp, output, force)
    except BaseException as e:
        if store is not None:
            store.close()
        _remove_db_files(tmp)
        if isinstance(e, StoreError) and not isinstance(e, ImportFailed):
            raise ImportFailed(f"Writing the store failed: {e}") from None
        raise


def run(read, fmt: str, source, output, *, force: bool = False, task: Task | None = None, embedder=None,
        **options) -> ImportReport:
    """The common shape of an import: check the output, read the source (`read(source, report,
    task, embedder, **options) -> Prepared`), then write. Returns the report."""
    task = task or quiet()
    src = os.path.abspath(os.fspath(source))
    if not os.path.exists(src):
        raise ImportFailed(f"No such file or folder: {src}")
    to_db = isinstance(output, str) and is_dsn(output)
    out = check_database(output, force) if to_db else check_output(output, force, [src])
    report = ImportReport(format=fmt, source=src)
    task.check()
    prep = read(src, report, task, embedder=embedder, **options)
    report.read = len(prep.records) + len(report.skipped)
    report.agents = sorted({str(r.get("agent") or "") for r in prep.records})
    if not to_db:
        write_store(prep, report, out, force=force, task=task, embedder=embedder)
        return report
    # a database: the store is built as a file (bulk_load, one transaction), then copied in one transaction
    with tempfile.TemporaryDirectory(prefix="memviz-import-") as folder:
        write_store(prep, report, os.path.join(folder, "import.db"), force=False, task=task.part(0.0, 0.8),
                    embedder=embedder)
        try:
            copy_store(report.output, out, task.part(0.8, 1.0))
        except StoreError as e:
            raise ImportFailed(f"Writing {redact(out)} failed: {e}") from None
    report.output = redact(out)
    return report


def check_database(dsn: str, force: bool) -> str:
    """`dsn` if its database can receive the import (it holds no store), else ImportFailed."""
    if force:
        raise ImportFailed(f"--force does not replace a store in a database ({redact(dsn)}): memviz drops no "
                           "tables on a server; import into an empty database.")
    why = database_refusal(dsn)
    if why:
        raise ImportFailed(why)
    return dsn
