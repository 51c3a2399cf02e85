"""JSON Lines dumps of memory records (GLOSSARY: Wonda memory): one `{id, content, embedding?, metadata}` per
line (a JSON array of such records is read too).

Metadata keys that have a native place go there: agent; type/kind -> kind (episodic ->
episode, semantic -> fact, ...; other types are kept as the kind); category -> a tag and
attributes.category; turn, speaker -> attributes; timestamp -> event time; importance; tags;
source_ids. Every other key is kept in attributes. Top-level fields named like native
columns (agent, kind, importance, event_time, tags, ...) are taken as they are, so a native
export reads back.

Vectors: used as given when every record's vector has the same dimension; the model that
made them comes from --embedding-model or an `embedding_model` field (it is needed to embed
queries the same way). Vectors of mixed dimensions are an error naming the lines — the
records are not guessed at — unless `reembed` is set, which ignores every given vector and
embeds all contents with the local model. Records without vectors are embedded locally.
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np

from ..embed import LOCAL_DIM, LOCAL_MODEL
from ..sniff import sniff
from ..tasks import Task
from ..words import count
from .json_reader import as_importance, as_int_if_whole, as_tags, as_time, read_objects
from .pipeline import ImportFailed, ImportReport, NotThisFormat, Prepared, run
from .registry import EMBEDDING_MODEL, REEMBED

FORMAT = "jsonl"
KIND_SYNONYMS = {
    "episodic": "episode", "episode": "episode", "event": "episode", "observation": "episode",
    "semantic": "fact", "fact": "fact", "knowledge": "fact",
    "reflection": "reflection", "insight": "reflection",
    "preference": "preference",
}
DEFAULT_KIND = "episode"
#: top-level fields taken as native columns as they are
_NATIVE = ("agent", "kind", "importance", "event_time", "created_at", "valid_until", "confidence",
           "access_count", "last_accessed", "decay_rate", "protected", "source_ids", "entity_ids", "tags",
           "attributes")
_TIME_KEYS = ("timestamp", "event_time", "time", "created_at")
_MODEL_KEYS = ("embedding_model", "model")


def _vector(value, where: str, report: ImportReport):
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        report.quirk(where, "bad-vector", "the embedding is not a list of finite numbers; it was dropped")
        return None
    return arr.astype(np.float32)


def _kind(value) -> str:
    text = str(value).strip()
    return KIND_SYNONYMS.get(text.lower(), text) or DEFAULT_KIND


def _record(where: str, obj: dict, report: ImportReport):
    """(record, vector or None, model named by the record or None); None when skipped."""
    content = obj.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        report.skip(where, "no-content", "no content")
        return None
    if not isinstance(content, str):
        report.quirk(where, "content-not-text", f"content is a JSON {type(content).__name__}; stored as its JSON text")
        content = json.dumps(content, ensure_ascii=False)
    meta = obj.get("metadata")
    attrs: dict = {}
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        report.quirk(where, "metadata-not-object", "metadata is not an object; kept in attributes.metadata")
        attrs["metadata"] = meta
        meta = {}
    rec: dict = {k: obj[k] for k in _NATIVE if obj.get(k) is not None}
    if not isinstance(rec.get("attributes", {}), dict):
        attrs["attributes_raw"] = rec.pop("attributes")
    attrs.update(rec.pop("attributes", {}))
    for k, v in obj.items():
        if k not in ("id", "content", "embedding", "metadata", *_NATIVE, *_MODEL_KEYS):
            attrs.setdefault(k, v)
    tags = as_tags(rec.pop("tags", None), where, report)
    model = next((str(obj[k]) for k in _MODEL_KEYS if obj.get(k)), None)
    when = None
    for key, value in meta.items():
        if key == "agent" and "agent" not in rec:
            rec["agent"] = value
        elif key in ("kind", "type") and "kind" not in rec:
            rec["kind"] = _kind(value)
            if key == "type" and rec["kind"] != value:
                attrs.setdefault("type", value)
        elif key == "category":
            attrs.setdefault("category", value)
            tags.extend(as_tags(value, where, report))
        elif key == "turn":
            attrs.setdefault("turn", as_int_if_whole(value))
        elif key in _TIME_KEYS and when is None and "event_time" not in rec:
            when = as_time(value, where, report)
            if when is None:
                attrs.setdefault(key, value)
        elif key == "importance" and "importance" not in rec:
            rec["importance"] = value
        elif key == "tags":
            tags.extend(as_tags(value, where, report))
        elif key == "source_ids" and "source_ids" not in rec:
            rec["source_ids"] = value if isinstance(value, list) else as_tags(value, where, report)
        elif key in _MODEL_KEYS and model is None and value:
            model = str(value)
        else:
            attrs.setdefault(key, value)
    if "kind" in rec:
        rec["kind"] = _kind(rec["kind"])
    else:
        rec["kind"] = DEFAULT_KIND
    if "agent" in rec:
        rec["agent"] = str(rec["agent"])
    if "importance" in rec:
        rec["importance"] = as_importance(rec["importance"], where, report)
    for col in ("event_time", "created_at", "valid_until", "last_accessed"):
        if col in rec:
            rec[col] = as_time(rec[col], where, report, col)
    if when is not None:
        rec["event_time"] = when
    if rec.get("event_time") is not None and rec.get("created_at") is None:
        rec["created_at"] = rec["event_time"]
    if rec.get("source_ids") is not None and not isinstance(rec["source_ids"], list):
        rec["source_ids"] = as_tags(rec["source_ids"], where, report)
    rid = obj.get("id")
    if rid is None or rid == "":
        rid = f"line-{where.split()[-1]}"
        report.quirk(where, "no-id", f"no id; stored as {rid!r}")
    rec.update(id=str(rid), content=content, tags=list(dict.fromkeys(tags)), attributes=attrs)
    vec = _vector(obj["embedding"], where, report) if obj.get("embedding") is not None else None
    return rec, vec, model


def _lines_of(wheres: list[str], limit: int = 8) -> str:
    nums = [w.split()[-1] for w in wheres]
    label = ("line" if wheres and wheres[0].startswith("line") else "record") + ("s" if len(nums) > 1 else "")
    return f"{label} {', '.join(nums[:limit])}" + (f" and {len(nums) - limit} more" if len(nums) > limit else "")


def read(path: str, report: ImportReport, task: Task, *, embedder=None, reembed: bool = False,
         embedding_model: str | None = None) -> Prepared:
    rows = []
    for where, obj in read_objects(path, report, task, allow_array=True):
        got = _record(where, obj, report)
        if got is not None:
            rows.append((where, *got))
    if not rows and report.skipped:  # one message for a file of something else, not one per item
        first = report.skipped[0]
        raise NotThisFormat(f"{path} is {sniff(path).looks_like()}: none of its {count(len(report.skipped), 'item')} is a "
                            f"memory record with a content field ({first.where}: {first.message}).")
    local_model = getattr(embedder, "model", LOCAL_MODEL)
    with_vec = [(where, vec, model) for where, _, vec, model in rows if vec is not None]
    prep = Prepared()
    if reembed or not with_vec:
        if with_vec:
            n = len(with_vec)
            report.warn(f"{count(n, 'given vector')} {'was' if n == 1 else 'were'} ignored (--reembed): every record "
                        "is embedded locally")
        for where, rec, _, _ in rows:
            prep.add(rec, where, embed_text=rec["content"])
        return prep

    by_dim: dict[int, list[str]] = {}
    for where, vec, _ in with_vec:
        by_dim.setdefault(vec.size, []).append(where)
    if len(by_dim) > 1:
        parts = [f"{dim}-d on {_lines_of(ws)}" for dim, ws in sorted(by_dim.items(), key=lambda kv: -len(kv[1]))]
        raise ImportFailed(f"{path}: the vectors have different sizes ({'; '.join(parts)}). Fix those records, "
                           f"or re-embed: {REEMBED} ignores the given vectors and embeds every record locally.")
    dim = next(iter(by_dim))
    named = Counter(m for _, _, m in with_vec if m)
    model = embedding_model
    if model is None:
        if len(named) > 1:
            parts = [f"{m!r} on {_lines_of([w for w, _, mm in with_vec if mm == m])}" for m in named]
            raise ImportFailed(f"{path}: the records name different embedding models ({'; '.join(parts)}); "
                               f"import them separately or re-embed: {REEMBED}.")
        if not named:
            raise ImportFailed(f"{path}: the records carry {dim}-d vectors but do not say which model made them. "
                               f"Name it with {EMBEDDING_MODEL}, for example text-embedding-3-small or "
                               f"nomic-embed-text, so queries can be embedded the same way; or re-embed: {REEMBED}.")
        model = next(iter(named))
    if model == LOCAL_MODEL and dim != LOCAL_DIM:
        raise ImportFailed(f"{path}: the vectors are {dim}-d but {LOCAL_MODEL} makes {LOCAL_DIM}-d vectors.")
    report.embedding = {"model": model, "dim": dim, "origin": "source"}
    missing = [where for where, _, vec, _ in rows if vec is None]
    if missing and model != local_model:
        report.warn(f"no usable vector on {count(len(missing), 'record')} ({_lines_of(missing)}), stored without one: "
                    f"memviz cannot embed text with {model} here; to embed every record locally, re-embed: {REEMBED}")
    for where, rec, vec, _ in rows:
        if vec is not None:
            rec.update(embedding=vec, embedding_model=model)
            prep.add(rec, where)
        else:
            prep.add(rec, where, embed_text=rec["content"] if model == local_model else None)
    return prep


def import_jsonl(source, output, *, force: bool = False, task=None, embedder=None,
                 reembed: bool = False, embedding_model: str | None = None) -> ImportReport:
    """Import a JSONL (or JSON array) dump of memory records into a new native store at `output`."""
    return run(read, FORMAT, source, output, force=force, task=task,
               embedder=embedder, reembed=reembed, embedding_model=embedding_model)
