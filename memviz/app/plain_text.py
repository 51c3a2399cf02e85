"""Text an agent or an LLM wrote, made safe for the places Qt reads as rich text on its own.

Every string that comes from a store (content, kind, agent, tags, ids, paths, error messages
quoting them) or from an LLM is shown as written. A QLabel or QMessageBox shows it with
`Qt.PlainText` (`plain_label`); a tooltip has no plain-text switch: Qt renders it as HTML
whenever `Qt.mightBeRichText` says so, so `<img src=…>` in a memory would load an image, and
a tooltip that may hold such a string goes through `plain_tooltip` (a model's ToolTipRole
too); pyqtgraph's LabelItem and LegendItem always read their text as HTML (`as_html`).
pyqtgraph's TextItem.setText, item views' display text, the status bar's message, window
titles, buttons and QPlainTextEdit are plain text already.
"""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel


def as_html(text: str) -> str:
    """`text` as HTML that shows it literally (for a widget that reads its text as HTML)."""
    return html.escape(str(text), quote=False)


def plain_tooltip(text: str) -> str:
    """A tooltip string that shows `text` literally, line breaks kept and long lines wrapped
    ("" stays "": no empty tooltip)."""
    return "<p style='white-space:pre-wrap'>" + as_html(text) + "</p>" if text else ""


def plain_label(text: str = "", *, wrap: bool = True) -> QLabel:
    """A selectable label that shows its text as written."""
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    return label
