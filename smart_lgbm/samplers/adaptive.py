"""An adaptive sampling rate: start low, grow when the sampled trees are noise-dominated.

A fixed rate leaves a noise floor.  Each leaf's fitted gradient sum is an importance-weighted
estimate ``G~_j = sum_{i in S, i in j} g_i / p_i`` of the full-data sum ``G_j`` with variance
``V_j = sum_{i in j} g_i^2 (1 - p_i) / p_i``, estimated without bias from the drawn rows by
``sum_{i in S, i in j} (g_i / p_i)^2 (1 - p_i)``.  That variance does not shrink as the model
converges, while the signal ``G_j`` does, so near the optimum the trees fit mostly noise (as
constant-step SGD does).  Growing the sample when the noise dominates is the classic remedy
(Byrd, Chin, Nocedal & Wu 2012; Bollapragada, Byrd & Nocedal 2018: the "norm test").

The test here is that norm test in the tree's own metric, with the signal measured net of
the training data's own noise.  A Newton leaf step's gain is ``G_j^2 / H_j``; the sampled
one's expected gain is ``(G_j^2 + V_j) / H_j``.  But ``G_j^2`` is not all signal either: the
training rows are themselves a sample of the population, so even a leaf whose population
gradient is zero has ``E[G_j^2] = D_j = sum_{i in j} (g_i - mean_j g)^2``.  Near full
boosting's best iteration the leaf sums are mostly that data noise (plus the selection of
the partition), and a test of ``V_j`` against ``G_j^2`` alone keeps passing there: the
sampling noise then hurts the held-out quality although it is small next to the training
gain (measured: with ``V / G^2`` the rate stalled at 0.4 and the best log-loss stayed
0.002 above full boosting's).  So the test compares the sampling noise with the *excess*
gain, the part of the full-data gain beyond the data noise:

    R = N / (Q - N - D),   N = sum_j V~_j / H~_j,  Q = sum_j G~_j^2 / H~_j,
                           D = sum_j D~_j / H~_j,  D~_j = sum_{i in S, i in j} g_i^2 / p_i - G~_j^2 / N~_j

(``Q - N`` estimates ``sum_j G_j^2 / H_j``; ``N~_j = sum 1/p_i`` estimates the leaf's row
count).  ``R`` grows as the model converges and the excess gain shrinks, so the test keeps
firing until the sampling noise is small next to what is left to learn (and always fires
once no excess is left: ``Q - N - D <= 0``).

The partition is the newest tree's leaves (every tree of the run splits the rows into about
``num_leaves`` groups, and the next tree is much like it), evaluated on the *current*
iteration's sample, which that tree never saw: the five per-leaf sums are over the drawn
rows (O(sample) work, ``p_i`` read back from the drawn row's reweighting ``h_i / h~_i``).
Every ``window`` iterations the sums are pooled over the window (``N``, ``Q``, ``D`` added
up), and if ``R > threshold`` the rate is multiplied by ``growth`` (capped at ``maximum``;
1.0 is full boosting); a grown rate above ``snap`` (one half) goes straight to ``maximum``.
The rate never shrinks.

A second rule covers what the training gradients cannot show: on LambdaMART the pairwise
loss keeps a systematic gradient after NDCG has saturated, so the excess gain stays large
while the held-out metric plateaus (on mslr-like data at a rate held at 0.1 the pooled
ratio stays far below 0.1, and after a growth it falls far faster than ``(1 - p) / p``;
docs/samplers.md gives the probe command that records the ratios).  In an engine run with validation
sets, the rate also grows on the first metric of the first validation set, in two ways:

* *plateau* (``patience``, default 2): no new best in the last ``patience * window``
  iterations, all at the current rate.
* *diminishing returns* (``slowdown``, off by default): the last ``window`` iterations,
  all at the current rate, improved its best by less than ``slowdown`` times its
  improvement since the first iteration.  Scale-free, so one value serves every metric and
  loss (in the committed comparisons 0.01 first grows the rate at iterations 100-120 on
  mslr-like and 110 on higgs-like, about where the oracle study put the best switch to
  full boosting on mslr-like);
  once it fires it keeps firing, so the rate climbs to ``maximum`` within a few windows.
  Off by default: in the committed comparisons it made every run slower to the config's
  target (full boosting from ~130 iterations), for a better best quality on mslr-like
  (docs/samplers.md).

Without validation sets (and under :class:`smart_lgbm.SmartObjective` and Dask, which do
not pass them on) the noise test decides alone.

A window in which an engine iteration could not split its sample (no tree grew: too few
rows for ``min_data_in_leaf`` and the other split requirements, e.g. 15 rows of iris at the
start rate) also grows the rate: such a sample gives the noise test nothing to judge, and
only a larger one lets the trees grow.

Under ``refit_leaves=True`` (:mod:`smart_lgbm._engine.refit`) the noise test grows the rate only
when ``R > 1`` (``threshold="auto"``, the default, means :data:`REFIT_RATIO` there and
:data:`PLAIN_RATIO`, 0.1, without the refit), and the plateau rule is
off.  Every leaf value is then the Newton step of *all* its rows, so the leaf-value noise
that ``N`` measures is not in the model: the sample's noise only moves the choice of
splits, and a partition chosen partly on noise, given exact values, is still a descent
step on the full data.  That noise leaves no floor to fight while the signal outweighs it;
it costs gain per tree, and growing the rate trades dearer iterations for better splits.
So the test keeps its statistic, the sampled sums' noise over the excess gain they
estimate, and asks the question that matters for split choice: does the noise outweigh
the signal (``R > 1``)?  In the committed comparisons (docs/samplers.md) the noise test at
0.1 grows FirstOrder's refitted rate on yahoo-like where the fixed rate's NDCG@10 still
rises, and loses best NDCG@10 to it; along a fixed-rate refit run
(``scripts/probe_rate_schedule.py --refit --structure`` records it) ``R`` stays below 1
where the fixed rate keeps improving.  A test of the structure itself (the sample's
optimism about the tree it grew, which the probe's ``--structure`` also records) separates
no such cases: it rises from the first iterations on every config while the fixed-rate runs
keep improving.  The plateau rule is off under the refit: a plateau there is the model's
own convergence, which a larger sample does not lift (the committed mslr-like comparisons,
docs/samplers.md).

On several machines (:mod:`smart_lgbm.dask`) the per-leaf sums of every machine are added up
(one exchange per window through the run's ``allgather``), so that every machine takes the
same decision and draws at the same rate.
"""

