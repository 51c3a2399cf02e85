"""The window beside a busy agent: a writer process commits at a steady rate while the real
window (offscreen) follows.

    PYTHONPATH=. python bench/live.py [--sizes 10000,100000] [--rates 1,20,100] [--seconds 30]
        [--agent [--mix insert=20,recall=2,rewrite=1,delete=0.1,tag=0.1]] [--recall-only] [--query] [--umap]
        [--busy K] [--no-fresh] [--events FILE] [--profile FILE]

The writer is tests/agent_writer.py's agent (plain SQL, one write per transaction). By default it
inserts `rate` memories a second and recalls an older one (access count and time) after every
other insert: the insert-only rows, comparable with earlier runs. `--agent` is an agent as agents
write: inserts, recalls, rewrites of its own memories' text (content and a re-embedded vector,
which the vec0 and FTS triggers follow), soft-deletes and tag changes of its own memories, each
at the rate `--mix` gives (per second; `--rates` is then ignored). `--recall-only`: `rate` recalls
a second and nothing else (RSS over a long run: every --sample-every seconds it prints RSS,
threads and fds).
`--query`: a query (by a memory) on screen, brought up to date after writes. `--umap` starts a
UMAP just before the writes and reports when it finished.

Per case (store size × writer) prints: commit-to-screen latency of new memories (median, p95:
from the writer's commit to the end of the window's rows_changed, i.e. every panel has updated
what it draws) and of rewrites (p95, to the rows_changed naming the row), the window process's
CPU-seconds per second of writing, event-loop stalls over 50 and 100 ms (a 10 ms timer's
lateness) and those in which the GUI thread itself ran over 100 ms (`GUI>100`; `GUI max`: the
most it ran between two ticks), delta refreshes vs full re-reads, RSS at start, at end and for
the same store opened afresh in a new process, threads and open files at start and end.
Under the table, every stall over 50 ms split into what the GUI thread did in it — ran, waited
for a core (a run queue), for the GIL or a lock (a futex), for the disk, or was idle — and what
each worker thread (by its system name, memviz-<lane>), the agent, the garbage collector and the
machine (busy cores, stolen time) did meanwhile: the bench's parent process samples the window
process's threads in /proc every SAMPLE_S (ThreadClock; it shares no GIL with the window); the
table's own/core/lock/disk/idle counts the stalls over 100 ms by the largest of the five.
`--busy K`: K processes spin while the agent writes (a shared machine, reproducibly).
`--no-fresh`: no RSS of the store opened afresh (a shorter run).
`--profile FILE` writes a cProfile of the window's GUI thread to FILE and, to FILE.stalls, the
garbage collector's pauses (count, longest, total per generation), then the GUI thread's stack
every 20 ms of each event-loop stall over 80 ms (a watcher thread samples it), the most frequent
first.
`--events FILE`: every event the GUI thread handles is timed (its CPU time, nested: a refresh's
queued call, a timer, each widget's paint inside an update request), and for every gap between
two ticks in which the GUI thread ran over EVENTS_OVER_S, the events of that gap over 1 ms go to
FILE as a tree: which turn, which panel's paint or timer, how long.

Stores come from bench/app.py's generator, kept under $TMPDIR/memviz-bench/ (a fresh copy per
case). The machine may be shared: the figures are as measured; they are on the manual's
performance page (memviz/manual/performance.md).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


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


class StallWatch:
    """The GUI thread's stacks while its event loop is late: `beat()` from a GUI timer; a thread
    samples the GUI thread's stack every 20 ms once the last beat is more than `after` s old."""

    def __init__(self, after: float = 0.080) -> None:
        import gc
        import threading
        self.after, self.last, self.stacks = after, time.monotonic(), {}
        self.gc_pauses: dict[int, list] = {0: [], 1: [], 2: []}   # generation -> each collection's seconds
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)
        self._gui = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="stall-watch")
        self._thread.start()

    def _gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_pauses[info["generation"]].append(time.perf_counter() - self._gc_start)

    def beat(self) -> None:
        self.last = time.monotonic()

    def _run(self) -> None:
        import traceback
        while not self._stop.wait(0.020):
            if time.monotonic() - self.last > self.after:
                frame = sys._current_frames().get(self._gui)
                if frame is not None:
                    stack = "".join(traceback.format_list(traceback.extract_stack(frame)[-14:]))
                    self.stacks[stack] = self.stacks.get(stack, 0) + 1

    def write(self, path: str) -> None:
        self._stop.set()
        self._thread.join()
        with open(path, "w") as f:
            for gen, pauses in self.gc_pauses.items():
                f.write(f"gc generation {gen}: {len(pauses)} collections, longest {1000 * max(pauses, default=0):.0f} ms, "
                        f"total {1000 * sum(pauses):.0f} ms\n")
            for stack, count in sorted(self.stacks.items(), key=lambda kv: -kv[1]):
                f.write(f"--- {count} samples ({count * 20} ms)\n{stack}\n")


