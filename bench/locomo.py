"""LoCoMo as a native memviz store and a judged set: real long conversations with questions
whose answers are labelled with the dialogue turns that hold them.

    PYTHONPATH=. python bench/locomo.py [--data PATH] [--out DIR]

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024): 10 conversations between two people over up to 35 sessions, and questions (`qa`:
question, answer, `evidence` — the dialogue ids `D<session>:<turn>` holding the answer,
`category`). The data is read from `--data` (the repository's `data/locomo10.zip`, or its
`locomo10.json`), else `$MEMVIZ_LOCOMO`, else `bench/out/locomo10.zip`, else downloaded there
from the repository at a fixed commit (checked against its SHA-256). It is never committed.

The store (`<out>/locomo.db`, built with the project's own writer and the local WordLlama
embedder; the same data gives the same store):
- each turn is a memory of kind "episode", agent = the conversation ("conv-26"), id
  "<conversation>/<dialogue id>", content "Speaker: text", with " [image: caption]" when the
  turn shares a photo (the dataset's BLIP caption), attributes: speaker, dialogue id, session.
  "episode", the dual-memory design's episodic memory (what happened, what was said), rather
  than "dialogue": Generative Agents' retrieval leaves chats out of its candidates
  (retrieval/candidates.ga_rule), so as dialogue its preset would retrieve nothing here;
- event_time = created_at = its session's date and time (UTC, as the dataset gives no zone)
  plus 30 s per turn, a chat's pace: the order of turns is kept and a session stays a session;
- importance 5 for every turn, the store's neutral default: LoCoMo rates nothing, and a
  heuristic of ours (length, a photo) would make γ look useful or harmful for reasons we made
  up; with a constant, γ leaves every ranking unchanged, which is the honest reading;
- the store's clock is simulated at the last turn of all (recency from the wall clock would
  make every turn years old).

The judged set (`<out>/locomo.jsonl`, memviz's JSON Lines, checked against the store's ids
on reading back): one query per question with usable evidence, id "<conversation>/qa<n>",
query = the question, relevant = its evidence turns, grade 1 each — LoCoMo's evidence is
binary (a turn holds part of the answer or not), and a grade 2 would be our invention;
as_of = 30 s after the conversation's last turn; agents = [the conversation]. Skipped:
category 5, the adversarial questions: they ask about the wrong speaker (the answer is
"not mentioned"), so their evidence turn does not answer the question as asked; and
questions whose evidence names no turn. A few evidence ids are written loosely in the data
("D:11:26", "D30:05", several ids in one string): they are read as the turn they name.
`bench/judged.py` evaluates presets and fits on it with 5-fold cross-validation grouped by
conversation (the queries' agent).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
import zipfile
from calendar import timegm
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import memviz.store as ms
from memviz.judge import JudgedQuery, JudgedSet, read_jsonl, write_jsonl
from memviz.samples.common import with_clock, write_store

COMMIT = "e76cdff4a04fce19090596d49862fe87a5c15aaa"
URL = f"https://github.com/snap-research/locomo/raw/{COMMIT}/data/locomo10.zip"
SHA256 = "5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5"
OUT = Path(__file__).resolve().parent / "out"

TURN_GAP_S = 30
IMPORTANCE = 5.0
KIND = "episode"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SKIPPED_CATEGORIES = (5,)
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


class DataError(Exception):
    """The data cannot be had or read; the message says what to do."""


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    sessions: list[tuple[int, float, list[dict]]]  # (number, start time, turns)
    qa: list[dict]


@dataclass
class Built:
    store: Path
    judged_file: Path
    judged: JudgedSet | None = None
    counts: Counter = field(default_factory=Counter)
    by_category: Counter = field(default_factory=Counter)
    seconds: dict = field(default_factory=dict)


# ------------------------------------------------------------------ getting and reading the data
def locate(data: str | None, out: Path) -> Path:
    """The data file: --data, else $MEMVIZ_LOCOMO, else <out>/locomo10.zip (downloaded if absent)."""
    given = data or os.environ.get("MEMVIZ_LOCOMO")
    if given:
        path = Path(given)
        if not path.is_file():
            raise DataError(f"{path}: no such file; give the path of LoCoMo's locomo10.zip (or locomo10.json)")
        return path
    path = out / "locomo10.zip"
    if not path.is_file():
        download(path)
    return path


def download(dest: Path) -> None:
    print(f"downloading {URL} …", file=sys.stderr)
    try:
        with urllib.request.urlopen(URL, timeout=30) as r:
            raw = r.read()
    except (urllib.error.URLError, OSError) as e:
        raise DataError(f"LoCoMo could not be downloaded from {URL} ({getattr(e, 'reason', e)}).\n"
                        f"Get data/locomo10.zip from github.com/snap-research/locomo (commit {COMMIT}) and pass it "
                        "with --data PATH, or set MEMVIZ_LOCOMO=PATH.") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256:
        raise DataError(f"the download from {URL} is not the expected file (SHA-256 {digest}, expected {SHA256})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(raw)


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' → UTC epoch seconds."""
    dt = datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")
    return float(timegm(dt.timetuple()))


