"""The samplers' rate solve: the Python front of :mod:`._rate_solve_kernels`.

The built-in samplers describe *what* to draw; this module finds the ``rho`` of
``p_i = min(1, rho * s_i)`` for their importances ``s_i`` in a few O(n) compiled passes,
without n-sized temporaries (:func:`solve`; :func:`.draw.draw_sample` then draws).

``sum_i min(1, rho * s_i) = rate * n`` is solved on ``t_i = s_i * 2**-e``
(``2**e`` the power of two just above the largest importance), so the scale of the
importances does not matter.  One pass gives the largest importance and the scaled sum; if
no row reaches ``p = 1`` at ``rho = m / sum(t)`` that is the answer.  Otherwise a histogram
pass over ``t`` (64 octaves x 32 buckets) brackets the threshold ``1/rho`` to one bucket,
and Newton's iteration on the concave, piecewise-linear ``f(rho)``, started from below,
settles the few rows of that bucket (0-3 passes on every spectrum tried).  Below
``_HISTOGRAM_ROWS`` rows the histogram is skipped and Newton starts from ``m / sum(t)``,
or from the previous iteration's ``rho`` when the sampler passes it (``start``).  From
``_HISTOGRAM_ROWS`` rows on, a ``start`` is tried before the histogram: one pass gathers
the rows near its threshold, Newton's iteration runs on those rows alone, and one capping
round confirms the root (:func:`_settle_from_guess`: the cold solve's double, or nothing and
the histogram runs).  After ``max_rounds`` Newton passes (never seen outside contrived spectra) an exact sort-based solve takes over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numba.kernel_constants import BLOCK, BUFFER, CONST, FIRST, KIND_MARKERS, MVS, SECOND
from .buffers import Workspace

_EMPTY_F64 = np.empty(0, dtype=np.float64)

_KERNELS: Any = None
_ROWS: Any = None


def _kernels() -> Any:
    """The rate solve's kernels (numba loads on first use, not when smart_lgbm is imported)."""
    global _KERNELS
    if _KERNELS is None:
        from . import _rate_solve_kernels as kernels

        _KERNELS = kernels
    return _KERNELS


def _rows() -> Any:
    """The row kernels shared with the draw (MVS's automatic lambda)."""
    global _ROWS
    if _ROWS is None:
        from . import _importance_kernels as kernels

        _ROWS = kernels
    return _ROWS


@dataclass(frozen=True)
class Importance:
    """What the kernels recompute as ``s_i``: a kernel ``kind`` over ``g``/``h``, or ``buf``."""

    kind: int
    n: int
    g: np.ndarray
    h: np.ndarray
    buf: np.ndarray = field(default_factory=lambda: _EMPTY_F64)
    lam: float = 0.0

    def args(self) -> tuple:
        return KIND_MARKERS[self.kind], self.n, self.g, self.h, self.buf, self.lam


