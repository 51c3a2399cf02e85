"""The Generative Agents importer: the real persona from the GA repository, and hand-made
personas with the file quirks (filling shapes, missing ids, embeddings.json, several personas)."""
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from progress_log import counting

import memviz.store as ms
from memviz.cli import main as cli_main
from memviz.embed import LOCAL_MODEL, default_embedder
from memviz.importers import ImportFailed, import_generative_agents
from memviz.importers.generative_agents import ADA_MODEL
from tests.conftest import REAL_PERSONA as REAL  # noqa: E402
from tests.conftest import needs_real

REAL_NODES = REAL / "bootstrap_memory" / "associative_memory" / "nodes.json"


def tree_digest(folder) -> dict:
    out = {}
    for root, _, files in os.walk(folder, followlinks=True):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, folder)] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


def filling_ids(filling) -> list[str]:
    """The node ids a GA filling names (list of ids, one id as a string, null, or chat pairs)."""
    if isinstance(filling, str):
        return [filling]
    return [x for x in (filling or []) if isinstance(x, str)]


# ----------------------------------------------------------------------------- the real persona
@pytest.fixture(scope="module")
def real_import(tmp_path_factory):
    out = tmp_path_factory.mktemp("ga") / "isabella.db"
    before = tree_digest(REAL)
    seen = []
    report = import_generative_agents(REAL, out, task=counting(seen))
    assert tree_digest(REAL) == before, "the source folder changed"
    store = ms.open(str(out))
    nodes = json.loads(REAL_NODES.read_text())
    yield store, nodes, report, seen, out
    store.close()


@needs_real
def test_real_persona_every_node_present(real_import):
    store, nodes, report, seen, _ = real_import
    assert len(nodes) == 912 and report.imported == 912 and not report.skipped
    rows = {r["id"]: r for r in store.get_many(list(nodes))}
    assert set(rows) == set(nodes)
    assert Counter(r["attributes"]["ga_type"] for r in rows.values()) == Counter(n["type"] for n in nodes.values())
    for nid, n in nodes.items():
        r = rows[nid]
        a = r["attributes"]
        assert a["node_id"] == nid and a["node_count"] == n["node_count"] and a["type_count"] == n["type_count"]
        assert a["embedding_key"] == n["embedding_key"] and a["depth"] == n["depth"]
        assert (a["subject"], a["predicate"], a["object"]) == (n["subject"], n["predicate"], n["object"])
        assert a["keywords"] == n["keywords"] and a["poignancy"] == n["poignancy"] == r["importance"]
        assert r["kind"] == ("reflection" if n["type"] == "thought" else "episode")
        created = ms.to_epoch(n["created"])           # GA local time taken as UTC
        assert r["event_time"] == r["created_at"] == r["last_accessed"] == created
        assert a["expiration"] == (ms.to_epoch(n["expiration"]) if n["expiration"] else None)
        assert r["content"].startswith(n["description"])
    assert ms.iso(rows["node_1"]["event_time"]) == "2023-02-13 00:00:00"
    # progress went from 0 to the end, monotonically
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


@needs_real
def test_real_persona_every_existing_filling_link_is_a_source(real_import):
    store, nodes, _, _, _ = real_import
    expected = {(nid, f) for nid, n in nodes.items() for f in filling_ids(n["filling"]) if f in nodes}
    assert len(expected) > 500   # counted from nodes.json: thoughts' evidence plus events pointing at chats
    prov = store.provenance()
    assert set(prov.sources) == expected and len(prov.sources) == len(expected)
    assert prov.dangling == []
    # the string filling (node_881 -> "node_1") became a list; null fillings give no sources
    assert store.get("node_881")["source_ids"] == ["node_1"]
    nulls = [nid for nid, n in nodes.items() if n["type"] == "thought" and n["filling"] is None]
    assert nulls and all(store.get(nid)["source_ids"] == [] for nid in nulls)
    assert {i.where for i in _quirks(real_import, "filling-null")} == set(nulls)


def _quirks(real_import, code):
    return [i for i in real_import[2].quirks if i.code == code]


