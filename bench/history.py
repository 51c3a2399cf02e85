"""Prompt view, as-of and diff benchmark (issue 15): stores of 10k and 100k memories with a
history of audited edits spread over their time span.

    PYTHONPATH=. python bench/history.py [--sizes 10000,100000] [--reps 7]

Stores are cached under bench/out/. The edits (importance, protection, tags, retirements,
corrections: 1 per 10 memories) are written through the Store's audited API with the process
clock set to moments inside the span, so the audit log has the shape a long-lived store has.
Prints medians (ms) of: a scrubber step (Timeline.at), a context assembly per strategy at
budget 128k and 8k, a step of the prompt view (as-of then assembly), a query-ranked assembly,
and diffs between two moments; plus the once-per-load costs (texts, token counts, Timeline).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import memviz.store as ms
from memviz.context import Timeline, TokenCounter, assemble, diff_moments, load_texts, query_ranking
from memviz.retrieval import Engine, preset_params

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
T0 = 1_767_225_600  # 2026-01-01
WORDS = ["alice", "bob", "carol", "dave", "restaurant", "coffee", "park", "library", "meeting", "project",
         "deadline", "party", "river", "bridge", "garden", "market", "school", "office", "train", "rain",
         "sun", "music", "painting", "book", "letter", "phone", "dinner", "lunch", "breakfast", "friend",
         "family", "doctor", "teacher", "store", "bakery", "museum", "concert", "walk", "run", "swim",
         "travel", "plan", "idea", "worry", "happy", "tired", "busy", "quiet", "noisy", "early", "late"]


def build(path: str, n: int) -> None:
    rng = np.random.default_rng(n)
    tmp = path + ".part"
    for p in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    store = ms.create(tmp)
    for start in range(0, n, 5000):
        recs = []
        for i in range(start, min(start + 5000, n)):
            created = T0 + i * 60
            recs.append(dict(id=f"m{i:06d}", agent=("ann", "ben")[i % 2], kind=("episode", "fact", "reflection")[i % 3],
                             content=" ".join(rng.choice(WORDS, int(rng.integers(6, 40)))),
                             importance=float(rng.integers(1, 11)), event_time=created, created_at=created,
                             last_accessed=created + int(rng.integers(0, 86400)) if rng.random() < 0.7 else None,
                             source_ids=[f"m{i - 1:06d}", f"m{i - 2:06d}"] if i % 3 == 2 and i > 2 else []))
        store.insert_memories(recs, audit=False)
    # one audited edit per 10 memories, each at a moment after the memory it edits was created
    real_time = time.time
    edits = n // 10
    targets = rng.choice(n, edits, replace=False)
    moments = T0 + targets * 60 + rng.integers(60, 86400 * 3, edits)
    by_time = np.argsort(moments, kind="stable")  # written in time order, each after its memory
    targets, moments = targets[by_time], moments[by_time]
    try:
        for j, (i, t) in enumerate(zip(targets.tolist(), moments.tolist())):
            time.time = lambda t=t: float(t)
            mid = f"m{i:06d}"
            what = j % 5
            if what == 0:
                store.update_fields(mid, {"importance": float(rng.integers(1, 11))}, action="set_importance")
            elif what == 1:
                store.update_fields(mid, {"protected": 1, "decay_rate": 0.0}, action="confirm")
            elif what == 2:
                store.update_fields(mid, {"tags": ["bench", f"t{j % 7}"]}, action="set_tags")
            elif what == 3:
                store.set_valid_until(mid, int(t))
            else:
                store.supersede(mid, "corrected: " + " ".join(rng.choice(WORDS, 10)), when=int(t))
    finally:
        time.time = real_time
    store.close()
    os.replace(tmp, path)


def median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def once_ms(fn):
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def bench_size(n: int, reps: int) -> list[tuple[str, str, str]]:
    path = os.path.join(OUT, f"history_{n}.db")
    if not os.path.exists(path):
        print(f"building {path} …", file=sys.stderr)
        build(path, n)
    rows = []
    store = ms.open(path, read_only=True)
    try:
        ms_arrays, arrays = once_ms(lambda: store.arrays(preview=240))
        ms_texts, (content, _) = once_ms(lambda: load_texts(store, arrays))
        counter = TokenCounter()
        ms_tokens, tokens = once_ms(lambda: counter.count_many(content))
        ms_tl, timeline = once_ms(lambda: Timeline(store, arrays))
        lo, hi = float(np.nanmin(arrays.created_at)), float(np.nanmax(arrays.created_at))
        moments = iter(np.random.default_rng(1).uniform(lo, hi, 10_000).tolist())
        size = f"{n:,} memories, {timeline.entries:,} audited changes"
        rows.append((size, "once per load: arrays / texts / token counts / Timeline",
                     f"{ms_arrays:.0f} / {ms_texts:.0f} / {ms_tokens:.0f} / {ms_tl:.0f}"))
        rows.append((size, "as-of step (Timeline.at)", f"{median_ms(lambda: timeline.at(next(moments)), reps):.1f}"))
        now = hi + 3600
        live = np.isnan(arrays.valid_until)
        for budget in (128_000, 8_000):
            for strategy in ("balanced", "recent", "important"):
                ms_ = median_ms(lambda b=budget, st=strategy: assemble(arrays, tokens, now=now, strategy=st, budget=b,
                                                                       candidates=live), reps)
                rows.append((size, f"assemble {strategy}, budget {budget:,}", f"{ms_:.1f}"))

        def prompt_step():
            T = next(moments)
            v = timeline.at(T)
            assemble(v.arrays, tokens, now=T, strategy="balanced", candidates=v.live)
        rows.append((size, "prompt-view step: as-of + assemble balanced", f"{median_ms(prompt_step, reps):.1f}"))
        engine = Engine(store, arrays, now=now)
        params = preset_params("working-memory")
        engine.score(params)  # candidates and static parts cached, as a panel's engine has them

        def by_query():
            assemble(arrays, tokens, now=now, strategy="query", ranking=query_ranking(engine, params), candidates=live)
        rows.append((size, "assemble query (working-memory preset ranking)", f"{median_ms(by_query, reps):.1f}"))

        def query_step():
            # what the query panel does per scrubber step: an Engine on the view, scored as of T
            # (the bench store has no vectors, so this is the working-memory preset)
            T = next(moments)
            v = timeline.at(T)
            Engine(store, v.arrays, now=T).score(params.replace(as_of=T))
        rows.append((size, "query-panel step: as-of + Engine on the view + score", f"{median_ms(query_step, reps):.1f}"))
        for share in (0.1, 0.5, 1.0):
            t1 = lo + (hi - lo) * (1 - share) * 0.5
            t2 = t1 + (hi - lo) * share
            d = diff_moments(store, timeline, t1, t2)
            ms_ = median_ms(lambda a=t1, b=t2: diff_moments(store, timeline, a, b), max(3, reps // 2))
            rows.append((size, f"diff of two moments {share:.0%} of the span apart ({len(d.changes):,} changes)",
                         f"{ms_:.0f}"))
    finally:
        store.close()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        rows += bench_size(n, args.reps)
    w = max(len(r[1]) for r in rows)
    print(f"{'store':<40} {'what':<{w}} {'median ms':>12}")
    for size, what, ms_ in rows:
        print(f"{size:<40} {what:<{w}} {ms_:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