def buffer_importance(values: np.ndarray, n: int, owner: str, g: np.ndarray | None = None,
                      h: np.ndarray | None = None) -> Importance:
    """A user importance, refused unless it holds one real number per row."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{owner}: importance must be real numbers, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{owner}: importance must have shape ({n},), one score per row; got shape {arr.shape}")
    empty = np.empty((0, 1))
    return Importance(BUFFER, n, empty if g is None else g, empty if h is None else h,
                      np.ascontiguousarray(arr, dtype=np.float64))


@dataclass(frozen=True)
class Statistics:
    """What the engine's fused pass computed from this iteration's ``g, h`` for the rate solve.

    ``blocks``: :func:`_kernels.scan`'s per-block ``(bmax, bpos, bbad, bexp, bsum)`` of the
    importance ``kind`` (FIRST or SECOND over float32 ``g, h``: plain sums); ``norms``: the
    per-block sums of ``|g|`` and ``|h|`` behind MVS's automatic lambda (``kind`` MVS).
    """

    kind: int
    blocks: tuple | None = None
    norms: np.ndarray | None = None


def mvs_lambda(g: np.ndarray, h: np.ndarray, statistics: Statistics | None = None) -> float:
    """MVS's automatic ``lambda = (sum_i |g_i| / sum_i |h_i|)**2`` (0 when every hessian is 0).

    ``statistics``: the fused pass's per-block sums of these ``g, h``, used instead of a pass.
    """
    if statistics is not None and statistics.norms is not None:
        g_sum, h_sum = _rows().norm_totals(statistics.norms)
    else:
        g_sum, h_sum = _rows().norm_sums(g.shape[0], g, h)
    return (g_sum / h_sum) ** 2 if h_sum > 0 else 0.0


@dataclass(frozen=True)
class Solution:
    """``p_i = min(1, rho * (s_i * c1) * c2)`` over ``importance`` (0 where ``s_i = 0``).

    ``solved_rho``: the solved ``rho`` in the importance's own units (``rho * c1 * c2``),
    when it was solved for a rate; a start for the next iteration's solve.
    """

    importance: Importance
    c1: float
    c2: float
    rho: float
    solved_rho: float | None = None


def solve(imp: Importance, rate: float | None, rho: float | None, owner: str, max_rounds: int = 64,
          start: float | None = None, statistics: Statistics | None = None,
          workspace: Workspace | None = None) -> Solution:
    """Validate the importances and solve for ``rho`` (or take the fixed one).

    Rows of zero importance get ``p = 0``; if every importance is 0 the draw falls back to
    uniform at ``rate`` (all rows when ``rho`` is fixed); if ``rate * n`` is at least the
    number of positive importances every such row gets ``p = 1``.  At ``rate = 1`` every row
    gets ``p = 1``, zero importances too: full boosting.

    ``start``: a guess of ``rho`` in the importance's units (the previous iteration's
    ``solved_rho``), tried first (see :func:`_rate_rho`); the answer is the same double.
    ``statistics``: the fused pass's scan of these importances (used when its kind and
    dtype match ``imp``; the same values the scan pass would give).
    ``workspace``: where an MVS importance may be stored by the scan (its ``"importance"``
    array), so that the later passes read it instead of recomputing its square roots; the
    solution then holds it as a BUFFER importance of the same doubles, valid until the
    workspace's next solve.  The solve from a ``start`` also writes the draw's scratch
    array there (before the draw uses it).

    Raises
    ------
    ValueError
        Naming ``owner``, if an importance is NaN, infinite or negative.
    """
    window = None
    if workspace is not None and imp.kind == MVS and _sums_plainly(imp):
        # the solve's first pass, in the scan; only when the last solve capped rows (else the
        # solve most likely ends at the scan, and the gathering would cost ~1 ms for nothing)
        if rho is None and start is not None and imp.n >= _HISTOGRAM_ROWS and workspace.value("capped"):
            window = Window.around(start, workspace.array("draw", imp.n, np.int32))
        imp, (smax, n_pos, exponent, total) = _scan_stored(imp, owner, rho is None,
                                                           workspace.array("importance", imp.n, np.float64), window)
    else:
        smax, n_pos, exponent, total = _scan(imp, owner, rho is None, statistics)
    if n_pos == 0:  # e.g. a perfectly fitted training set: uniform keeps boosting unbiased
        return Solution(Importance(CONST, imp.n, imp.g, imp.h), 1.0, 1.0, rate if rate is not None else 1.0)
    if rho is None and rate is not None and rate >= 1.0:
        # rate 1 is full boosting: every row, weight 1, also those of zero importance (whose
        # gradient and hessian may be 0 yet count towards min_data_in_leaf, as in Full())
        return Solution(Importance(CONST, imp.n, imp.g, imp.h), 1.0, 1.0, 1.0)
    if rho is not None:
        return Solution(imp, 1.0, 1.0, rho)
    assert rate is not None  # the samplers give a rate or rho (ProbabilitySampler.__init__)
    _SOLVE_LAYOUTS.add((imp.kind, _layout(imp.g), _layout(imp.h), _layout(imp.buf)))
    scratch = None if workspace is None else workspace.array("draw", imp.n, np.int32)  # (free until the draw)
    c1, c2, solved = _rate_rho(imp, rate * imp.n, n_pos, smax, exponent, total, max_rounds, start, scratch, window)
    if workspace is not None:
        workspace.keep("capped", solved * ((smax * c1) * c2) >= 1.0)
    return Solution(imp, c1, c2, solved, _unscaled(solved, exponent))


#: Every importance layout a rate solve has seen in this process: its kind and, for ``g``,
#: ``h`` and ``buf``, what numba compiles a kernel for (:func:`_layout`).  Which of the
#: solve's kernels run depends on the data (capped rows, the number of rows), so a warm-up
#: on a few rows may never call some of them; :func:`compile_rate_solve` compiles them for
#: these layouts ahead of timed runs.
_SOLVE_LAYOUTS: set[tuple[int, tuple[str, int, bool], tuple[str, int, bool], tuple[str, int, bool]]] = set()


def _layout(arr: np.ndarray) -> tuple[str, int, bool]:
    """What numba's type of ``arr`` depends on here: dtype, dimensions, C-contiguity."""
    return arr.dtype.str, arr.ndim, bool(arr.flags.c_contiguous)


