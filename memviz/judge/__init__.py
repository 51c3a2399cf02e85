"""Judged retrieval: queries with graded relevant memories, their files, the measures of a
ranking against them (trec_eval's, through pytrec_eval), per-query comparisons, and a
cross-validated fit of a preset's parameters. Qt-free. Without the engine (rankings and a
metric function come in, numbers go out):

  model.py    JudgedQuery, JudgedSet (validated on construction)
  successors.py  a corrected memory's grades moved to what replaced it (Successors.follow)
  files.py    JSON Lines and TREC qrels + topics, read all or nothing (JudgedFileError)
  metrics.py  evaluate / Evaluator: ndcg@K, recall@K, p@K, mrr
  compare.py  wins and losses against a baseline; top-k entries and exits; near misses
  folds.py    deterministic k-fold splits, optionally by group
  fit.py      grid + coordinate search under k-fold cross-validation, with its recommendation

Over the engine and the store (imported by name, not from here: they load the engine):

  evaluator.py  JudgedEvaluator: a judged set ranked by a store's engine, re-ranked fast for any weights
  prune.py      which candidates can reach a top d for any weights; kernels.py, its numba passes
  tune.py       fit_preset: a preset's weights and knobs fitted over the engine
  stored.py     judged sets and parameter sets kept with a store, and the steps that change them
"""
from .compare import Move, NearMiss, QueryDelta, TopKChange, WinsLosses, held_back_by, near_misses, top_k_changes, wins_losses
from .files import JudgedFileError, Problem, query_from_json, query_to_json, read_jsonl, read_trec, write_jsonl, write_trec
from .fit import LOG, LOG_COMPLEMENT, FitReport, FoldResult, Knob, Space, fit
from .folds import Fold, kfold
from .metrics import DEFAULT_MEASURES, Evaluation, Evaluator, Measure, evaluate, measure
from .model import GRADES, HIGHLY_RELEVANT, NOT_RELEVANT, RELEVANT, InvalidJudgment, JudgedQuery, JudgedSet

__all__ = [
    "GRADES", "NOT_RELEVANT", "RELEVANT", "HIGHLY_RELEVANT", "InvalidJudgment", "JudgedQuery", "JudgedSet",
    "JudgedFileError", "Problem", "query_from_json", "query_to_json", "read_jsonl", "read_trec", "write_jsonl", "write_trec",
    "DEFAULT_MEASURES", "Evaluation", "Evaluator", "Measure", "evaluate", "measure",
    "Move", "NearMiss", "QueryDelta", "TopKChange", "WinsLosses", "held_back_by", "near_misses", "top_k_changes",
    "wins_losses",
    "Fold", "kfold", "LOG", "LOG_COMPLEMENT", "FitReport", "FoldResult", "Knob", "Space", "fit",
]
