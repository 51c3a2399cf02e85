"""`memviz import FORMAT SOURCE -o store.db`: another system's memory as a new native store."""
import json
import sys

from ..importers import FORMATS, import_format, import_source
from .interrupt import command_task


def add_parser(sub):
    p = sub.add_parser("import", help="import another system's agent memory into a new store",
                       description="Read SOURCE (never changed) and write a new native store. Formats: "
                                   "generative-agents (a persona's associative_memory folder, a persona folder, or "
                                   "a storage folder of personas), ada-stream (stream.jsonl), jsonl "
                                    "({id, content, embedding?, metadata} per line), letta-af (a Letta agent file), "
                                    "openmemory (OpenMemory's export: the zip, memories.json or memories.jsonl.gz).")
    p.add_argument("format", choices=sorted(FORMATS), metavar="FORMAT", help=", ".join(sorted(FORMATS)))
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("-o", "--output", required=True,
                   help="the store to write: a file (must not exist unless --force) or postgresql://… (an empty database)")
    p.add_argument("--force", action="store_true", help="replace the output if it exists")
    p.add_argument("--reembed", action="store_true",
                   help="ignore vectors in the source and embed everything with the local model")
    p.add_argument("--embedding-model", metavar="NAME",
                   help="jsonl: the model that made the records' vectors (e.g. text-embedding-3-small)")
    p.add_argument("--json", action="store_true", help="print the import report as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    options = {"force": args.force}
    takes = import_format(args.format).options
    if "reembed" in takes:
        options["reembed"] = args.reembed
    elif args.reembed:
        print(f"memviz: note: --reembed has no effect for {args.format} (it is always embedded locally)", file=sys.stderr)
    if args.embedding_model:
        if "embedding_model" not in takes:
            raise ValueError(f"--embedding-model does not apply to the {args.format} format")
        options["embedding_model"] = args.embedding_model
    with command_task("import") as task:  # Ctrl-C cancels: nothing is written
        report = import_source(args.format, args.source, args.output, task=task, **options)
    if args.json:
        print(json.dumps({**report.to_meta(), "output": report.output}, indent=2, ensure_ascii=False))
    else:
        print("\n".join(report.summary()))
    return 0
