"""Deterministic k-fold splits of judged query ids, optionally by group (all the queries of one
conversation or agent in the same fold, so a fit is tested on conversations it never saw)."""
from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Fold:
    """One split: fit on `train`, measure on `test` (each query is in one test set)."""

    index: int
    train: tuple[str, ...]
    test: tuple[str, ...]


def kfold(query_ids: Iterable[str], k: int = 5, *, seed: int = 0,
          groups: Mapping[str, Hashable] | None = None) -> tuple[Fold, ...]:
    """`k` folds of the ids. The same ids, k, seed and groups give the same folds whatever the
    order of the ids. Without groups the ids are shuffled (seeded) and dealt in turn, so fold
    sizes differ by at most one; with `groups` ({query id: group key}) whole groups are shuffled
    and each, largest first, goes to the fold with the fewest queries so far."""
    ids = list(query_ids)
    if len(set(ids)) != len(ids):
        twice = next(q for i, q in enumerate(ids) if q in ids[:i])
        raise ValueError(f"the query id {twice!r} is given twice")
    ids.sort()
    rng = random.Random(seed)
    if groups is None:
        if not 2 <= k <= len(ids):
            raise ValueError(f"{k} folds of {len(ids)} queries: k must be from 2 to the number of queries")
        rng.shuffle(ids)
        tests = [sorted(ids[i::k]) for i in range(k)]
    else:
        missing = [q for q in ids if q not in groups]
        if missing:
            raise ValueError(f"no group for the queries {', '.join(map(repr, missing[:5]))}")
        members: dict[Hashable, list[str]] = {}
        for q in ids:
            members.setdefault(groups[q], []).append(q)
        keys = sorted(members, key=repr)
        if not 2 <= k <= len(keys):
            raise ValueError(f"{k} folds of {len(keys)} groups: k must be from 2 to the number of groups")
        rng.shuffle(keys)
        keys.sort(key=lambda g: -len(members[g]))  # stable: equal sizes keep the shuffled order
        tests = [[] for _ in range(k)]
        for g in keys:
            smallest = min(range(k), key=lambda i: len(tests[i]))
            tests[smallest].extend(members[g])
        tests = [sorted(t) for t in tests]
    everyone = sorted(ids)
    folds = []
    for i, test in enumerate(tests):
        held = set(test)
        folds.append(Fold(i, tuple(q for q in everyone if q not in held), tuple(test)))
    return tuple(folds)


__all__ = ["Fold", "kfold"]
