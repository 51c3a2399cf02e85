"""records.normalize_many: every kind of value a record may hold becomes the stored type (times
as epoch seconds, numbers as floats, JSON columns as compact text), values already of that type
pass as they are, and each bad value is refused with the memory and the field named."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from memviz.store import ValidationError
from memviz.store.records import decode_json, normalize_many

NOW = 1_700_000_000.75


def one(**rec) -> dict:
    return normalize_many([{"id": "m", "kind": "fact", "content": "tea", **rec}], model_dims={}, now=NOW)[0]


def test_defaults_and_the_time_of_the_read():
    row = one()
    assert row["created_at"] == row["event_time"] == 1_700_000_000 and type(row["created_at"]) is int
    assert (row["importance"], row["confidence"], row["decay_rate"], row["access_count"], row["protected"]) == (5.0, 1.0, 0.1, 0, 0)
    assert type(row["importance"]) is float and type(row["access_count"]) is int
    assert (row["agent"], row["tags"], row["source_ids"], row["entity_ids"], row["attributes"]) == ("", "[]", "[]", "[]", "{}")
    assert row["valid_until"] is None and row["last_accessed"] is None and row["embedding"] is None
    assert list(row) == ["id", "agent", "kind", "content", "importance", "embedding", "embedding_model", "event_time",
                         "created_at", "valid_until", "confidence", "access_count", "last_accessed", "decay_rate",
                         "protected", "source_ids", "entity_ids", "tags", "attributes"]


@pytest.mark.parametrize("given, stored", [
    (1_700_000_123, 1_700_000_123), (1_700_000_123.9, 1_700_000_123), ("2023-11-14T22:15:23Z", 1_700_000_123),
    ("2023-11-14 22:15:23+00:00", 1_700_000_123), (dt.datetime(2023, 11, 14, 22, 15, 23), 1_700_000_123),
    (dt.datetime(2023, 11, 15, 0, 15, 23, tzinfo=dt.timezone(dt.timedelta(hours=2))), 1_700_000_123),
])
def test_times_of_every_form_become_epoch_seconds(given, stored):
    row = one(created_at=given, valid_until=given, last_accessed=given)
    assert row["created_at"] == row["event_time"] == row["valid_until"] == row["last_accessed"] == stored
    assert all(type(row[c]) is int for c in ("created_at", "event_time", "valid_until", "last_accessed"))
    assert one(event_time=given, created_at=5)["event_time"] == stored
    assert one(valid_until="")["valid_until"] is None


def test_numbers_of_other_types_become_the_stored_ones():
    row = one(id=42, importance=np.float64(7), confidence=1, decay_rate="0.5", access_count=3.0, protected="yes")
    assert row["id"] == "42"
    assert (row["importance"], row["confidence"], row["decay_rate"], row["access_count"], row["protected"]) == (7.0, 1.0, 0.5, 3, 1)
    assert [type(row[c]) for c in ("importance", "confidence", "decay_rate", "access_count")] == [float, float, float, int]
    assert one(protected=0)["protected"] == 0 and one(importance=True)["importance"] == 1.0


def test_json_columns_are_compact_text():
    row = one(tags=("a", "b"), source_ids=["x"], entity_ids='["e1"]', attributes={"k": [1, "é"], "n": None})
    assert (row["tags"], row["source_ids"], row["entity_ids"]) == ('["a","b"]', '["x"]', '["e1"]')
    assert row["attributes"] == '{"k":[1,"é"],"n":null}'
    assert one(attributes="{}")["attributes"] == "{}" and one(tags=[])["tags"] == "[]"


@pytest.mark.parametrize("rec, said", [
    ({"colour": "red"}, "unknown memory fields: colour"),
    ({"kind": ""}, "`kind` must be a non-empty string"),
    ({"content": 5}, "`content` must be a non-empty string"),
    ({"created_at": "yesterday"}, "cannot read 'yesterday' as a time"),
    ({"valid_until": True}, "not a time"),
    ({"last_accessed": float("inf")}, "not a time"),
    ({"importance": "high"}, "bad number"),
    ({"access_count": None, "confidence": [1]}, "bad number"),
    ({"importance": 11}, "importance 11.0 is outside 0-10"),
    ({"tags": {"a": 1}}, "`tags` must be a JSON list"),
    ({"attributes": []}, "`attributes` must be a JSON object"),
    ({"attributes": "{oops"}, "`attributes` is not valid JSON"),
    ({"embedding": np.array([1.0, np.nan], np.float32), "embedding_model": "x"}, "embedding contains NaN"),
    ({"embedding": np.ones(3, np.float32)}, "needs its `embedding_model`"),
])
def test_bad_values_are_refused_with_the_memory_and_field(rec, said):
    with pytest.raises(ValidationError, match="memory m: " if "unknown" not in said else "unknown") as e:
        one(**rec)
    assert said in str(e.value)


def test_vectors_are_checked_together_and_a_model_keeps_its_dimension():
    dims: dict = {}
    recs = [{"id": f"m{i}", "kind": "fact", "content": "t", "embedding": np.full(4, i, np.float32), "embedding_model": "e"}
            for i in range(3)]
    rows = normalize_many(recs, model_dims=dims, now=NOW)
    assert dims == {"e": 4}
    assert [np.frombuffer(r["embedding"], "<f4").tolist() for r in rows] == [[i] * 4 for i in range(3)]
    with pytest.raises(ValidationError, match="memory m9: embedding has 3 dimensions, but this store's model uses 4"):
        normalize_many([{**recs[0], "id": "m9", "embedding": [1.0, 2.0, 3.0]}], model_dims=dims, now=NOW)


def test_vectors_as_float32_bytes_are_kept_and_checked_like_arrays():
    """A source may hand its vectors over as float32 bytes: the rows hold the bytes given, equal to
    what the same vectors as arrays become, and a NaN, a wrong dimension or a ragged length is
    refused as for an array."""
    vecs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    recs = [{"id": f"m{i}", "kind": "fact", "content": "tea", "embedding_model": "e"} for i in range(3)]
    as_arrays = normalize_many([{**r, "embedding": v} for r, v in zip(recs, vecs)], model_dims={}, now=NOW)
    blobs = [v.tobytes() for v in vecs]
    dims: dict = {}
    as_bytes = normalize_many([{**r, "embedding": b} for r, b in zip(recs, blobs)], model_dims=dims, now=NOW)
    assert as_bytes == as_arrays and dims == {"e": 4}
    assert all(row["embedding"] is b for row, b in zip(as_bytes, blobs))  # not copied
    bad = vecs.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValidationError, match="memory m1: embedding contains NaN"):
        normalize_many([{**r, "embedding": v.tobytes()} for r, v in zip(recs, bad)], model_dims={}, now=NOW)
    with pytest.raises(ValidationError, match="memory m1: embedding has 3 dimensions, but this store's model uses 4"):
        normalize_many([{**recs[0], "embedding": blobs[0]}, {**recs[1], "embedding": blobs[1][:12]}], model_dims={}, now=NOW)
    with pytest.raises(ValidationError, match="memory m0: embedding has 7 bytes"):
        normalize_many([{**recs[0], "embedding": blobs[0][:7]}], model_dims={}, now=NOW)


# ------------------------------------------------------------------ JSON text: orjson where it writes what json writes
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memviz.store.records import _JSON, _encode  # noqa: E402

_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text()
            | st.sampled_from([1e-5, 1.5e-7, 0.00012, 1e16, 1e-310, -0.0, "e-5", "1e-5", "null", "\ud800", "nul\x00"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4), max_leaves=12)


@settings(max_examples=600, deadline=None)
@given(_VALUES)
def test_json_text_is_what_the_json_module_writes(value):
    """A JSON column's text is json.dumps(ensure_ascii=False, compact) whichever encoder wrote it:
    floats in exponent form, NaN, huge integers, non-string keys and lone surrogates included."""
    try:
        want = _JSON.encode(value)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            _encode(value)
        return
    assert _encode(value) == want


def test_values_json_refuses_are_still_refused():
    with pytest.raises(TypeError):
        _encode({"when": dt.datetime(2026, 1, 1)})   # orjson would write it; json, and so memviz, does not
    with pytest.raises(TypeError):
        _encode({"what": {1, 2}})


def test_json_ints_reads_integer_arrays_only():
    from memviz.store.records import json_ints
    assert json_ints("[3,-1,9007199254740993]").tolist() == [3, -1, 9007199254740993]   # exact past 2**53
    assert json_ints("[]").tolist() == []
    for other in ("[1,2.0]", "[1,null]", '["1"]', "[1e3]", "[1,,2]", "1,2", "[1,x]"):
        assert json_ints(other) is None, other


@pytest.mark.parametrize("raw", [5, 2.5, b"\x00\x01"])
def test_a_json_column_holding_a_number_or_a_blob_is_malformed_not_an_error(raw):
    # a damaged page or an agent's own SQL can leave any type where the JSON text belongs
    assert decode_json(raw, "tags") == ([], False)
    assert decode_json(raw, "attributes") == ({}, False)
