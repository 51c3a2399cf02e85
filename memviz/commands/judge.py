"""`memviz judge …`: judged queries — what should come back for a question — kept with a store,
and the quality of a preset's ranking measured against them, and fitted.

    memviz judge import DB SET.jsonl [--name NAME]        (or --qrels FILE --topics FILE)
    memviz judge export DB NAME -o FILE.jsonl             (or --trec QRELS TOPICS; --parameters -o FILE.json)
    memviz judge list DB
    memviz judge delete DB NAME                            (or --parameters NAME)
    memviz judge eval DB SET.jsonl|NAME [--preset P] [--alpha A …] [--json]
    memviz judge fit DB SET.jsonl|NAME [--preset P] [--metric ndcg@10] [--folds 5] [--save NAME]

DB is a store file, a PostgreSQL connection string or another framework's store. A file that
is refused (a malformed line, a duplicate query id, a grade outside 0–2, a bad time, a judged
id that names no memory) is refused whole, every problem listed with its line, exit 2, and the
store is left as it was.
"""
from __future__ import annotations

import json
import os
import sys

from ..edits import EditKept, History
from ..frameworks import open_source
from ..judge import JudgedSet, write_jsonl, write_trec
from ..judge.evaluator import JudgedEvaluator
from ..judge.stored import (
    delete_parameters,
    delete_set,
    judged_set_names,
    parameter_choices,
    read_file_for,
    read_set,
    save_parameters,
    save_set,
    saved_parameter_sets,
)
from ..judge.tune import fit_preset, fitted_set
from ..retrieval import PRESETS, Params
from ..retrieval.presets import preset
from ..store import BusyError
from ..store.errors import IN_USE
from ..words import count
from .clock import add_now_argument, use_now
from .interrupt import command_task

WEIGHT_FLAGS = (("alpha", "relevance weight"), ("beta", "recency weight"), ("gamma", "importance weight"),
                ("tau_hours", "dual-memory recency time constant, hours"),
                ("decay", "generative-agents recency decay / ada lambda"))


def add_parser(sub):
    p = sub.add_parser("judge", help="judged queries: import, export, list, measure a preset against them, fit it",
                       description="Judged queries — what should come back for a question — kept with a store; a "
                       "preset's ranking measured against them (recall@k, nDCG@10, MRR, P@k) and its weights "
                       "fitted to them, cross-validated. Judged sets are JSON Lines, one query a line: "
                       '{"id": "q1", "query": "text", "relevant": {"<memory id>": 2, …} or ["<memory id>", …], '
                       '"as_of": <epoch seconds or ISO 8601>, "agents": [...], "kinds": [...], "tags": [...]} '
                       "(grades: 0 not relevant, 1 relevant, 2 highly relevant), or TREC qrels + topics.")
    jsub = p.add_subparsers(dest="judge_command", metavar="ACTION", required=True, prog="memviz judge")

    imp = jsub.add_parser("import", help="keep a judged set with the store (all of the file, or nothing)")
    imp.add_argument("db")
    imp.add_argument("file", nargs="?", help="the judged set, JSON Lines")
    _trec_inputs(imp)
    imp.add_argument("--name", help="the set's name (default: the file's name without its extension)")
    imp.set_defaults(func=run_import)

    exp = jsub.add_parser("export", help="write a judged set kept with the store to a file")
    exp.add_argument("db")
    exp.add_argument("name", nargs="?", help="the judged set")
    exp.add_argument("-o", "--output", help="the file to write (JSON Lines)")
    exp.add_argument("--trec", nargs=2, metavar=("QRELS", "TOPICS"), help="write TREC qrels and a topics file instead")
    exp.add_argument("--parameters", action="store_true",
                     help="write the parameter sets saved with the store (JSON) instead of a judged set")
    exp.set_defaults(func=run_export)

    ls = jsub.add_parser("list", help="the judged sets and parameter sets kept with the store")
    ls.add_argument("db")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=run_list)

    rm = jsub.add_parser("delete", help="remove a judged set (or with --parameters a parameter set) from the store")
    rm.add_argument("db")
    rm.add_argument("name")
    rm.add_argument("--parameters", action="store_true", help="NAME is a parameter set")
    rm.set_defaults(func=run_delete)

    ev = jsub.add_parser("eval", help="recall@k, nDCG@10, MRR and P@k of a preset over a judged set, overall and per query")
    _judged_inputs(ev)
    ev.add_argument("--json", action="store_true", help='print one JSON object: {"metrics": …, "per_query": …}')
    ev.set_defaults(func=run_eval)

    fit = jsub.add_parser("fit", help="fit a preset's weights and knobs to a judged set, cross-validated")
    _judged_inputs(fit)
    fit.add_argument("--metric", default="ndcg@10", help="what to maximise: ndcg@K, recall@K, p@K or mrr (default ndcg@10)")
    fit.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    fit.add_argument("--seed", type=int, default=0, help="the folds' seed (the same seed gives the same fit)")
    fit.add_argument("--by", choices=("query", "agent"), default="query",
                     help="fold by query (default), or keep each agent's queries in one fold (a conversation: held "
                          "out whole)")
    fit.add_argument("--json", action="store_true", help="print the report as one JSON object")
    fit.add_argument("--save", metavar="NAME", help="keep the fitted parameters with the store as a parameter set "
                                                    "(only when the fit recommends them, unless --force)")
    fit.add_argument("--force", action="store_true", help="with --save: save them even when not recommended")
    fit.set_defaults(func=run_fit)


