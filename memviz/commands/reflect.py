"""`memviz reflect DB [--agent A] [--dry-run] [--yes]`: the dual-memory design's reflection with an
OpenAI-compatible LLM; every proposal is shown and written only when accepted.

LLM settings come from MEMVIZ_LLM_BASE_URL / MEMVIZ_LLM_MODEL / MEMVIZ_LLM_API_KEY (or the
OS keyring) and the flags below; the key is never taken from a flag (shell history).
"""
from __future__ import annotations

import sys

from ..frameworks import open_source as open_store
from ..reflect import LLMClient, LLMSettings, ReflectError, ReflectionConfig, Reflector, importance_status, test_connection
from ..reflect.evidence import default_retriever
from ..reflect.validate import clean_text, shorten
from ..store import iso
from ..words import count
from .interrupt import command_task


def add_parser(sub):
    p = sub.add_parser("reflect", help="propose reflections with an LLM (Generative Agents style); write only the accepted ones")
    p.add_argument("db", nargs="?", help="the memory store (not needed with --test-connection)")
    p.add_argument("--agent", help="whose memories (required when the store holds several agents)")
    p.add_argument("--dry-run", action="store_true", help="show the proposals and write nothing")
    p.add_argument("--yes", action="store_true", help="accept every proposal without asking")
    p.add_argument("--status", action="store_true", help="only show the importance accumulated since the last reflection")
    p.add_argument("--threshold", type=float, help="reflection threshold (default: the store's, else 100)")
    p.add_argument("--recent", type=int, default=100, help="recent memories the questions come from (100)")
    p.add_argument("--questions", type=int, default=3, help="questions to ask (3)")
    p.add_argument("--evidence", type=int, default=10, help="memories retrieved per question (10)")
    p.add_argument("--insights", type=int, default=1, help="insights per question (1)")
    p.add_argument("--importance", type=float, default=8.0, help="importance of written reflections (8-10)")
    p.add_argument("--preset", default="dual-memory", help="retrieval preset that ranks the evidence (dual-memory)")
    p.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1 (Ollama)")
    p.add_argument("--model", help="chat model")
    p.add_argument("--timeout", type=float, help="seconds per request (60)")
    p.add_argument("--retries", type=int, help="retries after timeouts, 429 and 5xx (2)")
    p.add_argument("--max-tokens", type=int, help="token limit per reply (1500)")
    p.add_argument("--test-connection", action="store_true", help="check the LLM settings and exit")
    p.set_defaults(func=run)


def _settings(args) -> LLMSettings:
    return LLMSettings.from_env(base_url=args.base_url, chat_model=args.model, timeout=args.timeout,
                                max_retries=args.retries, max_tokens=args.max_tokens)


def _fail(msg: str) -> int:
    print(f"memviz: error: {msg}", file=sys.stderr)
    return 2


def _line(text, n=160) -> str:
    return shorten(clean_text(text, 10_000)[0], n)  # memory text is data: no terminal control characters


def run(args) -> int:
    try:
        settings = _settings(args)
        if args.test_connection:
            check = test_connection(settings)
            print(check.message)
            return 0 if check.ok else 1
        if not args.db:
            return _fail("give the memory store: memviz reflect DB")
        config = ReflectionConfig(recent=args.recent, questions=args.questions, evidence=args.evidence,
                                  insights_per_question=args.insights, importance=args.importance)
        with open_store(args.db, read_only=args.dry_run or args.status) as store:
            return _reflect(args, store, settings, config)
    except ReflectError as e:
        msg = str(e)
        return _fail(msg if "nothing was written" in msg.lower() else msg.rstrip(".") + ". Nothing was written.")


def _reflect(args, store, settings, config) -> int:
    st = importance_status(store, args.agent, args.threshold)
    since = iso(st.since) + " UTC" if st.since is not None else "ever"
    print(f"agent {st.agent!r}: importance {st.accumulated:g} of threshold {st.threshold:g} since the last "
          f"reflection ({since}, {st.count} memories) -> {'time to reflect' if st.crossed else 'not yet due'}")
    if args.status:
        return 0
    if not args.dry_run and store.read_only:
        return _fail(f"{store.path} is open read-only ({store.read_only_reason}); use --dry-run to preview")
    retriever = default_retriever(store, agent=st.agent, preset=args.preset)
    reflector = Reflector(store, LLMClient(settings), agent=st.agent, config=config, retriever=retriever)
    with command_task("reflect", show="lines") as task:  # Ctrl-C cancels: nothing is written
        run_ = reflector.propose(task)
    for n, p in enumerate(run_.proposals, 1):
        print(f"\n[{n}] question: {_line(p.question)}")
        print(f"    reflection: {_line(p.content, 2000)}")
        if p.duplicate_of:
            print(f"    duplicate of {_line(p.duplicate_of)}: not written by --yes")
        for e in p.cited:
            print(f"    evidence {e.id}: {_line(e.content, 100)}")
    for problem in run_.problems:
        print(f"note: {problem}")
    if not run_.proposals:
        print("no reflection was proposed; nothing written")
        return 1
    if args.dry_run:
        print(f"\ndry run: {count(len(run_.proposals), 'reflection')} proposed, nothing written")
        return 0
    for n, p in enumerate(run_.proposals, 1):
        if args.yes:
            (p.reject if p.duplicate_of else p.accept)()  # a repeat of what the store holds is never auto-written
            continue
        try:
            answer = input(f"accept reflection {n}{' (a duplicate)' if p.duplicate_of else ''}? [y/N] ")
        except EOFError:
            answer = ""
        (p.accept if answer.strip().lower() in ("y", "yes") else p.reject)()
    result = reflector.accept(run_)
    for problem in result.problems:
        print(f"note: {problem}")
    dup = sum(bool(p.duplicate_of) and p.decision is False for p in run_.proposals)
    print(f"wrote {count(len(result.ids), 'reflection')}" + (": " + ", ".join(result.ids) if result.ids else "") +
          f"; rejected {sum(p.decision is False for p in run_.proposals)}" + (f" ({count(dup, 'duplicate')})" if dup else ""))
    return 0