from __future__ import annotations

from numbers import Integral, Real
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import Interval, Options, Param
from .._numba.kernel_constants import BLOCK

__all__ = ["AdaptiveRate", "AdaptiveRateState", "adaptive_rate_from_table", "leaf_noise_sums", "observe_sample", "pooled_gains",
           "pooled_noise_ratio", "rate_state"]

#: ``allgather(tag, value) -> list`` of every machine's value in rank order (:class:`~smart_lgbm.samplers.RunContext`)
Allgather = Callable[[str, Any], list]
#: ``(set, metric, value, higher is better)``, one validation score
ValidationScore = tuple[str, str, float, bool]

#: rows of :func:`leaf_noise_sums`: G~, H~, V~, S~, N~
NUM_SUMS = 5

#: the noise test's limit of ``threshold="auto"`` (the default): without the refit, and under
#: ``refit_leaves=True``, where it is the sampled sums' noise as large as the excess gain they
#: estimate (the module docstring)
PLAIN_RATIO = 0.1
REFIT_RATIO = 1.0

#: AdaptiveRate's parameters (the spec its constructor checks and takes its defaults from)
START = Param("start", (Interval(Real, 0, 1, closed="right"),), 0.1, "the rate of the first iterations")
MAXIMUM = Param("maximum", (Interval(Real, 0, 1, closed="right"),), 1.0, "the largest rate it grows to")
THRESHOLD = Param("threshold", (Interval(Real, 0, None, closed="neither"), Options(("auto",))), "auto",
                  'sampling noise over excess gain above which the rate grows; "auto": 0.1, or 1.0 under refit_leaves')
