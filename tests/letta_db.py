"""A Letta server's tables on the test PostgreSQL server, and writes made the way Letta's own
managers make them (letta 0.16: letta/orm/*.py for the columns, services/passage_manager.py and
block_manager.py for the writes). Letta's `letta` package does not install into memviz's
environment (it would downgrade openai, protobuf and websockets), so the tables are created from
its ORM's documented schema here; only the tables and columns memviz reads or writes, plus the
ones their constraints need.

The embedding "model" of the test agents is memviz's local WordLlama (256-d): Letta stores its
vectors zero-padded to 4096 whatever the model, and memviz reads them back trimmed.
"""
from __future__ import annotations

import json
import uuid

import numpy as np

from memviz.embed import LOCAL_DIM, LOCAL_MODEL

MAX_EMBEDDING_DIM = 4096
EMBEDDING_CONFIG = {"embedding_endpoint_type": "openai", "embedding_endpoint": "http://127.0.0.1:9/v1",
                    "embedding_model": LOCAL_MODEL, "embedding_dim": LOCAL_DIM, "embedding_chunk_size": 300,
                    "handle": f"local/{LOCAL_MODEL}", "batch_size": 1024, "azure_endpoint": None, "azure_version": None,
                    "azure_deployment": None}

_COMMON = """created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now(),
    is_deleted boolean NOT NULL DEFAULT false, _created_by_id varchar, _last_updated_by_id varchar"""

SCHEMA = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE organizations (id varchar PRIMARY KEY, name varchar NOT NULL, {_COMMON});
CREATE TABLE agents (id varchar PRIMARY KEY, name varchar, agent_type varchar, description varchar, system varchar,
    message_ids json, metadata_ json, llm_config json, embedding_config json, tool_rules json,
    organization_id varchar REFERENCES organizations(id), {_COMMON});
CREATE TABLE archives (id varchar PRIMARY KEY, name varchar NOT NULL, description varchar,
    vector_db_provider varchar NOT NULL DEFAULT 'native', embedding_config json, metadata_ json,
    _vector_db_namespace varchar, organization_id varchar REFERENCES organizations(id), {_COMMON});
CREATE TABLE archives_agents (agent_id varchar REFERENCES agents(id) ON DELETE CASCADE,
    archive_id varchar REFERENCES archives(id) ON DELETE CASCADE, created_at timestamptz DEFAULT now(),
    is_owner boolean, PRIMARY KEY (agent_id, archive_id), CONSTRAINT unique_agent_archive UNIQUE (agent_id));
CREATE TABLE archival_passages (id varchar PRIMARY KEY, text varchar NOT NULL, embedding_config json,
    metadata_ json NOT NULL, tags json, embedding vector({MAX_EMBEDDING_DIM}),
    organization_id varchar REFERENCES organizations(id), archive_id varchar REFERENCES archives(id) ON DELETE CASCADE,
    {_COMMON});
CREATE INDEX archival_passages_created_at_id_idx ON archival_passages (created_at, id);
CREATE TABLE passage_tags (id varchar PRIMARY KEY, tag varchar NOT NULL,
    passage_id varchar NOT NULL REFERENCES archival_passages(id) ON DELETE CASCADE,
    archive_id varchar NOT NULL REFERENCES archives(id) ON DELETE CASCADE,
    organization_id varchar REFERENCES organizations(id), {_COMMON}, CONSTRAINT uq_passage_tag UNIQUE (passage_id, tag));
CREATE TABLE block (id varchar PRIMARY KEY, label varchar NOT NULL, value varchar NOT NULL, "limit" integer,
    description varchar, template_name varchar, is_template boolean NOT NULL DEFAULT false, read_only boolean NOT NULL DEFAULT false,
    hidden boolean, preserve_on_migration boolean, metadata_ json, version integer NOT NULL DEFAULT 1,
    current_history_entry_id varchar, project_id varchar, organization_id varchar REFERENCES organizations(id), {_COMMON},
    CONSTRAINT unique_block_id_label UNIQUE (id, label));
CREATE TABLE blocks_agents (agent_id varchar REFERENCES agents(id) ON DELETE CASCADE, block_id varchar, block_label varchar,
    PRIMARY KEY (agent_id, block_id, block_label), CONSTRAINT unique_label_per_agent UNIQUE (agent_id, block_label),
    CONSTRAINT fk_block_id_label FOREIGN KEY (block_id, block_label) REFERENCES block (id, label)
        ON UPDATE CASCADE ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE);
CREATE TABLE block_history (id varchar PRIMARY KEY, description text, label varchar NOT NULL, value text NOT NULL,
    "limit" bigint NOT NULL, metadata_ json, actor_type varchar, actor_id varchar,
    block_id varchar NOT NULL REFERENCES block(id) ON DELETE CASCADE, sequence_number integer NOT NULL,
    organization_id varchar REFERENCES organizations(id), {_COMMON});
"""


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
            self.conn.execute(SCHEMA)
        self.org = "org-00000000-0000-4000-8000-000000000000"
        self.conn.execute("INSERT INTO organizations (id, name) VALUES (%s, 'default') ON CONFLICT DO NOTHING", (self.org,))

    def close(self):
        self.conn.close()

    def embed(self, text: str):
        return self.embedder.embed_one(text)

    # ------------------------------------------------------------ agents (agent_manager)
    def create_agent(self, name: str, blocks: dict[str, str] | None = None, limit: int = 20000) -> str:
        agent = f"agent-{uuid.uuid4()}"
        self.conn.execute("INSERT INTO agents (id, name, agent_type, embedding_config, message_ids, organization_id) "
                          "VALUES (%s, %s, 'memgpt_v2_agent', %s, '[]', %s)", (agent, name, json.dumps(EMBEDDING_CONFIG), self.org))
        archive = f"archive-{uuid.uuid4()}"   # archive_manager.get_or_create_default_archive_for_agent
        self.conn.execute("INSERT INTO archives (id, name, embedding_config, organization_id) VALUES (%s, %s, %s, %s)",
                          (archive, f"{name}'s Archive", json.dumps(EMBEDDING_CONFIG), self.org))
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
        self.conn.execute('INSERT INTO block (id, label, value, "limit", description, organization_id) VALUES (%s, %s, %s, %s, %s, %s)',
                          (block, label, value, limit, f"The {label} block.", self.org))
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
