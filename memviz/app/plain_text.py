"""Text an agent or an LLM wrote, made safe for the places Qt reads as rich text on its own.

A tooltip (and a QMessageBox) has no plain-text switch: Qt renders it as HTML whenever
`Qt.mightBeRichText` says so, so `<img src=…>` in a memory would load an image. Escaped and
wrapped, the text shows exactly as written, line breaks kept.
"""
from __future__ import annotations

import html


def plain_tooltip(text: str) -> str:
    """A tooltip string that shows `text` literally."""
    return "<p style='white-space:pre-wrap'>" + html.escape(str(text), quote=False) + "</p>"
