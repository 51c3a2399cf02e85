"""Plugins (memviz/plugins.py), headless.

tests/plugins/memviz-toy is a plugin package as a user would install it: a memory system on a
JSON file (one edit allowed), a preset, an import format and an embedder, declared as entry
points. memviz recognises, opens, edits and ranks with it without any change to memviz.
tests/plugins/memviz-broken holds every way a plugin goes wrong: each is named in one line
(`memviz --version`, stderr) and skipped, and memviz goes on.

Both packages are built and installed once per session into temporary folders (`pip install
--no-deps --no-build-isolation --no-index --target`: offline, nothing changed in the
environment), and memviz runs in subprocesses with those folders on PYTHONPATH, where
importlib.metadata finds their entry points as in any environment. `on_path` does the same in
this process, for the window's tests (test_plugins_app.py), and leaves the registries as they were.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import memviz.embed as embed
import memviz.frameworks as fw
import memviz.importers as importers
from memviz import plugins
from memviz.retrieval import all_presets

HERE = Path(__file__).resolve().parent
PACKAGES = {"toy": HERE / "plugins" / "memviz-toy", "broken": HERE / "plugins" / "memviz-broken"}
BUILT_IN = {"presets": ("dual-memory", "generative-agents", "ada", "hybrid", "working-memory"),
            "formats": ("generative-agents", "openmemory", "letta-af", "ada-stream", "jsonl")}

TOY_RECORDS = [
    {"id": "r1", "text": "The user likes green tea in the morning.", "at": "2025-03-01T09:00:00Z", "tags": ["drink"]},
    {"id": "r2", "text": "The user lives in Lisbon.", "at": "2025-03-05T10:00:00Z"},
    {"id": "r3", "text": "The user is learning to play the cello.", "at": "2025-03-09T18:30:00Z", "tags": ["hobby"]},
]


@pytest.fixture(scope="session")
def plugin_dirs(tmp_path_factory) -> dict[str, str]:
    """name -> a folder the package is installed in (built from a copy: the tree stays clean)."""
    root = tmp_path_factory.mktemp("plugins")
    out = {}
    for name, src in PACKAGES.items():
        copy = root / f"src-{name}"
        shutil.copytree(src, copy)
        target = root / name
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                               "--no-index", "--target", str(target), str(copy)], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"pip could not install {src}:\n{done.stdout}\n{done.stderr}"
        out[name] = str(target)
    return out


def toy_file(path: Path, records=TOY_RECORDS) -> Path:
    path.write_text(json.dumps({"toymem": 1, "records": records}, indent=2), encoding="utf-8")
    return path


def memviz(tmp_path, dirs, *args, code: int | None = 0) -> subprocess.CompletedProcess:
    """`python -m memviz ARGS` with the plugin folders `dirs` on its path, its own cache and data."""
    path = os.pathsep.join([*dirs, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "MEMVIZ_CACHE_DIR": str(tmp_path / "cache"),
           "MEMVIZ_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "memviz", *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300)
    if code is not None:
        assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@contextlib.contextmanager
def on_path(*dirs: str):
    """The plugins in `dirs` installed for this process, and taken away again after."""
    sys.path[:0] = dirs
    importlib.invalidate_caches()
    plugins.reset()
    try:
        yield
    finally:
        for d in dirs:
            sys.path.remove(d)
        for name in [m for m in sys.modules if m.split(".")[0] in ("memviz_toy", "memviz_broken")]:
            del sys.modules[name]
        plugins.reset()


# ------------------------------------------------------------------ the example plugin, as a user meets it
def test_version_lists_each_plugin_with_its_group_distribution_and_state(tmp_path, plugin_dirs):
    out = memviz(tmp_path, [plugin_dirs["toy"]], "--version").stdout
    assert "plugins: 4" in out
    for name, group in (("toymem", "memviz.sources"), ("toy-recency", "memviz.presets"),
                        ("toy-notes", "memviz.importers"), ("toy-hash", "memviz.embedders")):
        assert f"plugin {name} (" in out and f"{group}, from memviz-toy 0.1.0): OK" in out.split(f"plugin {name} (")[1]
    bare = memviz(tmp_path, [], "--version").stdout
    assert "plugins: none installed" in bare


def test_help_loads_no_plugin_and_a_command_loads_them(tmp_path, plugin_dirs):
    dirs = [plugin_dirs["toy"], plugin_dirs["broken"]]
    probe = ("import sys, contextlib, io\nfrom memviz.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
             "from memviz import plugins\n"
             "print(sorted(m for m in sys.modules if m.startswith(('memviz_toy', 'memviz_broken'))), plugins._scan)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*dirs, *filter(None, [os.environ.get("PYTHONPATH")])])}
    top = subprocess.run([sys.executable, "-c", probe, "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert top.returncode == 0 and top.stdout.strip() == "[] None", top.stdout + top.stderr  # not even looked for
    assert "skipped" not in top.stderr  # nothing loaded, nothing to say
    query = subprocess.run([sys.executable, "-c", probe, "query", "--help"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert "memviz_toy.preset" in query.stdout  # the query's options list the plugins' presets
    assert "dual-memory (retrieval preset, memviz.presets, from memviz-broken 0.0.1): skipped" in query.stderr
    listed = memviz(tmp_path, dirs, "query", "--help").stdout
    assert "toy-recency:" in listed and "toy-recency}" in listed.replace("\n", "").replace(" ", "")


def test_the_toy_store_is_recognised_opened_and_ranked_with_the_toy_preset(tmp_path, plugin_dirs):
    store = toy_file(tmp_path / "notes.json")
    stats = memviz(tmp_path, [plugin_dirs["toy"]], "stats", store).stdout
    assert "memories: 3  live 3" in stats and "toy/hash-64" in stats and "by agent:\n  toy " in stats
    done = memviz(tmp_path, [plugin_dirs["toy"]], "query", store, "green tea", "--preset", "toy-recency", "--json")
    rows = json.loads(done.stdout)
    newest = max(json_time(r["at"]) for r in TOY_RECORDS)  # the clock: the newest memory
    by_id = {r["id"]: r for r in rows}
    for rec in TOY_RECORDS:
        got = by_id[rec["id"]]
        age = (newest - json_time(rec["at"])) / 3600
        assert got["age_hours"] == pytest.approx(age) and got["freshness"] == pytest.approx(1 / (1 + age / 48))
        assert got["score"] == pytest.approx(0.4 * got["relevance"] + 0.6 * got["freshness"])
    assert by_id["r1"]["relevance"] > 0.3 and by_id["r3"]["relevance"] == 0  # the plugin's embedder embedded the query
    assert [r["id"] for r in rows] == [r["id"] for r in sorted(rows, key=lambda r: -r["score"])]


def json_time(text: str) -> float:
    from memviz.store import to_epoch
    return to_epoch(text)


def test_the_one_edit_it_allows_is_written_back_to_the_file_and_the_others_are_refused(tmp_path, plugin_dirs):
    store = toy_file(tmp_path / "notes.json")
    toy = [plugin_dirs["toy"]]
    memviz(tmp_path, toy, "edit", store, "correct", "r2", "The user lives in Porto.")
    doc = json.loads(store.read_text(encoding="utf-8"))
    assert doc["toymem"] == 1 and [r["text"] for r in doc["records"]] == [
        TOY_RECORDS[0]["text"], "The user lives in Porto.", TOY_RECORDS[2]["text"]]
    assert doc["records"][0] == TOY_RECORDS[0]  # the others as they were
    hits = json.loads(memviz(tmp_path, toy, "query", store, "Porto", "--preset", "toy-recency", "--json", "-k", "3").stdout)
    assert next(r for r in hits if r["id"] == "r2")["relevance"] > 0.3  # the mirror holds the new text and its vector
    history = memviz(tmp_path, toy, "edit", store, "history", "r2").stdout
    assert "correct" in history and "Porto" in history  # audited like any edit
    for action in (["importance", "8", "r1"], ["delete", "r1"]):
        refused = memviz(tmp_path, toy, "edit", store, *action, code=2)
        assert "is a Toy memory store: memviz cannot write" in refused.stderr
        assert "(it supports: correcting a memory's text)" in refused.stderr
    assert json.loads(store.read_text(encoding="utf-8")) == doc  # nothing written by a refused edit


def test_the_toy_import_format_is_detected_and_imports_with_the_toy_embedder(tmp_path, plugin_dirs):
    notes = tmp_path / "notes.txt"
    notes.write_text("# toy notes\n2025-03-01T09:00:00Z\tThe user likes green tea.\n"
                     "2025-03-02T09:00:00Z\tThe user has a black cat.\nno tab here\n", encoding="utf-8")
    toy = [plugin_dirs["toy"]]
    done = memviz(tmp_path, toy, "import", "toy-notes", notes, "-o", tmp_path / "notes.db")
    assert "imported 2 of 3 memories" in done.stdout and "toy/hash-64" in done.stdout and "no-text" in done.stdout
    top = json.loads(memviz(tmp_path, toy, "query", tmp_path / "notes.db", "black cat", "--json", "-k", "1").stdout)
    assert top[0]["content"] == "The user has a black cat." and top[0]["relevance"] > 0.5
    wrong = memviz(tmp_path, toy, "import", "jsonl", notes, "-o", tmp_path / "x.db", code=2)
    assert "It looks like toy-notes" in wrong.stderr  # detection knows the plugin's format


# ------------------------------------------------------------------ plugins that go wrong
SKIPPED = {  # plugin -> what its one line says
    "explodes": "it cannot be imported: RuntimeError: this plugin fails on purpose when it is imported",
    "no-records": "NoRecords does not implement records()",
    "fake-mem0": "the memory system key 'mem0' is already registered: memviz's own, which wins",
    "dual-memory": "a preset named 'dual-memory' is already registered: memviz's own, which wins",
    "toy-recency": "a preset named 'toy-recency' is already registered: plugin toy-recency (retrieval preset, "
                   "memviz.presets, from memviz-toy 0.1.0), loaded first",
    "not-a-preset": "is not a retrieval preset: make it a memviz.retrieval.presets.Preset",
    "bad-run": "run cannot be called as memviz calls it, run(source, output, force=..., task=...)",
    "bad-dim": "BadDim.dim must be the (positive int) size of its vectors, not '64'",
}


def skipped_lines(text: str) -> dict[str, str]:
    """plugin name -> its line, for the lines of memviz-broken's plugins said skipped in `text`."""
    out = {}
    for line in text.splitlines():
        if "from memviz-broken 0.0.1): skipped: " in line:
            out[line.split("plugin ", 1)[1].split(" (", 1)[0]] = line
    return out


