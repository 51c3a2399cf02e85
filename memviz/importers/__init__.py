"""Importers: other systems' agent memory turned into a new native store. No Qt here.

    from memviz.importers import import_source
    report = import_source("generative-agents", "path/to/persona", "out.db", task=task)

`task` (a memviz.tasks.Task, optional) gets the progress ("Importing done/total") and may be
cancelled.

Every importer reads its source without changing it, writes a store beside the output that
is moved into place only when complete, records its provenance in memviz_meta["import"], and
returns an ImportReport (what was imported, skipped and fixed up). It raises ImportFailed
(a ValueError with a message for the user) or memviz.tasks.Cancelled, and then nothing is written.
"""
from __future__ import annotations

from .ada_stream import import_ada_stream
from .detect import describe_unknown, detect_format, what_memviz_imports
from .generative_agents import import_generative_agents
from .letta_agent_file import import_letta_agent_file
from .openmemory import import_openmemory
from .pipeline import ImportFailed, ImportReport, Issue, NotThisFormat
from .record_dumps import import_jsonl

#: format name (as on the command line) -> import function(source, output, **options)
FORMATS = {
    "generative-agents": import_generative_agents,
    "ada-stream": import_ada_stream,
    "jsonl": import_jsonl,
    "openmemory": import_openmemory,
    "letta-af": import_letta_agent_file,
}


def import_source(fmt: str, source, output, **options) -> ImportReport:
    """Import `source` in format `fmt` into a new store at `output`; options as the format's
    function takes them (force, task, embedder, reembed, embedding_model)."""
    try:
        fn = FORMATS[fmt]
    except KeyError:
        raise ImportFailed(f"Unknown import format {fmt!r}; known: {', '.join(FORMATS)}.") from None
    try:
        return fn(source, output, **options)
    except NotThisFormat as e:
        found = detect_format(source)
        if found and found != fmt:
            raise NotThisFormat(f"{e} It looks like {found}: `memviz import {found} {source} -o …`.") from None
        raise NotThisFormat(f"{e} {what_memviz_imports()}." if not found else str(e)) from None


__all__ = ["FORMATS", "detect_format", "describe_unknown", "ImportFailed", "NotThisFormat", "ImportReport", "Issue",
           "import_source", "import_generative_agents", "import_ada_stream", "import_jsonl", "import_letta_agent_file",
           "import_openmemory"]
