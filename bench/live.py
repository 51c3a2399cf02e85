"""The window beside a busy agent (issue 21): a writer process commits at a steady rate while the
real window (offscreen) follows.

    PYTHONPATH=. python bench/live.py [--sizes 10000,100000] [--rates 1,20,100] [--seconds 30] [--umap]

Per case (store size × write rate) prints: commit-to-screen latency of new memories (median,
p95: from the writer's commit to the end of the window's rows_changed, i.e. every panel has
updated what it draws), the window process's CPU-seconds per second of writing, event-loop
stalls over 50 and 100 ms (a 10 ms timer's lateness), delta refreshes vs full re-reads, RSS at
start, at end and for the same store opened afresh in a new process, threads and open files at
start and end. The writer is the agent of tests/agent_writer.py's shape: one memory per
transaction and, every other write, a recall (access count and time) of an older memory.
`--umap` starts a UMAP just before the writes and reports when it finished.

Stores come from bench/app.py's generator, kept under $TMPDIR/memviz-bench/ (a fresh copy per
case). The machine may be shared: the figures are as measured.

Measured 2026-11-25 14:31-14:45 (issue 21, branch live3: poll on the live lane, refreshes at most
every 0.75 s, new points placed in batches every 2 s on their own lane, counts shifted, buffers
grown by half off the GUI thread, query merges), back to back with the code before it (81e010c),
30 s per case, on the shared two-core machine at load average 8-16 (other sessions' jobs):

     memories  w/s writes  lat med  lat p95 CPU-s/s >50ms >100ms  longest delta full RSS start    end  fresh
  before 100,000   20    600    371ms    777ms    0.17   107     64    650ms    56    0     879MB  859MB  892MB
  after  100,000   20    600    412ms    776ms    0.08    70     41    376ms    39    0     910MB  891MB  909MB
  after  100,000  100   3000    378ms    754ms    0.17    40     19    525ms    41    0     888MB  872MB  931MB
  after 1,000,000  20    600    661ms   8646ms    0.51    68     44   1737ms    27    0    3188MB 4389MB 3263MB
  after  100,000   20    600    395ms    731ms    0.16    13      3    232ms    41    0     995MB 1058MB  909MB  --query, load 5-10
  after  100,000   20    600    381ms    721ms    0.14     3      3    474ms    41    0     894MB  857MB  895MB  load 3-8
  (1M at load 12-20: the first refresh copies every column into buffers with spare rows, ~1.5 GB,
  and O(n) work left on the GUI thread at 1M was not profiled yet; see the note of issue 21.)

Measured 2026-11-25 11:37-11:48 (after the incremental-repaint work), on the shared two-core
machine at load average 3-13 (other sessions' jobs), 20 s per case, 1500×950 offscreen, the
window at rest before the writer starts (settle); rate 0 = no writer (the machine's own stalls):

     memories  w/s writes  lat med  lat p95 CPU-s/s >50ms >100ms  longest delta full RSS start    end  fresh
       10,000    0      0        -        -    0.02     4      0     90ms     0    0     303MB  303MB  300MB
       10,000    1     20    160ms    176ms    0.09    16      2    120ms    20    0     303MB  303MB  309MB
       10,000   20    400    264ms    472ms    0.15    25      5    680ms    41    0     318MB  320MB  320MB
       10,000  100   1957    252ms    496ms    0.22    39     15    567ms    41    0     321MB  360MB  314MB
      100,000    0      0        -        -    0.02     4      1    104ms     0    0     821MB  818MB  762MB
      100,000    1     20    405ms    885ms    0.11    18      6    413ms    20    0     804MB  784MB  828MB
      100,000   20    400    593ms   3761ms    0.09    67     32    705ms    23    0     820MB  824MB  818MB
      100,000  100   2000   1818ms   6786ms    0.21    39     16    504ms     7    0     818MB 1071MB  806MB
  Threads 10-12 and open files 19-21 at start and end in every case.
  --recall-only, 10,000 at 20 recalls/s for 3600 s (code of 398c727, before the repaint work):
  7,129 delta refreshes, 0 full, 0.04 CPU-s/s, RSS 302 MB → 274 MB (fresh open: 295 MB),
  sampled every 5 min: 298 MB flat for 30 min, then down to 274 MB; threads 11 → 11, fds 19 → 19.
  The same for 900 s on the code of 7fd1929 (after it): 1,801 delta refreshes, 0 full, 0.04 CPU-s/s,
  RSS 318 MB → 315 MB (fresh open: 302 MB), 315 MB at 300, 600 and 900 s; threads 8, fds 16 at
  every sample (12 and 20 at the start, while the pool threads of the open were still alive).

Before that work (same machine, quieter, 20 s per case, measured without settling):
Measured 2026-11-25 on the shared two-core machine (5 other sessions running), 20 s per case,
1500×950 offscreen; rate 0 = no writer (the machine's own stalls):

     memories  w/s writes  lat med  lat p95 CPU-s/s >50ms >100ms  longest delta full  RSS start   end  fresh
       10,000    0      0        -        -    0.03     0      0     29ms     0    0     209MB  209MB  208MB
       10,000    1     20    359ms    372ms    0.13     5      1    115ms    20    0     209MB  199MB  208MB
       10,000   20    400    297ms    499ms    0.22    10      2    139ms    40    0     209MB  201MB  210MB
       10,000  100   2000    260ms    477ms    0.23    20      4    162ms    40    0     209MB  234MB  215MB
      100,000    0      0        -        -    0.02     3      0     98ms     0    0     545MB  545MB  527MB
      100,000    1     20     61ms    525ms    0.11    37     24    348ms    20    0     545MB  436MB  545MB
      100,000   20    400    288ms    508ms    0.27    76     46    430ms    41    0     545MB  439MB  546MB
      100,000  100   2000   1643ms   8338ms    0.50    26     17    618ms    11    0     545MB 1163MB  524MB
  --umap, 10,000 at 20 w/s for 90 s: the UMAP started before the writes finished after 12 s of
  them (180 delta refreshes, 0 full, p95 459 ms, 2 stalls over 100 ms).
  --query (a query by a memory on screen, run again after every write), 20 w/s for 20 s:
       10,000   20    400    257ms    457ms    0.26     2      0     55ms    40    0     211MB  204MB  210MB
      100,000   20    400    341ms    624ms    0.34    71     51    496ms    41    0     559MB  462MB  543MB
  --recall-only, 10,000 at 20 recalls/s for 240 s: 481 delta refreshes, 0 full, 0.05 CPU-s/s,
  0 stalls over 100 ms, RSS 209 MB → 206 MB (fresh open: 209 MB).
Threads and open files stayed at 8-10 and 17-19 in every case.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

DIR = os.path.join(tempfile.gettempdir(), "memviz-bench")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def threads_and_fds() -> tuple[int, int]:
    with open("/proc/self/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return threads, len(os.listdir("/proc/self/fd"))


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ------------------------------------------------------------------ the writer process
def writer(db: str, rate: float, seconds: float, log: str, recall_only: bool = False) -> int:
    """Plain SQL like an agent; one line "id commit_time" per new memory, after its commit.
    `recall_only`: every write is a recall (access count and time), the store keeps its rows."""
    import apsw

    from memviz.embed import LOCAL_DIM, LOCAL_MODEL
    from memviz.store.connection import connect

    conn = connect(db)
    rng, vrng = random.Random(1), np.random.default_rng(1)
    existing = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY random() LIMIT 5000")]
    start, n = time.monotonic(), 0
    with open(log, "w", buffering=1) as out:
        while time.monotonic() - start < seconds:
            n += 1
            mid = f"live-{os.getpid()}-{n}"
            vec = vrng.normal(size=LOCAL_DIM).astype("<f4")
            vec /= np.linalg.norm(vec)
            now = int(time.time())
            insert = None if recall_only else (
                    "INSERT INTO memories(id, agent, kind, content, embedding, embedding_model, event_time, created_at) "
                    "VALUES (?, 'assistant', 'episode', ?, ?, ?, ?, ?)",
                    (mid, f"live observation {n}", vec.tobytes(), LOCAL_MODEL, now, now))
            recall = ("UPDATE memories SET access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                      (now, rng.choice(existing))) if n % 2 == 0 or recall_only else (None, None)
            for sql, args in (insert or (None, None), recall):
                while sql:
                    try:
                        conn.execute(sql, args)
                        break
                    except apsw.BusyError:
                        time.sleep(0.001)
                if sql and sql.startswith("INSERT"):
                    out.write(f"{mid} {time.time():.6f}\n")
            time.sleep(max(0.0, start + n / rate - time.monotonic()))
    conn.close()
    return 0


# ------------------------------------------------------------------ the window
def fresh_rss(db: str) -> int:
    """Open `db` in a new window, settle, print the RSS (MB)."""
    from PySide6.QtCore import QSettings

    from memviz.app.main import make_app
    from memviz.app.window import MainWindow

    app = make_app()
    win = MainWindow(QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    win.resize(1500, 950)
    win.show()
    opened = []
    win.opened.connect(opened.append)
    win.open_path(db)
    pump(app, lambda: opened, 300)
    settle(app, win)  # graph, labels, first paint
    print(json.dumps({"rss": rss_mb()}))
    win.close()
    return 0


def settle(app, win) -> None:
    """Until the jobs that follow an open (graph, map labels, copies) are done, then 2 s more:
    what is measured is the window at rest beside the agent, not the end of its opening."""
    pump(app, lambda: False, 3)
    pump(app, win.workers.idle, 300)
    pump(app, lambda: False, 2)


def pump(app, until, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        if until():
            return True
        time.sleep(0.002)
    return False


def run_case(app, template: str, n: int, rate: float, seconds: float, umap: bool, recall_only: bool = False,
             query: bool = False) -> dict:
    from PySide6.QtCore import QSettings, QTimer

    from memviz.app.window import MainWindow

    db = os.path.join(DIR, f"live-case-{n}-{os.getpid()}.db")  # per process: cases may run side by side
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    shutil.copy(template, db)
    win = MainWindow(QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"), QSettings.IniFormat))
    win.map.auto_umap = False
    win.resize(1500, 950)
    win.show()
    opened = []
    win.opened.connect(opened.append)
    win.open_path(db)
    pump(app, lambda: opened, 600)
    settle(app, win)
    if query:  # a query on screen: it runs again after every write
        ranked = []
        win.query.ranked.connect(lambda *a: ranked.append(1))
        win.state.select([5])
        win.query.query_selected()
        pump(app, lambda: ranked, 60)
    shown_at: dict[str, float] = {}
    win.state.rows_changed.connect(lambda d: shown_at.update(
        (m, time.time()) for m in win.state.data.arrays.ids[d.added].tolist()))
    umap_done = []
    if umap:
        win.map.layout_changed.connect(lambda m: m.startswith("UMAP") and umap_done.append(time.monotonic()))
        win.map.start_umap()
    rss0, (th0, fd0) = rss_mb(), threads_and_fds()
    # event-loop lateness: a 10 ms timer
    # (counts, not a list of gaps: an hour of ticks would be 15 MB of the RSS measured)
    gaps, last = {"50": 0, "100": 0, "longest": 0.0}, [time.monotonic()]

    def tick():
        t = time.monotonic()
        gap = t - last[0] - 0.010
        gaps["50"] += gap > 0.050
        gaps["100"] += gap > 0.100
        gaps["longest"] = max(gaps["longest"], gap)
        last[0] = t
    timer = QTimer(interval=10, timeout=tick)
    timer.start()
    log = os.path.join(DIR, f"live-writer-{os.getpid()}.log")
    refreshes0 = dict(win.live.refreshes)
    cpu0, t0 = cpu_s(), time.monotonic()
    if rate > 0:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", db, str(rate), str(seconds), log,
                                 "1" if recall_only else "0"])
        samples = []  # a long run: RSS, threads, fds every 5 minutes (to stderr), to see it level off

        def sample():
            if time.monotonic() - t0 >= 300 * (len(samples) + 1):
                samples.append((time.monotonic() - t0, rss_mb(), *threads_and_fds()))
                at, rss, th, fd = samples[-1]
                print(f"  {at:5.0f} s  RSS {rss:4.0f} MB  threads {th}  fds {fd}", file=sys.stderr, flush=True)
            return proc.poll() is not None
        pump(app, sample, seconds + 60)
    else:  # no writer: what the window and the machine do on their own (stalls from a busy machine)
        open(log, "w").close()
        pump(app, lambda: False, seconds)
    cpu1, t1 = cpu_s(), time.monotonic()
    with open(log) as f:
        commits = dict(line.split() for line in f if line.strip())
    pump(app, lambda: all(m in shown_at for m in commits), 30)  # the last ones arrive
    timer.stop()
    lat = sorted(shown_at[m] - float(c) for m, c in commits.items() if m in shown_at)
    pump(app, lambda: False, 2)
    out = {
        "n": n, "rate": rate, "writes": len(commits), "shown": len(lat),
        "lat_med": statistics.median(lat) if lat else float("nan"),
        "lat_p95": lat[int(0.95 * (len(lat) - 1))] if lat else float("nan"),
        "cpu_per_s": (cpu1 - cpu0) / (t1 - t0),
        "stalls50": gaps["50"], "stalls100": gaps["100"], "longest_ms": 1000 * gaps["longest"],
        "delta": win.live.refreshes["delta"] - refreshes0["delta"], "full": win.live.refreshes["full"] - refreshes0["full"],
        "rss0": rss0, "rss1": rss_mb(), "threads": (th0, threads_and_fds()[0]), "fds": (fd0, threads_and_fds()[1]),
        "umap_s": (umap_done[0] - t0) if umap_done else None,
    }
    win.close()
    pump(app, lambda: False, 1)
    got = subprocess.run([sys.executable, os.path.abspath(__file__), "--fresh-rss", db], capture_output=True, text=True)
    try:
        out["rss_fresh"] = json.loads(got.stdout.strip().splitlines()[-1])["rss"]
    except (ValueError, IndexError):
        out["rss_fresh"] = float("nan")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    os.remove(log)
    return out


def template_for(n: int) -> str:
    from app import build  # bench/app.py's generator (random vectors of the local model)

    os.makedirs(DIR, exist_ok=True)
    path = os.path.join(DIR, f"live-{n}.db")
    if not os.path.exists(path):
        build(path + ".part", n)
        os.replace(path + ".part", path)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--rates", default="1,20,100", help="writes per second; 0 = no writer (the machine's own stalls)")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--umap", action="store_true")
    ap.add_argument("--recall-only", action="store_true", help="the agent only recalls (RSS over a long run)")
    ap.add_argument("--query", action="store_true", help="a query (by a memory) on screen, run again after writes")
    args = ap.parse_args(argv)
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        template_for(n)
        for rate in [float(x) for x in args.rates.split(",")]:
            # each case in its own process: its RSS is its own, not what the previous case left
            got = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", str(n), str(rate),
                                  str(args.seconds), "1" if args.umap else "0", "1" if args.recall_only else "0",
                                  "1" if args.query else "0"],
                                 stdout=subprocess.PIPE, text=True)  # its stderr: the long run's samples, errors
            try:
                r = json.loads(got.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                continue
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    print(f"\n{'memories':>9} {'w/s':>4} {'writes':>6} {'lat med':>8} {'lat p95':>8} {'CPU-s/s':>7} {'>50ms':>5} "
          f"{'>100ms':>6} {'longest':>8} {'delta':>5} {'full':>4} {'RSS start':>9} {'end':>6} {'fresh':>6} "
          f"{'threads':>7} {'fds':>7}" + ("  UMAP" if args.umap else ""))
    for r in rows:
        print(f"{r['n']:>9,} {r['rate']:>4g} {r['writes']:>6} {r['lat_med'] * 1000:>6.0f}ms {r['lat_p95'] * 1000:>6.0f}ms "
              f"{r['cpu_per_s']:>7.2f} {r['stalls50']:>5} {r['stalls100']:>6} {r['longest_ms']:>6.0f}ms {r['delta']:>5} "
              f"{r['full']:>4} {r['rss0']:>7.0f}MB {r['rss1']:>4.0f}MB {r['rss_fresh']:>4.0f}MB "
              f"{r['threads'][0]:>3}→{r['threads'][1]:<3} {r['fds'][0]:>3}→{r['fds'][1]:<3}"
              + (f"  {r['umap_s']:.0f} s" if args.umap and r['umap_s'] else "  -" if args.umap else ""))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        sys.exit(writer(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6:7] == ["1"]))
    if len(sys.argv) > 1 and sys.argv[1] == "--fresh-rss":
        sys.exit(fresh_rss(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        from memviz.app.main import make_app

        _app = make_app()   # the window's process as `memviz` runs it (GIL switch interval included)
        n_, rate_, secs_, umap_, recall_, query_ = sys.argv[2:8]
        print(json.dumps(run_case(_app, template_for(int(n_)), int(n_), float(rate_), float(secs_), umap_ == "1",
                                  recall_ == "1", query_ == "1")))
        sys.exit(0)
    sys.exit(main())
