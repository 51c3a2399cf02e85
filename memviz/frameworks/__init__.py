"""The memory of other agent frameworks (mem0, LangGraph, Letta, Chroma, HTM), opened where it
lives, next to memviz's own stores. No Qt here.

`open_source(target)` is how every command and the window open what the user names: a
framework's store is recognised (probe.py, each system's Source.recognise) and opened through
its mirror (mirror.py); anything else opens as a native store (SQLite file or PostgreSQL).
Input that is neither gets one message saying what it looked like and what memviz reads.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from ..background import gc_paused
from ..store import NotAStoreError, StoreError
from ..store import open_and_read as open_and_read_native
from ..tasks import Task
from .mirror import MirroredStore, open_mirrored
from .probe import Probe
from .source import EDIT_NAMES, Source

T = TypeVar("T")

#: one module per system, each defining SOURCES (its Source subclasses), tried in this order
SYSTEM_MODULES: list[str] = [
    "mem0",
    "htm",
    "letta",
    "langgraph",
    "chroma",
]


def systems() -> list[type[Source]]:
    out = []
    for name in SYSTEM_MODULES:
        out.extend(importlib.import_module(f"{__name__}.{name}").SOURCES)
    return out


def recognise(target: str) -> Source | None:
    """The framework source at `target`, or None (a native store, or nothing memviz reads)."""
    probe = Probe(target)
    if probe.is_dsn:
        if "memviz_meta" in probe.pg_tables():
            return None  # memviz's own schema on a server
    elif probe.is_file and probe.is_sqlite() and "memviz_meta" in probe.sqlite_tables():
        return None
    for cls in systems():
        source = cls.recognise(probe)
        if source is not None:
            return source
    return None


def what_memviz_reads() -> str:
    names = ", ".join(dict.fromkeys(cls.title for cls in systems()))  # one per system, not per backend
    return ("memviz opens its own stores (an SQLite file or a PostgreSQL database made by `memviz create`)"
            + (f" and the stores of {names}" if names else "")
            + "; `memviz import` brings in Generative Agents folders, ADA streams, JSONL record dumps,"
            + " Letta agent files (.af) and the exports listed by `memviz import --help`.")


def open_and_read(target: str, read: Callable | None, *, read_only: bool = False,
                  task: Task | None = None, check_later: bool = False) -> tuple[object, T | None]:
    """(store, read(store)) for whatever `target` is: a framework's store through its mirror,
    else memviz's own store (memviz.store.open_and_read; `check_later` is its option). A target
    that is neither raises a NotAStoreError saying what it looked like and what memviz reads.
    `check_later` (the window) on a large mirror's first build: its indexes are written after
    `read` (mirror.py, MirroredStore.indexing)."""
    source = recognise(target)
    if source is None:
        try:
            return open_and_read_native(target, read, read_only=read_only, check_later=check_later)
        except NotAStoreError as e:
            probe = Probe(target)
            said = f"{probe.describe_unknown()}." if probe.is_file and not probe.is_sqlite() else str(e)
            raise NotAStoreError(f"{said} {what_memviz_reads()}") from e
    store = open_mirrored(source, task, later=check_later, read_only=read_only)
    try:
        with gc_paused():  # the first read makes 100k-row columns at once (see gc_paused)
            result = read(store) if read is not None else None
    except BaseException:
        store.close()
        raise
    store.index_later()
    return store, result


def open_source(target: str, *, read_only: bool = False, task: Task | None = None):
    """The store at `target` (see open_and_read)."""
    return open_and_read(target, None, read_only=read_only, task=task)[0]


def describe(target: str) -> str:
    """One line saying what `target` is, for `memviz SOURCE` and the window's status bar."""
    source = recognise(target)
    return source.describe() if source is not None else Probe(target).describe_unknown()


__all__ = ["EDIT_NAMES", "MirroredStore", "Probe", "Source", "StoreError", "describe", "open_and_read",
           "open_mirrored", "open_source", "recognise", "systems", "what_memviz_reads"]
