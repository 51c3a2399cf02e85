"""Import formats told by content (importers/detect.py): never a false "looks like", and a
file that is one JSON document never gets one error per line."""
import gzip
import json

import pytest

from memviz.importers import ImportFailed, describe_unknown, detect_format, import_jsonl, import_source
from memviz.sniff import sniff

# ChatDev's experience memory and Voyager's skill library: memory files that are one JSON document
CHATDEV = [{"total": 2, "experiences": [
    {"sourceMIDHash": "a1", "targetMIDHash": "b2", "sourceCode": "def main():\n    pass", "instructionStar": "Add a score board",
     "valueGain": 0.31},
    {"sourceMIDHash": "b2", "targetMIDHash": "c3", "sourceCode": "import pygame", "instructionStar": "Fix the collision check",
     "valueGain": 0.12}]}]
VOYAGER = {"craftWoodenPickaxe": {"code": "async function craftWoodenPickaxe(bot) {}", "description": "Craft a wooden pickaxe."},
           "mineWoodLog": {"code": "async function mineWoodLog(bot) {}", "description": "Mine one wood log."}}


def write(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def files(tmp_path):
    lines = "\n".join(json.dumps({"id": f"m{i}", "content": f"memory {i}"}) for i in range(3)) + "\n"
    return {
        "chatdev": write(tmp_path / "MemoryCards.json", json.dumps(CHATDEV, indent=4)),
        "voyager": write(tmp_path / "skills.json", json.dumps(VOYAGER, indent=4)),
        "numbers": write(tmp_path / "numbers.json", "[\n  1,\n  2,\n  3\n]\n"),
        "strings": write(tmp_path / "completed_tasks.json", json.dumps(["Mine 1 wood log", "Craft a table"])),
        "toml": write(tmp_path / "settings.toml", "[tool]\nname = 'x'\n"),
        "text": write(tmp_path / "notes.txt", "[draft] things to remember\nbuy milk\n"),
        "records": write(tmp_path / "dump.json", json.dumps([{"id": "a", "content": "x"}, {"id": "b", "content": "y"}], indent=2)),
        "jsonl": write(tmp_path / "d.jsonl", lines),
    }


def test_formats_are_told_by_content_not_by_the_first_character(files):
    got = {name: detect_format(p) for name, p in files.items()}
    assert got == {"chatdev": None, "voyager": None, "numbers": None, "strings": None, "toml": None, "text": None,
                   "records": "jsonl", "jsonl": "jsonl"}


def test_a_one_line_record_is_json_lines_and_a_gzip_is_looked_inside(tmp_path):
    assert detect_format(write(tmp_path / "one.jsonl", '{"id": "a", "content": "x"}\n')) == "jsonl"
    gz = tmp_path / "memories.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        f.write('{"id": "a", "content": "x"}\n{"id": "b", "content": "y"}\n')
    assert sniff(gz).looks_like() == "gzip-compressed JSON Lines of 2 objects (keys id, content)"


@pytest.mark.parametrize("name, looks", [
    ("chatdev", "a JSON array of 1 object (keys total, experiences)"),
    ("voyager", "a JSON object with keys craftWoodenPickaxe, mineWoodLog"),
    ("numbers", "a JSON array of 3 values (int)"),
    ("toml", "a text file starting with '[tool]'"),
    ("text", "a text file starting with '[draft] things to remember'"),
])
def test_an_unknown_file_gets_one_message_saying_what_it_looked_like(files, name, looks):
    msg = describe_unknown(files[name])
    assert f"is {looks}, which is none of the formats memviz imports" in msg
    assert "Letta agent files (.af) as `letta-af`" in msg and "Generative Agents memory" in msg
    assert "Looks like" not in msg


@pytest.mark.parametrize("name", ["chatdev", "voyager", "numbers"])
def test_jsonl_import_of_one_json_document_is_one_message_not_one_per_line(files, tmp_path, name):
    with pytest.raises(ImportFailed) as e:
        import_source("jsonl", files[name], tmp_path / "o.db")
    msg = str(e.value)
    assert ("one JSON document, not JSON Lines" in msg or "is a memory record with a content field" in msg)
    assert "line " not in msg.replace("JSON Lines", "") and msg.count("\n") == 0 and "memviz imports" in msg
    assert not (tmp_path / "o.db").exists()


def test_a_long_text_file_stops_after_its_first_lines(tmp_path):
    src = write(tmp_path / "log.txt", "".join(f"[{i}] nothing here is JSON\n" for i in range(5000)))
    with pytest.raises(ImportFailed) as e:
        import_jsonl(src, tmp_path / "o.db")
    msg = str(e.value)
    assert "not JSON Lines: none of its first 20 lines is a JSON object" in msg and "line 1:" in msg
    assert len(msg) < 1200


def test_a_json_array_of_records_still_imports(files, tmp_path):
    report = import_jsonl(files["records"], tmp_path / "o.db", embedding_model=None)
    assert report.imported == 2


def test_an_array_larger_than_the_sniffing_limit_still_imports(files, tmp_path, monkeypatch):
    import memviz.sniff
    monkeypatch.setattr(memviz.sniff, "DOC_LIMIT", 16)  # the file is not parsed whole to sniff it...
    assert sniff(files["records"]).looks_like().startswith("text that starts like JSON")
    assert import_jsonl(files["records"], tmp_path / "o.db").imported == 2  # ...but the importer reads it whole
