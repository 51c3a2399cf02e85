"""A window that follows the desktop: View ▸ Theme (System / Light / Dark, remembered), the
desktop's colour scheme changing while memviz runs, and every plot and custom-drawn colour
derived from the palette — the kind colours, score bars, selection and highlight rings at least
3:1 (WCAG contrast, computed here) against the plot's background in both schemes."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel
from test_app_support import build_store

pytestmark = pytest.mark.qt


# ------------------------------------------------------------------ WCAG 2 contrast, computed here
def _channel(v: float) -> float:
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def wcag_luminance(c: QColor) -> float:
    r, g, b = (_channel(x / 255) for x in (c.red(), c.green(), c.blue()))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def drawn(c: QColor, background: QColor) -> QColor:
    """The colour on screen: `c` at its alpha over an opaque background."""
    a = c.alpha() / 255
    return QColor(*(round(a * x + (1 - a) * y) for x, y in zip((c.red(), c.green(), c.blue()),
                                                                (background.red(), background.green(), background.blue()))))


def contrast(c: QColor, background: QColor) -> float:
    hi, lo = sorted((wcag_luminance(drawn(c, background)), wcag_luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_computed_here_is_wcags():
    assert contrast(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert contrast(QColor("#777777"), QColor("white")) == pytest.approx(4.48, abs=0.01)  # WCAG's well-known grey
    assert contrast(QColor(0, 0, 0, 0), QColor("white")) == pytest.approx(1.0)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("theme") / "mem.db"
    build_store(path).close()
    return str(path)


@pytest.fixture(autouse=True)
def system_theme_after(qapp):
    """Every test leaves the application as the platform made it (the palette is the application's)."""
    yield
    from memviz.app import theme
    theme.apply("system", reported=Qt.ColorScheme.Unknown)


def is_dark(pal: QPalette) -> bool:
    return wcag_luminance(pal.color(QPalette.Window)) < wcag_luminance(pal.color(QPalette.WindowText))


def plot_background(panel) -> QColor:
    """The background the plot paints: a pixel of its grabbed view where nothing is drawn."""
    img = panel.plot.grab().toImage()
    return img.pixelColor(panel.plot.width() - 3, 3)


def check_plots(win, dark: bool) -> list[str]:
    """Every plot's background follows the palette, and what carries meaning on it stands out
    from it by 3:1; returns the failures."""
    bad = []
    base = QApplication.palette().color(QPalette.Base)
    assert is_dark(QApplication.palette()) == dark
    for name, panel in (("timeline", win.timeline), ("map", win.map), ("graph", win.graph)):
        bg = plot_background(panel)
        if (bg.red(), bg.green(), bg.blue()) != (base.red(), base.green(), base.blue()):
            bad.append(f"{name}: background {bg.name()}, the palette's base is {base.name()}")
        if (wcag_luminance(bg) < 0.2) != dark:
            bad.append(f"{name}: background {bg.name()} in the {'dark' if dark else 'light'} scheme")
        marks = {"selection ring": [st["pen"].color() for st in panel.overlay.styles]}
        fills = [st["brush"].color() for st in panel.points.styles
                 if st["brush"] is not None and st["brush"].color().alpha() >= 150]
        marks["kind colours"] = fills
        if name == "map":
            marks["query's top-k rings"] = [st["pen"].color() for st in panel.topk.styles]
        if name == "graph":
            marks["lineage rings"] = [st["pen"].color() for st in panel.hot_points.styles]
            marks["lineage's chain"] = [panel.chain_edges.opts["pen"].color()]
        panel.flash_new(panel.x[:2], panel.y[:2])
        marks["new memories' rings"] = [st["pen"].color() for st in panel.fresh.styles]
        for what, colours in marks.items():
            if not colours:
                bad.append(f"{name}: no {what} drawn")
            for c in colours:
                if contrast(c, bg) < 3.0:
                    bad.append(f"{name}: {what} {c.name()} (alpha {c.alpha()}) on {bg.name()}: {contrast(c, bg):.2f}:1")
    return bad


def check_score_bars(win) -> list[str]:
    """The results' bars are painted in the theme's component colours, each 3:1 on the view's base."""
    from memviz.app.panels.query_panel import RESULT_COLUMNS, component_color
    view = win.query.view
    base = view.palette().color(QPalette.Base)
    names = win.query.results.components
    colours = [component_color(n, i) for i, n in enumerate(names)]
    bad = [f"score bar {n} {c.name()} on {base.name()}: {contrast(c, base):.2f}:1"
           for n, c in zip(names, colours) if contrast(c, base) < 3.0]
    img = view.viewport().grab().toImage()
    rect = view.visualRect(win.query.results.index(0, RESULT_COLUMNS.index("why")))
    seen = {img.pixelColor(x, rect.center().y()).name() for x in range(rect.left(), rect.right())}
    missing = [c.name() for c, v in zip(colours, win.query.results.contributions(0)) if v[1] > 0.05
               and c.name() not in seen]
    return bad + ([f"score bar colours {missing} not painted (saw {sorted(seen)})"] if missing else [])


def open_with_query(make_window, store_file, settings="settings.ini"):
    win = make_window(store_file, graph=True, settings=settings)
    win.state.select_ids(["refl0"])  # a lineage in the graph, rings everywhere
    win.query.text.setText("peanut allergy")
    return win


def run_query(qtbot, win):
    with qtbot.waitSignal(win.query.ranked, timeout=20000):
        win.query.run_query()


# ------------------------------------------------------------------ tests
def test_view_theme_switches_every_plot_and_keeps_the_contrast(qtbot, make_window, store_file):
    win = open_with_query(make_window, store_file)
    run_query(qtbot, win)
    names = [a.text().replace("&", "") for a in win.theme.menu.actions()]
    assert names == ["System", "Light", "Dark"]
    assert [a.isChecked() for a in win.theme.menu.actions()] == [True, False, False]
    for choice, dark in (("dark", True), ("light", False), ("dark", True)):
        win.theme.actions[choice].trigger()
        qtbot.waitUntil(lambda: win.timeline.theme.dark == dark, timeout=5000)
        assert QApplication.style().name() == "fusion"  # draws every widget from the palette
        run_query(qtbot, win)
        assert check_plots(win, dark) == [], choice
        assert check_score_bars(win) == [], choice
        assert [a.isChecked() for a in win.theme.menu.actions()] == [c == choice for c in ("system", "light", "dark")]
    # the graph's lineage is drawn in a colour no kind has: near-white on the dark background
    from memviz.app.plots import style
    lineage = QColor(win.graph.theme.lineage)
    assert min(np.hypot(np.hypot(lineage.red() - k.red(), lineage.green() - k.green()), lineage.blue() - k.blue())
               for k in map(QColor, win.graph.theme.kinds.values())) > 80
    assert wcag_luminance(lineage) > 0.6
    win.theme.actions["system"].trigger()
    assert not is_dark(QApplication.palette())  # the offscreen platform's palette is light
    assert style.theme().dark is False
    qtbot.waitUntil(lambda: not win.map.theme.dark, timeout=5000)
    assert check_plots(win, False) == []


def test_the_desktop_turning_dark_and_back_is_followed_while_memviz_runs(qtbot, make_window, store_file):
    win = open_with_query(make_window, store_file)
    run_query(qtbot, win)
    hints = QApplication.styleHints()
    assert win.theme.choice == "system"
    # the desktop reports a dark scheme (Qt 6.5+: colorSchemeChanged) with Qt's palette still light
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    qtbot.waitUntil(lambda: win.graph.theme.dark, timeout=5000)
    run_query(qtbot, win)
    assert check_plots(win, True) == []
    assert check_score_bars(win) == []
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    qtbot.waitUntil(lambda: not win.graph.theme.dark, timeout=5000)
    assert check_plots(win, False) == []
    # a desktop that hands Qt a new palette itself (its own dark colours): the plots take it
    from memviz.app.plots.style import Theme
    desktop = QPalette(QApplication.palette())
    for role, c in ((QPalette.Window, "#1E1F29"), (QPalette.WindowText, "#F8F8F2"), (QPalette.Base, "#282A36"),
                    (QPalette.Text, "#F8F8F2"), (QPalette.Button, "#343746"), (QPalette.ButtonText, "#F8F8F2")):
        desktop.setColor(role, QColor(c))
    QApplication.setPalette(desktop)
    qtbot.waitUntil(lambda: win.timeline.theme == Theme.from_palette(desktop), timeout=5000)
    assert plot_background(win.map).name() == "#282a36"
    assert check_plots(win, True) == []
    # a scheme the desktop's own palette already matches is left as it is (no palette of memviz's)
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert QApplication.palette().color(QPalette.Base).name() == "#282a36"
    # Light / Dark chosen in the menu win over the desktop's reports
    win.theme.actions["light"].trigger()
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert not is_dark(QApplication.palette())
    qtbot.waitUntil(lambda: not win.graph.theme.dark, timeout=5000)  # (Qt posts the palette's change to widgets)
    qtbot.wait(50)
    assert not is_dark(QApplication.palette()) and not win.graph.theme.dark


def test_the_theme_chosen_is_there_after_a_restart(qtbot, make_window, store_file):
    first = make_window(settings="restart.ini")
    first.theme.actions["dark"].trigger()
    first.close()  # the window saves its settings as it closes
    assert is_dark(QApplication.palette())
    from memviz.app import theme
    theme.apply("system")  # as a new process starts: the platform's palette
    assert not is_dark(QApplication.palette())
    again = make_window(store_file, settings="restart.ini")
    assert again.theme.choice == "dark" and again.theme.actions["dark"].isChecked()
    assert is_dark(QApplication.palette())
    assert wcag_luminance(plot_background(again.timeline)) < 0.05
    again.theme.actions["system"].trigger()
    third = make_window(settings="restart.ini")
    assert third.theme.choice == "system" and not is_dark(QApplication.palette())


@pytest.mark.parametrize("base,text", [("#FFFFFF", "#000000"), ("#FDF6E3", "#586E75"), ("#F0F0F0", "#202020"),
                                       ("#262626", "#E6E6E6"), ("#002B36", "#93A1A1"), ("#000000", "#FFFFFF"),
                                       ("#1E1E2E", "#CDD6F4")])
def test_every_meaningful_colour_stands_out_on_any_desktops_background(qapp, base, text):
    """Light, sepia, grey, dark, Solarized dark, black, Catppuccin: the theme derived from each
    palette keeps the kind colours, rings and bars at 3:1, and its text colours at 4.5:1."""
    from memviz.app.plots.style import POINT_ALPHA, Theme
    pal = QPalette()
    for role, c in ((QPalette.Base, base), (QPalette.Window, base), (QPalette.Text, text), (QPalette.WindowText, text)):
        pal.setColor(role, QColor(c))
    t = Theme.from_palette(pal)
    bg = QColor(base)
    assert t.dark == (wcag_luminance(bg) < wcag_luminance(QColor(text)))
    for c in [*t.kinds.values(), *t.palette]:
        fill = QColor(c)
        fill.setAlpha(POINT_ALPHA)
        assert contrast(fill, bg) >= 3.0, (c, base)
    for c in [t.selected, t.query, t.new, t.broken, t.lineage, *t.components.values(), *t.other_components]:
        assert contrast(QColor(c), bg) >= 3.0, (c, base)
    for c in (t.label_text, t.up, t.down, t.pin, t.alarm):
        assert contrast(QColor(c), bg) >= 4.5, (c, base)
    for c in (t.label_text_faint, t.muted):  # text that steps back, still legible
        assert contrast(QColor(c), bg) >= 3.0, (c, base)
    kinds = [QColor(c) for c in t.kinds.values()]
    assert len({c.name() for c in kinds}) == len(kinds)  # still one colour per kind


def test_custom_drawn_cells_follow_the_palette(qtbot, make_window, store_file):
    """The memory table's retired rows, the results' Δ and the prompt view's bar take the theme's colours."""
    from memviz.app.plots import style
    win = open_with_query(make_window, store_file)
    run_query(qtbot, win)
    model = win.table.model
    retired = next(i for i in range(model.rowCount()) if not np.isnan(win.state.data.arrays.valid_until[model.order[i]]))
    for choice in ("dark", "light"):
        win.theme.actions[choice].trigger()
        t = style.theme()
        assert t.dark == (choice == "dark")
        assert model.data(model.index(retired, 0), Qt.ForegroundRole).name() == QColor(t.muted).name()
        assert contrast(QColor(t.muted), QColor(t.paper)) >= 3.0
        info = win.as_of_bar.info
        win.state.set_as_of(win.state.data.arrays.event_time[0] + 3600)
        assert info.palette().color(QPalette.WindowText).name() == QColor(t.alarm).name()
        window = QApplication.palette().color(QPalette.Window)
        qtbot.waitUntil(lambda: info.palette().color(QPalette.Window) == window, timeout=5000)  # (posted to widgets)
        assert contrast(info.palette().color(QPalette.WindowText), info.palette().color(QPalette.Window)) >= 4.5
        img = info.grab().toImage()  # drawn in it (a label in a toolbar draws in another role unless told)
        assert QColor(t.alarm).name() in {img.pixelColor(x, img.height() // 2).name() for x in range(img.width())}
        win.state.set_as_of(None)
        assert info.palette().color(QPalette.WindowText) == QApplication.palette().color(QPalette.WindowText)


def test_the_status_bar_reads_in_both_themes_and_new_rows_never_run_under_a_message(qtbot, make_window, store_file):
    """"writable" / "READ-ONLY" take the theme's colours (a fixed dark red was unreadable in dark);
    "+N new" stays beside a status message instead of being drawn over it."""
    from memviz.app.plots import style
    win = open_with_query(make_window, store_file)
    for choice in ("dark", "light"):
        win.theme.actions[choice].trigger()
        t = style.theme()
        ro = win.status_ro
        assert ro.text() == "writable"
        qtbot.waitUntil(lambda: ro.palette().color(QPalette.WindowText).name() == QColor(t.ok).name(),
                        timeout=5000)  # (the palette change is posted to widgets)
        assert contrast(QColor(t.ok), QApplication.palette().color(QPalette.Window)) >= 4.5
    bar = win.statusBar()
    win._new_ids = ["a", "b"]
    win._show_new()
    bar.showMessage("Corrected 427c3f60: a new memory supersedes it")
    qtbot.waitUntil(lambda: win.new_button.isVisible(), timeout=5000)
    # a permanent widget: the message takes the bar's left part (the counts step aside for it), never its place
    assert bar.currentMessage() and win.new_button.text() == "+2 new" and not win.status_counts.isVisible()
    assert QColor(t.new).name() in win.new_button.styleSheet()
    win.theme.actions["dark"].trigger()  # the scheme changes while "+2 new" is shown: it takes the new one's colour
    qtbot.waitUntil(lambda: QColor(style.theme().new).name() in win.new_button.styleSheet(), timeout=5000)
    assert style.theme().new != t.new


def test_the_windows_plain_labels_take_the_schemes_text_colour(qtbot, make_window, store_file):
    """A label styled with a style sheet kept the text colour of the scheme it was made in (the
    as-of bar's bold "As of" stayed black on the dark toolbar)."""
    win = make_window(store_file)
    for choice in ("dark", "light", "dark"):
        win.theme.actions[choice].trigger()
        text = QApplication.palette().color(QPalette.WindowText)
        qtbot.waitUntil(lambda: win.statusBar().palette().color(QPalette.WindowText) == text, timeout=5000)
        stale = [label.text() for label in win.findChildren(QLabel)
                 if type(label) is QLabel and label.isVisible() and label.text()
                 and label.palette().color(QPalette.WindowText) != text]
        assert stale == [], f"{choice}: labels in another scheme's text colour"


def test_warnings_in_dialogs_and_panels_stand_out_in_either_scheme(qtbot, make_window, tmp_path):
    """Errors were drawn in a fixed dark red (#b00) whatever the scheme: under a dark desktop the
    import dialog's failure and the start page's problem were unreadable. They take the theme's
    alarm colour, 4.5:1 on the window in both schemes, also when the scheme changes after."""
    from memviz.app.plots import style
    win = make_window()
    dlg = win.show_import(str(tmp_path / "nothing-here.jsonl"))
    qtbot.addWidget(dlg)
    dlg.start()  # the source does not exist: said as an error
    win.start_page.set_problem("Could not open x.db: it is damaged")
    for choice in ("dark", "light", "dark"):
        win.theme.actions[choice].trigger()
        window = QApplication.palette().color(QPalette.Window)
        alarm = QColor(style.theme().alarm)
        for label in (dlg.message, win.start_page.problem):
            qtbot.waitUntil(lambda label=label: label.palette().color(QPalette.WindowText).name() == alarm.name(),
                            timeout=5000)
            assert contrast(alarm, window) >= 4.5


# ------------------------------------------------------------------ no fixed colour in a dialog
def fixed_colours(source: str) -> list[tuple[int, str]]:
    """(line, what) of every colour written into `source` rather than asked of the theme: a hex
    colour or a style sheet's colour in a string (docstrings aside), a Qt.GlobalColor, a QColor
    made of constants."""
    import ast
    import re
    hex_or_css = re.compile(r"#[0-9A-Fa-f]{3}(?:[0-9A-Fa-f]{3})?(?:[0-9A-Fa-f]{2})?\b|(?<![\w-])(?:color|background(?:-color)?)\s*:")
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [(node.lineno, m.group()) for m in hex_or_css.finditer(node.value)]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("Qt", "GlobalColor") \
                and node.attr in Qt.GlobalColor.__members__ and node.attr not in ("color0", "color1", "transparent"):
            found.append((node.lineno, f"Qt.{node.attr}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "QColor" and node.args \
                and all(isinstance(a, ast.Constant) for a in node.args):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found, key=lambda f: f[0])  # (in a line: in the order written)


def test_the_fixed_colour_finder_finds_the_ways_dialogs_once_had_them():
    once = '''
def make(caution: str = "#a05a00"):
    """Says #b00 in red (a docstring is not drawn)."""
    label.setStyleSheet("color: #555; font-style: italic;")  # a comment: #8a5a00
    verdict.setStyleSheet(f"color: {tone('up').name()};")
    old.setStyleSheet("QPlainTextEdit { background: palette(window); }")
    item.setForeground(2, Qt.darkRed)
    pen = QColor("red"), QColor(176, 0, 0), QColor(theme().alarm)
    label.set_colour(lambda: QColor(theme().alarm))
'''
    assert [what for _, what in fixed_colours(once)] == [
        "#a05a00", "color:", "#555", "color:", "background:", "Qt.darkRed", "QColor('red')", "QColor(176, 0, 0)"]


def test_no_dialog_draws_in_a_fixed_colour():
    """A colour written into a dialog stays what it was in the scheme it suits: "#b00" was
    unreadable on a dark window, a style sheet keeps even palette(window) of the scheme it was
    made in. A dialog's colours come from its creator (app/dialogs/tinted.py) or its palette's roles."""
    from pathlib import Path

    import memviz.app.dialogs as dialogs
    found = [f"{path.name}:{line}: {what}" for path in sorted(Path(dialogs.__file__).parent.glob("*.py"))
             for line, what in fixed_colours(path.read_text())]
    assert found == [], "colours that do not follow the theme:\n" + "\n".join(found)


def test_every_dialogs_warnings_stand_out_and_follow_the_scheme_while_open(qtbot, make_window, store_file):
    """The reflect dialog (an error, its notes, a duplicate proposal), the LLM settings' test
    result (passed, failed), the database dialogs' problems and a correction's warning take the
    theme's colours, 4.5:1 on the window in either scheme, and keep them when the scheme changes
    with the dialogs open; the reflect card's question and the correction's old text take the
    palette's roles."""
    from memviz.app.dialogs.edit_dialogs import CorrectDialog
    from memviz.app.plots import style
    from memviz.reflect.reflection import Evidence, Proposal, ReflectionRun
    win = make_window(store_file)
    win.theme.actions["light"].trigger()
    tools = win.reflect_tools
    tools.open_reflect()
    reflect = tools.dialog
    ids = win.state.data.arrays.ids[:2].tolist()
    ev = [Evidence(i, f"memory {i}", "episode", 5.0, 0.0) for i in ids]
    run = ReflectionRun("r1", "assistant", "scripted", 0.0, problems=["proposal 3 cited an unknown id"], proposals=[
        Proposal("Is the user vegetarian?", "The user is vegetarian.", ids, ev, duplicate_of=f"{ids[0]} (identical text)")])
    reflect._proposed((None, run))
    card = reflect.cards[0]
    failed, passed = tools.open_settings(), tools.open_settings()
    failed._say(False, "Could not reach http://127.0.0.1:9/v1: connection refused")
    passed._say(True, "Connected: 3 models")
    opendb = win.opener.choose_database()
    opendb._accept()  # no connection string: said as a problem
    copy = win.copier.choose_target()
    copy.file_edit.clear()
    copy._accept()
    row = {"id": ids[0], "kind": "fact", "agent": "assistant", "importance": 5.0, "content": "The user lives in Paris."}
    correct = CorrectDialog(row, win, warning="The corrected memory will be marked as needing an embedding.",
        caution=lambda: QColor(style.theme().caution))
    correct.show()
    for dlg in (failed, passed, opendb, copy, correct):
        qtbot.addWidget(dlg)
    tinted = {"reflect's notes": (reflect.problems, "caution"), "a duplicate proposal": (card.duplicate, "caution"),
              "a failed test": (failed.result_label, "alarm"), "a passed test": (passed.result_label, "ok"),
              "open database": (opendb.error, "alarm"), "copy store": (copy.error, "alarm"),
              "a correction's warning": (correct.warning, "caution")}
    for choice in ("dark", "light", "dark"):
        reflect._say("The LLM server did not answer.\nNothing was written.", error=True)
        win.theme.actions[choice].trigger()
        t = style.theme()
        window = QApplication.palette().color(QPalette.Window)
        shown = {**tinted, "reflect's error": (reflect.message, "alarm")}
        for what, (label, role) in shown.items():
            want = QColor({"caution": t.caution, "alarm": t.alarm, "ok": t.ok}[role])
            assert label.isVisible() and label.text(), what
            qtbot.waitUntil(lambda label=label, want=want: label.palette().color(QPalette.WindowText) == want,
                            timeout=5000)  # (the palette change is posted to widgets)
            assert contrast(want, window) >= 4.5, (choice, what)
            img = label.grab().toImage()  # drawn in it
            assert want.name() in {img.pixelColor(x, y).name() for x in range(img.width()) for y in range(img.height())}, what
        assert reflect.message.font().bold()
        reflect._say("Asking the model …")  # not an error: the palette's text again
        assert reflect.message.palette().color(QPalette.WindowText) == QApplication.palette().color(QPalette.WindowText)
        question = card.findChildren(QLabel)[0]
        assert question.text().startswith("Question:") and question.font().italic()
        assert question.palette().color(QPalette.WindowText) == QApplication.palette().color(QPalette.WindowText)
        img = correct.old_text.viewport().grab().toImage()  # the old text on the window's colour, not the base's
        assert img.pixelColor(img.width() - 3, img.height() - 3) == window
