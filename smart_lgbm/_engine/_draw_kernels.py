"""Numba kernel of :func:`smart_lgbm._engine.draw.check_sample`'s common case, in one pass.

Every iteration's sample is checked (sorted, unique and in range indices; finite gradients
and hessians).  With numpy that is four vectorised passes, each with its temporary array
(``idx[1:] <= idx[:-1]``, ``np.isfinite`` of the gradients and of the hessians) and its
reduction: tens of microseconds on a sample of 40,000 rows, every iteration.  For the
built-in samplers' output (int32 indices, float32 ``(m,)`` gradients and hessians) this
kernel answers the same question in one compiled pass with no temporary; anything else,
and any sample it does not pass, goes through the numpy checks, which raise the messages.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def plain_sample(indices, n, grad, hess):
    """Whether ``indices`` (int32, at least one) strictly increase within ``[0, n)`` and every
    value of ``grad`` and ``hess`` (float32, one dimension, as long) is finite.

    Counts without an early exit, so that the loops vectorise; a float32 that is finite is
    within float32's range, which is all :func:`smart_lgbm._engine.draw.check_sample` asks of it.
    """
    m = indices.shape[0]
    bad = 0
    for i in range(1, m):
        bad += indices[i] <= indices[i - 1]
    if bad or indices[0] < 0 or indices[m - 1] >= n:
        return False
    for i in range(grad.shape[0]):
        bad += not np.isfinite(grad[i])
        bad += not np.isfinite(hess[i])
    return bad == 0


# ---------------------------------------------------------------- the draw's key
# numpy's SeedSequence (pool of 4 uint32 words) and PCG64 (XSL-RR, 128-bit LCG), as
# numpy 1.17+ defines them: ``draw_key`` is the first ``random_raw()`` of
# ``PCG64(SeedSequence(entropy, spawn_key))``, bit for bit (tests/test_iteration.py checks it
# against numpy on thousands of seeds, iterations and streams).

_M32 = np.uint64(0xFFFFFFFF)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_SHIFT = np.uint64(16)
#: PCG's default 128-bit multiplier, high and low words
_PCG_HI, _PCG_LO = np.uint64(2549297995355413924), np.uint64(4865540595714422341)


@njit(cache=True, inline="always")
def _hashmix(value, h):
    """SeedSequence's ``hashmix``: ``(mixed value, next hash constant)``, uint32 in uint64."""
    value = (value ^ h) & _M32
    h = (h * _MULT_A) & _M32
    value = (value * h) & _M32
    return value ^ (value >> _SHIFT), h


@njit(cache=True, inline="always")
def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> _SHIFT)


@njit(cache=True, inline="always")
def _mul_wide(a, b):
    """``(high, low)`` 64-bit words of the 128-bit product ``a * b``."""
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    a0, a1, b0, b1 = a & m, a >> s, b & m, b >> s
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & m) + (p10 & m)
    return p11 + (p01 >> s) + (p10 >> s) + (mid >> s), (p00 & m) | ((mid & m) << s)


@njit(cache=True, inline="always")
def _add128(ahi, alo, bhi, blo):
    lo = alo + blo
    return ahi + bhi + (np.uint64(1) if lo < alo else np.uint64(0)), lo


@njit(cache=True, inline="always")
def _pcg_step(shi, slo, ihi, ilo):
    """One step of the 128-bit LCG: ``state * multiplier + inc`` modulo 2**128."""
    hi, lo = _mul_wide(slo, _PCG_LO)
    hi = hi + slo * _PCG_HI + shi * _PCG_LO
    return _add128(hi, lo, ihi, ilo)


@njit(cache=True)
def draw_key(words, n_words):
    """The first 64-bit output of numpy's ``PCG64(SeedSequence(...))`` whose assembled
    entropy is ``words[:n_words]`` (uint32 values held in uint64; see
    :func:`smart_lgbm._engine.draw.draw_key`)."""
    pool = np.zeros(4, np.uint64)
    h = _INIT_A
    for i in range(4):
        pool[i], h = _hashmix(words[i] if i < n_words else np.uint64(0), h)
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                v, h = _hashmix(pool[i_src], h)
                pool[i_dst] = _mix(pool[i_dst], v)
    for i_src in range(4, n_words):
        for i_dst in range(4):
            v, h = _hashmix(words[i_src], h)
            pool[i_dst] = _mix(pool[i_dst], v)
    # generate_state(4, uint64): 8 uint32 words, paired little-endian into 4 uint64
    state = np.zeros(8, np.uint64)
    hb = _INIT_B
    for i in range(8):
        v = (pool[i % 4] ^ hb) & _M32
        hb = (hb * _MULT_B) & _M32
        v = (v * hb) & _M32
        state[i] = v ^ (v >> _SHIFT)
    s = np.uint64(32)
    seed_hi, seed_lo = state[0] | (state[1] << s), state[2] | (state[3] << s)
    seq_hi, seq_lo = state[4] | (state[5] << s), state[6] | (state[7] << s)
    # PCG64's seeding (pcg64_srandom_r): inc = (initseq << 1) | 1; step; state += initstate; step
    one = np.uint64(1)
    ihi, ilo = (seq_hi << one) | (seq_lo >> np.uint64(63)), (seq_lo << one) | one
    shi, slo = _pcg_step(np.uint64(0), np.uint64(0), ihi, ilo)
    shi, slo = _add128(shi, slo, seed_hi, seed_lo)
    shi, slo = _pcg_step(shi, slo, ihi, ilo)
    # random_raw: one step, then the XSL-RR output of the new state
    shi, slo = _pcg_step(shi, slo, ihi, ilo)
    x = shi ^ slo
    rot = shi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
