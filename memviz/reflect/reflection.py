"""The dual-memory design's reflection, previewed: recent memories -> salient questions -> evidence per
question -> insights citing their evidence -> Proposals the user accepts or rejects.

`Reflector.propose()` only reads the store and talks to the LLM; `Reflector.accept()` writes
the accepted proposals (kind 'reflection', importance >= 8, source_ids = cited evidence,
attributes.questions_addressed), embedded with the store's model, in ONE transaction.
Both take a `memviz.tasks.Task` (progress with a message per step; a cancel raises
Cancelled and nothing is written), so a Qt panel only has to run them on a worker thread and
show the plain objects they return.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from ..embed import LOCAL_DIM, LOCAL_MODEL, EmbedderUnavailable, EmbeddingError, embedder_for
from ..store.clock import store_clock
from ..store.errors import ReadOnlyError
from ..store.records import new_id
from ..tasks import Task, quiet
from ..words import count
from .errors import BadOutput, LLMRefusal, LLMTruncated, ReflectError
from .evidence import Retriever, default_retriever
from .prompts import INSIGHTS_SCHEMA, QUESTIONS_SCHEMA, insights_messages, questions_messages
from .validate import clean_text, find_duplicate, parse_insights, parse_questions

MIN_IMPORTANCE = 8.0
DEFAULT_THRESHOLD = 100.0
THRESHOLD_META_KEY = "reflection_threshold"  # memviz_meta: the user's threshold for this store
ACTOR = "memviz reflect"


@dataclass
class ReflectionConfig:
    recent: int = 100                 # how many recent memories the questions are drawn from
    questions: int = 3
    evidence: int = 10                # retrieved per question
    insights_per_question: int = 1    # the dual-memory design: one insight per question
    importance: float = MIN_IMPORTANCE
    statement_chars: int = 400        # each memory is shortened to this in prompts
    max_insight_chars: int = 1000

    def __post_init__(self):
        for name in ("recent", "questions", "evidence", "insights_per_question"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not MIN_IMPORTANCE <= float(self.importance) <= 10:
            raise ValueError(f"a reflection's importance must be between {MIN_IMPORTANCE:g} and 10")


@dataclass
class Evidence:
    id: str
    content: str
    kind: str
    importance: float
    event_time: float


@dataclass
class Proposal:
    question: str
    content: str                      # plain text; the user may edit it before accepting
    cited_ids: list[str]              # validated: all among `evidence`
    evidence: list[Evidence]          # everything the model was shown for the question, in order
    dropped_citations: list[str] = field(default_factory=list)
    importance: float = MIN_IMPORTANCE
    decision: bool | None = None      # None: undecided
    written_id: str | None = None
    id: str = field(default_factory=new_id)  # the row's id once written (known ahead for undo stacks)
    duplicate_of: str | None = None   # what it repeats ("memory ID (identical text)"): --yes skips it

    def accept(self) -> None:
        self.decision = True

    def reject(self) -> None:
        self.decision = False

    @property
    def cited(self) -> list[Evidence]:
        return [e for e in self.evidence if e.id in self.cited_ids]


@dataclass
class ReflectionRun:
    id: str
    agent: str
    model: str
    started_at: float
    recent_ids: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what was dropped or skipped, and why


@dataclass
class AcceptResult:
    ids: list[str]
    problems: list[str]


@dataclass
class ImportanceStatus:
    agent: str
    accumulated: float      # importance of live non-reflection memories recorded since the last reflection
    count: int
    threshold: float
    since: float | None     # created_at of the last reflection (None: never)

    @property
    def crossed(self) -> bool:
        return self.accumulated >= self.threshold


def store_agents(store) -> list[str]:
    """Agents with live memories."""
    return sorted(a for a, (live, _) in store.counts()["by_agent"].items() if live)


def resolve_agent(store, agent: str | None) -> str:
    if agent is not None and store.live_agent_exists(agent):  # the common case, by index: no scan of every row
        return agent
    agents = store_agents(store)
    if agent is None:
        if len(agents) > 1:
            raise ValueError("this store holds several agents (" + ", ".join(a or "''" for a in agents) +
                             "); choose one")
        return agents[0] if agents else ""
    if agent not in agents:
        raise ValueError(f"no live memories of agent {agent!r} in this store"
                         + (f" (agents: {', '.join(a or repr(a) for a in agents)})" if agents else ""))
    return agent


def importance_status(store, agent: str | None = None, threshold: float | None = None,
                      now: float | None = None, arrays=None) -> ImportanceStatus:
    """The dual-memory design's trigger: importance accumulated since the last reflection vs the threshold,
    up to `now` (default: the store's clock when it is fixed, so a simulation counts what it had
    then; on the wall clock everything counts, whatever the agent's own clock said). `arrays` (the
    store's MemoryArrays as loaded) answers from memory instead of two scans of the table, which
    take seconds at a million rows."""
    agent = resolve_agent(store, agent)
    if now is None:
        clock = store_clock(store, arrays)
        now = clock.at if clock.fixed else None
    if threshold is None:
        threshold = float(store.meta(THRESHOLD_META_KEY, DEFAULT_THRESHOLD))
    if arrays is None:
        since, total, n = store.importance_since_reflection(agent, now)
    else:
        since, total, n = importance_since_reflection(arrays, agent, now)
    return ImportanceStatus(agent, total, n, float(threshold), since)


def importance_since_reflection(arrays, agent: str, now: float | None = None) -> tuple[float | None, float, int]:
    """What `Store.importance_since_reflection` reads, from loaded arrays: (created_at of the agent's
    last reflection or None, importance summed over its live non-reflection memories created after
    it, how many), counting only what exists at `now` if given."""
    mine = arrays.agent == agent
    if now is not None:
        mine &= arrays.created_at <= now
    reflection = arrays.kind == "reflection"
    made = arrays.created_at[mine & reflection]
    made = made[~np.isnan(made)]
    since = float(made.max()) if len(made) else None
    rest = mine & ~reflection & arrays.live
    if since is not None:
        rest &= arrays.created_at > since
    return since, float(np.nansum(arrays.importance[rest])), int(rest.sum())


class _Progress:
    """Reports the step about to start ("[3/6] Retrieving …", fraction done so far), then counts it."""

    def __init__(self, task: Task, total: int):
        self.task, self.total, self.done = task, total, 0

    def __call__(self, message: str, advance: int = 1):
        if message:
            self.task.progress(self.done / max(self.total, 1), f"[{self.done + 1}/{self.total}] {message}")
        self.done += advance


class Reflector:
    def __init__(self, store, llm, *, agent: str | None = None, config: ReflectionConfig | None = None,
                 retriever: Retriever | None = None, embedder=None):
        """`llm` is an LLMClient; `retriever(question, k) -> ids` defaults to the retrieval
        engine; `embedder` defaults to the store's own embedding model."""
        self.store = store
        self.llm = llm
        self.config = config or ReflectionConfig()
        self.agent = resolve_agent(store, agent)
        self._retriever = retriever
        self._embedder = embedder

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = default_retriever(self.store, agent=self.agent)
        return self._retriever

    # ------------------------------------------------------------------ propose
    def propose(self, task: Task | None = None) -> ReflectionRun:
        """Ask the LLM; write nothing. Raises LLMError (with a message for the user) when the
        questions cannot be had or the server fails; a bad reply for one question only skips
        that question and is listed in `run.problems`."""
        task = task or quiet()
        cfg = self.config
        run = ReflectionRun(new_id(), self.agent, self.llm.settings.chat_model, time.time())
        step = _Progress(task, 2 + 2 * cfg.questions)
        step("Reading recent memories")
        recent = self._recent(cfg.recent)
        if not recent:
            raise ReflectError(f"Agent {self.agent!r} has no live memories to reflect on.")
        run.recent_ids = [e.id for e in recent]
        task.check()
        step(f"Asking {run.model} for questions about {len(recent)} recent memories")
        value = self.llm.chat_json(
            questions_messages([e.content for e in recent], cfg.questions, agent=self.agent or None,
                               max_chars=cfg.statement_chars),
            QUESTIONS_SCHEMA, "questions", task=task)
        run.questions, problems = parse_questions(value, cfg.questions)
        run.problems += problems
        step.total = 2 + 2 * len(run.questions)
        for qi, question in enumerate(run.questions, 1):
            task.check()
            step(f"Retrieving evidence for question {qi} of {len(run.questions)}")
            # a few more than needed: ids the store retired since the retriever's snapshot are dropped
            evidence = self._evidence(self.retriever(question, cfg.evidence + 5), cfg.evidence)
            task.check()
            if not evidence:
                run.problems.append(f"question {qi}: no evidence was found; skipped")
                step("", 1)
                continue
            step(f"Asking for insights on question {qi} of {len(run.questions)}")
            try:
                value = self.llm.chat_json(
                    insights_messages(question, [e.content for e in evidence], cfg.insights_per_question,
                                      agent=self.agent or None, max_chars=cfg.statement_chars),
                    INSIGHTS_SCHEMA, "insights", task=task)
                insights, problems = parse_insights(value, [e.id for e in evidence], cfg.insights_per_question,
                                                    max_chars=cfg.max_insight_chars)
            except (BadOutput, LLMTruncated, LLMRefusal) as e:  # this question's reply only: go on
                run.problems.append(f"question {qi}: {e} Skipped.")
                continue
            run.problems += [f"question {qi}: {p}" for p in problems]
            for ins in insights:
                p = Proposal(question, ins.text, ins.cited_ids, evidence, ins.dropped, float(cfg.importance))
                self._mark_duplicate(p, run)
                run.proposals.append(p)
        task.check()
        task.progress(1.0, f"{count(len(run.proposals), 'reflection')} proposed")
        return run

    def _recent(self, n: int) -> list[Evidence]:
        ids = self.store.recent_ids(self.agent, n)
        rows = {r["id"]: r for r in self.store.get_many(ids)}
        return [_evidence(rows[i]) for i in reversed(ids) if i in rows]  # oldest first, as they happened

    def _evidence(self, ids, k: int) -> list[Evidence]:
        ids = list(dict.fromkeys(str(i) for i in ids))
        rows = {r["id"]: r for r in self.store.get_many(ids)}
        out = [_evidence(rows[i]) for i in ids
               if i in rows and rows[i]["valid_until"] is None and rows[i]["agent"] == self.agent]
        return out[:k]

    # ------------------------------------------------------------------ accept
    def accept(self, run: ReflectionRun, proposals=None, *, task: Task | None = None,
               store=None) -> AcceptResult:
        """Write the accepted proposals (default: those with decision True) in one transaction.
        Citations of memories that vanished meanwhile are dropped (a proposal left with none is
        not written); returns the new ids and the problems met. `store` is the connection to write
        through (default: the Reflector's own), e.g. the editing History's."""
        store = self.store if store is None else store
        task = task or quiet()
        if store.read_only:
            raise ReadOnlyError(f"{store.path} is open read-only: {store.read_only_reason}")
        if proposals is None:
            chosen = [p for p in run.proposals if p.decision]
        else:
            chosen = list(proposals)
            for p in chosen:
                p.accept()
        chosen = [p for p in chosen if p.written_id is None]
        problems: list[str] = []
        existing = {r["id"] for r in store.get_many({i for p in chosen for i in p.cited_ids})}
        keep: list[tuple[Proposal, str, list[str]]] = []
        for p in chosen:
            text, cut = clean_text(p.content, self.config.max_insight_chars)
            label = f"reflection {text[:40]!r}"
            if not text:
                problems.append(f"a reflection with no text was not written (question {p.question!r})")
                continue
            if cut:
                problems.append(f"{label} was shortened to {self.config.max_insight_chars} characters")
            sources = [i for i in p.cited_ids if i in existing]
            if len(sources) < len(p.cited_ids):
                problems.append(f"{label}: {len(p.cited_ids) - len(sources)} cited memories are no longer in the store")
            if not sources:
                problems.append(f"{label} was not written: none of its evidence is left")
                continue
            keep.append((p, text, sources))
        if not keep:
            return AcceptResult([], problems)
        task.check()
        vectors, model, why = self._embed([t for _, t, _ in keep])
        if why:
            problems.append(f"written without embeddings ({why}); they are marked needs_embedding")
        task.check()
        now = store_clock(store).now()  # a simulation's reflection happens in its own time
        records = []
        for n, (p, text, sources) in enumerate(keep):
            attrs = {"questions_addressed": [p.question],
                     "reflection": {"run": run.id, "model": run.model, "evidence_offered": [e.id for e in p.evidence]}}
            if vectors is None:
                attrs["needs_embedding"] = True
            records.append(dict(id=p.id, kind="reflection", agent=run.agent, content=text,
                                importance=min(10.0, max(MIN_IMPORTANCE, float(p.importance))),
                                source_ids=sources, attributes=attrs, event_time=now, created_at=now,
                                embedding=None if vectors is None else vectors[n],
                                embedding_model=model if vectors is not None else None))
        ids = store.insert_memories(records, actor=ACTOR, note=f"reflection run {run.id} ({run.model})")
        for (p, _, _), i in zip(keep, ids):
            p.written_id = i
        return AcceptResult(ids, problems)

    def _mark_duplicate(self, p: Proposal, run: ReflectionRun) -> None:
        """Set p.duplicate_of when it repeats a live memory or an earlier proposal of the run
        (identical text, or cosine >= DUPLICATE_COSINE with the store's embedding model)."""
        vectors, _, _ = self._embed([p.content])
        vec = None if vectors is None else vectors[0]
        self._vectors = getattr(self, "_vectors", {})
        earlier = [(f"proposal {n}", q.content, self._vectors.get(q.id)) for n, q in enumerate(run.proposals, 1)]
        p.duplicate_of = find_duplicate(self.store, self.agent, p.content, vec, earlier)
        self._vectors[p.id] = vec

    def _embed(self, texts):
        """(vectors, model, None) or (None, None, why-not)."""
        try:
            emb = self._embedder = self._embedder or self._store_embedder()  # resolved once per Reflector
            if emb is None:
                return None, None, "the store has no embeddings and no embedding model is set"
            return emb.embed(texts), emb.model, None
        except (EmbedderUnavailable, EmbeddingError) as e:
            return None, None, str(e)

    def _store_embedder(self):
        model, dim = self.store.main_model()
        settings = self.llm.settings
        if model is None:
            model = settings.embedding_model
            if not model:
                return None
            dim = LOCAL_DIM if model == LOCAL_MODEL else None
        kwargs = {}
        if model != LOCAL_MODEL and not os.environ.get("MEMVIZ_EMBED_BASE_URL"):
            kwargs = {"base_url": settings.base_url, "api_key": settings.resolve_api_key()[0]}
        return embedder_for(model, dim, **kwargs)


def _evidence(row) -> Evidence:
    t = row["event_time"]  # None when an agent wrote a time that cannot be read (the row is flagged)
    return Evidence(row["id"], row["content"], row["kind"], float(row["importance"]),
                    float("nan") if t is None else float(t))
