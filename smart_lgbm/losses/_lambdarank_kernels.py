"""Numba kernels behind :class:`smart_lgbm.losses.lambdarank.LambdaRank`.

Private module: every function here trusts its inputs (validated by ``lambdarank.py``)
and runs without bounds checks, so a bad index would corrupt memory instead of raising.

The gradient kernel reproduces LightGBM 4.x ``LambdarankNDCG::GetGradientsForOneQuery``
bit for bit, so that "Full" boosting through this plugin fits the very trees stock
LightGBM fits. Doing so pins several details that look arbitrary but matter for exact
equality:

* documents are ordered by score, descending, with a *stable* sort (ties keep their
  input order), exactly like ``std::stable_sort`` with ``score[a] > score[b]``;
* the pair sigmoid comes from LightGBM's lookup table (2**20 bins on
  ``[-25/sigmoid, 25/sigmoid)``), not from ``exp``: see :func:`sigmoid_table`;
* per-document lambdas and hessians are accumulated in float32 (LightGBM's ``score_t``),
  pair by pair in LightGBM's pair order, while the per-pair terms and the query's
  ``sum_lambdas`` are double;
* the score-distance regulariser adds ``0.01f`` (the float32 nearest 0.01, widened);
* floating-point expressions keep LightGBM's association order (``p *= -s * d`` is
  ``p * ((-s) * d)``); numba compiles without fast-math, so LLVM keeps that order.

Instead of LightGBM's indirect ``label[sorted_idx[i]]`` accesses, each query's scores,
labels, gains and discounts are gathered once into sorted, contiguous scratch arrays and
the per-document sums are kept in sorted position; every document still receives its
float32 additions in the same order, so the sums are identical, and the inner loop walks
memory linearly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

#: Number of bins of LightGBM's sigmoid lookup table (``_sigmoid_bins``).
SIGMOID_BINS = 1024 * 1024
#: LightGBM's ``0.01f`` in the score-distance regulariser, as the double it widens to.
_NORM_EPS = float(np.float32(0.01))
_NEG_INF = -np.inf


@njit(cache=True)
def sigmoid_table(sigmoid: float, n_bins: int) -> tuple[np.ndarray, float, float, float]:
    """LightGBM's sigmoid lookup table for ``1 / (1 + exp(sigmoid * x))``.

    Returns ``(table, min_input, max_input, idx_factor)``. Entry ``i`` is evaluated at
    ``x_i = i / idx_factor + min_input`` with ``exp`` from the C math library (numba
    lowers ``math.exp`` to libm, the same ``exp`` LightGBM's ``std::exp`` calls), so the
    table equals LightGBM's entry for entry.
    """
    min_input = -50.0 / sigmoid / 2.0
    max_input = -min_input
    idx_factor = n_bins / (max_input - min_input)
    table = np.empty(n_bins, dtype=np.float64)
    for i in range(n_bins):
        x = i / idx_factor + min_input
        table[i] = 1.0 / (1.0 + math.exp(x * sigmoid))
    return table, min_input, max_input, idx_factor


@njit(cache=True, inline="always")
def _sigmoid_bin(x, min_input, max_input, idx_factor, last_bin):
    """Index of LightGBM's sigmoid table entry for ``x``, branch-free (vectorisable).

    LightGBM reads entry 0 for ``x <= min_input``, the last entry for ``x >= max_input``
    and ``int((x - min_input) * idx_factor)`` otherwise (clamped here to the last entry,
    which LightGBM would overrun if rounding ever reached ``n_bins``).  Clamping the
    float before the conversion keeps every lane in range, so the loop needs no branch;
    a NaN ``x`` (two ``+inf`` scores) reads entry 0 instead of LightGBM's undefined read.
    """
    v = (x - min_input) * idx_factor
    v = v if v > 0.0 else 0.0
    v = v if v < last_bin else float(last_bin)
    k = np.int32(v)
    k = np.int32(0) if x <= min_input else k
    return np.int32(last_bin) if x >= max_input else k


@njit(cache=True)
def discount_table(n: int) -> np.ndarray:
    """``1 / log2(2 + i)`` for positions ``i < n`` (LightGBM's ``DCGCalculator::discount_``)."""
    out = np.empty(max(n, 1), dtype=np.float64)
    for i in range(out.shape[0]):
        out[i] = 1.0 / math.log2(2.0 + i)
    return out


@njit(cache=True)
def max_dcg_at(k: int, labels: np.ndarray, gains: np.ndarray, discount: np.ndarray) -> float:
    """Ideal DCG of the top ``k`` documents of one query (``DCGCalculator::CalMaxDCGAtK``).

    Greedy over label counts from the top label down; like LightGBM, once only label 0 is
    left it keeps adding ``gains[0]`` (which is 0 for the default gains).
    """
    counts = np.zeros(gains.shape[0], dtype=np.int64)
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1
    top = gains.shape[0] - 1
    k = min(k, labels.shape[0])
    ret = 0.0
    for j in range(k):
        while top > 0 and counts[top] <= 0:
            top -= 1
        ret += discount[j] * gains[top]
        counts[top] -= 1
    return ret


@njit(parallel=True, cache=True)
def inverse_max_dcgs(labels, boundaries, gains, discount, k):
    """Per query ``1 / maxDCG@k`` (or ``0`` when maxDCG is 0), as LambdarankNDCG::Init."""
    nq = boundaries.shape[0] - 1
    out = np.zeros(nq, dtype=np.float64)
    for q in prange(nq):
        m = max_dcg_at(k, labels[boundaries[q]:boundaries[q + 1]], gains, discount)
        if m > 0.0:
            out[q] = 1.0 / m
    return out


_INSERTION_RUN = 16


@njit(cache=True)
def stable_sort_desc(key, idx, n, key_buf, idx_buf):
    """Sort ``key[:n]`` descending, carrying ``idx``, ties kept in input order (stable).

    Equivalent to ``std::stable_sort`` with ``key[a] > key[b]``: insertion-sorted runs of
    16, then bottom-up merges that take the left element unless the right one is strictly
    greater. Keys travel with the indices so comparisons read contiguous memory; all
    buffers are preallocated (numba's ``argsort`` allocates and is ~3x slower here).
    """
    for lo in range(0, n, _INSERTION_RUN):
        hi = min(lo + _INSERTION_RUN, n)
        for i in range(lo + 1, hi):
            k = key[i]
            v = idx[i]
            j = i - 1
            while j >= lo and key[j] < k:
                key[j + 1] = key[j]
                idx[j + 1] = idx[j]
                j -= 1
            key[j + 1] = k
            idx[j + 1] = v
    width = _INSERTION_RUN
    in_buf = False  # whether the current sorted runs live in the *_buf arrays
    while width < n:
        src_k, src_i, dst_k, dst_i = (key_buf, idx_buf, key, idx) if in_buf else (key, idx, key_buf, idx_buf)
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a = lo
            b = mid
            o = lo
            while a < mid and b < hi:
                # Branch-free select: random scores make this comparison unpredictable.
                ka = src_k[a]
                kb = src_k[b]
                right = kb > ka
                dst_k[o] = kb if right else ka
                dst_i[o] = src_i[b] if right else src_i[a]
                b += right
                a += not right
                o += 1
            while a < mid:
                dst_k[o] = src_k[a]
                dst_i[o] = src_i[a]
                a += 1
                o += 1
            while b < hi:
                dst_k[o] = src_k[b]
                dst_i[o] = src_i[b]
                b += 1
                o += 1
        in_buf = not in_buf
        width *= 2
    if in_buf:
        for i in range(n):
            key[i] = key_buf[i]
            idx[i] = idx_buf[i]


@njit(cache=True)
def _gather_sorted(start, cnt, score, labels, gains, order, s, lab, gain, key_buf, idx_buf):
    """Stable descending sort of one query; fill the sorted scratch arrays.

    Ties keep input order, matching LightGBM's ``std::stable_sort(..., score[a] > score[b])``.
    """
    for k in range(cnt):
        s[k] = score[start + k]
        order[k] = k
    stable_sort_desc(s, order, cnt, key_buf, idx_buf)
    for k in range(cnt):
        o = order[k]
        lab[k] = labels[start + o]
        gain[k] = gains[labels[start + o]]


@njit(cache=True)
def _repair_sorted(start, cnt, score, labels, gains, prev, order, s, lab, gain):
    """Sort one query starting from the order of the last call; False if it gave up.

    ``prev`` holds the query's document order (local positions) from the previous call.
    Scores move little between boosting iterations, so that order is nearly sorted and an
    insertion sort repairs it in about ``cnt + inversions`` steps, against the
    ``cnt log cnt`` of a fresh sort.  Documents are compared on (score descending,
    position ascending): a strict total order, whose only sorted arrangement is the one
    the stable sort of the identity order gives (LightGBM's ``std::stable_sort`` with
    ``score[a] > score[b]``), whatever order the repair starts from -- so the result does
    not depend on where ``prev`` came from, only the time does.  When scores are not
    nearly sorted (the first call after a reset, scores from elsewhere) the repair gives
    up after about ``4 * cnt`` shifts and returns False, and the caller sorts afresh.
    """
    for k in range(cnt):
        o = prev[k]
        order[k] = o
        s[k] = score[start + o]
    budget = 4 * cnt + 32
    # The last element of the sorted prefix, in registers: most documents keep their
    # place, and this check lets them skip the shifting loop without reading memory.
    last_s = s[0]
    last_o = order[0]
    for i in range(1, cnt):
        key = s[i]
        v = order[i]
        if last_s > key or (last_s == key and last_o < v):
            last_s = key
            last_o = v
            continue
        j = i - 1
        while j >= 0 and (s[j] < key or (s[j] == key and order[j] > v)):
            s[j + 1] = s[j]
            order[j + 1] = order[j]
            j -= 1
        s[j + 1] = key
        order[j + 1] = v
        last_s = s[i]
        last_o = order[i]
        budget -= i - 1 - j
        if budget < 0:
            return False
    for k in range(cnt):
        o = order[k]
        lab[k] = labels[start + o]
        gain[k] = gains[labels[start + o]]
    return True


@njit(cache=True, error_model="numpy")
def _query_lambdas(cnt, s, lab, gain, discount, inv_max_dcg, table, min_in, max_in,
                   idx_factor, sigmoid, truncation, norm, lam, hes, lists, others, n_others,
                   next_other, listed, pair_bin, pair_ndcg, pair_lam, pair_hes, pair_sum):
    """Lambdas and hessians of one query, in sorted position (float32, LightGBM order).

    Same pairs, same arithmetic and the same per-document order of float32 additions as
    LightGBM, organised for speed:

    * for each label ``L`` met among the top positions, ``others[L]`` lists (in rank
      order) the positions whose label differs from ``L`` and whose score is not -inf,
      and ``lists[:, L]`` holds their score, gain, discount and pair sign
      (``+1`` when ``L`` is the higher label) contiguously; document ``i`` then walks
      only that list, so equal-label pairs cost nothing (about 40% of MSLR pairs);
    * each row of pairs runs in passes: the sigmoid-table bin and ``dNDCG`` of every pair
      (one branch-free loop over contiguous arrays, which LLVM vectorises), the table reads,
      the pair terms down to their float32 values (vectorised), and last the ordered sums:
      document ``i``'s float32 sums in registers, each partner's float32 sum, and the
      query's double ``sum_lambdas``, pair by pair in LightGBM's order -- the only
      sequential part;
    * ``|disc_hi - disc_lo|``, ``s_hi - s_lo`` and ``gain_hi - gain_lo`` are formed as
      ``sign * (x_i - x_j)``, bit-identical to LightGBM's ordered differences because
      IEEE subtraction is sign-symmetric and discounts decrease with rank.

    ``error_model="numpy"`` drops numba's zero-division check (which would stop the
    vectorisation): the divisors ``0.01 + |delta|`` and ``sum_lambdas`` are positive.
    """
    for k in range(cnt):
        lam[k] = np.float32(0.0)
        hes[k] = np.float32(0.0)
    best = s[0]
    worst_pos = cnt - 1
    if worst_pos > 0 and s[worst_pos] == _NEG_INF:
        worst_pos -= 1
    use_distance = norm and best != s[worst_pos]
    # -inf scores sort last: documents past n_finite are in no pair.
    n_finite = cnt
    while n_finite > 0 and s[n_finite - 1] == _NEG_INF:
        n_finite -= 1
    sig_sq = sigmoid * sigmoid
    neg_sig = -sigmoid
    last_bin = table.shape[0] - 1
    sum_lambdas = 0.0
    top = min(cnt - 1, truncation)
    for k in range(top):
        listed[lab[k]] = False
    for i in range(top):
        si = s[i]
        if si == _NEG_INF:
            continue
        li = lab[i]
        if not listed[li]:
            # Branch-free compaction (labels alternate unpredictably): every document is
            # written at the list's end, which advances only past the ones that belong.
            m = 0
            for j in range(n_finite):
                lj = lab[j]
                others[li, m] = np.uint32(j)
                lists[0, li, m] = s[j]
                lists[1, li, m] = gain[j]
                lists[2, li, m] = discount[j]
                lists[3, li, m] = 1.0 if li > lj else -1.0
                m += lj != li
            n_others[li] = np.uint64(m)
            next_other[li] = np.uint64(0)
            listed[li] = True
        pos = others[li]
        first = next_other[li]
        last = n_others[li]
        while first < last and pos[first] <= i:
            first += np.uint64(1)
        next_other[li] = first
        lo = int(first)
        n = int(last) - lo
        o_s = lists[0, li, lo:lo + n]
        o_gain = lists[1, li, lo:lo + n]
        o_disc = lists[2, li, lo:lo + n]
        o_sign = lists[3, li, lo:lo + n]
        gi = gain[i]
        di = discount[i]
        for t in range(n):
            sign = o_sign[t]
            delta = sign * (si - o_s[t])
            pair_bin[t] = _sigmoid_bin(delta, min_in, max_in, idx_factor, last_bin)
            d_ndcg = (sign * (gi - o_gain[t])) * (di - o_disc[t]) * inv_max_dcg
            pair_ndcg[t] = d_ndcg / (_NORM_EPS + abs(delta)) if use_distance else d_ndcg
        for t in range(n):
            # Bins are >= 0; as unsigned, numba skips its negative-index wraparound.
            pair_sum[t] = table[np.uint32(pair_bin[t])]
        for t in range(n):
            p = pair_sum[t]
            d_ndcg = pair_ndcg[t]
            p_hess = p * (1.0 - p)
            p_lambda = p * (neg_sig * d_ndcg)
            p_hess = p_hess * (sig_sq * d_ndcg)
            # i is the high document when sign > 0: it gains +lambda, j gets -lambda.
            pair_lam[t] = np.float32(o_sign[t]) * np.float32(p_lambda)
            pair_hes[t] = np.float32(p_hess)
            pair_sum[t] = 2.0 * p_lambda  # exact (a power of two), as LightGBM's 2 * p_lambda
        acc_lam = lam[i]
        acc_hes = hes[i]
        row = pos[lo:lo + n]
        for t in range(n):
            f_lambda = pair_lam[t]
            f_hess = pair_hes[t]
            j = row[t]
            acc_lam += f_lambda
            acc_hes += f_hess
            lam[j] -= f_lambda
            hes[j] += f_hess
            sum_lambdas -= pair_sum[t]
        lam[i] = acc_lam
        hes[i] = acc_hes
    if norm and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
        for k in range(cnt):
            lam[k] = np.float32(np.float64(lam[k]) * factor)
            hes[k] = np.float32(np.float64(hes[k]) * factor)


@njit(cache=True, inline="always")
def _sort_scratch(boundaries, q0, q1, labels):
    """Scratch for :func:`_gather_sorted`, sized for the largest query in ``q0..q1``.

    Returns ``(biggest, order, s, key_buf, idx_buf, lab, gain)``; each parallel block
    allocates it once and reuses it for all its queries.
    """
    biggest = 1
    for q in range(q0, q1):
        biggest = max(biggest, boundaries[q + 1] - boundaries[q])
    return (biggest, np.empty(biggest, dtype=np.int64), np.empty(biggest, dtype=np.float64),
            np.empty(biggest, dtype=np.float64), np.empty(biggest, dtype=np.int64),
            np.empty(biggest, dtype=labels.dtype), np.empty(biggest, dtype=np.float64))


@njit(cache=True)
def _gradient_block(q0, q1, score, labels, gains, boundaries, inv_max_dcg, discount, table,
                    min_in, max_in, idx_factor, sigmoid, truncation, norm, weight, orders,
                    repair, grad, hess):
    """Lambdas of queries ``q0..q1`` (one parallel block), scratch allocated once.

    ``orders`` (int32, one entry per document, or length 0 for none) keeps each query's
    sorted document order between calls: with ``repair`` it is the starting point of
    :func:`_repair_sorted`, and it is overwritten with this call's order.
    """
    has_weight = weight.shape[0] > 0
    keep = orders.shape[0] > 0
    n_labels = gains.shape[0]
    biggest, order, s, key_buf, idx_buf, lab, gain = _sort_scratch(boundaries, q0, q1, labels)
    lam = np.empty(biggest, dtype=np.float32)
    hes = np.empty(biggest, dtype=np.float32)
    # Unsigned positions: numba then skips negative-index wraparound on every access
    # of the pair loop.
    others = np.empty((n_labels, biggest), dtype=np.uint32)
    n_others = np.zeros(n_labels, dtype=np.uint64)
    next_other = np.zeros(n_labels, dtype=np.uint64)
    listed = np.zeros(n_labels, dtype=np.bool_)
    # Per label list: score, gain, discount and pair sign of its documents, contiguous.
    lists = np.empty((4, n_labels, biggest), dtype=np.float64)
    # One row of pairs: table bin, dNDCG, float32 lambda and hessian, table value then 2 * p_lambda.
    pair_bin = np.empty(biggest, dtype=np.int32)
    pair_ndcg = np.empty(biggest, dtype=np.float64)
    pair_lam = np.empty(biggest, dtype=np.float32)
    pair_hes = np.empty(biggest, dtype=np.float32)
    pair_sum = np.empty(biggest, dtype=np.float64)
    for q in range(q0, q1):
        start = boundaries[q]
        cnt = boundaries[q + 1] - start
        if not (repair and _repair_sorted(start, cnt, score, labels, gains, orders[start:start + cnt],
                                          order, s, lab, gain)):
            _gather_sorted(start, cnt, score, labels, gains, order, s, lab, gain, key_buf, idx_buf)
        if keep:
            for k in range(cnt):
                orders[start + k] = order[k]
        _query_lambdas(cnt, s, lab, gain, discount, inv_max_dcg[q], table, min_in,
                       max_in, idx_factor, sigmoid, truncation, norm, lam, hes, lists,
                       others, n_others, next_other, listed, pair_bin, pair_ndcg, pair_lam,
                       pair_hes, pair_sum)
        for k in range(cnt):
            row = start + order[k]
            if has_weight:
                grad[row] = lam[k] * weight[row]
                hess[row] = hes[k] * weight[row]
            else:
                grad[row] = lam[k]
                hess[row] = hes[k]


@njit(parallel=True, cache=True)
def lambdarank_gradients(score, labels, gains, boundaries, inv_max_dcg, discount, table,
                         min_in, max_in, idx_factor, sigmoid, truncation, norm, weight,
                         chunks, grad, hess):
    """Fill float32 ``grad``/``hess`` for every document (LightGBM's GetGradients).

    ``chunks`` holds query indices splitting the queries into blocks of similar cost;
    blocks run in parallel and each allocates its scratch space once. ``weight`` is a
    float32 array (length 0 for no weights); like LightGBM, weights multiply the final
    float32 lambda and hessian in float32.  Every query is sorted afresh; see
    :func:`lambdarank_gradients_kept` for the variant that repairs the last call's order.
    """
    no_orders = np.empty(0, dtype=np.int32)
    for c in prange(chunks.shape[0] - 1):
        _gradient_block(chunks[c], chunks[c + 1], score, labels, gains, boundaries, inv_max_dcg,
                        discount, table, min_in, max_in, idx_factor, sigmoid, truncation, norm,
                        weight, no_orders, False, grad, hess)


@njit(parallel=True, cache=True)
def lambdarank_gradients_kept(score, labels, gains, boundaries, inv_max_dcg, discount, table,
                              min_in, max_in, idx_factor, sigmoid, truncation, norm, weight,
                              chunks, orders, repair, grad, hess):
    """:func:`lambdarank_gradients` keeping each query's order in ``orders`` between calls.

    ``orders`` (int32, one per document) receives every query's sorted order (local
    positions); with ``repair`` the order it holds is repaired (:func:`_repair_sorted`)
    instead of sorting afresh.  Same gradients bit for bit, whatever ``orders`` holds.
    """
    for c in prange(chunks.shape[0] - 1):
        _gradient_block(chunks[c], chunks[c + 1], score, labels, gains, boundaries, inv_max_dcg,
                        discount, table, min_in, max_in, idx_factor, sigmoid, truncation, norm,
                        weight, orders, repair, grad, hess)


@njit(cache=True, inline="always")
def _softplus(x):
    # log(1 + exp(x)) without overflow for large x.
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(parallel=True, cache=True)
def lambdarank_pair_loss(score, labels, gains, boundaries, inv_max_dcg, discount, sigmoid,
                         truncation, chunks, out):
    """Per-document share of the pairwise LambdaRank loss (float64, unweighted).

    Over exactly the pairs the gradient uses (same sort, truncation, equal-label and
    ``-inf`` skips), pair (hi, lo) -- hi the higher label -- costs
    ``|dNDCG| * log(1 + exp(-sigmoid * (s_hi - s_lo)))`` with the plain
    ``|dNDCG| = |gain_hi - gain_lo| * |disc_hi - disc_lo| / maxDCG``; half goes to each
    document.
    """
    for c in prange(chunks.shape[0] - 1):
        q0 = chunks[c]
        q1 = chunks[c + 1]
        biggest, order, s, key_buf, idx_buf, lab, gain = _sort_scratch(boundaries, q0, q1, labels)
        acc = np.empty(biggest, dtype=np.float64)
        for q in range(q0, q1):
            start = boundaries[q]
            cnt = boundaries[q + 1] - start
            _gather_sorted(start, cnt, score, labels, gains, order, s, lab, gain, key_buf, idx_buf)
            inv = inv_max_dcg[q]
            for k in range(cnt):
                acc[k] = 0.0
            for i in range(min(cnt - 1, truncation)):
                if s[i] == _NEG_INF:
                    continue
                for j in range(i + 1, cnt):
                    if s[j] == _NEG_INF or lab[i] == lab[j]:
                        continue
                    if lab[i] > lab[j]:
                        hi = i
                        lo = j
                    else:
                        hi = j
                        lo = i
                    d_ndcg = abs((gain[hi] - gain[lo]) * (discount[hi] - discount[lo])) * inv
                    half = 0.5 * d_ndcg * _softplus(-sigmoid * (s[hi] - s[lo]))
                    acc[hi] += half
                    acc[lo] += half
            for k in range(cnt):
                out[start + order[k]] = acc[k]
