"""The sampler protocol: which rows a boosting iteration sees, and with what gradients.

Every sampler turns the full-data gradients of one iteration into a :class:`Sample`:
the row indices LightGBM's tree learner will see and the gradients/hessians it fits on
those rows.  Importance samplers draw row ``i`` with probability ``p_i`` independently
and divide its gradient and hessian by ``p_i`` so that every gradient sum the tree
learner forms (per node, per histogram bin) is an unbiased estimate of the full-data sum.

Writing your own sampler
------------------------
* Subclass :class:`ProbabilitySampler` and implement :meth:`ProbabilitySampler.importance`
  (any non-negative score per row); ``rate=``/``rho=`` handling, the Bernoulli draw and the
  ``1/p`` reweighting come for free.
* Or subclass :class:`Sampler` and implement :meth:`Sampler.sample` for full control
  (deterministic selection, custom weights, regularised gradients).

Samplers must draw all randomness from the ``rng`` they are given so that the same seed
gives the same model; the engine seeds it per iteration.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..losses.base import Loss, Target


@dataclass
class GradientHistory:
    """What samplers may know about earlier iterations.

    Attributes
    ----------
    gradients : deque of ndarray
        Full-data gradients of the most recent iterations, newest last (instance weights
        applied, before any sampling).  Holds ``maxlen`` entries at most.
    leaves : ndarray of shape (n,) or (n, K), or None
        For every training row, the leaf that holds it in the most recent tree(s).
    """

    maxlen: int = 0
    gradients: deque = field(default_factory=deque)
    leaves: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.gradients = deque(maxlen=max(self.maxlen, 0))

    def push_gradient(self, grad: np.ndarray) -> None:
        if self.maxlen > 0:
            self.gradients.append(grad)

    def gradient(self, lag: int) -> np.ndarray | None:
        """Full-data gradient ``lag`` iterations before the current one (1 = previous), or None."""
        if lag < 1 or lag > len(self.gradients):
            return None
        return self.gradients[-lag]


@dataclass
class SamplingState:
    """Everything a sampler may look at in one iteration.

    Attributes
    ----------
    iteration : int
        0-based boosting iteration.
    grad, hess : ndarray of shape (n,) or (n, K)
        Full-data gradients and hessians at the current scores, instance weights applied.
    raw : ndarray
        Current raw scores, same shape.
    loss : Loss
        The loss being boosted.
    target : Target
        Training labels, weights and groups.
    history : GradientHistory
        Gradients of earlier iterations and the leaves of the most recent tree.
    """

    iteration: int
    grad: np.ndarray
    hess: np.ndarray
    raw: np.ndarray
    loss: Loss
    target: Target
    history: GradientHistory

    @property
    def num_rows(self) -> int:
        return int(self.grad.shape[0])


@dataclass
class Sample:
    """The rows of one iteration and the gradients the tree is fitted on.

    Attributes
    ----------
    indices : ndarray of int32, shape (m,)
        Sorted, unique row indices, ``m >= 1``.
    grad, hess : ndarray of shape (m,) or (m, K)
        Fitting gradients and hessians for those rows (already reweighted).
    probabilities : ndarray of shape (n,) or None
        Inclusion probabilities of all rows when the sampler is a probability sampler.
    """

    indices: np.ndarray
    grad: np.ndarray
    hess: np.ndarray
    probabilities: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.indices.shape[0])


class Sampler(ABC):
    """Base class of all samplers.

    Class attributes tell the engine what state to keep:

    history_length : int
        How many past full-data gradient vectors :attr:`GradientHistory.gradients` must hold.
    needs_leaves : bool
        Whether :attr:`GradientHistory.leaves` must be filled after every tree.
    deterministic : bool
        True when the sample depends only on the state, never on ``rng``: the engine then
        stops once an iteration cannot split (every later one would repeat it) instead of
        going on with the next sample.
    """

    history_length: int = 0
    needs_leaves: bool = False
    deterministic: bool = False

    @abstractmethod
    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        """Choose this iteration's rows and fitting gradients."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_") and v is not None)
        return f"{type(self).__name__}({params})"


