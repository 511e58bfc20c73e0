"""Numba kernels behind the built-in samplers: importance, rate solve, draw, gather, trimming.

Private module: the functions trust their inputs (validated by :mod:`.compiled`) and run
without bounds checks.

Conventions shared by every kernel:

* ``g`` and ``h`` are C-contiguous ``(n, K)`` arrays of one float dtype (float32 from the
  engine, float64 from user code); ``n`` is passed explicitly, so kernels that read a
  float64 importance buffer ``buf`` instead can take empty ``(0, 1)`` arrays for them.
* ``kind`` selects the importance ``s_i`` a kernel recomputes from the row on the fly (no
  n-sized importance array is kept; the kernels receive it as its marker, see
  :func:`_score_of_kind`): ``FIRST`` ``|g_i|`` (Euclidean norm over K),
  ``SECOND`` ``sum_k h_ik``, ``MVS`` ``sqrt(|g_i|^2 + lam |h_i|^2)``, ``BUFFER``
  ``buf[i]``, ``CONST`` 1.
* ``p_i = min(1, rho * t_i)`` with ``t_i = (s_i * c1) * c2``: ``c1 * c2`` is a power of two
  that brings the largest importance into [0.5, 1), which makes the rate solve scale-free
  (exact for power-of-two scalings); with a fixed ``rho`` both factors are 1.
* Floating-point reductions run over a fixed partition of the rows (``BLOCK`` or
  ``HIST_BLOCK`` rows per block, independent of the thread count), each block summed in row
  order and the blocks combined in block order: results are bit-identical for any number
  of threads.
* The all-rows kernels are serial over a range of blocks ``[b0, b1)`` and release the GIL;
  their fronts (:mod:`.compiled`) allocate the per-block outputs and run the blocks on
  threads (:func:`smart_lgbm._threads.for_blocks`).  ``kind`` arrives as its marker
  (``compiled.KIND_MARKERS``): a kernel is compiled once for each importance kind it is
  used with, and only that kind's code.
* Randomness is counter-based: row ``i``'s uniform is SplitMix64's output for ``key`` and
  counter ``i + 1`` (:func:`uniform`), so a draw depends on ``(key, i, p_i)`` only.
"""

from __future__ import annotations

import math

import numpy as np
from numba import errors, njit
from numba.np.numpy_support import from_dtype
from numba.extending import overload

from .compiled import BLOCK, BUFFER, CONST, FIRST, FIT_ANCHOR, FIT_REGULARISED, KIND_MARKERS, MVS, SECOND
#: Rows per block of the histogram kernels (their per-block tables are larger).
HIST_BLOCK = 65536

#: Rate-solve histogram: OCTAVES octaves below the largest importance, SUB buckets each;
#: bucket 0 holds the largest t, index NBUCKET everything below 2**-OCTAVES.
OCTAVES = 64
SUB = 32
NBUCKET = OCTAVES * SUB
#: Bits of the trimming key resolved per histogram pass.
DIGIT_BITS = 12

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_M53 = 1.0 / 9007199254740992.0


@njit(cache=True, inline="always")
def uniform(key, i):
    """Row ``i``'s uniform in [0, 1): SplitMix64 at counter ``i + 1`` from state ``key`` (53 bits)."""
    z = key + np.uint64(i + 1) * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TWO_POW_M53


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


def _score(kind, g, h, buf, lam, i):  # pragma: no cover - compiled code calls the overload below
    """Row ``i``'s importance of kind ``kind`` (module notes); ``kind`` is its marker."""
    raise NotImplementedError


# The importance of each kind as the kernels compute it (``_score``).  (The overload
# below is not inlined at numba's level: inlined, its loops tripped numba's SSA checks.
# LLVM inlines it: the kernels' code calls no importance function.)
def _first_of(kind, g, h, buf, lam, i):
    num_class = g.shape[1]
    if num_class == 1:
        return abs(np.float64(g[i, 0]))
    acc = 0.0
    for k in range(num_class):
        v = np.float64(g[i, k])
        acc += v * v
    return math.sqrt(acc)


def _second_of(kind, g, h, buf, lam, i):  # _row_weight's sum, in column order
    acc = np.float64(h[i, 0])
    for k in range(1, h.shape[1]):
        acc += np.float64(h[i, k])
    return acc