def _tiny(layout: tuple[str, int, bool], n: int) -> np.ndarray:
    """``n`` rows of positive values with ``layout`` (a non-contiguous one as a strided view)."""
    dtype, ndim, contiguous = layout
    shape = (n,) + (2,) * (ndim - 1)
    if contiguous:
        return np.full(shape, 0.5, dtype=dtype) * np.arange(1, n + 1, dtype=dtype).reshape((n,) + (1,) * (ndim - 1))
    wide = _tiny((dtype, ndim, True), n * 2 if ndim == 1 else n)
    return wide[::2] if ndim == 1 else np.concatenate([wide, wide], axis=-1)[..., ::2]


def compile_rate_solve() -> int:
    """Compile the rate solve's data-dependent kernels for every layout seen so far.

    The capping rounds, the histogram bracket (from ``_HISTOGRAM_ROWS`` rows on) and the
    sort-based fallback run only when the data calls for them, so a warm-up on a few rows
    (``compare``'s pre-flight, the rate-schedule probe) may leave them to be compiled in
    the middle of a timed run (seen: a 0.33 s stall at a9a's 6th iteration).  Each is called
    here once on a few rows of each recorded layout, through the twin the current
    :func:`smart_lgbm._numba.row_kernel.parallel_from` setting picks for them (call it inside
    ``parallel_from(0)`` as well to compile the parallel twins).

    Returns
    -------
    int
        The number of layouts compiled for.
    """
    k = _kernels()
    n = 4
    for kind, g, h, buf in sorted(_SOLVE_LAYOUTS):
        imp = Importance(kind, n, _tiny(g, n), _tiny(h, n), _tiny(buf, n), 0.5)
        c1, c2 = k.pow2_pair(-1)
        count, sums = k.scaled_histogram(*imp.args(), c1, c2)
        k.bracket(count, sums, 2.0)
        k.cap_round(*imp.args(), c1, c2, 0.5, np.empty(n_blocks(n), np.int64),
                    *[np.empty(n_blocks(n)) for _ in range(3)])
        _kernels().cap_rounds(*imp.args(), c1, c2, 2.0, 0.5, 0, 0.75, 4, np.empty(n_blocks(n), np.int64),
                                    np.empty(n_blocks(n)))
        scratch, counts = np.empty(n, np.int32), np.empty(n_blocks(n), np.int64)
        k.window_rows(*imp.args(), c1, c2, 0.25, 0.75, scratch, counts, np.empty(n_blocks(n), np.int64),
                      np.empty(n_blocks(n)))
        k.window_root(*imp.args(), c1, c2, scratch, counts, BLOCK, 0, 0.5, 2.0, 1.0, 4)
        k.same_bucket(0.5, 0.75)
        k.sorted_rho(*imp.args(), c1, c2, 2.0)
    return len(_SOLVE_LAYOUTS)


def _unscaled(rho: float, exponent: int) -> float | None:
    """``rho`` of the scaled importances in the importances' own units, if it is a number."""
    try:
        value = math.ldexp(rho, -exponent)
    except OverflowError:
        return None
    return value if math.isfinite(value) and value > 0.0 else None


def n_blocks(n: int) -> int:
    """How many ``BLOCK``-row blocks ``n`` rows make (the sampler kernels' per-block arrays)."""
    return (n + BLOCK - 1) // BLOCK


def scan_blocks(n: int) -> tuple[np.ndarray, ...]:
    """Zeroed per-block ``(bmax, bpos, bbad, bexp, bsum)`` for :func:`_kernels.scan` over ``n`` rows
    (allocated here, not in the kernel: see its notes)."""
    nb = n_blocks(n)
    return np.zeros(nb), np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb)


#: MVS importances over float32 ``g, h`` with ``lambda`` up to this are summed plainly (see
#: :func:`_sums_plainly`).
_MVS_PLAIN_LAMBDA = 2.0 ** 200


