"""Judged sets in JSON Lines and TREC files: round trips, and bad input refused whole with
each problem's file and line."""
from __future__ import annotations

import json
import os
import re

import pytest

from memviz.judge import (
    InvalidJudgment,
    JudgedFileError,
    JudgedQuery,
    JudgedSet,
    query_from_json,
    read_jsonl,
    read_trec,
    write_jsonl,
    write_trec,
)
from memviz.store.times import to_epoch

KNOWN = {f"m{i}" for i in range(10)}


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def refused(call) -> JudgedFileError:
    with pytest.raises(JudgedFileError) as info:
        call()
    return info.value


def test_the_issue_format(tmp_path):
    f = write(tmp_path / "set.jsonl", [
        '{"id": "q1", "query": "text", "relevant": {"m1": 2, "m2": 1}, "as_of": 1683554160, "agents": ["a"],'
        ' "kinds": ["dialogue"], "tags": ["t"]}',
        "",
        '{"query": "a list means grade 1", "relevant": ["m3", "m4"], "as_of": "2023-05-08T13:56:00Z"}',
        '{"like": "m5", "relevant": {"m6": 1, "m7": 0}, "judged_by": "ann", "judged_at": "2026-03-01 12:00"}',
    ])
    s = read_jsonl(f, known_ids=KNOWN)
    assert s.name == "set"
    assert s.ids == ("q1", "q3", "q4")  # a missing id is q<line>
    q1, q3, q4 = s.queries
    assert q1.relevant == {"m1": 2, "m2": 1} and q1.as_of == 1683554160.0
    assert (q1.agents, q1.kinds, q1.tags) == (("a",), ("dialogue",), ("t",))
    assert q3.relevant == {"m3": 1, "m4": 1}
    assert q3.as_of == to_epoch("2023-05-08T13:56:00Z")
    assert q4.like == "m5" and q4.query == "" and q4.judged_by == "ann"
    assert q4.judged_at == to_epoch("2026-03-01T12:00:00Z")


def test_jsonl_round_trip_keeps_everything(tmp_path):
    s = JudgedSet("mine", (
        JudgedQuery("a", {"m1": 2, "m2": 0}, query="tab\tand\nnewline é", as_of=1.5, agents=("x",), kinds=("k",),
                    tags=("t",), judged_by="me", judged_at=1700000000),
        JudgedQuery("b", {"m3": 1}, like="m4"),
    ))
    assert write_jsonl(s, tmp_path / "out.jsonl") == 2
    assert read_jsonl(tmp_path / "out.jsonl", name="mine", known_ids=KNOWN) == s
    first = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["as_of"] == 1.5 and first["judged_at"] == 1700000000  # whole seconds written as integers
    assert [p for p in os.listdir(tmp_path)] == ["out.jsonl"]  # no temporary file left


def test_a_generated_id_never_takes_an_explicit_one(tmp_path):
    f = write(tmp_path / "s.jsonl", ['{"query": "x", "relevant": ["m1"]}', '{"id": "q1", "query": "y", "relevant": ["m2"]}'])
    assert read_jsonl(f).ids == ("q1-2", "q1")


def test_whole_float_grades_are_read_as_integers(tmp_path):
    f = write(tmp_path / "s.jsonl", ['{"query": "x", "relevant": {"m1": 2.0, "m2": 0.0}}'])
    assert read_jsonl(f).queries[0].relevant == {"m1": 2, "m2": 0}


