"""Untrusted LLM text: JSON found wherever it hides, shapes checked, citations limited to the
evidence given, stored text plain."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memviz.reflect import BadOutput
from memviz.reflect.validate import clean_text, extract_json, parse_insights, parse_questions

EVIDENCE = ["m-a", "m-b", "m-c"]


@pytest.mark.parametrize("text", [
    '{"questions": ["a?"]}',
    '```json\n{"questions": ["a?"]}\n```',
    '```\n{"questions": ["a?"]}\n```',
    'Sure, here they are:\n{"questions": ["a?"]}\nLet me know!',
    'Thinking {not json} ... {"questions": ["a?"]} done',
    '  \n{"questions": ["a?"]}  ',
])
def test_extract_json_finds_the_object(text):
    assert extract_json(text) == {"questions": ["a?"]}


@pytest.mark.parametrize("text, match", [
    (None, "empty"), ("   ", "empty"), ('{"questions": ["a', "no JSON"), ("42", "no JSON"),
    ("I'm sorry, but I can't comply.", "declined"),
])
def test_extract_json_refuses(text, match):
    with pytest.raises(BadOutput, match=match):
        extract_json(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_extract_json_never_crashes(text):
    try:
        value = extract_json(text)
    except BadOutput:
        return
    assert isinstance(value, (dict, list))


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=12))
def test_parsers_reject_any_shape_cleanly(value):
    for fn in (lambda v: parse_questions(v, 3), lambda v: parse_insights(v, EVIDENCE, 3)):
        try:
            kept, problems = fn(value)
        except BadOutput:
            continue
        assert isinstance(problems, list)
        for k in kept:
            assert getattr(k, "cited_ids", EVIDENCE) and set(getattr(k, "cited_ids", [])) <= set(EVIDENCE)


def test_questions_are_cleaned_deduplicated_and_capped():
    qs, problems = parse_questions({"questions": ["  Why?  ", "why?", "", 7, "How\x07 so?", "What now?", "Who?"]}, 3)
    assert qs == ["Why?", "How so?", "What now?"]
    assert problems == ["question 2 repeats an earlier one; dropped", "question 3 is empty; dropped",
                        "question 4 is not text; dropped", "the model asked 4 questions; the first 3 were kept"]
    assert parse_questions(["a?"], 3)[0] == ["a?"]  # a bare list is accepted
    with pytest.raises(BadOutput, match="no `questions` list"):
        parse_questions({"qs": ["a"]}, 3)
    with pytest.raises(BadOutput, match="no usable questions"):
        parse_questions({"questions": []}, 3)


def test_citations_must_name_given_evidence():
    value = {"insights": [
        {"insight": "one", "evidence": [1, "2", "E3", "m-a", 4, 0, -1, 1.5, True, None, "m-zzz"]},
        {"insight": "two", "evidence": [9]},
        {"insight": "three", "evidence": "#2"},
        {"text": "four", "sources": ["[3]"]},
        "five (because of 1)",
        {"insight": "", "evidence": [1]},
    ]}
    kept, problems = parse_insights(value, EVIDENCE, 10)
    assert [(k.text, k.cited_ids) for k in kept] == [("one", ["m-a", "m-b", "m-c"]), ("three", ["m-b"]),
                                                     ("four", ["m-c"])]
    assert kept[0].dropped == ["4", "0", "-1", "1.5", "true", "null", "m-zzz"]
    assert problems[0].startswith("insight 1 cited 4, 0, -1, 1.5, true, null, m-zzz, which are not among the 3")
    assert "insight 2 has no valid citation left; dropped" in problems
    assert "insight 5 cites no evidence; dropped" in problems
    assert "insight 6 has no text; dropped" in problems


def test_insight_text_is_plain_and_bounded():
    kept, problems = parse_insights({"insights": [{"insight": "x" * 50, "evidence": [1]}]}, EVIDENCE, 1, max_chars=20)
    assert len(kept[0].text) == 20 and kept[0].text.endswith("…")
    assert problems == ["insight 1 was longer than 20 characters and was shortened"]
    assert clean_text("a\x1b[2J\u202eb\r\nc\t d", 100) == ("a[2Jb\nc d", False)


def test_round_trip_of_a_well_formed_reply():
    reply = json.dumps({"insights": [{"insight": "Bob is stressed.", "evidence": [2, 1]}]})
    kept, problems = parse_insights(extract_json(reply), EVIDENCE, 1)
    assert kept[0].cited_ids == ["m-b", "m-a"] and problems == []


def test_hostile_text_is_bounded():
    with pytest.raises(BadOutput):
        extract_json("[" * 100_000)
    with pytest.raises(BadOutput, match="implausibly long"):
        extract_json("x" * 600_000)
    assert extract_json("[" * 50 + ' {"questions": []}') == {"questions": []}
