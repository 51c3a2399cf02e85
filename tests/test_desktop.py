"""Installing memviz like an app: `memviz --install-desktop-entry` / `--uninstall-desktop-entry`
(memviz/desktop.py) and `memviz --version` (memviz/about.py)."""
from __future__ import annotations

import configparser
import importlib.util
import subprocess
import sys

import apsw
import pytest
from pg_server import pg, pg_db  # noqa: F401 - fixtures

import memviz
from memviz import desktop
from memviz.about import report
from memviz.cli import main


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    home = tmp_path / "share"
    home.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def read_entry(path) -> configparser.SectionProxy:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str  # keys are case-sensitive
    cp.read(path, encoding="utf-8")
    return cp["Desktop Entry"]


def exec_args(exec_line: str) -> list[str]:
    """An Exec value read back as the Desktop Entry Specification says: the string escapes
    (\\\\ is a backslash), then the quoting (in double quotes a backslash escapes " ` $ and
    itself), then the field codes (%f dropped, %% a percent)."""
    text = exec_line.replace("\\\\", "\\")
    args, cur, quoted, started, i = [], "", False, False, 0
    while i < len(text):
        c = text[i]
        if quoted and c == "\\" and text[i + 1:i + 2] in ('"', "`", "$", "\\"):
            cur, i = cur + text[i + 1], i + 2
            continue
        if c == '"':
            quoted, started = not quoted, True
        elif c == " " and not quoted:
            if cur or started:
                args.append(cur)
            cur, started = "", False
        else:
            cur += c
        i += 1
    if cur or started:
        args.append(cur)
    return [a.replace("%%", "%") for a in args if a != "%f"]


def test_install_writes_the_entry_and_icons_for_this_memviz(data_home, capsys):
    assert main(["--install-desktop-entry"]) == 0
    out = capsys.readouterr().out
    entry_file = data_home / "applications" / "memviz.desktop"
    svg = data_home / "icons" / "hicolor" / "scalable" / "apps" / "memviz.svg"
    png = data_home / "icons" / "hicolor" / "256x256" / "apps" / "memviz.png"
    for f in (entry_file, svg, png):
        assert str(f) in out
    assert svg.read_bytes() == desktop.ICON_SVG.read_bytes() and png.read_bytes() == desktop.ICON_PNG.read_bytes()
    entry = read_entry(entry_file)
    assert entry["Type"] == "Application" and entry["Name"] == "memviz" and entry["Icon"] == "memviz"
    assert entry["Exec"].endswith(" %f")  # a store handed to it opens
    assert exec_args(entry["Exec"]) == desktop.launcher()
    assert entry["Categories"].endswith(";") and entry["Terminal"] == "false"
    assert not list((data_home / "applications").glob(".*"))  # no half-written file left
    assert main(["--install-desktop-entry"]) == 0  # again: the same files, replaced
    assert sorted(p.name for p in data_home.rglob("*") if p.is_file()) == ["memviz.desktop", "memviz.png", "memviz.svg"]


def test_the_launcher_is_the_console_script_of_this_install(monkeypatch, tmp_path):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    assert desktop.launcher() == [str(bin_dir / "python"), "-m", "memviz"]  # no console script beside it
    (bin_dir / "memviz").write_text("#!/bin/sh\n")
    assert desktop.launcher() == [str(bin_dir / "memviz")]


@pytest.mark.parametrize("command", [
    ["/opt/my apps/python", "-m", "memviz"],
    ['/home/ann/we"ird $dir\\x`y/memviz'],
    ["/srv/100%/memviz"],
])
def test_exec_quotes_what_the_spec_reserves(command):
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read_string(desktop.desktop_entry(command))
    line = entry["Desktop Entry"]["Exec"]
    assert exec_args(line) == command
    inner = line[1:line.index('" ', 1)] if line.startswith('"') else ""
    for c in '"`$':  # escaped inside the quotes ("\\" at the string level, then the character)
        assert inner.count(c) == inner.count("\\\\" + c)