def _conversation(sample: dict, default_id: str) -> Conversation:
    conv = sample.get("conversation", sample)  # locomo10.json nests it; the zip's files are flat
    cid = sample.get("sample_id") or default_id
    sessions = []
    for key in conv:
        m = _SESSION.fullmatch(key)
        if m and conv[key]:
            sessions.append((int(m.group(1)), session_time(conv[f"{key}_date_time"]), conv[key]))
    sessions.sort()
    return Conversation(cid, (conv["speaker_a"], conv["speaker_b"]), sessions, sample.get("qa", []))


def read_conversations(path: Path) -> list[Conversation]:
    """Every conversation in the zip (one JSON document per conversation) or in locomo10.json."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                docs = [(Path(n).stem, json.load(io.TextIOWrapper(z.open(n), encoding="utf-8")))
                        for n in sorted(z.namelist()) if n.endswith(".json")]
        else:
            docs = [(path.stem, json.loads(path.read_text(encoding="utf-8")))]
        samples = [(f"conv-{stem}" if not isinstance(doc, list) else f"conv-{i}", s)
                   for stem, doc in docs for i, s in enumerate(doc if isinstance(doc, list) else [doc])]
        conversations = [_conversation(s, default) for default, s in samples]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise DataError(f"{path} is not LoCoMo's data as memviz reads it ({type(e).__name__}: {e})") from None
    if not conversations:
        raise DataError(f"{path} holds no conversation")
    return sorted(conversations, key=lambda c: (len(c.id), c.id))


# ------------------------------------------------------------------ memories and judged queries
def memories(conv: Conversation, counts: Counter) -> tuple[list[dict], dict[str, str], float]:
    """The conversation's turns as memory records, {dialogue id: memory id}, and the time of
    its last turn."""
    records, ids, last = [], {}, None
    for number, start, turns in conv.sessions:
        if last is not None and start <= last:
            counts["sessions starting before the previous one ended"] += 1
        for i, turn in enumerate(turns):
            t = start + TURN_GAP_S * i
            content = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                content += f" [image: {turn['blip_caption']}]"
                counts["turns with an image caption"] += 1
            mid = f"{conv.id}/{turn['dia_id']}"
            ids[turn["dia_id"]] = mid
            records.append({"id": mid, "agent": conv.id, "kind": KIND, "content": content, "importance": IMPORTANCE,
                            "event_time": t, "created_at": t,
                            "attributes": {"source": "locomo", "speaker": turn["speaker"], "dia_id": turn["dia_id"],
                                           "session": number}})
            last = t
        counts["sessions"] += 1
    return records, ids, last


def evidence_turns(evidence: list, ids: dict[str, str], counts: Counter) -> list[str]:
    """The memory ids of a question's evidence (loosely written ids read as the turn they name)."""
    found = []
    for entry in evidence:
        for token in re.split(r"[;,\s]+", str(entry).strip()):
            if not token:
                continue
            m = _EVIDENCE.fullmatch(token)
            dia = f"D{m.group(1)}:{m.group(2)}" if m else token
            if m and dia != token:
                counts["evidence ids written loosely, read"] += 1
            if dia in ids:
                if ids[dia] not in found:
                    found.append(ids[dia])
            else:
                counts["evidence ids naming no turn, dropped"] += 1
    return found