def _sums_plainly(imp: Importance) -> bool:
    """Whether :func:`_kernels.scan` may sum these importances in its first pass, unscaled.

    The per-block scaled sum exists for importances of any range (a user's, float64
    gradients').  Where no importance and no partial sum can overflow or fall below the
    normal range, the plain sum is the scaled sum's exact double: scaling by a power of two
    commutes with every rounding then.  That holds for the engine's float32 ``g, h``:
    ``|g_i|`` and ``sum_k h_ik`` lie in [2^-149, K 2^128]; MVS's ``sqrt(|g_i|^2 + lambda
    |h_i|^2)`` with ``0 <= lambda <= 2^200`` lies in [2^-537, sqrt(K) 2^229] (a positive
    square under 2^-1022 still has a normal root), and so do the scaled values, down to
    2^-770.  One pass instead of two square roots per row: MVS's scan alone would cost more
    than FirstOrder's whole draw.
    """
    if imp.g.dtype != np.float32:
        return False
    if imp.kind in (FIRST, SECOND):
        return True
    return imp.kind == MVS and imp.h.dtype == np.float32 and 0.0 <= imp.lam <= _MVS_PLAIN_LAMBDA


def _scan(imp: Importance, owner: str, want_sum: bool,
          statistics: Statistics | None = None) -> tuple[float, int, int, float]:
    """``(smax, n_pos, exponent, total)`` of the importances (``_kernels.scan``); refuses bad ones."""
    plain = _sums_plainly(imp)
    if plain and statistics is not None and statistics.kind == imp.kind and statistics.blocks is not None:
        smax, n_pos, n_bad, exponent, total = _kernels().scan_totals(*statistics.blocks, want_sum)
    else:
        smax, n_pos, n_bad, exponent, total = _kernels().scan(*imp.args(), want_sum, plain, *scan_blocks(imp.n))
    _refuse_bad(n_bad, owner)
    return smax, n_pos, exponent, total


@dataclass(frozen=True)
class Window:
    """The rows :func:`_kernels.scan_store` gathers for the rate solve from a guess: those
    whose importance lies in ``[lo, hi)`` (the guess's threshold within ``_WINDOW``), in
    ``scratch`` at their block's offset, ``counts`` per block, with the per-block count
    above (``above``) and sum below (``below``) the window."""

    lo: float
    hi: float
    scratch: np.ndarray
    counts: np.ndarray
    above: np.ndarray
    below: np.ndarray

    @classmethod
    def around(cls, start: float, scratch: np.ndarray) -> Window:
        """The window around the threshold ``1/start`` (``start`` a ``rho`` in the importances'
        units); ``scratch``: ``n`` int32 it may write."""
        nb = n_blocks(scratch.shape[0])
        lo, hi = 1.0 / (start * _WINDOW), _WINDOW / start  # (Python floats: inf past the range, no error)
        return cls(float(lo), float(hi), scratch, np.empty(nb, np.int64), np.empty(nb, np.int64), np.empty(nb))

    @property
    def gathered(self) -> bool:
        """Whether the scan gathers it (an empty window, from a ``start`` out of range, is not)."""
        return self.lo < self.hi


#: scan_store's arguments without a window (``lo == hi``: the kernel reads none of the arrays)
_NO_WINDOW = (0.0, 0.0, np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))


def _scan_stored(imp: Importance, owner: str, want_sum: bool, out: np.ndarray,
                 window: Window | None = None) -> tuple[Importance, tuple[float, int, int, float]]:
    """:func:`_scan` of importances :func:`_sums_plainly` allows, storing them in ``out``:
    the BUFFER importance of those doubles and ``(smax, n_pos, exponent, total)``; with a
    ``window``, its rows gathered in the same pass."""
    extra = _NO_WINDOW if window is None or not window.gathered else (
        window.lo, window.hi, window.scratch, window.counts, window.above, window.below)
    smax, n_pos, n_bad, exponent, total = _kernels().scan_store(*imp.args(), want_sum, *scan_blocks(imp.n), out,
                                                                *extra)
    _refuse_bad(n_bad, owner)
    return Importance(BUFFER, imp.n, imp.g, imp.h, out), (smax, n_pos, exponent, total)


def _refuse_bad(n_bad: int, owner: str) -> None:
    if n_bad:
        raise ValueError(f"{owner}: importance must be finite and non-negative; it has {n_bad} NaN, "
                         "infinite or negative value(s)")


#: From this many rows on, the rate solve brackets the threshold with a histogram pass
#: before its capping rounds; below, the histogram's per-row work costs more than the few
#: plain capping rounds it saves.
_HISTOGRAM_ROWS = 1 << 17


