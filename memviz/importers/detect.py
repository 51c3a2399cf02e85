"""Which import format a dropped file or folder is in (for the window's drop and File → Import)."""
from __future__ import annotations

import json
import os

from .generative_agents import NODES, find_personas
from .openmemory import looks_like as looks_like_openmemory
from .pipeline import ImportFailed

_SNIFF_LINES = 20
#: ADA's stream entries carry these; Wonda's records do not (GLOSSARY)
_ADA_KEYS = {"cycle", "role"}


def detect_format(path) -> str | None:
    """"generative-agents", "ada-stream", "jsonl", "openmemory", or None when the path is none of them."""
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path) or os.path.basename(path) == NODES:
        try:
            find_personas(path)
        except ImportFailed:
            return None
        return "generative-agents"
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if looks_like_openmemory(path, head):
        return "openmemory"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        return "jsonl"
    for line in text.splitlines()[:_SNIFF_LINES]:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            if _ADA_KEYS <= obj.keys():
                return "ada-stream"
            if "content" in obj:
                return "jsonl"
    return None
