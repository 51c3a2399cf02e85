"""Help ▸ Keyboard shortcuts and Help ▸ User guide.

The shortcuts are whatever the window's QActions carry (the window collects them with
`shortcut_rows`), so the list cannot drift from the keys that work. The guide is the README
(the checkout's file beside the package, else the installed package's long description),
shown as Markdown with its screenshots."""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHeaderView, QMenu, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout


def shortcut_rows(menus: list[QMenu], extra: list[QAction] = ()) -> list[tuple[str, str, str]]:
    """(where, what, keys) for every action with a shortcut in these menus (and their submenus)
    and in `extra`, in menu order; an action found twice is listed once."""
    rows, seen = [], set()

    def add(where: str, act: QAction) -> None:
        keys = [k.toString(QKeySequence.NativeText) for k in act.shortcuts() if not k.isEmpty()]
        if keys and id(act) not in seen:
            seen.add(id(act))
            rows.append((where, act.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…. "),
                         ", ".join(keys)))

    def walk(menu: QMenu, where: str) -> None:
        for act in menu.actions():
            if act.menu() is not None:
                walk(act.menu(), f"{where} ▸ {act.menu().title().replace('&', '')}")
            elif not act.isSeparator():
                add(where, act)
    for m in menus:
        walk(m, m.title().replace("&", ""))
    for act in extra:
        add("", act)
    return rows


class ShortcutsDialog(QDialog):
    def __init__(self, rows: list[tuple[str, str, str]], parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("shortcuts_dialog")
        self.table = QTreeWidget(headerLabels=["menu", "action", "keys"], rootIsDecorated=False)
        for row in rows:
            self.table.addTopLevelItem(QTreeWidgetItem(list(row)))
        self.table.header().setSectionResizeMode(QHeaderView.ResizeToContents)
        box = QDialogButtonBox(QDialogButtonBox.Close)
        box.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.table, 1)
        lay.addWidget(box)
        self.resize(520, 520)


def guide_markdown() -> tuple[str, str | None]:
    """(markdown, folder its images are relative to): the README of this checkout, else the
    installed package's description."""
    readme = Path(__file__).resolve().parents[3] / "README.md"
    if readme.is_file():
        return readme.read_text(encoding="utf-8"), str(readme.parent)
    try:
        return metadata.metadata("memviz").get_payload() or "", None
    except metadata.PackageNotFoundError:
        return "The user guide (README.md) is not installed with this copy of memviz.", None


class GuideDialog(QDialog):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("memviz user guide")
        self.setObjectName("guide_dialog")
        text, folder = guide_markdown()
        self.browser = QTextBrowser(openExternalLinks=True)
        if folder:
            self.browser.setSearchPaths([folder])
        self.browser.setMarkdown(text)
        box = QDialogButtonBox(QDialogButtonBox.Close)
        box.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.browser, 1)
        lay.addWidget(box)
        self.resize(900, 700)
