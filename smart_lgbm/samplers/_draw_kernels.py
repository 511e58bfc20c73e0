"""Numba kernels of the samplers' draw: counter-based Bernoulli draw, gather, leaf means.

Private module: the functions trust their inputs (validated by their Python fronts) and
run without bounds checks.

Randomness is counter-based: row ``i``'s uniform is SplitMix64's output for ``key`` and
counter ``i + 1`` (:func:`uniform`), so a draw depends on ``(key, i, p_i)`` only: row ``i``
is drawn when ``u_i < p_i``.  The draw forms a bit mask of 64 rows' outcomes in one loop
(which vectorises) and writes the drawn rows from the mask in another (:func:`draw`).
:mod:`.draw` is their front; the row functions are :mod:`._importance_kernels`'.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .._numba.kernel_constants import BLOCK, FIT_ANCHOR, FIT_PLAIN, FIT_REGULARISED, HIST_BLOCK
from .._numba.row_kernel import row_kernel
from ._importance_kernels import _block_rows, _columns_in_order, _prob, _score

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_M53 = 1.0 / 9007199254740992.0


@intrinsic
def _double(typingctx, u):
    """The double whose bits are the uint64 ``u`` (a bitcast, which vectorises)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


_LOW_WORD = np.uint64(0xFFFFFFFF)
_TWO_POW_52_BITS = np.uint64(0x4330000000000000)  # 2**52: ORed with x < 2**32, 2**52 + x
_TWO_POW_84_BITS = np.uint64(0x4530000000000000)  # 2**84: ORed with x < 2**32, 2**84 + x * 2**32
_TWO_POW_84_52 = 2.0**84 + 2.0**52


@njit(cache=True, inline="always")
def exact_double(k):
    """``float(k)`` of a uint64 ``k < 2**53``, exactly, in instructions that vectorise.

    AVX2 has no vector conversion of 64-bit integers (AVX-512DQ does): LLVM converted a
    vector of them one lane at a time.  Here each 32-bit half becomes a double by placing it
    in the mantissa of a power of two (``2**84 + hi * 2**32`` and ``2**52 + lo``); the
    subtraction of ``2**84 + 2**52`` is exact (its result, ``hi * 2**32 - 2**52``, is a
    multiple of ``2**32`` below ``2**53`` in magnitude), and so is the sum, ``k`` itself.
    """
    hi = _double(_TWO_POW_84_BITS | (k >> np.uint64(32))) - _TWO_POW_84_52
    return hi + _double(_TWO_POW_52_BITS | (k & _LOW_WORD))


def _converts_int64_vectors() -> bool:
    """Whether numba compiles for a CPU with AVX-512DQ, which converts vectors of 64-bit
    integers to doubles in one instruction (numba's target features: ``NUMBA_CPU_FEATURES``
    when set, else the host's)."""
    features = getattr(config, "CPU_FEATURES", None)
    if features is None:
        from llvmlite import binding

        features = binding.get_host_cpu_features().flatten()
    return "+avx512dq" in features.split(",")


#: Read once at import; a constant in the compiled code (numba's cache is per CPU and features).
_CONVERT_INT64 = _converts_int64_vectors()


@njit(cache=True, inline="always")
def uniform(key, i):
    """Row ``i``'s uniform in [0, 1): SplitMix64 at counter ``i + 1`` from state ``key`` (53 bits).

    ``float(z >> 11) * 2**-53``: by the CPU's conversion where it has a vector one, else
    written out (:func:`exact_double`, about 10% slower a draw where both vectorise); the
    same double either way."""
    z = key + np.uint64(i + 1) * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    if _CONVERT_INT64:
        return np.float64(z >> np.uint64(11)) * _TWO_POW_M53
    return exact_double(z >> np.uint64(11)) * _TWO_POW_M53


@njit(cache=True, inline="always")
def _kept(key, i, p):
    """Whether row ``i`` is drawn at probability ``p`` (a value of :func:`_prob`): ``u_i < p``.

    The same answer as the rule ``p > 0 and (p >= 1 or u_i < p)`` for every such ``p``, as
    ``0 <= u_i < 1``: ``p = 1`` keeps the row, ``p <= 0`` or NaN drops it.  Without the
    short-circuit, a loop over rows computes every row's uniform and vectorises."""
    return uniform(key, i) < p


