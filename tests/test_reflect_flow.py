"""Reflection end to end, headless: a real store with real local embeddings, the fake
OpenAI-compatible server over real HTTP, propose -> accept some / reject others -> rows."""
import threading

import pytest
from fake_openai import reply_error, reply_json, reply_text, slow

import memviz.store as ms
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.reflect import (
    LLMClient,
    LLMHTTPError,
    LLMSettings,
    LLMTruncated,
    ReflectError,
    ReflectionConfig,
    Reflector,
    importance_status,
    vector_retriever,
)
from memviz.store.errors import ReadOnlyError
from memviz.tasks import Cancelled, Task

DAY = 86400
T0 = 1_760_000_000

ANN = [
    "Ann met Bob at the office to discuss the project deadline; Bob looked stressed.",
    "Bob told Ann he has not slept well since the deadline was moved forward.",
    "Ann watered the tomatoes in her garden before work.",
    "Ann drank a double espresso at the cafe next to the office.",
    "Bob snapped at Carla during the standup about the deadline.",
    "Ann planted basil and chives in the garden.",
    "Ann read a book about compost and soil health.",
    "Carla asked Ann whether Bob is all right; Ann said the deadline worries him.",
    "Ann ordered a cappuccino and a croissant at the cafe.",
    "Bob stayed at the office until midnight to finish the report before the deadline.",
    "Ann harvested the first ripe tomatoes of the summer.",
    "Ann's manager praised the project demo.",
]
BOB = ["Bob went jogging in the park.", "Bob bought running shoes."]


def build_store(path):
    """A store of two agents, every memory embedded with the local model."""
    s = ms.create(str(path))
    emb = default_embedder()
    texts = ANN + BOB
    vecs = emb.embed(texts)
    recs = []
    for i, (t, v) in enumerate(zip(texts, vecs)):
        agent = "ann" if i < len(ANN) else "bob"
        recs.append(dict(id=f"{agent}-{i:02d}", agent=agent, kind="episode", content=t, importance=3 + i % 6,
                         event_time=T0 + i * DAY, created_at=T0 + i * DAY, embedding=v, embedding_model=emb.model))
    s.insert_memories(recs)
    return s


@pytest.fixture
def mem(tmp_path):
    s = build_store(tmp_path / "mem.db")
    yield s
    s.close()


def llm_for(server, **kw):
    kw.setdefault("max_retries", 1)
    kw.setdefault("timeout", 5)
    return LLMClient(LLMSettings(base_url=server.base_url, chat_model="fake-chat", api_key="test-key", **kw),
                     retry_backoff=0.01)


def reflector(store, server, **kw):
    cfg = ReflectionConfig(**{"questions": 2, "evidence": 5, **kw.pop("config", {})})
    return Reflector(store, llm_for(server, **kw.pop("llm", {})), agent="ann", config=cfg,
                     retriever=vector_retriever(store, agent="ann"))


QUESTIONS = reply_json({"questions": ["How is Bob coping with the deadline?", "What does Ann do in her garden?"]})


def rows(store, kind="reflection"):
    return [r for r in store.get_many([i for (i,) in store.conn.execute("SELECT id FROM memories")]) if r["kind"] == kind]