def test_uninstall_removes_exactly_those_files(data_home, capsys):
    other = data_home / "applications" / "editor.desktop"
    other.parent.mkdir()
    other.write_text("[Desktop Entry]\n")
    desktop.install()
    capsys.readouterr()
    assert main(["--uninstall-desktop-entry"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Removed:") and "memviz.desktop" in out and "memviz.png" in out
    assert [p for p in data_home.rglob("*") if p.is_file()] == [other]
    assert main(["--uninstall-desktop-entry"]) == 0
    assert "Nothing to remove" in capsys.readouterr().out


def test_without_a_data_folder_nothing_is_written_and_it_says_where(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "no" / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(missing))
    assert main(["--install-desktop-entry"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memviz: error: Nothing done: there is no data folder") and "Traceback" not in err
    assert str(missing / "applications" / "memviz.desktop") in err
    assert str(missing / "icons" / "hicolor" / "256x256" / "apps" / "memviz.png") in err
    assert not (tmp_path / "no").exists()
    afile = tmp_path / "share-is-a-file"
    afile.write_text("x")
    monkeypatch.setenv("XDG_DATA_HOME", str(afile))
    assert main(["--uninstall-desktop-entry"]) == 2
    assert "would have been removed here" in capsys.readouterr().err and afile.read_text() == "x"


def test_on_a_desktop_without_freedesktop_entries_nothing_is_written(data_home, monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(desktop.DesktopUnavailable) as e:
        desktop.install()
    assert "darwin has none" in str(e.value) and str(data_home / "applications" / "memviz.desktop") in str(e.value)
    assert not any(data_home.iterdir())


def test_a_relative_xdg_data_home_is_ignored_as_the_spec_says(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")
    assert desktop.data_home() == tmp_path / ".local" / "share"


def test_install_and_uninstall_are_one_or_the_other(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--install-desktop-entry", "--uninstall-desktop-entry"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err


# ---------------------------------------------------------------- --version

def test_version_names_memviz_and_what_it_runs_on(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"memviz {memviz.__version__} (") and memviz.__file__.startswith(lines[0].split("(")[1][:-1])
    assert lines[1].startswith(f"Python {sys.version.split()[0]} ")
    if importlib.util.find_spec("PySide6") is None:   # the no-Qt run: the commands work, the window is said missing
        assert lines[2].startswith("Qt: not installed")
    else:
        assert lines[2].startswith("Qt 6.") and "PySide6 6." in lines[2] and "pyqtgraph" in lines[2]
    assert lines[3] == f"SQLite {apsw.sqlite_lib_version()} (apsw {apsw.apsw_version()})"
    assert lines[4].startswith("sqlite-vec v0.")
    assert lines[5].startswith("psycopg 3.") and "memviz --version postgresql://" in lines[5]


def test_version_loads_no_qt():
    code = ("import sys\nfrom memviz.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]" and out.stdout.startswith("memviz ")


def test_version_of_a_server_names_postgresql_and_pgvector(pg_db):  # noqa: F811
    import psycopg
    text = report(pg_db)
    assert "no pgvector in this database (CREATE EXTENSION vector;)" in text.splitlines()[-1]
    with psycopg.connect(pg_db, autocommit=True) as c:
        c.execute("CREATE EXTENSION vector")
        server = c.execute("SHOW server_version").fetchone()[0]
        vector = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    last = report(pg_db).splitlines()[-1]
    assert last.startswith(f"PostgreSQL {server} at ") and last.endswith(f", pgvector {vector}")


def test_version_of_an_unreachable_server_or_a_file_says_so_and_still_reports(capsys, tmp_path):
    dsn = "postgresql://ann:secret@127.0.0.1:1/memory"
    with pytest.raises(SystemExit) as e:
        main(["--version", dsn])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("memviz ") and "secret" not in out
    assert "Cannot reach the PostgreSQL server" in out.splitlines()[-1]
    assert "not a PostgreSQL connection string" in report(str(tmp_path / "x.db")).splitlines()[-1]
