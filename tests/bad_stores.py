"""Bad copies of the sample store, one per case of issues 17 and 19, and a second process that
holds a store's lock. Shared by the store-error tests and the CLI walk over bad stores.
Every maker works on a fresh copy, in the folder it is given, of the sample as the generator makes
it (pristine_sample): the committed sample_dbs/ files are never opened here."""
from __future__ import annotations

import atexit
import functools
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import apsw

from memviz.samples import generate
from memviz.store.connection import connect  # sqlite-vec loaded: a vec0 table's triggers run

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def pristine_sample(name: str = "assistant") -> Path:
    """The sample store `name` as memviz's generator makes it, built once per test process in a
    folder of its own. The committed sample_dbs/ files hold the same memories (tests/test_samples.py
    checks), but a user's writable open of one (`memviz query sample_dbs/assistant.db`) may change
    it: no test builds on those working-tree files."""
    folder = Path(tempfile.mkdtemp(prefix="memviz-pristine-"))
    atexit.register(shutil.rmtree, folder, True)
    path, = generate(folder, names=(name,))
    if os.path.exists(path + "-wal") and os.path.getsize(path + "-wal"):  # copies take the file alone
        raise RuntimeError(f"the generated sample left commits in its -wal: {path}")
    return Path(path)


def sample_copy(folder: Path, name: str = "m.db", sample: str = "assistant") -> Path:
    """A copy of the pristine sample's file in `folder` (the store is whole in the file)."""
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / name
    shutil.copyfile(pristine_sample(sample), dst)
    return dst


def some_id(path: Path) -> str:
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return c.execute("SELECT id FROM memories WHERE valid_until IS NULL ORDER BY rowid LIMIT 1").fetchone()[0]
    finally:
        c.close()


def bit_flips(folder: Path, n: int = 20, seed: int = 0) -> Path:
    """Case 19.1a: random bit flips in the cell data of `memories`' leaf pages."""
    p = sample_copy(folder, "flipped.db")
    c = apsw.Connection(str(p), flags=apsw.SQLITE_OPEN_READONLY)
    pages = [r[0] for r in c.execute("SELECT pageno FROM dbstat WHERE name='memories' AND pagetype='leaf'")]
    size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    rng = random.Random(seed)
    data = bytearray(p.read_bytes())
    for _ in range(n):
        at = (rng.choice(pages) - 1) * size + rng.randrange(8, 48)  # cell pointers and the cells they lead to
        data[at] ^= 1 << rng.randrange(8)
    p.write_bytes(bytes(data))
    return p


def index_missing_rows(folder: Path) -> Path:
    """Case 19.1b: idx_memories_valid_until does not hold the rows' valid_until; quick_check cannot see it."""
    p = sample_copy(folder, "index.db")
    c = apsw.Connection(str(p))
    c.execute("DROP INDEX idx_memories_valid_until")  # same number of entries, the wrong values in them
    c.execute("CREATE INDEX idx_memories_valid_until ON memories(importance)")
    c.execute("PRAGMA writable_schema=ON")
    c.execute("UPDATE sqlite_master SET sql='CREATE INDEX idx_memories_valid_until ON memories(valid_until)' "
              "WHERE name='idx_memories_valid_until'")
    c.execute("PRAGMA writable_schema=OFF")
    c.close()
    return p


def foreign_wal(folder: Path) -> Path:
    """Case 19.2: a -wal of another store (with commits in it) beside the file."""
    other = sample_copy(folder / "other", "other.db", "simulation")
    c = apsw.Connection(str(other))
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("CREATE TABLE scratch(x)")
    c.execute("INSERT INTO scratch SELECT content FROM memories")
    c.execute("UPDATE memories SET content = content || ' (other)' WHERE rowid % 3 = 0")
    p = sample_copy(folder, "foreignwal.db")
    shutil.copyfile(str(other) + "-wal", str(p) + "-wal")
    c.close()
    shutil.rmtree(folder / "other")
    return p


