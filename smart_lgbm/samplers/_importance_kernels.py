"""Numba row functions every sampler kernel builds on: each row's importance, and the scan.

Private module: the functions trust their inputs (validated by their Python fronts) and
run without bounds checks.

Conventions shared by every sampler kernel (:mod:`._rate_solve_kernels`,
:mod:`._draw_kernels`, :mod:`._trim_kernels`, and the run's gradient sweep):

* ``g`` and ``h`` are C-contiguous ``(n, K)`` arrays of one float dtype (float32 from the
  engine, float64 from user code); ``n`` is passed explicitly, so kernels that read a
  float64 importance buffer ``buf`` instead can take empty ``(0, 1)`` arrays for them.
* ``kind`` selects the importance ``s_i`` a kernel recomputes from the row on the fly (no
  n-sized importance array is kept; the kernels receive it as its marker, so each compiles
  only its kind's code, see :func:`_score_of_kind`): ``FIRST`` ``|g_i|`` (Euclidean norm over K),
  ``SECOND`` ``sum_k h_ik``, ``MVS`` ``sqrt(|g_i|^2 + lam |h_i|^2)``, ``BUFFER``
  ``buf[i]``, ``CONST`` 1.
* ``p_i = min(1, rho * t_i)`` with ``t_i = (s_i * c1) * c2``: ``c1 * c2`` is a power of two
  that brings the largest importance into [0.5, 1), which makes the rate solve scale-free
  (exact for power-of-two scalings); with a fixed ``rho`` both factors are 1.
* Floating-point reductions run over a fixed partition of the rows (``BLOCK`` or
  ``HIST_BLOCK`` rows per block, independent of the thread count), each block summed in row
  order and the blocks combined in block order: results are bit-identical for any number
  of threads.
* Row loops that should vectorise keep their row-to-row dependences out of the loop; kernels
  over ``(n, K)`` arrays run the ``K = 1`` case as the same code under a test of ``K == 1``
  (LLVM then drops the loops over the columns, which keep a row loop from vectorising); and
  block loops index views from 0 (:func:`_block_rows`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import errors, njit, prange
from numba.extending import overload
from numba.np.numpy_support import from_dtype

from .._numba.kernel_constants import BLOCK, BUFFER, CONST, FIRST, KIND_MARKERS, SECOND
from .._numba.row_kernel import row_kernel


@njit(cache=True, inline="always")
def _squares(g, h, i):
    """``(|g_i|^2, |h_i|^2)``, squared Euclidean norms over the K columns."""
    gg = 0.0
    hh = 0.0
    for k in range(g.shape[1]):
        gv = np.float64(g[i, k])
        hv = np.float64(h[i, k])
        gg += gv * gv
        hh += hv * hv
    return gg, hh


@njit(cache=True, inline="always")
def _row_weight(h, i):
    """``sum_k h_ik`` in column order: SecondOrder's importance and weight trimming's weight."""
    acc = np.float64(h[i, 0])
    for k in range(1, h.shape[1]):
        acc += np.float64(h[i, k])
    return acc


@njit(cache=True, inline="always")
def _first(g, i):
    """``|g_i|``, the Euclidean norm over the K columns."""
    num_class = g.shape[1]
    if num_class == 1:
        return abs(np.float64(g[i, 0]))
    acc = 0.0
    for k in range(num_class):
        v = np.float64(g[i, k])
        acc += v * v
    return math.sqrt(acc)


@njit(cache=True, inline="always")
def _mvs(g, h, lam, i):
    gg, hh = _squares(g, h, i)
    return math.sqrt(gg + lam * hh)


@njit(cache=True, inline="always")
def _any_kind(kind, g, h, buf, lam, i):
    """Row ``i``'s importance of the run-time ``kind`` (every kind's code compiled)."""
    if kind == BUFFER:
        return buf[i]
    if kind == CONST:
        return 1.0
    if kind == FIRST:
        return _first(g, i)
    if kind == SECOND:
        return _row_weight(h, i)
    return _mvs(g, h, lam, i)


def _score(kind, g, h, buf, lam, i):  # pragma: no cover - compiled code calls the overload below
    """Row ``i``'s importance of kind ``kind`` (module notes), given as its marker."""
    raise NotImplementedError


