"""Numba kernel that codes dense raw features (:meth:`smart_lgbm._engine.walk.codes.CodeBook.encode`).

Private module: the kernel trusts its inputs (built by :class:`~smart_lgbm._engine.walk.codes.CodeBook`).

A value's code is the number of its feature's bin bounds below it, a binary search.  One
search is a chain of dependent loads and compares; done one value at a time the CPU waits
on that chain.  Here each feature's bounds are padded with ``+inf`` to a power of two, so
every search of a feature takes the same number of halvings, and 16 rows are searched in
lockstep: each halving step updates 16 independent positions, which the CPU overlaps
(several times faster than one value at a time).  The codes are those of :func:`smart_lgbm._engine.walk._kernels._code`,
value for value (``tests/test_bincodes.py``).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ..._numba.row_kernel import row_kernel

#: Rows searched in lockstep (16 measured fastest against 8, 32 and 64).
LANES = 16
#: Rows per parallel block.
BLOCK = 4096


def padded_bounds(bounds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each feature's bounds padded with ``+inf`` to 256 entries, and its search depth.

    Depth ``d`` is the smallest with ``2**d > len(bounds)``: the ``d`` halvings over the
    first ``2**d`` entries count the bounds below any value, ``len(bounds)`` included.
    """
    padded = np.full((len(bounds), 256), np.inf)
    depth = np.zeros(len(bounds), dtype=np.int64)
    for j, b in enumerate(bounds):
        padded[j, :b.shape[0]] = b
        depth[j] = int(b.shape[0]).bit_length()
    return padded, depth


@row_kernel(rows=0, axis=0)
def encode_dense(X, features, padded, depth, nan_codes, zero_threshold, codes):
    """``codes[j, i]``: the code of ``X[i, features[j]]``.

    ``|x| <= zero_threshold`` reads 0 (LightGBM's dense row function drops it); NaN gets
    ``nan_codes[j]`` when that is >= 0, else reads 0.
    """
    n = X.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        # np.empty and zeroed here, not np.zeros: numba compiles np.zeros's implementation
        # on its first use in a process (tenths of a second of a fresh first call), and no
        # other kernel of a binary run needs it (walk_codes compiles np.empty anyway).  Not
        # taken from the caller: as views of a caller's array the search runs a few per cent
        # slower.
        xs = np.empty(LANES, dtype=np.float64)
        pos = np.empty(LANES, dtype=np.int64)
        for lane in range(LANES):  # stale lanes are searched too: their positions must be valid
            xs[lane] = 0.0
            pos[lane] = 0
        i_end = min(n, (b + 1) * BLOCK)
        for j in range(features.shape[0]):
            f = features[j]
            d = depth[j]
            nan_code = nan_codes[j]
            row = padded[j]
            for i0 in range(b * BLOCK, i_end, LANES):
                m = min(LANES, i_end - i0)
                for lane in range(m):
                    x = np.float64(X[i0 + lane, f])
                    if abs(x) <= zero_threshold or (x != x and nan_code < 0):
                        x = 0.0
                    xs[lane] = x
                    pos[lane] = 0
                step = 1 << d
                for _ in range(d):
                    step >>= 1
                    # all LANES lanes (stale ones too): a fixed trip count the compiler
                    # unrolls; positions stay below 2**d, inside the padded row
                    for lane in range(LANES):
                        pos[lane] += step * np.int64(row[pos[lane] + step - 1] < xs[lane])
                for lane in range(m):
                    codes[j, i0 + lane] = nan_code if xs[lane] != xs[lane] else pos[lane]
