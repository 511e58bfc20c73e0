"""Numba kernels of the gradient sweep (:mod:`.sweep`): after the walk, one sweep that leaves
the next iteration's gradients and rate-solve statistics ready (:func:`one_column` for binary
and L2, :func:`gradients_statistics` for multiclass).

Private module: the kernels trust their inputs (checked by :class:`.sweep.GradientSweep`)
and run without bounds checks.

The walk itself is :func:`smart_lgbm._engine.walk.add_coded_outputs` (the bitmask walk for
trees of at most 64 leaves, else the lockstep walk), called just before and not written
into the same loop: there the lockstep walk runs about twice as slow (also as a called
function, or as a second parallel loop, which numba fuses with the first); the bitmask
walk gains nothing, and with the grouped statistics below it loses (the walk's code reads
evict a group's ``g, h`` before they are scanned); and the gradients are bound by ``exp``,
not by reading the scores again.

For each block of ``BLOCK`` rows (the samplers' reduction block,
:data:`smart_lgbm._numba.kernel_constants.BLOCK`), in parallel over runs of blocks (one run
per thread; :func:`one_column` forms four blocks' SCAN statistics side by side):

1. compute every row's float32 ``g`` and ``h`` at the new scores (the built-in losses'
   row functions of :mod:`smart_lgbm.losses._kernels`, so the same bits as their own
   kernels; the binary label read as one signed byte per row);
2. while they are in cache, fold each row's importance into the block's statistics the
   next rate solve reads: the largest, positive and bad counts and plain sum of the
   samplers' scan (:func:`smart_lgbm.samplers._rate_solve_kernels.scan`; FirstOrder,
   SecondOrder), or the sums of MVS's automatic lambda
   (:func:`smart_lgbm.samplers._importance_kernels.norm_sums`), each in row order within
   the block, exactly as those kernels form them.

Every row's values depend on that row only and every block's statistics on its own rows
in row order: the results do not depend on the number of threads.

A leaf refit (:mod:`.refit`) ends the iteration without a walk: every training row's leaf
is known and the new outputs are ``values[k, leaf]``.  Its variants
(:func:`one_column_by_leaf`, :func:`gradients_statistics_by_leaf`) add them to each block's
scores (one double add per row and tree, as :func:`._refit_kernels.add_by_leaf` does) just
before step 1 reads them: the scores are read and written once, not once by the add and
again by the sweep.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .._numba.row_kernel import row_kernel

from ..losses._exp_kernels import libm_is_reproduced
from ..losses._kernels import binary_rows_fast, binary_store, l2_row, softmax_row
from .._numba.kernel_constants import BLOCK, FIRST
from .._numba.kernel_constants import STATS_NORMS as NORMS
from .._numba.kernel_constants import STATS_SCAN as SCAN
from ..samplers._importance_kernels import _any_kind, _clean_row, _scan_exact, _scanned, _value_at, norm_row, scan_row, scan_values

#: Losses the pass computes (``loss`` argument; :data:`smart_lgbm._engine.sweep.LOSSES`).
BINARY, L2, SOFTMAX = 0, 1, 2

_EMPTY = np.empty(0)


@njit(cache=True, inline="always")
def _block_statistics(b, n, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms):
    """Block ``b``'s statistics of the next rate solve, its rows in row order (module notes)."""
    lo = b * BLOCK
    hi = min(n, lo + BLOCK)
    if stats == SCAN:
        mx = 0.0
        pos = 0
        bad = 0
        acc = 0.0
        for i in range(lo, hi):
            # the sampler kernels' importance (``kind`` an int here: every kind's code, inlined)
            mx, pos, bad, acc = scan_row(_any_kind(kind, grad, hess, _EMPTY, 0.0, i), mx, pos, bad, acc)
        bmax[b], bpos[b], bbad[b], bsum[b] = mx, pos, bad, acc
    elif stats == NORMS:
        ga = 0.0
        ha = 0.0
        for i in range(lo, hi):
            a, c = norm_row(grad, hess, i)
            ga += a
            ha += c
        norms[b, 0] = ga
        norms[b, 1] = ha


