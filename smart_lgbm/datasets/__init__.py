"""Data set readers and generators: bundled real data, ranking files, synthetic data."""

from .bundled import load_a9a, load_digits_split, load_higgs_sample
from .ranking import (
    group_from_qid,
    load_lightgbm_ranking,
    load_rank_sample,
    load_svmlight_ranking,
    read_query_file,
)
from .synthetic import make_dense_binary, make_dense_multiclass, make_dense_regression
from .synthetic_sparse_ranking import make_yahoo_like, make_yahoo_like_split
from .synthetic_ranking import make_mslr_like, make_mslr_like_split, train_test_split_by_query

__all__ = [
    "load_a9a",
    "load_digits_split",
    "load_higgs_sample",
    "make_dense_binary",
    "make_dense_multiclass",
    "make_dense_regression",
    "group_from_qid",
    "load_lightgbm_ranking",
    "load_rank_sample",
    "load_svmlight_ranking",
    "make_mslr_like",
    "make_mslr_like_split",
    "make_yahoo_like",
    "make_yahoo_like_split",
    "read_query_file",
    "train_test_split_by_query",
]
