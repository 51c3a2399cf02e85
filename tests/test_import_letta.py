"""Letta agent files (.af) imported: core memory blocks, messages as episodes in order, which
messages were in context, in every schema in use (tests/data/letta: three real files from
letta-ai/agent-file, one hand-made; see NOTICE.md there)."""
import hashlib
import json
from pathlib import Path

import pytest

import memviz.store as ms
from memviz.cli import main as cli_main
from memviz.importers import ImportFailed, detect_format, import_letta_agent_file, import_source

DATA = Path(__file__).parent / "data" / "letta"
V0643 = DATA / "memgpt_agent_v0.6.43.af"
V0647 = DATA / "memgpt_agent_with_convo_v0.6.47.af"
AS_STRING = DATA / "memgpt_agent_json_string.af"
TWO_AGENTS = DATA / "two_agents_handmade.af"
EZRA = DATA / "ezra_unattached_blocks.af"


def rows(path):
    with ms.open(str(path)) as s:
        out = [dict(zip(("id", "agent", "kind", "content", "created_at", "tags", "attributes"), r)) for r in s.conn.execute(
            "SELECT id, agent, kind, content, created_at, tags, attributes FROM memories ORDER BY rowid")]
        clock = s.meta("clock")
    for r in out:
        r["tags"] = json.loads(r["tags"])
        r["letta"] = json.loads(r["attributes"])["letta"]
    return out, clock


@pytest.mark.parametrize("path", [V0643, V0647, AS_STRING, TWO_AGENTS, EZRA], ids=lambda p: p.stem)
def test_every_schema_is_detected_and_imported(tmp_path, path):
    assert detect_format(path) == "letta-af"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    report = import_source("letta-af", path, tmp_path / "a.db")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # the source is only read
    assert report.imported > 0 and not report.skipped
    got, _ = rows(tmp_path / "a.db")
    assert {r["kind"] for r in got} <= {"core", "episode"} and "core" in {r["kind"] for r in got}
    assert all(r["content"].strip() for r in got)


def test_old_schema_blocks_messages_and_in_context_indices(tmp_path):
    import_letta_agent_file(V0647, tmp_path / "a.db")
    got, clock = rows(tmp_path / "a.db")
    doc = json.loads(V0647.read_text())
    core = [r for r in got if r["kind"] == "core"]
    assert sorted(r["tags"][0] for r in core) == ["human", "persona"]
    human = next(r for r in core if r["tags"] == ["human"])
    assert human["content"] == next(b["value"] for b in doc["core_memory"] if b["label"] == "human").strip()
    assert human["letta"]["limit"] == 5000 and human["agent"] == "memgpt_agent"
    episodes = [r for r in got if r["kind"] == "episode"]
    assert [r["letta"]["position"] for r in episodes] == list(range(len(doc["messages"])))  # the file's order
    in_ctx = doc["in_context_message_indices"]
    shown = {r["letta"]["position"]: r for r in episodes}
    assert sorted(p for p, r in shown.items() if "in-context" in r["tags"]) == sorted(in_ctx)
    assert [shown[i]["letta"]["context_position"] for i in in_ctx] == list(range(len(in_ctx)))  # the window's order
    assert all(r["letta"]["in_context"] is (p in in_ctx) for p, r in shown.items())
    # a user's message out of Letta's JSON envelope; the assistant's send_message text readable
    assert any(r["content"] == "hi my name is actually sarah not chad" for r in episodes)
    boot = shown[1]
    assert "send_message: More human than human is our motto." in boot["content"] and boot["letta"]["role"] == "assistant"
    assert "core_memory_replace(" in shown[5]["content"] and "First name: Sarah" in shown[5]["content"]
    # the store's clock is the export's last message, not today
    last = max(r["created_at"] for r in episodes)
    assert clock["mode"] == "simulated" and clock["at"] == last


def test_per_message_in_context_flags_of_0_6_43(tmp_path):
    import_letta_agent_file(V0643, tmp_path / "a.db")
    got, _ = rows(tmp_path / "a.db")
    doc = json.loads(V0643.read_text())
    flags = [m["in_context"] for m in doc["messages"]]
    episodes = sorted((r for r in got if r["kind"] == "episode"), key=lambda r: r["letta"]["position"])
    assert [r["letta"]["in_context"] for r in episodes] == flags
    assert episodes[3]["content"] == "[login] Never (first login)" or episodes[3]["content"].startswith("[login]")


