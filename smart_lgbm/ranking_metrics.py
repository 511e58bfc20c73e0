"""NDCG@k exactly as LightGBM's ``ndcg`` metric computes it.

LightGBM semantics reproduced (``src/metric/rank_metric.hpp``, ``dcg_calculator.cpp``):

* documents are ranked by score descending with a *stable* sort, so tied scores keep
  their input order (a model that ties a relevant and an irrelevant document gets
  credit according to row order, not an average over orderings);
* DCG@k sums ``label_gain[label] / log2(2 + position)`` over the top ``min(k, size)``;
  the ideal DCG@k takes the labels greedily from the highest;
* a query whose ideal DCG at the smallest ``k`` is 0 (no document with positive gain)
  counts as NDCG = 1 at every ``k``;
* with instance weights, each query is weighted by the float32 mean of its documents'
  weights and the total is divided by the sum of query weights; LightGBM adds the 1.0
  of a query without relevant documents *unweighted*, and so does this function.

``ks`` may come in any order (LightGBM sorts ``eval_at``; results here follow ``ks``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from .losses._lambdarank_kernels import stable_sort_desc, discount_table, max_dcg_at
from .losses.lambdarank import check_group, check_label_gain, check_ranking_labels


@njit(parallel=True, cache=True)
def _ndcg_per_query(score, labels, boundaries, gains, discount, ks):
    """Per query and k: NDCG, or -1.0 marking a query without relevant documents."""
    nq = boundaries.shape[0] - 1
    nk = ks.shape[0]
    out = np.empty((nq, nk), dtype=np.float64)
    k_min = ks.min()
    for q in prange(nq):
        start = boundaries[q]
        cnt = boundaries[q + 1] - start
        lab = labels[start:start + cnt]
        if not max_dcg_at(k_min, lab, gains, discount) > 0.0:
            out[q, :] = -1.0
            continue
        keys = score[start:start + cnt].copy()
        order = np.arange(cnt)
        # Same stable descending sort as the LambdaRank kernel (ties keep row order).
        stable_sort_desc(keys, order, cnt, np.empty(cnt), np.empty(cnt, dtype=np.int64))
        for t in range(nk):
            k = min(ks[t], cnt)
            dcg = 0.0
            for j in range(k):
                dcg += gains[lab[order[j]]] * discount[j]
            ideal = max_dcg_at(ks[t], lab, gains, discount)
            # LightGBM stores -1 as the inverse of a non-positive ideal DCG.
            out[q, t] = dcg * (1.0 / ideal if ideal > 0.0 else -1.0)
    return out


@njit(cache=True)
def _query_weights(w32, boundaries):
    """LightGBM's query weights: float32 running sum of the weights over the query size."""
    nq = boundaries.shape[0] - 1
    out = np.empty(nq, dtype=np.float32)
    for q in range(nq):
        acc = np.float32(0.0)
        for i in range(boundaries[q], boundaries[q + 1]):
            acc += w32[i]
        out[q] = acc / np.float32(boundaries[q + 1] - boundaries[q])
    return out


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
    score = np.ascontiguousarray(raw, dtype=np.float64)
    if score.ndim != 1:
        raise ValueError(f"raw must be 1-D, got shape {score.shape}")
    if np.isnan(score).any():
        raise ValueError("raw contains NaN scores")
    n = score.shape[0]
    if np.shape(label) != (n,):
        raise ValueError(f"label must have shape ({n},), got {np.shape(label)}")
    gains = check_label_gain(label_gain)
    labels = check_ranking_labels(label, gains.shape[0])
    sizes = check_group(group, n)
    k_arr = np.atleast_1d(np.asarray(ks))
    if k_arr.ndim != 1 or k_arr.shape[0] == 0 or k_arr.dtype.kind not in "iu" or np.any(k_arr < 1):
        raise ValueError(f"ks must be positive integers, got {ks!r}")
    k_arr = k_arr.astype(np.int64)
    boundaries = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    discount = discount_table(max(int(sizes.max()), int(k_arr.max()), 10_000))
    per_query = _ndcg_per_query(score, labels, boundaries, gains, discount, k_arr)
    no_relevant = per_query[:, 0] < 0.0
    if weight is None:
        total = np.where(no_relevant[:, None], 1.0, per_query).sum(axis=0)
        return (total / sizes.shape[0]).tolist()
    if np.shape(weight) != (n,):
        raise ValueError(f"weight must have shape ({n},), got {np.shape(weight)}")
    qw = _query_weights(np.ascontiguousarray(weight, dtype=np.float32), boundaries).astype(np.float64)
    total = np.where(no_relevant[:, None], 1.0, per_query * qw[:, None]).sum(axis=0)
    return (total / qw.sum()).tolist()