def _mvs_of(kind, g, h, buf, lam, i):  # _squares's sums
    gg = 0.0
    hh = 0.0
    for k in range(g.shape[1]):
        gv = np.float64(g[i, k])
        hv = np.float64(h[i, k])
        gg += gv * gv
        hh += hv * hv
    return math.sqrt(gg + lam * hh)


def _buffer_of(kind, g, h, buf, lam, i):
    return buf[i]


def _const_of(kind, g, h, buf, lam, i):
    return 1.0


_KIND_OF_MARKER = {from_dtype(marker.dtype): kind for kind, marker in KIND_MARKERS.items()}
_SCORES = {kind: njit(cache=True, inline="always")(fn) for kind, fn in
           ((FIRST, _first_of), (SECOND, _second_of), (MVS, _mvs_of), (BUFFER, _buffer_of), (CONST, _const_of))}
#: FirstOrder's and SecondOrder's importances, for the fused pass (:mod:`smart_lgbm._fused_kernels`) too.
_first, _second = _SCORES[FIRST], _SCORES[SECOND]


@overload(_score)
def _score_of_kind(kind, g, h, buf, lam, i):
    """Only the code of the kernel's own ``kind`` is compiled: the kernels receive the kind
    as its marker (``compiled.KIND_MARKERS``, a zero-length array whose dtype names the
    kind), so numba compiles each kernel once per kind it is used with (a run's sampler
    uses one or two), a type like any other (cached, dispatched as fast), and only that
    kind's code, not every kind's branch."""
    kind_of = _KIND_OF_MARKER.get(getattr(kind, "dtype", None))
    if kind_of is None:
        raise errors.TypingError(f"_score needs a kind marker (compiled.KIND_MARKERS), got {kind}")
    score = _SCORES[kind_of]

    def impl(kind, g, h, buf, lam, i):
        return score(kind, g, h, buf, lam, i)

    return impl


@njit(cache=True, inline="always")
def _prob(s, c1, c2, rho):
    t = (s * c1) * c2
    if t <= 0.0:
        return 0.0
    p = rho * t
    return 1.0 if p >= 1.0 else p


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
    g_sum = 0.0
    h_sum = 0.0
    for b in range(sums.shape[0]):
        g_sum += sums[b, 0]
        h_sum += sums[b, 1]
    return g_sum, h_sum


@njit(nogil=True, cache=True)
def norm_sums(b0, b1, n, g, h, sums):
    """Blocks ``[b0, b1)`` of ``sums[b] = (sum |g_i|, sum |h_i|)`` (Euclidean norms over K)
    for MVS's automatic lambda, each ``BLOCK`` of rows summed in row order (the fused pass,
    :mod:`smart_lgbm._fused_kernels`, forms the same per-block sums)."""
    for b in range(b0, b1):
        ga = 0.0
        ha = 0.0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            a, c = norm_row(g, h, i)
            ga += a
            ha += c
        sums[b, 0] = ga
        sums[b, 1] = ha


@njit(cache=True, inline="always")
def scan_row(s, mx, pos, bad, acc):
    """One importance ``s`` into a block's ``(largest, positives, bad, plain sum)``.

    Branch-free; adding 0.0 leaves the sum's bits as they were."""
    ok = s > 0.0 and not math.isinf(s)
    return (max(mx, s if ok else 0.0), pos + np.int64(ok), bad + np.int64(not ok and s != 0.0),
            acc + (s if ok else 0.0))


@njit(nogil=True, cache=True)
def scan(b0, b1, kind, n, g, h, buf, lam, want_sum, plain, bmax, bpos, bbad, bexp, bsum):
    """One pass over the importances of blocks ``[b0, b1)``: each block's largest
    importance, positive and bad (NaN, infinite or negative) counts, and (if ``want_sum``)
    its sum, scaled by ``2**-bexp[b]``; :func:`smart_lgbm.samplers.compiled.scan_totals`
    combines them.

    Each block scales its own sum by its own largest power of two, so no sum overflows or
    loses bits to underflow whatever the scale of the importances; with ``plain`` (the
    importances are float32 values, or sums or norms of a few: their float64 sum can neither
    overflow nor lose them to underflow) each block sums in the same pass instead.
    """
    for b in range(b0, b1):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        mx = 0.0
        pos = 0
        bad = 0
        acc = 0.0
        for i in range(lo, hi):
            mx, pos, bad, acc = scan_row(_score(kind, g, h, buf, lam, i), mx, pos, bad, acc)
        bmax[b] = mx
        bpos[b] = pos
        bbad[b] = bad
        if plain:
            bsum[b] = acc  # exponent 0: scaled by the global exponent below
        elif want_sum and mx > 0.0 and bad == 0:
            e = math.frexp(mx)[1]
            c1, c2 = pow2_pair(-e)
            acc = 0.0
            for i in range(lo, hi):
                s = _score(kind, g, h, buf, lam, i)
                if s > 0.0:
                    acc += (s * c1) * c2
            bexp[b] = e
            bsum[b] = acc


