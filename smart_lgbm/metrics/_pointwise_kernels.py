"""Numba kernel behind :mod:`smart_lgbm.metrics.pointwise`: the C library's float32 ``log``.

LightGBM's gamma metric takes ``std::log`` of a float32 label, which is the C library's
``logf``.  numpy's float32 ``log`` is its own SIMD code and differs from ``logf`` in the
last bit for about a quarter of all inputs (and rounding the double ``log`` differs for
about 1 in 100); numba lowers ``math.log`` of a float32 to ``logf`` itself, so this kernel
returns LightGBM's values bit for bit.  Element-wise, so threads cannot change a result.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def logf(values):
    """``logf`` of every entry of a float32 array (float32 results)."""
    out = np.empty_like(values)
    for i in prange(values.shape[0]):
        out[i] = math.log(values[i])
    return out
