"""A Letta server's tables on the test PostgreSQL server, made by Letta's own package, and writes
made the way Letta's managers make them (letta 0.16: services/passage_manager.py, block_manager.py,
agent_manager.py and archive_manager.py, with the values the ORM fills in that the database has no
default for).

The schema is Letta's ORM (`letta.orm`) compiled for PostgreSQL by tests/letta_schema.py, run in
Letta's own environment once a session: the `letta` package does not install beside memviz's
pins without holding openai, protobuf and websockets back, so it lives in a venv of its own,
built from tests/letta_requirements.txt by tests/make_letta_env.sh (.ci/run builds it at .venv-letta;
MEMVIZ_LETTA_PYTHON names another interpreter). A column Letta renames, drops or makes required shows up here as a
failing write or read, not as a schema this file made up.

The embedding "model" of the test agents is memviz's local WordLlama (256-d): Letta stores its
vectors zero-padded to 4096 whatever the model, and memviz reads them back trimmed.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import uuid
from pathlib import Path

import numpy as np

from memviz.embed import LOCAL_DIM, LOCAL_MODEL

MAX_EMBEDDING_DIM = 4096
EMBEDDING_CONFIG = {"embedding_endpoint_type": "openai", "embedding_endpoint": "http://127.0.0.1:9/v1",
                    "embedding_model": LOCAL_MODEL, "embedding_dim": LOCAL_DIM, "embedding_chunk_size": 300,
                    "handle": f"local/{LOCAL_MODEL}", "batch_size": 1024, "azure_endpoint": None, "azure_version": None,
                    "azure_deployment": None}

ROOT = Path(__file__).resolve().parents[1]


def letta_python() -> str:
    """The interpreter of Letta's environment; its absence fails the test (it never skips)."""
    python = os.environ.get("MEMVIZ_LETTA_PYTHON")
    if python is None:
        python = str(ROOT / ".venv-letta" / "bin" / "python")
        if not Path(python).exists():   # built once, on first use, so the README's test command needs no extra step
            p = subprocess.run(["bash", str(ROOT / "tests" / "make_letta_env.sh")], capture_output=True, text=True,
                               timeout=540, stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                raise RuntimeError(f"Letta's environment could not be built (bash tests/make_letta_env.sh, exit "
                                   f"{p.returncode}):\n{p.stderr[-3000:]}")
    if not Path(python).exists():
        raise RuntimeError(f"Letta's environment is missing ({python}): bash tests/make_letta_env.sh builds it, "
                           "or set MEMVIZ_LETTA_PYTHON")
    return python


@functools.cache
def schema_sql() -> str:
    """The DDL of Letta's tables, from Letta's ORM (its first line names the letta version)."""
    p = subprocess.run([letta_python(), str(ROOT / "tests" / "letta_schema.py")], capture_output=True, text=True,
                       timeout=420, stdin=subprocess.DEVNULL)
    if p.returncode != 0 or not p.stdout.startswith("-- letta "):
        raise RuntimeError(f"Letta's schema could not be made by its package (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout


def pad(vec) -> str:
    """A vector as Letta writes it: zero-padded to MAX_EMBEDDING_DIM (pgvector's text form)."""
    v = np.zeros(MAX_EMBEDDING_DIM, np.float32)
    v[:len(vec)] = vec
    return "[" + ",".join(f"{x:.9g}" for x in v) + "]"


class Letta:
    """Writes and reads as Letta's managers do, on one psycopg connection."""

    def __init__(self, dsn: str, embedder=None, *, create: bool = True):
        import psycopg
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.embedder = embedder
        if create:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self.conn.execute(schema_sql())
            width = self.conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                      "WHERE attrelid = 'archival_passages'::regclass AND attname = 'embedding'").fetchone()
            assert width == (f"vector({MAX_EMBEDDING_DIM})",), f"Letta's passages hold {width}, not the padding written here"
        self.org = "org-00000000-0000-4000-8000-000000000000"
        self.conn.execute("INSERT INTO organizations (id, name, privileged_tools) VALUES (%s, 'default', false) "
                          "ON CONFLICT DO NOTHING", (self.org,))

    def close(self):
        self.conn.close()

    def embed(self, text: str):
        return self.embedder.embed_one(text)

    # ------------------------------------------------------------ agents (agent_manager)
    def create_agent(self, name: str, blocks: dict[str, str] | None = None, limit: int = 20000) -> str:
        agent = f"agent-{uuid.uuid4()}"
        self.conn.execute("INSERT INTO agents (id, name, agent_type, embedding_config, message_ids, message_buffer_autoclear, "
                          "organization_id) VALUES (%s, %s, 'memgpt_v2_agent', %s, '[]', false, %s)",
                          (agent, name, json.dumps(EMBEDDING_CONFIG), self.org))
        archive = f"archive-{uuid.uuid4()}"   # archive_manager.get_or_create_default_archive_for_agent
        self.conn.execute("INSERT INTO archives (id, name, vector_db_provider, embedding_config, organization_id) "
                          "VALUES (%s, %s, 'NATIVE', %s, %s)", (archive, f"{name}'s Archive", json.dumps(EMBEDDING_CONFIG), self.org))
        self.conn.execute("INSERT INTO archives_agents (agent_id, archive_id, is_owner) VALUES (%s, %s, true)", (agent, archive))
        for label, value in (blocks or {}).items():
            self.attach_block(agent, label, value, limit)
        return agent

    def archive_of(self, agent: str) -> str:
        return self.conn.execute("SELECT archive_id FROM archives_agents WHERE agent_id = %s", (agent,)).fetchone()[0]

    def share_archive(self, agent: str, archive: str) -> None:
        self.conn.execute("DELETE FROM archives_agents WHERE agent_id = %s", (agent,))
        self.conn.execute("INSERT INTO archives_agents (agent_id, archive_id, is_owner) VALUES (%s, %s, false)", (agent, archive))

    # ------------------------------------------------------------ core memory (block_manager)
    def attach_block(self, agent: str, label: str, value: str, limit: int = 20000) -> str:
        block = f"block-{uuid.uuid4()}"
        self.conn.execute('INSERT INTO block (id, label, value, "limit", description, is_template, read_only, organization_id) '
                          "VALUES (%s, %s, %s, %s, %s, false, false, %s)", (block, label, value, limit, f"The {label} block.", self.org))
        self.conn.execute("INSERT INTO blocks_agents (agent_id, block_id, block_label) VALUES (%s, %s, %s)", (agent, block, label))
        return block

    def update_block(self, block: str, value: str) -> None:
        self.conn.execute("UPDATE block SET value = %s, version = version + 1, updated_at = now() WHERE id = %s", (value, block))

    def checkpoint_block(self, block: str, actor: str = "user-00000000") -> None:
        """block_manager.checkpoint_block: the block's state as a block_history row."""
        label, value, limit, n = self.conn.execute(
            'SELECT label, value, "limit", (SELECT count(*) FROM block_history WHERE block_id = %s) FROM block WHERE id = %s',
            (block, block)).fetchone()
        hist = f"block_hist-{uuid.uuid4()}"
        self.conn.execute("INSERT INTO block_history (id, label, value, \"limit\", actor_type, actor_id, block_id, sequence_number, "
                          "organization_id) VALUES (%s, %s, %s, %s, 'user', %s, %s, %s, %s)",
                          (hist, label, value, limit, actor, block, n + 1, self.org))
        self.conn.execute("UPDATE block SET current_history_entry_id = %s WHERE id = %s", (hist, block))

    def block(self, block: str) -> dict:
        value, version, label = self.conn.execute("SELECT value, version, label FROM block WHERE id = %s", (block,)).fetchone()
        return {"value": value, "version": version, "label": label}

    def core_memory(self, agent: str) -> dict[str, str]:
        """What the agent's context is compiled from: its attached blocks by label."""
        return dict(self.conn.execute("SELECT b.label, b.value FROM block b JOIN blocks_agents ba ON ba.block_id = b.id "
                                      "WHERE ba.agent_id = %s", (agent,)).fetchall())

    # ------------------------------------------------------------ archival memory (passage_manager)
    def insert_passage(self, agent: str, text: str, tags=None, *, created_at=None, vector=None) -> str:
        """passage_manager.insert_passage: embed, pad to 4096, the row plus its passage_tags rows."""
        pid = f"passage-{uuid.uuid4()}"
        archive = self.archive_of(agent)
        tags = list(dict.fromkeys(tags)) if tags else None
        vec = self.embed(text) if vector is None else vector
        self.conn.execute(
            "INSERT INTO archival_passages (id, text, embedding_config, metadata_, tags, embedding, organization_id, archive_id"
            + (", created_at" if created_at else "") + ") VALUES (%s, %s, %s, '{}', %s, %s::vector, %s, %s"
            + (", to_timestamp(%s)" if created_at else "") + ")",
            (pid, text, json.dumps(EMBEDDING_CONFIG), json.dumps(tags) if tags is not None else None, pad(vec), self.org, archive,
             *((created_at,) if created_at else ())))
        for tag in tags or []:
            self.conn.execute("INSERT INTO passage_tags (id, tag, passage_id, archive_id, organization_id) VALUES (%s, %s, %s, %s, %s)",
                              (f"passage-tag-{uuid.uuid4()}", tag, pid, archive, self.org))
        return pid

    def update_passage_text(self, pid: str, text: str) -> None:
        """update_agent_passage_by_id_async with a new text and its new (padded) vector."""
        self.conn.execute("UPDATE archival_passages SET text = %s, embedding = %s::vector, updated_at = now() WHERE id = %s",
                          (text, pad(self.embed(text)), pid))

    def delete_passage(self, pid: str) -> None:
        self.conn.execute("UPDATE archival_passages SET is_deleted = true, updated_at = now() WHERE id = %s", (pid,))

    def passage(self, pid: str) -> dict:
        """A passage as Letta's Passage schema gives it back (the vector trimmed to embedding_dim)."""
        text, tags, deleted, emb, cfg = self.conn.execute(
            "SELECT text, tags, is_deleted, embedding::text, embedding_config FROM archival_passages WHERE id = %s", (pid,)).fetchone()
        full = np.array(json.loads(emb), dtype=np.float32)
        tag_rows = sorted(r[0] for r in self.conn.execute("SELECT tag FROM passage_tags WHERE passage_id = %s", (pid,)))
        return {"text": text, "tags": tags, "is_deleted": deleted, "embedding": full[:cfg["embedding_dim"]], "full": full,
                "passage_tags": tag_rows}

    def search(self, agent: str, query: str, k: int = 3) -> list[str]:
        """Archival search as Letta runs it on PostgreSQL: the agent's live passages by cosine distance."""
        rows = self.conn.execute(
            "SELECT p.text FROM archival_passages p JOIN archives_agents aa ON aa.archive_id = p.archive_id "
            "WHERE aa.agent_id = %s AND p.is_deleted = false ORDER BY p.embedding <=> %s::vector LIMIT %s",
            (agent, pad(self.embed(query)), k)).fetchall()
        return [r[0] for r in rows]