@njit(cache=True, inline="always")
def _bucket(t):
    """Histogram bucket of ``0 < t < 1``: 0 for the largest values, NBUCKET below 2**-OCTAVES."""
    m, e = math.frexp(t)
    octave = -e
    if octave >= OCTAVES:
        return NBUCKET
    sub = int((m - 0.5) * (2 * SUB))
    return octave * SUB + (SUB - 1 - sub)


@njit(cache=True)
def bucket_edges(j):
    """``(lower, upper)`` edge of the values bucket ``j < NBUCKET`` holds."""
    octave = j // SUB
    sub = SUB - 1 - j % SUB
    scale = math.ldexp(1.0, -octave)
    return (0.5 + sub / (2.0 * SUB)) * scale, (0.5 + (sub + 1) / (2.0 * SUB)) * scale


@njit(nogil=True, cache=True)
def scaled_histogram(b0, b1, kind, n, g, h, buf, lam, c1, c2, cnt, sm):
    """Count and sum of the scaled importances ``t`` per bucket (see :func:`_bucket`), per
    block of ``HIST_BLOCK`` rows ``[b0, b1)`` into zeroed ``cnt[b]``, ``sm[b]``."""
    for b in range(b0, b1):
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            if t > 0.0:  # (a positive importance 2**1074 times below the largest underflows to 0)
                j = _bucket(t)
                cnt[b, j] += 1
                sm[b, j] += t


@njit(cache=True)
def bracket(count, total, m):
    """Newton start for ``sum_i min(1, rho t_i) = m`` from the bucket histogram.

    Walks the buckets from the largest values down to the first whose lower edge ``v``
    gives ``f(1/v) >= m``: the solution's threshold ``1/rho`` lies in that bucket, every
    bucket above is capped, every bucket below is free.  Returns ``(rho, capped, free_sum,
    exact)``: ``rho`` solves the equation if none of that bucket's rows is capped, which
    ``exact`` confirms when ``rho`` times the bucket's upper edge is at most 1; otherwise
    ``rho`` is a start from below for Newton's iteration (``capped``/``free_sum`` are the
    count and sum behind it).
    """
    below = np.zeros(NBUCKET + 2)
    for j in range(NBUCKET, -1, -1):
        below[j] = below[j + 1] + total[j]
    capped = 0
    for j in range(NBUCKET):
        if count[j] == 0:
            continue
        lower, upper = bucket_edges(j)
        if capped + count[j] + below[j + 1] / lower >= m:
            free_sum = below[j]  # > 0: bucket j holds positive values
            rho = (m - capped) / free_sum
            return rho, capped, free_sum, rho * upper <= 1.0
        capped += count[j]
    free_sum = below[NBUCKET]
    if free_sum <= 0.0:  # (rounding only) no bracket: the caller falls back to sorting
        return np.nan, capped, free_sum, False
    return (m - capped) / free_sum, capped, free_sum, False


@njit(nogil=True, cache=True)
def cap_round(b0, b1, kind, n, g, h, buf, lam, c1, c2, rho, bcap, bsum):
    """Per block ``[b0, b1)`` at ``rho``: ``bcap[b]`` rows with ``rho t >= 1`` and ``bsum[b]``
    the sum of the other ``t``."""
    for b in range(b0, b1):
        count = 0
        acc = 0.0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            # branch-free (whether a row is capped is close to random): adding 0.0 leaves
            # the sum's bits as they were
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            capped = rho * t >= 1.0  # (t = 0 is never capped: rho is finite here)
            count += np.int64(capped)
            acc += 0.0 if capped else t
        bcap[b] = count
        bsum[b] = acc


