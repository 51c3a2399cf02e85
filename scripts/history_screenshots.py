"""Screenshots of the prompt view, the window scrubbed into the past and the Diff panel:
`python scripts/history_screenshots.py DB OUTDIR [--at 0.45] [--budget 2500]`.

Opens DB read-only with fresh settings (QT_QPA_PLATFORM=offscreen or under xvfb-run), then
saves `prompt-view.png` (the prompt view under a small budget, so the cut line shows),
`window-as-of.png` (the whole window as of a moment at fraction --at of the store's history,
a memory corrected after it selected) and `diff-panel.png` (that moment compared with now, a
correction chosen).
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/history_screenshots.py")
    ap.add_argument("db")
    ap.add_argument("outdir")
    ap.add_argument("--at", type=float, default=0.45, help="the moment, as a fraction of the store's history")
    ap.add_argument("--budget", type=int, default=2500)
    ap.add_argument("--query", default="What does Elena do on weekends?")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)

    from memviz.app.main import make_app, open_and_wait, process_until, scratch_window
    app = make_app()  # noqa: F841 - the reference keeps the QApplication alive

    win = scratch_window()
    if not open_and_wait(win, args.db, 120, read_only=True):
        print("could not open", args.db, file=sys.stderr)
        return 2
    if not process_until(lambda: win.graph.graph is not None and win.prompt.exact_counts(), 600):
        print("the graph or the exact token counts did not come in 10 minutes", file=sys.stderr)
        return 2

    # the prompt view, under a budget small enough to show the cut; it assembles only while in
    # view, so its tab comes to the front before it floats, and the shot waits for its plan and text
    prompt, p = win.docks["prompt"], win.prompt
    prompt.raise_()
    prompt.setFloating(True)
    prompt.resize(1000, 720)
    p.budget.setValue(args.budget)
    if not process_until(lambda: p.plan is not None and p.plan.budget == args.budget and p.exact_counts()
                         and p.text.toPlainText() == p.assembled_text() != "", 120):
        print("the prompt view did not assemble its plan", file=sys.stderr)
        return 2
    p.show_cut()
    p.view.selectRow(p.model.n_in + 1)  # the first memory left out: its reason
    process_until(lambda: False, 0.4)
    prompt.grab().save(os.path.join(args.outdir, "prompt-view.png"))
    prompt.setFloating(False)
    win.reset_docks()

    # a query, so the window's past shows its ranking as of then too
    ranked = []
    win.query.ranked.connect(lambda r, sec: ranked.append(r))
    win.query.text.setText(args.query)
    win.query.run_query()
    process_until(lambda: ranked, 60)

    # the window in the past: a memory that was corrected after the moment is selected
    lo, hi = win.as_of_bar.span
    T = lo + (hi - lo) * args.at
    n_ranked = len(ranked)
    win.as_of_bar.go_to(T)
    process_until(lambda: len(ranked) > n_ranked, 30)  # the query re-ranked as of T
    win.diff.from_the_scrubber()
    got = []
    win.diff.compared.connect(lambda d, s: got.append(d))
    win.diff.compare()
    process_until(lambda: got, 60)
    corrected = [c for c in got[0].changes if c.kind == "corrected"] if got else []
    if corrected:
        win.state.select_ids([corrected[0].ids[-1]])  # the new version: the detail shows the one then
    win.docks["query"].raise_()
    win.docks["table"].raise_()
    process_until(lambda: False, 0.8)
    win.grab().save(os.path.join(args.outdir, "window-as-of.png"))

    # the Diff panel, on its own, the correction chosen
    dock = win.docks["diff"]
    dock.setFloating(True)
    dock.resize(1150, 620)
    dock.raise_()
    for i in range(win.diff.tree.topLevelItemCount()):
        top = win.diff.tree.topLevelItem(i)
        if top.text(0).startswith("corrected") and top.childCount():
            win.diff.tree.setCurrentItem(top.child(0))
    process_until(lambda: False, 0.6)
    dock.grab().save(os.path.join(args.outdir, "diff-panel.png"))
    print("saved to", args.outdir, "| as of", T, "|", got[0].counts() if got else "no diff")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
