"""One sqlite-vec `vec0` table per embedding dimension, kept in sync by triggers.

The triggers mean an agent that writes `memories.embedding` through plain SQL keeps
the vector index right too. Updates delete then insert: vec0 does not support
`INSERT OR REPLACE`.
"""
from __future__ import annotations

import re

VEC_PREFIX = "vec_memories_"
_DECLARED = re.compile(r"float\[\s*(\d+)\s*\]", re.I)


def vec_table(dim: int) -> str:
    return f"{VEC_PREFIX}{int(dim)}"


def declared_dim(create_sql: str) -> int | None:
    m = _DECLARED.search(create_sql or "")
    return int(m.group(1)) if m else None


def vec_ddl(dim: int) -> list[str]:
    t, nbytes = vec_table(dim), 4 * int(dim)
    has_vec = f"new.embedding IS NOT NULL AND length(new.embedding) = {nbytes}"
    return [
        f"CREATE VIRTUAL TABLE {t} USING vec0(memory_id TEXT PRIMARY KEY, embedding float[{dim}] distance_metric=cosine)",
        f"CREATE TRIGGER {t}_ai AFTER INSERT ON memories WHEN {has_vec} BEGIN "
        f"INSERT INTO {t}(memory_id, embedding) VALUES (new.id, new.embedding); END",
        f"CREATE TRIGGER {t}_ad AFTER DELETE ON memories BEGIN "
        f"DELETE FROM {t} WHERE memory_id = old.id; END",
        f"CREATE TRIGGER {t}_au AFTER UPDATE OF embedding, id ON memories BEGIN "
        f"DELETE FROM {t} WHERE memory_id = old.id; "
        f"INSERT INTO {t}(memory_id, embedding) SELECT new.id, new.embedding WHERE {has_vec}; END",
    ]


def native_vec_triggers(dim: int) -> dict[str, str]:
    """Trigger name -> the SQL memviz would have written for it."""
    return {
        re.match(r"CREATE TRIGGER (\S+)", sql).group(1): sql
        for sql in vec_ddl(dim)
        if sql.startswith("CREATE TRIGGER")
    }


def vec_shadow_tables(name: str) -> set[str]:
    """Names sqlite-vec creates beside a vec0 table (they vary a little by version)."""
    return {name + s for s in ("_chunks", "_rowids", "_info", "_auxiliary", "_vector_chunks00", "_metadatachunks00")}


def misdeclared_text(name: str, dim: int | None) -> str:
    """What is wrong with vec0 table `name`, declared for `dim` (schema.SchemaReport.misdeclared)."""
    return f"vector table {name} is declared for {dim if dim is not None else 'no number of'} dimensions, not " \
           f"the {name.rsplit('_', 1)[-1]} its name says"


#: the next step for vectors memviz cannot make again (another system's model made them)
NOT_REPAIRABLE_VECTORS = ("memviz cannot repair them (it cannot run the model that made them): re-embed them in "
                          "the agent; a memory corrected in memviz gets a vector for its new text")