def scaled_start(start: float | None, exponent: int) -> float | None:
    """A ``start`` (``rho`` in the importance's own units) in the solve's scaled units
    (``rho * 2**exponent``), or None when it is missing or not a finite positive number there."""
    if start is None:
        return None
    try:
        guess = math.ldexp(start, exponent)
    except OverflowError:
        return None
    return guess if math.isfinite(guess) and guess > 0.0 else None


def _rate_rho(imp: Importance, m: float, n_pos: int, smax: float, exponent: int, total: float,
              max_rounds: int, start: float | None = None, scratch: np.ndarray | None = None,
              window: Window | None = None) -> tuple[float, float, float]:
    """``(c1, c2, rho)`` with ``sum_i min(1, rho * (s_i c1) c2) = m`` (see the module notes).

    With ``start`` below ``_HISTOGRAM_ROWS`` rows, one capping round at that guess comes
    first: Newton's step from any point, above the root or below it, lands at or below the
    root (``f`` is concave), and from a guess near the root, as the previous iteration's is,
    that takes fewer rounds than from ``m / sum(t)``.  The answer is the same double either
    way: it is computed from the root's capped set and the free rows' sum over the same
    blocks, whichever rounds led there.  From ``_HISTOGRAM_ROWS`` rows on, ``start`` is
    tried by :func:`_settle_from_guess` (two passes instead of the histogram and two to
    four rounds), which returns the same double or nothing.  ``scratch``: ``imp.n`` int32
    it may write (the draw's, free until the draw); ``window``: the rows around ``start``'s
    threshold the scan already gathered (MVS's stored importances).
    """
    k = _kernels()
    c1, c2 = k.pow2_pair(-exponent)
    if m >= n_pos:
        return c1, c2, math.inf
    rho = m / total
    if rho * ((smax * c1) * c2) < 1.0:  # nobody capped: exact
        return c1, c2, rho
    capped = 0
    guess = scaled_start(start, exponent)
    nb = n_blocks(imp.n)
    if imp.n >= _HISTOGRAM_ROWS:
        if guess is not None:
            # (the root is above the cold start: a guess below it is worse; late in training
            # the gradients shrink and m / sum(t) overtakes the previous root)
            blocks = np.empty(nb, np.int64), np.empty(nb), np.empty(nb), np.empty(nb)  # cap_round's per-block values
            settled = _settle_from_guess(imp, m, c1, c2, max(guess, rho), max_rounds, blocks, scratch,
                                         window if window is not None and window.gathered else None)
            if settled is not None:
                return c1, c2, settled
        count, sums = k.scaled_histogram(*imp.args(), c1, c2)
        rho, capped, _, exact = k.bracket(count, sums, m)
        if exact:
            return c1, c2, rho
        guess = None  # (only the plain rounds below take one, below the cold start: that one is closer)
    # Newton's capping rounds, all in one compiled call (_rate_solve_kernels.cap_rounds: the
    # rounds' Python loop and per-call dispatch cost more than a round on small data)
    rho = _kernels().cap_rounds(*imp.args(), c1, c2, float(m), rho, capped, 0.0 if guess is None else guess,
                                      max_rounds, np.empty(nb, np.int64), np.empty(nb))
    if not math.isnan(rho):
        return c1, c2, rho
    return c1, c2, k.sorted_rho(*imp.args(), c1, c2, m)


#: :func:`_settle_from_guess` looks for the root's threshold ``1/rho`` within this factor of
#: the guess's, both ways: between two iterations the solved ``rho`` moves by a few percent
#: at most, so a solve settles from its guess; one that does not falls back to the cold solve.
_WINDOW = 1.05
#: How clearly the root's capped set must be settled for :func:`_settle_from_guess` to keep
#: it: ``rho t`` at least ``1 + _MARGIN`` at its lowest capped row and at most ``1 - _MARGIN``
#: at its highest free row; far above the rounding of any ``rho`` the solve computes
#: (a sum of ``BLOCK`` rows per block is within ``BLOCK * 2**-53``, about 2e-12, of exact).
_MARGIN = 1e-9


