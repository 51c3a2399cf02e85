"""Generative Agents (Park et al. 2023) associative memory: `nodes.json` (+ `embeddings.json`,
`kw_strength.json`) in a persona's `bootstrap_memory/associative_memory/`, and the persona's
`scratch.json` beside it.

The source may be that folder, a persona folder, or a simulation storage folder holding
several personas (one agent each; ids are then prefixed "<agent>/" to stay unique). What is
written follows the mapping below, so the generative-agents retrieval preset can rebuild GA's own
ranking: attributes keep ga_type, node_id, node_count, type_count, embedding_key, depth,
subject/predicate/object, keywords, expiration, poignancy and (chats) the dialogue;
importance = poignancy; event_time = created; last_accessed = last_accessed or created (as GA
does on load); source_ids = the filling ids that exist. Times are GA's local simulation time,
taken as UTC. Each node's vector is its embedding key's: from embeddings.json when every
persona has one (OpenAI ada-002), else embedded with the local model.

File quirks handled: a thought's `filling` may be a list of ids, one id as a string, or null;
a chat's `filling` is the conversation itself ([speaker, utterance] pairs), kept as
attributes.dialogue and appended to the content so it reads as a dialogue; ids of missing
nodes are kept in attributes.missing_sources and reported.
"""
from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime

import numpy as np

from ..store.clock import simulated
from ..store.times import to_epoch
from ..tasks import Task
from .pipeline import ImportFailed, ImportReport, Prepared, run
from .registry import REEMBED

FORMAT = "generative-agents"
ADA_MODEL = "text-embedding-ada-002"
NODES = "nodes.json"
#: scratch.json keys the GA retrieval reads (retrieve.py: new_retrieve / extract_recency)
WEIGHT_KEYS = ("recency_w", "relevance_w", "importance_w", "recency_decay")
#: GA's own plan thoughts: plan.py ("This is X's plan for <day>:") and reflect.py ("For X's planning: ...")
_PLAN = re.compile(r"^(This is .+'s plan for |For .+'s planning: )")
_KNOWN = {"node_count", "type_count", "type", "depth", "created", "expiration", "last_accessed", "subject",
          "predicate", "object", "description", "embedding_key", "poignancy", "keywords", "filling"}
_MAX_DEPTH = 6   # how deep a storage folder is searched for personas


class Persona:
    def __init__(self, memory_dir: str):
        self.memory_dir = memory_dir
        # GA layout: <persona>/bootstrap_memory/{scratch.json, associative_memory/nodes.json}
        bootstrap = os.path.dirname(memory_dir) if os.path.basename(memory_dir) == "associative_memory" else memory_dir
        scratch = os.path.join(bootstrap, "scratch.json")
        self.scratch_path = scratch if os.path.isfile(scratch) else None
        folder = os.path.dirname(bootstrap) if os.path.basename(bootstrap) == "bootstrap_memory" else bootstrap
        self.folder = folder
        self.scratch: dict | None = None
        self.agent = os.path.basename(folder)


def find_personas(source: str) -> list[Persona]:
    """The associative-memory folders under `source` (itself, a persona, or a storage folder)."""
    if os.path.isfile(source):
        if os.path.basename(source) != NODES:
            raise ImportFailed(f"{source} is a file; give a Generative Agents folder (or its nodes.json).")
        return [Persona(os.path.dirname(source))]
    found = []
    root_depth = source.rstrip(os.sep).count(os.sep)
    for folder, dirs, files in os.walk(source, followlinks=True):
        if NODES in files:
            found.append(folder)
            dirs[:] = []
        elif folder.count(os.sep) - root_depth >= _MAX_DEPTH:
            dirs[:] = []
        dirs.sort()
    if not found:
        raise ImportFailed(f"No Generative Agents memory in {source}: expected associative_memory/nodes.json "
                           "(give a persona's bootstrap_memory/associative_memory folder, a persona folder, "
                           "or a simulation storage folder with personas/).")
    return [Persona(f) for f in sorted(found)]


