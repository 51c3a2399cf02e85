"""memviz's icon, and its freedesktop desktop entry for the current user (no Qt).

`memviz --install-desktop-entry` writes `memviz.desktop` under `$XDG_DATA_HOME/applications`
and the icon under `$XDG_DATA_HOME/icons/hicolor` (`~/.local/share` when the variable is
unset), so memviz shows in the desktop's application menu and opens stores handed to it;
`--uninstall-desktop-entry` removes exactly those files. Where there is no freedesktop
desktop (not Linux or a BSD) or no data folder to write into, nothing is written and the
message says where the files would have gone.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

APP_ID = "memviz"  # the desktop entry's name; the window gives it to Qt (setDesktopFileName)
ICONS = Path(__file__).resolve().parent / "icons"
ICON_SVG = ICONS / "memviz.svg"
ICON_PNG = ICONS / "memviz.png"  # 256 × 256
#: the icon files in the hicolor theme, each from its packaged file
THEME_ICONS = {ICON_SVG: Path("icons/hicolor/scalable/apps/memviz.svg"),
               ICON_PNG: Path("icons/hicolor/256x256/apps/memviz.png")}
ENTRY = Path("applications") / f"{APP_ID}.desktop"


class DesktopUnavailable(OSError):
    """No freedesktop data folder to write into; the message says where memviz would have written."""


def data_home() -> Path:
    """The freedesktop user data folder: $XDG_DATA_HOME if set (and absolute), else ~/.local/share."""
    env = os.environ.get("XDG_DATA_HOME", "")
    return Path(env) if os.path.isabs(env) else Path.home() / ".local" / "share"


def entry_files(home: Path | None = None) -> list[Path]:
    """The files the desktop entry consists of: the .desktop file, then the icons."""
    home = home or data_home()
    return [home / ENTRY, *(home / rel for rel in THEME_ICONS.values())]


def launcher() -> list[str]:
    """The command that starts this memviz: its console script beside this Python (a pipx or
    venv install), else this Python with `-m memviz`."""
    script = Path(sys.executable).parent / ("memviz.exe" if sys.platform == "win32" else "memviz")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memviz"]


def desktop_entry(command: list[str]) -> str:
    """The text of memviz.desktop (Desktop Entry Specification 1.4) for `command`."""
    exec_line = " ".join(_quote(arg) for arg in command)
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        "Name=memviz",
        "GenericName=Agent memory inspector",
        "Comment=Inspect, query and edit the long-term memory of LLM agents",
        f"Exec={exec_line} %f",
        f"TryExec={_escape(command[0])}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Development;Database;Qt;",
        "Keywords=memory;agent;LLM;SQLite;embedding;retrieval;",
        f"StartupWMClass={APP_ID}",
        "",
    ])


def install(home: Path | None = None) -> list[Path]:
    """Write the desktop entry and its icons; returns the files written."""
    home = home or data_home()
    _usable(home, "written")
    entry, *icons = entry_files(home)
    for src, dst in zip(THEME_ICONS, icons):
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    entry.parent.mkdir(parents=True, exist_ok=True)
    part = entry.with_name(f".{entry.name}.part")  # a menu that rescans never reads half an entry
    part.write_text(desktop_entry(launcher()), encoding="utf-8")
    os.replace(part, entry)
    return [entry, *icons]


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove the desktop entry and its icons; returns the files removed (none: nothing was there)."""
    home = home or data_home()
    _usable(home, "removed")
    removed = []
    for path in entry_files(home):
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def _usable(home: Path, doing: str) -> None:
    where = "\n  ".join(str(p) for p in entry_files(home))
    if not (sys.platform.startswith("linux") or "bsd" in sys.platform):
        reason = f"desktop entries are a Linux/BSD desktop's ({sys.platform} has none)"
    elif not home.is_dir():
        reason = f"there is no data folder {home}"
    elif not os.access(home, os.W_OK | os.X_OK):
        reason = f"the data folder {home} cannot be written"
    else:
        return
    raise DesktopUnavailable(f"Nothing done: {reason}. The desktop entry would have been {doing} here:\n  {where}")


def _escape(arg: str) -> str:
    # a desktop entry's string escapes, then '%' doubled (a literal percent in Exec)
    return arg.replace("\\", "\\\\").replace("%", "%%")


def _quote(arg: str) -> str:
    """One Exec argument: quoted when it holds a reserved character, with `"`, `` ` ``, `$` and `\\` escaped."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`='):
        return _escape(arg)
    inner = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return '"' + _escape(inner) + '"'