@pytest.mark.parametrize("line, message", [
    ('{"query": "x", "relevant": ["m1"', "is not JSON"),
    ('["m1"]', "is JSON list, not an object"),
    ('{"query": "x"}', '"relevant" is missing'),
    ('{"relevant": ["m1"]}', '"query" is missing'),
    ('{"query": "x", "relevant": {}}', "judges no memory relevant"),
    ('{"query": "x", "relevant": []}', "judges no memory relevant"),
    ('{"query": "x", "relevant": {"m1": 3}}', "grade of 'm1' is 3"),
    ('{"query": "x", "relevant": {"m1": 1.5}}', "grade of 'm1' is 1.5"),
    ('{"query": "x", "relevant": {"m1": "2"}}', "grade of 'm1' is '2'"),
    ('{"query": "x", "relevant": ["m1", "m1"]}', "lists 'm1' twice"),
    ('{"query": "x", "relevant": "m1"}', "relevant must be"),
    ('{"query": "x", "relevant": ["m1"], "as_of": "next tuesday"}', 'as_of "next tuesday" is not a time'),
    ('{"query": "x", "relevant": ["m1"], "as_of": true}', "as_of true is not a time"),
    ('{"query": "x", "relevant": ["m1"], "judged_at": [1]}', "judged_at \\[1\\] is not a time"),
    ('{"query": "x", "relevant": ["m1"], "agents": "a"}', "agents must be a list of names"),
    ('{"query": "x", "relevant": ["m1"], "relevent": 1}', "unknown field 'relevent'"),
    ('{"id": 7, "query": "x", "relevant": ["m1"]}', "the id 7 is not text"),
    ('{"query": "x", "relevant": ["m1", "nope"]}', "memory id 'nope' names no memory in the store"),
    ('{"query": "x", "like": "gone", "relevant": ["m1"]}', "memory id 'gone' names no memory"),
])
def test_each_bad_line_is_named(tmp_path, line, message):
    f = write(tmp_path / "bad.jsonl", ['{"id": "ok", "query": "fine", "relevant": ["m1"]}', line])
    err = refused(lambda: read_jsonl(f, known_ids=KNOWN))
    assert [(p.line, p.path) for p in err.problems] == [(2, str(f))]
    assert str(err).startswith(f"{f}: 1 problem; nothing was read from it")
    assert f"{f}:2: " in str(err)
    assert re.search(message, str(err)), str(err)


def test_a_duplicate_id_names_both_lines(tmp_path):
    f = write(tmp_path / "dup.jsonl", ['{"id": "a", "query": "x", "relevant": ["m1"]}',
                                       '{"id": "b", "query": "x", "relevant": ["m1"]}',
                                       '{"id": "a", "query": "y", "relevant": ["m2"]}'])
    err = refused(lambda: read_jsonl(f))
    assert [(p.line, p.message) for p in err.problems] == [(3, "the query id 'a' is already used on line 1")]


def test_every_problem_is_listed_and_the_message_is_bounded(tmp_path):
    lines = ['{"query": "x", "relevant": {"m1": 5}}'] * 30 + ["not json"]
    f = write(tmp_path / "many.jsonl", lines)
    err = refused(lambda: read_jsonl(f))
    assert err.total == 31 and [p.line for p in err.problems] == list(range(1, 32))
    text = str(err)
    assert text.startswith(f"{f}: 31 problems; nothing was read from it")
    assert f"{f}:20: " in text and f"{f}:21: " not in text
    assert "(and 11 more)" in text


def test_a_file_that_cannot_be_used_at_all(tmp_path):
    assert "cannot be read" in str(refused(lambda: read_jsonl(tmp_path / "absent.jsonl")))
    empty = write(tmp_path / "empty.jsonl", ["", "   "])
    assert "holds no judged query" in str(refused(lambda: read_jsonl(empty)))
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b'{"query": "x", "relevant": ["m1"]}\n\xff\xfe\x00\n')
    err = refused(lambda: read_jsonl(binary))
    assert [(p.line, p.message) for p in err.problems] == [(2, "is not UTF-8 text")]


def test_a_byte_order_mark_and_crlf_are_read(tmp_path):
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"query": "x", "relevant": ["m1"]}\r\n{"query": "y", "relevant": ["m2"]}\r\n')
    assert read_jsonl(f).ids == ("q1", "q2")


def test_query_from_json_is_the_one_reader_of_an_object():
    q = query_from_json({"query": "x", "relevant": ["m1"]}, default_id="z")
    assert q.id == "z" and q.relevant == {"m1": 1}
    with pytest.raises(InvalidJudgment, match='"id" is missing'):
        query_from_json({"query": "x", "relevant": ["m1"]})