@needs_real
def test_real_persona_thought_graph_is_multi_level(real_import):
    store, nodes, _, _, _ = real_import
    parents: dict[str, list[str]] = {}
    for derived, src in store.provenance().sources:
        parents.setdefault(derived, []).append(src)
    kinds = {r["id"]: r["kind"] for r in store.get_many(list(nodes))}

    def level(mid, seen=()):
        # how many reflections stand on top of each other down to the episodes
        if kinds[mid] != "reflection" or mid in seen:
            return 0
        return 1 + max((level(s, (*seen, mid)) for s in parents.get(mid, [])), default=0)

    levels = {mid: level(mid) for mid in nodes}
    assert max(levels.values()) >= 3
    # the graph levels agree with GA's own depth for reflections on reflections
    deepest = max(levels, key=levels.get)
    assert nodes[deepest]["depth"] >= levels[deepest]
    reflections_on_reflections = [d for d, s in store.provenance().sources if kinds[d] == kinds[s] == "reflection"]
    assert len(reflections_on_reflections) > 10


@needs_real
def test_real_persona_chats_readable_and_marked(real_import):
    store, nodes, _, _, _ = real_import
    chats = {nid: n for nid, n in nodes.items() if n["type"] == "chat"}
    assert len(chats) == 4
    for nid, n in chats.items():
        r = store.get(nid)
        assert r["kind"] == "episode" and "dialogue" in r["tags"] and r["source_ids"] == []
        assert r["attributes"]["dialogue"] == n["filling"]
        for speaker, utterance in n["filling"]:
            assert f"{speaker}: {utterance}" in r["content"]
    # full-text search finds words that are only in the conversation
    first_utterance = next(iter(chats.values()))["filling"][0][1]
    word = max((w.strip(",.!?") for w in first_utterance.split()), key=len)
    assert set(chats) & {i for i, _ in store.fts_search(word, 50)}
    plans = [r["id"] for r in store.get_many(list(nodes)) if "plan" in r["tags"]]
    assert {"node_7", "node_912", "node_729"} <= set(plans)
    assert all(nodes[p]["type"] == "thought" for p in plans)


@needs_real
def test_real_persona_embeddings_weights_and_meta(real_import):
    store, nodes, report, _, out = real_import
    arrays = store.arrays()
    assert arrays.embedding_model == LOCAL_MODEL and arrays.has_embedding.all()
    # one vector per embedding key, the local model's vector of that key
    by_key = {}
    for i, mid in enumerate(arrays.ids):
        by_key.setdefault(nodes[mid]["embedding_key"], []).append(i)
    for rows in by_key.values():
        assert np.allclose(arrays.embedding[rows], arrays.embedding[rows[0]])
    key = nodes["node_912"]["embedding_key"]
    want = default_embedder().embed_one(key)
    assert np.allclose(arrays.embedding[arrays.index_of("node_912")], want, atol=1e-5)

    scratch = json.loads((REAL / "bootstrap_memory" / "scratch.json").read_text())
    weights = store.meta("ga_weights")["Isabella Rodriguez"]
    assert weights == {k: scratch[k] for k in ("recency_w", "relevance_w", "importance_w", "recency_decay")}
    assert ms.iso(store.meta("ga_curr_time")["Isabella Rodriguez"]) == "2023-02-14 00:02:20"
    assert store.meta("ga_kw_strength")["Isabella Rodriguez"] == json.loads(
        (REAL / "bootstrap_memory" / "associative_memory" / "kw_strength.json").read_text())
    prov = store.meta("import")
    assert prov["format"] == "generative-agents" and prov["source"] == str(REAL)
    assert prov["counts"]["imported"] == 912 and prov["quirks_by_code"] == {"filling-null": 7, "filling-string": 1}
    assert prov["embedding"]["model"] == LOCAL_MODEL and prov["finished_at"] >= prov["started_at"]
    # each distinct embedding key embedded once
    assert prov["embedding"]["texts_embedded"] == len({n["embedding_key"] for n in nodes.values()})
    left = set(os.listdir(out.parent)) - {out.name, out.name + "-wal", out.name + "-shm"}  # the store is open
    assert not left, "temporary files were left behind"


