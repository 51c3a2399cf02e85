"""Small real stores for the app tests (memviz.store.create + the local embedder), and the
helpers the app test files share. Holds no tests itself."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import memviz.store as ms  # noqa: E402
from memviz.embed import default_embedder  # noqa: E402

T0 = 1_767_225_600  # 2026-01-01 UTC

EPISODES = [
    ("alice", "Alice said she is allergic to peanuts and asked for a nut-free recipe."),
    ("alice", "Alice asked for a vegetarian lasagna recipe for Saturday dinner."),
    ("alice", "Alice mentioned her sister Maya is visiting from Lisbon next week."),
    ("alice", "Alice booked a train to Porto for the conference on March 3."),
    ("alice", "Alice complained that the coffee machine at work is broken again."),
    ("alice", "Alice prefers tea in the afternoon and coffee in the morning."),
    ("bob", "Bob is training for a half marathon in April and runs three times a week."),
    ("bob", "Bob asked how to fix a flaky pytest that depends on the system clock."),
    ("bob", "Bob's dog Pixel had a vet appointment about a sore paw."),
    ("bob", "Bob wants to learn Portuguese before his trip to Brazil."),
    ("bob", "Bob said his laptop battery drains quickly when the GPU is busy."),
    ("bob", "Bob cooked a mushroom risotto and asked about wine pairings."),
]
FACTS = [
    ("alice", "Alice is allergic to peanuts.", [0]),
    ("alice", "Alice's sister is called Maya and lives in Lisbon.", [2]),
    ("bob", "Bob owns a dog named Pixel.", [8]),
    ("bob", "Bob is learning Portuguese.", [9]),
]


def build_store(path, *, with_reflections: bool = True):
    """A store with episodes, facts derived from them, reflections over facts (two levels),
    one correction (supersede), one soft-deleted memory and one broken source link."""
    emb = default_embedder()
    store = ms.create(str(path))
    texts = [t for _, t in EPISODES]
    vecs = emb.embed(texts)
    recs = []
    for i, ((agent, text), v) in enumerate(zip(EPISODES, vecs)):
        recs.append({"id": f"ep{i:02d}", "kind": "episode", "agent": agent, "content": text,
                     "importance": 2 + (i * 7) % 8, "event_time": T0 + i * 3600 * 20,
                     "embedding": v, "embedding_model": emb.model})
    fvecs = emb.embed([t for _, t, _ in FACTS])
    for j, ((agent, text, src), v) in enumerate(zip(FACTS, fvecs)):
        recs.append({"id": f"fact{j}", "kind": "fact", "agent": agent, "content": text, "importance": 7,
                     "event_time": T0 + (src[0] + 1) * 3600 * 20, "source_ids": [f"ep{s:02d}" for s in src],
                     "embedding": v, "embedding_model": emb.model})
    store.insert_memories(recs)
    if with_reflections:
        r = [("refl0", "alice", "Alice needs meals planned around a peanut allergy.", ["fact0", "ep01"]),
             ("refl1", "bob", "Bob is preparing for travel to Brazil.", ["fact3", "ep09", "ghost-id"]),
             ("refl2", "alice", "Alice's family visits shape her week.", ["refl0", "fact1"])]
        rv = emb.embed([t for _, _, t, _ in r])
        store.insert_memories([{"id": i, "kind": "reflection", "agent": a, "content": t, "importance": 9,
                                "event_time": T0 + 3600 * 250 + k * 3600, "source_ids": s,
                                "embedding": v, "embedding_model": emb.model}
                               for k, ((i, a, t, s), v) in enumerate(zip(r, rv))])
    new_text = "Bob owns a dog named Pixel, a border collie."
    store.supersede("fact2", new_text, embedding=emb.embed_one(new_text), embedding_model=emb.model,
                    when=T0 + 3600 * 260, new_id_="fact2b")
    store.set_valid_until("ep04", T0 + 3600 * 270)
    return store