def test_propose_accept_some_reject_others(mem, fake_openai):
    fake_openai.push(QUESTIONS,
                     reply_json({"insights": [{"insight": "Bob is under heavy stress because of the deadline.",
                                               "evidence": [1, 2]}]}),
                     reply_json({"insights": [{"insight": "Ann finds calm in gardening.", "evidence": [1]}]}))
    r = reflector(mem, fake_openai)
    seen = []
    run = r.propose(Task(on_progress=lambda f, m: seen.append((f, m))))
    assert [p.question for p in run.proposals] == ["How is Bob coping with the deadline?",
                                                    "What does Ann do in her garden?"]
    assert run.problems == []
    assert seen and seen[-1][0] == 1.0 and "2 reflection" in seen[-1][1]
    assert rows(mem) == []  # proposing writes nothing

    stress, garden = run.proposals
    # the evidence for the stress question was retrieved by meaning: deadline memories come first
    assert all(e.id.startswith("ann-") for e in stress.evidence)
    assert "deadline" in stress.evidence[0].content
    assert stress.cited_ids == [stress.evidence[0].id, stress.evidence[1].id]
    # the model was shown exactly that evidence, numbered
    prompt = fake_openai.chat_requests()[1]["messages"][1]["content"]
    assert f"1. {stress.evidence[0].content}" in prompt and "How is Bob coping" in prompt

    stress.accept()
    garden.reject()
    audit_before = mem.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0]
    res = r.accept(run)
    assert res.problems == [] and len(res.ids) == 1
    written = rows(mem)
    assert [w["content"] for w in written] == ["Bob is under heavy stress because of the deadline."]
    w = written[0]
    assert w["agent"] == "ann" and w["importance"] >= 8
    assert w["source_ids"] == stress.cited_ids
    assert w["attributes"]["questions_addressed"] == ["How is Bob coping with the deadline?"]
    assert w["embedding_model"] == LOCAL_MODEL and w["embedding"] is not None
    # embedded with the store's model: the vector is the local model's vector of the text
    nearest = mem.vec_search(default_embedder().embed_one(w["content"]), 1)
    assert nearest[0][0] == w["id"] and nearest[0][1] < 1e-4
    assert mem.conn.execute("SELECT count(*) FROM memviz_audit").fetchone()[0] == audit_before + 1
    # accepting again writes nothing twice
    assert r.accept(run).ids == []
    assert len(rows(mem)) == 1


def test_wrong_ids_are_dropped_and_reported(mem, fake_openai):
    fake_openai.push(reply_json({"questions": ["How is Bob?"]}),
                     reply_json({"insights": [
                         {"insight": "Bob is stressed.", "evidence": [1, 99, "bob-12", "nonsense"]},
                         {"insight": "Invented.", "evidence": [42]}]}))
    r = reflector(mem, fake_openai, config={"questions": 1, "insights_per_question": 3})
    run = r.propose()
    assert [p.content for p in run.proposals] == ["Bob is stressed."]
    p = run.proposals[0]
    assert p.cited_ids == [p.evidence[0].id]
    assert p.dropped_citations == ["99", "bob-12", "nonsense"]
    text = " ".join(run.problems)
    assert "insight 1 cited 99, bob-12, nonsense" in text and "insight 2 has no valid citation left; dropped" in text
    res = r.accept(run, run.proposals)
    assert rows(mem)[0]["source_ids"] == [p.evidence[0].id]
    assert res.ids == [rows(mem)[0]["id"]]


def test_fences_and_prose_are_parsed(mem, fake_openai):
    fake_openai.push(reply_text('Sure! Here you go:\n```json\n{"questions": ["How is Bob?"]}\n```\nHope it helps.'),
                     reply_text('The insight is {"insights": [{"insight": "Bob works late.", "evidence": ["2"]}]} ok'))
    run = reflector(mem, fake_openai, config={"questions": 1}).propose()
    assert [p.content for p in run.proposals] == ["Bob works late."]


def test_cut_off_questions_write_nothing(mem, fake_openai):
    fake_openai.push(reply_text('{"questions": ["How is Bob', finish_reason="length"))
    with pytest.raises(LLMTruncated, match="cut off by the token limit"):
        reflector(mem, fake_openai).propose()
    assert rows(mem) == []


def test_one_bad_question_is_skipped_and_reported(mem, fake_openai):
    fake_openai.push(QUESTIONS,
                     reply_text('{"insights": [{"insight": "Bob', finish_reason="length"),
                     reply_json({"insights": [{"insight": "Ann gardens.", "evidence": [1]}]}))
    run = reflector(mem, fake_openai).propose()
    assert [p.content for p in run.proposals] == ["Ann gardens."]
    assert run.problems[0].startswith("question 1: The model's reply was cut off")


