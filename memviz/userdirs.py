"""memviz's per-user folders that are not Qt's business (the core uses them headless)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir() -> Path:
    """memviz's per-user cache folder (MEMVIZ_CACHE_DIR overrides): numba's compiled UMAP, array snapshots."""
    if os.environ.get("MEMVIZ_CACHE_DIR"):
        return Path(os.environ["MEMVIZ_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memviz"


def user_data_dir() -> Path:
    """memviz's per-user data folder (MEMVIZ_DATA_DIR overrides): the sample's private copy, imports."""
    if os.environ.get("MEMVIZ_DATA_DIR"):
        return Path(os.environ["MEMVIZ_DATA_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "memviz"
