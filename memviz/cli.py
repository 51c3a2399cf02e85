"""The `memviz` entry point: the window with no subcommand, headless subcommands otherwise.

Each subcommand lives in its own module under memviz/commands with `add_parser(subparsers)`
setting `func`; a command returns an exit code. A StoreError (or any error meant for the
user) becomes a one-line message and exit code 2, never a traceback; a raw SQLite error that a
command met outside the Store's methods (through `store.conn`) is translated here, the
command's one boundary, by the same `translate` the store uses. A plugin skipped (memviz/plugins.py)
is named in one line on stderr; the parser is first built without loading any (`memviz --help`
and the window need none there), then again with them for a command, whose options list them.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys

import apsw

from . import plugins
from .store.errors import StoreError, translate
from .tasks import Cancelled

COMMANDS = (
    "memviz.commands.stats",
    "memviz.commands.check",
    "memviz.commands.create",
    "memviz.commands.import_",
    "memviz.commands.edit",
    "memviz.commands.query",
    "memviz.commands.reflect",
    "memviz.commands.consolidate",
    "memviz.commands.context",
    "memviz.commands.diff",
    "memviz.commands.clock",
    "memviz.commands.copy",
    "memviz.commands.index",
    "memviz.commands.judge",
)

#: errors whose message is meant for the user (anything else is a bug and keeps its traceback)
USER_ERRORS: tuple[type[BaseException], ...] = (StoreError, apsw.Error, ValueError, OSError, MemoryError)


USAGE = "memviz [--read-only] [DB]\n       memviz COMMAND [options]   (memviz COMMAND --help for its options)"
WINDOW_HELP = """the window:
  memviz                 open the sample store (your own copy, made in your data folder on first use)
  memviz DB              open the memory store DB (a .db file) in the window
  memviz --read-only DB  open it without writing anything (edits are refused)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memviz", usage=USAGE, epilog=WINDOW_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Inspect, query and edit the long-term memory of LLM agents:\n"
                                                 "the window without a COMMAND, a headless command otherwise.")
    parser.add_argument("--version", action=_Version, nargs="?", metavar="DSN",
                        help="show the versions of memviz and what it runs on (Python, Qt, SQLite, sqlite-vec); "
                             "given a postgresql:// DSN, that server's and its pgvector's too")
    entry = parser.add_mutually_exclusive_group()
    entry.add_argument("--install-desktop-entry", action="store_true",
                       help="add memviz to your desktop's application menu (a freedesktop .desktop file and icon "
                            "under $XDG_DATA_HOME, default ~/.local/share)")
    entry.add_argument("--uninstall-desktop-entry", action="store_true",
                       help="remove what --install-desktop-entry wrote")
    # prog: a subcommand's usage starts `memviz COMMAND`, not the two-line USAGE above
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog="memviz")
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    with plugins.deferred():
        parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    if not argv or (argv[0] not in commands and (not argv[0].startswith("-") or argv[0] == "--read-only")):
        with _saying_skipped():
            return open_window(argv)
    if argv[0] in commands:  # its options list the registries (presets, import formats): with the plugins'
        with _saying_skipped():
            return _run(build_parser(), argv)
    return _run(parser, argv)  # --help; --version, which lists every plugin with its state


def _run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.command is None and not (args.install_desktop_entry or args.uninstall_desktop_entry):
        parser.error("give a COMMAND, or a store to open without options before it")  # e.g. `memviz -x`
    try:
        return int((args.func if args.command else _desktop_entry)(args) or 0)
    except BrokenPipeError:  # `memviz … | head` stopped reading: nothing is wrong, say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except USER_ERRORS as e:
        e = translate(e, getattr(args, "db", None))
        print(f"memviz: error: {e}" if str(e) else f"memviz: error: {type(e).__name__}", file=sys.stderr)
        return 2
    except Cancelled as e:  # Ctrl-C during a long job (see commands/interrupt.py)
        print(f"memviz: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("memviz: interrupted", file=sys.stderr)
        return 130


@contextlib.contextmanager
def _saying_skipped():
    """A plugin skipped meanwhile is named on stderr, in one line."""
    stop = plugins.listen(lambda plugin: print(f"memviz: {plugin.line()}", file=sys.stderr))
    try:
        yield
    finally:
        stop()


class _Version(argparse.Action):
    """--version [DSN]: the report is made only when asked (it loads sqlite-vec, maybe connects)."""

    def __call__(self, parser, namespace, value, option_string=None):
        from .about import report
        print(report(value))
        parser.exit()


def _desktop_entry(args) -> int:
    from . import desktop

    if args.install_desktop_entry:
        written = desktop.install()
        print("memviz is in your application menu now. Written:\n  " + "\n  ".join(map(str, written)))
    else:
        removed = desktop.uninstall()
        print("Removed:\n  " + "\n  ".join(map(str, removed)) if removed else
              "Nothing to remove: no memviz desktop entry in " + str(desktop.data_home()))
    return 0


def open_window(argv) -> int:
    missing = [name for name in ("PySide6", "pyqtgraph") if not _installed(name)]
    if missing:  # a headless install: the subcommands still work
        print(f"memviz: error: the window needs {' and '.join(missing)}, which is not installed here; "
              "install memviz with its dependencies (`pip install memviz`), or use a subcommand "
              "(`memviz --help`).", file=sys.stderr)
        return 2
    from .app.main import run  # Qt loads only for the window
    return run(argv)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: a module blanked out in sys.modules
        return False


if __name__ == "__main__":
    sys.exit(main())