def _load_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ImportFailed(f"{path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                           f"the {what} cannot be read.") from None
    except UnicodeDecodeError as e:
        raise ImportFailed(f"{path} is not UTF-8 text (byte {e.start + 1}).") from None
    except OSError as e:
        raise ImportFailed(f"{path} cannot be read: {e.strerror}.") from None


def _ga_time(value, where: str, what: str, report: ImportReport) -> int | None:
    """GA's "YYYY-MM-DD HH:MM:SS" local simulation time as a UTC epoch."""
    if value is None or value == "":
        return None
    try:
        return to_epoch(value)
    except (TypeError, ValueError):
        report.quirk(where, "bad-time", f"{what} {value!r} is not a time; left out")
        return None


def _scratch_time(text) -> int | None:
    """scratch.json curr_time, "February 14, 2023, 00:02:20" (scratch.py's format)."""
    try:
        return int(datetime.strptime(text, "%B %d, %Y, %H:%M:%S").replace(tzinfo=UTC).timestamp())
    except (TypeError, ValueError):
        return None


def _node_order(item) -> tuple:
    key, node = item
    count = node.get("node_count") if isinstance(node, dict) else None
    if not isinstance(count, int):
        m = re.search(r"(\d+)$", key)
        count = int(m.group(1)) if m else 1 << 62
    return count, key


def _split_filling(filling, where: str, ga_type: str, report: ImportReport) -> tuple[list[str], list]:
    """(node ids, dialogue lines) from a node's filling, whatever shape it has."""
    if filling is None:
        if ga_type == "thought":
            report.quirk(where, "filling-null", "thought with no evidence (filling is null)")
        return [], []
    if isinstance(filling, str):
        report.quirk(where, "filling-string", f"filling is one id given as a string ({filling!r}); read as a list")
        return [filling], []
    if not isinstance(filling, list):
        report.quirk(where, "filling-unreadable", f"filling {filling!r} is neither a list nor an id; left out")
        return [], []
    ids, dialogue = [], []
    for item in filling:
        if isinstance(item, str):
            ids.append(item)
        elif isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) for x in item):
            dialogue.append([item[0], item[1]])
        else:
            report.quirk(where, "filling-unreadable", f"filling item {item!r} is neither an id nor a [speaker, utterance] pair; left out")
    return ids, dialogue


def _as_int(value, default: int, where: str, what: str, report: ImportReport) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value is not None:
            report.quirk(where, f"bad-{what}", f"{what} {value!r} is not a number; {default} used")
        else:
            report.quirk(where, f"no-{what}", f"no {what}; {default} used")
        return default
    return int(value)


