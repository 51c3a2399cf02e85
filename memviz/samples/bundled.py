"""The sample store shipped beside the package, and the user's private copy of it (no Qt:
the launcher and the window both use it, so neither imports the other)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..userdirs import user_data_dir

SAMPLE_NAME = "assistant.db"


def bundled_sample() -> Path:
    """sample_dbs/assistant.db next to the package (the repository / source install)."""
    return Path(__file__).resolve().parents[2] / "sample_dbs" / SAMPLE_NAME


def user_sample_copy() -> str:
    """The user's own copy of the sample store (made on first use). Raises OSError if there is none."""
    src = bundled_sample()
    folder = user_data_dir() / "samples"
    dst = folder / SAMPLE_NAME
    if not dst.exists():
        if not src.exists():
            raise OSError(f"The sample store is not installed ({src} is missing). Open a store with File ▸ Open.")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_suffix(".db.part")
        shutil.copyfile(src, tmp)  # a copy of a closed file; renamed so a half copy is never opened
        os.replace(tmp, dst)
    return str(dst)