@njit(cache=True, inline="always")
def _add_by_leaf(out, lo, hi, leaves, values):
    """``out[i, k] += values[k, leaves[i, k]]`` for the rows ``lo .. hi - 1``: a leaf
    refit's new outputs (:func:`smart_lgbm._engine._refit_kernels.add_by_leaf`'s adds, row by row),
    added to a block's scores just before its gradients read them."""
    for i in range(lo, hi):
        for k in range(out.shape[1]):
            out[i, k] += values[k, leaves[i, k]]


@njit(cache=True, inline="always")
def _softmax_block(b, n, out, leaves, values, by_leaf, cls, weight, weighted, factor, grad, hess, stats, kind, bmax,
                   bpos, bbad, bsum, norms):
    """Block ``b`` of :func:`gradients_statistics` (its scores first updated by leaf when ``by_leaf``)."""
    lo = b * BLOCK
    hi = min(n, lo + BLOCK)
    if by_leaf:
        _add_by_leaf(out, lo, hi, leaves, values)
    e = np.empty(out.shape[1])
    for i in range(lo, hi):
        softmax_row(out, i, cls[i], weight, weighted, factor, e, grad, hess)
    _block_statistics(b, n, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms)


_NO_LEAVES = np.empty((0, 1), dtype=np.int32)
_NO_VALUES = np.empty((1, 1))


