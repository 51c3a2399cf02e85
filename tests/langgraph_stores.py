"""LangGraph stores written and read by LangGraph's own clients, for the tests (and the bench
and screenshots).

`SqliteStore` runs in a separate process (`sqlite_agent`), as an agent would: it loads
sqlite-vec into its own SQLite (pysqlite3, standing in for this Python's `sqlite3`, which
cannot load extensions), and an SQLite extension keeps the API table of the SQLite that loaded
it in one global symbol, so two SQLite builds using sqlite-vec in one process (memviz's apsw
and the client's) would call into each other and crash. `PostgresStore` runs in process.

The index's embedding function is memviz's local WordLlama model ("local"), so the stored
vectors are ones memviz can reproduce and a round trip is real; "toy:<dim>" is a
deterministic function memviz cannot name (an unknown model).
"""
from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path


def embed_function(name: str):
    if name == "local":
        from memviz.embed import LocalEmbedder

        def embed(texts):
            return [v.tolist() for v in LocalEmbedder().embed(list(texts))]
        return embed, 256
    dim = int(name.split(":")[1])

    def toy(texts):
        return [[float((len(t) + i) % 7) + 0.5 for i in range(dim)] for t in texts]
    return toy, dim


def index_config(embed: str = "local", fields=("content",)) -> dict:
    fn, dim = embed_function(embed)
    # SqliteStore reads `text_fields`, PostgresStore `fields`: both given, each takes its own
    return {"dims": dim, "embed": fn, "fields": list(fields), "text_fields": list(fields)}


def run_ops(store, ops: list[dict]) -> list:
    """Apply ops ({"op": put|get|search|delete, ...}) with the client; JSON-able results."""
    out = []
    for op in ops:
        ns = tuple(op.get("ns", ()))
        if op["op"] == "put":
            kw = {k: op[k] for k in ("ttl", "index") if k in op}
            store.put(ns, op["key"], op["value"], **kw)
            out.append(None)
        elif op["op"] == "delete":
            store.delete(ns, op["key"])
            out.append(None)
        elif op["op"] == "get":
            item = store.get(ns, op["key"])
            out.append(None if item is None else {"value": item.value, "created_at": str(item.created_at),
                                                  "updated_at": str(item.updated_at)})
        elif op["op"] == "search":
            hits = store.search(ns, query=op.get("query"), limit=op.get("limit", 10))
            out.append([{"key": h.key, "namespace": list(h.namespace), "value": h.value, "score": h.score} for h in hits])
        elif op["op"] == "sql":  # what LangGraph stored, as its own connection reads it
            rows = store.conn.execute(op["sql"], op.get("params", ())).fetchall()
            out.append([list(r.values()) if isinstance(r, dict) else list(r) for r in rows])
    return out


def sqlite_agent(path, ops: list[dict], *, embed: str | None = "local", fields=("content",)) -> list:
    """Run `ops` with a SqliteStore on `path` in another process; returns their results."""
    args = json.dumps({"path": str(path), "ops": ops, "embed": embed, "fields": list(fields)})
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), args], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"the SqliteStore agent failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sqlite_facts(path, vectors) -> str:
    """A SqliteStore file (LangGraph's own tables) holding item-k = "ann remembers fact k" in the
    namespace memories.ann, with vectors[k] (toy 8-d) written straight into its tables."""
    import apsw
    import numpy as np
    sqlite_agent(path, [], embed="toy:8")   # LangGraph's SqliteStore.setup(): its own tables
    conn = apsw.Connection(str(path))
    with conn:
        for k, vec in enumerate(vectors):
            conn.execute("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)",
                         ("memories.ann", f"item-{k}", json.dumps({"content": f"ann remembers fact {k}"}).encode()))
            conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?, ?, 'content', ?)",
                         ("memories.ann", f"item-{k}", np.asarray(vec, np.float32).tobytes()))
    conn.close()
    return str(path)


@contextmanager
def postgres_store(dsn: str, *, embed: str | None = "local", fields=("content",)):
    from langgraph.store.postgres import PostgresStore
    with PostgresStore.from_conn_string(dsn, index=index_config(embed, fields) if embed else None) as store:
        store.setup()
        yield store


def _agent_main(args: dict) -> None:
    import pysqlite3.dbapi2 as sqlite3_with_extensions
    sys.modules["sqlite3"] = sqlite3_with_extensions  # this process only: see the module docstring
    from langgraph.store.sqlite import SqliteStore
    conn = sqlite3_with_extensions.connect(args["path"], check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, index=index_config(args["embed"], args["fields"]) if args["embed"] else None)
    store.setup()
    results = run_ops(store, args["ops"])
    conn.close()
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    _agent_main(json.loads(sys.argv[1]))