# numba's SSA pass reports the inlined kind lambdas' own locals as "not in scope" when they
# are inlined into a prange loop (an internal pedantic check, NumbaIRAssumptionWarning, raised
# while compiling; the code is right: tests/test_twins.py compares both twins bit for bit).
# Muted for those names only, so that a user's first run prints no numba internals (the
# message may start with a terminal colour code: numba highlights it where colours are on).
KIND_LAMBDA_SCOPE_WARNING = r"(\x1b\[[0-9;]*m)?variable '_score_of_kind__locals___lambda"
warnings.filterwarnings("ignore", message=KIND_LAMBDA_SCOPE_WARNING, category=errors.NumbaIRAssumptionWarning)

_KIND_OF_MARKER = {from_dtype(marker.dtype): kind for kind, marker in KIND_MARKERS.items()}


@overload(_score, inline="always")
def _score_of_kind(kind, g, h, buf, lam, i):
    """Only the code of the kernel's own kind is compiled when the kind arrives as its
    marker (``kernel_constants.KIND_MARKERS``, a zero-length array whose dtype names the kind): a
    kernel compiles once per kind a run uses (one or two), a type cached and dispatched
    like any other, instead of every kind's branch.  Inlined into the row loop at numba's
    IR level (``inline="always"``): as a call per row it would keep MVS's square roots from
    vectorising.  (A run-time int kind is :func:`_any_kind`'s, which the gradient sweep
    calls directly.)"""
    kind_of = _KIND_OF_MARKER.get(getattr(kind, "dtype", None))
    if kind_of is None:
        raise errors.TypingError(f"_score needs a kind marker (kernel_constants.KIND_MARKERS), got {kind}")
    if kind_of == BUFFER:
        return lambda kind, g, h, buf, lam, i: buf[i]
    if kind_of == CONST:
        return lambda kind, g, h, buf, lam, i: 1.0
    if kind_of == FIRST:
        return lambda kind, g, h, buf, lam, i: _first(g, i)
    if kind_of == SECOND:
        return lambda kind, g, h, buf, lam, i: _row_weight(h, i)
    return lambda kind, g, h, buf, lam, i: _mvs(g, h, lam, i)


@njit(cache=True, inline="always")
def _prob(s, c1, c2, rho):
    t = (s * c1) * c2
    if t <= 0.0:
        return 0.0
    p = rho * t
    return 1.0 if p >= 1.0 else p


@njit(cache=True, inline="always")
def _columns_in_order(table):
    """Column sums of a per-block table ``(n_blocks, m)``, adding the blocks in block order:
    the fixed order that makes every reduction independent of the thread count."""
    out = np.zeros(table.shape[1], dtype=table.dtype)
    for b in range(table.shape[0]):
        for j in range(table.shape[1]):
            out[j] += table[b, j]
    return out


@njit(cache=True)
def pow2_pair(k):
    """``(c1, c2)``, both normal doubles, with ``c1 * c2 == 2**k`` for ``|k| <= 2098``."""
    if k > 1000:
        return math.ldexp(1.0, 1000), math.ldexp(1.0, k - 1000)
    if k < -1000:
        return math.ldexp(1.0, -1000), math.ldexp(1.0, k + 1000)
    return math.ldexp(1.0, k), 1.0


@njit(cache=True, inline="always")
def norm_row(g, h, i):
    """``(|g_i|, |h_i|)``, Euclidean norms over K: the terms of MVS's automatic lambda."""
    if g.shape[1] == 1:
        return abs(np.float64(g[i, 0])), abs(np.float64(h[i, 0]))
    gg, hh = _squares(g, h, i)
    return math.sqrt(gg), math.sqrt(hh)


@njit(cache=True)
def norm_totals(sums):
    """``(sum |g|, sum |h|)`` from the per-block sums ``(n_blocks, 2)``, in block order."""
    total = _columns_in_order(sums)
    return total[0], total[1]


@row_kernel(rows=0)
def norm_sums(n, g, h):
    """``(sum_i |g_i|, sum_i |h_i|)`` (Euclidean norms over K), for MVS's automatic lambda.

    Each ``BLOCK`` of rows is summed in row order (the fused pass,
    :mod:`smart_lgbm._engine._sweep_kernels`, forms the same per-block sums)."""
    nb = (n + BLOCK - 1) // BLOCK
    sums = np.zeros((nb, 2))
    for b in prange(nb):
        ga = 0.0
        ha = 0.0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            a, c = norm_row(g, h, i)
            ga += a
            ha += c
        sums[b, 0] = ga
        sums[b, 1] = ha
    return norm_totals(sums)