def _convert(persona: Persona, prefix: str, nodes: dict, report: ImportReport, prep: Prepared,
             vectors: dict | None, model: str | None) -> None:
    for key, node in sorted(nodes.items(), key=_node_order):
        where = prefix + key
        if not isinstance(node, dict):
            report.skip(where, "not-a-node", f"a JSON {type(node).__name__}, not a node object")
            continue
        created = _ga_time(node.get("created"), where, "created", report)
        if created is None:
            report.skip(where, "no-created", "the node has no readable `created` time")
            continue
        ga_type = node.get("type")
        if ga_type not in ("event", "thought", "chat"):
            report.quirk(where, "unknown-type", f"type {ga_type!r} is not event/thought/chat; stored as an episode")
        description = node.get("description")
        if not isinstance(description, str):
            report.quirk(where, "no-description", "no description text")
            description = "" if description is None else str(description)
        emb_key = node.get("embedding_key")
        if not isinstance(emb_key, str):
            report.quirk(where, "no-embedding-key", "no embedding key; the description is used")
            emb_key = description
        poignancy = _as_int(node.get("poignancy"), 1, where, "poignancy", report)
        if not 0 <= poignancy <= 10:
            report.quirk(where, "poignancy-clamped", f"poignancy {poignancy} is outside 0-10; importance clamped")
        ids, dialogue = _split_filling(node.get("filling"), where, ga_type, report)
        sources = [prefix + i for i in ids if i in nodes]
        missing = [i for i in ids if i not in nodes]
        for i in missing:
            report.quirk(where, "missing-source", f"filling names {i!r}, which is not in nodes.json; kept in attributes")
        keywords = node.get("keywords")
        keywords = [str(k) for k in keywords] if isinstance(keywords, list) else []
        attrs = {
            "ga_type": ga_type, "node_id": key,
            "node_count": _as_int(node.get("node_count"), _node_order((key, {}))[0], where, "node_count", report),
            "type_count": _as_int(node.get("type_count"), 0, where, "type_count", report),
            "embedding_key": emb_key,
            "depth": _as_int(node.get("depth"), 1 if ga_type == "thought" else 0, where, "depth", report),
            "subject": node.get("subject"), "predicate": node.get("predicate"), "object": node.get("object"),
            "keywords": keywords,
            "expiration": _ga_time(node.get("expiration"), where, "expiration", report),
            "poignancy": poignancy,
        }
        if dialogue:
            attrs["dialogue"] = dialogue
        if missing:
            attrs["missing_sources"] = missing
        extra = {k: v for k, v in node.items() if k not in _KNOWN}
        if extra:
            attrs["ga_extra"] = extra
        tags = []
        content = description
        if ga_type == "thought":
            kind = "reflection"
            if _PLAN.match(description):
                tags.append("plan")
        else:
            kind = "episode"
            if ga_type == "chat":
                tags.append("dialogue")
        if dialogue:  # the conversation itself, readable wherever the content is shown
            content = description + "\n\n" + "\n".join(f"{s}: {u}" for s, u in dialogue)
        last = _ga_time(node.get("last_accessed"), where, "last_accessed", report) or created
        rec = {
            "id": where, "agent": persona.agent, "kind": kind, "content": content,
            "importance": float(min(10, max(0, poignancy))), "event_time": created, "created_at": created,
            "last_accessed": last, "source_ids": sources, "tags": tags, "attributes": attrs,
        }
        if vectors is None:
            prep.add(rec, where, embed_text=emb_key)
        else:
            vec = vectors.get(emb_key)
            if vec is None:
                report.quirk(where, "no-vector", "embeddings.json has no vector for its embedding key; stored without one")
            else:
                rec.update(embedding=vec, embedding_model=model)
            prep.add(rec, where)


def _read_vectors(path: str, report: ImportReport) -> dict[str, np.ndarray]:
    raw = _load_json(path, "embeddings")
    if not isinstance(raw, dict):
        raise ImportFailed(f"{path} should map embedding keys to vectors; it holds a JSON {type(raw).__name__}.")
    out, dims = {}, {}
    for k, v in raw.items():
        try:
            arr = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
            report.quirk(k[:60], "bad-vector", f"{os.path.basename(path)}: not a list of finite numbers; dropped")
            continue
        out[k] = arr.astype(np.float32)
        dims.setdefault(arr.size, []).append(k)
    if len(dims) > 1:
        parts = "; ".join(f"{d}-d for {len(ks)} keys (e.g. {ks[0][:40]!r})" for d, ks in dims.items())
        raise ImportFailed(f"{path} holds vectors of different sizes ({parts}); to embed locally, re-embed: {REEMBED}.")
    return out


def _weights(persona: Persona, report: ImportReport) -> dict | None:
    s = persona.scratch or {}
    got = {k: s[k] for k in WEIGHT_KEYS if isinstance(s.get(k), (int, float)) and not isinstance(s.get(k), bool)}
    if len(got) < len(WEIGHT_KEYS):
        absent = [k for k in WEIGHT_KEYS if k not in got]
        report.warn(f"{persona.agent}: scratch.json lacks {', '.join(absent)}; "
                    "the generative-agents preset will use its defaults for this agent")
        return None
    return {k: float(v) for k, v in got.items()}


