"""Numba kernels behind :mod:`smart_lgbm.metrics.ranking` (NDCG@k and MAP@k per query).

Private module: the functions trust their inputs (validated by ``ranking.py``).
Each query is independent, so queries run in parallel; the per-query results come back
as an array and the caller sums them in a fixed order, so results do not depend on the
number of threads.  Documents are ranked with the same stable descending sort as the
LambdaRank kernel (``std::stable_sort`` with ``score[a] > score[b]``: ties keep row order).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..losses._lambdarank_kernels import max_dcg_at, stable_sort_desc


@njit(cache=True)
def _ranked(score, start, cnt):
    """Positions ``0..cnt-1`` of one query, ordered by score descending (stable)."""
    keys = score[start:start + cnt].copy()
    order = np.arange(cnt)
    stable_sort_desc(keys, order, cnt, np.empty(cnt), np.empty(cnt, dtype=np.int64))
    return order


@njit(parallel=True, cache=True)
def ndcg_per_query(score, labels, boundaries, gains, discount, ks):
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
        order = _ranked(score, start, cnt)
        for t in range(nk):
            k = min(ks[t], cnt)
            dcg = 0.0
            for j in range(k):
                dcg += gains[lab[order[j]]] * discount[j]
            ideal = max_dcg_at(ks[t], lab, gains, discount)
            # LightGBM stores -1 as the inverse of a non-positive ideal DCG.
            out[q, t] = dcg * (1.0 / ideal if ideal > 0.0 else -1.0)
    return out


@njit(parallel=True, cache=True)
def map_per_query(score, relevant, boundaries, ks):
    """Per query and k (``ks`` ascending): average precision at k, as ``MapMetric::CalMapAtK``.

    A query without relevant documents scores 1.  The precision at rank ``j`` divides by
    ``j + 1.0f``, a float32 in LightGBM, which is exact for every position below 2**24.
    """
    nq = boundaries.shape[0] - 1
    nk = ks.shape[0]
    out = np.empty((nq, nk), dtype=np.float64)
    for q in prange(nq):
        start = boundaries[q]
        cnt = boundaries[q + 1] - start
        npos = 0
        for i in range(start, start + cnt):
            if relevant[i]:
                npos += 1
        order = _ranked(score, start, cnt)
        num_hit = 0
        sum_ap = 0.0
        left = 0
        for t in range(nk):
            k = min(ks[t], cnt)
            for j in range(left, k):
                if relevant[start + order[j]]:
                    num_hit += 1
                    sum_ap += num_hit / (j + 1.0)
            out[q, t] = sum_ap / min(npos, k) if npos > 0 else 1.0
            left = max(left, k)
    return out


@njit(cache=True)
def query_weights(w32, boundaries):
    """LightGBM's query weights: float32 running sum of the weights over the query size."""
    nq = boundaries.shape[0] - 1
    out = np.empty(nq, dtype=np.float32)
    for q in range(nq):
        acc = np.float32(0.0)
        for i in range(boundaries[q], boundaries[q + 1]):
            acc += w32[i]
        out[q] = acc / np.float32(boundaries[q + 1] - boundaries[q])
    return out
