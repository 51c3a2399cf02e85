"""LLM output is untrusted input: find the JSON in a reply, check its shape, keep only
citations of evidence that was actually given, and clean the text that may be stored.

Every function returns what it kept plus a list of problems (plain sentences) so the
user sees what was dropped and why.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from .errors import BadOutput

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_REPLY = 500_000
_MAX_STARTS = 200
_REFUSAL = re.compile(r"^\s*(i'?m sorry|i am sorry|i can(no|')t|i cannot|i won'?t|as an ai)", re.IGNORECASE)


def extract_json(text):
    """The first JSON object (or list) in a reply: bare, inside a code fence, or after prose."""
    if text is None or not str(text).strip():
        raise BadOutput("The model's reply was empty.")
    text = str(text).strip()
    if len(text) > _MAX_REPLY:
        raise BadOutput(f"The model's reply is implausibly long ({len(text)} characters).")
    candidates = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for c in candidates:
        try:
            value = json.loads(c)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return value
    decoder = json.JSONDecoder()
    for n, m in enumerate(re.finditer(r"[{\[]", text)):
        if n >= _MAX_STARTS:  # bounded work on hostile text
            break
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return value
    if _REFUSAL.match(text):
        raise BadOutput(f"The model declined instead of answering: {shorten(text, 200)!r}")
    raise BadOutput(f"The model's reply holds no JSON: {shorten(text, 200)!r}")


def clean_text(value, max_chars: int) -> tuple[str, bool]:
    """Plain text safe to store and show: control characters (but newlines and tabs) removed,
    whitespace trimmed, at most `max_chars`. Returns (text, was_truncated)."""
    text = "" if value is None else str(value)
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = re.sub(r"[ \t]+", " ", text).strip()
    if len(text) > max_chars:
        return text[: max_chars - 1].rstrip() + "…", True
    return text, False


def shorten(text, n: int) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= n else text[: n - 1] + "…"


def _items(value, key: str, what: str) -> list:
    """The list under `key` of a reply (a bare list is accepted too)."""
    if isinstance(value, dict):
        for k in (key, *[k for k in value if k.lower() == key]):
            if k in value:
                value = value[k]
                break
        else:
            raise BadOutput(f"The model's {what} reply has no `{key}` list (it has: {', '.join(map(str, value)) or 'nothing'}).")
    if not isinstance(value, list):
        raise BadOutput(f"The model's `{key}` is not a list.")
    return value


def parse_questions(value, limit: int, *, max_chars: int = 300) -> tuple[list[str], list[str]]:
    """Questions from {"questions": [str, ...]}: cleaned, de-duplicated, at most `limit`."""
    problems: list[str] = []
    out: list[str] = []
    seen = set()
    for i, item in enumerate(_items(value, "questions", "questions"), 1):
        if isinstance(item, dict):
            item = item.get("question", item.get("text"))
        if not isinstance(item, str):
            problems.append(f"question {i} is not text; dropped")
            continue
        q, cut = clean_text(item, max_chars)
        if not q:
            problems.append(f"question {i} is empty; dropped")
            continue
        if q.lower() in seen:
            problems.append(f"question {i} repeats an earlier one; dropped")
            continue
        if cut:
            problems.append(f"question {i} was longer than {max_chars} characters and was shortened")
        seen.add(q.lower())
        out.append(q)
    if len(out) > limit:
        problems.append(f"the model asked {len(out)} questions; the first {limit} were kept")
        out = out[:limit]
    if not out:
        raise BadOutput("The model proposed no usable questions.")
    return out, problems


@dataclass
class Insight:
    text: str
    cited_ids: list[str]
    dropped: list[str] = field(default_factory=list)  # citations that were not among the evidence


def _citation(raw, evidence_ids: list[str]) -> str | None:
    """Evidence id for one citation: a statement number (1-based, also "3", "#3", "[3]",
    "E3") or an evidence id verbatim; None when it names nothing that was given."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)) and float(raw).is_integer():
        n = int(raw)
        return evidence_ids[n - 1] if 1 <= n <= len(evidence_ids) else None
    if isinstance(raw, str):
        s = raw.strip()
        if s in evidence_ids:
            return s
        m = re.fullmatch(r"[\[#(]?\s*(?:e|statement|item)?\s*(\d+)\s*[\])]?", s, re.IGNORECASE)
        if m:
            return _citation(int(m.group(1)), evidence_ids)
    return None


