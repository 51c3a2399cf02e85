"""Help ▸ Keyboard shortcuts, Help ▸ User guide and Help ▸ About.

The shortcuts are whatever the window's QActions carry (the window collects them with
`shortcut_rows`), so the list cannot drift from the keys that work. The guide is the manual
(memviz.manual: the pages installed with memviz, in the site's order), shown page by page as
Markdown: links between pages are followed, a link to a heading scrolls to it, the screenshots
are shown where the source tree has them. About shows memviz --version's report."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import (
    QAction,
    QDesktopServices,
    QFontDatabase,
    QGuiApplication,
    QImageReader,
    QKeySequence,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from memviz import about, manual

IMAGE_WIDTH = 820        # px: a screenshot at most this wide in the guide (and never wider than the view)
CELL_IMAGE_WIDTH = 260   # px: a screenshot in a table cell (window.md's grid of sizes)
_FILE = Qt.UserRole + 1  # a page list item's file


def shortcut_rows(menus: list[QMenu], extra: list[QAction] = ()) -> list[tuple[str, str, str]]:
    """(where, what, keys) for every action with a shortcut in these menus (and their submenus)
    and in `extra`, in menu order; an action found twice is listed once."""
    rows, seen = [], set()

    def add(where: str, act: QAction) -> None:
        # once each: an action given a key and the platform's standard one may hold it twice
        keys = list(dict.fromkeys(k.toString(QKeySequence.NativeText) for k in act.shortcuts() if not k.isEmpty()))
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


# ------------------------------------------------------------------ the user guide
def slug(heading: str) -> str:
    """A heading's anchor as the site makes it (Python-Markdown's toc): "In your desktop's menu"
    -> "in-your-desktops-menu"."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)(\{[^}\n]*\})?")
_ATTRS = re.compile(r"(\]\([^)\s]*\))\{[^}\n]*\}")  # attr_list after a link: { width=… }
_BLOCK = re.compile(r'^(!!!|\?\?\?\+?|===) *(\w*) *(?:"([^"]*)")?\s*$')  # admonition, details, tab


