"""Samplers that need no importance score: everything, uniform, weight trimming."""

from __future__ import annotations

import numpy as np

from .base import Sample, Sampler, SamplingState, bernoulli_draw, check_rate, row_sum, take_rows


class Full(Sampler):
    """Every row, plain gradients: ordinary gradient boosting through the engine."""

    deterministic = True

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        indices = np.arange(state.num_rows, dtype=np.int32)
        return Sample(indices, state.grad, state.hess, probabilities=None)


class Uniform(Sampler):
    """Stochastic gradient boosting (Friedman 2002) with importance reweighting.

    Each row is drawn independently with probability ``rate``; drawn rows fit
    ``(g / rate, h / rate)``.  The reweighting cancels in each leaf's Newton step but keeps
    the gradient sums unbiased, which matters for ``min_sum_hessian_in_leaf`` and the L1/L2
    regularisers.  ``Uniform(1.0)`` draws every row with weight 1.

    Parameters
    ----------
    rate : float in (0, 1], default=0.1
    """

    def __init__(self, rate: float = 0.1) -> None:
        self.rate = check_rate(rate)

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        p = np.full(state.num_rows, self.rate)
        indices = bernoulli_draw(p, rng)
        # at rate 1 every row is drawn and the scale is exactly 1.0: the sampling path
        # adds nothing to Full()
        scale = np.full(indices.shape[0], 1.0 / self.rate)
        return Sample(indices, take_rows(state.grad, indices, scale), take_rows(state.hess, indices, scale), p)


class WeightTrimming(Sampler):
    """Weight trimming (Friedman, Hastie & Tibshirani 2000).

    With weight ``w_i = h_i`` (summed over the K trees of a multiclass iteration), drop the
    rows of smallest weight whose weights sum to at most ``alpha * sum(w)``; keep the rest
    unweighted.  Deterministic and biased by design, as in the original.

    Parameters
    ----------
    alpha : float in [0, 1), default=0.1
        Fraction of the total weight that may be trimmed.
    """

    deterministic = True

    def __init__(self, alpha: float = 0.1) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
            raise TypeError(f"alpha must be a number in [0, 1), got {type(alpha).__name__}")
        if not 0.0 <= float(alpha) < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
        self.alpha = float(alpha)

    def kept_rows(self, weight: np.ndarray) -> np.ndarray:
        """Sorted indices of the rows kept for weights ``weight``."""
        order = np.argsort(weight, kind="stable")
        cumulative = np.cumsum(weight[order])
        n_drop = int(np.searchsorted(cumulative, self.alpha * cumulative[-1], side="right"))
        n_drop = min(n_drop, weight.shape[0] - 1)  # never trim everything
        return np.sort(order[n_drop:]).astype(np.int32)

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        indices = self.kept_rows(row_sum(state.hess))
        return Sample(indices, take_rows(state.grad, indices), take_rows(state.hess, indices))
