"""mkdocs hooks (mkdocs.yml `hooks:`): the manual is made from what the repository holds, once.

- The pages are memviz/manual/*.md (installed with memviz, for Help ▸ User guide); their order
  is memviz.manual.NAV, which both the site and the window's guide follow.
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
HELP_COLUMNS = "80"  # argparse wraps to the terminal's width; the page's code blocks hold 80 characters


def _memviz(module: str):
    """A module of the checkout's memviz (the one beside this file, whatever is installed)."""
    import importlib

    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(ROOT))


def on_config(config):
    manual = _memviz("memviz.manual")
    config["nav"] = [{title: entry if isinstance(entry, str) else [{t: f} for t, f in entry]}
                     for title, entry in manual.NAV]
    return config


def on_files(files, config):
    for picture in sorted((ROOT / "assets").iterdir()):
        if picture.suffix in (".png", ".svg"):
            files.append(File.generated(config, f"assets/{picture.name}", abs_src_path=str(picture)))
    for name in _memviz("memviz.manual").ROOT_PAGES:
        files.append(File.generated(config, name, abs_src_path=str(ROOT / name)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "cli.md":
        return markdown
    marker = _memviz("memviz.manual").CLI_MARKER
    if marker not in markdown:
        raise ValueError(f"cli.md lost its marker line: {marker}")
    return markdown.replace(marker, cli_reference())


def cli_reference() -> str:
    """`memviz --help`, then each command's help, as Markdown sections."""
    build_parser = _memviz("memviz.cli").build_parser
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