def parse_insights(value, evidence_ids: list[str], limit: int, *, max_chars: int = 1000) -> tuple[list[Insight], list[str]]:
    """Insights from {"insights": [{"insight": str, "evidence": [n, ...]}]}.

    Citations must name evidence that was given (by number or id); others are dropped and
    reported. An insight left with no valid citation is dropped: it is not grounded."""
    problems: list[str] = []
    out: list[Insight] = []
    for i, item in enumerate(_items(value, "insights", "insights"), 1):
        if isinstance(item, str):
            problems.append(f"insight {i} cites no evidence; dropped")
            continue
        if not isinstance(item, dict):
            problems.append(f"insight {i} is not an object; dropped")
            continue
        raw_text = next((item[k] for k in ("insight", "text", "content") if isinstance(item.get(k), str)), None)
        text, cut = clean_text(raw_text, max_chars)
        if not text:
            problems.append(f"insight {i} has no text; dropped")
            continue
        raw_cites = next((item[k] for k in ("evidence", "evidence_ids", "sources", "citations", "cites") if k in item), [])
        if not isinstance(raw_cites, list):
            raw_cites = [raw_cites]
        cited, dropped = [], []
        for c in raw_cites:
            mid = _citation(c, evidence_ids)
            if mid is None:
                dropped.append(shorten(json.dumps(c, ensure_ascii=False) if not isinstance(c, str) else c, 60))
            elif mid not in cited:
                cited.append(mid)
        if dropped:
            problems.append(f"insight {i} cited {', '.join(dropped)}, which {'is' if len(dropped) == 1 else 'are'} "
                            f"not among the {len(evidence_ids)} pieces of evidence given; "
                            f"{'that citation was' if len(dropped) == 1 else 'those citations were'} dropped")
        if not cited:
            problems.append(f"insight {i} has no valid citation left; dropped")
            continue
        if cut:
            problems.append(f"insight {i} was longer than {max_chars} characters and was shortened")
        out.append(Insight(text, cited, dropped))
    if len(out) > limit:
        problems.append(f"the model gave {len(out)} insights; the first {limit} were kept")
        out = out[:limit]
    return out, problems


# ------------------------------------------------------------------ duplicates
#: an insight this close to a live memory (or an earlier proposal) says nothing new
DUPLICATE_COSINE = 0.97


def same_text(a: str, b: str) -> bool:
    """Equal once case and runs of whitespace are ignored."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def find_duplicate(store, agent: str, text: str, vector, earlier) -> str | None:
    """What `text` repeats, as shown to the user ("memory ID (identical text)", "memory ID
    (cosine 0.98)", "proposal N …"), or None. `earlier`: (label, text, vector) of the proposals
    before it; `vector` (unit length, or None without an embedder) finds near-identical ones
    through the store's vector index. Only live memories of the agent count."""
    import numpy as np  # numpy only when reflecting

    for label, other, vec in earlier:
        if same_text(text, other):
            return f"{label} (identical text)"
        if vector is not None and vec is not None:
            cos = float(np.dot(vector, vec))
            if cos >= DUPLICATE_COSINE:
                return f"{label} (cosine {cos:.3f})"
    # the store narrows by the words in order (case-blind); same_text decides
    for mid, other in store.live_texts_with_words(agent, text.split()):
        if same_text(text, other):
            return f"memory {mid} (identical text)"
    if vector is None:
        return None
    near = [(mid, 1.0 - d) for mid, d in store.vec_search(vector, k=20) if 1.0 - d >= DUPLICATE_COSINE]
    if not near:
        return None
    rows = {r["id"]: r for r in store.get_many([m for m, _ in near])}
    for mid, cos in near:
        r = rows.get(mid)
        if r is not None and r["valid_until"] is None and r["agent"] == agent:
            return f"memory {mid} ({'identical text' if same_text(text, r['content']) else f'cosine {cos:.3f}'})"
    return None
