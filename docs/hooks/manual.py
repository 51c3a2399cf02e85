"""mkdocs hooks (mkdocs.yml `hooks:`): the manual is made from what the repository holds, once.

- The pictures in assets/ (the screenshots the README shows, the icon) are served as `assets/…`
  from where they are; scripts/ regenerate them there.
- ARCHITECTURE.md and GLOSSARY.md at the root become pages of the manual as they stand.
- In cli.md the marker line is replaced by `memviz --help` and every command's `--help`, from
  memviz's own argument parser at build time, so the reference is what the installed CLI says.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
ROOT_PAGES = ("ARCHITECTURE.md", "GLOSSARY.md")
CLI_MARKER = "<!-- the command reference is generated here (docs/hooks/manual.py) -->"
HELP_COLUMNS = "80"  # argparse wraps to the terminal's width; the page's code blocks hold 80 characters


def on_files(files, config):
    for picture in sorted((ROOT / "assets").iterdir()):
        if picture.suffix in (".png", ".svg"):
            files.append(File.generated(config, f"assets/{picture.name}", abs_src_path=str(picture)))
    for name in ROOT_PAGES:
        files.append(File.generated(config, name, abs_src_path=str(ROOT / name)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "cli.md":
        return markdown
    if CLI_MARKER not in markdown:
        raise ValueError(f"cli.md lost its marker line: {CLI_MARKER}")
    return markdown.replace(CLI_MARKER, cli_reference())


def cli_reference() -> str:
    """`memviz --help`, then each command's help, as Markdown sections."""
    sys.path.insert(0, str(ROOT))
    try:
        from memviz.cli import build_parser
    finally:
        sys.path.remove(str(ROOT))
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = build_parser()
        sections = [("memviz", parser.format_help())]
        commands = parser._subparsers._group_actions[0].choices  # argparse has no public accessor
        sections += [(f"memviz {name}", sub.format_help()) for name, sub in commands.items()]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(f"## `{title}`\n\n```text\n{text.rstrip()}\n```\n" for title, text in sections)
