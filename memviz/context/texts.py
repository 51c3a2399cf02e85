"""Full texts and tags of every memory, aligned with the arrays (which hold only previews)."""
from __future__ import annotations

import json

import numpy as np


def load_texts(store, arrays) -> tuple[np.ndarray, list]:
    """(content per row, tags per row as a list of str), in the arrays' row order. Rows written
    after the arrays were read are ignored; invalid UTF-8 is shown with replacement characters."""
    n = len(arrays)
    index = {r: i for i, r in enumerate(arrays.rowid.tolist())}
    content = np.full(n, "", dtype=object)
    tags: list = [[] for _ in range(n)]
    for rowid, text, tag_text in store.texts_and_tags():
        i = index.get(rowid)
        if i is None:
            continue
        content[i] = text
        if tag_text and tag_text != "[]":
            tags[i] = parse_tags(tag_text)
    return content, tags


def parse_tags(value) -> list[str]:
    """Tags from their stored JSON text (or a list); malformed JSON reads as no tags."""
    if isinstance(value, list):
        return [str(t) for t in value]
    if not value:
        return []
    try:
        v = json.loads(value)
    except (ValueError, TypeError):
        return []
    return [str(t) for t in v] if isinstance(v, list) else []
