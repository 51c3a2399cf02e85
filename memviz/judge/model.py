"""Judged queries: what should come back for a query, graded, and who said so.

A judged query is a query text and/or a memory used as the query (`like`), the moment it is
asked (`as_of`: recency is measured from it), optional agent/kind/tag filters, and graded
relevance for memory ids. Grades follow TREC's graded qrels:
0 judged not relevant, 1 relevant, 2 highly relevant; a memory that is not judged counts as
not relevant. A judged set is a name and its queries, each id once.

Everything is validated on construction: a bad value raises InvalidJudgment saying what is
wrong, so a JudgedQuery or JudgedSet that exists is sound.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

NOT_RELEVANT, RELEVANT, HIGHLY_RELEVANT = 0, 1, 2
GRADES = (NOT_RELEVANT, RELEVANT, HIGHLY_RELEVANT)


class InvalidJudgment(ValueError):
    """A judged query or set that cannot be made; the message says what is wrong."""


def _text(value, what: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidJudgment(f"{what} must be text, not {type(value).__name__}")
    if not empty and not value.strip():
        raise InvalidJudgment(f"{what} is empty")
    return value


def _moment(value, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidJudgment(f"{what} must be epoch seconds (a finite number) or None, not {value!r}")
    return float(value)


def _names(values, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidJudgment(f"{what} must be a list of names, not {type(values).__name__}")
    names = tuple(values)
    for v in names:
        _text(v, f"a name in {what}")
    return tuple(dict.fromkeys(names))


def check_grade(grade, memory_id: str) -> int:
    """The grade as an int, or InvalidJudgment: 0, 1 or 2 (a bool or 1.0 is not a grade)."""
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        raise InvalidJudgment(f"the grade of {memory_id!r} is {grade!r}; a grade is 0 (not relevant), "
                              "1 (relevant) or 2 (highly relevant)")
    return grade


@dataclass(frozen=True)
class JudgedQuery:
    """One judged query. `relevant` maps memory ids to grades; at least one grade is 1 or 2
    (recall and nDCG mean nothing for a query with nothing to find)."""

    id: str
    relevant: Mapping[str, int] = field(hash=False)
    query: str = ""
    like: str | None = None
    as_of: float | None = None
    agents: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    judged_by: str = ""
    judged_at: float | None = None

    def __post_init__(self):
        _text(self.id, "a judged query's id")
        _text(self.query, f"query {self.id!r}: the query text", empty=True)
        if self.like is not None:
            _text(self.like, f"query {self.id!r}: `like` (the memory used as the query)")
        if not self.query.strip() and self.like is None:
            raise InvalidJudgment(f"query {self.id!r} has neither a query text nor a memory to query like")
        if not isinstance(self.relevant, Mapping):
            raise InvalidJudgment(f"query {self.id!r}: relevant must map memory ids to grades")
        grades = {}
        for mid, grade in self.relevant.items():
            _text(mid, f"query {self.id!r}: a judged memory id")
            try:
                grades[mid] = check_grade(grade, mid)
            except InvalidJudgment as e:
                raise InvalidJudgment(f"query {self.id!r}: {e}") from None
        if not any(grades.values()):
            raise InvalidJudgment(f"query {self.id!r} judges no memory relevant (grade 1 or 2)"
                                  + (f"; its {len(grades)} judged memories are all grade 0" if grades else ""))
        set_ = object.__setattr__  # frozen: the normalised values are set once, here
        set_(self, "relevant", MappingProxyType(grades))
        set_(self, "as_of", _moment(self.as_of, f"query {self.id!r}: as_of"))
        set_(self, "judged_at", _moment(self.judged_at, f"query {self.id!r}: judged_at"))
        _text(self.judged_by, f"query {self.id!r}: judged_by", empty=True)
        for name in ("agents", "kinds", "tags"):
            set_(self, name, _names(getattr(self, name), f"query {self.id!r}: {name}"))

    @property
    def relevant_ids(self) -> tuple[str, ...]:
        """The memories graded 1 or 2, in the order they were judged."""
        return tuple(m for m, g in self.relevant.items() if g > NOT_RELEVANT)

    def grade(self, memory_id: str) -> int:
        """The memory's grade; a memory that is not judged is not relevant (0)."""
        return self.relevant.get(memory_id, NOT_RELEVANT)

    def memory_ids(self) -> tuple[str, ...]:
        """Every memory this query names: the judged ones and the one it queries like."""
        return tuple(self.relevant) + ((self.like,) if self.like is not None else ())


@dataclass(frozen=True)
class JudgedSet:
    """A named set of judged queries, in order, each id once."""

    name: str
    queries: tuple[JudgedQuery, ...]

    def __post_init__(self):
        _text(self.name, "a judged set's name")
        queries = tuple(self.queries)
        seen: set[str] = set()
        for q in queries:
            if not isinstance(q, JudgedQuery):
                raise InvalidJudgment(f"judged set {self.name!r} holds {type(q).__name__}, not a JudgedQuery")
            if q.id in seen:
                raise InvalidJudgment(f"judged set {self.name!r} has two queries with the id {q.id!r}")
            seen.add(q.id)
        object.__setattr__(self, "queries", queries)

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[JudgedQuery]:
        return iter(self.queries)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.queries)

    def by_id(self) -> dict[str, JudgedQuery]:
        return {q.id: q for q in self.queries}

    def qrels(self) -> dict[str, dict[str, int]]:
        """{query id: {memory id: grade}}: what metrics.evaluate takes."""
        return {q.id: dict(q.relevant) for q in self.queries}

    def memory_ids(self) -> set[str]:
        """Every memory the set names (judged, or queried like)."""
        return {m for q in self.queries for m in q.memory_ids()}