def read(source: str, report: ImportReport, task: Task, *, embedder=None, reembed: bool = False) -> Prepared:
    personas = find_personas(source)
    for p in personas:
        if p.scratch_path:
            scratch = _load_json(p.scratch_path, "persona's scratch")
            if isinstance(scratch, dict):
                p.scratch = scratch
                if isinstance(scratch.get("name"), str) and scratch["name"].strip():
                    p.agent = scratch["name"].strip()
        else:
            report.warn(f"{p.agent}: no scratch.json beside {p.memory_dir}; retrieval weights not recorded")
    by_agent: dict[str, list[str]] = {}
    for p in personas:
        by_agent.setdefault(p.agent, []).append(p.memory_dir)
    twice = {a: ds for a, ds in by_agent.items() if len(ds) > 1}
    if twice:
        a, ds = next(iter(twice.items()))
        raise ImportFailed(f"Several folders hold the memory of {a!r} ({'; '.join(ds)}); "
                           "import one simulation at a time.")

    files = [os.path.join(p.memory_dir, "embeddings.json") for p in personas]
    have = [os.path.isfile(f) for f in files]
    use_file = all(have) and not reembed
    if any(have) and not use_file:
        report.warn("embeddings.json ignored (--reembed): every embedding key is embedded locally" if reembed else
                    "only some personas have embeddings.json; every embedding key is embedded locally "
                    "so the whole store uses one model")

    prep = Prepared()
    meta = {"ga_weights": {}, "ga_curr_time": {}, "ga_kw_strength": {}, "ga_personas": {}}
    dim = None
    for p, emb_file in zip(personas, files):
        task.check()
        prefix = f"{p.agent}/" if len(personas) > 1 else ""
        nodes = _load_json(os.path.join(p.memory_dir, NODES), "nodes")
        if not isinstance(nodes, dict):
            raise ImportFailed(f"{os.path.join(p.memory_dir, NODES)} should map node ids to nodes; "
                               f"it holds a JSON {type(nodes).__name__}.")
        vectors = None
        if use_file:
            vectors = _read_vectors(emb_file, report)
            d = next((v.size for v in vectors.values()), None)
            if dim is not None and d is not None and d != dim:
                raise ImportFailed(f"{emb_file} holds {d}-d vectors but another persona's hold {dim}-d ones.")
            dim = dim or d
        _convert(p, prefix, nodes, report, prep, vectors, ADA_MODEL)
        weights = _weights(p, report) if p.scratch is not None else None
        if weights:
            meta["ga_weights"][p.agent] = weights
        now = _scratch_time((p.scratch or {}).get("curr_time"))
        if now is not None:
            meta["ga_curr_time"][p.agent] = now
        kw_path = os.path.join(p.memory_dir, "kw_strength.json")
        if os.path.isfile(kw_path):
            kw = _load_json(kw_path, "keyword strengths")
            if isinstance(kw, dict):
                meta["ga_kw_strength"][p.agent] = kw
        meta["ga_personas"][p.agent] = {"source": p.memory_dir, "id_prefix": prefix, "nodes": len(nodes),
                                        "embeddings": "embeddings.json" if use_file else "local"}
    if use_file and dim:
        report.embedding = {"model": ADA_MODEL, "dim": dim, "origin": "source"}
    if meta["ga_curr_time"]:  # the simulation's own time is the store's clock (the latest persona's)
        meta["clock"] = simulated(max(meta["ga_curr_time"].values()), "the simulation's curr_time (scratch.json)").to_meta()
    prep.meta = meta
    return prep


def import_generative_agents(source, output, *, force: bool = False, task=None,
                             embedder=None, reembed: bool = False) -> ImportReport:
    """Import a Generative Agents persona (or a storage folder of personas) into a new native store."""
    return run(read, FORMAT, source, output, force=force, task=task,
               embedder=embedder, reembed=reembed)