def test_version_names_each_broken_plugin_and_why_in_one_line(tmp_path, plugin_dirs):
    out = memviz(tmp_path, [plugin_dirs["toy"], plugin_dirs["broken"]], "--version").stdout
    lines = skipped_lines(out)
    assert lines.keys() == SKIPPED.keys()
    for name, why in SKIPPED.items():
        assert why in lines[name], lines[name]
    for name in ("grabby", "wrong-answer"):  # OK until they are used
        assert f"plugin {name} (memory system, memviz.sources, from memviz-broken 0.0.1): OK" in out
    assert out.count("from memviz-toy 0.1.0): OK") == 4  # the toy plugin works beside them


def test_a_command_says_each_skipped_plugin_on_stderr_and_goes_on_with_the_built_ins(tmp_path, plugin_dirs):
    dirs = [plugin_dirs["toy"], plugin_dirs["broken"]]
    store = toy_file(tmp_path / "notes.json")
    done = memviz(tmp_path, dirs, "query", store, "green tea", "--preset", "dual-memory", "-k", "1")
    assert "dual-memory: score = α·cosine + β·exp(-Δt/τ)" in done.stdout  # memviz's own preset, not the impostor
    lines = skipped_lines(done.stderr)
    assert {"dual-memory", "not-a-preset", "toy-recency", "explodes", "no-records", "fake-mem0"} <= lines.keys()
    assert all(line.startswith("memviz: plugin ") for line in lines.values())
    mine = memviz(tmp_path, dirs, "query", store, "tea", "--preset", "toy-recency", "-k", "1").stdout
    assert "toy-recency: score = α·cosine + β/(1 + Δt/τ)" in mine  # memviz-toy's, loaded first