def _trec_inputs(p) -> None:
    p.add_argument("--qrels", metavar="FILE", help="TREC qrels (query-id 0 memory-id grade), with --topics")
    p.add_argument("--topics", metavar="FILE", help="TREC topics (query-id<TAB>text, or <top> blocks), with --qrels")


def _judged_inputs(p) -> None:
    p.add_argument("db")
    p.add_argument("judged", nargs="?", metavar="SET", help="a JSON Lines file, or the name of a set kept with the store")
    _trec_inputs(p)
    p.add_argument("--preset", default="dual-memory",
                   help=f"a preset ({', '.join(PRESETS)}) or a parameter set saved with the store (default dual-memory)")
    for name, what in WEIGHT_FLAGS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, help=what)
    p.add_argument("-k", "--k", dest="k", type=int, help="how many results count (recall@k, P@k)")
    add_now_argument(p)


# ------------------------------------------------------------------ reading what the user names
def _read_file(store, args, name: str | None = None) -> JudgedSet:
    """The judged set of the file(s) the user gave, its memory ids checked against the store:
    every problem of the file with its line, in one JudgedFileError, or the set."""
    if args.qrels or args.topics:
        if not (args.qrels and args.topics):
            raise ValueError("give both --qrels FILE and --topics FILE")
        return read_file_for(store, qrels=args.qrels, topics=args.topics, name=name)
    return read_file_for(store, getattr(args, "file", None) or getattr(args, "judged", None), name=name)


def _judged(store, args) -> JudgedSet:
    """The set named on the command line: a file (or TREC pair), else a set kept with the store."""
    if args.qrels or args.topics or (args.judged and os.path.exists(args.judged)):
        if args.judged and (args.qrels or args.topics):
            raise ValueError("give either a judged set or --qrels/--topics, not both")
        return _read_file(store, args)
    if not args.judged:
        raise ValueError("name the judged set: a JSON Lines file, a set kept with the store, or --qrels/--topics")
    try:
        return read_set(store, args.judged)
    except KeyError as e:
        raise ValueError(f"{args.judged}: no such file, and {e.args[0]}") from None


def _params(store, args) -> Params:
    """The preset (or saved parameter set) with the flags given on top."""
    choices = {ps.name: ps for ps in parameter_choices(store)}
    ps = choices.get(args.preset)
    if ps is None:
        raise ValueError(f"unknown preset or parameter set {args.preset!r}; choose one of: {', '.join(choices)}")
    overrides = {name: getattr(args, name) for name, _ in WEIGHT_FLAGS if getattr(args, name) is not None}
    if args.k is not None:
        overrides["k"] = args.k
    return ps.params(**overrides)


def _perform(store, action, db: str):
    try:
        return History(store).perform(action)
    except EditKept:
        raise BusyError(f"{db} is {IN_USE} (memviz waited and retried); nothing was written. "
                        "Run the command again when that process is done.") from None


# ------------------------------------------------------------------ import, export, list, delete
def run_import(args) -> int:
    if not args.file and not (args.qrels or args.topics):
        raise ValueError("give the judged set to import: a JSON Lines file, or --qrels FILE --topics FILE")
    if args.file and (args.qrels or args.topics):
        raise ValueError("give either a JSON Lines file or --qrels/--topics, not both")
    with open_source(args.db) as store:
        judged = _read_file(store, args, args.name)
        before = dict(store.judged_sets())
        out = _perform(store, save_set(judged), args.db)
        now = dict(store.judged_sets()).get(judged.name, 0)
    print(out.text + (f"; the set now holds {count(now, 'query')}" if judged.name in before else ""))
    return 0