def test_a_document_written_as_a_json_string(tmp_path):
    assert isinstance(json.loads(AS_STRING.read_text()), str)
    report = import_letta_agent_file(AS_STRING, tmp_path / "a.db")
    assert [q.code for q in report.quirks] == ["json-string"]
    got, _ = rows(tmp_path / "a.db")
    assert {(r["kind"], r["tags"][0]) for r in got} == {("core", "human"), ("core", "persona"), ("episode", "system")}
    system = next(r for r in got if r["kind"] == "episode")
    assert system["tags"] == ["system", "in-context"] and system["letta"]["id"] == "message-0"


def test_new_schema_two_agents_share_a_block_and_keep_their_context(tmp_path):
    import_letta_agent_file(TWO_AGENTS, tmp_path / "a.db")
    got, _ = rows(tmp_path / "a.db")
    by_agent = {}
    for r in got:
        by_agent.setdefault(r["agent"], []).append(r)
    assert set(by_agent) == {"ada", "ada-sleeptime"}
    assert sorted(r["tags"][0] for r in by_agent["ada"] if r["kind"] == "core") == ["human", "persona"]
    assert [r["tags"][0] for r in by_agent["ada-sleeptime"] if r["kind"] == "core"] == ["human"]  # the shared block
    persona = next(r for r in by_agent["ada"] if r["tags"][0] == "persona")
    assert persona["letta"]["read_only"] is True and persona["letta"]["id"] == "block-1"
    ada = {r["letta"]["id"]: r for r in by_agent["ada"] if r["kind"] == "episode"}
    assert [m for m, r in ada.items() if "in-context" in r["tags"]] == ["message-0", "message-5", "message-6", "message-7"]
    assert ada["message-1"]["content"] == "Hi, I'm Priya. I'm vegetarian and I hate red-eye flights."
    assert ada["message-2"]["content"].startswith("(thinking) New user with a diet")
    assert 'core_memory_append({"label": "human"' in ada["message-2"]["content"]
    assert "request_heartbeat" not in ada["message-2"]["content"]
    assert ada["message-3"]["content"].startswith("core_memory_append returned:")
    assert ada["message-4"]["content"].endswith("send_message: Nice to meet you, Priya! Noted: vegetarian, no red-eyes.")


def test_blocks_no_agent_lists_are_imported_unattached_and_counted(tmp_path, capsys):
    """ezra.af holds 56 blocks, 21 of them its one agent's: Letta's own import creates the other 35
    unattached, so they are imported too (agent "(unattached)", tagged), and the report says so."""
    doc = json.loads(EZRA.read_text())
    listed = set(doc["agents"][0]["block_ids"])
    loose = {b["id"]: b for b in doc["blocks"] if b["id"] not in listed}
    assert len(doc["blocks"]) == 56 and len(loose) == 35
    assert cli_main(["import", "letta-af", str(EZRA), "-o", str(tmp_path / "a.db")]) == 0
    out = capsys.readouterr().out
    assert "imported 56 of 56 memories" in out and "(unattached)" in out
    assert "35 of 56 blocks are listed by no agent in the file" in out
    got, _ = rows(tmp_path / "a.db")
    unattached = [r for r in got if r["agent"] == "(unattached)"]
    assert sorted(r["letta"]["id"] for r in unattached) == sorted(loose)
    assert all(r["kind"] == "core" and "unattached" in r["tags"] and r["letta"]["attached"] is False
               for r in unattached)
    faq = next(r for r in unattached if r["letta"]["label"] == "system/faq")
    assert faq["content"] == next(b["value"] for b in loose.values() if b["label"] == "system/faq").strip()
    attached = [r for r in got if r["agent"] == "ezra-super"]
    assert len(attached) == 21 and all("attached" not in r["letta"] for r in attached)


def test_cli_import_and_wrong_files_get_one_message(tmp_path, capsys):
    assert cli_main(["import", "letta-af", str(TWO_AGENTS), "-o", str(tmp_path / "a.db")]) == 0
    assert "imported 14 of 14 memories" in capsys.readouterr().out
    # not an agent file: one message saying what it is and what memviz imports
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"model": "gpt-4o", "temperature": 0.2}, indent=2))
    with pytest.raises(ImportFailed) as e:
        import_source("letta-af", other, tmp_path / "b.db")
    msg = str(e.value)
    assert "a JSON object with keys model, temperature" in msg and "not a Letta agent file" in msg
    assert "Letta agent files (.af) as `letta-af`" in msg and "as `jsonl`" in msg
    # an agent file given to the jsonl importer: told which format it is, not thousands of line errors
    with pytest.raises(ImportFailed) as e:
        import_source("jsonl", V0647, tmp_path / "c.db")
    assert "It looks like letta-af: `memviz import letta-af" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "b.db").exists() and not (tmp_path / "c.db").exists()