def guide_markdown(text: str, assets: Path | None) -> str:
    """A page of the manual as Qt's Markdown reader takes it: the site's extensions (admonitions,
    tabs, attribute lists) as plain Markdown, pictures as files where `assets` has them (else
    their caption), the command reference's marker as a pointer to `--help`."""
    text = text.replace(manual.CLI_MARKER, "Every command's options: `memviz --help` and `memviz COMMAND --help` "
                                           "(the manual's site lists them all).")
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        m = _BLOCK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        body, i = [], i + 1
        while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
            body.append(lines[i][4:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        title = m.group(3) or m.group(2).capitalize()
        if m.group(1) == "===":  # a tab: its title, then its content
            out += [f"**{title}**", "", *body, ""]
        else:                    # a note: a quote with its title
            out += [f"> **{title}**", ">", *(f"> {b}" if b else ">" for b in body), ""]
    text = _ATTRS.sub(r"\1", "\n".join(out))

    def picture(m: re.Match) -> str:
        alt, target = m.group(1), m.group(2)
        name = target.removeprefix("assets/")
        if target.startswith("assets/") and assets is not None and (assets / name).is_file():
            return f"![{alt}]({QUrl.fromLocalFile(str(assets / name)).toString()})"
        return f"*({alt})*" if alt else ""
    return _IMAGE.sub(picture, text)


class GuideDialog(QDialog):
    """The manual, page by page: the page list (memviz.manual.NAV) beside the page."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("memviz user guide")
        self.setObjectName("guide_dialog")
        self.pages = [p for p in manual.pages() if p.path is not None]
        self.assets = manual.assets_dir()
        self.page: str | None = None   # the file shown
        self.history: list[str] = []   # pages shown before (Back)
        self._sizes: dict = {}         # a picture's size, by its URL
        self.anchors: set[str] = set()  # the headings of the page shown, by anchor
        self.contents = QTreeWidget(headerHidden=True)
        sections: dict[str, QTreeWidgetItem] = {}
        for p in self.pages:
            if p.section and p.section not in sections:
                sections[p.section] = QTreeWidgetItem(self.contents, [p.section])
                sections[p.section].setFlags(Qt.ItemIsEnabled)
            item = QTreeWidgetItem(sections[p.section] if p.section else self.contents, [p.title])
            item.setData(0, _FILE, p.file)
        self.contents.expandAll()
        self.contents.itemActivated.connect(self._chosen)
        self.contents.itemClicked.connect(self._chosen)
        self.browser = QTextBrowser(openLinks=False)
        self.browser.anchorClicked.connect(self.follow)
        self.note = QLabel(textFormat=Qt.PlainText)  # a link the guide cannot follow says why here
        self.back = QPushButton("Back")
        self.back.setShortcut(QKeySequence.Back)
        self.back.clicked.connect(self.go_back)
        split = QSplitter()
        split.addWidget(self.contents)
        split.addWidget(self.browser)
        split.setStretchFactor(1, 1)
        split.setSizes([230, 770])
        box = QDialogButtonBox(QDialogButtonBox.Close)
        box.addButton(self.back, QDialogButtonBox.ActionRole)
        box.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(split, 1)
        lay.addWidget(self.note)
        lay.addWidget(box)
        self.resize(1050, 760)
        if self.pages:
            self.show_page(self.pages[0].file)
        else:
            self.browser.setPlainText("The manual's pages are not installed with this copy of memviz "
                                      f"(expected in {manual.HERE}).")
        self.back.setEnabled(False)

    def titles(self) -> list[str]:
        """The page list's titles, in order."""
        return [p.title for p in self.pages]

    def show_page(self, file: str, anchor: str = "", remember: bool = True) -> bool:
        """Show a page of the manual (at a heading's anchor); False if it is not here."""
        page = next((p for p in self.pages if p.file == file), None)
        if page is None:
            return False
        if file != self.page:
            if remember and self.page is not None:
                self.history.append(self.page)
            self.browser.setMarkdown(guide_markdown(page.path.read_text(encoding="utf-8"), self.assets))
            self._name_headings()
            self._fit_pictures()
            self.page = file
            self.setWindowTitle(f"memviz user guide — {page.title}")
            for item in self.contents.findItems(page.title, Qt.MatchExactly | Qt.MatchRecursive):
                if item.data(0, _FILE) == file:
                    self.contents.setCurrentItem(item)
        self.back.setEnabled(bool(self.history))
        self.note.setText("")
        if not anchor or not self.scroll_to(anchor):
            self.browser.verticalScrollBar().setValue(0)
        return True

    def scroll_to(self, anchor: str) -> bool:
        """Scroll the page to the heading whose anchor (slug) this is."""
        if anchor not in self.anchors:
            return False
        self.browser.scrollToAnchor(anchor)
        return True

    def _name_headings(self) -> None:
        """Each heading an anchor named as the site names it, for links to `page.md#heading`."""
        doc = self.browser.document()
        self.anchors = set()
        cursor = QTextCursor(doc)
        block = doc.begin()
        while block.isValid():
            if block.blockFormat().headingLevel():
                name = slug(block.text())
                self.anchors.add(name)
                fmt = QTextCharFormat()
                fmt.setAnchor(True)
                fmt.setAnchorNames([name])
                cursor.setPosition(block.position())
                cursor.setPosition(block.position() + block.length() - 1, QTextCursor.KeepAnchor)
                cursor.mergeCharFormat(fmt)
            block = block.next()

    def follow(self, url: QUrl) -> None:
        """A link clicked in a page: another page (and heading), a heading of this page, or the web."""
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
            return
        target = url.path().rsplit("/", 1)[-1]
        if not target:
            self.scroll_to(url.fragment())
        elif not self.show_page(target, url.fragment()):
            self.note.setText(f"{target} is not part of the manual installed here; it is in memviz's source "
                              "repository and on the manual's site.")

    def go_back(self) -> None:
        if self.history:
            self.show_page(self.history.pop(), remember=False)

    def _chosen(self, item: QTreeWidgetItem) -> None:
        if item.data(0, _FILE):
            self.show_page(item.data(0, _FILE))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_pictures()

    def _fit_pictures(self) -> None:
        """Pictures at most IMAGE_WIDTH wide and as wide as the view (CELL_IMAGE_WIDTH in a table),
        their aspect kept."""
        widest = max(240, min(IMAGE_WIDTH, self.browser.viewport().width() - 2 * int(self.browser.document().documentMargin()) - 8))
        doc = self.browser.document()
        found = []  # (position, length, image format): changed after the walk, which a change would upset
        block = doc.begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                frag = it.fragment()
                if frag.charFormat().isImageFormat():
                    found.append((frag.position(), frag.length(), frag.charFormat().toImageFormat()))
                it += 1
            block = block.next()
        cursor = QTextCursor(doc)
        for position, length, image in found:
            if image.name() not in self._sizes:
                self._sizes[image.name()] = QImageReader(QUrl(image.name()).toLocalFile()).size()
            size = self._sizes[image.name()]
            if not size.isValid() or size.width() <= 0:
                continue
            cursor.setPosition(position)
            width = min(size.width(), CELL_IMAGE_WIDTH if cursor.currentTable() is not None else widest)
            image.setWidth(width)
            image.setHeight(size.height() * width / size.width())
            cursor.setPosition(position + length, QTextCursor.KeepAnchor)
            cursor.setCharFormat(image)


# ------------------------------------------------------------------ about
class AboutDialog(QDialog):
    """What memviz this is and what it runs on: memviz.about's report (`memviz --version`)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About memviz")
        self.setObjectName("about_dialog")
        title = QLabel("memviz — inspect, query and edit the long-term memory of LLM agents", textFormat=Qt.PlainText)
        font = title.font()
        font.setBold(True)
        title.setFont(font)
        self.report = QPlainTextEdit(about.report(), readOnly=True)
        self.report.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.report.setLineWrapMode(QPlainTextEdit.NoWrap)
        hint = QLabel("The same report: memviz --version (with a PostgreSQL connection string, the server's "
                      "versions too). Copy it into a bug report.", textFormat=Qt.PlainText, wordWrap=True)
        box = QDialogButtonBox(QDialogButtonBox.Close)
        copy = box.addButton("Copy", QDialogButtonBox.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.report.toPlainText()))
        box.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(title)
        lay.addWidget(self.report, 1)
        lay.addWidget(hint)
        lay.addWidget(box)
        self.resize(720, 300)