@njit(cache=True, inline="always")
def _keep_mask(kind, g, h, buf, lam, c1, c2, rho, key, first, m):
    """Bit ``j`` set where row ``first + j`` is drawn, for ``m <= 64`` rows (views ``g, h,
    buf`` of them, see :func:`_block_rows`).

    A loop free of the compaction's serial chain (a row's slot depends on every row before
    it), so that LLVM vectorises the importance, SplitMix64 and the comparison."""
    mask = np.uint64(0)
    for j in range(m):
        p = _prob(_score(kind, g, h, buf, lam, j), c1, c2, rho)
        mask |= np.uint64(_kept(key, first + j, p)) << np.uint64(j)
    return mask


@intrinsic
def _low_bit(typingctx, mask):
    """The index of the lowest set bit of a non-zero uint64 (LLVM's ``cttz``: ``tzcnt``)."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, ir.IntType(1)]),
                                            "llvm.cttz.i64")
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])
    return types.int64(types.uint64), codegen


@njit(cache=True, inline="always")
def _draw_block(kind, g, h, buf, lam, c1, c2, rho, key, lo, hi, out):
    """:func:`draw` of the rows ``lo:hi`` (block views ``g, h, buf``) into ``out``; returns
    how many it drew."""
    c = 0
    for start in range(0, hi - lo, 64):
        stop = min(hi - lo, start + 64)
        gw, hw, bw = _block_rows(g, h, buf, start, stop)  # (indexed from 0: loads, not gathers)
        mask = _keep_mask(kind, gw, hw, bw, lam, c1, c2, rho, key, lo + start, stop - start)
        while mask != 0:
            out[c] = lo + start + _low_bit(mask)
            c += 1
            mask &= mask - np.uint64(1)
    return c


@row_kernel(rows=1)
def draw(kind, n, g, h, buf, lam, c1, c2, rho, key, scratch, counts, offsets):
    """Bernoulli draw: block ``b``'s drawn rows go, in order, to ``scratch[b * BLOCK:]``.

    Writes the number drawn per block into ``counts`` and where each block's rows start in
    the sample into ``offsets`` (int64, one per ``BLOCK`` rows, allocated by the caller: see
    :func:`scan`); returns the number drawn.  Each block reads views of its own rows
    (:func:`_block_rows`).

    Each block runs in words of 64 rows: first a bit mask of the drawn rows
    (:func:`_keep_mask`, a vectorised loop), then the mask's set bits, lowest first, into
    the next slots (a walk over the drawn rows only).  A row loop doing both at once
    (``out[c] = row; c += drawn``) stays scalar: every row's slot depends on the rows before it
    (docs/results/profile_engine_parts.md times the draw).
    """
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb, hb, bb = _block_rows(g, h, buf, lo, hi)
        out = scratch[lo:hi]
        if gb.shape[1] == 1 and hb.shape[1] == 1:
            # the same code, compiled where LLVM knows K = 1: the importance's loops over the
            # K columns vanish, which lets the mask's loop vectorise
            counts[b] = _draw_block(kind, gb, hb, bb, lam, c1, c2, rho, key, lo, hi, out)
        else:
            counts[b] = _draw_block(kind, gb, hb, bb, lam, c1, c2, rho, key, lo, hi, out)
    total = 0
    for b in range(nb):  # (the gather's offsets here: no numpy calls per iteration for them)
        offsets[b] = total
        total += counts[b]
    return total


@row_kernel(rows=1)
def closest_row(kind, n, g, h, buf, lam, c1, c2, rho, key):
    """The row minimising ``u_i / p_i`` over ``p_i > 0`` (lowest index on ties), or -1.

    Used when a draw comes out empty: that row came closest to being drawn, and for small
    ``p`` it is row ``i`` with probability close to ``p_i / sum(p)``.
    """
    nb = (n + BLOCK - 1) // BLOCK
    best = np.full(nb, np.inf)
    where = np.full(nb, -1, np.int64)
    for b in prange(nb):
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            p = _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)
            if p > 0.0:
                ratio = uniform(key, i) / p
                if ratio < best[b]:
                    best[b] = ratio
                    where[b] = i
    row = -1
    value = np.inf
    for b in range(nb):
        if where[b] >= 0 and best[b] < value:
            value = best[b]
            row = where[b]
    return row


@njit(cache=True, inline="always")
def _gather_block(kind, g, h, buf, lam, c1, c2, rho, rows, gsrc, hsrc, anchor, leaves, means, eta, fit,
                  out_idx, out_g, out_h):
    """:func:`gather` of the drawn ``rows`` of one block into the outputs' views from its offset."""
    for j in range(rows.shape[0]):
        i = np.uint64(rows[j])  # (an unsigned index: no wraparound test for negative ones)
        inv = 1.0 / _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)  # (p > 0: the row was drawn)
        out_idx[j] = i
        for k in range(out_g.shape[1]):
            gv = np.float64(gsrc[i, k])
            if fit == FIT_ANCHOR:
                gv = gv - anchor[i, k]
            elif fit == FIT_REGULARISED:
                gv = (gv - anchor[i, k]) + eta * means[k, leaves[i, k]]
            out_g[j, k] = gv * inv
            out_h[j, k] = np.float64(hsrc[i, k]) * inv