GROWTH = Param("growth", (Interval(Real, 1, None, closed="neither"),), 2.0, "the factor the rate grows by")
WINDOW = Param("window", (Interval(Integral, 1, None, closed="left"),), 10, "iterations pooled per decision")
PATIENCE = Param("patience", (Interval(Integral, 0, None, closed="left"),), 2,
                 "windows without a new validation best (at the current rate) before the rate grows; 0: never")
SNAP = Param("snap", (Interval(Real, 0, 1, closed="right"),), 0.5,
             "a grown rate above it goes straight to the maximum (1.0: never skips a step)")
SLOWDOWN = Param("slowdown", (Interval(Real, 0, 1, closed="left"),), 0.0,
                 "grow when the last window improved the validation best by less than this share of its "
                 "improvement since the first iteration; 0: never")
ADAPTIVE_RATE_PARAMS = (START, MAXIMUM, THRESHOLD, GROWTH, WINDOW, PATIENCE, SNAP, SLOWDOWN)


class AdaptiveRate:
    """Controller of a sampler's rate: grows it while the sampled trees are noise-dominated.

    Give it as a sampler's rate (``FirstOrder(rate=AdaptiveRate(...))``); ``rate="auto"`` is
    ``AdaptiveRate()``.

    Parameters
    ----------
    start : float in (0, 1], default=0.1
        The rate of the first iterations.
    maximum : float in (0, 1], default=1.0
        The rate is never grown beyond it (1.0: full boosting, every row drawn).
    threshold : float > 0 or "auto", default="auto"
        Grow when the sampling noise, pooled over a window, exceeds this fraction of the
        excess gain (the full-data leaf gain beyond the training data's own noise).
        ``"auto"``: 0.1 (:data:`PLAIN_RATIO`), and 1.0 (:data:`REFIT_RATIO`) for a sampler
        with ``refit_leaves=True``, whose leaf values carry no sampling noise (module notes).
        A number applies with and without the refit.
    growth : float > 1, default=2.0
        Factor applied to the rate at each growth (0.1, 0.2, 0.4, then ``maximum``).
    window : int >= 1, default=10
        Iterations pooled per decision; one decision (and, on several machines, one
        exchange of per-leaf sums) per window.
    patience : int >= 0, default=2
        The plateau rule grows the rate after ``patience * window`` iterations without a
        new best of the first validation metric; 0 turns it off; off under ``refit_leaves=True``.
    snap : float in (0, 1], default=0.5
        A grown rate above it becomes ``maximum`` at once (past half the rows a sampled
        iteration costs nearly a full one, and sampled trees still cost quality there); 1.0
        never skips a step.
    slowdown : float in [0, 1), default=0.0
        The diminishing-returns rule grows the rate when the last window improved the
        first validation metric's best by less than this share of its improvement since
        the first iteration; 0 turns it off.  Both validation rules need the engine's
        ``valid_sets``; without them the noise test decides alone.

    Notes
    -----
    Deterministic: decisions depend only on the gradients, the draws and the trees, all fixed
    by the seed.  The state of a run (:class:`AdaptiveRateState`, made by :meth:`start_run`)
    lives in the run's :class:`~smart_lgbm.samplers.RunContext` (each engine run, each
    training set of a :class:`smart_lgbm.SmartObjective`, each ``lightgbm.cv`` fold has its
    own), so one sampler object may serve several runs.  The test reads the leaves of
    the newest tree (the sampler asks the engine for them through ``needs_leaves``).
    """

    def __init__(self, start: float = START.default, maximum: float = MAXIMUM.default,
                 threshold: float | str = THRESHOLD.default, growth: float = GROWTH.default,
                 window: int = WINDOW.default, patience: int = PATIENCE.default,
                 snap: float = SNAP.default, slowdown: float = SLOWDOWN.default) -> None:
        start, maximum = START.check(start, "AdaptiveRate"), MAXIMUM.check(maximum, "AdaptiveRate")
        if maximum < start:  # (a rule between two parameters: not a single parameter's spec)
            raise ValueError(f"AdaptiveRate: maximum ({maximum!r}) must be >= start ({start!r})")
        self.start, self.maximum = start, maximum
        self.threshold = THRESHOLD.check(threshold, "AdaptiveRate")
        self.growth = GROWTH.check(growth, "AdaptiveRate")
        self.window = WINDOW.check(window, "AdaptiveRate")
        self.patience = PATIENCE.check(patience, "AdaptiveRate")
        self.snap = SNAP.check(snap, "AdaptiveRate")
        self.slowdown = SLOWDOWN.check(slowdown, "AdaptiveRate")

    def __repr__(self) -> str:
        return (f"AdaptiveRate(start={self.start!r}, maximum={self.maximum!r}, threshold={self.threshold!r}, "
                f"growth={self.growth!r}, window={self.window!r}, patience={self.patience!r}, snap={self.snap!r}, "
                f"slowdown={self.slowdown!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AdaptiveRate) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    # ------------------------------------------------------------------ per run

    def start_run(self) -> AdaptiveRateState:
        """The controller's state for a run that starts now (the sampler's
        :meth:`~smart_lgbm.samplers.Sampler.start_run`): the rate at ``start``, no sums yet."""
        return AdaptiveRateState(self)

    def rate_for(self, state: AdaptiveRateState, iteration: int) -> float:
        """The rate of ``iteration`` of the run whose controller state is ``state``."""
        return state.rate

    def settled(self, state: AdaptiveRateState, iteration: int) -> bool:
        """Whether the run's rate is at its maximum at ``iteration``: it will not change
        again, and :meth:`observe` ignores the sums."""
        return state.rate >= self.maximum

    def observe(self, state: AdaptiveRateState, iteration: int, sums: np.ndarray | None,
                allgather: Allgather | None = None, *, refit_leaves: bool = False,
                validation: Sequence[ValidationScore] = (), unsplit: bool = False) -> float:
        """Take one iteration's per-leaf sums (:func:`leaf_noise_sums`) and decide at the
        window's end; returns the rate of the next iteration.

        ``allgather(tag, value) -> list``, when given (a machine of a distributed run), adds
        up every machine's sums before the decision.  ``refit_leaves``: the sampler's trees
        get their leaf values from every row (:mod:`smart_lgbm._engine.refit`): the noise test
        then compares the ratio with :meth:`limit` (1 for the default ``threshold="auto"``),
        and the plateau rule is off (the module docstring).  ``validation``: the validation
        sets' scores after the previous iteration (the run's
        :attr:`~smart_lgbm.samplers.RunContext.validation`), which the validation rules judge.
        ``unsplit``: the previous iteration's sample could not be split (the run's
        :attr:`~smart_lgbm.samplers.RunContext.unsplit`): the rate grows at the window's end.
        """
        state.last_iteration = iteration
        if state.rate >= self.maximum:
            return state.rate
        score = _first_validation_score(validation)
        if score is not None:
            state.scores.append(score)
        # the previous iteration's sample could not be split: its trees say nothing about the
        # noise (there are none), and a larger sample is what lets them grow
        state.unsplit = state.unsplit or unsplit
        state.pending.append(np.zeros((NUM_SUMS, 0)) if sums is None else sums)
        if (iteration + 1) % self.window:
            return state.rate
        pending, state.pending = state.pending, []
        if allgather is not None:
            gathered = allgather(f"adaptive_rate_{iteration}", [p.tolist() for p in pending])
            pending = _add_machines([[np.asarray(p, dtype=np.float64).reshape(NUM_SUMS, -1) for p in rank]
                                     for rank in gathered])
        ratio = pooled_noise_ratio(pending)
        state.ratios.append((iteration, ratio))
        # under the refit the noise is not in the leaf values, only in the choice of splits
        # (the module docstring): by default the test then asks whether it outweighs the signal
        limit = self.limit(refit_leaves)
        unsplit, state.unsplit = state.unsplit, False
        if unsplit or (ratio is not None and ratio > limit) or (not refit_leaves and self._plateau(state, iteration)) \
                or self._slowed(state, iteration):
            self._grow(state, iteration)
        return state.rate

    def limit(self, refit_leaves: bool) -> float:
        """The noise ratio above which the rate grows, for a sampler with or without
        ``refit_leaves`` (``threshold``, or what ``"auto"`` means for it)."""
        if self.threshold == "auto":
            return REFIT_RATIO if refit_leaves else PLAIN_RATIO
        return float(self.threshold)

    def _grow(self, state: AdaptiveRateState, iteration: int) -> None:
        """Multiply the run's rate by ``growth`` (past ``snap``: to the maximum)."""
        grown = state.rate * self.growth
        # past half the rows a sampled iteration costs nearly a full one (the pass over
        # every row, the tree on most of them), so there is little left to save: go to
        # the maximum, where (at 1.0) the trees are exact
        state.rate = self.maximum if grown > self.snap else min(self.maximum, grown)
        state.grown_at = iteration

    def _plateau(self, state: AdaptiveRateState, iteration: int) -> bool:
        """Whether the first validation metric made no new best in the last ``patience *
        window`` iterations, all at the current rate (the engine's validation sets only)."""
        span = self.patience * self.window
        scores = state.scores
        if span == 0 or len(scores) <= span or iteration - state.grown_at < span:
            return False
        return min(scores[-span:]) >= min(scores[:-span])

    def _slowed(self, state: AdaptiveRateState, iteration: int) -> bool:
        """Whether the first validation metric's best improved, over the last ``window``
        iterations (all at the current rate), by less than ``slowdown`` times its improvement
        since the first iteration (diminishing returns: scale-free, so one default serves
        every metric and loss)."""
        scores, span = state.scores, self.window
        if self.slowdown == 0.0 or len(scores) <= span or iteration - state.grown_at < span:
            return False
        best, before = min(scores), min(scores[:-span])
        return before - best < self.slowdown * (scores[0] - best)

    def check_iterations(self, num_rounds: int) -> range:
        """The iterations at which a run of ``num_rounds`` decides (and, distributed, exchanges)."""
        return range(self.window - 1, int(num_rounds), self.window)


def adaptive_rate_from_table(table: dict[str, Any]) -> AdaptiveRate:
    """An :class:`AdaptiveRate` from a table of its parameters (a config's ``rate = {start =
    0.1, threshold = 0.05}``); ValueError naming the accepted keys for any other key."""
    names = [p.name for p in ADAPTIVE_RATE_PARAMS]
    unknown = sorted(str(k) for k in table if k not in names)
    if unknown:
        raise ValueError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                         f"in an adaptive rate's table; accepted: {', '.join(names)}")
    return AdaptiveRate(**table)