def _settle_from_guess(imp: Importance, m: float, c1: float, c2: float, guess: float, max_rounds: int,
                       blocks: tuple[np.ndarray, ...], scratch: np.ndarray | None,
                       window: Window | None = None) -> float | None:
    """The rate solve's ``rho`` from a guess near the root in two passes, or None.

    ``window``: the rows the scan gathered around ``start``'s threshold (``guess`` is then
    only Newton's start on them).

    1. :func:`_kernels.window_rows`: the rows whose ``t`` lies within ``_WINDOW`` of the
       guess's threshold ``1/guess``, with the count above and the sum below; Newton's
       iteration on those rows alone (:func:`_kernels.window_root`) finds the root's
       threshold when the window holds it.  (MVS's scan gathers them in its own pass:
       ``window``, the same window in the importances' units.)
    2. One :func:`_kernels.cap_round` at that root: its capped set ``S``, the free sum
       ``F(S)`` over the blocks, ``rho = (m - |S|) / F(S)``, and the set's bounds.

    That ``rho`` is kept only if it caps exactly ``S`` with a clear margin (``_MARGIN``) and
    ``S``'s lowest capped and highest free row share a bucket of the histogram; then it is
    the double the cold solve returns.  Why: the cold solve stops at a
    capped set ``T`` that its own ``rho``, ``(m - |T|) / F(T)`` from the same per-block sums,
    caps again, and returns that ``rho`` (or, from its histogram, a ``rho`` of bucket sums
    for a ``T`` made of whole buckets).  No ``T`` other than ``S`` is such a set: a larger
    one caps ``S``'s highest free row, which takes a ``rho`` above ``S``'s by the margin,
    while no set's ``rho`` exceeds the root's (``f`` is concave: each is a tangent's root);
    a smaller one leaves ``S``'s lowest capped rows free, and its ``rho`` then exceeds the
    root's (by their ``1 - rho t``), while it is below ``S``'s by the margin.  So ``T = S``,
    and ``S``, with a bucket holding both capped and free rows, is not made of whole
    buckets.  (Unless the cold solve's rounds run out, ``max_rounds``, and it sorts: never
    seen outside contrived spectra.)
    """
    k = _kernels()
    args = imp.args()
    if window is not None:  # (scaling by c1 c2, a power of two, keeps which side of an edge a value is)
        lo_t, hi_t = (window.lo * c1) * c2, (window.hi * c1) * c2
        scratch, counts = window.scratch, window.counts
        above, below = int(window.above.sum()), (float(window.below.sum()) * c1) * c2
    else:
        lo_t, hi_t = 1.0 / (guess * _WINDOW), _WINDOW / guess
        counts = np.empty(n_blocks(imp.n), np.int64)
        scratch = np.empty(imp.n, np.int32) if scratch is None else scratch
        above, below = k.window_rows(*args, c1, c2, lo_t, hi_t, scratch, counts, blocks[0], blocks[1])
    if above >= m:
        return None
    rho = k.window_root(*args, c1, c2, scratch, counts, BLOCK, above, below, m, guess, max_rounds)
    if not (math.isfinite(rho) and rho > 0.0 and rho * hi_t >= 1.0 and rho * lo_t < 1.0):
        return None  # the root's threshold is outside the window
    capped, free_sum, low, high = k.cap_round(*args, c1, c2, rho, *blocks)
    # (m - |S|) * _MARGIN above n ulps: a set within the margin of S's rho t cannot make up
    # the difference to another set's rho by the rounding of up to n rows' products
    if not (0 < capped < m and free_sum > 0.0 and high > 0.0 and (m - capped) * _MARGIN > imp.n * 2.0**-50):
        return None
    rho = (m - capped) / free_sum
    if rho * low >= 1.0 + _MARGIN and rho * high <= 1.0 - _MARGIN and k.same_bucket(low, high):
        return rho
    return None


def solve_rho_raw(importance: np.ndarray, expected_size: float, max_rounds: int) -> float:
    """``rho`` in the importance's own units (``inf`` when it does not fit in a float)."""
    imp = buffer_importance(np.asarray(importance).reshape(-1), int(np.size(importance)), "solve_rho")
    smax, n_pos, exponent, total = _scan(imp, "solve_rho", True)
    if expected_size >= n_pos:
        return math.inf
    _, _, rho = _rate_rho(imp, float(expected_size), n_pos, smax, exponent, total, max_rounds)
    try:
        return math.ldexp(rho, -exponent)
    except OverflowError:
        return math.inf


def probabilities(solution: Solution) -> np.ndarray:
    """``p_i`` of every row, shape (n,)."""
    out = np.empty(solution.importance.n)
    _kernels().probabilities(*solution.importance.args(), solution.c1, solution.c2, solution.rho, out)
    return out
