"""Numba kernels that code raw features (:meth:`smart_lgbm._engine.walk.codes.CodeBook.encode`).

Private module: the kernels trust their inputs (built by :class:`~smart_lgbm._engine.walk.codes.CodeBook`).

Numerical features (:func:`encode_dense`; sparse ones: ``_kernels.encode_sparse``):

A value's code is the number of its feature's bin bounds below it, a binary search.  One
search is a chain of dependent loads and compares; done one value at a time the CPU waits
on that chain.  Here each feature's bounds are padded with ``+inf`` to a power of two, so
every search of a feature takes the same number of halvings, and 16 rows are searched in
lockstep: each halving step updates 16 independent positions, which the CPU overlaps
(several times faster than one value at a time).  The codes are those of :func:`smart_lgbm._engine.walk._kernels._code`,
value for value (``tests/test_bincodes.py``).

Categorical features (:func:`encode_dense_categories`, :func:`encode_sparse_categories`): a
value's code is its bin under LightGBM's categorical bin mapper, ``BinMapper::ValueToBin``:
NaN, a value whose ``static_cast<int>`` is negative (``x <= -1``; ``-1 < x < 0`` truncates to
category 0) or out of ``int`` range, and every category without a bin of its own, go to bin
0; any other value to its category's bin (:func:`category_bin`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..._numba.row_kernel import row_kernel
from ._kernels import _lower_bound

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
        for lane in range(LANES):
            xs[lane] = 0.0
        i_end = min(n, (b + 1) * BLOCK)
        for j in range(features.shape[0]):
            f = features[j]
            d = depth[j]
            nan_code = nan_codes[j]
            row = padded[j]
            for i0 in range(b * BLOCK, i_end, LANES):
                m = min(LANES, i_end - i0)
                # every lane starts at 0, the stale ones past m too: they are searched
                # along, and a position carried over from an earlier search would index
                # past the padded row
                for lane in range(LANES):
                    pos[lane] = 0
                for lane in range(m):
                    x = np.float64(X[i0 + lane, f])
                    if abs(x) <= zero_threshold or (x != x and nan_code < 0):
                        x = 0.0
                    xs[lane] = x
                step = 1 << d
                for _ in range(d):
                    step >>= 1
                    # all LANES lanes (stale ones too): a fixed trip count the compiler
                    # unrolls; positions stay below 2**d, inside the padded row
                    for lane in range(LANES):
                        pos[lane] += step * np.int64(row[pos[lane] + step - 1] < xs[lane])
                for lane in range(m):
                    codes[j, i0 + lane] = nan_code if xs[lane] != xs[lane] else pos[lane]


#: Just above INT_MAX: a categorical value from here on is out of ``int`` range (bin 0).
_INT_RANGE = 2147483648.0


@njit(cache=True, inline="always")
def category_bin(x, j, table, tstart, tlen, values, bins, vstart, vlen):
    """The bin of value ``x`` of categorical column ``j`` (module notes).

    Column ``j``'s categories are looked up in ``table[tstart[j]:tstart[j] + tlen[j]]`` (the
    bin of every category below ``tlen[j]``, 0 for those without one) when ``tlen[j] >= 0``,
    else by binary search in its sorted categories ``values[vstart[j]:vstart[j] + vlen[j]]``,
    whose bins are ``bins`` at the same positions.
    """
    if not (x > -1.0 and x < _INT_RANGE):
        return 0
    c = np.int64(x)
    length = tlen[j]
    if length >= 0:
        return table[tstart[j] + c] if c < length else 0
    lo = vstart[j]
    hi = lo + vlen[j]
    p = _lower_bound(values, lo, hi, c)
    return bins[p] if p < hi and values[p] == c else 0


@row_kernel(rows=0, axis=0)
def encode_dense_categories(X, features, table, tstart, tlen, values, bins, vstart, vlen, codes):
    """``codes[j, i]``: the bin of ``X[i, features[j]]`` (:func:`category_bin`); ``codes``
    uint8 or uint16 (columns of more than 256 bins)."""
    n = X.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        i_end = min(n, (b + 1) * BLOCK)
        for j in range(features.shape[0]):
            f = features[j]
            for i in range(b * BLOCK, i_end):
                codes[j, i] = category_bin(np.float64(X[i, f]), j, table, tstart, tlen, values, bins, vstart, vlen)


@row_kernel(rows=1)
def encode_sparse_categories(is_csc, n, indptr, indices, data, column_of_feature, table, tstart, tlen, values, bins,
                             vstart, vlen, codes):
    """The bins of a CSR (each row's entries in storage order, the last duplicate winning)
    or canonical CSC matrix's categorical columns, ``column_of_feature[f]`` the row of
    ``codes`` of feature ``f`` (-1: not a categorical column); absent entries read 0.  Tiny
    stored values need no care here: any ``|x| < 1`` is category 0, kept or dropped."""
    ncols = codes.shape[0]
    for j in prange(ncols):
        zero = category_bin(0.0, j, table, tstart, tlen, values, bins, vstart, vlen)
        for i in range(n):
            codes[j, i] = zero
    if is_csc:
        for f in prange(indptr.shape[0] - 1):
            j = column_of_feature[f]
            if j < 0:
                continue
            for p in range(indptr[f], indptr[f + 1]):
                codes[j, indices[p]] = category_bin(np.float64(data[p]), j, table, tstart, tlen, values, bins,
                                                    vstart, vlen)
    else:
        for i in prange(n):
            for p in range(indptr[i], indptr[i + 1]):
                j = column_of_feature[indices[p]]
                if j < 0:
                    continue
                codes[j, i] = category_bin(np.float64(data[p]), j, table, tstart, tlen, values, bins, vstart, vlen)