@needs_real
def test_real_persona_stats_command(real_import, capsys):
    _, _, _, _, out = real_import
    assert cli_main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "memories: 912" in text and "Isabella Rodriguez" in text and "integrity: ok" in text
    assert cli_main(["stats", "--json", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["counts"]["by_kind"] == {"episode": [766, 0], "reflection": [146, 0]}


@needs_real
@pytest.mark.parametrize("level", ["persona", "bootstrap", "memory", "nodes"])
def test_every_entry_point_finds_the_persona(tmp_path, level):
    src = {"persona": REAL, "bootstrap": REAL / "bootstrap_memory",
           "memory": REAL_NODES.parent, "nodes": REAL_NODES}[level]
    report = import_generative_agents(src, tmp_path / "o.db")
    assert report.imported == 912 and report.agents == ["Isabella Rodriguez"]


# ----------------------------------------------------------------------------- hand-made personas
def node(n, typ, created, desc, *, filling=None, type_count=1, depth=0, poignancy=3, expiration=None, key=None,
         spo=("Ann", "is", "x")):
    return f"node_{n}", {
        "node_count": n, "type_count": type_count, "type": typ, "depth": depth, "created": created,
        "expiration": expiration, "subject": spo[0], "predicate": spo[1], "object": spo[2],
        "description": desc, "embedding_key": key or desc, "poignancy": poignancy,
        "keywords": [spo[0], spo[2]], "filling": [] if filling is None and typ != "thought" else filling,
    }


def make_persona(folder: Path, name: str, nodes: list, *, weights=(1, 1, 1, 0.995), embeddings: dict | None = None,
                 scratch: bool = True):
    mem = folder / "bootstrap_memory" / "associative_memory"
    mem.mkdir(parents=True)
    # GA writes nodes newest first
    (mem / "nodes.json").write_text(json.dumps(dict(reversed(nodes))))
    (mem / "kw_strength.json").write_text(json.dumps({"kw_strength_event": {"x": 1}, "kw_strength_thought": {}}))
    if embeddings is not None:
        (mem / "embeddings.json").write_text(json.dumps(embeddings))
    if scratch:
        rw, lw, iw, decay = weights
        (folder / "bootstrap_memory" / "scratch.json").write_text(json.dumps({
            "name": name, "curr_time": "February 13, 2023, 10:00:00",
            "recency_w": rw, "relevance_w": lw, "importance_w": iw, "recency_decay": decay}))
    return folder


def ann_nodes():
    chat = [["Ann", "Shall we bake bread tomorrow?"], ["Bob", "Yes, rye bread at noon."]]
    return [
        node(1, "event", "2023-02-13 08:00:00", "Ann is idle", poignancy=1),
        node(2, "event", "2023-02-13 09:00:00", "Ann is baking bread", type_count=2, poignancy=4),
        node(3, "chat", "2023-02-13 09:30:00", "conversing about bread", filling=chat, poignancy=5,
             spo=("Ann", "chat with", "Bob")),
        node(4, "event", "2023-02-13 09:30:00", "Ann is conversing about bread", filling=["node_3"], type_count=3),
        node(5, "thought", "2023-02-13 10:00:00", "Ann loves baking", filling=["node_2", "node_4", "node_99"],
             depth=1, poignancy=7, expiration="2023-03-15 10:00:00"),
        node(6, "thought", "2023-02-13 10:00:00", "Ann is a baker at heart", filling="node_5", type_count=2,
             depth=2, poignancy=8),
        node(7, "thought", "2023-02-13 10:05:00", "This is Ann's plan for Monday February 13: bake", filling=None,
             type_count=3, depth=1, spo=("Ann", "plan", "Monday February 13")),
    ]


def test_handmade_quirks_with_embeddings_file(tmp_path):
    nodes = ann_nodes()
    keys = sorted({n["embedding_key"] for _, n in nodes} - {"Ann is a baker at heart"})  # one key has no vector
    rng = np.random.default_rng(1)
    vecs = {k: rng.normal(size=12).tolist() for k in keys}
    persona = make_persona(tmp_path / "Ann", "Ann Baker", nodes, weights=(1, 2, 3, 0.99), embeddings=vecs)
    before = tree_digest(persona)
    report = import_generative_agents(persona, tmp_path / "ann.db")
    assert tree_digest(persona) == before
    with ms.open(str(tmp_path / "ann.db")) as s:
        rows = {r["id"]: r for r in s.get_many([f"node_{i}" for i in range(1, 8)])}
        assert len(rows) == 7 and {r["agent"] for r in rows.values()} == {"Ann Baker"}
        # list with a missing id: existing ones are sources, the missing one stays in attributes and is reported
        assert rows["node_5"]["source_ids"] == ["node_2", "node_4"]
        assert rows["node_5"]["attributes"]["missing_sources"] == ["node_99"]
        assert [(i.where, i.code) for i in report.quirks if "node_99" in i.message] == [("node_5", "missing-source")]
        assert rows["node_5"]["attributes"]["expiration"] == ms.to_epoch("2023-03-15T10:00:00")
        assert rows["node_6"]["source_ids"] == ["node_5"]                  # a single id as a string
        assert rows["node_7"]["source_ids"] == [] and rows["node_7"]["tags"] == ["plan"]  # null filling, a plan
        assert rows["node_4"]["source_ids"] == ["node_3"]                  # an event pointing at its chat
        chat = rows["node_3"]
        assert chat["attributes"]["dialogue"] == [["Ann", "Shall we bake bread tomorrow?"], ["Bob", "Yes, rye bread at noon."]]
        assert chat["content"] == "conversing about bread\n\nAnn: Shall we bake bread tomorrow?\nBob: Yes, rye bread at noon."
        assert chat["source_ids"] == [] and chat["tags"] == ["dialogue"]
        assert {i: rows[i]["kind"] for i in rows} == {"node_1": "episode", "node_2": "episode", "node_3": "episode",
                                                       "node_4": "episode", "node_5": "reflection",
                                                       "node_6": "reflection", "node_7": "reflection"}
        # vectors from embeddings.json, recorded as ada-002 with the file's dimension
        assert s.embedding_models() == [(ADA_MODEL, 12, 6)]
        a = s.arrays()
        got = a.embedding[a.index_of("node_2")]
        want = np.array(vecs["Ann is baking bread"], np.float32)
        assert np.allclose(got, want / np.linalg.norm(want), atol=1e-6)
        assert not a.has_embedding[a.index_of("node_6")]
        assert [i.where for i in report.quirks if i.code == "no-vector"] == ["node_6"]
        assert s.meta("ga_weights") == {"Ann Baker": {"recency_w": 1.0, "relevance_w": 2.0, "importance_w": 3.0,
                                                      "recency_decay": 0.99}}
        assert s.meta("import")["embedding"] == {"model": ADA_MODEL, "dim": 12, "origin": "source", "count": 6}
    # --reembed ignores the file and embeds every key locally
    report = import_generative_agents(persona, tmp_path / "local.db", reembed=True)
    with ms.open(str(tmp_path / "local.db")) as s:
        assert s.embedding_models() == [(LOCAL_MODEL, 256, 7)]
    assert any("--reembed" in w for w in report.warnings)


def test_storage_folder_with_several_personas(tmp_path):
    sim = tmp_path / "sim" / "personas"
    make_persona(sim / "Ann Baker", "Ann Baker", ann_nodes(), weights=(1, 1, 1, 0.99))
    bob = [node(1, "event", "2023-02-13 08:00:00", "Bob is reading"),
           node(2, "thought", "2023-02-13 09:00:00", "Bob likes books", filling=["node_1"], depth=1)]
    make_persona(sim / "Bob Reader", "Bob Reader", bob, weights=(0.5, 1, 2, 0.9),
                 embeddings={"Bob is reading": [1.0, 0.0], "Bob likes books": [0.0, 1.0]})
    report = import_generative_agents(tmp_path / "sim", tmp_path / "sim.db")
    assert report.agents == ["Ann Baker", "Bob Reader"] and report.imported == 9
    # only one persona has embeddings.json: everything is embedded locally so the store has one model
    assert any("only some personas" in w for w in report.warnings)
    with ms.open(str(tmp_path / "sim.db")) as s:
        assert s.embedding_models() == [(LOCAL_MODEL, 256, 9)]
        ids = set(s.arrays().ids)
        assert "Ann Baker/node_1" in ids and "Bob Reader/node_1" in ids and "node_1" not in ids
        bob2 = s.get("Bob Reader/node_2")
        assert bob2["source_ids"] == ["Bob Reader/node_1"] and bob2["attributes"]["node_id"] == "node_2"
        assert s.get("Ann Baker/node_5")["source_ids"] == ["Ann Baker/node_2", "Ann Baker/node_4"]
        assert s.provenance().dangling == []
        assert set(s.meta("ga_weights")) == {"Ann Baker", "Bob Reader"}
        assert s.meta("ga_weights")["Bob Reader"]["recency_decay"] == 0.9
        assert s.meta("ga_personas")["Bob Reader"]["id_prefix"] == "Bob Reader/"


@needs_real
def test_storage_folder_with_the_real_persona_linked(tmp_path):
    personas = tmp_path / "sim" / "personas"
    personas.mkdir(parents=True)
    (personas / "Isabella Rodriguez").symlink_to(REAL, target_is_directory=True)
    make_persona(personas / "Ann Baker", "Ann Baker", ann_nodes())
    report = import_generative_agents(tmp_path / "sim", tmp_path / "sim.db")
    assert report.imported == 912 + 7
    with ms.open(str(tmp_path / "sim.db")) as s:
        assert s.counts()["by_agent"] == {"Isabella Rodriguez": [912, 0], "Ann Baker": [7, 0]}
        assert s.get("Isabella Rodriguez/node_881")["source_ids"] == ["Isabella Rodriguez/node_1"]


def test_missing_scratch_and_unreadable_nodes(tmp_path):
    folder = make_persona(tmp_path / "Cy", "Cy", [node(1, "event", "2023-02-13 08:00:00", "Cy waves"),
                                                  node(2, "event", "not a time", "Cy sits", type_count=2)],
                          scratch=False)
    report = import_generative_agents(folder, tmp_path / "cy.db")
    assert report.imported == 1 and [(i.where, i.code) for i in report.skipped] == [("node_2", "no-created")]
    assert any("no scratch.json" in w for w in report.warnings)
    with ms.open(str(tmp_path / "cy.db")) as s:
        assert s.get("node_1")["agent"] == "Cy" and s.meta("ga_weights") == {}
        assert s.meta("import")["skipped"][0]["where"] == "node_2"


def test_bad_sources_give_clear_errors(tmp_path):
    with pytest.raises(ImportFailed, match="No Generative Agents memory"):
        import_generative_agents(tmp_path, tmp_path / "o.db")
    with pytest.raises(ImportFailed, match="No such file or folder"):
        import_generative_agents(tmp_path / "nowhere", tmp_path / "o.db")
    folder = make_persona(tmp_path / "Dee", "Dee", ann_nodes())
    nodes = folder / "bootstrap_memory" / "associative_memory" / "nodes.json"
    nodes.write_text(nodes.read_text()[:200])    # truncated
    with pytest.raises(ImportFailed, match=r"nodes.json is not valid JSON .*line 1"):
        import_generative_agents(folder, tmp_path / "o.db")
    assert os.listdir(tmp_path) == ["Dee"]      # nothing written, no temporary file left
    # the same persona twice (two simulations in one folder) is refused
    make_persona(tmp_path / "a" / "Eve", "Eve", ann_nodes())
    make_persona(tmp_path / "b" / "Eve", "Eve", ann_nodes())
    with pytest.raises(ImportFailed, match="Several folders hold the memory of 'Eve'"):
        import_generative_agents(tmp_path, tmp_path / "o.db")