@row_kernel(rows=1, error_model="numpy")
def gather(kind, n, g, h, buf, lam, c1, c2, rho, scratch, counts, offsets, block,
           gsrc, hsrc, anchor, leaves, means, eta, fit, out_idx, out_g, out_h):
    """Write the drawn rows (``scratch``, ``counts`` per block of ``block`` rows) and their
    reweighted fitting gradients ``g~ / p``, ``hsrc / p`` at ``offsets``.

    ``fit`` picks the fitting gradient: ``gsrc``; ``gsrc - anchor``; or SecondOrder's
    ``gsrc - anchor + eta * means[k, leaves[i, k]]``.

    The usual case (one column, the plain gradient) runs the same code compiled where LLVM
    knows it, which lets the row loop vectorise; numpy's error model drops the division's
    zero check (no drawn row has ``p = 0``), which would keep it scalar.
    """
    plain_one = (fit == FIT_PLAIN and out_g.shape[1] == 1 and g.shape[1] == 1
                 and h.shape[1] == 1 and gsrc.shape[1] == 1 and hsrc.shape[1] == 1)
    for b in prange(counts.shape[0]):
        lo = b * block
        off = offsets[b]
        m = counts[b]
        rows = scratch[lo:lo + m]
        oi, og, oh = out_idx[off:off + m], out_g[off:off + m], out_h[off:off + m]
        if plain_one:
            _gather_block(kind, g, h, buf, lam, c1, c2, rho, rows, gsrc, hsrc, anchor, leaves, means, eta, FIT_PLAIN,
                          oi, og, oh)
        else:
            _gather_block(kind, g, h, buf, lam, c1, c2, rho, rows, gsrc, hsrc, anchor, leaves, means, eta, fit,
                          oi, og, oh)


@row_kernel(rows=0, axis=0)
def leaf_means(values, leaves, n_leaves):
    """``means[k, l]``: mean of ``values[:, k]`` over the rows with ``leaves[:, k] == l`` (0 if none)."""
    n, num_class = values.shape
    nb = (n + HIST_BLOCK - 1) // HIST_BLOCK
    sums = np.zeros((nb, num_class, n_leaves))
    counts = np.zeros((nb, num_class, n_leaves), np.int64)
    for b in prange(nb):
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            for k in range(num_class):
                leaf = leaves[i, k]
                sums[b, k, leaf] += values[i, k]
                counts[b, k, leaf] += 1
    total = _columns_in_order(sums.reshape(nb, num_class * n_leaves))
    count = _columns_in_order(counts.reshape(nb, num_class * n_leaves))
    means = np.empty(num_class * n_leaves)
    for j in range(means.shape[0]):
        means[j] = total[j] / max(count[j], 1)
    return means.reshape(num_class, n_leaves)
