"""OpenMemory (mem0's self-hosted memory server) exports: what its "Export" (POST
/api/v1/backup/export) hands out, a zip `memories_export_<user>.zip` holding

- `memories.json`: the relational export — `user`, `apps`, `categories`, `memories` (id,
  user_id, app_id, content, metadata, state active|paused|archived|deleted, created_at,
  updated_at, archived_at, deleted_at, category_ids), `memory_categories`, `status_history`
  (old_state, new_state, changed_at), `access_controls`, `export_meta`;
- `memories.jsonl.gz`: one memory per line (id, content, metadata, created_at, updated_at,
  state, app name, category names), the provider-agnostic form for re-embedding.

Either file alone, or the zip, is imported. Each memory's app (the client that wrote it:
Claude, Cursor, ...) is its agent, categories are tags; archived and deleted memories are kept
retired (valid_until = archived_at / deleted_at), paused ones live with the tag "paused". The
export carries no vectors: content is embedded with the local model.
"""
from __future__ import annotations

import gzip
import json
import os
import zipfile

from ..tasks import Task
from .json_reader import as_time
from .pipeline import ImportFailed, ImportReport, Prepared, run

FORMAT = "openmemory"
JSON_NAME, JSONL_NAME = "memories.json", "memories.jsonl.gz"
ZIP_MAGIC, GZIP_MAGIC = b"PK\x03\x04", b"\x1f\x8b"
#: the top-level keys of memories.json that only OpenMemory's export has together
JSON_KEYS = {"user", "apps", "memories"}
RETIRED_AT = {"archived": "archived_at", "deleted": "deleted_at"}


def looks_like(path: str, head: bytes) -> bool:
    """Is `path` (whose first bytes are `head`) an OpenMemory export? Cheap; for detect.py."""
    name = os.path.basename(path)
    try:
        if head.startswith(ZIP_MAGIC):
            with zipfile.ZipFile(path) as zf:
                return any(n.rsplit("/", 1)[-1] in (JSON_NAME, JSONL_NAME) for n in zf.namelist())
        if head.startswith(GZIP_MAGIC):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                first = json.loads(f.readline() or "null")
            return isinstance(first, dict) and {"id", "content", "state", "categories"} <= first.keys()
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return False
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return text.startswith("{") and (name == JSON_NAME or all(f'"{k}"' in text for k in ("user", "apps", "categories")))


def _members(path: str, report: ImportReport) -> tuple[dict | None, list[dict] | None]:
    """(memories.json as a dict, memories.jsonl.gz as lines) from the zip or the lone file."""
    with open(path, "rb") as f:
        head = f.read(4)
    try:
        if head.startswith(ZIP_MAGIC):
            with zipfile.ZipFile(path) as zf:
                names = {n.rsplit("/", 1)[-1]: n for n in zf.namelist() if not n.endswith("/")}
                doc = json.loads(zf.read(names[JSON_NAME])) if JSON_NAME in names else None
                lines = _jsonl(zf.read(names[JSONL_NAME]), report) if JSONL_NAME in names and doc is None else None
                if doc is None and lines is None:
                    raise ImportFailed(f"{path} is a zip without {JSON_NAME} or {JSONL_NAME}: not an OpenMemory export.")
                return doc, lines
        with open(path, "rb") as f:
            data = f.read()
        if head.startswith(GZIP_MAGIC):
            return None, _jsonl(data, report)
        return json.loads(data), None
    except zipfile.BadZipFile as e:
        raise ImportFailed(f"{path} is not a readable zip file: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ImportFailed(f"{path}: {JSON_NAME} is not valid JSON ({e})") from None
    except (OSError, EOFError) as e:
        raise ImportFailed(f"Cannot read {path}: {e}") from None


def _jsonl(blob: bytes, report: ImportReport) -> list[dict]:
    try:
        text = gzip.decompress(blob).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise ImportFailed(f"{JSONL_NAME} is not a readable gzip file of UTF-8 text ({e})") from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            report.skip(f"line {i}", "malformed-json", str(e))
            continue
        if isinstance(obj, dict):
            out.append(obj)
        else:
            report.skip(f"line {i}", "not-an-object", "not a JSON object")
    return out


def read(path: str, report: ImportReport, task: Task, *, embedder=None) -> Prepared:
    doc, lines = _members(path, report)
    prep = Prepared()
    if doc is not None:
        if not isinstance(doc, dict) or not isinstance(doc.get("memories"), list):
            raise ImportFailed(f"{path} is JSON but not OpenMemory's {JSON_NAME} (it has no \"memories\" list).")
        user = doc.get("user") if isinstance(doc.get("user"), dict) else {}
        apps = {a.get("id"): a.get("name") for a in doc.get("apps") or [] if isinstance(a, dict)}
        cats = {c.get("id"): c.get("name") for c in doc.get("categories") or [] if isinstance(c, dict)}
        history: dict[str, list] = {}
        for h in doc.get("status_history") or []:
            if isinstance(h, dict):
                history.setdefault(h.get("memory_id"), []).append(
                    {k: h.get(k) for k in ("old_state", "new_state", "changed_at")})
        memories = []
        for m in doc["memories"]:
            if isinstance(m, dict):
                m = {**m, "app": apps.get(m.get("app_id")), "categories": [cats[c] for c in m.get("category_ids") or []
                                                                            if c in cats]}
                m["status_history"] = history.get(m.get("id"), [])
            memories.append(m)
        user_id = user.get("user_id")
        prep.meta["openmemory"] = {"user": user_id, "export": doc.get("export_meta")}
    else:
        memories, user_id = lines, None
    for i, m in enumerate(memories, 1):
        where = f"memory {i}"
        if not isinstance(m, dict):
            report.skip(where, "not-an-object", "not a JSON object")
            continue
        content = m.get("content")
        if not isinstance(content, str) or not content.strip():
            report.skip(where, "no-content", "no content")
            continue
        if not m.get("id"):
            report.skip(where, "no-id", "no id")
            continue
        state = str(m.get("state") or "active")
        created = as_time(m.get("created_at"), where, report, "created_at")
        retired = None
        if state in RETIRED_AT:
            retired = (as_time(m.get(RETIRED_AT[state]), where, report, RETIRED_AT[state])
                       or as_time(m.get("updated_at"), where, report, "updated_at"))
            if retired is None:
                report.quirk(where, "no-retire-time", f"{state} without a time; retired at its creation time")
                retired = created or 0
        tags = [str(c) for c in m.get("categories") or [] if c]
        if state not in ("active",):
            tags.append(state)
        own = {k: m.get(k) for k in ("state", "app", "user_id", "metadata", "updated_at", "archived_at", "deleted_at",
                                     "status_history") if m.get(k) not in (None, {}, [])}
        if user_id:
            own["user"] = user_id
        rec = {"id": str(m["id"]), "agent": str(m.get("app") or "openmemory"), "kind": "fact", "content": content,
               "event_time": created, "created_at": created, "valid_until": retired, "tags": tags,
               "attributes": {"openmemory": own}}
        prep.add(rec, where, embed_text=content)
    return prep


def import_openmemory(source, output, *, force: bool = False, task=None, embedder=None) -> ImportReport:
    """Import an OpenMemory export (the zip, memories.json or memories.jsonl.gz) into a new native store."""
    return run(read, FORMAT, source, output, force=force, task=task, embedder=embedder)

