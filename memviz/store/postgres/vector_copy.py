"""pgvector's binary COPY of (rowid, vector) rows, decoded into a float32 matrix as it arrives.

libpq hands the stream over a message (a row) at a time. Messages are taken a batch of about
1 MB at a time (the loop over them runs in C), joined, and numpy reads the batch's whole rows
as one structured array and writes the vectors, byte-swapped from the wire's big-endian,
straight into the matrix. The matrix is allocated once, for the planner's estimate of the rows
(and a margin), and the vectors are written into it once: the first touch of fresh memory is
most of the cost of a wide read, so no intermediate copy (bytes per row, a join, a conversion)
is made. The decoder does not rely on messages being rows: any split of the stream gives the
same matrix.
"""
from __future__ import annotations

from itertools import islice

import numpy as np

from ...background import in_thread
from ..arrays import MADV_POPULATE_WRITE, madvise, small_pages
from ..errors import StoreError

SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
BATCH_BYTES = 1 << 20
MIN_BLOCK_ROWS = 1024
MAX_FIRST_BLOCK_BYTES = 4 << 30  # a wild estimate reserves no more than this at first


def row_dtype(dim: int) -> np.dtype:
    """One row on the wire: field count, (length, rowid), (length, pgvector's dim, unused, floats)."""
    return np.dtype([("fields", ">i2"), ("len_rowid", ">i4"), ("rowid", ">i8"), ("len_vec", ">i4"),
                     ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (dim,))])


PREFAULT_BYTES = 64 << 20  # a matrix this large has its pages faulted in ahead (prefault),
PREFAULT_DIM = 512  # if its vectors are this wide: TOASTed, the server's fetch of them leaves the
                    # client time to spare; narrower, an open waits on the columns' query, and a
                    # prefault would take CPU from it (bench/postgres.py's 1536-d and 256-d opens)


def prefault(block: np.ndarray) -> bool:
    """Fault in the pages of a freshly allocated `block` without writing to them (madvise
    MADV_POPULATE_WRITE), so that the decoder writing into it meanwhile does not pay for them:
    the first touch of fresh memory is most of a wide read's decoding (see store.arrays.small_pages).
    Safe beside that writer (the contents are left alone); run in a thread. False where the system
    has no such call (not Linux, an older kernel): the pages are then faulted in as they are written."""
    return madvise(block, MADV_POPULATE_WRITE)


class VectorCopy:
    """feed() the COPY's messages a batch at a time, then finish() -> (rowids, blocks): the rows
    in the stream's order, the vectors as float32 blocks of consecutive rows (one block when
    `rows_hint` was enough)."""

    def __init__(self, dim: int, rows_hint: int = 0, spare: int = 0, block: np.ndarray | None = None):
        """`rows_hint`: the rows expected; `spare`: rows allocated beyond them (a whole read's room
        for a live refresh to append into, store.arrays.ROOM; untouched, they cost no memory).
        `block`: a fresh (rows, dim) float32 block to write into instead, as many rows as will come."""
        self.dim = dim
        self.row = row_dtype(dim)
        self.batch = max(1, BATCH_BYTES // self.row.itemsize)  # messages per feed: about BATCH_BYTES
        self._rest = b""  # the stream's bytes not decoded yet (a row split between batches)
        self._started = False  # the file header has been read
        self._hint = max(int(rows_hint) if block is None else len(block), 1)
        first = min(self._hint + max(int(spare), 0), max(1, MAX_FIRST_BLOCK_BYTES // (4 * max(dim, 1))))
        self.blocks = [small_pages(np.empty((first, dim), np.float32)) if block is None else block]
        if dim >= PREFAULT_DIM and self._hint * 4 * dim >= PREFAULT_BYTES:  # faulted in beside the decoding
            in_thread(lambda b=self.blocks[0][:self._hint]: prefault(b), "memviz-prefault")
        self._used = 0  # rows written in the last block
        self._ids = np.empty(first, np.int64)
        self.rows = 0

    def read(self, messages) -> tuple[np.ndarray, list[np.ndarray]]:
        """Decode an iterable of messages (a psycopg Copy) to its end: finish()'s answer. The
        iteration is batched in C (islice into a list): no Python statement runs per row."""
        it = iter(messages)
        while batch := list(islice(it, self.batch)):
            self.feed(batch)
        return self.finish()

    def feed(self, messages: list) -> None:
        """The stream's next messages (bytes-like, split anywhere)."""
        raw = b"".join((self._rest, *messages)) if self._rest else b"".join(messages)
        pos = 0
        if not self._started:  # the file header: signature, flags, extension length (+ extension)
            if len(raw) < 19 or len(raw) < 19 + int.from_bytes(raw[15:19], "big"):
                self._rest = raw
                return
            if raw[:11] != SIGNATURE:
                raise StoreError("the server's binary COPY of the vectors was not understood")
            pos = 19 + int.from_bytes(raw[15:19], "big")
            self._started = True
        n = (len(raw) - pos) // self.row.itemsize
        if n:
            got = np.frombuffer(raw, dtype=self.row, count=n, offset=pos)
            if not ((got["fields"] == 2) & (got["len_rowid"] == 8) & (got["len_vec"] == 4 + 4 * self.dim)
                    & (got["dim"] == self.dim)).all():
                raise StoreError("the server's binary COPY of the vectors was not understood")
            self._put(got)
        self._rest = raw[pos + n * self.row.itemsize:]

    def finish(self) -> tuple[np.ndarray, list[np.ndarray]]:
        if not self._started or self._rest != b"\xff\xff":  # the trailer: field count -1
            raise StoreError("the server's binary COPY of the vectors ended early or was not understood")
        last = self.blocks[-1][:self._used]
        if len(self.blocks) == 1 and self._used < min(len(self.blocks[0]), self._hint) * 7 // 8:
            last = last.copy()  # the estimate was far too high: the matrix keeps no idle rows
        self.blocks[-1] = last  # (several blocks are copied into one matrix by the caller)
        return self._ids[:self.rows], self.blocks

    def _put(self, got: np.ndarray) -> None:
        done = 0
        if self.rows + len(got) > len(self._ids):
            self._ids = np.concatenate([self._ids[:self.rows], np.empty(max(self.rows, len(got)), np.int64)])
        self._ids[self.rows:self.rows + len(got)] = got["rowid"]
        while done < len(got):
            block = self.blocks[-1]
            if self._used == len(block):  # full: another block as large as all before (no copy of them)
                block = small_pages(np.empty((max(MIN_BLOCK_ROWS, self.rows + done), self.dim), np.float32))
                self.blocks.append(block)
                self._used = 0
            k = min(len(got) - done, len(block) - self._used)
            block[self._used:self._used + k] = got["v"][done:done + k]  # byte order swapped here
            self._used += k
            done += k
        self.rows += len(got)
