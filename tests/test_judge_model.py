"""Judged queries and sets are validated when they are made."""
from __future__ import annotations

import math

import pytest

from memviz.judge import InvalidJudgment, JudgedQuery, JudgedSet


def q(qid="q1", relevant=None, **kw):
    return JudgedQuery(id=qid, relevant={"m1": 2, "m2": 0, "m3": 1} if relevant is None else relevant,
                       **({"query": "where is the cafe?"} | kw))


def test_a_judged_query_keeps_what_it_was_given():
    jq = q(as_of=1683554160, agents=["conv-26", "conv-26"], kinds=("dialogue",), tags=["x"], like="m9",
           judged_by="ann", judged_at=1700000000)
    assert jq.relevant == {"m1": 2, "m2": 0, "m3": 1}
    assert jq.relevant_ids == ("m1", "m3")
    assert jq.grade("m1") == 2 and jq.grade("m2") == 0 and jq.grade("unjudged") == 0
    assert jq.as_of == 1683554160.0 and isinstance(jq.as_of, float)
    assert jq.agents == ("conv-26",)  # a name given twice is kept once
    assert jq.kinds == ("dialogue",) and jq.tags == ("x",)
    assert jq.memory_ids() == ("m1", "m2", "m3", "m9")
    with pytest.raises(TypeError):
        jq.relevant["m4"] = 1  # read-only


def test_a_query_by_example_needs_no_text():
    jq = JudgedQuery(id="q", relevant={"m1": 1}, like="m0")
    assert jq.query == "" and jq.like == "m0"


@pytest.mark.parametrize("kw, message", [
    ({"qid": ""}, "id is empty"),
    ({"qid": 3}, "id must be text"),
    ({"query": "  "}, "neither a query text nor a memory"),
    ({"query": None}, "query text must be text"),
    ({"relevant": {}}, "judges no memory relevant"),
    ({"relevant": {"m1": 0, "m2": 0}}, "all grade 0"),
    ({"relevant": {"m1": 3}}, "grade of 'm1' is 3"),
    ({"relevant": {"m1": -1}}, "grade of 'm1' is -1"),
    ({"relevant": {"m1": True}}, "grade of 'm1' is True"),
    ({"relevant": {"m1": 1.0}}, "grade of 'm1' is 1.0"),
    ({"relevant": {"": 1}}, "judged memory id is empty"),
    ({"relevant": ["m1"]}, "must map memory ids to grades"),
    ({"as_of": math.nan}, "as_of must be epoch seconds"),
    ({"as_of": "2023-05-08"}, "as_of must be epoch seconds"),
    ({"judged_at": True}, "judged_at must be epoch seconds"),
    ({"agents": "conv-26"}, "agents must be a list of names"),
    ({"kinds": [""]}, "a name in query 'q1': kinds is empty"),
    ({"like": ""}, "`like`"),
])
def test_bad_values_are_refused_with_what_is_wrong(kw, message):
    with pytest.raises(InvalidJudgment, match=message.replace("(", r"\(").replace(")", r"\)")):
        q(**kw)


def test_a_judged_set():
    s = JudgedSet("locomo", [q("a"), q("b", {"m4": 1})])
    assert len(s) == 2 and s.ids == ("a", "b") and [x.id for x in s] == ["a", "b"]
    assert s.qrels() == {"a": {"m1": 2, "m2": 0, "m3": 1}, "b": {"m4": 1}}
    assert s.memory_ids() == {"m1", "m2", "m3", "m4"}
    assert s.by_id()["b"].relevant_ids == ("m4",)
    with pytest.raises(InvalidJudgment, match="two queries with the id 'a'"):
        JudgedSet("x", [q("a"), q("a")])
    with pytest.raises(InvalidJudgment, match="name is empty"):
        JudgedSet(" ", [q()])
    with pytest.raises(InvalidJudgment, match="not a JudgedQuery"):
        JudgedSet("x", [{"id": "a"}])
