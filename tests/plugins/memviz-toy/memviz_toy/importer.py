"""An import format: a text file of dated notes, made into a new memviz store.

    # toy notes
    2025-03-01T09:00:00Z	The user likes green tea.
"""
from __future__ import annotations

from memviz.importers import ImportFormat
from memviz.importers.pipeline import Prepared, run

from .embedder import HashEmbedder

FIRST_LINE = "# toy notes"


def looks_like(sniff) -> bool:
    return sniff.raw_head.lstrip(b"\xef\xbb\xbf").startswith(FIRST_LINE.encode())


def read(path, report, task, *, embedder=None) -> Prepared:
    prep = Prepared()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if n == 1 or not line.strip():
                continue
            when, sep, text = line.rstrip("\n").partition("\t")
            if not sep or not text.strip():
                report.skip(f"line {n}", "no-text", "expected a time, a tab and the note")
                continue
            prep.add({"id": f"note-{n}", "agent": "toy", "kind": "fact", "content": text.strip(),
                      "created_at": when, "event_time": when}, f"line {n}", embed_text=text.strip())
    return prep


def import_toy_notes(source, output, *, force=False, task=None, **options):
    return run(read, "toy-notes", source, output, force=force, task=task, embedder=HashEmbedder())


TOY_NOTES = ImportFormat("toy-notes", import_toy_notes, "toy notes (a text file starting `# toy notes`)",
                         file=looks_like)
