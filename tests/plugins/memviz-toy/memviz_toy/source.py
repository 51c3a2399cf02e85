"""The toy memory system: one JSON file holding its records,

    {"toymem": 1, "records": [{"id": "r1", "text": "…", "at": "2025-03-01T09:00:00Z", "tags": ["…"]}, …]}

memviz recognises it by its `toymem` key, reads its records through a mirror (so every panel, the
presets and undo work unchanged) and writes back the one edit the toy system allows: a record's
text, rewritten in the file the way the toy system writes it (the whole file again, atomically).
"""
from __future__ import annotations

import json
import os
import tempfile

from memviz.frameworks import Source
from memviz.store import ConflictError, StoreError

from .embedder import HashEmbedder

MARK = "toymem"


def read_file(path: str) -> dict:
    """The toy file's document; StoreError saying what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise StoreError(f"{path} is a toy memory file but cannot be read: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise StoreError(f"{path} is a toy memory file without its list of records")
    return doc


def write_file(path: str, doc: dict) -> None:
    """The whole file written again, replacing the old one at once (as the toy system writes)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".toymem-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=2)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class ToySource(Source):
    system = "toymem"              # its key: mirror file names, audit rows
    title = "Toy memory"           # its name in messages
    edits = frozenset({"content"}) # the one edit the toy system allows: correcting a record's text
    corrects_in_place = True       # a correction rewrites the record (same id)

    @classmethod
    def recognise(cls, probe):
        # cheap and never a false match: a JSON file whose top-level object has the toymem key
        head = probe.head(4096).lstrip()
        if not (probe.is_file and head.startswith(b"{") and b'"toymem"' in head):
            return None
        doc = read_file(probe.target)  # it is ours: a damaged one says so (StoreError)
        if MARK not in doc:
            return None
        return cls(probe.target, probe.label)

    def describe(self) -> str:
        return f"Toy memory file {self.label} ({len(read_file(self.target)['records'])} records)"

    def token(self):
        st = os.stat(self.target)
        return [st.st_size, st.st_mtime_ns]

    def records(self, task=None):
        recs = read_file(self.target)["records"]
        vectors = HashEmbedder().embed([r.get("text", "") for r in recs])
        for r, vec in zip(recs, vectors):
            yield {
                "id": str(r["id"]), "agent": "toy", "kind": "fact", "content": r.get("text", ""),
                "created_at": r.get("at"), "event_time": r.get("at"), "tags": r.get("tags") or [],
                "embedding": vec, "embedding_model": HashEmbedder.model,
                "attributes": {"toymem": {k: v for k, v in r.items() if k not in ("id", "text", "at", "tags")}},
            }

    def write(self, rows, changes):
        doc = read_file(self.target)
        by_id = {str(r["id"]): r for r in doc["records"]}
        landed = {}
        for rid, change in changes.items():
            rec = by_id.get(rid)
            if rec is None or rec.get("text") != rows[rid]["content"]:
                raise ConflictError(f"{rid} was changed in {self.label} since memviz read it; reload to see it.",
                                    current=None if rec is None else {"content": rec.get("text")},
                                    expected={"content": rows[rid]["content"]})
            rec["text"] = change["content"]
            landed[rid] = dict(change)  # with the new vector memviz made by the toy embedder
        write_file(self.target, doc)
        return landed