# ------------------------------------------------------------------ TREC
def test_trec_round_trip(tmp_path):
    s = JudgedSet("t", (JudgedQuery("401", {"m1": 2, "m2": 0, "m3": 1}, query="where\tis the\ncafe"),
                        JudgedQuery("402", {"m4": 1}, query="tea")))
    assert write_trec(s, tmp_path / "qrels.txt", tmp_path / "topics.tsv") == 2
    assert (tmp_path / "qrels.txt").read_text() == "401 0 m1 2\n401 0 m2 0\n401 0 m3 1\n402 0 m4 1\n"
    assert (tmp_path / "topics.tsv").read_text() == "401\twhere is the cafe\n402\ttea\n"
    back = read_trec(tmp_path / "qrels.txt", tmp_path / "topics.tsv", name="t", known_ids=KNOWN)
    assert back.ids == ("401", "402")
    assert back.queries[0].relevant == {"m1": 2, "m2": 0, "m3": 1}
    assert back.queries[0].query == "where is the cafe"
    assert read_trec(tmp_path / "qrels.txt", tmp_path / "topics.tsv").name == "qrels"


def test_classic_trec_topics(tmp_path):
    (tmp_path / "topics.txt").write_text(
        "<top>\n<num> Number: 401\n<title> foreign minorities, Germany\n\n<desc> Description:\nWhat ...\n</top>\n\n"
        "<top>\n<num> Number: 402 <title> Topic: behavioral\n genetics\n<narr> Narrative: ...\n</top>\n")
    write(tmp_path / "qrels", ["401 0 m1 1", "402 0 m2 2"])
    s = read_trec(tmp_path / "qrels", tmp_path / "topics.txt")
    assert [(q.id, q.query) for q in s] == [("401", "foreign minorities, Germany"), ("402", "behavioral genetics")]
    (tmp_path / "broken.txt").write_text("<top>\n<num> Number: 401\n<title> x\n</top>\n<top>\n<title> no number\n</top>\n")
    err = refused(lambda: read_trec(tmp_path / "qrels", tmp_path / "broken.txt"))
    assert [(p.path, p.line) for p in err.problems][:1] == [(str(tmp_path / "broken.txt"), 5)]
    assert "has no <num>" in str(err)


def test_trec_problems_name_their_file_and_line(tmp_path):
    topics = write(tmp_path / "topics.tsv", ["t1\tone", "t2\ttwo", "t3 no tab", "t1\tagain", "t4\tfour", "t5\tall zero"])
    qrels = write(tmp_path / "qrels", [
        "t1 0 m1 1",
        "t1 0 m2",            # 3 fields
        "t2 0 m3 x",          # not an integer
        "t2 0 m3 3",          # outside 0-2
        "t9 0 m1 1",          # no topic text
        "t1 0 m1 2",          # judged twice
        "t2 0 ghost 1",       # names no memory
        "t5 0 m4 0",
    ])
    err = refused(lambda: read_trec(qrels, topics, known_ids=KNOWN))
    got = [(os.path.basename(p.path), p.line) for p in err.problems]
    assert got == [("qrels", 2), ("qrels", 3), ("qrels", 4), ("qrels", 5), ("qrels", 6), ("qrels", 7),
                   ("topics.tsv", 3), ("topics.tsv", 4), ("topics.tsv", 5), ("topics.tsv", 6)]
    text = str(err)
    for part in ("has 3 fields", "the grade 'x' is not an integer", "the grade 3 is outside 0–2",
                 f"topic 't9' has no text in {topics}", "'m1' is judged for topic 't1' again (first on line 1)",
                 "memory id 'ghost' names no memory", "is not 'query id<TAB>query text'",
                 "the topic id 't1' is already used on line 1", f"topic 't4' has no judgment in {qrels}",
                 "judges no memory relevant"):
        assert part in text, part
    assert text.startswith(f"{qrels}, {topics}: 10 problems; nothing was read from these files")


def test_trec_cannot_hold_every_query(tmp_path):
    with pytest.raises(InvalidJudgment, match="TREC topics hold text only"):
        write_trec(JudgedSet("s", (JudgedQuery("a", {"m1": 1}, like="m2"),)), tmp_path / "q", tmp_path / "t")
    with pytest.raises(InvalidJudgment, match="white space"):
        write_trec(JudgedSet("s", (JudgedQuery("a b", {"m1": 1}, query="x"),)), tmp_path / "q", tmp_path / "t")
    assert os.listdir(tmp_path) == []  # nothing written