def misdeclared_vector_table(folder: Path) -> Path:
    """The sample whose vector table vec_memories_256 is declared for 100 dimensions (its schema
    text edited, as a hand-made table or a botched migration leaves it)."""
    p = sample_copy(folder, "misdeclared.db")
    c = connect(str(p))
    (sql,) = c.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_memories_256'").fetchone()
    c.execute("PRAGMA writable_schema=ON")
    c.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'vec_memories_256'", (sql.replace("float[256]", "float[100]"),))
    c.execute("PRAGMA writable_schema=OFF")
    c.close()
    return p


#: what an agent writes into `memories.embedding` with plain SQL that is no usable 256-d vector
ODD_VECTORS = {"nan": struct.pack("<256f", *[float("nan")] * 256), "d100": struct.pack("<100f", *[0.1] * 100),
               "empty": b"", "ragged": b"\x00" * 10}


def odd_vectors(folder: Path, kind: str, rows: int = 3) -> Path:
    """The sample with the embeddings of its first `rows` memories replaced by ODD_VECTORS[kind]."""
    p = sample_copy(folder, f"vectors-{kind}.db")
    c = connect(str(p))
    c.execute("UPDATE memories SET embedding = ? WHERE rowid <= ?", (ODD_VECTORS[kind], rows))
    c.close()
    return p


def schema_twice_in_wal(folder: Path) -> Path:
    """The sample with a table listed twice in its schema, written to its -wal and not checkpointed:
    SQLite's words for this damage ("malformed database schema … already exists") are not the
    usual "database disk image is malformed"."""
    p = sample_copy(folder, "schematwice.db")
    c = apsw.Connection(str(p))
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("PRAGMA writable_schema=ON")
    c.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = 'memviz_meta'")
    c.execute("PRAGMA writable_schema=OFF")
    wal = (folder / "schematwice.db-wal").read_bytes()  # the last close would checkpoint it into the file
    c.close()
    (folder / "schematwice.db-wal").write_bytes(wal)
    return p


def with_pending_wal(folder: Path, name: str = "walstore.db") -> Path:
    """A WAL store whose last commits are still in its -wal, with no -shm (copied as a backup is)."""
    work = sample_copy(folder / "work", name)
    c = apsw.Connection(str(work))
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("UPDATE memories SET importance = 9.5 WHERE rowid = 1")
    p = folder / name
    shutil.copyfile(work, p)
    shutil.copyfile(str(work) + "-wal", str(p) + "-wal")
    c.close()
    shutil.rmtree(folder / "work")
    return p


def rollback_journal(folder: Path, name: str = "journal.db") -> Path:
    """The sample in rollback-journal mode (what an agent's own SQLite file often is)."""
    p = sample_copy(folder, name)
    c = apsw.Connection(str(p))
    c.execute("PRAGMA journal_mode=DELETE")
    c.close()
    return p


_HOLDER = r"""
import sys, apsw
path, how = sys.argv[1], sys.argv[2]
c = apsw.Connection(path)
c.setbusytimeout(20000)  # an agent waits for memviz's short reads to end before it takes its lock
if how == "exclusive-mode":       # issue 17.1: PRAGMA locking_mode=EXCLUSIVE and a write
    c.execute("PRAGMA locking_mode=EXCLUSIVE")
    c.execute("INSERT INTO memviz_meta(key, value) VALUES ('held', '1') ON CONFLICT(key) DO UPDATE SET value='1'")
elif how == "begin-exclusive":    # issue 19.10: a rollback-journal store in BEGIN EXCLUSIVE
    c.execute("BEGIN EXCLUSIVE")
elif how == "writing":            # a long write transaction (WAL: writers wait, readers go on)
    c.execute("BEGIN IMMEDIATE")
    c.execute("INSERT INTO memviz_meta(key, value) VALUES ('held', '1') ON CONFLICT(key) DO UPDATE SET value='1'")
print("held", flush=True)
sys.stdin.read()                  # holds until the test closes our stdin
if c.in_transaction:
    c.execute("ROLLBACK")
c.close()
"""


class LockHolder:
    """A second process holding `path` (how: exclusive-mode | begin-exclusive | writing) until closed."""

    def __init__(self, path: Path, how: str):
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), how], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "held":
            self.close()
            raise RuntimeError(f"the lock holder did not take the lock ({line!r})")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cli_env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEMVIZ_BUSY_TIMEOUT_MS="300", **extra)
    env.pop("QT_QPA_PLATFORM", None)
    return env
