"""Judged sets in files: JSON Lines (memviz's own, everything kept) and TREC qrels + topics.

JSON Lines, one query a line (blank lines are skipped):

    {"id": "q1", "query": "text", "relevant": {"<memory id>": 2, "<memory id>": 1}, "as_of": 1683554160,
     "agents": ["..."], "kinds": ["..."], "tags": ["..."], "like": "<memory id>",
     "judged_by": "ann", "judged_at": "2026-03-01T12:00"}

Only `relevant` and `query` (or `like`) are required; a list of ids for `relevant` means
grade 1 each; times are epoch seconds or ISO 8601 (the store's reader, records.read_time); a
query without an id gets `q<line>`.

TREC: qrels lines `query-id iteration memory-id grade` (the iteration is ignored, as trec_eval
does) and a topics file of `query-id<TAB>query text` lines, or the classic `<top><num> …
<title> …</top>` form. TREC files hold the id, the text and the grades only: `as_of`, the
filters, `like` and who judged are not written there (use JSON Lines to keep them).

Reading is all or nothing: every problem of a file (a malformed line, a duplicate id, a grade
outside 0–2, an unreadable time, a judged id that names no memory, …) is collected with its
line, and one JudgedFileError lists them; nothing is returned from a file that has any.
Writing goes to a temporary file beside the target, moved into place when complete.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..store.records import read_time
from .model import RELEVANT, InvalidJudgment, JudgedQuery, JudgedSet

#: problems listed in a JudgedFileError's message (all of them are in `.problems`)
SHOWN_PROBLEMS = 20
#: problems kept at most; past this only their number is counted
KEPT_PROBLEMS = 1000

FIELDS = ("id", "query", "like", "relevant", "as_of", "agents", "kinds", "tags", "judged_by", "judged_at")
_TIME_HINT = "give epoch seconds or ISO 8601 such as 2023-05-08T13:56:00Z"


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a file: where (the file and its 1-based line, None for the whole
    file) and what."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"{self.path}{'' if self.line is None else f':{self.line}'}: {self.message}"


class JudgedFileError(ValueError):
    """A judged file that was refused whole; `problems` lists what is wrong, line by line."""

    def __init__(self, problems: Iterable[Problem], total: int | None = None):
        self.problems = tuple(problems)
        self.total = len(self.problems) if total is None else total
        files = sorted({p.path for p in self.problems})
        head = (f"{', '.join(files)}: {self.total} problem{'s' if self.total != 1 else ''}; "
                f"nothing was read from {'it' if len(files) == 1 else 'these files'}")
        shown = [f"  {p}" for p in self.problems[:SHOWN_PROBLEMS]]
        more = self.total - len(shown)
        super().__init__("\n".join([head, *shown] + ([f"  (and {more} more)"] if more > 0 else [])))


class _Problems:
    """Collects the problems of one read (kept up to KEPT_PROBLEMS, all counted)."""

    def __init__(self):
        self.kept: list[Problem] = []
        self.total = 0

    def add(self, path: str, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.kept) < KEPT_PROBLEMS:
            self.kept.append(Problem(path, line, message))

    def raise_any(self) -> None:
        if self.total:
            self.kept.sort(key=lambda p: (p.path, p.line or 0))
            raise JudgedFileError(self.kept, self.total)


# ------------------------------------------------------------------ one query as a JSON object
def _moment(value, what: str) -> float | None:
    epoch, ok = read_time(value)
    if not ok or isinstance(value, bool):
        raise InvalidJudgment(f"{what} {json.dumps(value, ensure_ascii=False)} is not a time; {_TIME_HINT}")
    return epoch


def _names(value, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidJudgment(f'{what} must be a list of names such as ["a"], not {json.dumps(value, ensure_ascii=False)}')
    return tuple(value)


def _grades(value) -> dict[str, int]:
    if isinstance(value, list):
        grades: dict[str, int] = {}
        for mid in value:
            if not isinstance(mid, str):
                raise InvalidJudgment(f"relevant lists {json.dumps(mid)}, not a memory id (text)")
            if mid in grades:
                raise InvalidJudgment(f"relevant lists {mid!r} twice")
            grades[mid] = RELEVANT
        return grades
    if isinstance(value, dict):
        grades = {}
        for mid, grade in value.items():
            if isinstance(grade, float) and math.isfinite(grade) and grade == int(grade):
                grade = int(grade)  # 2.0 from a tool that writes every number as a float
            grades[mid] = grade
        return grades
    raise InvalidJudgment('relevant must be {"<memory id>": grade, …} or a list of memory ids, '
                          f"not {json.dumps(value, ensure_ascii=False)[:60]}")


def query_from_json(obj, *, default_id: str | None = None) -> JudgedQuery:
    """A JudgedQuery from one JSON object of the JSON Lines format; InvalidJudgment says what is
    wrong. `default_id` is used when the object has no id."""
    if not isinstance(obj, dict):
        raise InvalidJudgment(f"a judged query is a JSON object, not {type(obj).__name__}")
    unknown = [k for k in obj if k not in FIELDS]
    if unknown:
        raise InvalidJudgment(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                              f"a judged query has {', '.join(FIELDS)}")
    if "relevant" not in obj:
        raise InvalidJudgment('"relevant" is missing: the memories that should come back')
    if "query" not in obj and "like" not in obj:
        raise InvalidJudgment('"query" is missing: the query text (or "like": a memory to query like)')
    qid = obj.get("id", default_id)
    if qid is None:
        raise InvalidJudgment('"id" is missing')
    if not isinstance(qid, str):
        raise InvalidJudgment(f"the id {json.dumps(qid)} is not text")
    return JudgedQuery(
        id=qid, relevant=_grades(obj["relevant"]), query=obj.get("query", ""), like=obj.get("like"),
        as_of=_moment(obj.get("as_of"), "as_of"),
        agents=_names(obj.get("agents", []), "agents"), kinds=_names(obj.get("kinds", []), "kinds"),
        tags=_names(obj.get("tags", []), "tags"), judged_by=obj.get("judged_by", ""),
        judged_at=_moment(obj.get("judged_at"), "judged_at"))


def _number(t: float) -> int | float:
    return int(t) if t == int(t) else t


def query_to_json(q: JudgedQuery) -> dict:
    """The JSON object of one query (what query_from_json reads back); empty fields left out."""
    obj: dict = {"id": q.id}
    if q.query:
        obj["query"] = q.query
    if q.like is not None:
        obj["like"] = q.like
    obj["relevant"] = dict(q.relevant)
    if q.as_of is not None:
        obj["as_of"] = _number(q.as_of)
    for name in ("agents", "kinds", "tags"):
        if getattr(q, name):
            obj[name] = list(getattr(q, name))
    if q.judged_by:
        obj["judged_by"] = q.judged_by
    if q.judged_at is not None:
        obj["judged_at"] = _number(q.judged_at)
    return obj


# ------------------------------------------------------------------ reading and writing files
def _lines(path: str, problems: _Problems) -> list[tuple[int, str]]:
    """(line number, text) of each non-blank line; undecodable lines become problems."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        problems.add(path, None, f"cannot be read: {e.strerror or e}")
        return []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    out = []
    for n, line in enumerate(raw.split(b"\n"), 1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            problems.add(path, n, "is not UTF-8 text")
            continue
        if text.strip():
            out.append((n, text.rstrip("\r")))
    return out


def _unknown_ids(ids: Iterable[str], known: Collection[str]) -> str | None:
    missing = list(dict.fromkeys(m for m in ids if m not in known))
    if not missing:
        return None
    shown = ", ".join(repr(m) for m in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return f"memory id{'s' if len(missing) > 1 else ''} {shown} name{'' if len(missing) > 1 else 's'} no memory in the store"


def _set_name(name: str | None, path: str) -> str:
    return name if name is not None else os.path.splitext(os.path.basename(path))[0]


def read_jsonl(path, *, name: str | None = None, known_ids: Collection[str] | None = None) -> JudgedSet:
    """The judged set in a JSON Lines file (named `name`, else the file's name without its
    extension). `known_ids`: the store's memory ids; a judged (or `like`) id outside them is a
    problem. Raises JudgedFileError listing every problem, and then returns nothing."""
    path = os.fspath(path)
    problems = _Problems()
    parsed: list[tuple[int, dict]] = []
    for n, text in _lines(path, problems):
        try:
            obj = json.loads(text)
        except ValueError as e:
            problems.add(path, n, f"is not JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(obj, dict):
            problems.add(path, n, f"is JSON {type(obj).__name__}, not an object with \"query\" and \"relevant\"")
            continue
        parsed.append((n, obj))
    taken = {o["id"] for _, o in parsed if isinstance(o.get("id"), str)}
    first_line: dict[str, int] = {}
    queries = []
    for n, obj in parsed:
        default = f"q{n}"
        k = 2
        while "id" not in obj and default in taken:  # a generated id never takes an explicit one
            default, k = f"q{n}-{k}", k + 1
        try:
            q = query_from_json(obj, default_id=default)
        except InvalidJudgment as e:
            problems.add(path, n, str(e))
            continue
        if q.id in first_line:
            problems.add(path, n, f"the query id {q.id!r} is already used on line {first_line[q.id]}")
            continue
        first_line[q.id] = n
        if known_ids is not None and (msg := _unknown_ids(q.memory_ids(), known_ids)):
            problems.add(path, n, msg)
            continue
        queries.append(q)
    if not problems.total and not queries:
        problems.add(path, None, "holds no judged query (one JSON object a line)")
    problems.raise_any()
    return JudgedSet(_set_name(name, path), tuple(queries))


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_jsonl(judged: JudgedSet, path) -> int:
    """Write the set as JSON Lines (everything kept); returns the number of queries written."""
    _write_atomic(os.fspath(path), "".join(json.dumps(query_to_json(q), ensure_ascii=False) + "\n" for q in judged))
    return len(judged)


# ------------------------------------------------------------------ TREC qrels + topics
_TOP = re.compile(r"<top>(.*?)(?:</top>|\Z)", re.I | re.S)
_NUM = re.compile(r"<num>\s*(?:number\s*:)?\s*([^\s<]+)", re.I)
_TITLE = re.compile(r"<title>\s*(?:topic\s*:)?(.*?)(?=<[a-z/]|\Z)", re.I | re.S)


def _classic_topics(path: str, lines: list[tuple[int, str]], problems: _Problems) -> list[tuple[int, str, str]]:
    """(line, id, text) of each <top> block; the text is the title, whitespace collapsed."""
    by_line = dict(lines)  # blank lines were dropped by _lines: put them back for the line numbers
    text = "\n".join(by_line.get(i, "") for i in range(1, (lines[-1][0] if lines else 0) + 1))
    topics = []
    for m in _TOP.finditer(text):
        n = text.count("\n", 0, m.start()) + 1
        body = m.group(1)
        if not m.group(0).lower().endswith("</top>"):
            problems.add(path, n, "a <top> block is not closed by </top>")
            continue
        num, title = _NUM.search(body), _TITLE.search(body)
        if not num:
            problems.add(path, n, "a <top> block has no <num>")
        elif not title or not title.group(1).strip():
            problems.add(path, n, f"topic {num.group(1)!r} has no <title> text")
        else:
            topics.append((n, num.group(1), " ".join(title.group(1).split())))
    if not topics and not problems.total:
        problems.add(path, None, "holds no <top> block")
    return topics


def _tsv_topics(path: str, lines: list[tuple[int, str]], problems: _Problems) -> list[tuple[int, str, str]]:
    topics = []
    for n, line in lines:
        qid, tab, text = line.partition("\t")
        if not tab:
            problems.add(path, n, "is not 'query id<TAB>query text'")
        elif not qid.strip() or not text.strip():
            problems.add(path, n, "has an empty " + ("query id" if not qid.strip() else "query text"))
        else:
            topics.append((n, qid.strip(), text.strip()))
    return topics


def read_trec(qrels_path, topics_path, *, name: str | None = None,
              known_ids: Collection[str] | None = None) -> JudgedSet:
    """The judged set in a TREC qrels file and its topics file (named `name`, else the qrels
    file's name). Every topic needs a grade 1 or 2 in the qrels, every qrels line a topic.
    Raises JudgedFileError listing every problem of both files."""
    qrels_path, topics_path = os.fspath(qrels_path), os.fspath(topics_path)
    problems = _Problems()
    tlines = _lines(topics_path, problems)
    classic = any("<top>" in t.lower() for _, t in tlines)
    topic_list = (_classic_topics if classic else _tsv_topics)(topics_path, tlines, problems)
    if not topic_list and not problems.total:
        problems.add(topics_path, None, "holds no topic")
    topics: dict[str, tuple[int, str]] = {}
    for n, qid, text in topic_list:
        if qid in topics:
            problems.add(topics_path, n, f"the topic id {qid!r} is already used on line {topics[qid][0]}")
        else:
            topics[qid] = (n, text)

    grades: dict[str, dict[str, int]] = {}
    where: dict[tuple[str, str], int] = {}
    troubled: set[str] = set()  # topics with a refused qrels line: "no judgment" would repeat it
    for n, line in _lines(qrels_path, problems):
        fields = line.split()
        if len(fields) != 4:
            problems.add(qrels_path, n, f"has {len(fields)} fields; a qrels line is 'query-id 0 memory-id grade'")
            continue
        qid, _, mid, grade_text = fields
        try:
            grade = int(grade_text)
        except ValueError:
            troubled.add(qid)
            problems.add(qrels_path, n, f"the grade {grade_text!r} is not an integer (0, 1 or 2)")
            continue
        if grade not in (0, 1, 2):
            troubled.add(qid)
            problems.add(qrels_path, n, f"the grade {grade} is outside 0–2")
            continue
        if qid not in topics:
            problems.add(qrels_path, n, f"topic {qid!r} has no text in {topics_path}")
            continue
        if (qid, mid) in where:
            troubled.add(qid)
            problems.add(qrels_path, n, f"{mid!r} is judged for topic {qid!r} again (first on line {where[qid, mid]})")
            continue
        if known_ids is not None and (msg := _unknown_ids([mid], known_ids)):
            troubled.add(qid)
            problems.add(qrels_path, n, msg)
            continue
        where[qid, mid] = n
        grades.setdefault(qid, {})[mid] = grade

    queries = []
    for qid, (n, text) in topics.items():
        judged = grades.get(qid)
        if judged is None:
            if qid not in troubled:
                problems.add(topics_path, n, f"topic {qid!r} has no judgment in {qrels_path}")
            continue
        try:
            queries.append(JudgedQuery(id=qid, relevant=judged, query=text))
        except InvalidJudgment as e:
            problems.add(topics_path, n, str(e))
    problems.raise_any()
    return JudgedSet(_set_name(name, qrels_path), tuple(queries))


def _trec_token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise InvalidJudgment(f"{what} {value!r} holds white space, which TREC files cannot keep; export as JSON Lines")
    return value


def write_trec(judged: JudgedSet, qrels_path, topics_path) -> int:
    """Write the set as TREC qrels and a `query-id<TAB>text` topics file (white space in a
    text becomes single spaces); returns the number of queries. A query by example only
    (`like`, no text) or an id with white space cannot be written: InvalidJudgment, nothing
    written. The fields TREC has no place for (as_of, filters, like, who judged) are left out."""
    topics, qrels = [], []
    for q in judged:
        qid = _trec_token(q.id, "the query id")
        if not q.query.strip():
            raise InvalidJudgment(f"query {q.id!r} has no text (it queries like {q.like!r}); "
                                  "TREC topics hold text only: export it as JSON Lines")
        topics.append(f"{qid}\t{' '.join(q.query.split())}\n")
        qrels.extend(f"{qid} 0 {_trec_token(m, 'the memory id')} {g}\n" for m, g in q.relevant.items())
    _write_atomic(os.fspath(topics_path), "".join(topics))
    _write_atomic(os.fspath(qrels_path), "".join(qrels))
    return len(judged)


__all__ = ["FIELDS", "JudgedFileError", "Problem", "query_from_json", "query_to_json", "read_jsonl", "read_trec",
           "write_jsonl", "write_trec"]