@njit(cache=True)
def sorted_rho(kind, n, g, h, buf, lam, c1, c2, m):
    """Exact rate solve by sorting (O(n log n)): the fallback for pathological spectra."""
    t = np.empty(n)
    n_pos = 0
    for i in range(n):
        ti = (_score(kind, g, h, buf, lam, i) * c1) * c2
        if ti > 0.0:
            t[n_pos] = ti
            n_pos += 1
    t = np.sort(t[:n_pos])  # ascending
    prefix = np.zeros(n_pos + 1)
    for j in range(n_pos):
        prefix[j + 1] = prefix[j] + t[j]
    best = m / prefix[n_pos]
    for k in range(n_pos):  # k largest rows capped, the n_pos - k smallest free
        free = n_pos - k
        rho = (m - k) / prefix[free]
        if rho <= 0.0:
            break
        best = rho
        if rho * t[free - 1] <= 1.0 and (k == 0 or rho * t[free] >= 1.0):
            return rho
    return best


@njit(nogil=True, cache=True)
def probabilities(b0, b1, kind, n, g, h, buf, lam, c1, c2, rho, out):
    """``p_i`` of the rows of blocks ``[b0, b1)`` into ``out`` (for the public ``probabilities`` methods)."""
    for i in range(b0 * BLOCK, min(n, b1 * BLOCK)):
        out[i] = _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)


@njit(nogil=True, cache=True)
def draw(b0, b1, kind, n, g, h, buf, lam, c1, c2, rho, key, scratch, counts):
    """Bernoulli draw of blocks ``[b0, b1)``: block ``b``'s drawn rows go, in order, to
    ``scratch[b * BLOCK:]``, their number to ``counts[b]``.

    Each block reads views of its own rows indexed from 0 (indexed from the block's first
    row the loop ran slower: development run, 1M rows, one thread).
    """
    for b in range(b0, b1):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb = g[lo:hi] if g.shape[0] > 0 else g
        hb = h[lo:hi] if h.shape[0] > 0 else h
        bb = buf[lo:hi] if buf.shape[0] > 0 else buf  # (a BUFFER importance: n values)
        out = scratch[lo:hi]
        c = 0
        for j in range(hi - lo):
            # branch-free (drawn or not is random): row lo + j is written at the next slot
            # either way and kept when drawn
            p = _prob(_score(kind, gb, hb, bb, lam, j), c1, c2, rho)
            drawn = p > 0.0 and (p >= 1.0 or uniform(key, lo + j) < p)
            out[c] = lo + j
            c += np.int64(drawn)
        counts[b] = c


@njit(nogil=True, cache=True)
def closest_row(b0, b1, kind, n, g, h, buf, lam, c1, c2, rho, key, best, where):
    """Per block ``[b0, b1)``: the row minimising ``u_i / p_i`` over ``p_i > 0`` (lowest
    index on ties) into ``where[b]`` (left at -1 if none), its ratio into ``best[b]``
    (``inf`` on entry).

    Used when a draw comes out empty: that row came closest to being drawn, and for small
    ``p`` it is row ``i`` with probability close to ``p_i / sum(p)``.
    """
    for b in range(b0, b1):
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            p = _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)
            if p > 0.0:
                ratio = uniform(key, i) / p
                if ratio < best[b]:
                    best[b] = ratio
                    where[b] = i


@njit(nogil=True, cache=True)
def gather(b0, b1, kind, n, g, h, buf, lam, c1, c2, rho, scratch, counts, offsets, block,
           gsrc, hsrc, anchor, leaves, means, eta, fit, out_idx, out_g, out_h):
    """Write the drawn rows of blocks ``[b0, b1)`` (``scratch``, ``counts`` per block of
    ``block`` rows) and their reweighted fitting gradients ``g~ / p``, ``hsrc / p`` at ``offsets``.

    ``fit`` picks the fitting gradient: ``gsrc``; ``gsrc - anchor``; or SecondOrder's
    ``gsrc - anchor + eta * means[k, leaves[i, k]]``.
    """
    num_class = out_g.shape[1]
    for b in range(b0, b1):
        lo = b * block
        off = offsets[b]
        for j in range(counts[b]):
            i = scratch[lo + j]
            inv = 1.0 / _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)
            out_idx[off + j] = i
            for k in range(num_class):
                gv = np.float64(gsrc[i, k])
                if fit == FIT_ANCHOR:
                    gv = gv - anchor[i, k]
                elif fit == FIT_REGULARISED:
                    gv = (gv - anchor[i, k]) + eta * means[k, leaves[i, k]]
                out_g[off + j, k] = gv * inv
                out_h[off + j, k] = np.float64(hsrc[i, k]) * inv


