"""Numba kernel behind :func:`smart_lgbm.metrics.curves.auc_mu`.

Private module: the kernel trusts its inputs (validated by ``curves.py``).  Each
pair of classes is independent and writes only its own entry of the result, so pairs run
in parallel and the result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def auc_mu_pair_sums(raw, members, offsets, weight, class_weights, k_epsilon):
    """LightGBM's ``AucMuMetric`` sums ``S[i, j]`` for every pair of classes ``i < j``.

    ``members[offsets[c]:offsets[c + 1]]`` are the rows of class ``c``.  For the pair
    ``(i, j)`` each row ``a`` of either class gets the distance
    ``t1 * sum_m v[m] * raw[a, m]`` from the separating hyperplane, ``v`` the difference
    of rows ``i`` and ``j`` of ``class_weights`` and ``t1 = v[i] - v[j]`` (summed in class
    order, as LightGBM does).  Rows are ranked by distance, class ``j`` first among equal
    distances; every class-``i`` row then adds its weight times the weight of the class-``j``
    rows ranked before it, counting the class-``j`` rows within ``k_epsilon`` of the most
    recent class-``j`` distance half.
    """
    n_class = offsets.shape[0] - 1
    pairs = np.empty((n_class * (n_class - 1) // 2, 2), dtype=np.int64)
    p = 0
    for i in range(n_class):
        for j in range(i + 1, n_class):
            pairs[p, 0] = i
            pairs[p, 1] = j
            p += 1
    out = np.zeros((n_class, n_class), dtype=np.float64)
    for p in prange(pairs.shape[0]):
        i = pairs[p, 0]
        j = pairs[p, 1]
        v = class_weights[i] - class_weights[j]
        t1 = v[i] - v[j]
        size_j = offsets[j + 1] - offsets[j]
        size_i = offsets[i + 1] - offsets[i]
        rows = np.empty(size_j + size_i, dtype=np.int64)
        rows[:size_j] = members[offsets[j]:offsets[j + 1]]  # class j first: the stable sort
        rows[size_j:] = members[offsets[i]:offsets[i + 1]]  # keeps it first among equal distances
        dist = np.empty(rows.shape[0], dtype=np.float64)
        for r in range(rows.shape[0]):
            acc = 0.0
            for m in range(n_class):
                acc += v[m] * raw[rows[r], m]
            dist[r] = t1 * acc
        order = np.argsort(dist, kind="mergesort")
        s = 0.0
        num_j = 0.0
        last_j_dist = 0.0
        num_current_j = 0.0
        for r in range(order.shape[0]):
            pos = order[r]
            w = weight[rows[pos]]
            d = dist[pos]
            if pos >= size_j:  # a class-i row
                if abs(d - last_j_dist) < k_epsilon:
                    s += w * (num_j - 0.5 * num_current_j)
                else:
                    s += w * num_j
            else:
                num_j += w
                if abs(d - last_j_dist) < k_epsilon:
                    num_current_j += w
                else:
                    last_j_dist = d
                    num_current_j = w
        out[i, j] = s
    return out