def test_server_errors_are_bounded_and_write_nothing(mem, fake_openai):
    fake_openai.push(reply_error(500), reply_error(500), reply_error(500))
    with pytest.raises(LLMHTTPError, match=r"server error \(500\).*tried 2 times"):
        reflector(mem, fake_openai, llm={"max_retries": 1}).propose()
    assert len(fake_openai.chat_requests()) == 2  # bounded: 1 try + 1 retry, the third reply unused
    assert rows(mem) == []


def test_dry_run_proposes_on_a_read_only_store(tmp_path, fake_openai):
    build_store(tmp_path / "m.db").close()
    ro = ms.open(str(tmp_path / "m.db"), read_only=True)
    fake_openai.push(QUESTIONS, *[reply_json({"insights": [{"insight": "x", "evidence": [1]}]})] * 2)
    r = reflector(ro, fake_openai)
    run = r.propose()
    assert len(run.proposals) == 2
    with pytest.raises(ReadOnlyError):
        r.accept(run, run.proposals)
    ro.close()
    s = ms.open(str(tmp_path / "m.db"))
    assert rows(s) == [] and s.counts()["total"] == len(ANN) + len(BOB)
    s.close()


def test_cancel_mid_way_writes_nothing_and_returns_quickly(mem, fake_openai):
    fake_openai.push(QUESTIONS, slow(30, reply_json({"insights": []})))

    import time
    cancelled_at = []

    def cancel_now():
        cancelled_at.append(time.monotonic())
        cancel.cancel()

    def on_progress(fraction, message):
        if "Asking for insights" in message:   # after the step count "[5/8] "
            threading.Timer(0.2, cancel_now).start()

    cancel = Task(on_progress=on_progress)
    with pytest.raises(Cancelled):
        reflector(mem, fake_openai, llm={"timeout": 60}).propose(cancel)
    assert cancelled_at and time.monotonic() - cancelled_at[0] < 10  # ended by the cancel: not the 30 s reply
    assert rows(mem) == []


def test_cancel_before_accept_writes_nothing(mem, fake_openai):
    fake_openai.push(reply_json({"questions": ["How is Bob?"]}),
                     reply_json({"insights": [{"insight": "Bob is stressed.", "evidence": [1]}]}))
    r = reflector(mem, fake_openai, config={"questions": 1})
    run = r.propose()
    cancel = Task()
    cancel.cancel()
    with pytest.raises(Cancelled):
        r.accept(run, run.proposals, task=cancel)
    assert rows(mem) == []


def test_edited_text_is_cleaned_and_stored_as_plain_text(mem, fake_openai):
    fake_openai.push(reply_json({"questions": ["How is Bob?"]}),
                     reply_json({"insights": [{"insight": "<b>Bob</b>\x1b[31m is\x00 stressed", "evidence": [1]}]}))
    r = reflector(mem, fake_openai, config={"questions": 1})
    run = r.propose()
    assert run.proposals[0].content == "<b>Bob</b>[31m is stressed"  # control characters gone, markup kept as text
    run.proposals[0].content = "  Bob is stressed by deadlines.  "
    r.accept(run, run.proposals)
    assert rows(mem)[0]["content"] == "Bob is stressed by deadlines."


def same_status_from_arrays(store, agent):
    """The window's meter reads the loaded arrays, the CLI the table: they agree."""
    st = importance_status(store, agent)
    assert importance_status(store, agent, arrays=store.arrays()) == st
    return st


def test_agent_choice_and_importance_status(mem, fake_openai):
    with pytest.raises(ValueError, match="several agents"):
        Reflector(mem, llm_for(fake_openai))
    st = same_status_from_arrays(mem, "ann")
    ann_importance = sum(3 + i % 6 for i in range(len(ANN)))
    assert st.accumulated == ann_importance and st.since is None and st.threshold == 100
    assert st.crossed == (ann_importance >= 100)
    mem.set_meta("reflection_threshold", 20)
    assert importance_status(mem, "ann").crossed
    fake_openai.push(reply_json({"questions": ["How is Bob?"]}),
                     reply_json({"insights": [{"insight": "Bob is stressed.", "evidence": [1]}]}))
    r = reflector(mem, fake_openai, config={"questions": 1})
    run = r.propose()
    r.accept(run, run.proposals)
    st = same_status_from_arrays(mem, "ann")
    assert st.accumulated == 0 and st.since is not None and not st.crossed
    mem.insert_memories([dict(agent="ann", kind="episode", content="Ann won a prize.", importance=9,
                              created_at=st.since + 10)])
    assert same_status_from_arrays(mem, "ann").accumulated == 9
    assert same_status_from_arrays(mem, "bob").accumulated == \
        sum(3 + i % 6 for i in range(len(ANN), len(ANN) + len(BOB)))


