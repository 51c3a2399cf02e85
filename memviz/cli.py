"""The `memviz` entry point: the window with no subcommand, headless subcommands otherwise.

Each subcommand lives in its own module under memviz/commands with `add_parser(subparsers)`
setting `func`; a command returns an exit code. A StoreError (or any error meant for the
user) becomes a one-line message and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .store.errors import StoreError
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
)

#: errors whose message is meant for the user (anything else is a bug and keeps its traceback)
USER_ERRORS: tuple[type[BaseException], ...] = (StoreError, ValueError, FileNotFoundError)


USAGE = "memviz [--read-only] [DB]\n       memviz COMMAND [options]   (memviz COMMAND --help for its options)"
WINDOW_HELP = """the window:
  memviz                 open the bundled sample store (a private copy in the user's data folder)
  memviz DB              open the memory store DB (a .db file) in the window
  memviz --read-only DB  open it without writing anything (edits are refused)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memviz", usage=USAGE, epilog=WINDOW_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Inspect, query and edit the long-term memory of LLM agents:\n"
                                                 "the window without a COMMAND, a headless command otherwise.")
    parser.add_argument("--version", action="version", version="memviz " + __import__("memviz").__version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not argv or (argv[0] not in parser._subparsers._group_actions[0].choices and (not argv[0].startswith("-") or argv[0] == "--read-only")):
        return open_window(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as e:
        print(f"memviz: error: {e}", file=sys.stderr)
        return 2
    except Cancelled as e:  # Ctrl-C during a long job (see commands/interrupt.py)
        print(f"memviz: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("memviz: interrupted", file=sys.stderr)
        return 130


def open_window(argv) -> int:
    from .app.main import run  # noqa: PLC0415 - Qt loads only for the window
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