@njit(nogil=True, cache=True)
def leaf_sums(b0, b1, values, leaves, sums, counts):
    """Per block of ``HIST_BLOCK`` rows ``[b0, b1)``: ``sums[b, k, l]`` of ``values[:, k]``
    and ``counts[b, k, l]`` over the rows with ``leaves[:, k] == l`` (zeroed on entry)."""
    n, num_class = values.shape
    for b in range(b0, b1):
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            for k in range(num_class):
                leaf = leaves[i, k]
                sums[b, k, leaf] += values[i, k]
                counts[b, k, leaf] += 1


# ---------------------------------------------------------------- weight trimming


@njit(cache=True, inline="always")
def _key(w, cell, cell_bits):
    """The bit pattern of ``w >= 0`` as int64: ordered exactly like the values."""
    cell[0] = w
    return cell_bits[0]


@njit(nogil=True, cache=True)
def trim_histogram(b0, b1, n, h, shift_hi, prefix, shift_lo, cells, cell_bits, cnt, sm, bmin, bmax, bbad):
    """Histogram of the weights ``w_i = sum_k h_ik`` whose key has ``key >> shift_hi == prefix``,
    by the key bits ``[shift_lo, shift_hi)``, per block of ``HIST_BLOCK`` rows ``[b0, b1)``.

    Per block ``b`` (arrays zeroed, ``bmin`` at the largest int64 and ``bmax`` at -1 on
    entry): per digit the number of rows ``cnt[b]`` and the sum of their weights ``sm[b]``,
    the smallest and largest key in range, and the number of NaN, infinite or negative
    weights.  ``cells`` (float64, one per block) and ``cell_bits`` (its int64 view) turn a
    weight into its bit pattern.
    """
    mask = (1 << (shift_hi - shift_lo)) - 1
    for b in range(b0, b1):
        cell = cells[b:b + 1]
        bits = cell_bits[b:b + 1]
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            w = _row_weight(h, i)
            if not (w >= 0.0 and not math.isinf(w)):
                bbad[b] += 1
                continue
            key = _key(w, cell, bits)
            if (key >> shift_hi) != prefix:
                continue
            d = (key >> shift_lo) & mask
            cnt[b, d] += 1
            sm[b, d] += w
            bmin[b] = min(bmin[b], key)
            bmax[b] = max(bmax[b], key)


@njit(nogil=True, cache=True)
def trim_counts(b0, b1, n, h, tau, cells, cell_bits, less, ties):
    """Per block of ``BLOCK`` rows ``[b0, b1)``: how many weights have key below ``tau``
    (``less[b]``) and equal to it (``ties[b]``), both zeroed on entry."""
    for b in range(b0, b1):
        cell = cells[b:b + 1]
        bits = cell_bits[b:b + 1]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, bits)
            if key < tau:
                less[b] += 1
            elif key == tau:
                ties[b] += 1


@njit(nogil=True, cache=True)
def trim_gather(b0, b1, n, g, h, tau, n_tied_drop, tie_start, offsets, cells, cell_bits, out_idx, out_g, out_h):
    """Keep the rows of blocks ``[b0, b1)`` with key above ``tau`` and those with key ``tau``
    from the ``n_tied_drop``-th on (ties in row order; ``tie_start[b]`` ties precede block ``b``)."""
    num_class = g.shape[1]
    for b in range(b0, b1):
        cell = cells[b:b + 1]
        bits = cell_bits[b:b + 1]
        rank = tie_start[b]
        at = offsets[b]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, bits)
            if key < tau:
                continue
            if key == tau:
                rank += 1
                if rank <= n_tied_drop:
                    continue
            out_idx[at] = i
            for k in range(num_class):
                out_g[at, k] = g[i, k]
                out_h[at, k] = h[i, k]
            at += 1
