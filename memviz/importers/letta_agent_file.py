"""Letta agent files (`.af`, github.com/letta-ai/agent-file): an exported agent's core memory
blocks and its messages, in every schema in use:

- 0.6.x/0.7.x (one agent; `version` "0.6.43" ...): `core_memory` blocks, `messages`, and which
  messages were in the context window: `in_context_message_indices` (positions in `messages`),
  or, in 0.6.43 and before, a per-message `in_context` flag;
- the AgentFileSchema (letta ≥ 0.8; `metadata.revision_id`): `agents` (each with `messages`,
  `in_context_message_ids`, `block_ids`) and the shared `blocks`;
- either one written as a JSON string whose text is the document (some exports do that).

Mapping: one agent per exported agent (its name); each core memory block of an agent is a
memory of kind "core" (content = the block's value, its label as a tag; limit, description,
read_only in attributes.letta); a block of the file's `blocks` that no agent lists (Letta's own
import creates it, unattached) is a "core" memory of the agent "(unattached)", tagged
"unattached", with attributes.letta.attached false; each message is an "episode" of its agent, in the file's order
(attributes.letta.position; created_at from the message), its text made readable (inner
thoughts, tool calls such as send_message's text, a user message's text out of Letta's JSON
envelope; the original in attributes.letta.text). Messages that were in the context window are
tagged "in-context" (attributes.letta.in_context, context_position = place in the window); the
role is a tag too. Everything is embedded with the local model; the store's clock is the file's
last message (an export is a snapshot of the past).
"""
from __future__ import annotations

import json

from ..sniff import NOT_JSON, sniff
from ..store.clock import simulated
from ..tasks import Task
from .json_reader import as_time
from .pipeline import ImportReport, NotThisFormat, Prepared, run

FORMAT = "letta-af"
IN_CONTEXT = "in-context"
#: the agent (and tag) of blocks no agent in the file lists
UNATTACHED = "(unattached)"
#: Letta's JSON envelopes around a user/system event's text: {"type": ..., "message": ...}
_ENVELOPES = {"user_message", "system_alert", "heartbeat", "login", "system_message"}


def is_agent_file(doc) -> bool:
    """A parsed JSON document is a Letta agent file (either schema)."""
    if not isinstance(doc, dict):
        return False
    agents = doc.get("agents")
    if isinstance(agents, list) and agents and isinstance(agents[0], dict):
        return "blocks" in doc and ("messages" in agents[0] or "in_context_message_ids" in agents[0])
    return isinstance(doc.get("core_memory"), list) and isinstance(doc.get("messages"), list) and "llm_config" in doc


def schema_of(doc: dict) -> str:
    """The schema version in words: "AgentFileSchema (revision …)" or "letta 0.6.47"."""
    if "agents" in doc:
        rev = (doc.get("metadata") or {}).get("revision_id") if isinstance(doc.get("metadata"), dict) else None
        return "AgentFileSchema" + (f" (revision {rev})" if rev else "")
    return f"letta {doc.get('version') or '(no version)'}"


# ----------------------------------------------------------------------- message text
def _parts(content) -> list[tuple[str, str]]:
    """(type, text) of a message's content: a string, or a list of {type, text|reasoning}."""
    if isinstance(content, str):
        return [("text", content)]
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append((str(part.get("type") or "text"), part["text"]))
            elif isinstance(part.get("reasoning"), str):
                out.append(("reasoning", part["reasoning"]))
    return out