EVENTS_OVER_S = 0.035  # --events: the gaps in which the GUI thread ran longer than this


def timed_app():
    """The QApplication, made before make_app() (which takes it), with every event the GUI thread
    handles timed: `app.events` (an EventTimes)."""
    import threading

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    gui = threading.get_ident()

    class EventTimes:
        def __init__(self) -> None:
            self.depth, self.done, self.out = 0, [], None

        def label(self, obj, ev) -> str:
            try:
                names, o = [], obj
                while o is not None and len(names) < 3:
                    names.append(type(o).__name__ + (f"#{o.objectName()}" if o.objectName() else ""))
                    o = o.parent()
                return f"{QEvent.Type(ev.type()).name} {'<'.join(names)}"
            except RuntimeError:  # (deleted meanwhile)
                return f"{int(ev.type())} ?"

        def gap(self, since: float, busy: float, gap: float) -> None:
            """The events since thread time `since`, when the thread ran over 35 ms in this gap."""
            if busy > EVENTS_OVER_S and self.out is not None:
                self.out.write(f"=== GUI thread {1000 * busy:.0f} ms in a gap of {1000 * gap:.0f} ms at {time.time():.3f}\n")
                for depth, t0, d, text in sorted(self.done, key=lambda r: r[1]):
                    if t0 >= since:
                        self.out.write(f"{'  ' * depth}{1000 * d:6.1f} {text}\n")
            self.done.clear()

    class App(QApplication):
        def notify(self, obj, ev):
            if threading.get_ident() != gui:
                return super().notify(obj, ev)
            t0 = time.thread_time()
            self.events.depth += 1
            try:
                return super().notify(obj, ev)
            finally:
                self.events.depth -= 1
                d = time.thread_time() - t0
                if d > 0.001:
                    self.events.done.append((self.events.depth, t0, d, self.events.label(obj, ev)))

    app = App([sys.argv[0]])
    app.events = EventTimes()
    return app


# ------------------------------------------------------------------ what each thread did in a stall
SAMPLE_S = 0.005  # the parent's sampling period of the window process's threads


