"""What the store layer promises the rest of memviz, enforced.

- Every implementation of the store interface (the SQLite `Store`, `PgStore`, the framework
  `MirroredStore`) gives every member `MemoryStore` declares, methods with its parameters.
- Every public method of each, inherited ones too, translates its library's errors: the
  boundary is applied by construction (store/boundary.py), and a read on a damaged file through a
  method of the `SqliteQueries` mixin says so as a StoreError.
- Nothing outside memviz/store asks a store what the interface does not declare: no
  getattr/hasattr probe whose object is a store (an AST walk of memviz/).
"""
from __future__ import annotations

import ast
import inspect
import random
from pathlib import Path

import apsw
import numpy as np
import pytest
from conftest import unit_vectors

import memviz.store as ms
from memviz.frameworks.mirror import MirroredStore
from memviz.store.boundary import SELF_TRANSLATING, is_guarded, public_methods
from memviz.store.common import StoreCommon
from memviz.store.interface import MemoryStore, SqliteFile
from memviz.store.postgres import PgStore
from memviz.store.sqlite_queries import SqliteQueries
from memviz.store.store import Store

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTATIONS = (Store, PgStore, MirroredStore)


def declared(protocol: type) -> dict[str, object]:
    """name -> what the protocol declares: a function, a property, or (an attribute) its annotation."""
    out = {name: kind for name, kind in vars(protocol).get("__annotations__", {}).items()}
    out.update({name: v for name, v in vars(protocol).items() if not name.startswith("_")})
    return out