def run_export(args) -> int:
    if args.parameters:
        if not args.output:
            raise ValueError("give the file to write: -o FILE.json")
        with open_source(args.db, read_only=True) as store:
            sets = saved_parameter_sets(store)
        _write_text(args.output, json.dumps([s.as_dict() for s in sets], indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {len(sets)} parameter set{'s' if len(sets) != 1 else ''} to {args.output}")
        return 0
    if not args.name:
        raise ValueError("name the judged set to export (memviz judge list DB shows them)")
    if bool(args.output) == bool(args.trec):
        raise ValueError("give where to write it: -o FILE.jsonl, or --trec QRELS TOPICS")
    with open_source(args.db, read_only=True) as store:
        try:
            judged = read_set(store, args.name)
        except KeyError as e:
            raise ValueError(e.args[0]) from None
    if args.trec:
        n = write_trec(judged, *args.trec)
        print(f"wrote {n} judged queries of {args.name!r} to {args.trec[0]} (qrels) and {args.trec[1]} (topics)")
    else:
        n = write_jsonl(judged, args.output)
        print(f"wrote {n} judged queries of {args.name!r} to {args.output}")
    return 0


def _write_text(path: str, text: str) -> None:
    tmp = f"{path}.part"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def run_list(args) -> int:
    with open_source(args.db, read_only=True) as store:
        sets = store.judged_sets()
        params = saved_parameter_sets(store)
    if args.json:
        print(json.dumps({"judged_sets": [{"name": n, "queries": c} for n, c in sets],
                          "parameter_sets": [p.as_dict() for p in params]}, indent=2, ensure_ascii=False))
        return 0
    print(f"judged sets: {len(sets)}" + ("" if sets else " (memviz judge import DB FILE.jsonl keeps one)"))
    for name, n in sets:
        print(f"  {name}  {n} quer{'y' if n == 1 else 'ies'}")
    print(f"parameter sets: {len(params)}")
    for p in params:
        values = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in p.values.items())
        print(f"  {p.name}  {p.preset}: {values}" + (f"  ({p.description})" if p.description else ""))
    return 0


def run_delete(args) -> int:
    with open_source(args.db) as store:
        if args.parameters:
            if args.name not in {p.name for p in store.parameter_sets()}:
                raise ValueError(f"{store.path} keeps no parameter set {args.name!r}")
            out = _perform(store, delete_parameters(args.name), args.db)
        else:
            if args.name not in judged_set_names(store):
                raise ValueError(f"{store.path} keeps no judged set {args.name!r}")
            out = _perform(store, delete_set(args.name), args.db)
    print(out.text + " (the audit log keeps it; undo in the window)")
    return 0


# ------------------------------------------------------------------ eval and fit
def _evaluator(store, args, judged: JudgedSet, params: Params, task) -> JudgedEvaluator:
    use_now(store, args, out=sys.stderr)
    return JudgedEvaluator(store, judged, params, task=task)


def run_eval(args) -> int:
    with open_source(args.db, read_only=True) as store:
        judged = _judged(store, args)
        params = _params(store, args)
        with command_task("judge eval") as task:
            ev = _evaluator(store, args, judged, params, task)
            result = ev.metrics(params)
    if args.json:
        print(json.dumps({**result.to_json(), "params": _shown_params(params)}, indent=2, ensure_ascii=False))
        return 0
    print(f"{judged.name}: {len(judged)} judged queries, {params.preset} ({_describe(params)})")
    for m in result.measures:
        print(f"  {m:<12} {result.means[m]:.4f}")
    width = max(len(q) for q in result.query_ids)
    print(f"{'query':<{width}}  " + "  ".join(f"{m:>10}" for m in result.measures))
    for q in result.query_ids:
        print(f"{q:<{width}}  " + "  ".join(f"{result.per_query[q][m]:>10.4f}" for m in result.measures))
    return 0


def run_fit(args) -> int:
    if args.force and not args.save:
        raise ValueError("--force goes with --save NAME")
    if args.folds < 2:
        raise ValueError(f"--folds must be at least 2, not {args.folds}")
    with open_source(args.db, read_only=not args.save) as store:
        judged = _judged(store, args)
        start = _params(store, args)
        groups = None
        if args.by == "agent":
            groups = {q.id: q.agents for q in judged}
        with command_task("judge fit") as task:
            ev = _evaluator(store, args, judged, start, task.part(0.0, 0.3))
            report = fit_preset(ev, start, metric=args.metric, folds=args.folds, seed=args.seed, groups=groups,
                                task=task.part(0.3, 1.0))
        saved = None
        if args.save and (report.recommended or args.force):
            _perform(store, save_parameters(fitted_set(report, args.save, start, force=args.force)), args.db)
            saved = args.save
    if args.json:
        print(json.dumps({**report.to_json(), "saved": saved}, indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"{judged.name}: {len(judged)} judged queries, {start.preset}, {args.folds} folds"
          + (" by agent" if groups else "") + f", seed {args.seed}")
    for line in report.summary():
        print(line)
    wins, losses = report.per_query.wins(), report.per_query.losses()
    if wins:
        print("largest wins:   " + ", ".join(f"{d.query_id} {d.gain:+.3f}" for d in wins[:5]))
    if losses:
        print("largest losses: " + ", ".join(f"{d.query_id} {d.gain:+.3f}" for d in losses[:5]))
    if args.save:
        print(f"saved as parameter set {saved!r} (memviz judge eval DB SET --preset {saved})" if saved else
              f"not saved as {args.save!r}: the fit does not recommend it (--force saves it anyway)")
    return 0


def _shown_params(params: Params) -> dict:
    return {f: getattr(params, f) for f in ("preset", *preset(params.preset).settings)}


def _describe(params: Params) -> str:
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in _shown_params(params).items() if k != "preset")

