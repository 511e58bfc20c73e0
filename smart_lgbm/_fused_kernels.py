"""Numba kernel of the fused pass (:mod:`smart_lgbm.fused`): one sweep over the training rows.

Private module: the kernel trusts its inputs (checked by :class:`smart_lgbm.fused.FusedPass`)
and runs without bounds checks.

For each block of ``BLOCK`` rows (the samplers' reduction block,
:data:`smart_lgbm.samplers._kernels.BLOCK`), in parallel over blocks:

1. walk the iteration's coded trees over the block's rows and add their outputs to the
   scores (:func:`smart_lgbm.walk._kernels.walk_codes`' lockstep loop, rows whose outputs
   are known skipped and given those outputs);
2. while the block's scores are still in cache, compute every row's float32 ``g`` and ``h``
   at the new scores (the built-in losses' row functions of
   :mod:`smart_lgbm.losses._kernels`, so the same bits as their own kernels);
3. fold each row's importance into the block's statistics the next rate solve reads: the
   largest, positive and bad counts and plain sum of :func:`smart_lgbm.samplers._kernels.scan`
   (FirstOrder, SecondOrder), or the sums of MVS's automatic lambda
   (:func:`smart_lgbm.samplers._kernels.norm_sums`), each in row order within the block,
   exactly as those kernels form them.

Every row's values depend on that row only and every block's statistics on its own rows
in row order: the results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .losses._kernels import binary_row, l2_row, softmax_row
from .samplers._kernels import BLOCK, _score, norm_row, scan_row
from .samplers.compiled import STATS_NORMS as NORMS
from .samplers.compiled import STATS_SCAN as SCAN
from .walk._kernels import DEFAULT_SHIFT, MISS_SHIFT, TCODE_SHIFT

#: Losses the pass computes (``loss`` argument; :data:`smart_lgbm.fused.LOSSES`).
BINARY, L2, SOFTMAX = 0, 1, 2

_EMPTY = np.empty(0)


@njit(cache=True, inline="always")
def _walk_and_gradients(lo, hi, codes, sub, info, child, node_value, roots, depths, skip, skip_out, out,
                        loss, sign, label, cls, weight, param, grad, hess):
    """Rows ``lo .. hi - 1``: walk, add to the scores, then ``g, h`` at the new scores.

    The walk is :func:`smart_lgbm.walk._kernels.walk_codes`' lockstep loop over arrays
    allocated here (allocated by the caller they would defeat the compiler's alias analysis).
    """
    num_class = out.shape[1]
    ns = skip.shape[0]
    weighted = weight.shape[0] > 0
    node = np.empty(sub, dtype=np.int64)
    row = np.empty(sub, dtype=np.int64)
    r = lo
    p = np.searchsorted(skip, r)
    while r < hi:
        m = 0
        while m < sub and r < hi:  # the next rows that are not skipped, run by run
            nxt = skip[p] if p < ns else hi
            if r == nxt:
                for k in range(num_class):
                    out[r, k] += skip_out[p, k]
                p += 1
                r += 1
                continue
            stop = min(nxt, hi, r + sub - m)
            for q in range(stop - r):
                row[m + q] = r + q
            m += stop - r
            r = stop
        for k in range(roots.shape[0]):
            root = roots[k]
            for j in range(m):
                node[j] = root
            for _ in range(depths[k]):
                moved = 0
                for j in range(m):
                    nd = node[j]
                    word = info[nd]
                    code = np.int64(codes[word & 0xFFFFFFFF, row[j]])
                    is_miss = code == ((word >> MISS_SHIFT) & 0x1FF)
                    go = (np.int64(is_miss) * ((word >> DEFAULT_SHIFT) & 1)
                          + np.int64(not is_miss) * np.int64(code > ((word >> TCODE_SHIFT) & 0xFF)))
                    nxt_node = child[2 * nd + go]
                    moved |= nxt_node ^ nd
                    node[j] = nxt_node
                if moved == 0:
                    break
            for j in range(m):
                out[row[j], k] += node_value[node[j]]
    # the gradients at the new scores, while the rows' scores are in cache
    if loss == BINARY:
        for i in range(lo, hi):
            g, h = binary_row(1.0 if sign[i] > 0 else -1.0, param, out[i, 0])
            if weighted:
                grad[i, 0] = g * weight[i]
                hess[i, 0] = h * weight[i]
            else:
                grad[i, 0] = g
                hess[i, 0] = h
    elif loss == L2:
        g1 = grad[:, 0]
        h1 = hess[:, 0]
        for i in range(lo, hi):
            l2_row(out[i, 0], label[i], weight, weighted, i, g1, h1)
    else:
        e = np.empty(num_class)
        for i in range(lo, hi):
            softmax_row(out, i, cls[i], weight, weighted, param, e, grad, hess)


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
            mx, pos, bad, acc = scan_row(_score(kind, grad, hess, _EMPTY, 0.0, i), mx, pos, bad, acc)
        bmax[b] = mx
        bpos[b] = pos
        bbad[b] = bad
        bsum[b] = acc
    elif stats == NORMS:
        ga = 0.0
        ha = 0.0
        for i in range(lo, hi):
            a, c = norm_row(grad, hess, i)
            ga += a
            ha += c
        norms[b, 0] = ga
        norms[b, 1] = ha


@njit(parallel=True, cache=True)
def walk_gradients(codes, sub, tile, info, child, node_value, roots, depths, skip, skip_out, out,
                   loss, sign, label, cls, weight, param, grad, hess, stats, kind,
                   bmax, bpos, bbad, bsum, norms):
    """Walk, score, gradients and statistics of every block of ``BLOCK`` rows (module notes).

    ``out`` ``(n, K)`` float64 scores, updated; ``grad``/``hess`` ``(n, K)`` float32, written.
    Loss inputs: ``sign`` int8 +-1 per row (BINARY), ``label`` float64 (L2), ``cls`` int32
    class (SOFTMAX), ``weight`` float64 or empty, ``param`` the sigmoid (BINARY) or the
    softmax factor.  Statistics per block: ``bmax``, ``bpos``, ``bbad``, ``bsum`` (SCAN of
    importance ``kind``), ``norms[b, :]`` (NORMS).

    ``tile`` 0: one parallel task per block does all three steps (one sweep).  ``tile > 0``
    (data of too few blocks to keep every thread busy): the walk and the gradients run over
    tiles of ``tile`` rows in parallel, then each block's statistics; the same values.
    """
    n = codes.shape[1]
    nb = (n + BLOCK - 1) // BLOCK
    if tile == 0:
        for b in prange(nb):
            _walk_and_gradients(b * BLOCK, min(n, (b + 1) * BLOCK), codes, sub, info, child, node_value, roots,
                                depths, skip, skip_out, out, loss, sign, label, cls, weight, param, grad, hess)
            _block_statistics(b, n, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms)
    else:
        for t in prange((n + tile - 1) // tile):
            _walk_and_gradients(t * tile, min(n, (t + 1) * tile), codes, sub, info, child, node_value, roots,
                                depths, skip, skip_out, out, loss, sign, label, cls, weight, param, grad, hess)
        for b in prange(nb):
            _block_statistics(b, n, grad, hess, stats, kind, bmax, bpos, bbad, bsum, norms)
