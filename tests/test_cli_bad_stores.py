"""Every CLI command over every bad store of issue 19 (cases 1, 2, 3, 8, 9, 10, 11) and issue 17.1,
each run as its own `python -m memviz` process: no run may print a Python traceback, and each ends
with 0 (done), 2 (a message saying why not) or, for `stats` / `check`, 1 (damage reported)."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bad_stores import (
    SAMPLE, LockHolder, bit_flips, cli_env, foreign_wal, index_missing_rows, rollback_journal, sample_copy, some_id,
    with_pending_wal,
)

from memviz.cli import COMMANDS

MID = some_id(SAMPLE)
HAS_CHECK = "memviz.commands.check" in COMMANDS
REPORTS_DAMAGE = ("stats", "check")  # their exit 1 means "damage found and reported"

# Python with memviz's CLI after a change to the process: the OS's answers (read-only media) or
# SQLite's heap (out of memory). argv[1] is the change, the rest the command line.
_WRAPPED = r"""
import os, sys
how, arg = sys.argv[1].split(":", 1)
if how == "readonly-folder":
    real = os.access
    os.access = lambda p, m, **k: False if m == os.W_OK and os.path.abspath(os.fspath(p)) == arg else real(p, m, **k)
elif how == "heap":
    import apsw
    apsw.hard_heap_limit(int(arg))
from memviz.cli import main
sys.exit(main(sys.argv[2:]))
"""


def commands(db: Path) -> list[list[str]]:
    # one run per command and per kind of edit (read, field edit, soft-delete, supersede); the
    # edits share one path below the command (edits.History), which test_store_faults covers in full
    out = [["stats", db], ["query", db, "tea with milk"],
           ["edit", db, "importance", "7", MID], ["edit", db, "delete", MID], ["edit", db, "correct", MID, "new text"],
           ["edit", db, "retired"], ["edit", db, "history", MID], ["consolidate", db, "--yes"], ["reflect", db, "--status"],
           ["reflect", db, "--dry-run", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "1", "--retries", "0"]]
    if HAS_CHECK:
        out.append(["check", db])
    return [[str(a) for a in c] for c in out]


def _capped(limit):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def run(cmd, wrap=None, preexec=None):
    argv = [sys.executable, "-c", _WRAPPED, wrap, *cmd] if wrap else [sys.executable, "-m", "memviz", *cmd]
    env = cli_env(MEMVIZ_LLM_API_KEY="test", OPENAI_API_KEY="test")
    r = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, preexec_fn=preexec,
                       stdin=subprocess.DEVNULL, timeout=180)
    return cmd, r


CASES = ["bit-flips", "index-out-of-step", "foreign-wal", "read-only-media", "file-size-limit", "out-of-memory",
         "exclusive-mode", "begin-exclusive", "killed-writer"]


@pytest.mark.parametrize("case", CASES)
def test_every_command_on_a_bad_store_ends_with_a_message_not_a_traceback(tmp_path, case):
    wrap = preexec = holder = None
    if case == "bit-flips":
        db = bit_flips(tmp_path)
    elif case == "index-out-of-step":
        db = index_missing_rows(tmp_path)
    elif case == "foreign-wal":
        db = foreign_wal(tmp_path)
    elif case == "read-only-media":
        db = with_pending_wal(tmp_path / "media")
        wrap = f"readonly-folder:{db.parent}"
    elif case == "file-size-limit":
        db = sample_copy(tmp_path)
        preexec = _capped(60_000)
    elif case == "out-of-memory":
        db = sample_copy(tmp_path)
        wrap = f"heap:{384 << 10}"
    elif case == "exclusive-mode":
        db = sample_copy(tmp_path)
        holder = LockHolder(db, "exclusive-mode")
    elif case == "begin-exclusive":
        db = rollback_journal(tmp_path)
        holder = LockHolder(db, "begin-exclusive")
    else:
        db = rollback_journal(tmp_path)
        from test_store_errors import _KILLED_WRITER
        subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(db)], check=True, timeout=60)
    try:
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda c: run(c, wrap, preexec), commands(db)))
    finally:
        if holder:
            holder.close()
    bad = []
    for cmd, r in results:
        allowed = (0, 1, 2) if cmd[0] in REPORTS_DAMAGE else (0, 2)
        if "Traceback" in r.stderr or r.returncode not in allowed:
            bad.append(f"memviz {' '.join(cmd)} -> {r.returncode}\n{r.stderr[-1500:]}")
        elif r.returncode == 2:
            assert r.stderr.strip().splitlines()[-1].startswith("memviz: error: "), r.stderr
    assert not bad, "\n\n".join(bad)
    if case in ("exclusive-mode", "begin-exclusive"):
        assert all("in exclusive use by another process" in r.stderr for _, r in results if r.returncode == 2)
    if case == "read-only-media":
        assert sorted(os.listdir(db.parent)) == sorted([db.name, db.name + "-wal"])
