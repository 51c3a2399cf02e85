"""What a file looks like, read cheaply: its first bytes, its first JSON lines, the whole file
as one JSON document (up to a size), and that shape said in words for a message. Shared by
import-format detection (importers/detect.py) and by the message an unrecognised source gets
(frameworks/probe.py), so both describe a file the same way. No Qt here.
"""
from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property

HEAD_BYTES = 1 << 16
#: a file up to this size is parsed whole to see whether it is one JSON document
DOC_LIMIT = 64 << 20
SNIFF_LINES = 20
_WS = b"\xef\xbb\xbf \t\r\n"
_JSON_START = re.compile(rb'\{\s*["}]|\[\s*([\[\]{"\d-]|true|false|null)')


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON = _NotJson()


@dataclass
class Sniff:
    """Cheap looks at one file, each computed once. `document` is the file parsed as one JSON
    value (a JSON string holding JSON is unwrapped once: `wrapped` says so), or NOT_JSON;
    `lines` the JSON values of its first lines when it reads as JSON Lines."""

    path: str

    @cached_property
    def is_gzip(self) -> bool:
        return self.raw_head[:2] == b"\x1f\x8b"

    @cached_property
    def raw_head(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.read(HEAD_BYTES)
        except OSError:
            return b""

    @cached_property
    def head(self) -> bytes:
        """The first bytes of the (decompressed, for gzip) text, without a BOM or leading blanks."""
        data = self.raw_head
        if self.is_gzip:
            try:
                with gzip.open(self.path, "rb") as f:
                    data = f.read(HEAD_BYTES)
            except (OSError, EOFError):
                data = b""
        return data.lstrip(_WS)

    @cached_property
    def size(self) -> int:
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    @cached_property
    def lines(self) -> list:
        """The objects and arrays among the first non-blank lines that parse on their own (a
        pretty-printed document's lines rarely do; JSON Lines' lines do)."""
        text = self.head.decode("utf-8", errors="replace")
        out = []
        for row in [r for r in text.splitlines() if r.strip()][:SNIFF_LINES]:
            try:
                value = json.loads(row)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                out.append(value)
        return out

    @property
    def starts_like_json(self) -> bool:
        """Starts like a JSON object or array ("[tool]" of a TOML file does not)."""
        return bool(_JSON_START.match(self.head))

    @cached_property
    def one_line(self) -> bool:
        """The text (as far as the head shows) is a single line."""
        return b"\n" not in self.head.rstrip(_WS)

    @cached_property
    def _document(self) -> tuple[object, bool]:
        if self.is_gzip or self.size > DOC_LIMIT or self.head[:1] not in (b"{", b"[", b'"'):
            return NOT_JSON, False
        if len(self.lines) > 1:
            return NOT_JSON, False  # several JSON values, one a line: JSON Lines
        try:
            with open(self.path, "rb") as f:
                doc = json.loads(f.read().decode("utf-8-sig"))
        except (OSError, ValueError):
            return NOT_JSON, False
        if isinstance(doc, str) and doc.lstrip()[:1] in ("{", "["):
            try:
                return json.loads(doc), True
            except ValueError:
                pass
        return doc, False

    @property
    def document(self):
        return self._document[0]

    @property
    def wrapped(self) -> bool:
        """The file is a JSON string whose text is the JSON document (some Letta agent files)."""
        return self._document[1]

    def looks_like(self) -> str:
        """What the file is, in words: "a JSON object with keys a, b, c", "JSON Lines of objects
        with keys …", "gzip-compressed JSON Lines …", "a text file starting with '…'", …"""
        if not os.path.exists(self.path):
            return "does not exist"
        if os.path.isdir(self.path):
            try:
                names = sorted(os.listdir(self.path))
            except OSError:
                return "a folder that cannot be listed"
            more = f" and {len(names) - 8} more" if len(names) > 8 else ""
            return f"a folder holding {', '.join(names[:8])}{more}" if names else "an empty folder"
        if self.size == 0:
            return "an empty file"
        prefix = "gzip-compressed " if self.is_gzip else ""
        doc = self.document
        if doc is not NOT_JSON:
            return ("a JSON string holding " if self.wrapped else "") + shape(doc)
        if self.lines:
            return f"{prefix}JSON Lines of {_items(self.lines)}"
        if self.starts_like_json:
            return f"{prefix}text that starts like JSON but is not valid JSON"
        text = self.head[:60].decode("utf-8", errors="replace")
        if "\ufffd" in text or "\x00" in text:
            return f"a {prefix}binary file"
        first = text.splitlines()[0] if text.strip() else ""
        return f"a {prefix}text file starting with {first[:40]!r}"


def shape(value, *, limit: int = 6) -> str:
    """A JSON value's shape in words, for messages."""
    if isinstance(value, dict):
        return f"a JSON object with {_keys(value, limit)}" if value else "an empty JSON object"
    if isinstance(value, list):
        return f"a JSON array of {_items(value, limit)}" if value else "an empty JSON array"
    if isinstance(value, str):
        return "a JSON string"
    return f"a JSON {type(value).__name__}" if value is not None else "JSON null"


def _keys(d: dict, limit: int = 6) -> str:
    names = list(d)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ("key " if len(names) == 1 else "keys ") + ", ".join(map(str, names[:limit])) + more


def _items(items: list, limit: int = 6) -> str:
    n = len(items)
    objs = [x for x in items if isinstance(x, dict)]
    if objs and len(objs) == n:
        keys: dict = {}
        for o in objs[:50]:
            keys.update(dict.fromkeys(o))
        return f"{n:,} object{'s' if n != 1 else ''} (" + _keys(keys, limit) + ")"
    kinds = sorted({type(x).__name__ for x in items})
    return f"{n:,} value{'s' if n != 1 else ''} ({', '.join(kinds)})"


def sniff(path) -> Sniff:
    return Sniff(os.path.abspath(os.fspath(path)))


__all__ = ["Sniff", "sniff", "shape", "NOT_JSON", "DOC_LIMIT", "HEAD_BYTES"]