class AdaptiveRateState:
    """One run's controller state: its rate and the window's per-iteration sums
    (:meth:`AdaptiveRate.start_run`; the run keeps it in its
    :class:`~smart_lgbm.samplers.RunContext`)."""

    def __init__(self, owner: AdaptiveRate) -> None:
        self.owner = owner
        self.rate = owner.start
        self.last_iteration = -1
        self.grown_at = -1
        #: the first validation metric of every iteration seen, lower is better
        self.scores: list[float] = []
        self.pending: list[np.ndarray] = []
        #: (iteration, pooled noise ratio or None) of every decision, for inspection
        self.ratios: list[tuple[int, float | None]] = []
        #: the number of leaves the last per-leaf sums found (the next sums' table width)
        self.leaf_width = 64
        #: whether an iteration of the current window could not split its sample
        self.unsplit = False


def _add_machines(per_rank: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Per iteration, every machine's per-leaf sums added up in rank order (padded to the
    most leaves any machine saw)."""
    out = []
    for t in range(len(per_rank[0])):
        width = max(rank[t].shape[1] for rank in per_rank)
        total = np.zeros((NUM_SUMS, width))
        for rank in per_rank:
            total[:, : rank[t].shape[1]] += rank[t]
        out.append(total)
    return out


def _first_validation_score(scores: Sequence[ValidationScore]) -> float | None:
    """The first metric on the first validation set after the last iteration, signed so
    that lower is better; None without one (SmartObjective, Dask, no ``valid_sets``)."""
    if not scores:
        return None
    value, higher_is_better = scores[0][2], scores[0][3]
    return -float(value) if higher_is_better else float(value)


def pooled_gains(sums: list[np.ndarray]) -> tuple[float, float, float]:
    """``(N, Q, D)``: the sampling noise, the sampled gain and the data noise, each
    ``sum_j x_j / H~_j`` over the leaves (with hessian) of every iteration's sums."""
    noise = gain = data = 0.0
    for s in sums:
        if s.shape[1] == 0:
            continue
        g, h, v, g2, count = s
        used = h > 0.0
        g, h, v, g2, count = g[used], h[used], v[used], g2[used], count[used]
        noise += float(np.sum(v / h))
        gain += float(np.sum(g * g / h))
        # the spread of the leaf's gradients: sum g^2 - G^2 / n, estimated from the sample
        spread = np.maximum(g2 - g * g / np.maximum(count, 1.0), 0.0)
        data += float(np.sum(spread / h))
    return noise, gain, data


