"""The example plugin's store in the window: `python scripts/plugin_screenshot.py [OUTDIR]`
(default assets/; writes plugin-toy.png). tests/plugins/memviz-toy is built into a temporary
folder put on this process's path (pip, offline, as tests/test_plugins.py does: nothing is
installed into the environment), a toy JSON store of a dozen records is opened, ranked with
the plugin's toy-recency preset, and one record is corrected, which the toy system writes back
to its file. Runs offscreen (the window is grabbed, not the screen)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["The user likes green tea in the morning.", "The user lives in Lisbon.", "The user is learning to play the cello.",
         "The user's sister Ana visits in April.", "The user prefers window seats on trains.", "The user is allergic to cats.",
         "The user runs 5 km every Sunday.", "The user's favourite book is Blindness by Saramago.",
         "The user works as a nurse on night shifts.", "The user drinks green tea without sugar.",
         "The user wants to visit Kyoto in autumn.", "The user bought a second-hand cello in March."]


def install_toy(work: str) -> str:
    src = os.path.join(work, "memviz-toy")
    shutil.copytree(os.path.join(ROOT, "tests", "plugins", "memviz-toy"), src)
    target = os.path.join(work, "site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", target, src], check=True)
    return target


def main(argv=None) -> int:
    out = (argv or sys.argv[1:] or [os.path.join(ROOT, "assets")])[0]
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = tempfile.mkdtemp(prefix="memviz-plugin-shot-")
    os.environ["MEMVIZ_CACHE_DIR"] = os.path.join(work, "cache")
    sys.path.insert(0, install_toy(work))
    store = os.path.join(work, "notes.json")
    with open(store, "w", encoding="utf-8") as f:
        json.dump({"toymem": 1, "records": [{"id": f"r{i + 1}", "text": text, "at": f"2025-03-{2 * i + 1:02d}T09:00:00Z"}
                                            for i, text in enumerate(TEXTS)]}, f, indent=2)

    from PySide6.QtCore import QSettings

    from memviz.app.main import load_plugins, make_app, process_until
    app = make_app()  # noqa: F841 - the reference keeps the QApplication alive
    from memviz.app.window import MainWindow  # after the QApplication exists

    problems = load_plugins()
    win = MainWindow(QSettings(os.path.join(work, "shot.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    win.resize(1400, 860)
    win.show()
    win.note_plugins(problems)
    opened = []
    win.opened.connect(opened.append)
    win.open_path(store)
    if not process_until(lambda: opened, 60):
        return 2
    q = win.query
    q.preset.setCurrentText("toy-recency")
    q.text.setText("green tea")
    q.run_query()
    process_until(lambda: q.shown_params == q.params() and not win.workers.running("query")
                  and not win.workers.running("score"), 30)
    win.state.select_ids(["r2"])
    correct = next(a for a in win.context_menu_for(["r2"]).actions() if a.objectName() == "edit_correct")
    correct.trigger()
    win.edits.dialog.new_text.setPlainText("The user lives in Porto.")
    win.edits.dialog.accept()
    process_until(lambda: not win.edits.corrections.embedding and not win.workers.running("reload")
                  and not win.workers.running("refresh"), 30)
    process_until(lambda: False, 0.8)
    with open(store, encoding="utf-8") as f:
        assert json.load(f)["records"][1]["text"] == "The user lives in Porto."  # written back by the toy system
    path = os.path.join(out, "plugin-toy.png")
    win.grab().save(path)
    print("saved", path)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
