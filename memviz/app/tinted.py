"""Text in a colour of the window's theme, kept in it when the scheme changes.

A `TintedLabel` asks its colour (`Colour`: the colour in the window's theme now, e.g.
`lambda: QColor(theme().alarm)`) again whenever its palette changes; a fixed colour (a style
sheet's "color: #b00") stays what it was in the other scheme. Dialogs may not import
`plots.style` (the import contracts): their creator passes each colour in; panels use
`plots.style.ThemeLabel`, this label with the colour picked from the theme.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel

Colour = Callable[[], QColor]


class TintedLabel(QLabel):
    """A selectable plain-text label drawn in `colour()` (None: the palette's own text colour)."""

    def __init__(self, text: str = "", colour: Colour | None = None, *, wrap: bool = True,
                 selectable: bool = True) -> None:
        super().__init__(text)
        self.setTextFormat(Qt.PlainText)  # errors quote paths, memories and LLM output: never rich text
        self.setWordWrap(wrap)
        if selectable:
            self.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.colour: Colour | None = None
        self._own = False  # the text colour is set here, not inherited
        self.set_colour(colour)

    def set_colour(self, colour: Colour | None) -> None:
        self.colour = colour
        self._follow()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:
            self._follow()

    def _follow(self) -> None:
        want = None if self.colour is None else self.colour()
        if want is None:
            if self._own:
                self._own = False
                self.setPalette(QPalette())  # the parent's text colour again
        elif not self._own or self.palette().color(QPalette.WindowText) != want:
            self._own = True
            pal = QPalette()  # resolves only the role set here: the rest comes from the parent
            pal.setColor(QPalette.WindowText, want)
            self.setPalette(pal)  # (its PaletteChange finds the colour right: no loop)
