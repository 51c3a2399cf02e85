"""A judged memory that was corrected since it was judged: its grade goes to what replaced it.

A correction on memviz's own stores retires the memory and writes a new one that supersedes it
(`attributes.supersedes`); a consolidation merges several into one the same way. A judgment names
the memory as it was, so without this a corrected fact would count as a relevant memory that can
never be retrieved (it is retired) and its replacement as not judged.

The rule, per judged query: a judged memory that is not among the query's candidates (retired at
its `as_of`, or gone) and has successors that are, passes its grade to them — following a chain of
corrections to the first ones that are candidates. A memory still a candidate keeps its grade (a
query asked before the correction judges the old one); a successor the user graded keeps its own
grade; one that inherits from several memories (a merge) takes the highest. Stores that correct in
place keep the id, so nothing follows there.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from .model import JudgedQuery


class Successors:
    """Which memories supersede which, from the store's (new id, old id) links."""

    def __init__(self, links: Iterable[tuple[str, str]]):
        self._next: dict[str, list[str]] = {}
        for new, old in links:
            if new != old:
                self._next.setdefault(old, []).append(new)

    def __contains__(self, memory_id: str) -> bool:
        """Whether something supersedes `memory_id`."""
        return memory_id in self._next

    def heirs(self, memory_id: str, usable: Callable[[str], bool]) -> list[str]:
        """The first memories down `memory_id`'s chains of successors for which `usable` holds
        (each chain followed until one does; a cycle ends it)."""
        out, seen, frontier = [], {memory_id}, list(self._next.get(memory_id, ()))
        while frontier:
            mid = frontier.pop(0)
            if mid in seen:
                continue
            seen.add(mid)
            if usable(mid):
                out.append(mid)
            else:
                frontier.extend(self._next.get(mid, ()))
        return out

    def follow(self, q: JudgedQuery, candidate: Callable[[str], bool]) -> JudgedQuery:
        """`q` with the grades of its judged memories that are not candidates moved to their
        heirs that are (the module's rule); `q` itself when nothing moves, or when what would be
        left judges nothing relevant (a successor the user graded 0: the query then counts its
        old memory as one it cannot find, which is what the user said)."""
        if not any(m in self._next for m in q.relevant):
            return q
        grades = dict(q.relevant)
        inherited: dict[str, int] = {}
        for mid, grade in q.relevant.items():
            if mid not in self._next or candidate(mid):
                continue
            heirs = self.heirs(mid, candidate)
            if not heirs:
                continue
            del grades[mid]
            for h in heirs:
                if h not in q.relevant:
                    inherited[h] = max(inherited.get(h, 0), grade)
        grades.update(inherited)
        if grades == dict(q.relevant) or not any(grades.values()):
            return q
        return replace(q, relevant=grades)
