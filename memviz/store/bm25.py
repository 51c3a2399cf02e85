"""FTS5's bm25() of an any-word query, computed with numpy from the full-text index's own
numbers: the same values, bit for bit, in a fraction of the time.

Why: asked for `bm25(memories_fts)`, FTS5 looks up each matching row's size and walks its
position lists; a common word matches a quarter of a store, and that is most of the hybrid
query's full-text time. The same numbers are each query word's posting list (one fts5vocab
aggregate, a fraction of it) and every row's token count (the docsize table, read once per
change of the store); bench/retrieval.py times the hybrid preset.

The formula is fts5_aux.c's fts5Bm25Function (k1 = 1.2, b = 0.75), per phrase i of the query
(here: each word, duplicates included, as `"w1" OR "w2" ...` makes them):

    avgdl  = total tokens / rows                            (the index's averages record)
    idf_i  = log((rows - n_i + 0.5) / (n_i + 0.5)), 1e-6 if <= 0     (n_i: rows with word i)
    score  = sum over i, in query order, of idf_i * ((f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl)))
    bm25   = -1.0 * score                                   (f_i: its count in the row, D: the row's tokens)

evaluated with the same IEEE double operations in the same order (the idf with math.log, the C
library's log that SQLite calls; a phrase absent from a row adds +0.0, which changes nothing),
so ranks and ties are FTS5's own; tests/test_bm25.py compares every value with bm25().

It applies when every query word is exactly one token of the table's tokenizer (a word that
splits, like "foo_bar", is a phrase whose match needs positions), the index keeps positions
(detail=full) and sizes (docsize); otherwise `hits` returns None and the caller asks SQLite.
"""
from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict

import apsw
import numpy as np

FTS = "memories_fts"
_VOCAB = "temp.memviz_bm25_vocab"
K1, B = 1.2, 0.75
_TERMS_KEPT = 256   # posting lists kept between queries (a slider or a retyped word reuses them)