def _unwrap(text: str) -> str:
    """A user/system event's text without Letta's JSON envelope ("hi", not {"type": "user_message", ...})."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        env = json.loads(text)
    except ValueError:
        return text
    if isinstance(env, dict) and env.get("type") in _ENVELOPES:
        msg = env.get("message")
        return f"[{env['type']}] {msg}" if env["type"] != "user_message" and msg else (msg or f"[{env['type']}]")
    return text


def _tool_call(call) -> str | None:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not fn.get("name"):
        return None
    args = fn.get("arguments")
    try:
        parsed = json.loads(args) if isinstance(args, str) else args
    except ValueError:
        parsed = args
    if fn["name"] == "send_message" and isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return f"send_message: {parsed['message']}"
    if isinstance(parsed, dict):
        parsed = {k: v for k, v in parsed.items() if k != "request_heartbeat"}
    shown = json.dumps(parsed, ensure_ascii=False) if not isinstance(parsed, str) else parsed
    return f"{fn['name']}({shown[:500]})"


def message_text(m: dict) -> tuple[str, str]:
    """(readable text, original text) of a message."""
    parts = _parts(m.get("content"))
    if not parts and isinstance(m.get("text"), str):  # the oldest exports kept the text beside the content
        parts = [("text", m["text"])]
    original = "\n".join(t for _, t in parts)
    role = m.get("role")
    lines = []
    for kind, text in parts:
        if role in ("user", "system", "tool"):
            text = _unwrap(text)
        lines.append(f"(thinking) {text}" if kind == "reasoning" else text)
    for call in m.get("tool_calls") or []:
        shown = _tool_call(call)
        if shown:
            lines.append(shown)
    if role == "tool" and m.get("name"):
        lines = [f"{m['name']} returned: " + " ".join(lines)] if lines else lines
    return "\n".join(x for x in lines if x.strip()).strip(), original


# ----------------------------------------------------------------------- the two schemas
def unattached_blocks(doc: dict) -> list:
    """The blocks of an AgentFileSchema file that no agent lists in `block_ids` (a block an agent
    holds inline, in `memory_blocks`, is its own)."""
    listed = {bid for a in doc.get("agents") or [] if isinstance(a, dict) for bid in a.get("block_ids") or []}
    return [b for b in doc.get("blocks") or [] if not (isinstance(b, dict) and b.get("id") in listed)]


def _agents(doc: dict, report: ImportReport) -> list[dict]:
    """Every agent as {name, id, blocks: [block dicts], messages: [...], in_context: {index: place} | None}."""
    if "agents" not in doc:  # 0.6.x / 0.7.x: one agent
        messages = doc.get("messages") or []
        in_ctx = None
        indices = doc.get("in_context_message_indices")
        if isinstance(indices, list):
            in_ctx = {int(i): place for place, i in enumerate(indices) if isinstance(i, int) and 0 <= i < len(messages)}
        elif any(isinstance(m, dict) and "in_context" in m for m in messages):
            flagged = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("in_context")]
            in_ctx = {i: place for place, i in enumerate(flagged)}
        return [{"name": doc.get("name"), "id": doc.get("id"), "blocks": doc.get("core_memory") or [],
                 "messages": messages, "in_context": in_ctx, "created_at": doc.get("created_at")}]
    blocks = {b.get("id"): b for b in doc.get("blocks") or [] if isinstance(b, dict)}
    out = []
    for n, a in enumerate(doc.get("agents") or [], start=1):
        if not isinstance(a, dict):
            report.skip(f"agent {n}", "not-an-agent", "not a JSON object")
            continue
        mine = []
        for bid in a.get("block_ids") or []:
            if bid in blocks:
                mine.append(blocks[bid])
            else:
                report.quirk(f"agent {a.get('name') or n}", "missing-block", f"block {bid!r} is not in the file's blocks")
        mine += [b for b in a.get("memory_blocks") or [] if isinstance(b, dict)]
        messages = a.get("messages") or []
        ids = a.get("in_context_message_ids")
        in_ctx = None
        if isinstance(ids, list):
            place = {mid: p for p, mid in enumerate(ids)}
            in_ctx = {i: place[m.get("id")] for i, m in enumerate(messages) if isinstance(m, dict) and m.get("id") in place}
        out.append({"name": a.get("name"), "id": a.get("id"), "blocks": mine, "messages": messages,
                    "in_context": in_ctx, "created_at": doc.get("created_at")})
    return out


def load(path: str) -> dict:
    """The agent file's document, or NotThisFormat saying what the file is instead."""
    s = sniff(path)
    doc = s.document
    if doc is NOT_JSON or not is_agent_file(doc):
        raise NotThisFormat(f"{path} is {s.looks_like()}, not a Letta agent file (.af): expected an object with "
                            "`agents` and `blocks` (letta ≥ 0.8) or `core_memory` and `messages` (letta 0.6/0.7).")
    return doc