def _parameters(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


# ------------------------------------------------------------------ every implementation gives every member
@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_every_store_class_gives_every_method_and_property_the_interface_declares(cls):
    for name, want in declared(MemoryStore).items():
        if inspect.isfunction(want):
            assert inspect.isfunction(inspect.getattr_static(cls, name, None)) or \
                isinstance(inspect.getattr_static(cls, name, None), staticmethod), f"{cls.__name__} lacks {name}()"
            params = _parameters(getattr(cls, name))
            if isinstance(inspect.getattr_static(cls, name), staticmethod):
                params = ["self", *params]
            assert params == _parameters(want), f"{cls.__name__}.{name}{params} differs from the interface"
        elif isinstance(want, property):
            assert hasattr(cls, name), f"{cls.__name__} lacks the property {name}"


def _records(n: int, dim: int = 8) -> list[dict]:
    v = unit_vectors(n, dim, 1)
    return [{"id": f"m{i}", "kind": "fact", "agent": "a", "content": f"memory {i} about tea", "embedding": v[i],
             "embedding_model": "m", "tags": ["t"], "source_ids": ["m0"] if i else []} for i in range(n)]


def test_a_native_store_answers_every_declared_member_as_a_store_with_nothing_after_its_open(tmp_path):
    with ms.create(str(tmp_path / "s.db")) as s:
        s.insert_memories(_records(5))
    with ms.open(str(tmp_path / "s.db")) as s:
        assert isinstance(s, MemoryStore) and isinstance(s, SqliteFile)
        assert s.location == s.path == str(tmp_path / "s.db") and s.describe() == s.path
        assert (s.checking, s.indexing, s.index_failure, s.answers_later, s.checked()) == (False, False, None, False, [])
        assert s.clock_override is None and s.conn_path == s.path and s.report.version >= 1
        token = s.change_token()
        s.update_fields("m1", {"importance": 9})
        assert s.changes_since(token, 0.9).changed == [2]  # rowid of m1
        assert s.fts_hits("tea").shape == (5, 2) and s.vector_index_notes() == []


# ------------------------------------------------------------------ the error boundary, by construction
@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_every_public_method_is_inside_the_error_boundary(cls):
    methods = dict(public_methods(cls))
    loose = sorted(n for n, fn in methods.items() if n not in SELF_TRANSLATING and not is_guarded(fn))
    assert not loose, f"{cls.__name__} methods outside its error boundary: {loose}"
    inherited = {n for n, _ in public_methods(StoreCommon)} | (
        {n for n, _ in public_methods(SqliteQueries)} if cls is Store else set())
    assert inherited <= methods.keys() and {"update_fields", "main_model"} <= inherited
    if cls is Store:
        assert {"texts_and_tags", "rewrite_rows", "row_meta_columns"} <= inherited  # the mixin's, guarded on Store


def test_a_method_added_later_is_inside_the_boundary_too(tmp_path):
    class Extended(Store):
        def broken_read(self):
            return self.conn.execute("SELECT * FROM no_such_table").fetchall()

    assert is_guarded(Extended.broken_read)
    with ms.create(str(tmp_path / "s.db")) as made:
        s = Extended(made.path, made.conn, report=made.report)
        with pytest.raises(ms.StoreError, match="no_such_table") as e:
            s.broken_read()
        assert isinstance(e.value.__cause__, apsw.SQLError)


def _flip_leaf_bits(path: Path, n: int = 40, seed: int = 3) -> None:
    """Random bit flips in the cell pointers of `memories`' leaf pages, written into the file in place."""
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name='memories' AND pagetype='leaf'")]
    size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    rng = random.Random(seed)
    with open(path, "r+b") as fh:
        for _ in range(n):
            at = (rng.choice(pages) - 1) * size + rng.randrange(8, 48)
            fh.seek(at)
            byte = fh.read(1)[0]
            fh.seek(at)
            fh.write(bytes([byte ^ (1 << rng.randrange(8))]))


def test_a_query_of_the_sqlite_queries_mixin_on_a_damaged_file_is_a_store_error_and_stops_edits(tmp_path):
    path = tmp_path / "s.db"
    with ms.create(str(path)) as s:
        s.insert_memories([{**r, "content": r["content"] + " " + "x" * 300} for r in _records(400)])
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s = ms.open(str(path))
    try:
        assert not s.read_only
        _flip_leaf_bits(path)   # after the open's quick check: damage it did not see
        with pytest.raises(ms.CorruptStoreError, match="damaged") as e:
            s.texts_and_tags()   # SqliteQueries: a raw apsw.CorruptError escaped it before
        assert isinstance(e.value.__cause__, apsw.Error)
        assert s.read_only and "damage was found while reading" in s.read_only_reason
        with pytest.raises(ms.ReadOnlyError):
            s.update_fields("m1", {"importance": 2})
    finally:
        s.close()


# ------------------------------------------------------------------ no store probing outside the store
def _probes(tree: ast.AST) -> list[tuple[int, str]]:
    """getattr/hasattr calls whose object mentions a store (pragmatic: `store`, `data.store`, `self.store`...)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and node.args and "store" in ast.unparse(node.args[0]).lower():
            out.append((node.lineno, ast.unparse(node)))
    return sorted(out)


def test_no_layer_probes_a_store_with_getattr_or_hasattr():
    found = []
    for path in sorted((ROOT / "memviz").rglob("*.py")):
        found += [f"{path.relative_to(ROOT)}:{line}: {text}" for line, text in _probes(ast.parse(path.read_text()))]
    assert not found, "ask the store through its interface (store/interface.py), declaring what is missing:\n" + \
        "\n".join(found)


def test_the_probe_walk_finds_what_the_window_once_did():
    once = ('what = data.store.describe() if hasattr(data.store, "describe") else data.store.path\n'
            'src = getattr(store, "dsn", store.path)\nscores = getattr(self.state.result, "all_scores", None)\n')
    assert [line for line, _ in _probes(ast.parse(once))] == [1, 2]


# ------------------------------------------------------------------ the framework mirror, a wrapper
def test_a_framework_store_is_a_wrapper_that_answers_as_the_interface_says(tmp_path, monkeypatch):
    from langgraph_stores import sqlite_facts

    import memviz.frameworks as fw
    monkeypatch.setenv("MEMVIZ_CACHE_DIR", str(tmp_path / "cache"))
    path = sqlite_facts(tmp_path / "langgraph.db", [np.ones(8)] * 12)
    with fw.open_source(str(path), read_only=True) as s:
        assert isinstance(s, MirroredStore) and not isinstance(s, Store)
        assert isinstance(s, MemoryStore) and isinstance(s, SqliteFile)
        assert s.describe() == s.source.describe() and s.location == s.source.target == str(path)
        assert s.path == s.source.label and s.conn is s.mirror.conn and s.conn_path != s.path
        assert (s.checking, s.indexing, s.index_failure, s.answers_later, s.checked()) == (False, False, None, False, [])
        assert s.read_only and s.read_only_reason == "opened with --read-only"
        with pytest.raises(ms.ReadOnlyError):
            s.set_meta("x", 1)   # memviz's own tables too, while the store is read-only
        assert s.counts()["total"] == 12 and s.get("item-3@memories.ann")["content"] == "ann remembers fact 3"