class Bm25Index:
    """One connection's view of the FTS5 index: row sizes and posting lists, read on demand and
    dropped whenever the store changes (another connection's commit, or this one's)."""

    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self._lock = threading.Lock()
        self._version = None
        self._usable: bool | None = None
        self._tokenize = None
        self._sizes = None        # (rowids ascending, token counts, rows, avgdl)
        self._terms: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    # ------------------------------------------------------------------ the answer
    def hits(self, words: list[str]) -> np.ndarray | None:
        """(rowid, bm25) of every row matching any of `words` (query order), shape (n, 2), in
        rowid order; None when this index cannot answer exactly (the caller asks SQLite)."""
        with self._lock:
            try:
                if not self._fresh():
                    return None
                terms = []
                for w in words:
                    toks = self._tokenize(w.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
                    if len(toks) != 1:
                        return None
                    terms.append(toks[0][2])
                lists = [self._postings(t) for t in terms]
                sized = self._row_sizes()
                if sized is None:
                    return None
            except apsw.Error:
                self._usable = False   # e.g. a damaged index: SQLite's own path reports it
                return None
        size_ids, sizes, n_rows, avgdl = sized
        # every row is a position in the docsize table: no union or sort of the posting lists
        at = [np.searchsorted(size_ids, d) for d, _ in lists]
        if any(len(p) and (p[-1] >= len(size_ids) or not np.array_equal(size_ids[p], d)) for p, (d, _) in zip(at, lists)):
            return None   # a row in the index without a size: not what bm25() would compute
        score = np.zeros(len(size_ids))
        hit = np.zeros(len(size_ids), bool)
        num_c = K1 + 1.0
        for p, (d, f) in zip(at, lists):
            idf = math.log((float(n_rows - len(d)) + 0.5) / (len(d) + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            # the row-size factor k1 * (1 - b + b * D / avgdl) in C's left-to-right order
            norm = K1 * ((1 - B) + B * sizes[p] / avgdl)
            score[p] = score[p] + idf * ((f * num_c) / (f + norm))
            hit[p] = True
        rows = np.flatnonzero(hit)
        return np.column_stack([size_ids[rows].astype(np.float64), -1.0 * score[rows]])

    # ------------------------------------------------------------------ what it reads
    def _fresh(self) -> bool:
        """Whether the index can answer; caches dropped if the store changed since they were read."""
        version = (self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes())
        if version != self._version:
            self._version, self._sizes, self._usable = version, None, None
            self._terms.clear()
        if self._usable is None:
            self._usable = self._setup()
            self._version = (self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes())
        return self._usable

    def _setup(self) -> bool:
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = ? AND type = 'table'", (FTS,)).fetchone()
        spec = _native_tokenizer(row[0] if row else None)
        if spec is None:
            return False
        self._tokenize = self.conn.fts5_tokenizer(spec[0], spec[1:])
        self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, {FTS}, 'instance')")
        return True

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows containing `term` ascending, its count in each)."""
        hit = self._terms.get(term)
        if hit is not None:
            self._terms.move_to_end(term)
            return hit
        text = self.conn.execute(f"SELECT group_concat(doc) FROM {_VOCAB} WHERE term = ?", (term,)).fetchone()[0]
        inst = _ints(text)   # one entry per occurrence, ascending
        if len(inst):
            first = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1]])
            hit = inst[first], np.diff(np.r_[first, len(inst)]).astype(np.float64)
        else:
            hit = inst, np.zeros(0)
        self._terms[term] = hit
        if len(self._terms) > _TERMS_KEPT:
            self._terms.popitem(last=False)
        return hit

    def _row_sizes(self):
        """(rowids ascending, token counts, rows, avgdl) from the docsize table and the averages
        record; None if they do not read as one column's sizes."""
        if self._sizes is None:
            ids, hexes = self.conn.execute(
                f"SELECT group_concat(id), group_concat(hex(sz), '') FROM {FTS}_docsize").fetchone()
            ids = _ints(ids)
            sizes = _varints(bytes.fromhex(hexes or ""))
            avg = self.conn.execute(f"SELECT block FROM {FTS}_data WHERE id = 1").fetchone()
            totals = _varints(bytes(avg[0])) if avg and avg[0] is not None else None
            if sizes is None or len(sizes) != len(ids) or totals is None or len(totals) != 2 or totals[0] <= 0:
                self._sizes = False
            else:
                if len(ids) > 1 and not np.all(ids[1:] > ids[:-1]):
                    order = np.argsort(ids, kind="stable")
                    ids, sizes = ids[order], sizes[order]
                n_rows, n_tokens = int(totals[0]), int(totals[1])
                self._sizes = (ids, sizes.astype(np.float64), n_rows, float(n_tokens) / float(n_rows))
        return self._sizes or None


def _native_tokenizer(sql: str | None) -> list[str] | None:
    """The tokenizer (name, arguments) of an FTS5 table with the one column `content` and no
    options but content=, content_rowid= and tokenize=; None for any other table."""
    m = re.search(r"fts5\s*\((.*)\)\s*$", sql or "", flags=re.I | re.S)
    if m is None:
        return None
    args = [a.strip() for a in re.findall(r"(?:'[^']*'|\"[^\"]*\"|[^,'\"])+", m.group(1))]
    columns = [a for a in args if "=" not in a]
    options = dict(a.split("=", 1) for a in args if "=" in a)
    keys = {k.strip().lower() for k in options}
    if [c.lower() for c in columns] != ["content"] or not keys <= {"content", "content_rowid", "tokenize"}:
        return None
    spec = next((v.strip().strip("'\"") for k, v in options.items() if k.strip().lower() == "tokenize"), "unicode61")
    return spec.split() or None


def _ints(text: str | None) -> np.ndarray:
    """Comma-separated integers (a group_concat) as int64."""
    if not text:
        return np.zeros(0, np.int64)
    return np.array(text.split(","), dtype=np.int64) if len(text) < 64 else \
        np.fromstring(text, dtype=np.int64, sep=",")


def _varints(buf: bytes) -> np.ndarray | None:
    """SQLite varints (7 bits a byte, high bit: more follow) packed one after another; None if
    the buffer ends inside one or one is longer than 8 bytes (none of FTS5's counts is)."""
    b = np.frombuffer(buf, np.uint8)
    if not len(b):
        return np.zeros(0, np.int64)
    last = b < 0x80
    if not last[-1]:
        return None
    ends = np.flatnonzero(last)
    starts = np.r_[0, ends[:-1] + 1]
    if np.any(ends - starts >= 8):
        return None
    which = np.repeat(np.arange(len(ends)), ends - starts + 1)
    shift = (7 * (ends[which] - np.arange(len(b)))).astype(np.int64)
    return np.add.reduceat((b & 0x7F).astype(np.int64) << shift, starts)