@row_kernel(rows=0)
def gradients_statistics(n, out, cls, weight, factor, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms):
    """Softmax ``g, h`` of every row at the scores ``out`` and each block's statistics (module notes).

    ``out`` ``(n, K)`` float64 scores; ``grad``/``hess`` ``(n, K)`` float32, written;
    ``cls`` each row's int32 class, ``weight`` float64 or empty, ``factor`` the softmax
    hessian factor.  Statistics per block: ``bmax``, ``bpos``, ``bbad``, ``bsum`` (SCAN of
    importance ``kind``), ``norms[b, :]`` (NORMS).
    """
    weighted = weight.shape[0] > 0
    for b in prange((n + BLOCK - 1) // BLOCK):
        _softmax_block(b, n, out, _NO_LEAVES, _NO_VALUES, False, cls, weight, weighted, factor, grad, hess, stats,
                       kind, bmax, bpos, bbad, bsum, norms)


@row_kernel(rows=0)
def gradients_statistics_by_leaf(n, out, leaves, values, cls, weight, factor, grad, hess, stats, kind, bmax, bpos,
                                 bbad, bsum, norms):
    """:func:`gradients_statistics` after ``out[i, k] += values[k, leaves[i, k]]`` (a leaf
    refit's outputs: ``leaves`` int32 ``(n, K)``, ``values`` float64 ``(K, width)``), each
    block's scores updated just before its gradients read them: one pass over the scores
    instead of two (the add, then the sweep)."""
    weighted = weight.shape[0] > 0
    for b in prange((n + BLOCK - 1) // BLOCK):
        _softmax_block(b, n, out, leaves, values, True, cls, weight, weighted, factor, grad, hess, stats, kind, bmax,
                       bpos, bbad, bsum, norms)


@njit(cache=True, inline="always")
def _one_column_row(loss, i, raw, sign, label, weight, weighted, param, grad, hess):
    """Row ``i``'s float32 ``g, h`` (binary or L2), stored."""
    if loss == BINARY:
        binary_store(i, sign, param, raw, weight, weighted, grad, hess)
    else:
        l2_row(raw[i], label[i], weight, weighted, i, grad, hess)


def threads() -> int:
    """numba's number of threads, :func:`one_column`'s ``threads`` argument."""
    return numba.get_num_threads()


def fast_exp() -> bool:
    """:func:`one_column`'s ``fast_exp`` argument: whether the vectorising ``exp`` gives this
    process's C library bits (:func:`smart_lgbm.losses._exp_kernels.libm_is_reproduced`)."""
    return libm_is_reproduced()


#: Blocks whose statistics :func:`one_column` forms side by side (:func:`_scan_group`).
GROUP = 4


@njit(cache=True, inline="always")
def _scan_group(v, b, absolute, bmax, bpos, bbad, bsum):
    """:func:`scan_values` of the ``GROUP`` full blocks ``b .. b + GROUP - 1`` of ``v``, formed
    side by side: each block's largest value and sum are still one chain in row order (the
    same doubles), but the chains of four blocks advance in one loop, so the adds' latency
    is paid once per four rows instead of once per row (a block alone waits on its sum's
    previous add every row).  A block the fast loop does not settle (:func:`_scanned`) is
    scanned again by :func:`_scan_exact`, as :func:`scan_values` does."""
    lo = b * BLOCK
    v0 = v[lo:lo + BLOCK]
    v1 = v[lo + BLOCK:lo + 2 * BLOCK]
    v2 = v[lo + 2 * BLOCK:lo + 3 * BLOCK]
    v3 = v[lo + 3 * BLOCK:lo + 4 * BLOCK]
    m0 = m1 = m2 = m3 = 0.0
    p0 = p1 = p2 = p3 = 0
    z0 = z1 = z2 = z3 = 0
    a0 = a1 = a2 = a3 = 0.0
    for j in range(BLOCK):
        m0, p0, z0, a0 = _clean_row(_value_at(v0, j, absolute), m0, p0, z0, a0)
        m1, p1, z1, a1 = _clean_row(_value_at(v1, j, absolute), m1, p1, z1, a1)
        m2, p2, z2, a2 = _clean_row(_value_at(v2, j, absolute), m2, p2, z2, a2)
        m3, p3, z3, a3 = _clean_row(_value_at(v3, j, absolute), m3, p3, z3, a3)
    _settle(v0, absolute, b, m0, p0, z0, a0, bmax, bpos, bbad, bsum)
    _settle(v1, absolute, b + 1, m1, p1, z1, a1, bmax, bpos, bbad, bsum)
    _settle(v2, absolute, b + 2, m2, p2, z2, a2, bmax, bpos, bbad, bsum)
    _settle(v3, absolute, b + 3, m3, p3, z3, a3, bmax, bpos, bbad, bsum)


@njit(cache=True, inline="always")
def _settle(vb, absolute, b, mx, pos, nonzero, acc, bmax, bpos, bbad, bsum):
    """Block ``b``'s values from its fast loop's, or :func:`_scan_exact`'s (see :func:`scan_values`)."""
    if _scanned(mx, pos, nonzero, acc):
        bmax[b], bpos[b], bbad[b], bsum[b] = mx, pos, 0, acc
    else:
        bmax[b], bpos[b], bbad[b], bsum[b] = _scan_exact(vb, absolute)


@njit(cache=True, error_model="numpy")
def _one_column_block(b, n, raw, leaves, values, by_leaf, loss, sign, label, weight, weighted, param, grad, hess,
                      stats, kind, bmax, bpos, bbad, bsum, norms, scan_later, fast_exp):
    """Block ``b``'s ``g, h`` (its scores first updated by leaf when ``by_leaf``); its
    statistics too unless ``scan_later`` (a SCAN its group forms)."""
    lo = b * BLOCK
    hi = min(n, lo + BLOCK)
    m = hi - lo
    r = raw[lo:hi]
    if by_leaf:  # (add_by_leaf's adds of a one-column score)
        lv = leaves[lo:hi]
        v = values[0]
        for j in range(m):
            r[j] += v[lv[j, 0]]
    sg = sign[lo:hi] if loss == BINARY else sign
    lab = label[lo:hi] if loss == L2 else label
    w = weight[lo:hi] if weighted else weight
    gg = grad[lo:hi]
    hh = hess[lo:hi]
    if loss == BINARY and fast_exp:
        binary_rows_fast(m, r, sg, w, weighted, param, gg, hh)
    else:
        for j in range(m):
            _one_column_row(loss, j, r, sg, lab, w, weighted, param, gg, hh)
    # the block's statistics, from its float32 g, h while they are in cache (folded
    # into the loop above they cost twice as much: the sums wait on every exp call)
    if stats == SCAN and not scan_later:
        # _score of FIRST (|g|) or SECOND (h) for one column
        bmax[b], bpos[b], bbad[b], bsum[b] = scan_values(gg if kind == FIRST else hh, kind == FIRST)
    elif stats == NORMS:
        ga = 0.0
        ha = 0.0
        for j in range(m):
            ga += abs(np.float64(gg[j]))
            ha += abs(np.float64(hh[j]))
        norms[b, 0] = ga
        norms[b, 1] = ha


@row_kernel(rows=0, error_model="numpy")
def one_column(n, raw, loss, sign, label, weight, param, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms,
               threads, fast_exp):
    """Binary or L2 ``g, h`` of every row at the scores ``raw`` (1-D) and each block's statistics.

    ``sign`` int8 +-1 per row (BINARY), ``label`` float64 (L2), ``weight`` float64 or
    empty, ``param`` the sigmoid; the statistics as in :func:`gradients_statistics`;
    ``threads`` numba's number of threads (``numba.get_num_threads()``, passed in: read
    inside, it keeps numba from caching the kernel); ``fast_exp`` (:func:`fast_exp`): the
    binary rows take the vectorising ``exp``
    (:func:`~smart_lgbm.losses._kernels.binary_rows_fast`: the same bits, a third of the
    sweep's time or less), else ``math.exp`` row by row.  Compiled with numba's ``numpy`` error model: its division
    check kept the row loop from vectorising (the divisions here are by ``1 + exp``, never 0).

    Each of ``threads`` runs takes one contiguous run of blocks (the split prange makes of the blocks)
    and goes through it ``GROUP`` blocks at a time: the ``g, h`` of each block, then the
    SCAN statistics of the group's blocks side by side (:func:`_scan_group`: a fifth less
    time for the whole sweep), from the values still in cache (a group's float32 ``g, h`` take 512 KB).  Every block's
    values are those of its own rows in row order, whichever thread forms them.

    Each block works on views of its own rows indexed from 0: indexed from the block's
    first row, the same loop costs more than half as much again.
    """
    nb = (n + BLOCK - 1) // BLOCK
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        _one_column_run(t, nt, nb, n, raw, _NO_LEAVES, _NO_VALUES, False, loss, sign, label, weight, param, grad,
                        hess, stats, kind, bmax, bpos, bbad, bsum, norms, fast_exp)


@row_kernel(rows=0, error_model="numpy")
def one_column_by_leaf(n, raw, leaves, values, loss, sign, label, weight, param, grad, hess, stats, kind, bmax, bpos,
                       bbad, bsum, norms, threads, fast_exp):
    """:func:`one_column` after ``raw[i] += values[0, leaves[i, 0]]`` (a leaf refit's
    outputs: ``leaves`` int32 ``(n, 1)``, ``values`` float64 ``(1, width)``), each block's
    scores updated just before its gradients read them: one pass over the scores instead of
    two (the add, then the sweep)."""
    nb = (n + BLOCK - 1) // BLOCK
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        _one_column_run(t, nt, nb, n, raw, leaves, values, True, loss, sign, label, weight, param, grad, hess, stats,
                        kind, bmax, bpos, bbad, bsum, norms, fast_exp)


# _one_column_run and _one_column_block are compiled on their own, not inlined into the
# prange loops of one_column and one_column_by_leaf: inlined, numba's type inference went
# through the whole block body once per kernel and twin, and the first call of the binary
# sweep spent half a minute compiling; called, each compiles once for every kernel and twin
# (numba's ``numpy`` error model, as the kernels': its division check kept the row loop from
# vectorising).
@njit(cache=True, error_model="numpy")
def _one_column_run(t, nt, nb, n, raw, leaves, values, by_leaf, loss, sign, label, weight, param, grad, hess, stats,
                    kind, bmax, bpos, bbad, bsum, norms, fast_exp):
    """Run ``t`` of ``nt`` of :func:`one_column`: its contiguous run of blocks, ``GROUP`` at a time."""
    weighted = weight.shape[0] > 0
    grouped = stats == SCAN
    b0 = nb * t // nt
    b1 = nb * (t + 1) // nt
    for q in range(b0, b1, GROUP):
        qe = min(b1, q + GROUP)
        # a full group of full blocks forms its SCAN side by side; any other, block by block
        together = grouped and qe - q == GROUP and qe * BLOCK <= n
        for b in range(q, qe):
            _one_column_block(b, n, raw, leaves, values, by_leaf, loss, sign, label, weight, weighted, param, grad,
                              hess, stats, kind, bmax, bpos, bbad, bsum, norms, together, fast_exp)
        # (``absolute`` a constant in each call: as a run-time flag the select in every
        # row's read costs the group most of what it saves)
        if together and kind == FIRST:
            _scan_group(grad, q, True, bmax, bpos, bbad, bsum)
        elif together:
            _scan_group(hess, q, False, bmax, bpos, bbad, bsum)