def check_rate(rate: float, name: str = "rate") -> float:
    """Validate a sampling rate in (0, 1]."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number in (0, 1], got {type(rate).__name__}")
    if not 0.0 < float(rate) <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {rate!r}")
    return float(rate)


def check_positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def row_norm(values: np.ndarray) -> np.ndarray:
    """|v| per row for (n,) arrays, the Euclidean norm over K columns for (n, K) arrays."""
    return np.abs(values) if values.ndim == 1 else np.sqrt(np.einsum("ij,ij->i", values, values))


def row_sum(values: np.ndarray) -> np.ndarray:
    return values if values.ndim == 1 else values.sum(axis=1)


def take_rows(values: np.ndarray, indices: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """Rows ``indices`` of ``values`` (a copy), optionally multiplied row-wise by ``scale``."""
    out = values[indices]
    if scale is not None:
        if out.ndim == 1:
            out *= scale
        else:
            out *= scale[:, None]
    return out


def solve_rho(importance: np.ndarray, expected_size: float, max_rounds: int = 64) -> float:
    """Find ``rho`` with ``sum_i min(1, rho * s_i) = expected_size``.

    Expected O(n): start from ``rho = m / sum(s)``, cap the rows whose ``rho * s_i >= 1``
    at 1 and re-solve for the rest.  Capping only ever increases ``rho`` (the capped rows
    were contributing more than 1), so the capped set grows monotonically and the
    iteration reaches the exact fixed point in a handful of O(n) passes.  If
    ``expected_size`` is at least the number of rows with positive importance, every such
    row gets ``p = 1`` and ``inf`` is returned.
    """
    return _solve_rho(importance, expected_size, int(np.count_nonzero(importance > 0)), max_rounds)


def _solve_rho(importance: np.ndarray, expected_size: float, n_pos: int, max_rounds: int = 64,
               total: float | None = None) -> float:
    """:func:`solve_rho` given the number ``n_pos`` of positive entries (the others are 0)
    and, optionally, ``total = importance.sum()`` already computed."""
    if expected_size >= n_pos:
        return np.inf
    s = importance if n_pos == importance.shape[0] else importance[importance > 0]
    capped_count = 0
    free = s  # the rows not capped yet, in their original order (so sums are reproducible)
    # ``total`` is reused only when it is the sum of this very array (same roundings)
    free_sum = total if total is not None and s is importance else s.sum()
    for _ in range(max_rounds):
        rho = (expected_size - capped_count) / free_sum
        still_free = free[free < 1.0 / rho]
        newly = free.shape[0] - still_free.shape[0]
        if newly == 0:
            return float(rho)
        capped_count += newly
        free = still_free  # the threshold only falls, so the capped set only grows
        free_sum = free.sum()
    # Pathological spectra (many distinct cap levels): exact solution by sorting.
    s_sorted = np.sort(s)[::-1]
    tail = np.cumsum(s_sorted[::-1])[::-1]  # tail[k] = sum of s_sorted[k:]
    ks = np.arange(n_pos)
    rho = (expected_size - ks) / tail
    above = np.ones(n_pos, dtype=bool)
    above[1:] = rho[1:] * s_sorted[:-1] >= 1.0
    valid = (rho * s_sorted <= 1.0) & above
    return float(rho[int(np.argmax(valid))])


def bernoulli_draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sorted int32 indices of rows drawn independently with probability ``p``; never empty.

    An empty draw is redrawn (its chance is prod(1 - p_i), negligible unless the data is
    tiny); after 100 empty draws the row of largest ``p`` is taken.
    """
    for _ in range(100):
        indices = np.flatnonzero(rng.random(p.shape[0]) < p).astype(np.int32)
        if indices.size:
            return indices
    return np.array([int(np.argmax(p))], dtype=np.int32)


class ProbabilitySampler(Sampler):
    """Importance sampling with ``p_i = min(1, rho * s_i)`` for an importance score ``s``.

    Parameters
    ----------
    rate : float in (0, 1], optional
        Target expected sampling rate; ``rho`` is solved each iteration so that
        ``sum_i p_i = rate * n`` exactly.  Default 0.1 when neither is given.
    rho : float > 0, optional
        Fixed ``rho`` as in the paper (the rate then varies per iteration).
    """

    def __init__(self, rate: float | None = None, rho: float | None = None) -> None:
        if rate is not None and rho is not None:
            raise ValueError("give either rate or rho, not both")
        self.rate = check_rate(rate) if rate is not None else (None if rho is not None else 0.1)
        self.rho = check_positive(rho, "rho") if rho is not None else None

    @abstractmethod
    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        """Non-negative importance score ``s_i`` per row, shape (n,)."""

    def importance_from_state(self, state: SamplingState) -> np.ndarray:
        """Importance for this iteration; override when it needs more than ``grad``/``hess``."""
        return self.importance(state.grad, state.hess)

    def _probabilities(self, importance: np.ndarray) -> tuple[np.ndarray, int]:
        """(p, number of rows with positive importance); refuses bad importances."""
        smallest = importance.min()
        # With no negatives the sum is finite exactly when every entry is (unless finite
        # entries overflow it, which the exact check then tells apart); NaN fails both.
        total = importance.sum()
        if not (smallest >= 0 and (np.isfinite(total) or np.isfinite(importance).all())):
            raise ValueError(f"{type(self).__name__}: importance must be finite and non-negative; "
                             "it has NaN, infinite or negative values")
        n = importance.shape[0]
        n_pos = n if smallest > 0 else int(np.count_nonzero(importance))  # no negatives: nonzero is positive
        rho = self.rho if self.rho is not None else _solve_rho(importance, self.rate * n, n_pos, total=total)
        if np.isinf(rho):
            return (importance > 0).astype(np.float64), n_pos
        p = importance * rho
        return np.minimum(p, 1.0, out=p), n_pos

    def probabilities_from_importance(self, importance: np.ndarray) -> np.ndarray:
        """``p_i = min(1, rho * s_i)`` with ``rho`` fixed or solved for the target rate."""
        return self._probabilities(importance)[0]

    def probabilities(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        """Inclusion probability ``p_i`` of every row, shape (n,)."""
        return self.probabilities_from_importance(self.importance(grad, hess))

    def fitting_gradient(self, state: SamplingState) -> np.ndarray:
        """Gradient the tree fits before reweighting (the plain gradient by default)."""
        return state.grad

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        p, n_pos = self._probabilities(self.importance_from_state(state))
        if n_pos == 0:
            # Every row has zero importance (e.g. a perfectly fitted training set):
            # fall back to uniform so that boosting can go on and stay unbiased.
            p = np.full(p.shape[0], self.rate if self.rate is not None else 1.0)
        indices = bernoulli_draw(p, rng)
        rows = indices.astype(np.intp)  # numpy gathers faster with native indices: three gathers follow
        inv_p = 1.0 / p[rows]
        grad = take_rows(self.fitting_gradient(state), rows, inv_p)
        hess = take_rows(state.hess, rows, inv_p)
        return Sample(indices, grad, hess, probabilities=p)
