"""Reflection's own cost, the LLM answering at once (the fake server on 127.0.0.1): propose
(recent memories, 3 questions, evidence by the retrieval engine (dual-memory preset) or sqlite-vec
kNN, prompts, validation, 4 HTTP calls)
and accept (embed 3 reflections with the local model, one transaction). Prints medians.

    PYTHONPATH=. python bench/bench_reflect.py [sizes...]
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from fake_openai import FakeOpenAI, reply_json  # noqa: E402

import memviz.store as ms  # noqa: E402
from memviz.embed import default_embedder  # noqa: E402
from memviz.reflect import LLMClient, LLMSettings, ReflectionConfig, Reflector, default_retriever, vector_retriever  # noqa: E402

WORDS = "deadline garden coffee project stress tomato meeting report cafe basil manager demo run park book".split()


def build(path, n, seed=0):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, 8)) for _ in range(n)]
    emb = default_embedder()
    vecs = emb.embed(texts)
    s = ms.create(path)
    recs = [dict(agent="ann", kind="episode", content=t, importance=float(rng.integers(1, 10)),
                 event_time=1_700_000_000 + i * 60, embedding=v, embedding_model=emb.model)
            for i, (t, v) in enumerate(zip(texts, vecs))]
    for i in range(0, n, 20_000):
        s.insert_memories(recs[i:i + 20_000], audit=False)
    return s


def script(server):
    server.push(reply_json({"questions": ["What stresses Ann?", "What does Ann grow?", "Where does Ann drink coffee?"]}),
                *[reply_json({"insights": [{"insight": f"insight {k}", "evidence": [1, 2, 3]}]}) for k in range(3)])


def main(sizes):
    print(f"{'memories':>9} {'evidence by':>12} {'propose ms':>11} {'accept ms':>10} {'http calls':>11}")
    with tempfile.TemporaryDirectory() as d, FakeOpenAI() as server:
        llm = LLMClient(LLMSettings(base_url=server.base_url, chat_model="fake-chat", api_key="k"))
        for n in sizes:
            s = build(os.path.join(d, f"r{n}.db"), n)
            for how, make in (("engine", default_retriever), ("sqlite-vec", vector_retriever)):
                run_once(s, llm, server, n, how, make)
            s.close()


def run_once(s, llm, server, n, how, make):
    """Median of 5 propose + accept rounds (each accept adds 3 reflections)."""
    r = Reflector(s, llm, config=ReflectionConfig(), retriever=make(s, agent="ann"))
    prop, acc = [], []
    for _ in range(5):
        script(server)
        calls = llm.calls
        t = time.perf_counter()
        run = r.propose()
        prop.append(time.perf_counter() - t)
        calls = llm.calls - calls
        t = time.perf_counter()
        r.accept(run, run.proposals)
        acc.append(time.perf_counter() - t)
    print(f"{n:>9} {how:>12} {1000 * statistics.median(prop):>11.1f} {1000 * statistics.median(acc):>10.1f} "
          f"{calls:>11}")

if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1_000, 10_000, 50_000])
