"""The manual: its pages (Markdown, in this folder, installed with memviz) and their order.

Both readers follow `NAV`: the site (`mkdocs build`: mkdocs.yml's docs_dir is this folder, and
docs/hooks/manual.py gives MkDocs this navigation) and the window's Help ▸ User guide
(app/dialogs/help_dialogs.py), which works from an installed wheel. A page named in NAV that
is not in this folder (the checkout's ARCHITECTURE.md and GLOSSARY.md, which the site adds) is
shown by the guide only where the source tree is; the pictures too (assets/, not installed).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parents[1]  # the checkout, when memviz runs from one

#: (title, file) or (section title, [(title, file), …]), in the order the site and the guide list them
NAV: list = [
    ("Home", "index.md"),
    ("Getting started", "getting-started.md"),
    ("The window", "window.md"),
    ("Tasks", [
        ("Open your agent's memory", "open-memory.md"),
        ("Find out why something was retrieved", "why-retrieved.md"),
        ("Fix a fact", "fix-a-fact.md"),
        ("Protect what matters", "protect.md"),
        ("Remove junk", "remove-junk.md"),
        ("Tune the weights", "tune-weights.md"),
        ("Watch the agent live", "watch-live.md"),
        ("See what the agent sees", "agent-view.md"),
        ("Reflection and consolidation", "reflection.md"),
        ("Check and repair a store", "check-and-repair.md"),
    ]),
    ("Reference", [
        ("Command line", "cli.md"),
        ("PostgreSQL stores", "postgresql.md"),
        ("The store and the Python API", "store.md"),
        ("Performance", "performance.md"),
        ("Troubleshooting", "troubleshooting.md"),
        ("Writing a plugin", "plugins.md"),
        ("Glossary", "GLOSSARY.md"),
        ("Architecture", "ARCHITECTURE.md"),
        ("Development", "development.md"),
    ]),
]
ROOT_PAGES = ("ARCHITECTURE.md", "GLOSSARY.md")  # pages the site takes from the checkout's root
#: the line of cli.md the site replaces with every command's --help (docs/hooks/manual.py)
CLI_MARKER = "<!-- the command reference is generated here (docs/hooks/manual.py) -->"


@dataclass(frozen=True)
class Page:
    title: str
    file: str          # as NAV and the pages' links name it
    section: str       # "" at the top level
    path: Path | None  # where it is here (None: not on this machine)


def checkout() -> Path | None:
    """The source tree memviz runs from (None: an installed memviz)."""
    return SOURCE_ROOT if (SOURCE_ROOT / "mkdocs.yml").is_file() else None


def page_path(file: str) -> Path | None:
    """Where a page named in NAV is: this folder, or the checkout's root for ROOT_PAGES."""
    folder = checkout() if file in ROOT_PAGES else HERE
    return folder / file if folder is not None and (folder / file).is_file() else None


def pages() -> list[Page]:
    """Every page of NAV in order, with where it is."""
    out = []
    for title, entry in NAV:
        for t, file in (entry if isinstance(entry, list) else [(title, entry)]):
            out.append(Page(t, file, title if isinstance(entry, list) else "", page_path(file)))
    return out


def assets_dir() -> Path | None:
    """The screenshots the pages show (the checkout's assets/; an installed memviz has none)."""
    root = checkout()
    return root / "assets" if root is not None and (root / "assets").is_dir() else None
