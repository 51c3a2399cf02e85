"""Every CLI command over every bad store of issue 19 (cases 1, 2, 3, 8, 9, 10, 11) and issue 17.1,
each run as its own process: no run may print a Python traceback, and each ends
with 0 (done), 2 (a message saying why not) or, for `stats` / `check`, 1 (damage reported)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_stores import (
    LockHolder,
    bit_flips,
    cli_env,
    foreign_wal,
    index_missing_rows,
    pristine_sample,
    rollback_journal,
    sample_copy,
    some_id,
    with_pending_wal,
)

from memviz.cli import COMMANDS

MID = some_id(pristine_sample())
HAS_CHECK = "memviz.commands.check" in COMMANDS
REPORTS_DAMAGE = ("stats", "check")  # their exit 1 means "damage found and reported"

# One Python process per bad store runs every command, each in its own forked child: the imports
# are paid once, yet each command is a separate process with its own stdout, stderr and exit code,
# and the child's state cannot leak into the next command. A child first applies the case's change
# to the process (the OS's answers for read-only media, SQLite's heap, the file size limit), then
# runs `memviz.cli.main` as `python -m memviz` would, printing any escaping exception as Python does.
_DRIVER = r"""
import json, os, resource, signal, sys, tempfile, traceback
how, arg = sys.argv[1].split(":", 1)
from memviz.cli import main

def child(cmd, out, err):
    os.dup2(out, 1); os.dup2(err, 2)
    if how == "readonly-folder":
        real = os.access
        os.access = lambda p, m, **k: False if m == os.W_OK and os.path.abspath(os.fspath(p)) == arg else real(p, m, **k)
    elif how == "heap":
        import apsw
        apsw.hard_heap_limit(int(arg))
    elif how == "fsize":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(arg), int(arg)))
    try:
        code = main(cmd)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(code)

results = []
for cmd in json.loads(sys.argv[2]):
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            child(cmd, out.fileno(), err.fileno())
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        results.append([cmd, os.waitstatus_to_exitcode(status), err.read().decode("utf-8", "replace")])
print(json.dumps(results))
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


def run_all(cmds, change="none:"):
    env = cli_env(MEMVIZ_LLM_API_KEY="test", OPENAI_API_KEY="test")
    r = subprocess.run([sys.executable, "-c", _DRIVER, change, json.dumps(cmds)], check=False, capture_output=True,
                       text=True, env=env, stdin=subprocess.DEVNULL, timeout=420)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


CASES = ["bit-flips", "index-out-of-step", "foreign-wal", "read-only-media", "file-size-limit", "out-of-memory",
         "exclusive-mode", "begin-exclusive", "killed-writer"]


@pytest.mark.parametrize("case", CASES)
def test_every_command_on_a_bad_store_ends_with_a_message_not_a_traceback(tmp_path, case):
    change, holder = "none:", None
    if case == "bit-flips":
        db = bit_flips(tmp_path)
    elif case == "index-out-of-step":
        db = index_missing_rows(tmp_path)
    elif case == "foreign-wal":
        db = foreign_wal(tmp_path)
    elif case == "read-only-media":
        db = with_pending_wal(tmp_path / "media")
        change = f"readonly-folder:{db.parent}"
    elif case == "file-size-limit":
        db = sample_copy(tmp_path)
        change = "fsize:60000"
    elif case == "out-of-memory":
        db = sample_copy(tmp_path)
        change = f"heap:{384 << 10}"
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
        results = run_all(commands(db), change)
    finally:
        if holder:
            holder.close()
    bad = []
    for cmd, code, stderr in results:
        allowed = (0, 1, 2) if cmd[0] in REPORTS_DAMAGE else (0, 2)
        if "Traceback" in stderr or code not in allowed:
            bad.append(f"memviz {' '.join(cmd)} -> {code}\n{stderr[-1500:]}")
        elif code == 2:
            assert stderr.strip().splitlines()[-1].startswith("memviz: error: "), stderr
    assert not bad, "\n\n".join(bad)
    if case in ("exclusive-mode", "begin-exclusive"):
        assert all("in exclusive use by another process" in err for _, code, err in results if code == 2)
    if case == "read-only-media":
        assert sorted(os.listdir(db.parent)) == sorted([db.name, db.name + "-wal"])
