"""Judged sets and parameter sets kept with a store (store/judged.py keeps their rows): from and
to the judge layer's objects, and the undoable steps (edits/judged.py) that change them.

    history.perform(save_set(judged))                   # every query of the set, one step
    read_set(store, "travel")                           # a JudgedSet
    read_file_for(store, "travel.jsonl")                # a file's set, its ids checked against the store
    history.perform(save_parameters(ParameterSet.of("tuned", params)))
    parameter_choices(store)                            # the presets' defaults, then the saved sets

A query is kept as its JSON Lines object (files.query_to_json), read back with
files.query_from_json: one format for files and stores.
"""
from __future__ import annotations

import json
import os

from ..edits.judged import DeleteJudged, DeleteJudgedSet, DeleteParameterSet, SaveJudged, SaveParameterSet
from ..retrieval.presets import ParameterSet, parameter_sets
from ..store.judged import UNCHECKED, JudgedRow, SavedParameters
from .files import query_from_json, query_to_json, read_jsonl, read_trec
from .model import InvalidJudgment, JudgedQuery, JudgedSet


class StoredSetError(ValueError):
    """A judged set or parameter set kept in a store cannot be read; the message names it."""


def to_row(q: JudgedQuery) -> JudgedRow:
    """The store's row of a judged query (with the memories it names, which the store checks)."""
    return JudgedRow(q.id, json.dumps(query_to_json(q), ensure_ascii=False), q.judged_by, q.judged_at,
                     memory_ids=q.memory_ids())


def from_row(row: JudgedRow, set_name: str = "") -> JudgedQuery:
    try:
        return query_from_json(json.loads(row.query), default_id=row.query_id)
    except (ValueError, InvalidJudgment) as e:
        raise StoredSetError(f"judged set {set_name!r}: the query {row.query_id!r} kept in the store cannot be read "
                             f"({e})") from None


def judged_set_names(store) -> list[str]:
    return [name for name, _n in store.judged_sets()]


def read_set(store, name: str) -> JudgedSet:
    """The judged set `name` kept with `store` (KeyError when there is none)."""
    rows = store.judged_queries(name)
    if not rows:
        known = judged_set_names(store)
        raise KeyError(f"{store.path} keeps no judged set {name!r}"
                       + (f"; it keeps: {', '.join(map(repr, known))}" if known else "; it keeps none"))
    return JudgedSet(name, tuple(from_row(r, name) for r in rows))


def save_set(judged: JudgedSet, name: str | None = None, *, note: str | None = None) -> SaveJudged:
    """The step that saves every query of `judged` under `name` (its own name by default),
    replacing queries of the same ids."""
    return SaveJudged(name or judged.name, [to_row(q) for q in judged], note=note)


def save_query(set_name: str, q: JudgedQuery, *, shown: str | None | object = UNCHECKED,
               note: str | None = None) -> SaveJudged:
    """The step that saves one query (the window's "save to set"); `shown`: its JSON as last
    read from the store (None: new), to refuse overwriting a change made elsewhere."""
    return SaveJudged(set_name, [to_row(q)], shown=None if shown is UNCHECKED else {q.id: shown}, note=note)


def delete_queries(set_name: str, query_ids, *, note: str | None = None) -> DeleteJudged:
    return DeleteJudged(set_name, query_ids, note=note)


def delete_set(set_name: str, *, note: str | None = None) -> DeleteJudgedSet:
    return DeleteJudgedSet(set_name, note=note)


# ------------------------------------------------------------------ files checked against a store
def known_ids(store, ids) -> set[str]:
    """Those of `ids` that name a memory of the store."""
    ids = sorted(set(ids))
    return {r["id"] for k in range(0, len(ids), 5000) for r in store.get_many(ids[k:k + 5000], fields=("kind",))}


def _named(path: str, trec: bool) -> set[str]:
    """Every memory id a judged file names, read leniently (its problems are read_jsonl's and
    read_trec's to report): what to ask the store about."""
    out: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if trec:
                    fields = line.split()
                    out.update(fields[2:3] if len(fields) == 4 else ())
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    rel, like = obj.get("relevant"), obj.get("like")
                    out.update(str(m) for m in (rel if isinstance(rel, (dict, list)) else ()) if isinstance(m, str))
                    out.update([like] if isinstance(like, str) else [])
    except OSError:
        pass   # the reader says what is wrong with the file
    return out


def read_file_for(store, path=None, *, qrels=None, topics=None, name: str | None = None) -> JudgedSet:
    """The judged set in a JSON Lines file (`path`) or a TREC qrels + topics pair, its memory ids
    checked against `store`: every problem of the file(s) with its line in one JudgedFileError
    (nothing read), or the set (named `name`, else after the file)."""
    if qrels or topics:
        if not (qrels and topics):
            raise ValueError("a TREC judged set is two files: the qrels and the topics")
        return read_trec(qrels, topics, name=name, known_ids=known_ids(store, _named(os.fspath(qrels), trec=True)))
    return read_jsonl(path, name=name, known_ids=known_ids(store, _named(os.fspath(path), trec=False)))


# ------------------------------------------------------------------ parameter sets
def to_saved(ps: ParameterSet) -> SavedParameters:
    return SavedParameters(ps.name, ps.preset, json.dumps(dict(ps.values), sort_keys=True), ps.description)


def from_saved(saved: SavedParameters) -> ParameterSet:
    try:
        values = json.loads(saved.values)
        return ParameterSet.from_dict({"name": saved.name, "preset": saved.preset, "values": values,
                                       "description": saved.description})
    except ValueError as e:
        raise StoredSetError(f"the parameter set {saved.name!r} kept in the store cannot be read ({e})") from None


def saved_parameter_sets(store) -> list[ParameterSet]:
    """The parameter sets saved with `store`, by name."""
    return [from_saved(s) for s in store.parameter_sets()]


def parameter_choices(store) -> list[ParameterSet]:
    """What a user chooses from: every registered preset's defaults, then the sets saved with
    `store` (retrieval.presets.parameter_sets)."""
    return parameter_sets(saved_parameter_sets(store))


def save_parameters(ps: ParameterSet, *, note: str | None = None) -> SaveParameterSet:
    """The step that saves `ps` with the store (replacing a set of its name)."""
    ps.params()   # its preset is registered and its values are valid: ValueError now, not at use
    return SaveParameterSet(to_saved(ps), note=note)


def delete_parameters(name: str, *, note: str | None = None) -> DeleteParameterSet:
    return DeleteParameterSet(name, note=note)


__all__ = ["StoredSetError", "delete_parameters", "delete_queries", "delete_set", "from_row", "from_saved",
           "judged_set_names", "known_ids", "parameter_choices", "read_file_for", "read_set", "save_parameters", "save_query", "save_set",
           "saved_parameter_sets", "to_row", "to_saved"]
