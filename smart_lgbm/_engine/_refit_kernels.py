"""Numba kernels of the leaf refit (:mod:`smart_lgbm._engine.refit`).

All run over every training row, in parallel:

* :func:`walk_leaf_sums`: the coded training rows walked to their leaves by the bitmask
  walk (trees of at most 64 leaves, :mod:`smart_lgbm._engine.walk._bitmask_kernels`), each row's
  leaf written and its ``g, h`` added to its leaf's sums in the same pass, while the
  row's leaf is in a register: the refit's one pass before the new values are known.
  Done apart (the walk writing the leaves, and outputs the refit throws away, then
  :func:`leaf_sums` reading the leaves back) it would read or write 24 more bytes a row.
* :func:`leaf_sums`: the same sums from leaves known already (read through LightGBM, or
  walked by the lockstep or raw walk, for trees of more than 64 leaves or data without
  codes).
* :func:`add_by_leaf`: each row's new output, read from its leaf, added to its score (each
  row written from that row alone); on the fused path the gradient sweep does it instead,
  block by block before the block's gradients
  (:func:`smart_lgbm._engine._sweep_kernels.one_column_by_leaf`).

The sums run over fixed blocks of ``BLOCK`` rows, each block into its own table, its rows in
row order; the front adds the tables in block order, so the sums are the same doubles at
any number of threads, and both sum kernels give the same doubles for the same leaves (the
serial twins give the same bits, :mod:`smart_lgbm._numba.row_kernel`).

Private module: the front checks shapes and dtypes.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from .._numba.row_kernel import row_kernel
from .._numba.kernel_constants import BLOCK
from .walk._bitmask_kernels import MAX_LEAVES, tree_masks

#: Rows whose leaf masks :func:`walk_leaf_sums` forms at a time: the bitmask walk's block
#: (``smart_lgbm._engine.walk.codes.BITMASK_BLOCK_ROWS``, whose measurements hold here), a divisor
#: of ``BLOCK`` so that no walk block straddles two sums' blocks.
WALK_ROWS = 1024


@row_kernel(rows=0, axis=1)
def walk_leaf_sums(codes, tstart, tcol, table, leaf_index, grad, hess, leaves, tables):
    """Walk every row of ``codes`` (column-major uint8) down the bitmask forest (``tstart``,
    ``tcol``, ``table``, ``leaf_index`` of :class:`smart_lgbm._engine.walk.bitmask.BitmaskForest`),
    write its leaf in tree ``k`` into ``leaves[i, k]`` (int32 ``(n, K)``) and add its
    ``grad[i, k]``, ``hess[i, k]`` (float32 ``(n, K)``) to ``tables[b, k, 0, leaf]`` and
    ``tables[b, k, 1, leaf]`` (zeroed float64 ``(n_blocks, K, 2, width)``), ``b`` the row's
    block of ``BLOCK`` rows, the rows of a block in row order (the module notes)."""
    n = codes.shape[1]
    num_trees = tstart.shape[0] - 1
    for b in prange(tables.shape[0]):
        mask = np.empty(WALK_ROWS, dtype=table.dtype)
        tb = tables[b]
        for r0 in range(b * BLOCK, min(n, (b + 1) * BLOCK), WALK_ROWS):
            m = min(WALK_ROWS, n - r0)
            for k in range(num_trees):
                tree_masks(codes, r0, m, tstart[k], tstart[k + 1], tcol, table, mask)
                base = MAX_LEAVES * k
                sums = tb[k]
                for j in range(m):
                    r = r0 + j
                    leaf = leaf_index[base + trailing_zeros(mask[j])]
                    leaves[r, k] = leaf
                    sums[0, leaf] += np.float64(grad[r, k])
                    sums[1, leaf] += np.float64(hess[r, k])


@row_kernel(rows=0, axis=0)
def leaf_sums(leaves, grad, hess, tables):
    """Fill ``tables`` (zeroed ``(n_blocks, K, 2, width)`` float64, one per ``BLOCK`` rows)
    with the sums of ``grad``/``hess`` (float32 ``(n, K)``) over each block's rows by
    their leaf in ``leaves`` (int32 ``(n, K)``, every leaf below ``width``), tree by tree."""
    n, num_trees = leaves.shape
    for b in prange(tables.shape[0]):
        tb = tables[b]
        for k in range(num_trees):
            sums = tb[k]
            for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
                leaf = leaves[i, k]
                sums[0, leaf] += np.float64(grad[i, k])
                sums[1, leaf] += np.float64(hess[i, k])


@row_kernel(rows=0, axis=0)
def add_by_leaf(scores, leaves, values):
    """``scores[i, k] += values[k, leaves[i, k]]`` for every row ``i`` and tree ``k``."""
    n, num_trees = scores.shape
    for i in prange(n):
        for k in range(num_trees):
            scores[i, k] += values[k, leaves[i, k]]


@njit(cache=True)
def add_tables(tables, sums):
    """``sums += tables[b]`` for every block ``b`` in block order (each sum one chain of
    adds from 0.0 in that order, whatever thread formed each table)."""
    flat = sums.reshape(-1)
    for b in range(tables.shape[0]):
        tb = tables[b].reshape(-1)
        for j in range(flat.shape[0]):
            flat[j] += tb[j]
