"""Screenshots of the edit UI: `xvfb-run -a python scripts/edit_screenshots.py OUTDIR`.

On a private copy of sample_dbs/assistant.db: the context menu, the correct dialog, a conflict
(the agent changes a row through its own connection) and the retired dock after a correction
and a soft delete. Saves edit-menu.png, edit-correct.png, edit-conflict.png and retired.png,
grabbed from the screen (not the widget) so popups and dialogs are in them.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

ALLERGY = "2bd8145952a1a97f1c13f92fc6525f03"   # "Lina is allergic to peanuts; ..." (protected fact)
JAPANESE = "949f2bf8a5a215fa125f3ca96add5fd3"  # "Tom Novak loves Japanese food." (preference)
CLAIM = "5db88360a544cc67e7d27c3963a1b4e4"     # "Elena must file the childcare expense claim ..."


def main(argv=None) -> int:
    out = (argv or sys.argv[1:] or ["."])[0]
    os.makedirs(out, exist_ok=True)
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QGuiApplication

    import memviz.store as ms
    from memviz.app.main import make_app, open_and_wait, process_until, scratch_window
    app = make_app()  # noqa: F841 - the reference keeps the QApplication alive

    wait = process_until

    def settle(seconds=1.0):
        wait(lambda: not win.edits.corrections.embedding and not win.workers.running("reload"))
        wait(lambda: False, seconds)

    def shot(name):
        wait(lambda: False, 0.5)
        pm = QGuiApplication.primaryScreen().grabWindow(0).copy(win.frameGeometry())
        pm.save(os.path.join(out, name))
        print("saved", os.path.join(out, name))

    db = os.path.join(tempfile.mkdtemp(), "assistant.db")
    shutil.copyfile(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_dbs", "assistant.db"), db)
    win = scratch_window()
    win.move(0, 0)
    if not open_and_wait(win, db, 60):
        return 2
    wait(lambda: win.graph.graph is not None, 60)
    ctl = win.edits
    win.state.select_ids([ALLERGY])
    settle()
    menu = win.context_menu_for([ALLERGY])
    menu.popup(win.map.mapToGlobal(QPoint(260, 120)))
    shot("edit-menu.png")
    menu.close()

    ctl.run("correct", [ALLERGY])
    ctl.dialog.new_text.setPlainText(
        "Lina is allergic to peanuts and tree nuts; always check restaurant menus for her.")
    shot("edit-correct.png")
    ctl.dialog.accept()
    settle()

    win.state.select_ids([JAPANESE])
    settle(0.5)
    with ms.open(db) as agent:
        agent.update_fields(JAPANESE, {"importance": 9.0, "tags": ["health"]}, action="agent")
    ctl.run("confirm", [JAPANESE])  # before the watcher's next tick reloads the row
    shot("edit-conflict.png")
    ctl.dialog.mine_button.click()
    settle()

    ctl.run("delete", [CLAIM])
    settle()
    win.docks["retired"].raise_()
    win.state.select_ids([ALLERGY])
    win.detail.tabs.setCurrentIndex(2)
    settle(0.5)
    shot("retired.png")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
