"""Importers: other systems' agent memory turned into a new native store. No Qt here.

    from memviz.importers import import_source
    report = import_source("generative-agents", "path/to/persona", "out.db", task=task)

`task` (a memviz.tasks.Task, optional) gets the progress ("Importing done/total") and may be
cancelled.

Every importer reads its source without changing it, writes a store beside the output that
is moved into place only when complete, records its provenance in memviz_meta["import"], and
returns an ImportReport (what was imported, skipped and fixed up). It raises ImportFailed
(a ValueError with a message for the user) or memviz.tasks.Cancelled, and then nothing is written.

Each format is an `ImportFormat` (registry.py) registered with `register_format`: the built-in
ones below, in the order detection tries them, and a plugin's (entry point group
`memviz.importers`) after them.
"""
from __future__ import annotations

from . import detect
from .ada_stream import import_ada_stream
from .detect import describe_unknown, detect_format, what_memviz_imports
from .generative_agents import import_generative_agents
from .letta_agent_file import import_letta_agent_file
from .openmemory import import_openmemory
from .pipeline import ImportFailed, ImportReport, Issue, NotThisFormat
from .record_dumps import import_jsonl
from .registry import FORMATS, OPTIONS, ImportFormat, check_format, formats, import_format, load_plugins, register_format

for _f in (
    ImportFormat("generative-agents", import_generative_agents,
                 "Generative Agents memory (a folder with associative_memory/nodes.json)", folder=detect.generative_agents,
                 options=frozenset({"reembed"})),
    ImportFormat("openmemory", import_openmemory,  # before the JSON formats
                 "OpenMemory exports (the export zip, memories.json or memories.jsonl.gz)", file=detect.openmemory),
    ImportFormat("letta-af", import_letta_agent_file, "Letta agent files (.af)", file=detect.letta_agent_file),
    ImportFormat("ada-stream", import_ada_stream, "ADA memory streams (stream.jsonl)", file=detect.ada_stream),
    ImportFormat("jsonl", import_jsonl, "JSON Lines record dumps ({id, content, embedding?, metadata} per line, "
                                        "or a JSON array of them)", file=detect.record_dump,
                 options=frozenset({"reembed", "embedding_model"})),
):
    register_format(_f)
del _f


def import_source(fmt: str, source, output, **options) -> ImportReport:
    """Import `source` in format `fmt` into a new store at `output`; options as the format's
    function takes them (force, task, embedder, reembed, embedding_model)."""
    found_fmt = import_format(fmt)
    if found_fmt is None:
        raise ImportFailed(f"Unknown import format {fmt!r}; known: {', '.join(FORMATS)}.")
    try:
        report = found_fmt.run(source, output, **options)
    except NotThisFormat as e:
        found = detect_format(source)
        if found and found != fmt:
            raise NotThisFormat(f"{e} It looks like {found}: `memviz import {found} {source} -o …`.") from None
        raise NotThisFormat(f"{e} {what_memviz_imports()}." if not found else str(e)) from None
    if not isinstance(report, ImportReport):  # a plugin's importer: what it answers is checked where it enters
        raise ImportFailed(f"The importer of {fmt!r} answered {type(report).__name__}, not an ImportReport: "
                           "whether it wrote the store is not known.")
    return report


__all__ = ["FORMATS", "OPTIONS", "ImportFormat", "detect_format", "describe_unknown", "ImportFailed", "NotThisFormat",
           "ImportReport", "Issue", "check_format", "formats", "import_source", "import_format", "load_plugins",
           "register_format", "import_generative_agents", "import_ada_stream", "import_jsonl", "import_letta_agent_file",
           "import_openmemory"]
