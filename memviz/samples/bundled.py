"""The sample store the window opens when it is given no path: the user's own copy in the
user's data folder, made on first use by the deterministic sample generator (no Qt: the
launcher and the window both use it, so neither imports the other).

It is generated rather than shipped: the generator is in the package anyway, so an installed
memviz needs no data file beside it, and the copy is always at the installed schema. Making it
takes a second or two, once (the window shows its progress); afterwards the copy is the
user's, edits and all."""
from __future__ import annotations

import os
from pathlib import Path

from ..tasks import Task, quiet
from ..userdirs import user_data_dir
from . import generate_assistant
from .common import remove_store_files

SAMPLE_NAME = "assistant.db"


def user_sample_path() -> Path:
    """Where the user's copy of the sample is (or will be made)."""
    return user_data_dir() / "samples" / SAMPLE_NAME


def user_sample(task: Task | None = None) -> str:
    """The path of the user's copy of the sample store, made first if there is none. Raises
    OSError saying what went wrong (the data folder cannot be made or written), or Cancelled."""
    dst = user_sample_path()
    if dst.exists():
        return str(dst)
    task = task or quiet()
    task.progress(-1, "Making the sample store (first run)")
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OSError(f"Cannot make the sample store: the folder {dst.parent} cannot be created "
                      f"({e.strerror or e}). Set MEMVIZ_DATA_DIR to a folder you can write, or open a store "
                      "with File ▸ Open.") from None
    part = dst.parent / f".{SAMPLE_NAME}.{os.getpid()}.part"  # never opened as the sample while half made
    try:
        generate_assistant(part, task=task)
        _publish(part, dst)
    except OSError as e:
        raise OSError(f"Cannot make the sample store in {dst.parent}: {e.strerror or e}. Set MEMVIZ_DATA_DIR "
                      "to a folder you can write, or open a store with File ▸ Open.") from None
    finally:
        remove_store_files(str(part))
    return str(dst)


def _publish(part: Path, dst: Path) -> None:
    """Give the finished file its name unless another memviz made the sample meanwhile: that one
    may be open already, so it is never replaced under it (a hard link fails if dst exists)."""
    try:
        os.link(part, dst)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not dst.exists():
            os.replace(part, dst)
