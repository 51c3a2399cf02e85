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