def read(path: str, report: ImportReport, task: Task, *, embedder=None) -> Prepared:
    doc = load(path)
    if sniff(path).wrapped:
        report.quirk("file", "json-string", "the document is a JSON string holding the agent file's JSON; read inside it")
    schema = schema_of(doc)
    prep = Prepared()
    prep.meta["letta"] = {"schema": schema}
    names: dict[str, int] = {}
    last = None
    for a in _agents(doc, report):
        name = str(a["name"] or a["id"] or "agent")
        names[name] = names.get(name, 0) + 1
        if names[name] > 1:  # two exported agents of one name stay apart
            name = f"{name} ({a['id'] or names[name]})"
        file_time = as_time(a["created_at"], f"{name}: file", report, "created_at")
        _blocks(name, a["blocks"], file_time, prep, report)
        task.check()
        t = _messages(name, a, file_time, prep, report)
        if a["in_context"] is None and a["messages"]:
            report.warn(f"{name}: the file does not say which messages were in the context window ({schema})")
        if t is not None and (last is None or t > last):
            last = t
    loose = unattached_blocks(doc) if "agents" in doc else []
    if loose:
        _blocks(UNATTACHED, loose, as_time(doc.get("created_at"), "file", report, "created_at"), prep, report,
                attached=False)
        report.quirk("file", "unattached-blocks", f"{len(loose)} of {len(doc.get('blocks') or [])} blocks are "
                     f"listed by no agent in the file (Letta's import keeps them unattached): imported as the agent "
                     f"{UNATTACHED!r}, tagged {UNATTACHED[1:-1]!r}")
    if last is not None:
        prep.meta["clock"] = simulated(last, "the agent file's last message").to_meta()
    return prep


def _blocks(agent: str, blocks: list, file_time, prep: Prepared, report: ImportReport, attached: bool = True) -> None:
    for n, b in enumerate(blocks, start=1):
        where = f"{agent}: block {b.get('label') or n}" if isinstance(b, dict) else f"{agent}: block {n}"
        if not isinstance(b, dict):
            report.skip(where, "not-a-block", "not a JSON object")
            continue
        value, label = b.get("value"), str(b.get("label") or "")
        if not isinstance(value, str) or not value.strip():
            report.skip(where, "empty-block", "the block has no text")
            continue
        created = as_time(b.get("created_at"), where, report, "created_at") or file_time
        updated = as_time(b.get("updated_at"), where, report, "updated_at")
        attrs = {k: b.get(k) for k in ("label", "limit", "description", "read_only", "id", "template_name", "is_template")
                 if b.get(k) is not None}
        if updated is not None:
            attrs["updated_at"] = updated
        meta = b.get("metadata") if b.get("metadata") is not None else b.get("metadata_")
        if meta:
            attrs["metadata"] = meta
        tags = [t for t in [label, *[str(x) for x in b.get("tags") or []]] if t]
        if not attached:
            attrs["attached"] = False
            tags.append(UNATTACHED[1:-1])
        rec = {"id": f"{agent}/core/{b.get('id') or label or n}", "agent": agent, "kind": "core",
               "content": value.strip(), "created_at": created, "event_time": updated or created,
               "tags": tags, "attributes": {"letta": attrs}}
        prep.add(rec, where, embed_text=rec["content"])


def _messages(agent: str, a: dict, file_time, prep: Prepared, report: ImportReport):
    """Adds the agent's messages; returns the latest message time."""
    in_ctx = a["in_context"]
    last = None
    for i, m in enumerate(a["messages"]):
        where = f"{agent}: message {i + 1}"
        if not isinstance(m, dict):
            report.skip(where, "not-a-message", "not a JSON object")
            continue
        text, original = message_text(m)
        if not text:
            report.skip(where, "empty-message", f"a {m.get('role') or 'message'} with no text")
            continue
        when = as_time(m.get("created_at"), where, report, "created_at")
        if when is None:
            report.quirk(where, "no-time", "no created_at; the file's time is used")
            when = file_time
        role = str(m.get("role") or "")
        attrs = {"role": role, "position": i}
        for k in ("id", "name", "model", "tool_call_id", "group_id"):
            if m.get(k):
                attrs[k] = m[k]
        if original != text:
            attrs["text"] = original
        tags = [role] if role else []
        if in_ctx is not None:
            attrs["in_context"] = i in in_ctx
            if i in in_ctx:
                attrs["context_position"] = in_ctx[i]
                tags.append(IN_CONTEXT)
        rec = {"id": f"{agent}/message/{m.get('id') or i + 1}", "agent": agent, "kind": "episode", "content": text,
               "created_at": when, "event_time": when, "tags": tags, "attributes": {"letta": attrs}}
        prep.add(rec, where, embed_text=text)
        if when is not None and (last is None or when > last):
            last = when
    return last


def import_letta_agent_file(source, output, *, force: bool = False, task=None, embedder=None) -> ImportReport:
    """Import a Letta agent file (.af) into a new native store at `output`."""
    return run(read, FORMAT, source, output, force=force, task=task, embedder=embedder)