def judged_queries(conv: Conversation, ids: dict[str, str], as_of: float, counts: Counter,
                   by_category: Counter) -> list[JudgedQuery]:
    out = []
    for n, qa in enumerate(conv.qa):
        category = qa.get("category")
        counts["questions"] += 1
        if category in SKIPPED_CATEGORIES:
            counts[f"questions skipped: {CATEGORIES[category]}"] += 1
            continue
        relevant = evidence_turns(qa.get("evidence") or [], ids, counts)
        if not relevant:
            counts["questions skipped: no evidence turn"] += 1
            continue
        by_category[CATEGORIES.get(category, str(category))] += 1
        out.append(JudgedQuery(id=f"{conv.id}/qa{n}", query=str(qa["question"]), relevant=dict.fromkeys(relevant, 1),
                               as_of=as_of, agents=(conv.id,), judged_by="LoCoMo (Maharana et al. 2024)"))
    return out


def build(data: Path, out: Path, embedder=None) -> Built:
    """The store and the judged set of LoCoMo's data in `out` (replaced if there)."""
    out.mkdir(parents=True, exist_ok=True)
    built = Built(out / "locomo.db", out / "locomo.jsonl")
    t = time.perf_counter()
    conversations = read_conversations(data)
    records, queries = [], []
    for conv in conversations:
        recs, ids, last = memories(conv, built.counts)
        records += recs
        queries += judged_queries(conv, ids, last + TURN_GAP_S, built.counts, built.by_category)
    built.counts["conversations"] = len(conversations)
    built.counts["memories"] = len(records)
    built.seconds["read"] = time.perf_counter() - t

    t = time.perf_counter()
    meta = with_clock({"source": {"name": "LoCoMo", "url": URL, "commit": COMMIT}}, records, "LoCoMo's last turn")
    write_store(built.store, records, meta=meta, embedder=embedder)
    built.seconds["store (embed + write)"] = time.perf_counter() - t

    t = time.perf_counter()
    write_jsonl(JudgedSet("locomo", tuple(queries)), built.judged_file)
    store = ms.open_store(str(built.store), read_only=True)
    try:
        known = set(store.arrays().ids.tolist())
    finally:
        store.close()
    built.judged = read_jsonl(built.judged_file, name="locomo", known_ids=known)  # every judged id names a memory
    built.seconds["judged set (write + check)"] = time.perf_counter() - t
    return built


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="LoCoMo's locomo10.zip or locomo10.json (else $MEMVIZ_LOCOMO, else download)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"where the store and the judged set go (default {OUT})")
    a = ap.parse_args()
    data = locate(a.data, a.out)
    built = build(data, a.out)
    c, judged = built.counts, built.judged
    relevant = [len(q.relevant) for q in judged]
    print(f"LoCoMo from {data}")
    print(f"store {built.store} ({built.store.stat().st_size / 1e6:.1f} MB), judged set {built.judged_file}")
    rows = [("conversations (agents)", c["conversations"]), ("sessions", c["sessions"]), ("memories (turns)", c["memories"]),
            ("  with an image caption", c["turns with an image caption"]), ("questions", c["questions"])]
    rows += [(f"  {k}", v) for k, v in sorted(c.items()) if k.startswith(("questions skipped", "evidence ids"))]
    rows += [("judged queries", len(judged))] + [(f"  {k}", v) for k, v in sorted(built.by_category.items())]
    rows += [("relevant memories per query (mean)", f"{sum(relevant) / len(relevant):.2f}"),
             ("  most", max(relevant))]
    if c["sessions starting before the previous one ended"]:
        rows.append(("sessions starting before the previous one ended", c["sessions starting before the previous one ended"]))
    rows += [(f"seconds: {k}", f"{v:.2f}") for k, v in built.seconds.items()]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v:>8}")


if __name__ == "__main__":
    try:
        main()
    except DataError as e:
        print(f"locomo: {e}", file=sys.stderr)
        sys.exit(2)