class ThreadClock:
    """What the window process's threads did, sampled from the bench's parent process (it shares
    no GIL with the window, so it samples on time while the window's threads wait): every
    SAMPLE_S, each thread's /proc schedstat (ns on a core, ns waiting on a run queue for one) and
    name, what the GUI thread is blocked in when it is neither (its wchan: a futex is the GIL or a
    lock; anything else is idle: the event loop's sleep), the agent's CPU and the machine's
    (/proc/stat: busy and stolen jiffies). `stall(a, b)` splits the monotonic span a..b."""

    def __init__(self, pid: int) -> None:
        self.pid, self.agent = pid, None
        self.series: dict[int, tuple] = {}   # tid -> (times, ns run, ns queued): arrays of doubles
        self.names: dict[int, str] = {}
        self.gui: list[tuple] = []   # (time, "r" on a core or queued / "l" a futex / "d" disk / "i" idle, major faults)
        self.machine: list[tuple[float, int, int, int]] = []  # (time, busy, all, steal jiffies)
        self._fds: dict[str, int] = {}
        self.samples, self.cpu = 0, 0.0

    def _read(self, path: str) -> bytes | None:
        fd = self._fds.get(path)
        try:
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            return os.pread(fd, 512, 0)
        except OSError:  # the thread or the process ended
            if fd is not None:
                os.close(self._fds.pop(path))
            return None

    def _add(self, tid: int, t: float, stat: bytes) -> None:
        from array import array
        run, queued = stat.split()[:2]
        if tid not in self.series:
            self.series[tid] = (array("d"), array("d"), array("d"))
        times, runs, waits = self.series[tid]
        times.append(t)
        runs.append(int(run))
        waits.append(int(queued))

    def sample(self) -> None:
        c0 = time.thread_time()
        t = time.monotonic()
        task = f"/proc/{self.pid}/task"
        try:
            tids = [int(x) for x in os.listdir(task)]
        except OSError:
            return
        for tid in tids:
            stat = self._read(f"{task}/{tid}/schedstat")
            if stat:
                self._add(tid, t, stat)
            if tid not in self.names or self.samples % 100 == 0:  # named when a job starts (its lane)
                name = self._read(f"{task}/{tid}/comm")
                if name:
                    self.names[tid] = name.decode().strip()
        wchan, stat = self._read(f"{task}/{self.pid}/wchan"), self._read(f"{task}/{self.pid}/stat")
        if wchan is not None and stat is not None:
            w, fields = wchan.decode(), stat.rsplit(b")", 1)[1].split()
            state = "r" if w == "0" else "d" if fields[0] == b"D" else "l" if w.startswith("futex") else "i"
            self.gui.append((t, state, int(fields[7])))  # (majflt: a page read from disk)
        if self.agent is None and self.samples % 100 == 0:
            kids = self._read(f"{task}/{self.pid}/children")
            if kids and kids.split():
                self.agent = int(kids.split()[0])
        if self.agent is not None:
            stat = self._read(f"/proc/{self.agent}/schedstat")
            if stat:
                self._add(-1, t, stat)
        cpu = self._read("/proc/stat")
        if cpu:
            j = [int(x) for x in cpu.split(b"\n", 1)[0].split()[1:]]
            idle = j[3] + j[4]
            self.machine.append((t, sum(j[:8]) - idle - j[7], sum(j[:8]), j[7]))
        self.samples += 1
        self.cpu += time.thread_time() - c0

    @staticmethod
    def _at(times, values, t: float) -> float:
        """`values` at time t, linear between samples (0 before the first: a thread not yet made)."""
        import bisect
        i = bisect.bisect_left(times, t)
        if i == 0:
            return 0.0 if not times or t < times[0] else values[0]
        if i == len(times):
            return values[-1]
        f = (t - times[i - 1]) / (times[i] - times[i - 1])
        return values[i - 1] + f * (values[i] - values[i - 1])

    def ran(self, tid: int, a: float, b: float) -> tuple[float, float]:
        """Seconds thread `tid` ran, and waited on a run queue, between a and b."""
        times, runs, waits = self.series.get(tid, ((), (), ()))
        return ((self._at(times, runs, b) - self._at(times, runs, a)) / 1e9,
                (self._at(times, waits, b) - self._at(times, waits, a)) / 1e9)

    def stall(self, a: float, b: float) -> dict:
        """A stall from a to b: the GUI thread's run / run-queue wait / futex wait / idle, each
        worker's (by name) and the agent's run, the machine's busy cores and stolen time (s)."""
        span = b - a
        ran, queued = self.ran(self.pid, a, b)
        asleep = max(0.0, span - ran - queued)
        inside = [g for g in self.gui if a <= g[0] <= b]
        states = [g[1] for g in inside if g[1] != "r"]
        locked = asleep * (states.count("l") / len(states)) if states else 0.0
        disk = asleep * (states.count("d") / len(states)) if states else 0.0
        faults = inside[-1][2] - inside[0][2] if inside else 0
        workers: dict[str, float] = {}
        for tid in self.series:
            if tid not in (self.pid, -1):
                got = self.ran(tid, a, b)[0]
                if got > 0.0005:
                    name = self.names.get(tid, str(tid))
                    workers[name] = workers.get(name, 0.0) + got
        m = [r for r in self.machine if a - 0.02 <= r[0] <= b + 0.02]
        busy = steal = float("nan")
        if len(m) >= 2 and m[-1][2] > m[0][2]:
            busy = (os.cpu_count() or 1) * (m[-1][1] - m[0][1]) / (m[-1][2] - m[0][2])
            steal = (m[-1][3] - m[0][3]) / os.sysconf("SC_CLK_TCK")
        return {"ms": 1000 * span, "ran": 1000 * ran, "queued": 1000 * queued, "locked": 1000 * locked,
                "disk": 1000 * disk, "faults": faults, "idle": 1000 * (asleep - locked - disk),
                "agent": 1000 * self.ran(-1, a, b)[0],
                "workers": {k: 1000 * v for k, v in sorted(workers.items(), key=lambda kv: -kv[1])},
                "busy_cores": busy, "steal_ms": 1000 * steal}

    @staticmethod
    def cause(st: dict) -> str:
        """What most of a stall was: the GUI thread's own run, a wait for a core, for the GIL / a
        lock, for the disk (a page fault, a read), or idle."""
        parts = {"own": st["ran"], "core": st["queued"], "lock": st["locked"], "disk": st["disk"], "idle": st["idle"]}
        return max(parts, key=parts.get)


