"""OpenMemory exports imported into a native store (memviz/importers/openmemory.py). OpenMemory
is a server app (not on PyPI): the exports are written here in the shape its backup router
(openmemory/api/app/routers/backup.py) writes: a zip with memories.json and memories.jsonl.gz."""
from __future__ import annotations

import gzip
import json
import zipfile

import pytest

import memviz.store as ms
from memviz.cli import main
from memviz.importers import ImportFailed, detect_format, import_source

USER = {"id": "u-1", "user_id": "ada", "name": "Ada", "email": None, "metadata": {}, "created_at": "2025-06-01T10:00:00+00:00",
        "updated_at": None}
APPS = [{"id": "a-1", "owner_id": "u-1", "name": "claude", "description": None, "metadata": {}, "is_active": True,
         "created_at": "2025-06-01T10:00:00+00:00", "updated_at": None},
        {"id": "a-2", "owner_id": "u-1", "name": "cursor", "description": None, "metadata": {}, "is_active": True,
         "created_at": "2025-06-01T10:00:00+00:00", "updated_at": None}]
CATS = [{"id": "c-1", "name": "preferences", "description": None, "created_at": None, "updated_at": None},
        {"id": "c-2", "name": "work", "description": None, "created_at": None, "updated_at": None}]


def mem(i, content, app, cats, state="active", **times):
    return {"id": f"00000000-0000-4000-8000-00000000000{i}", "user_id": "u-1", "app_id": app, "content": content,
            "metadata": {"source": "chat"}, "state": state, "created_at": f"2025-06-0{i + 1}T09:00:00+00:00",
            "updated_at": f"2025-06-0{i + 1}T09:00:00+00:00", "archived_at": None, "deleted_at": None,
            "category_ids": cats, **times}


MEMS = [mem(1, "Prefers dark mode in every editor", "a-2", ["c-1"]),
        mem(2, "Works on the billing service in Go", "a-1", ["c-2"]),
        mem(3, "Used to live in Berlin", "a-1", [], state="archived", archived_at="2025-07-01T00:00:00+00:00"),
        mem(4, "Asked to forget the old phone number", "a-1", [], state="deleted", deleted_at="2025-07-02T00:00:00+00:00"),
        mem(5, "Likes short answers", "a-2", ["c-1"], state="paused")]


def export_doc():
    return {"user": USER, "apps": APPS, "categories": CATS, "memories": MEMS,
            "memory_categories": [{"memory_id": m["id"], "category_id": c} for m in MEMS for c in m["category_ids"]],
            "status_history": [{"id": "h-1", "memory_id": MEMS[2]["id"], "changed_by": "u-1", "old_state": "active",
                                "new_state": "archived", "changed_at": "2025-07-01T00:00:00+00:00"}],
            "access_controls": [], "export_meta": {"app_id_filter": None, "from_date": None, "to_date": None, "version": "1",
                                                   "generated_at": "2025-08-01T00:00:00+00:00"}}


def jsonl_blob():
    apps, cats = {a["id"]: a["name"] for a in APPS}, {c["id"]: c["name"] for c in CATS}
    lines = [json.dumps({"id": m["id"], "content": m["content"], "metadata": m["metadata"], "created_at": m["created_at"],
                         "updated_at": m["updated_at"], "state": m["state"], "app": apps[m["app_id"]],
                         "categories": [cats[c] for c in m["category_ids"]]}) for m in MEMS]
    return gzip.compress(("\n".join(lines) + "\n").encode())


@pytest.fixture
def export_zip(tmp_path):
    p = tmp_path / "memories_export_ada.zip"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", json.dumps(export_doc(), indent=2))
        zf.writestr("memories.jsonl.gz", jsonl_blob())
    return p


def check_store(out, *, user=True):
    with ms.open(str(out)) as s:
        rows = {r["content"]: r for r in s.get_many([m["id"] for m in MEMS])}
        assert len(rows) == 5
        dark = rows["Prefers dark mode in every editor"]
        assert dark["agent"] == "cursor" and dark["kind"] == "fact" and dark["tags"] == ["preferences"]
        assert dark["valid_until"] is None and dark["embedding"] is not None
        assert dark["attributes"]["openmemory"]["metadata"] == {"source": "chat"}
        assert dark["created_at"] == 1748854800  # 2025-06-02T09:00Z
        berlin = rows["Used to live in Berlin"]
        assert berlin["valid_until"] == 1751328000 and "archived" in berlin["tags"]
        assert rows["Asked to forget the old phone number"]["valid_until"] == 1751414400
        paused = rows["Likes short answers"]
        assert paused["valid_until"] is None and paused["tags"] == ["preferences", "paused"]
        if user:
            assert dark["attributes"]["openmemory"]["user"] == "ada"
            assert berlin["attributes"]["openmemory"]["status_history"][0]["new_state"] == "archived"


def test_the_zip_is_detected_and_imported(export_zip, tmp_path):
    assert detect_format(export_zip) == "openmemory"
    out = tmp_path / "om.db"
    rep = import_source("openmemory", export_zip, out)
    assert rep.imported == 5 and rep.agents == ["claude", "cursor"]
    check_store(out)


def test_memories_json_alone(tmp_path):
    p = tmp_path / "memories.json"
    p.write_text(json.dumps(export_doc(), indent=2))
    assert detect_format(p) == "openmemory"
    import_source("openmemory", p, tmp_path / "a.db")
    check_store(tmp_path / "a.db")


def test_memories_jsonl_gz_alone_and_from_the_cli(tmp_path, capsys):
    p = tmp_path / "memories.jsonl.gz"
    p.write_bytes(jsonl_blob())
    assert detect_format(p) == "openmemory"
    assert main(["import", "openmemory", str(p), "-o", str(tmp_path / "b.db")]) == 0
    with ms.open(str(tmp_path / "b.db")) as s:
        assert s.counts()["live"] == 3  # archived and deleted kept retired (no time in this form: updated_at)


def test_bad_exports_say_what_is_wrong(tmp_path):
    z = tmp_path / "other.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("readme.txt", "hi")
    assert detect_format(z) is None
    with pytest.raises(ImportFailed, match="not an OpenMemory export"):
        import_source("openmemory", z, tmp_path / "x.db")
    j = tmp_path / "memories.json"
    j.write_text('{"user": {}, "apps": [], "categories": []}')
    with pytest.raises(ImportFailed, match="no \"memories\" list"):
        import_source("openmemory", j, tmp_path / "y.db")
    g = tmp_path / "memories.jsonl.gz"
    g.write_bytes(gzip.compress(b'{"id": "1", "content": "ok", "state": "active", "categories": []}\nnot json\n'))
    rep = import_source("openmemory", g, tmp_path / "z.db")
    assert rep.imported == 1 and rep.skipped[0].code == "malformed-json"
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "y.db").exists()