def test_a_plugin_that_raises_or_answers_the_wrong_type_when_it_recognises_is_skipped_and_stores_still_open(tmp_path, plugin_dirs, store):
    dirs = [plugin_dirs["toy"], plugin_dirs["broken"]]
    text = tmp_path / "notes.txt"
    text.write_text("nothing memviz reads\n", encoding="utf-8")
    unknown = memviz(tmp_path, dirs, "stats", text, code=2)
    assert "skipped: it raised RuntimeError: grabby cannot look at anything recognising a store" in unknown.stderr
    assert "plugin wrong-answer (memory system, memviz.sources, from memviz-broken 0.0.1): skipped: its recognise() " \
           "answered str, not a Source or None" in unknown.stderr
    assert "memviz: error: " in unknown.stderr and "is not an SQLite database" in unknown.stderr
    native = memviz(tmp_path, dirs, "stats", store.path)
    assert "integrity: ok" in native.stdout
    toy = memviz(tmp_path, dirs, "stats", toy_file(tmp_path / "t.json"))
    assert "memories: 3" in toy.stdout


# ------------------------------------------------------------------ the registries, in this process
def test_on_path_loads_the_plugins_here_and_reset_leaves_only_the_built_ins(plugin_dirs):
    with on_path(plugin_dirs["toy"]):
        assert "toy-recency" in [p.name for p in all_presets()]
        assert "toymem" in [cls.system for cls in fw.systems()]
        assert "toy-notes" in importers.FORMATS and "toy/hash-64" in embed.embedders()
        assert [p.error for p in plugins.plugins()] == [None] * 4
    assert tuple(p.name for p in all_presets()) == BUILT_IN["presets"]
    assert tuple(importers.FORMATS) == BUILT_IN["formats"]
    assert "toymem" not in [cls.system for cls in fw.systems()] and list(embed.embedders()) == [embed.LOCAL_MODEL]