def test_nothing_to_reflect_on(store, fake_openai):
    with pytest.raises(ReflectError, match="no live memories"):
        Reflector(store, llm_for(fake_openai)).propose()
    assert fake_openai.chat_requests() == []


def test_evidence_is_live_and_of_the_agent_only(mem):
    mem.set_valid_until("ann-00", T0)  # the best match for "deadline", retired
    retrieve = vector_retriever(mem, agent="ann")
    ids = retrieve("Bob is stressed about the deadline", 5)
    assert len(ids) == 5 and "ann-00" not in ids and all(i.startswith("ann-") for i in ids)
    assert all("deadline" in mem.get(i)["content"] for i in ids[:2])


def test_default_retriever_is_the_engine(mem, fake_openai):
    from memviz.reflect import default_retriever
    mem.set_valid_until("ann-09", T0)
    retrieve = default_retriever(mem, agent="ann")
    assert retrieve.__qualname__.startswith("engine_retriever")
    ids = retrieve("Who stays late at the office before the deadline?", 4)
    assert len(ids) == 4 and all(i.startswith("ann-") for i in ids) and "ann-09" not in ids
    assert any("deadline" in mem.get(i)["content"] for i in ids[:2])


def test_stale_retriever_results_are_filtered(mem, fake_openai):
    """A retriever built earlier (the window keeps one) may still rank a memory retired since:
    the Reflector drops it and still offers `evidence` memories."""
    retrieve = vector_retriever(mem, agent=None)  # no agent filter: bob's memories come too
    mem.set_valid_until("ann-09", T0)
    fake_openai.push(reply_json({"questions": ["Who works late before the deadline?"]}),
                     reply_json({"insights": [{"insight": "Bob works late.", "evidence": [1]}]}))
    r = Reflector(mem, llm_for(fake_openai), agent="ann", config=ReflectionConfig(questions=1, evidence=5),
                  retriever=lambda q, k: ["ann-09", "bob-12"] + retrieve(q, k))
    run = r.propose()
    ev = [e.id for e in run.proposals[0].evidence]
    assert len(ev) == 5 and "ann-09" not in ev and all(i.startswith("ann-") for i in ev)


def test_store_without_embeddings(tmp_path, fake_openai):
    s = ms.create(str(tmp_path / "plain.db"))
    s.insert_memories([dict(id=f"m{i}", agent="ann", kind="episode", content=t) for i, t in enumerate(ANN)])
    retrieve = vector_retriever(s, agent="ann")  # nothing to embed with: full-text search
    assert retrieve.__qualname__.startswith("fts_retriever")
    assert mem_ids_with(s, retrieve("tomatoes garden", 3), "tomato")
    for embedding_model, embedded in ((None, False), (LOCAL_MODEL, True)):
        fake_openai.push(reply_json({"questions": ["What does Ann grow?"]}),
                         reply_json({"insights": [{"insight": f"Ann grows tomatoes ({embedded}).", "evidence": [1]}]}))
        r = Reflector(s, llm_for(fake_openai, embedding_model=embedding_model), agent="ann",
                      config=ReflectionConfig(questions=1))
        run = r.propose()
        res = r.accept(run, run.proposals)
        row = s.get(res.ids[0])
        assert (row["embedding"] is not None) == embedded
        assert row["attributes"].get("needs_embedding", False) == (not embedded)
        assert (res.problems != []) == (not embedded)
    s.close()


def mem_ids_with(store, ids, word):
    return [i for i in ids if word in store.get(i)["content"]]
