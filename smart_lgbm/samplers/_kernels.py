"""Numba kernels behind the built-in samplers: importance, rate solve, draw, gather, trimming.

Private module: the functions trust their inputs (validated by :mod:`.compiled`) and run
without bounds checks.

Conventions shared by every kernel:

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
* Randomness is counter-based: row ``i``'s uniform is SplitMix64's output for ``key`` and
  counter ``i + 1`` (:func:`uniform`), so a draw depends on ``(key, i, p_i)`` only: row
  ``i`` is drawn when ``u_i < p_i``.
* Row loops that should vectorise keep their row-to-row dependences out of the loop: the
  draw forms a bit mask of 64 rows' outcomes in one loop and writes the drawn rows from the
  mask in another (:func:`draw`); kernels over ``(n, K)`` arrays run the ``K = 1`` case as
  the same code under a test of ``K == 1`` (LLVM then drops the loops over the columns, which
  keep a row loop from vectorising); and block loops index views from 0
  (:func:`_block_rows`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from llvmlite import ir
from numba import config, errors, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.numpy_support import from_dtype

from .._numba.row_kernel import row_kernel

from .compiled import BLOCK, BUFFER, CONST, FIRST, FIT_ANCHOR, FIT_PLAIN, FIT_REGULARISED, KIND_MARKERS, SECOND
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
    marker (``compiled.KIND_MARKERS``, a zero-length array whose dtype names the kind): a
    kernel compiles once per kind a run uses (one or two), a type cached and dispatched
    like any other, instead of every kind's branch.  Inlined into the row loop at numba's
    IR level (``inline="always"``): as a call per row it kept MVS's square roots from
    vectorising, and MVS's rate solve, draw and gather ran 2.5x slower than the old int
    kernel (400k rows).  (A run-time int kind is :func:`_any_kind`'s, which the fused pass
    calls directly.)"""
    kind_of = _KIND_OF_MARKER.get(getattr(kind, "dtype", None))
    if kind_of is None:
        raise errors.TypingError(f"_score needs a kind marker (compiled.KIND_MARKERS), got {kind}")
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
    :mod:`smart_lgbm._fused_kernels`, forms the same per-block sums)."""
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
    fast: it has no ``isinf`` test and no selects in the sum's serial chain (development
    run, 1.2M float32 rows, 2 threads: 0.39 against 0.87 ms).
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


@row_kernel(rows=1)
def scan(kind, n, g, h, buf, lam, want_sum, plain, bmax, bpos, bbad, bexp, bsum):
    """One pass over the importances.

    Returns ``(smax, n_pos, n_bad, exponent, total)``: the largest importance, how many are
    positive, how many are NaN, infinite or negative, the exponent ``e`` with
    ``smax = f * 2**e``, ``f`` in [0.5, 1), and (if ``want_sum``) ``sum_i s_i * 2**-e``.
    Each block scales its own sum by its own largest power of two, so no sum overflows or
    loses bits to underflow whatever the scale of the importances; with ``plain`` (the
    importances are float32 values, or sums or norms of a few: their float64 sum can neither
    overflow nor lose them to underflow) each block sums in the same pass instead.

    ``bmax``, ``bpos``, ``bbad``, ``bexp``, ``bsum``: the per-block values, one entry per
    ``BLOCK`` rows, zeroed by the caller (:func:`smart_lgbm.samplers.compiled.scan_blocks`).
    No kernel of a first binary run allocates: numba compiles its ``np.zeros``/``np.empty``
    implementations once per process, a few tenths of a second of the first call.
    """
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
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
    return scan_totals(bmax, bpos, bbad, bexp, bsum, want_sum)


@njit(cache=True, inline="always")
def _block_rows(g, h, buf, lo, hi):
    """Views of rows ``lo:hi`` of ``g``, ``h`` and ``buf`` (an empty array stays whole: a kind
    that does not read it).  The block loops index these from 0: indexed from the block's
    first row they ran slower (development run, 1M rows, one thread)."""
    gb = g[lo:hi] if g.shape[0] > 0 else g
    hb = h[lo:hi] if h.shape[0] > 0 else h
    bb = buf[lo:hi] if buf.shape[0] > 0 else buf
    return gb, hb, bb


@row_kernel(rows=1)
def scan_store(kind, n, g, h, buf, lam, want_sum, bmax, bpos, bbad, bexp, bsum, out,
               lo_s, hi_s, scratch, counts, babove, bbelow):
    """:func:`scan` of importances it may sum plainly, storing each ``s_i`` in ``out``.

    The rate solve's later passes (histogram, capping rounds, draw, gather) then read
    ``out`` as a BUFFER importance, the same doubles, instead of recomputing them: MVS's
    square roots once per iteration instead of once per pass.  Each block computes its
    importances first (a loop free of the sum's serial chain) and then scans them from
    cache, in row order as :func:`scan` does.

    With ``lo_s < hi_s`` each block then also does :func:`window_rows`'s work on the
    importances in cache (``scratch``, ``counts``, ``babove``, ``bbelow``, per block; the
    window in the importances' own units): the first pass of the rate solve from a guess,
    without a pass of its own.
    """
    nb = (n + BLOCK - 1) // BLOCK
    windowed = lo_s < hi_s
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb, hb, bb = _block_rows(g, h, buf, lo, hi)
        ob = out[lo:hi]
        for j in range(hi - lo):
            ob[j] = _score(kind, gb, hb, bb, lam, j)
        mx, pos, bad, acc = scan_values(ob, False)
        bmax[b] = mx
        bpos[b] = pos
        bbad[b] = bad
        bsum[b] = acc  # exponent 0: scaled by the global exponent below
        if windowed:
            ws = scratch[lo:hi]
            c = 0
            over = 0
            under = 0.0
            for j in range(hi - lo):
                v = ob[j]
                ws[c] = lo + j  # (branch-free, as in draw: kept when inside)
                c += np.int64(v >= lo_s and v < hi_s)
                over += np.int64(v >= hi_s)
                under += v if v < lo_s else 0.0
            counts[b] = c
            babove[b] = over
            bbelow[b] = under
    return scan_totals(bmax, bpos, bbad, bexp, bsum, want_sum)


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


@row_kernel(rows=1)
def scaled_histogram(kind, n, g, h, buf, lam, c1, c2):
    """Count and sum of the scaled importances ``t`` per bucket (see :func:`_bucket`)."""
    nb = (n + HIST_BLOCK - 1) // HIST_BLOCK
    cnt = np.zeros((nb, NBUCKET + 1), np.int64)
    sm = np.zeros((nb, NBUCKET + 1))
    for b in prange(nb):
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            if t > 0.0:  # (a positive importance 2**1074 times below the largest underflows to 0)
                j = _bucket(t)
                cnt[b, j] += 1
                sm[b, j] += t
    return _columns_in_order(cnt), _columns_in_order(sm)


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


@row_kernel(rows=1)
def cap_round(kind, n, g, h, buf, lam, c1, c2, rho, bcap, bsum, blow, bhigh):
    """``(capped, free_sum, lowest_capped, highest_free)`` at ``rho``: how many rows have
    ``rho t >= 1``, the sum of the other ``t``, the smallest capped ``t`` (``inf`` if none)
    and the largest free ``t`` (0 if none).

    The two bounds tell whether the capped set is the one of another ``rho``: it is exactly
    when that ``rho`` caps the lowest and leaves the highest free (``rho t`` grows with ``t``).
    ``bcap`` (int64), ``bsum``, ``blow`` and ``bhigh`` (float64), one entry per ``BLOCK`` rows:
    the per-block values, written here (the caller allocates them: see :func:`scan`)."""
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        count = 0
        acc = 0.0
        lowest = np.inf
        highest = 0.0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            # branch-free (whether a row is capped is close to random): adding 0.0 leaves
            # the sum's bits as they were
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            capped = rho * t >= 1.0  # (t = 0 is never capped: rho is finite here)
            count += np.int64(capped)
            acc += 0.0 if capped else t
            lowest = min(lowest, t if capped else np.inf)
            highest = max(highest, 0.0 if capped else t)
        bcap[b] = count
        bsum[b] = acc
        blow[b] = lowest
        bhigh[b] = highest
    capped = np.int64(0)
    free_sum = 0.0
    low = np.inf
    high = 0.0
    for b in range(nb):  # in block order, as _columns_in_order adds them
        capped += bcap[b]
        free_sum += bsum[b]
        low = min(low, blow[b])
        high = max(high, bhigh[b])
    return capped, free_sum, low, high


@row_kernel(rows=1)
def window_rows(kind, n, g, h, buf, lam, c1, c2, lo_t, hi_t, scratch, counts, babove, bbelow):
    """``(above, below)``: how many rows have ``t >= hi_t`` and the sum of the ``t`` under
    ``lo_t``; the rows in between (the window) go, in order, to ``scratch[b * BLOCK:]``, their
    number per block to ``counts``.

    The first pass of the rate solve from a guess (``compiled._settle_from_guess``): the
    window around the guess's threshold holds the root's threshold when the guess is close,
    and the root is then found on the window's rows alone.  Only where the window
    holds it: the sums here are a guide, the answer comes from :func:`cap_round`'s sums.
    """
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb, hb, bb = _block_rows(g, h, buf, lo, hi)
        out = scratch[lo:hi]
        c = 0
        over = 0
        under = 0.0
        for j in range(hi - lo):
            t = (_score(kind, gb, hb, bb, lam, j) * c1) * c2
            inside = t >= lo_t and t < hi_t
            out[c] = lo + j  # (branch-free, as in draw: kept when inside)
            c += np.int64(inside)
            over += np.int64(t >= hi_t)
            under += t if t < lo_t else 0.0
        counts[b] = c
        babove[b] = over
        bbelow[b] = under
    above = np.int64(0)
    below = 0.0
    for b in range(nb):
        above += babove[b]
        below += bbelow[b]
    return above, below


@njit(cache=True)
def window_root(kind, n, g, h, buf, lam, c1, c2, scratch, counts, block, above, below, m, guess, max_rounds):
    """The root of ``sum_i min(1, rho t_i) = m`` on the window :func:`window_rows` gathered
    (every row above it capped, every row below it free), by Newton's iteration from
    ``guess``; NaN when it does not settle in ``max_rounds`` (the caller checks that its
    threshold ``1/rho`` lies inside the window)."""
    w = 0
    for b in range(counts.shape[0]):
        w += counts[b]
    t = np.empty(w)
    at = 0
    for b in range(counts.shape[0]):
        for j in range(counts[b]):
            v = (_score(kind, g, h, buf, lam, scratch[b * block + j]) * c1) * c2
            t[at] = v
            at += 1
    rho = guess
    previous = np.int64(-1)
    for _ in range(max_rounds):
        capped = above
        free_sum = below
        for j in range(w):
            v = t[j]
            if rho * v >= 1.0:
                capped += 1
            else:
                free_sum += v
        if capped == previous:
            return rho
        if capped >= m or free_sum <= 0.0:
            return np.nan
        previous = capped
        rho = (m - capped) / free_sum
    return np.nan


@njit(cache=True)
def same_bucket(a, b):
    """Whether ``0 < a, b < 1`` fall in one bucket of the rate solve's histogram."""
    return _bucket(a) == _bucket(b)


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


@row_kernel(rows=1)
def probabilities(kind, n, g, h, buf, lam, c1, c2, rho, out):
    """``p_i`` of every row into ``out`` (for the public ``probabilities`` methods)."""
    for i in prange(n):
        out[i] = _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)


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
    the next slots (a walk over the drawn rows only).  The row loop that did both at once
    (``out[c] = row; c += drawn``) stayed scalar (``scripts/profile_engine_parts.py``, higgs-like:
    the fused rate solve, draw and gather 5.45 ms in session 25's run, 2.89 ms in session 26's).
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


# ---------------------------------------------------------------- weight trimming


@njit(cache=True, inline="always")
def _key(w, cell, cell_bits):
    """The bit pattern of ``w >= 0`` as int64: ordered exactly like the values."""
    cell[0] = w
    return cell_bits[0]


@row_kernel(rows=0)
def trim_histogram(n, h, shift_hi, prefix, shift_lo):
    """Histogram of the weights ``w_i = sum_k h_ik`` whose key has ``key >> shift_hi == prefix``,
    by the key bits ``[shift_lo, shift_hi)``.

    Returns ``(count, sums, kmin, kmax, n_bad)``: per digit the number of rows and the sum
    of their weights, the smallest and largest key in range, and the number of NaN,
    infinite or negative weights among all rows.
    """
    nbins = 1 << (shift_hi - shift_lo)
    mask = nbins - 1
    nb = (n + HIST_BLOCK - 1) // HIST_BLOCK
    cnt = np.zeros((nb, nbins), np.int64)
    sm = np.zeros((nb, nbins))
    bmin = np.full(nb, np.iinfo(np.int64).max)
    bmax = np.full(nb, -1)
    bbad = np.zeros((nb, 1), np.int64)
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            w = _row_weight(h, i)
            if not (w >= 0.0 and not math.isinf(w)):
                bbad[b, 0] += 1
                continue
            key = _key(w, cell, cell_bits)
            if (key >> shift_hi) != prefix:
                continue
            d = (key >> shift_lo) & mask
            cnt[b, d] += 1
            sm[b, d] += w
            bmin[b] = min(bmin[b], key)
            bmax[b] = max(bmax[b], key)
    kmin = np.iinfo(np.int64).max
    kmax = -1
    for b in range(nb):
        kmin = min(kmin, bmin[b])
        kmax = max(kmax, bmax[b])
    return _columns_in_order(cnt), _columns_in_order(sm), kmin, kmax, _columns_in_order(bbad)[0]


@row_kernel(rows=0)
def trim_counts(n, h, tau):
    """Per block of ``BLOCK`` rows: how many weights have key below ``tau`` and equal to it."""
    nb = (n + BLOCK - 1) // BLOCK
    less = np.zeros(nb, np.int64)
    ties = np.zeros(nb, np.int64)
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, cell_bits)
            if key < tau:
                less[b] += 1
            elif key == tau:
                ties[b] += 1
    return less, ties


@row_kernel(rows=0)
def trim_gather(n, g, h, tau, n_tied_drop, tie_start, offsets, out_idx, out_g, out_h):
    """Keep the rows with key above ``tau`` and those with key ``tau`` from the
    ``n_tied_drop``-th on (ties in row order; ``tie_start[b]`` ties precede block ``b``)."""
    nb = offsets.shape[0]
    num_class = g.shape[1]
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        rank = tie_start[b]
        at = offsets[b]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, cell_bits)
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
