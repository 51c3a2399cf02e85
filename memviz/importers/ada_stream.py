"""ADA memory stream (GLOSSARY: ADA cognitive memory): `agents/memory/stream.jsonl`, one entry per line:
{id, cycle, timestamp, role, action, importance, type, tags, issueRefs, prRefs, content,
tokenEstimate}. The role is the agent; `type` gives the kind (action and observation are
episodes, reflection a reflection, decision a fact) and is kept in attributes with the
cycle, action, references and any other field. Content is embedded with the local model
(the ADA preset scores relevance on embed(content))."""
from __future__ import annotations

from ..store.clock import simulated
from ..tasks import Task
from .json_reader import as_importance, as_int_if_whole, as_tags, as_time, read_objects
from .pipeline import ImportReport, Prepared, run

FORMAT = "ada-stream"
KIND_OF_TYPE = {"action": "episode", "observation": "episode", "reflection": "reflection", "decision": "fact"}
#: fields that become columns; every other field of an entry is kept in attributes under its own name
_COLUMNS = {"id", "role", "importance", "type", "tags", "timestamp", "content"}
_VECTOR_FIELDS = ("embedding", "vector")


def read(path: str, report: ImportReport, task: Task, *, embedder=None) -> Prepared:
    prep = Prepared()
    dropped_vectors = 0
    last = None  # (time, cycle) of the stream's latest entry: the run's clock
    for where, e in read_objects(path, report, task):
        content = e.get("content")
        action = e.get("action")
        if not isinstance(content, str) or not content.strip():
            if isinstance(action, str) and action.strip():
                report.quirk(where, "no-content", "no content; the action summary is used as the content")
                content = action
            else:
                report.skip(where, "no-content", "neither content nor action text")
                continue
        etype = e.get("type")
        kind = KIND_OF_TYPE.get(str(etype).lower()) if etype is not None else None
        if kind is None:
            report.quirk(where, "unknown-type", f"type {etype!r} is not action/observation/reflection/decision; "
                                                "stored as an episode")
            kind = "episode"
        attrs = {k: as_int_if_whole(v) if k == "cycle" else v
                 for k, v in e.items() if k not in _COLUMNS and k not in _VECTOR_FIELDS}
        if etype is not None:
            attrs["type"] = etype
        if any(k in e for k in _VECTOR_FIELDS):
            dropped_vectors += 1
        when = as_time(e.get("timestamp"), where, report)
        if when is None and "timestamp" not in e:
            report.quirk(where, "no-time", "no timestamp; the import time is used")
        role = e.get("role")
        rid = e.get("id")
        if rid is None or rid == "":
            rid = f"line-{where.split()[-1]}"
            report.quirk(where, "no-id", f"no id; stored as {rid!r}")
        rec = {
            "id": str(rid), "agent": "" if role is None else str(role), "kind": kind, "content": content,
            "importance": as_importance(e.get("importance"), where, report),
            "event_time": when, "created_at": when,
            "tags": as_tags(e.get("tags"), where, report), "attributes": attrs,
        }
        prep.add(rec, where, embed_text=content)
        if when is not None and (last is None or when >= last[0]):
            last = (when, attrs.get("cycle"))
    if last is not None:  # a recorded run: its ages are measured from its last entry, not from today
        cycle = f" (cycle {last[1]})" if last[1] is not None else ""
        prep.meta["clock"] = simulated(last[0], f"the stream's last entry{cycle}").to_meta()
    if dropped_vectors:
        report.warn(f"{dropped_vectors} entries carried a vector without a model name; the stream is "
                    "embedded locally instead (use the jsonl format to keep given vectors)")
    return prep


def import_ada_stream(source, output, *, force: bool = False, task=None,
                      embedder=None) -> ImportReport:
    """Import an ADA `stream.jsonl` into a new native store at `output`."""
    return run(read, FORMAT, source, output, force=force, task=task,
               embedder=embedder)
