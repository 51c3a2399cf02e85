"""Which import format a file or folder is in, told by its content, never by its first
character or its name alone (for the window's drop, File → Import, and the message a wrong
format gets). A file that is none of them gets one sentence saying what it looked like and
what memviz imports (`describe_unknown`).

A format's detection is declared with it (registry.py, `ImportFormat.file` / `.folder`): a test
on the file's `memviz.sniff.Sniff` (cached looks: head, first JSON lines, the whole file as one
JSON document) or on a folder's path, tried in the order the formats were registered. The
built-in formats' tests are below.
"""
from __future__ import annotations

import os

from ..sniff import Sniff, sniff
from .generative_agents import NODES, find_personas
from .letta_agent_file import is_agent_file
from .openmemory import looks_like as looks_like_openmemory
from .pipeline import ImportFailed
from .registry import detects, formats

#: ADA's stream entries carry these; Wonda's records do not (GLOSSARY)
_ADA_KEYS = {"cycle", "role"}


def _records(items: list) -> bool:
    """Most of the first items are objects with a content field (memviz's JSONL record dumps)."""
    first = items[:20]
    return bool(first) and sum(isinstance(x, dict) and "content" in x for x in first) * 2 > len(first)


def openmemory(s: Sniff) -> bool:
    return looks_like_openmemory(s.path, s.raw_head)


def ada_stream(s: Sniff) -> bool:
    return bool(s.lines) and any(isinstance(x, dict) and _ADA_KEYS <= x.keys() for x in s.lines)


def record_dump(s: Sniff) -> bool:
    if s.is_gzip:
        return False
    doc = s.document
    if isinstance(doc, list):
        return _records(doc)
    return _records(s.lines)  # JSON Lines (a one-line file's record among them)


def letta_agent_file(s: Sniff) -> bool:
    return is_agent_file(s.document)


def generative_agents(path: str) -> bool:
    try:
        find_personas(path)
    except ImportFailed:
        return False
    return True


def detect_format(path) -> str | None:
    """The import format of `path` (a FORMATS name), or None when it is none of them."""
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path) or os.path.basename(path) == NODES:
        return next((f.name for f in formats() if detects(f, "folder", path)), None)
    if not os.path.isfile(path):
        return None
    s = sniff(path)
    return next((f.name for f in formats() if detects(f, "file", s)), None)


def what_memviz_imports() -> str:
    return "memviz imports " + "; ".join(f"{f.reads} as `{f.name}`" for f in formats())


def describe_unknown(path) -> str:
    """One message for a file or folder that is no import format: what it looked like, and
    what memviz imports."""
    path = os.path.abspath(os.fspath(path))
    return f"{path} is {sniff(path).looks_like()}, which is none of the formats memviz imports. {what_memviz_imports()}."
