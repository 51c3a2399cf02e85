"""What memviz says about vectors it cannot index (a vector table declared for another dimension;
an agent's NaN, 100-d, empty or ragged vectors) is true: what is wrong, whether memviz can repair
it, and the real next step. Where stats sends the user to `memviz check --repair`, the repair works;
where memviz cannot repair, nothing sends the user there."""
from __future__ import annotations

import numpy as np
import pytest
from bad_stores import misdeclared_vector_table, odd_vectors

import memviz.store as ms
from memviz.cli import main
from memviz.layout.first_map import first_map


def _run(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def _says_no_lie(text: str) -> None:
    assert "next edit" not in text and "of 0 dimensions" not in text, text


def test_a_vector_table_declared_for_another_dimension_is_repaired(tmp_path, capsys):
    db = str(misdeclared_vector_table(tmp_path))
    with ms.open(db) as s:
        assert "vec_memories_256" in s.read_only_reason and "memviz check --repair" in s.read_only_reason
    code, out = _run(capsys, "stats", db)
    _says_no_lie(out)
    assert "vec_memories_256 is declared for 100 dimensions" in out and "memviz check --repair" in out
    code, out = _run(capsys, "check", db)
    assert code == 1 and "repairable with --repair" in out and "missing index triggers" not in out
    assert "1661 rows" not in out  # one finding for the table, not every row it cannot compare
    code, out = _run(capsys, "check", "--repair", "--yes", db)
    assert code == 0, out
    assert "nothing was repaired" not in out and "rebuilt vec_memories_256" in out and out.rstrip().endswith("clean")
    with ms.open(db) as s:
        assert s.read_only_reason is None
        a = s.arrays()
        assert s.vec_search(a.embedding[5], 3)[0] == (a.ids[5], pytest.approx(0.0, abs=1e-6))
        assert [h["action"] for h in s.history("(store)")] == ["repair"]
    code, out = _run(capsys, "stats", db)
    assert code == 0 and "note:" not in out, out


def test_vectors_of_a_dimension_with_no_table_are_indexed_by_the_repair(tmp_path, capsys):
    db = str(odd_vectors(tmp_path, "d100"))
    code, out = _run(capsys, "stats", db)
    _says_no_lie(out)
    assert "3 memories hold embeddings of 100 dimensions with no vector index" in out and "memviz check --repair" in out
    assert "not of the store's main model" in out
    code, out = _run(capsys, "check", "--repair", "--yes", db)
    assert code == 0 and out.rstrip().endswith("clean"), out
    code, out = _run(capsys, "stats", db)
    assert "no vector index" not in out


@pytest.mark.parametrize("kind, said", [
    ("nan", "NaN or infinite values"),
    ("empty", "0 bytes, which is no float32 vector"),
    ("ragged", "10 bytes, which is no float32 vector")])
def test_vectors_memviz_cannot_repair_are_said_so_with_the_next_step(tmp_path, capsys, kind, said):
    db = str(odd_vectors(tmp_path, kind))
    code, out = _run(capsys, "stats", db)
    _says_no_lie(out)
    assert code == 1 and said in out and "memviz check --repair" not in out, out
    assert "re-embed" in out  # the real next step
    code, out = _run(capsys, "check", "--repair", "--yes", db)
    assert code == 1 and said in out and "not repairable by memviz" in out and "re-embed" in out, out
    assert "nothing here can be repaired by memviz" in out and "nothing was repaired" not in out


def test_nan_vectors_leave_only_their_own_memories_off_the_map(tmp_path):
    """Three NaN vectors are no vectors: the other memories keep their places (PCA over a NaN row
    made every point of the map NaN)."""
    with ms.open(str(odd_vectors(tmp_path, "nan"))) as s:
        a = s.arrays()
        assert a.has_embedding.sum() == len(a) - 3 and np.isfinite(a.embedding).all()
        xy, _ = first_map(s, a)
        assert np.isfinite(xy[a.has_embedding]).all() and np.isnan(xy[~a.has_embedding]).all()
