"""NDCG@k and MAP@k exactly as LightGBM's ``ndcg`` and ``map`` metrics compute them.

LightGBM semantics reproduced (``src/metric/rank_metric.hpp``, ``map_metric.hpp``,
``dcg_calculator.cpp``):

* documents are ranked by score descending with a *stable* sort, so tied scores keep
  their input order (a model that ties a relevant and an irrelevant document gets
  credit according to row order, not an average over orderings);
* NDCG: DCG@k sums ``label_gain[label] / log2(2 + position)`` over the top
  ``min(k, size)``; the ideal DCG@k takes the labels greedily from the highest; a query
  whose ideal DCG at the smallest ``k`` is 0 (no document with positive gain) counts as
  NDCG = 1 at every ``k``;
* MAP: a document is relevant when its label is above 0.5; AP@k sums the precision at
  each relevant position among the top ``min(k, size)`` and divides by
  ``min(relevant documents in the query, k)``; a query without relevant documents counts
  as 1;
* with instance weights, each query is weighted by the float32 mean of its documents'
  weights and the total is divided by the sum of query weights.  For NDCG, LightGBM adds
  the 1.0 of a query without relevant documents *unweighted*, and so does
  :func:`ndcg_at`; MAP weights every query.

``ks`` may come in any order; results follow ``ks`` (LightGBM sorts ``eval_at`` before
it names its results ``ndcg@k``/``map@k``; :class:`smart_lgbm.metrics.Evaluator` does too).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import _ranking_kernels as _k
from ..losses._ranking import check_group, check_label_gain, check_ranking_labels
from ..losses._lambdarank_kernels import discount_table


@dataclass
class _Queries:
    """Validated inputs of a ranking metric."""

    score: np.ndarray
    sizes: np.ndarray
    boundaries: np.ndarray
    ks: np.ndarray


def _queries(raw: np.ndarray, label: np.ndarray, group: np.ndarray, ks: int | Sequence[int]) -> _Queries:
    score = np.ascontiguousarray(raw, dtype=np.float64)
    if score.ndim != 1:
        raise ValueError(f"raw must be 1-D, got shape {score.shape}")
    if np.isnan(score).any():
        raise ValueError("raw contains NaN scores")
    n = score.shape[0]
    if np.shape(label) != (n,):
        raise ValueError(f"label must have shape ({n},), got {np.shape(label)}")
    sizes = check_group(group, n)
    k_arr = np.atleast_1d(np.asarray(ks))
    if k_arr.ndim != 1 or k_arr.shape[0] == 0 or k_arr.dtype.kind not in "iu" or np.any(k_arr < 1):
        raise ValueError(f"ks must be positive integers, got {ks!r}")
    boundaries = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return _Queries(score, sizes, boundaries, k_arr.astype(np.int64))


def _mean_over_queries(per_query: np.ndarray, q: _Queries, weight: np.ndarray | None,
                       unweighted: np.ndarray | None = None) -> list[float]:
    """Weighted mean over queries of ``per_query`` (queries x ks); rows flagged in
    ``unweighted`` add 1.0 regardless of their weight (LightGBM's NDCG)."""
    flag = np.zeros(per_query.shape[0], dtype=bool) if unweighted is None else unweighted
    if weight is None:
        total = np.where(flag[:, None], 1.0, per_query).sum(axis=0)
        return (total / q.sizes.shape[0]).tolist()
    n = q.score.shape[0]
    if np.shape(weight) != (n,):
        raise ValueError(f"weight must have shape ({n},), got {np.shape(weight)}")
    qw = _k.query_weights(np.ascontiguousarray(weight, dtype=np.float32), q.boundaries).astype(np.float64)
    total = np.where(flag[:, None], 1.0, per_query * qw[:, None]).sum(axis=0)
    return (total / qw.sum()).tolist()


def ndcg_at(
    raw: np.ndarray,
    label: np.ndarray,
    group: np.ndarray,
    ks: int | Sequence[int],
    label_gain: Sequence[float] | None = None,
    weight: np.ndarray | None = None,
) -> list[float]:
    """Mean NDCG@k over queries, equal to LightGBM's ``ndcg`` metric with ``eval_at=ks``.

    Parameters
    ----------
    raw : ndarray of shape (n,)
        Scores (any monotone transform gives the same result).
    label : ndarray of shape (n,)
        Non-negative integer relevance labels, each ``< len(label_gain)``.
    group : ndarray of shape (n_queries,)
        Query sizes, summing to ``n``.
    ks : int or sequence of int
        Cut-offs, each >= 1.
    label_gain : sequence of float, optional
        Gain per label; default ``2**l - 1`` (LightGBM's default).
    weight : ndarray of shape (n,), optional
        Instance weights; LightGBM turns them into per-query weights (mean over the query).

    Returns
    -------
    list of float
        NDCG@k for each ``k`` in ``ks``, in the given order.
    """
    q = _queries(raw, label, group, ks)
    gains = check_label_gain(label_gain)
    labels = check_ranking_labels(label, gains.shape[0])
    discount = discount_table(max(int(q.sizes.max()), int(q.ks.max()), 10_000))
    per_query = _k.ndcg_per_query(q.score, labels, q.boundaries, gains, discount, q.ks)
    return _mean_over_queries(per_query, q, weight, unweighted=per_query[:, 0] < 0.0)


def map_at(
    raw: np.ndarray,
    label: np.ndarray,
    group: np.ndarray,
    ks: int | Sequence[int],
    weight: np.ndarray | None = None,
) -> list[float]:
    """Mean average precision at k over queries, equal to LightGBM's ``map`` metric.

    Parameters
    ----------
    raw, group, ks, weight
        As in :func:`ndcg_at`.
    label : ndarray of shape (n,)
        Labels; a document is relevant when its label is above 0.5.

    Returns
    -------
    list of float
        MAP@k for each ``k`` in ``ks``, in the given order.
    """
    q = _queries(raw, label, group, ks)
    relevant = np.asarray(label, dtype=np.float64) > 0.5
    order = np.argsort(q.ks, kind="stable")  # the kernel walks the cut-offs in ascending order
    per_query = np.empty((q.sizes.shape[0], q.ks.shape[0]))
    per_query[:, order] = _k.map_per_query(q.score, relevant, q.boundaries, q.ks[order])
    return _mean_over_queries(per_query, q, weight)


def warmup() -> float:
    """Compile (or load from numba's on-disk cache) the ranking metric kernels; return seconds."""
    t0 = time.perf_counter()
    raw = np.array([0.1, -0.2, 0.3, 0.0, 0.0])
    label = np.array([0.0, 2.0, 1.0, 0.0, 1.0])
    group = np.array([3, 2])
    weight = np.array([1.0, 0.5, 2.0, 1.0, 1.0])
    ndcg_at(raw, label, group, [1, 3], weight=weight)
    map_at(raw, label, group, [1, 3], weight=weight)
    return time.perf_counter() - t0
