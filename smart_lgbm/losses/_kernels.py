"""Numba kernels behind the built-in losses' ``compute_gradients`` and ``compute_loss``.

Private module: every function trusts its inputs (shapes, dtypes and label values are
checked by the loss classes) and runs without bounds checks.

Gradients are LightGBM v4.6.0's own expressions (``src/objective/binary_objective.hpp``,
``regression_objective.hpp``, ``multiclass_objective.hpp``, ``xentropy_objective.hpp``): double arithmetic in the same
association order, ``exp`` from the C math library (numba lowers ``math.exp`` to libm, the
function ``std::exp`` calls), one float32 rounding at the store, exactly where LightGBM
casts to ``score_t``.  Weights are LightGBM's float32 values, passed as float64 (exact).
Every row is independent, so the results do not depend on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._numba.kernel_constants import BLOCK
from .._numba.row_kernel import row_kernel
from ._exp_kernels import exp_fast, in_fast_range

#: Rows per parallel task in the multiclass kernels (one scratch row per task).
_ROW_BLOCK = 4096
_LOG2 = math.log(2.0)


@njit(cache=True, inline="always")
def binary_row(sign, sigmoid, raw):
    """One row's unweighted ``(g, h)`` in double (``sign`` = +-1.0 for label 1/0): the
    expressions of ``BinaryLogloss::GetGradients`` (``is_unbalance`` and
    ``scale_pos_weight`` off): :func:`binary_gradients` and the run's gradient sweep compute
    every row's binary gradients with it."""
    response = (-sign * sigmoid) / (1.0 + math.exp(sign * sigmoid * raw))
    abs_response = abs(response)
    return response, abs_response * (sigmoid - abs_response)


@njit(cache=True, inline="always")
def binary_row_fast(sign, sigmoid, raw):
    """:func:`binary_row` with :func:`smart_lgbm.losses._exp_kernels.exp_fast` for ``exp``, and
    whether its argument is in the fast range (only then are ``g, h`` :func:`binary_row`'s
    bits; the caller recomputes the other rows with it).  No call: a loop of it vectorises."""
    x = sign * sigmoid * raw
    response = (-sign * sigmoid) / (1.0 + exp_fast(x))
    abs_response = abs(response)
    return response, abs_response * (sigmoid - abs_response), in_fast_range(x)


@njit(cache=True, inline="always")
def binary_store(j, sign, sigmoid, raw, weight, weighted, grad, hess):
    """Row ``j``'s binary ``g, h`` (:func:`binary_row`, ``sign`` +-1 as int8), times its weight
    in double, stored as float32 where LightGBM casts to ``score_t``."""
    g, h = binary_row(1.0 if sign[j] > 0 else -1.0, sigmoid, raw[j])
    if weighted:
        grad[j] = g * weight[j]
        hess[j] = h * weight[j]
    else:
        grad[j] = g
        hess[j] = h


@njit(cache=True, inline="always")
def binary_rows_fast(m, raw, sign, weight, weighted, sigmoid, grad, hess):
    """:func:`binary_store` of the ``m`` rows of a block (views indexed from 0) with the
    vectorising ``exp`` (:func:`binary_row_fast`); rows whose ``exp`` argument is outside its
    fast range (none, usually) are then computed again with ``math.exp``: the same bits for
    every row."""
    slow = 0
    for j in range(m):
        g, h, fast = binary_row_fast(1.0 if sign[j] > 0 else -1.0, sigmoid, raw[j])
        slow += np.int64(not fast)
        if weighted:
            grad[j] = g * weight[j]
            hess[j] = h * weight[j]
        else:
            grad[j] = g
            hess[j] = h
    if slow:
        for j in range(m):
            if not in_fast_range((1.0 if sign[j] > 0 else -1.0) * sigmoid * raw[j]):
                binary_store(j, sign, sigmoid, raw, weight, weighted, grad, hess)


@njit(cache=True, inline="always")
def binary_block(b, n, raw, sign, weight, weighted, sigmoid, grad, hess, fast_exp):
    """The binary ``g, h`` of block ``b`` (``BLOCK`` rows), on views of its rows indexed from 0
    (indexed from the block's first row the loop ran slower); ``fast_exp``: the vectorising
    ``exp`` (:func:`binary_rows_fast`), else ``math.exp`` row by row."""
    lo = b * BLOCK
    hi = min(n, lo + BLOCK)
    r = raw[lo:hi]
    sg = sign[lo:hi]
    w = weight[lo:hi] if weighted else weight
    gg = grad[lo:hi]
    hh = hess[lo:hi]
    if fast_exp:
        binary_rows_fast(hi - lo, r, sg, w, weighted, sigmoid, gg, hh)
    else:
        for j in range(hi - lo):
            binary_store(j, sg, sigmoid, r, w, weighted, gg, hh)


