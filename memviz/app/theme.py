"""View ▸ Theme: System, Light or Dark, remembered in the settings.

The choice sets the application's palette; everything drawn follows the palette (widgets by Qt,
the plots and custom-drawn cells through `plots.style.theme()`, redrawn on QEvent.PaletteChange).
Light and Dark set memviz's own palette with the Fusion style (which draws every widget from
the palette, the same on every platform) and ask the platform for that colour scheme (window
frames, native dialogs, where it offers it). System gives the platform's style and palette back
and follows the desktop while memviz runs: a new palette arrives by itself; a colour scheme the
desktop reports (QStyleHints.colorSchemeChanged) that its palette does not match — a dark
desktop that hands Qt a light palette — gets memviz's palette of that scheme.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QColor, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QWidget

from memviz.app.plots.style import luminance

CHOICES = {"system": "&System", "light": "&Light", "dark": "&Dark"}
SETTING = "view/theme"
_SCHEMES = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}

# one application, one choice (whichever window made it); platform_style: the application's style
# before memviz forced its palette (None: not forced)
_state: dict = {"choice": "system", "watching": False, "platform_style": None}


def palette_of(scheme: str) -> QPalette:
    """memviz's light or dark palette (for the Fusion style)."""
    dark = scheme == "dark"
    c = {  # role: (light, dark)
        QPalette.Window: ("#EFEFEF", "#323232"), QPalette.WindowText: ("#1A1A1A", "#E6E6E6"),
        QPalette.Base: ("#FFFFFF", "#262626"), QPalette.AlternateBase: ("#F5F5F5", "#2D2D2D"),
        QPalette.Text: ("#1A1A1A", "#E6E6E6"), QPalette.PlaceholderText: ("#767676", "#8F8F8F"),
        QPalette.Button: ("#E8E8E8", "#3A3A3A"), QPalette.ButtonText: ("#1A1A1A", "#E6E6E6"),
        QPalette.BrightText: ("#FFFFFF", "#FFFFFF"), QPalette.ToolTipBase: ("#FFFFE1", "#3A3A3A"),
        QPalette.ToolTipText: ("#1A1A1A", "#E6E6E6"), QPalette.Highlight: ("#3070C0", "#2F6FB8"),
        QPalette.HighlightedText: ("#FFFFFF", "#FFFFFF"), QPalette.Link: ("#1F5FBF", "#7AAEF5"),
        QPalette.LinkVisited: ("#6B3FA0", "#B89AF0"), QPalette.Light: ("#FFFFFF", "#4A4A4A"),
        QPalette.Midlight: ("#E3E3E3", "#3E3E3E"), QPalette.Mid: ("#A0A0A0", "#262626"),
        QPalette.Dark: ("#9F9F9F", "#1E1E1E"), QPalette.Shadow: ("#767676", "#141414"),
    }
    pal = QPalette()
    for role, pair in c.items():
        pal.setColor(role, QColor(pair[dark]))
    for role, pair in {QPalette.WindowText: ("#8C8C8C", "#7A7A7A"), QPalette.Text: ("#8C8C8C", "#7A7A7A"),
                       QPalette.ButtonText: ("#8C8C8C", "#7A7A7A"), QPalette.Highlight: ("#B8B8B8", "#505050")}.items():
        pal.setColor(QPalette.Disabled, role, QColor(pair[dark]))
    return pal


def is_dark(pal: QPalette) -> bool:
    return luminance(pal.color(QPalette.Window)) < luminance(pal.color(QPalette.WindowText))


def apply(choice: str, reported: Qt.ColorScheme | None = None) -> None:
    """Give the application the palette of `choice` ("system", "light" or "dark"). With
    "system", `reported` is the scheme the desktop just reported (default: what it says now)."""
    app = QApplication.instance()
    _state["choice"] = choice
    if not _state["watching"]:
        app.styleHints().colorSchemeChanged.connect(_desktop_changed)
        _state["watching"] = True
    if choice in _SCHEMES:
        _force(app, choice)
        app.styleHints().setColorScheme(_SCHEMES[choice])
        return
    scheme = app.styleHints().colorScheme() if reported is None else reported
    if _state["platform_style"] is not None:
        _release(app)
    for name, s in _SCHEMES.items():
        if scheme == s and is_dark(app.palette()) != (name == "dark"):
            _force(app, name)  # the desktop says dark (light) but gave Qt a light (dark) palette


def _desktop_changed(scheme: Qt.ColorScheme) -> None:
    if _state["choice"] == "system":
        apply("system", reported=scheme)


def _force(app: QApplication, scheme: str) -> None:
    if _state["platform_style"] is None:
        _state["platform_style"] = app.style().name()
    if app.style().name() != "fusion":
        app.setStyle("Fusion")
    app.setPalette(palette_of(scheme))


def _release(app: QApplication) -> None:
    """The platform's style, palette and colour scheme again."""
    style, _state["platform_style"] = _state["platform_style"], None
    if app.style().name() != style:
        app.setStyle(style)
    app.setPalette(QPalette())
    app.styleHints().unsetColorScheme()  # last: the desktop may report its scheme at once (apply runs again)


class ThemeChooser(QObject):
    """The View ▸ Theme menu: one checkable action per choice; the choice is applied at once,
    kept in `settings` and applied again from there when the window starts.
    changed(choice): a new choice was applied."""

    changed = Signal(str)

    def __init__(self, settings: QSettings, parent: QWidget) -> None:
        super().__init__(parent)
        self.settings = settings
        self.menu = QMenu("&Theme", parent)
        self.menu.setObjectName("theme_menu")
        group = QActionGroup(self)
        group.setExclusive(True)
        self.actions: dict[str, QAction] = {}
        for key, text in CHOICES.items():
            act = QAction(text, self, checkable=True)
            act.setData(key)
            act.setStatusTip({"system": "Follow the desktop's light or dark colours, also when they change",
                              "light": "Light colours, whatever the desktop's",
                              "dark": "Dark colours, whatever the desktop's"}[key])
            group.addAction(act)
            self.menu.addAction(act)
            self.actions[key] = act
        group.triggered.connect(lambda act: self.choose(act.data()))
        saved = str(settings.value(SETTING, "system"))
        self.choose(saved if saved in CHOICES else "system", save=False)

    @property
    def choice(self) -> str:
        return next(k for k, a in self.actions.items() if a.isChecked())

    def choose(self, choice: str, save: bool = True) -> None:
        self.actions[choice].setChecked(True)
        apply(choice)
        if save:
            self.settings.setValue(SETTING, choice)
        self.changed.emit(choice)
