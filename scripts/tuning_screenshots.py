"""Screenshots of judging and tuning in the window: `python scripts/tuning_screenshots.py [OUTDIR]`
(default assets/; QT_QPA_PLATFORM=offscreen or under xvfb-run).

On a private copy of sample_dbs/assistant.db with its hand-judged set
(sample_dbs/assistant.judged.jsonl) kept in it as "sample":
- tuning-fit.png: a fit of the dual-memory defaults, its report and what accepting would change
  (not accepted);
- tuning-readout.png: the window at 1500×950 with the readout under the sliders (α and β moved
  from the defaults), a judged query chosen with its near misses (the first one selected), its
  marks in the results' grade column;
- tuning-grid.png: the judged panel's picture, nDCG@10 over α × β at the current γ, with the
  setting in force and the fitted point marked;
- tuning-corrected.png: the query panel after a graded fact of "lina-allergy" was corrected: the
  memory that replaced it shows its grade as ↳★★ (sample only).
`--size WxH` adds window shots at other sizes (tuning-readout-WxH.png). `--locomo DB JSONL`
does the same on a LoCoMo store made by bench/locomo.py (files tuning-locomo-*.png), where the
fit holds each conversation out whole.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shoot(db: str, judged: str, set_name: str, out: str, prefix: str, sizes, query_id: str | None,
          setting: dict, corrected: tuple[str, str, str] | None = None) -> None:
    from PySide6.QtCore import Qt

    import memviz.store as ms
    from memviz.app.main import open_and_wait, scratch_window
    from memviz.app.main import process_until as wait
    from memviz.edits import History
    from memviz.judge.stored import read_file_for, save_set

    copy = os.path.join(tempfile.mkdtemp(), os.path.basename(db))
    shutil.copyfile(db, copy)
    store = ms.open(copy)
    History(store).perform(save_set(read_file_for(store, judged, name=set_name)))
    store.close()

    win = scratch_window(sizes[0], umap=True)
    if not open_and_wait(win, copy, 120):
        raise SystemExit(f"could not open {db}")
    if win.map.auto_umap:
        wait(lambda: win.workers.running("umap"), 5)
        wait(lambda: win.map.method.startswith("UMAP"), 120)
    t, judge = win.judge.tuning, win.judge

    def settled(timeout=120):
        wait(lambda: t.readout is not None and t.readout.params == win.state.params
             and not any(win.workers.running(j) for j in ("judge prepare", "judge readout", "judge grid", "query",
                                                           "score")), timeout)
        wait(lambda: False, 0.6)

    win.docks["judged"].show()
    win.docks["judged"].raise_()
    settled()
    # the fit of the preset's defaults: its report and what accepting would change (not accepted)
    dlg = judge.fit()
    if dlg is None:
        raise SystemExit(f"no fit: {win.statusBar().currentMessage()}")
    wait(lambda: dlg.report is not None, 600)
    wait(lambda: dlg.changes.topLevelItemCount() == 2, 300)
    top = dlg.changes.topLevelItem(0)
    for i in range(min(3, top.childCount())):
        top.child(i).setExpanded(True)
    dlg.resize(900, 640)
    wait(lambda: False, 0.5)
    dlg.grab().save(os.path.join(out, f"{prefix}-fit.png"))
    print(f"{prefix}: " + " | ".join(dlg.report.summary()))
    dlg.close()

    # a judged query with its near misses, and a setting moved from the defaults
    if query_id:
        judge.choose_query(query_id)
        wait(lambda: t.readout is not None and t.readout.query_id == query_id, 60)
    win.state.set_params(win.state.params.replace(**setting))
    settled()
    if t.readout.near:   # its first near miss, selected: the detail shows it
        judge.select_memory(t.readout.near[0].memory_id)
    for k, (w, h) in enumerate(sizes):
        win.resize(w, h)
        win.reset_docks()
        win.docks["judged"].raise_()
        wait(lambda: False, 0.8)
        settled()
        win.grab().save(os.path.join(out, f"{prefix}-readout.png" if k == 0 else f"{prefix}-readout-{w}x{h}.png"))
    win.resize(*sizes[0])
    win.reset_docks()
    win.docks["judged"].raise_()

    # the picture, in a judged panel given room (the bottom row taller, the table's column wider)
    d = win.docks
    win.resizeDocks([d["timeline"], d["map"], d["table"]], [150, 260, 500], Qt.Vertical)
    win.resizeDocks([d["table"], d["detail"]], [640, 260], Qt.Horizontal)
    win.judged.tabs.setCurrentIndex(1)
    wait(lambda: t.grid is not None and win.judged.picture.grid is t.grid and not win.workers.running("judge grid"), 300)
    wait(lambda: False, 0.8)
    d["judged"].grab().save(os.path.join(out, f"{prefix}-grid.png"))

    if corrected:   # (judged query, its graded memory, the corrected text): the grade on the replacement
        from memviz.edits import Correct
        qid, fact, text = corrected
        win.reset_docks()
        judge.choose_query(qid)
        wait(lambda: t.readout is not None and t.readout.query_id == qid, 60)
        settled()
        win.edits.perform(Correct(fact, text))
        wait(lambda: win.undo_stack.count() == 1, 60)
        judge.choose_query(qid)
        settled()
        win.docks["query"].grab().save(os.path.join(out, f"{prefix}-corrected.png"))
    win.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/tuning_screenshots.py")
    ap.add_argument("outdir", nargs="?", default=os.path.join(ROOT, "assets"))
    ap.add_argument("--size", action="append", default=[], help="another window size WxH (repeatable)")
    ap.add_argument("--locomo", nargs=2, metavar=("DB", "JSONL"), help="also a LoCoMo store and its judged set")
    ap.add_argument("--no-sample", dest="sample", action="store_false", help="only the LoCoMo shots")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    sizes = [(1500, 950)] + [tuple(int(v) for v in s.lower().split("x")) for s in args.size]

    from memviz.app.main import make_app
    app = make_app()  # noqa: F841 - the reference keeps the QApplication alive

    if args.sample:
        shoot(os.path.join(ROOT, "sample_dbs", "assistant.db"), os.path.join(ROOT, "sample_dbs", "assistant.judged.jsonl"),
              "sample", args.outdir, "tuning", sizes, "morning-drink", {"alpha": 0.9, "beta": 0.1, "gamma": 0.2},
              ("lina-allergy", "2bd8145952a1a97f1c13f92fc6525f03",
               "Lina is allergic to peanuts and tree nuts; always check restaurant menus for her."))
    if args.locomo:
        shoot(args.locomo[0], args.locomo[1], "locomo", args.outdir, "tuning-locomo", sizes, "conv-26/qa2",
              {"alpha": 0.8, "beta": 0.05, "gamma": 0.15})
    print("saved to", args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
