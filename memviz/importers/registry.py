"""The one registry of import formats: the built-in ones (importers/__init__.py) and a plugin's
(entry point group `memviz.importers`, memviz/plugins.py) go through `register_format`, which
checks what an `ImportFormat` declares. The CLI (`memviz import FORMAT`), the import dialog and
detection (detect.py, in registration order: a built-in format is tried before any plugin's)
read it. The plugins load when it is first listed."""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .. import plugins
from ..sniff import Sniff

GROUP = "memviz.importers"
#: what a format's run() may take beyond force and task, and what each means to the user
OPTIONS = {
    "reembed": "ignore the source's vectors and embed every record with the local model",
    "embedding_model": "the model that made the source's vectors (e.g. text-embedding-3-small)",
}
#: how a message names each option: the command line's flag and the import dialog's field
REEMBED = "--reembed (in the import dialog: Re-embed)"
EMBEDDING_MODEL = "--embedding-model NAME (in the import dialog: Vectors' model)"
#: a format's name is typed on the command line
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


@dataclass(frozen=True)
class ImportFormat:
    """One import format.

    `run(source, output, *, force=False, task=None, **options)` reads `source` (a file or folder,
    never changed) and writes a new native store at `output`, returning an ImportReport; build it
    on `importers.pipeline.run` (report, progress and cancel through `task`, the store written
    beside the output and moved into place). It raises ImportFailed (a message for the user),
    NotThisFormat when the source is another format, or Cancelled, and then nothing is written.
    `file(sniff)` / `folder(path)` say whether a file (its memviz.sniff.Sniff: head, JSON lines,
    one JSON document) or a folder is in this format, by its content; never a false match.
    `options`: which of OPTIONS its run() takes as keywords (the command line's --reembed and
    --embedding-model, the import dialog's fields); the others are not offered for it."""

    name: str                                     # as on the command line: `memviz import NAME`
    run: Callable[..., object]                    # import_<format>(source, output, **options)
    reads: str                                    # what it reads, for the message an unknown file gets
    file: Callable[[Sniff], bool] | None = None   # detection of a file in this format
    folder: Callable[[str], bool] | None = None   # detection of a folder in this format
    options: frozenset[str] = frozenset()         # of OPTIONS, the ones run() takes


def check_format(fmt) -> None:
    """Raise TypeError / ValueError saying what `fmt` lacks to be an import format."""
    if not isinstance(fmt, ImportFormat):
        raise TypeError(f"{fmt!r} is not an import format: make it a memviz.importers.ImportFormat")
    if not isinstance(fmt.name, str) or not _NAME.fullmatch(fmt.name):
        raise ValueError(f"an import format's name is typed on the command line: a short lower-case word, not {fmt.name!r}")
    if not isinstance(fmt.reads, str) or not fmt.reads.strip():
        raise ValueError(f"import format {fmt.name!r}: `reads` must say what it reads, not {fmt.reads!r}")
    if not callable(fmt.run):
        raise TypeError(f"import format {fmt.name!r}: run must be a function, not {fmt.run!r}")
    try:
        inspect.signature(fmt.run).bind("source", "output", force=False, task=None)
    except TypeError as e:
        raise TypeError(f"import format {fmt.name!r}: run cannot be called as memviz calls it, "
                        f"run(source, output, force=..., task=...): {e}") from None
    except ValueError:  # a builtin without a signature: called as it is
        pass
    if not isinstance(fmt.options, frozenset) or not fmt.options <= OPTIONS.keys():
        raise ValueError(f"import format {fmt.name!r}: options must be a frozenset of {sorted(OPTIONS)}, "
                         f"not {fmt.options!r}")
    for what in ("file", "folder"):
        test = getattr(fmt, what)
        if test is not None and not callable(test):
            raise TypeError(f"import format {fmt.name!r}: {what} must be a function or None, not {test!r}")


_FORMATS = plugins.Registry(GROUP, "an import format named", check_format, lambda fmt: fmt.name)


def register_format(fmt: ImportFormat, *, plugin: plugins.Plugin | None = None) -> str:
    """Make `fmt` importable by its name and detectable (after the formats registered before
    it); returns its name. Raises TypeError / ValueError saying what it lacks, or when the name
    is taken (the format there first wins: memviz's own are)."""
    return _FORMATS.register(fmt, plugin)


def load_plugins() -> None:
    """Register the installed plugins' import formats, once."""
    _FORMATS.load_plugins()


def formats() -> list[ImportFormat]:
    """Every registered format, in the order detection tries them."""
    return list(_FORMATS.values())


def import_format(name: str) -> ImportFormat | None:
    return _FORMATS.get(name)


def detects(fmt: ImportFormat, what: str, arg) -> bool:
    """Whether `fmt`'s `file` or `folder` test (`what`) says yes for `arg`; a plugin's test that
    raises is skipped from then on (memviz/plugins.py)."""
    test = getattr(fmt, what)
    return test is not None and bool(plugins.guarded(_FORMATS.plugin(fmt.name), test, arg, default=False,
                                                      doing=f"detecting {fmt.name!r}"))


#: format name (as on the command line) -> import function(source, output, **options)
FORMATS: Mapping[str, Callable] = _FORMATS.view(lambda fmt: fmt.run)
