"""Samplers that need no importance score: everything, uniform, weight trimming."""

from __future__ import annotations

import numpy as np

from .._numba import kernel_constants as kc
from . import buffers, draw, rate_solve, trimming
from ..losses.base import defining_class
from .adaptive import AdaptiveRate, AdaptiveRateState, observe_sample, rate_state
from .base import Sample, Sampler, SamplingState
from .spec import ALPHA, RATE, REFIT_LEAVES, refit_leaves_of


class Full(Sampler):
    """Every row, plain gradients: ordinary gradient boosting through the engine."""

    deterministic = True

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        # the state's own arrays, in the dtype given (float32 from the engine: no copy)
        g, h = state.kernel_arrays()
        shape = state.shape
        return Sample(np.arange(state.num_rows, dtype=np.int32), g.reshape(shape), h.reshape(shape))

    def _fused_statistics(self) -> tuple[int, int] | None:
        # (every row is drawn: no statistics for a rate; the fused walk gives the next g, h)
        return None if defining_class(type(self), "sample") is not Full else (kc.STATS_NONE, 0)


class Uniform(Sampler):
    """Stochastic gradient boosting (Friedman 2002) with importance reweighting.

    Each row is drawn independently with probability ``rate``; drawn rows fit
    ``(g / rate, h / rate)``.  The reweighting cancels in each leaf's Newton step but keeps
    the gradient sums unbiased, which matters for ``min_sum_hessian_in_leaf`` and the L1/L2
    regularisers.  ``Uniform(1.0)`` draws every row with weight 1.

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, default=0.1
        "auto": start low and grow while the trees are noise-dominated (:class:`AdaptiveRate`).
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    #: the compiled draw takes its randomness as ``state.draw_key`` (:meth:`sample`)
    draws_from_key = True

    def __init__(self, rate: float | str | AdaptiveRate = RATE.default,
                 refit_leaves: bool | None = REFIT_LEAVES.default) -> None:
        self.rate = RATE.check(rate, type(self).__name__)
        self.refit_leaves = refit_leaves_of(self, refit_leaves)

    @property
    def needs_leaves(self) -> bool:  # type: ignore[override]
        """An adaptive rate reads the newest tree's leaves (:mod:`.adaptive`)."""
        return isinstance(self.rate, AdaptiveRate)

    def start_run(self) -> AdaptiveRateState | None:
        """An adaptive rate's controller state for the run (None for a fixed rate)."""
        return self.rate.start_run() if isinstance(self.rate, AdaptiveRate) else None

    def sample(self, state: SamplingState, rng: np.random.Generator | None) -> Sample:
        # the compiled draw with the constant importance: p_i = rate.  At rate 1 every row
        # is drawn and the scale is exactly 1.0: the sampling path adds nothing to Full().
        adaptive = isinstance(self.rate, AdaptiveRate)
        rate = self.rate.rate_for(rate_state(self, state), state.iteration) if adaptive else self.rate
        g, h = state.kernel_arrays()
        solution = rate_solve.Solution(rate_solve.Importance(kc.CONST, state.num_rows, g, h), 1.0, 1.0, rate)
        indices, grad, hess = draw.draw_sample(solution, h, draw.Fit(g), rng, buffers.workspace_of(self),
                                                   state.one_dimensional, state.draw_key)
        if adaptive:
            observe_sample(self, state, indices, grad, hess, constant_p=rate)
        return Sample(indices, grad, hess)

    def _fused_statistics(self) -> tuple[int, int] | None:
        return None if defining_class(type(self), "sample") is not Uniform else (kc.STATS_NONE, 0)


class WeightTrimming(Sampler):
    """Weight trimming (Friedman, Hastie & Tibshirani 2000).

    With weight ``w_i = h_i`` (summed over the K trees of a multiclass iteration), drop the
    rows of smallest weight whose weights sum to at most ``alpha * sum(w)``; keep the rest
    unweighted.  Deterministic and biased by design, as in the original.

    Ties: rows are ordered by ``(w_i, i)``, so among equal weights the lower row index is
    dropped first (what a stable sort by weight gives); the dropped rows are the longest
    prefix of that order within the budget, but never every row.  Found in O(n) without
    sorting (histogram passes over the weights' bit patterns).

    Parameters
    ----------
    alpha : float in [0, 1), default=0.1
        Fraction of the total weight that may be trimmed.
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    deterministic = True

    def __init__(self, alpha: float = ALPHA.default, refit_leaves: bool | None = REFIT_LEAVES.default) -> None:
        self.alpha = ALPHA.check(alpha, type(self).__name__)
        self.refit_leaves = refit_leaves_of(self, refit_leaves)

    def kept_rows(self, weight: np.ndarray) -> np.ndarray:
        """Sorted int32 indices of the rows kept for weights ``weight`` (shape (n,))."""
        w = buffers.as_rows(np.asarray(weight, dtype=np.float64).reshape(-1))
        return trimming.trim(w, w, self.alpha, type(self).__name__, True)[0]

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        g, h = state.kernel_arrays()
        indices, grad, hess = trimming.trim(g, h, self.alpha, type(self).__name__, state.one_dimensional)
        return Sample(indices, grad, hess)