@row_kernel(rows=0, error_model="numpy")
def binary_gradients(n, raw, sign, weight, sigmoid, grad, hess, threads, fast_exp):
    """LightGBM's ``BinaryLogloss::GetGradients`` of every row into ``grad``, ``hess`` (1-D float32).

    ``sign`` +-1 per row as int8 (label > 0 is positive), ``weight`` float64 or empty,
    ``threads`` numba's number of threads (passed in: read inside, it keeps numba from
    caching the kernel), ``fast_exp``: :func:`~._exp_kernels.libm_is_reproduced`.  Each of
    ``threads`` runs takes one contiguous run of ``BLOCK``-row blocks, as the run's gradient
    sweep does (:mod:`smart_lgbm._engine._sweep_kernels`, which computes the same rows with
    :func:`binary_block`).  Every row depends on that row only: the same bits at any number
    of threads.  numba's ``numpy`` error model: its division check kept the row loop from
    vectorising (the divisions are by ``1 + exp``, never 0).
    """
    weighted = weight.shape[0] > 0
    nb = (n + BLOCK - 1) // BLOCK
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        for b in range(nb * t // nt, nb * (t + 1) // nt):
            binary_block(b, n, raw, sign, weight, weighted, sigmoid, grad, hess, fast_exp)


@njit(cache=True, inline="always")
def _log1p_exp(x):
    """``log(1 + exp(x))`` as numpy's ``logaddexp(0, x)`` evaluates it."""
    if x == 0.0:
        return _LOG2
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@row_kernel(rows=0, axis=0)
def binary_loss(raw, label, weight, sigmoid, out):
    """Per-row log-loss ``log(1 + exp(-sign * sigmoid * raw))`` times the weight."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        sign = 1.0 if label[i] > 0.0 else -1.0
        value = _log1p_exp(-sign * sigmoid * raw[i])
        out[i] = value * weight[i] if weighted else value


@row_kernel(rows=0, axis=0)
def binary_class_weighted_gradients(raw, label, weight, sigmoid, weight_neg, weight_pos, grad, hess):
    """``BinaryLogloss::GetGradients`` with label weights (``is_unbalance``,
    ``scale_pos_weight``): :func:`binary_row`'s response times the row's class weight, then
    times its instance weight, in LightGBM's order."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        positive = label[i] > 0.0
        g, h = binary_row(1.0 if positive else -1.0, sigmoid, raw[i])
        lw = weight_pos if positive else weight_neg
        if weighted:
            grad[i] = g * lw * weight[i]
            hess[i] = h * lw * weight[i]
        else:
            grad[i] = g * lw
            hess[i] = h * lw


@row_kernel(rows=0, axis=0)
def huber_gradients(raw, label, weight, alpha, grad, hess):
    """LightGBM's ``RegressionHuberLoss::GetGradients``: the residual inside ``alpha``, its
    sign times ``alpha`` outside (the weighted form rounds the weight to float first, as
    there: exact, LightGBM's weights are floats)."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        diff = raw[i] - label[i]
        sign = 1.0 if diff > 0.0 else (-1.0 if diff < 0.0 else 0.0)  # Common::Sign
        if weighted:
            w = weight[i]
            grad[i] = diff * w if abs(diff) <= alpha else (sign * w) * alpha
            hess[i] = w
        else:
            grad[i] = diff if abs(diff) <= alpha else sign * alpha
            hess[i] = 1.0


@row_kernel(rows=0, axis=0)
def huber_loss(raw, label, weight, alpha, out):
    """Per-row Huber loss (LightGBM's ``huber`` metric's point loss) times the weight."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        d = abs(raw[i] - label[i])
        value = 0.5 * d * d if d <= alpha else alpha * (d - 0.5 * alpha)
        out[i] = value * weight[i] if weighted else value


@row_kernel(rows=0, axis=0)
def xentropy_gradients(raw, label, weight, grad, hess):
    """LightGBM's ``CrossEntropy::GetGradients``: ``1 - label`` in float arithmetic (LightGBM's
    ``1.0f - label_[i]``), the rest in double, the cut-off at a score of -37 as there."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        y = label[i]
        if raw[i] > -37.0:
            e = math.exp(-raw[i])
            one_minus = np.float64(np.float32(1.0) - np.float32(y))
            g = (one_minus - y * e) / (1.0 + e)
            h = e / ((1.0 + e) * (1.0 + e))
        else:
            e = math.exp(raw[i])
            g = e - y
            h = e
        if weighted:
            grad[i] = g * weight[i]
            hess[i] = h * weight[i]
        else:
            grad[i] = g
            hess[i] = h


@row_kernel(rows=0, axis=0)
def xentropy_loss(raw, label, weight, out):
    """Per-row cross-entropy ``-y log p - (1 - y) log(1 - p)`` at ``p = 1 / (1 + exp(-raw))``,
    times the weight."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        y = label[i]
        value = y * _log1p_exp(-raw[i]) + (1.0 - y) * _log1p_exp(raw[i])
        out[i] = value * weight[i] if weighted else value


@njit(cache=True, inline="always")
def l2_row(raw, label, weight, weighted, i, grad, hess):
    """Row ``i`` of ``RegressionL2loss::GetGradients`` into ``grad[i]``, ``hess[i]`` (shared
    with the fused pass).

    With weights LightGBM rounds the residual to float32 *before* multiplying by the
    float32 weight in float arithmetic; numba keeps float32 * float32 in float32.
    """
    if weighted:
        w = np.float32(weight[i])
        grad[i] = np.float32(raw - label) * w
        hess[i] = w
    else:
        grad[i] = raw - label
        hess[i] = 1.0


@row_kernel(rows=0, axis=0)
def l2_gradients(raw, label, weight, grad, hess):
    """LightGBM's ``RegressionL2loss::GetGradients`` (see :func:`l2_row`)."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        l2_row(raw[i], label[i], weight, weighted, i, grad, hess)


@row_kernel(rows=0, axis=0)
def l2_loss(raw, label, weight, out):
    """Per-row ``0.5 * (raw - label)**2`` times the weight."""
    n = raw.shape[0]
    weighted = weight.shape[0] > 0
    for i in prange(n):
        d = raw[i] - label[i]
        value = 0.5 * (d * d)
        out[i] = value * weight[i] if weighted else value


@njit(cache=True, inline="always")
def _row_max(raw, i):
    wmax = raw[i, 0]
    for k in range(1, raw.shape[1]):
        wmax = max(raw[i, k], wmax)
    return wmax


@njit(cache=True, inline="always")
def softmax_row(raw, i, y, weight, weighted, factor, e, grad, hess):
    """Row ``i`` of ``MulticlassSoftmax::GetGradients`` into ``grad[i, :]``, ``hess[i, :]``
    (``y`` its class, ``e`` a scratch row of K doubles; shared with the fused pass).

    ``Common::Softmax``: ``exp(x - max)`` per class, summed class by class, then divided.
    """
    num_class = raw.shape[1]
    wmax = _row_max(raw, i)
    wsum = 0.0
    for k in range(num_class):
        e[k] = math.exp(raw[i, k] - wmax)
        wsum += e[k]
    for k in range(num_class):
        p = e[k] / wsum
        g = p - 1.0 if k == y else p
        h = factor * p * (1.0 - p)
        if weighted:
            grad[i, k] = g * weight[i]
            hess[i, k] = h * weight[i]
        else:
            grad[i, k] = g
            hess[i, k] = h


@row_kernel(rows=0, axis=0)
def softmax_gradients(raw, label, weight, factor, grad, hess):
    """LightGBM's ``MulticlassSoftmax::GetGradients`` on row-major ``(n, K)`` arrays
    (see :func:`softmax_row`)."""
    n, num_class = raw.shape
    weighted = weight.shape[0] > 0
    n_blocks = (n + _ROW_BLOCK - 1) // _ROW_BLOCK
    for b in prange(n_blocks):
        e = np.empty(num_class)  # one row's exponentials, reused for the block's rows
        for i in range(b * _ROW_BLOCK, min(n, (b + 1) * _ROW_BLOCK)):
            softmax_row(raw, i, int(label[i]), weight, weighted, factor, e, grad, hess)


@row_kernel(rows=0, axis=0)
def softmax_loss(raw, label, weight, out):
    """Per-row ``-log softmax(raw)[label]`` times the weight (scipy's ``log_softmax`` order)."""
    n, num_class = raw.shape
    weighted = weight.shape[0] > 0
    for i in prange(n):
        wmax = _row_max(raw, i)
        wsum = 0.0
        for k in range(num_class):
            wsum += math.exp(raw[i, k] - wmax)
        value = -((raw[i, int(label[i])] - wmax) - math.log(wsum))
        out[i] = value * weight[i] if weighted else value
