"""memviz's per-user folders that are not Qt's business (the core uses them headless)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir() -> Path:
    """memviz's per-user cache folder (MEMVIZ_CACHE_DIR overrides): numba's compiled UMAP, array snapshots."""
    return _user_dir("MEMVIZ_CACHE_DIR", ("LOCALAPPDATA", "AppData/Local"), "Library/Caches", ("XDG_CACHE_HOME", ".cache"))


def user_data_dir() -> Path:
    """memviz's per-user data folder (MEMVIZ_DATA_DIR overrides): the sample's private copy, imports."""
    return _user_dir("MEMVIZ_DATA_DIR", ("APPDATA", "AppData/Roaming"), "Library/Application Support",
                     ("XDG_DATA_HOME", ".local/share"))


def _user_dir(own: str, windows: tuple[str, str], mac: str, xdg: tuple[str, str]) -> Path:
    """memviz's folder under the platform's: `own` (an environment variable) names it outright;
    Windows and XDG: (variable, default under the home folder); macOS: under the home folder."""
    if os.environ.get(own):
        return Path(os.environ[own])
    if sys.platform == "darwin":
        return Path.home() / mac / "memviz"
    var, default = windows if sys.platform == "win32" else xdg
    return Path(os.environ.get(var) or Path.home() / default) / "memviz"