@njit(cache=True, inline="always")
def scan_row(s, mx, pos, bad, acc):
    """One importance ``s`` into a block's ``(largest, positives, bad, plain sum)``.

    Branch-free; adding 0.0 leaves the sum's bits as they were."""
    ok = s > 0.0 and not math.isinf(s)
    return (max(mx, s if ok else 0.0), pos + np.int64(ok), bad + np.int64(not ok and s != 0.0),
            acc + (s if ok else 0.0))


@njit(cache=True, inline="always")
def _clean_row(s, mx, pos, nonzero, acc):
    """:func:`scan_row` for a block of finite, non-negative importances (see :func:`_scanned`)."""
    return (s if s > mx else mx), pos + np.int64(s > 0.0), nonzero + np.int64(s != 0.0), acc + s


@njit(cache=True, inline="always")
def _scanned(mx, pos, nonzero, acc):
    """Whether a block summed by :func:`_clean_row` gives :func:`scan_row`'s values.

    A block of finite, non-negative importances (the usual case) does: every row is then
    either positive or zero, its ``max`` and its sum are the plain ones, and adding a zero
    leaves the sum's bits as they were.  A NaN or negative value makes ``nonzero``
    exceed ``pos``, an infinite one (or a sum that overflows) makes ``acc`` infinite;
    such a block is scanned again by :func:`scan_row`.  The fast loop is about twice as
    fast: it has no ``isinf`` test and no selects in the sum's serial chain.
    """
    return nonzero == pos and acc < math.inf and mx < math.inf


@njit(cache=True, inline="always")
def _value_at(v, j, absolute):
    return abs(np.float64(v[j])) if absolute else np.float64(v[j])


@njit(cache=True, inline="always")
def scan_values(v, absolute):
    """A block's ``(largest, positives, bad, plain sum)`` of the values ``v`` (``|v|`` if
    ``absolute``), as :func:`scan_row` forms them in row order: the fast loop, and
    :func:`scan_row`'s (:func:`_scan_exact`) only for a block it does not settle.

    The blocks whose values are already in cache take it (MVS's stored importances, the
    fused pass's gradients); :func:`scan`, which computes each importance as it reads it,
    keeps :func:`scan_row`'s one loop."""
    mx = 0.0
    pos = 0
    nonzero = 0
    acc = 0.0
    for j in range(v.shape[0]):
        mx, pos, nonzero, acc = _clean_row(_value_at(v, j, absolute), mx, pos, nonzero, acc)
    if _scanned(mx, pos, nonzero, acc):
        return mx, pos, 0, acc
    return _scan_exact(v, absolute)


@njit(cache=True, inline="always")
def _scan_exact(v, absolute):
    """:func:`scan_values` row by row through :func:`scan_row`: a block with a NaN, infinite
    or negative value, or whose sum overflows."""
    mx = 0.0
    pos = 0
    bad = 0
    acc = 0.0
    for j in range(v.shape[0]):
        mx, pos, bad, acc = scan_row(_value_at(v, j, absolute), mx, pos, bad, acc)
    return mx, pos, bad, acc


@njit(cache=True)
def scan_totals(bmax, bpos, bbad, bexp, bsum, want_sum):
    """:func:`scan`'s answer from its per-block values, combined in block order.

    Shared with the fused pass, which forms the per-block values of plain importances
    (``bexp`` 0) while it computes the gradients.
    """
    nb = bmax.shape[0]
    smax = 0.0
    n_pos = 0
    n_bad = 0
    for b in range(nb):
        smax = max(smax, bmax[b])
        n_pos += bpos[b]
        n_bad += bbad[b]
    exponent = math.frexp(smax)[1] if smax > 0.0 else 0
    total = 0.0
    if want_sum and n_bad == 0:
        for b in range(nb):
            if bmax[b] > 0.0:
                total += math.ldexp(bsum[b], bexp[b] - exponent)  # bexp is 0 when plain
    return smax, n_pos, n_bad, exponent, total


@njit(cache=True, inline="always")
def _block_rows(g, h, buf, lo, hi):
    """Views of rows ``lo:hi`` of ``g``, ``h`` and ``buf`` (an empty array stays whole: a kind
    that does not read it).  The block loops index these from 0: indexed from the block's
    first row the same loops run slower."""
    gb = g[lo:hi] if g.shape[0] > 0 else g
    hb = h[lo:hi] if h.shape[0] > 0 else h
    bb = buf[lo:hi] if buf.shape[0] > 0 else buf
    return gb, hb, bb