BUSY = "while True: pass"  # --busy: a process that keeps a core busy (other work on a shared machine)


def run_sampled(cmd: list[str], busy: int = 0) -> tuple[str, dict]:
    """Run a case's process, sampling its threads (ThreadClock) from when it starts writing
    (a line "writing from" on its stderr, passed on) to when it stops ("writing ended"), with
    `busy` processes spinning meanwhile."""
    import threading
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clock, writing, ended = ThreadClock(proc.pid), threading.Event(), threading.Event()
    hogs: list[subprocess.Popen] = []

    def relay() -> None:
        for line in proc.stderr:
            sys.stderr.write(line)
            writing.set() if line.startswith("writing from") else ended.set() if line.startswith("writing ended") else None
    threading.Thread(target=relay, daemon=True).start()
    out = []
    threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True).start()
    nxt = time.monotonic()
    while proc.poll() is None:
        if writing.is_set() and not ended.is_set():
            if len(hogs) < busy:
                hogs += [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
            clock.sample()
        elif hogs:
            for h in hogs:
                h.kill()
                h.wait()
            hogs = []
        nxt = max(nxt + SAMPLE_S, time.monotonic())
        time.sleep(max(0.0, nxt - time.monotonic()))
    proc.wait()
    time.sleep(0.1)  # the reader threads take the last lines
    return (out[0] if out else ""), clock


# ------------------------------------------------------------------ the writer process
WRITER = os.path.join(os.path.dirname(HERE), "tests", "agent_writer.py")
MIX = "insert=20,recall=2,rewrite=1,delete=0.1,tag=0.1"  # an agent as the issue measured it (per second)


def writer_args(rate: float, recall_only: bool, mix: str | None) -> list[str]:
    """tests/agent_writer.py's options for the case's writer."""
    if recall_only:
        return ["--rate", "0", "--recall-rate", str(rate)]
    if mix is None:
        return ["--rate", str(rate)]  # a recall after every other insert
    got = dict(part.split("=") for part in mix.split(","))
    flags = {"insert": "--rate", "recall": "--recall-rate", "rewrite": "--rewrite-rate", "delete": "--delete-rate",
             "tag": "--tag-rate"}
    return [x for op, flag in flags.items() for x in (flag, got.get(op, "0"))]


def mix_label(rate: float, recall_only: bool, mix: str | None) -> str:
    if recall_only:
        return f"{rate:g} recalls/s"
    if mix is None:
        return f"{rate:g} inserts/s"
    short = {"insert": "ins", "recall": "rec", "rewrite": "rw", "delete": "del", "tag": "tag"}
    return " ".join(f"{v} {short.get(k, k)}" for k, v in (part.split("=") for part in mix.split(",")))


# ------------------------------------------------------------------ the window
def fresh_rss(db: str) -> int:
    """Open `db` in a new window, settle, print the RSS (MB)."""
    from memviz.app.main import make_app, open_and_wait, scratch_window

    app = make_app()
    win = scratch_window()
    open_and_wait(win, db, 300)
    settle(app, win)  # graph, labels, first paint
    print(json.dumps({"rss": rss_mb()}))
    win.close()
    return 0


def settle(app, win) -> None:
    """Until the jobs that follow an open (graph, map labels, copies) are done, then 2 s more:
    what is measured is the window at rest beside the agent, not the end of its opening."""
    pump(lambda: False, 3)
    pump(win.workers.idle, 300)
    pump(lambda: False, 2)


def pump(until, seconds: float) -> bool:
    """The event loop until `until()` or `seconds` pass, asked every 2 ms (latencies are in ms)."""
    from memviz.app.main import process_until
    return process_until(until, seconds, poll=0.002)


def run_case(app, template: str, n: int, case: dict) -> dict:
    """One case in this process: `case` holds rate, seconds, umap, recall_only, query, mix, profile, events."""
    from PySide6.QtCore import QTimer

    from memviz.app.main import open_and_wait, scratch_window

    rate, seconds = case["rate"], case["seconds"]
    db = os.path.join(DIR, f"live-case-{n}-{os.getpid()}.db")  # per process: cases may run side by side
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    shutil.copy(template, db)
    win = scratch_window()
    open_and_wait(win, db, 600)
    settle(app, win)
    if case["query"]:  # a query on screen: brought up to date after writes
        ranked = []
        win.query.ranked.connect(lambda *a: ranked.append(1))
        win.state.select([5])
        win.query.query_selected()
        pump(lambda: ranked, 60)
    shown_at: dict[str, float] = {}
    changed_at: dict[str, list] = {}  # id -> when a rows_changed named it changed (a rewrite on screen)

    def on_rows(d):
        t, ids = time.time(), win.state.data.arrays.ids
        shown_at.update((m, t) for m in ids[d.added].tolist())
        for m in ids[np.concatenate([d.added, d.changed])].tolist():  # (rewritten soon after its insert: added)
            changed_at.setdefault(m, []).append(t)
    win.state.rows_changed.connect(on_rows)
    umap_done = []
    if case["umap"]:
        win.map.layout_changed.connect(lambda m: m.startswith("UMAP") and umap_done.append(time.monotonic()))
        win.map.start_umap()
    rss0, (th0, fd0) = rss_mb(), threads_and_fds()
    # event-loop lateness: a 10 ms timer
    # (counts, not a list of gaps: an hour of ticks would be 15 MB of the RSS measured)
    # and of each stall, how much the GUI thread itself ran (its CPU time over the gap): a stall
    # the thread spent mostly waiting (the machine's other work, the GIL) is not the window's work
    gaps, last = {"50": 0, "100": 0, "longest": 0.0, "busy100": 0, "busiest": 0.0}, [time.monotonic(), time.thread_time()]
    stalls = []  # each stall over 50 ms: [from, to] (monotonic), for the parent's ThreadClock
    collections = []  # the garbage collector's pauses over 5 ms: [from, to, generation, thread]
    gc_from = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        import threading
        if phase == "start":
            gc_from[0] = time.monotonic()
        elif time.monotonic() - gc_from[0] > 0.005 and len(collections) < 500:
            collections.append((gc_from[0], time.monotonic(), info["generation"], threading.current_thread().name))
    import gc
    gc.callbacks.append(on_gc)

    watch = StallWatch() if case["profile"] else None
    events = app.events if case.get("events") else None
    if events is not None:
        events.out = open(case["events"], "w")

    def tick():
        t, ran = time.monotonic(), time.thread_time()
        if watch is not None:
            watch.beat()
        gap, busy = t - last[0] - 0.010, ran - last[1]
        gaps["50"] += gap > 0.050
        gaps["100"] += gap > 0.100
        if gap > 0.050 and len(stalls) < 500:
            stalls.append((last[0], t))
        gaps["longest"] = max(gaps["longest"], gap)
        gaps["busy100"] += busy > 0.100
        gaps["busiest"] = max(gaps["busiest"], busy)
        if events is not None:
            events.gap(last[1], busy, gap + 0.010)
        last[0], last[1] = t, ran
    timer = QTimer(interval=10, timeout=tick)
    timer.start()
    log = os.path.join(DIR, f"live-writer-{os.getpid()}.log")
    refreshes0 = dict(win.live.refreshes)
    profile = None
    if case["profile"]:
        import cProfile
        profile = cProfile.Profile()  # the GUI thread's calls
        profile.enable()
    print(f"writing from {time.time():.3f}", file=sys.stderr, flush=True)  # (a profiler may attach now)
    cpu0, t0 = cpu_s(), time.monotonic()
    samples = []  # a long run: RSS, threads, fds every `sample_s` (to stderr), to see it level off
    if rate > 0:
        from memviz.embed import LOCAL_DIM, LOCAL_MODEL
        proc = subprocess.Popen([sys.executable, WRITER, "agent", db, "--seconds", str(seconds), "--dim", str(LOCAL_DIM),
                                 "--model", LOCAL_MODEL, "--log", log,
                                 *writer_args(rate, case["recall_only"], case["mix"])], stdout=subprocess.DEVNULL)

        def sample():
            if time.monotonic() - t0 >= case.get("sample_s", 300) * (len(samples) + 1):
                samples.append((time.monotonic() - t0, rss_mb(), *threads_and_fds()))
                at, rss, th, fd = samples[-1]
                print(f"  {at:5.0f} s  RSS {rss:4.0f} MB  threads {th}  fds {fd}", file=sys.stderr, flush=True)
            return proc.poll() is not None
        pump(sample, seconds + 60)
    else:  # no writer: what the window and the machine do on their own (stalls from a busy machine)
        open(log, "w").close()
        pump(lambda: False, seconds)
    cpu1, t1 = cpu_s(), time.monotonic()
    print("writing ended", file=sys.stderr, flush=True)
    gc.callbacks.remove(on_gc)
    if events is not None:
        events.out.close()
        events.out = None
    if profile is not None:
        profile.disable()
        profile.dump_stats(case["profile"])
        watch.write(case["profile"] + ".stalls")
    with open(log) as f:
        writes = [line.split() for line in f if line.strip()]
    commits = {m: float(t) for op, m, t in writes if op == "insert"}
    pump(lambda: all(m in shown_at for m in commits), 30)  # the last ones arrive
    timer.stop()
    lat = sorted(shown_at[m] - c for m, c in commits.items() if m in shown_at)
    rewrite_lat = sorted(min((s for s in changed_at.get(m, []) if s >= float(t)), default=float("inf")) - float(t)
                         for op, m, t in writes if op == "rewrite")
    pump(lambda: False, 2)
    out = {
        "n": n, "rate": rate, "writer": mix_label(rate, case["recall_only"], case["mix"]),
        "writes": len(writes), "inserts": len(commits), "shown": len(lat),
        "lat_med": statistics.median(lat) if lat else float("nan"),
        "lat_p95": lat[int(0.95 * (len(lat) - 1))] if lat else float("nan"),
        "rewrite_p95": rewrite_lat[int(0.95 * (len(rewrite_lat) - 1))] if rewrite_lat else float("nan"),
        "cpu_per_s": (cpu1 - cpu0) / (t1 - t0),
        "stalls50": gaps["50"], "stalls100": gaps["100"], "longest_ms": 1000 * gaps["longest"],
        "busy100": gaps["busy100"], "busiest_ms": 1000 * gaps["busiest"],
        "delta": win.live.refreshes["delta"] - refreshes0["delta"], "full": win.live.refreshes["full"] - refreshes0["full"],
        "rss0": rss0, "rss1": rss_mb(), "threads": (th0, threads_and_fds()[0]), "fds": (fd0, threads_and_fds()[1]),
        "umap_s": (umap_done[0] - t0) if umap_done else None, "samples": samples, "stalls": stalls,
        "collections": collections, "load": os.getloadavg()[0],
    }
    win.close()
    pump(lambda: False, 1)
    out["rss_fresh"] = float("nan")
    if case.get("fresh", True):
        got = subprocess.run([sys.executable, os.path.abspath(__file__), "--fresh-rss", db], capture_output=True, text=True)
        try:
            out["rss_fresh"] = json.loads(got.stdout.strip().splitlines()[-1])["rss"]
        except (ValueError, IndexError):
            pass
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
    ap.add_argument("--agent", action="store_true", help="an agent as agents write (--mix), instead of --rates")
    ap.add_argument("--mix", default=MIX, help="with --agent: writes per second of each kind")
    ap.add_argument("--query", action="store_true", help="a query (by a memory) on screen, brought up to date after writes")
    ap.add_argument("--sample-every", type=float, default=300, help="seconds between samples of RSS, threads and fds")
    ap.add_argument("--profile", default="", help="a cProfile of the window's GUI thread while the agent writes, to this file")
    ap.add_argument("--events", default="", help="the GUI thread's events in each gap it ran over 35 ms, to this file")
    ap.add_argument("--busy", type=int, default=0, help="processes spinning while the agent writes (a shared machine)")
    ap.add_argument("--no-fresh", action="store_true", help="skip the RSS of the store opened afresh (a shorter run)")
    args = ap.parse_args(argv)
    rows = []
    rates = [1.0] if args.agent else [float(x) for x in args.rates.split(",")]
    for n in [int(x) for x in args.sizes.split(",")]:
        template_for(n)
        for rate in rates:
            case = {"rate": rate, "seconds": args.seconds, "umap": args.umap, "recall_only": args.recall_only,
                    "query": args.query, "mix": args.mix if args.agent else None, "profile": args.profile, "events": args.events,
                    "sample_s": args.sample_every, "fresh": not args.no_fresh}
            # each case in its own process: its RSS is its own, not what the previous case left
            # (its stderr: the long run's samples, errors; its threads sampled from here)
            got, clock = run_sampled([sys.executable, os.path.abspath(__file__), "--case", str(n), json.dumps(case)], args.busy)
            try:
                r = json.loads(got.strip().splitlines()[-1])
            except (ValueError, IndexError):
                continue
            r["stalls"] = [dict(clock.stall(a, b), gc=1000 * sum(max(0.0, min(b, d) - max(a, c)) for c, d, *_ in r["collections"]))
                           for a, b in r["stalls"]]
            r["causes"] = {c: sum(ThreadClock.cause(st) == c for st in r["stalls"] if st["ms"] > 110)
                           for c in ("own", "core", "lock", "disk", "idle")}  # (a stall over 100 ms: its span holds the tick's 10)
            print(json.dumps(r), file=sys.stderr, flush=True)
            print(f"(sampled the window's threads {clock.samples} times, {clock.cpu:.2f} CPU-s in the bench's parent)",
                  file=sys.stderr, flush=True)
            rows.append(r)
    print(f"\n{'memories':>9} {'writer':>30} {'writes':>6} {'lat med':>8} {'lat p95':>8} {'rw p95':>7} {'CPU-s/s':>7} "
          f"{'>50ms':>5} {'>100ms':>6} {'longest':>8} {'own/core/lock/disk/idle':>23} {'GUI>100':>7} {'GUI max':>7} "
          f"{'gc>5ms (max)':>12} {'delta':>5} {'full':>4} {'RSS start':>9} {'end':>6} {'fresh':>6} "
          f"{'threads':>7} {'fds':>7} {'load':>5}" + ("  UMAP" if args.umap else ""))
    for r in rows:
        causes = "/".join(str(r["causes"][c]) for c in ("own", "core", "lock", "disk", "idle"))
        print(f"{r['n']:>9,} {r['writer']:>30} {r['writes']:>6} {r['lat_med'] * 1000:>6.0f}ms {r['lat_p95'] * 1000:>6.0f}ms "
              f"{r['rewrite_p95'] * 1000:>5.0f}ms {r['cpu_per_s']:>7.2f} {r['stalls50']:>5} {r['stalls100']:>6} "
              f"{r['longest_ms']:>6.0f}ms {causes:>23} {r['busy100']:>7} {r['busiest_ms']:>5.0f}ms "
              f"{len(r['collections']):>4} ({1000 * max((d - c for c, d, *_ in r['collections']), default=0):>3.0f}ms) "
              f"{r['delta']:>5} {r['full']:>4} "
              f"{r['rss0']:>7.0f}MB {r['rss1']:>4.0f}MB "
              f"{r['rss_fresh']:>4.0f}MB {r['threads'][0]:>3}→{r['threads'][1]:<3} {r['fds'][0]:>3}→{r['fds'][1]:<3} "
              f"{r['load']:>5.1f}" + (f"  {r['umap_s']:.0f} s" if args.umap and r['umap_s'] else "  -" if args.umap else ""))
    stalls = [(r["n"], st) for r in rows for st in r["stalls"]]
    if stalls:
        print(f"\nevery stall over 50 ms (the span between two ticks, its 10 ms included), what each thread did in it"
              f" (ms; the cause: the largest of the GUI thread's five)\n"
              f"{'memories':>9} {'stall':>6} {'GUI ran':>7} {'waited for a core':>17} {'waited for the GIL / a lock':>27} "
              f"{'disk (faults)':>13} {'idle':>5} {'cause':>5} {'gc':>4} {'agent ran':>9} {'busy cores':>10} {'stolen':>6}  workers ran")
        for n, st in stalls:
            workers = ", ".join(f"{k} {v:.0f}" for k, v in st["workers"].items()) or "-"
            print(f"{n:>9,} {st['ms']:>6.0f} {st['ran']:>7.0f} {st['queued']:>17.0f} {st['locked']:>27.0f} "
                  f"{st['disk']:>8.0f} ({st['faults']:>2}) {st['idle']:>5.0f} "
                  f"{ThreadClock.cause(st):>5} {st['gc']:>4.0f} "
                  f"{st['agent']:>9.0f} {st['busy_cores']:>10.2f} {st['steal_ms']:>6.0f}  {workers}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fresh-rss":
        sys.exit(fresh_rss(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        from memviz.app.main import make_app

        if json.loads(sys.argv[3]).get("events"):
            timed_app()
        _app = make_app()   # the window's process as `memviz` runs it (GIL switch interval included)
        print(json.dumps(run_case(_app, template_for(int(sys.argv[2])), int(sys.argv[2]), json.loads(sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
