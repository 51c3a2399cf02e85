"""Counted nouns for messages: "1 memory", "2 memories", "1,605 agents"."""
from __future__ import annotations

IRREGULAR = {"memory": "memories", "query": "queries", "category": "categories", "entry": "entries", "is": "are",
             "this": "these"}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` with `noun` in the number it takes; thousands grouped."""
    word = noun if n == 1 else (plural or IRREGULAR.get(noun) or noun + "s")
    return f"{n:,} {word}"