def pooled_noise_ratio(sums: list[np.ndarray]) -> float | None:
    """``R = N / (Q - N - D)`` over iterations' per-leaf sums (:func:`leaf_noise_sums`):
    the sampling noise over the excess gain; ``inf`` when no excess is left, None when no
    leaf had hessian (nothing to judge)."""
    noise, gain, data = pooled_gains(sums)
    if gain <= 0.0:
        return None
    excess = gain - noise - data
    if excess <= 0.0:
        return float("inf") if noise > 0.0 else 0.0
    return noise / excess


def leaf_noise_sums(indices: np.ndarray, fit_grad: np.ndarray, fit_hess: np.ndarray, hess: np.ndarray,
                     leaves: np.ndarray, constant_p: float | None = None, width: int = 64) -> np.ndarray:
    """Per-leaf sums ``(G~_j, H~_j, V~_j, S~_j, N~_j)`` of a sample over a tree's leaves,
    shape (5, L*K).

    Parameters
    ----------
    indices : ndarray of int32, shape (m,)
        The drawn rows.
    fit_grad, fit_hess : ndarray of shape (m, K)
        Their fitting gradients and hessians (``g / p``, ``h / p``).
    hess : ndarray of shape (n, K)
        Every row's hessian: ``p_i = h_i / h~_i`` (rows with ``h~_i = 0`` add no variance
        when their fitting gradient is 0 too; otherwise ``p`` is read from the gradients).
    leaves : ndarray of shape (n,) or (n, K)
        Every row's leaf in the newest tree(s).
    constant_p : float, optional
        The one inclusion probability of every row (uniform sampling).
    width : int, default=64
        A guess of the number of leaves (the compiled pass's table width; a run passes the
        previous iteration's): the sums are the same whatever it is, a low guess costs a
        second pass.

    Returns
    -------
    ndarray of shape (5, L*K)
        Rows, per leaf of tree 0, then tree 1, ...: the gradient sum ``G~_j``, the hessian
        sum ``H~_j``, the estimated variance of the gradient sum ``V~_j = sum (g_i/p_i)^2
        (1 - p_i)``, the estimated sum of squared gradients ``S~_j = sum g_i^2 / p_i`` and
        the estimated row count ``N~_j = sum 1 / p_i`` (each an unbiased estimate of the
        full-data sum).
    """
    k = fit_grad.shape[1]
    leaf_view = leaves.reshape(leaves.shape[0], -1)
    if k == 1 and leaf_view.shape[1] == 1 and indices.shape[0] and leaf_view.dtype == np.int32 \
            and fit_grad.dtype.kind == fit_hess.dtype.kind == hess.dtype.kind == "f":
        # one output column (binary, regression, ranking): one compiled pass, the same doubles
        from ._adaptive_kernels import leaf_sums_one_column

        args = (indices, fit_grad[:, 0], fit_hess[:, 0], hess.reshape(hess.shape[0], -1)[:, 0], leaf_view[:, 0],
                0.0 if constant_p is None else float(constant_p), constant_p is not None)
        nb = -(-indices.shape[0] // BLOCK)
        sums, top = leaf_sums_one_column(*args, np.zeros((nb, NUM_SUMS, max(int(width), 1))), np.empty(nb, np.int64))
        if top >= sums.shape[1]:  # more leaves than the guess: again, as wide as they are
            sums, top = leaf_sums_one_column(*args, np.zeros((nb, NUM_SUMS, int(top) + 1)), np.empty(nb, np.int64))
        return sums[:, : int(top) + 1].copy()
    if constant_p is not None:
        p = np.full(indices.shape[0], constant_p)
    else:
        h_fit = fit_hess.sum(axis=1, dtype=np.float64)
        h_row = hess[indices].sum(axis=1, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(h_fit > 0.0, h_row / h_fit, 1.0)
        p = np.clip(p, 0.0, 1.0)
    keep = 1.0 - p
    inv_p = 1.0 / np.where(p > 0.0, p, 1.0)  # a drawn row has p > 0; guard the division anyway
    leaf_rows = leaves[indices].reshape(indices.shape[0], -1)
    width = int(leaf_rows.max()) + 1 if leaf_rows.size else 1
    out = np.zeros((NUM_SUMS, width * k))
    for c in range(k):
        lf = leaf_rows[:, c if leaf_rows.shape[1] == k else 0]
        g = fit_grad[:, c].astype(np.float64)
        sl = slice(c * width, (c + 1) * width)
        out[0, sl] = np.bincount(lf, weights=g, minlength=width)
        out[1, sl] = np.bincount(lf, weights=fit_hess[:, c].astype(np.float64), minlength=width)
        out[2, sl] = np.bincount(lf, weights=g * g * keep, minlength=width)
        out[3, sl] = np.bincount(lf, weights=g * g * p, minlength=width)  # (g/p)^2 p = g^2/p
        out[4, sl] = np.bincount(lf, weights=inv_p, minlength=width)
    return out


def rate_state(sampler: Any, state: Any) -> AdaptiveRateState:
    """The adaptive rate's controller state of the run ``state`` belongs to: the one the
    run's :class:`~smart_lgbm.samplers.RunContext` keeps (made by the sampler's
    :meth:`~smart_lgbm.samplers.Sampler.start_run` when the run started, or now, for a
    state made outside a run)."""
    run = state.run
    if not isinstance(run.sampler_state, AdaptiveRateState):
        run.sampler_state = sampler.start_run()
    return run.sampler_state


def observe_sample(sampler: Any, state: Any, indices: np.ndarray, fit_grad: np.ndarray,
                   fit_hess: np.ndarray, constant_p: float | None = None) -> None:
    """Feed one iteration's sample to ``sampler``'s adaptive rate (the samplers' shared hook).

    Uses the newest tree's leaves when the run has them (none before the first tree), the
    run's validation scores, and the run's ``allgather`` on a machine of a distributed run
    (:class:`~smart_lgbm.samplers.RunContext`).  Under the sampler's
    :attr:`~smart_lgbm.samplers.Sampler.refit_leaves` the noise test's limit is
    :meth:`AdaptiveRate.limit` (1 by default) and the plateau rule is off (:meth:`AdaptiveRate.observe`).
    """
    controller: AdaptiveRate = sampler.rate
    run = rate_state(sampler, state)
    leaves = state.history.leaves
    sums = None
    # once the rate is at its maximum no decision is left: the sums (O(sample), which is
    # then every row at 1.0) would be thrown away
    if leaves is not None and np.shape(leaves)[0] == state.num_rows and not controller.settled(run, state.iteration):
        m = indices.shape[0]
        sums = leaf_noise_sums(indices, fit_grad.reshape(m, -1), fit_hess.reshape(m, -1),
                               state.kernel_arrays()[1], np.asarray(leaves), constant_p, run.leaf_width)
        run.leaf_width = sums.shape[1]  # the next tree has about as many leaves
    controller.observe(run, state.iteration, sums, state.run.allgather, refit_leaves=sampler.refit_leaves,
                       validation=state.run.validation, unsplit=state.run.unsplit)
