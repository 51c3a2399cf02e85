"""Deterministic sample stores (no Qt): a multi-agent simulation and a personal assistant.

`generate(out_dir, scale)` writes `simulation.db` and `assistant.db`; the same scale always
gives the same memories (ids, text, times, vectors). `scripts/make_samples.py` is the CLI.
"""
from __future__ import annotations

import os

from ..tasks import Task
from . import assistant, simulation
from .common import with_clock, write_store

NAMES = ("simulation", "assistant")


def generate_simulation(path, scale: float = 1.0, embedder=None) -> str:
    records, entities, meta = simulation.build(scale)
    meta = with_clock(meta, records, "the end of the simulated festival")
    write_store(os.fspath(path), records, entities=entities, meta=meta, embedder=embedder)
    return os.fspath(path)


def generate_assistant(path, scale: float = 1.0, embedder=None, task: Task | None = None) -> str:
    records, entities, meta = assistant.build(scale)
    meta = with_clock(meta, records, "the sample's last night of consolidation")
    write_store(os.fspath(path), records, entities=entities, meta=meta, embedder=embedder, task=task)
    return os.fspath(path)


def generate(out_dir, scale: float = 1.0, names=NAMES, embedder=None) -> list[str]:
    """Write the named sample stores into out_dir (replacing them); returns their paths."""
    from memviz.embed import default_embedder

    embedder = embedder or default_embedder()
    os.makedirs(out_dir, exist_ok=True)
    makers = {"simulation": generate_simulation, "assistant": generate_assistant}
    return [makers[n](os.path.join(out_dir, f"{n}.db"), scale, embedder) for n in names]


__all__ = ["NAMES", "generate", "generate_simulation", "generate_assistant"]
