"""The `memviz` command line: stats and create, with user errors as one line and exit code 2."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import memviz.store as ms
from memviz.cli import COMMANDS, build_parser, main

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dbs" / "assistant.db"


def test_create_then_stats(tmp_path, capsys):
    p = str(tmp_path / "new.db")
    assert main(["create", p]) == 0
    s = ms.open(p)
    s.insert_memories([dict(kind="fact", agent="ann", content="a", event_time="2026-01-02T03:04:05"),
                       dict(kind="episode", agent="bob", content="b", event_time="2026-02-01", valid_until=1)])
    s.close()
    capsys.readouterr()
    assert main(["stats", p]) == 0
    out = capsys.readouterr().out
    assert "memories: 2  live 1  retired 1" in out
    assert "2026-01-02 03:04:05 .. 2026-02-01 00:00:00" in out
    assert "integrity: ok" in out
    assert "read-only" not in out, "stats opens read-only itself; the store is writable"
    assert main(["stats", "--json", p]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["read_only"] is None
    assert info["counts"]["by_agent"] == {"ann": [1, 0], "bob": [0, 1]}


def test_create_refuses_existing(tmp_path, capsys):
    p = tmp_path / "x.db"
    p.write_text("keep me")
    assert main(["create", str(p)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert p.read_text() == "keep me"


def test_entry_point_runs_as_a_process(tmp_path):
    r = subprocess.run([sys.executable, "-m", "memviz.cli", "stats", str(tmp_path / "missing.db")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith("memviz: error: No such file") and "Traceback" not in r.stderr


def test_the_window_without_qt_says_what_is_missing(tmp_path):
    """A headless install (no PySide6): `memviz` with no subcommand ends in a message, not a traceback."""
    code = ("import sys; sys.modules['PySide6'] = None; sys.modules['pyqtgraph'] = None\n"
            "from memviz.cli import main; sys.exit(main([]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "the window needs PySide6 and pyqtgraph" in p.stderr and "Traceback" not in p.stderr


def test_output_cut_short_by_a_closed_pipe_is_not_an_error(tmp_path):
    """`memviz context … | head -c 1`: the reader stops early (the output, 150 kB, is more than a
    pipe holds); memviz ends quietly, no traceback."""
    db = str(tmp_path / "s.db")
    shutil.copyfile(SAMPLE, db)
    sh = f"{sys.executable} -m memviz context {db} --json | head -c 1"
    p = subprocess.run(["bash", "-o", "pipefail", "-c", sh], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr, p.stderr


def test_every_subcommands_help_starts_with_its_own_usage(capsys):
    """`memviz import --help` reads `usage: memviz import [-h] …`, not the window's two-line usage
    with the subcommand's tacked on."""
    names = list(build_parser()._subparsers._group_actions[0].choices)
    assert len(names) == len(COMMANDS)
    for name in names:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: memviz {name} [-h]"), out[:200]
        assert "COMMAND" not in out.split("\n\n")[0] and "[DB]" not in out, out[:200]
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert " ".join(usage.split()) == "usage: memviz import [-h] -o OUTPUT [--force] [--reembed] " \
                                      "[--embedding-model NAME] [--json] FORMAT SOURCE"