class _Lacking(fw.Source):
    system, title = "lacking", "Lacking"

    @classmethod
    def recognise(cls, probe):
        return None


@pytest.mark.parametrize("make, error, message", [
    (lambda: object, TypeError, "is not a memory system: make it a subclass of memviz.frameworks.Source"),
    (lambda: _Lacking, TypeError, r"_Lacking does not implement token\(\), records\(\)"),
    (lambda: type("Edits", (_Lacking,), {"token": lambda s: 0, "records": lambda s, t=None: [],
                                         "edits": frozenset({"content"})}), TypeError,
     r"does not implement write\(\) \(it lists edits \['content'\]"),
    (lambda: type("Key", (_Lacking,), {"system": "Has Spaces"}), ValueError, "must be a short lower-case key"),
    (lambda: type("Ed", (_Lacking,), {"edits": {"content"}}), ValueError, "must be a frozenset of"),
    (lambda: type("Plain", (_Lacking,), {"recognise": lambda self, probe: None, "token": lambda s: 0,
                                         "records": lambda s, t=None: []}), TypeError, "must be a classmethod"),
])
def test_a_source_is_checked_against_what_source_declares(make, error, message):
    with pytest.raises(error, match=message):
        fw.register_source(make())
    assert "lacking" not in [cls.system for cls in fw.systems()]


def test_an_embedder_and_an_import_format_are_checked_against_their_contracts():
    class Abstract(embed.Embedder):
        model, dim = "x/1", 1

    with pytest.raises(TypeError, match=r"Abstract does not implement _embed\(\)"):
        embed.register_embedder(Abstract)

    class NeedsArgs(embed.Embedder):
        model, dim = "x/2", 2

        def __init__(self, key):
            self.key = key

        def _embed(self, texts):
            return []

    with pytest.raises(TypeError, match="must be made with no arguments"):
        embed.register_embedder(NeedsArgs)
    with pytest.raises(ValueError, match="an embedder of the model 'wordllama/l2_supercat-256' is already registered: "
                                         "memviz's own, which wins"):
        embed.register_embedder(type("Twin", (embed.LocalEmbedder,), {}))
    with pytest.raises(TypeError, match="is not an import format: make it a memviz.importers.ImportFormat"):
        importers.register_format({"name": "x"})
    with pytest.raises(ValueError, match="typed on the command line"):
        importers.register_format(importers.ImportFormat("Two Words", lambda s, o, **k: None, "x"))
    with pytest.raises(ValueError, match="an import format named 'jsonl' is already registered: memviz's own, which wins"):
        importers.register_format(importers.ImportFormat("jsonl", lambda s, o, **k: None, "x"))
    assert list(embed.embedders()) == [embed.LOCAL_MODEL] and tuple(importers.FORMATS) == BUILT_IN["formats"]
