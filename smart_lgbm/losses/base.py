"""The loss protocol shared by every objective the engine can boost.

A loss is a small, stateless description of an objective (its hyper-parameters only).
The rows it is evaluated on travel separately in a :class:`Target` so that one loss
object can serve the training set and every validation set, and so that losses which
need per-data-set precomputation (LambdaRank's inverse max-DCG per query) can cache it
on the target instead of on themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Target:
    """The rows a loss is evaluated on: labels, optional weights and query sizes.

    Parameters
    ----------
    label : ndarray of shape (n,)
        Labels as LightGBM stores them (float32 values, held as float64).
    weight : ndarray of shape (n,) or None
        Instance weights, or None for unit weights.
    group : ndarray of shape (n_queries,) or None
        Query sizes for ranking losses (LightGBM's ``group``), or None.
    cache : dict
        Scratch space a loss may use for precomputation tied to these rows.
    """

    label: np.ndarray
    weight: np.ndarray | None = None
    group: np.ndarray | None = None
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def num_rows(self) -> int:
        return int(self.label.shape[0])

    @property
    def query_boundaries(self) -> np.ndarray | None:
        """Cumulative query boundaries ``[0, s_0, s_0 + s_1, ...]`` or None."""
        if self.group is None:
            return None
        if "query_boundaries" not in self.cache:
            self.cache["query_boundaries"] = np.concatenate(
                ([0], np.cumsum(self.group, dtype=np.int64))
            )
        return self.cache["query_boundaries"]


class Loss(ABC):
    """A twice-differentiable loss on raw scores.

    Raw scores have shape ``(n,)`` when ``num_model_per_iteration == 1`` and ``(n, K)``
    otherwise (one column per tree of an iteration, as LightGBM's multiclass objective).

    Subclasses implement :meth:`gradient_hessian`; the others have sensible defaults.
    """

    #: Trees fitted per boosting iteration (K for multiclass, else 1).
    num_model_per_iteration: int = 1
    #: LightGBM's name of the equivalent built-in objective, or None for a custom loss.
    lightgbm_objective: str | None = None
    #: Metric LightGBM would report by default for that objective.
    default_metric: str | None = None
    #: Whether the rows must come in whole queries (ranking losses).
    needs_group: bool = False

    def validate(self, target: Target) -> None:
        """Raise ``ValueError`` if the labels (or groups) cannot be used with this loss."""

    def lightgbm_params(self) -> dict[str, Any]:
        """Parameters that make stock LightGBM train the same objective."""
        return {"objective": self.lightgbm_objective} if self.lightgbm_objective else {}

    def model_objective_line(self) -> str | None:
        """What a stock model file writes after ``objective=`` (None: no line)."""
        return self.lightgbm_objective

    def init_score(self, target: Target) -> np.ndarray:
        """Constant raw score to start boosting from (LightGBM's ``boost_from_average``).

        Returns an array of shape ``(K,)``; zeros means "start from 0".
        """
        return np.zeros(self.num_model_per_iteration)

    @abstractmethod
    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        """First and second derivative of the loss at ``raw``, instance weights applied.

        Returns float64 arrays of the same shape as ``raw``.
        """

    def loss(self, raw: np.ndarray, target: Target) -> np.ndarray:
        """Per-row loss of shape ``(n,)``, instance weights applied (for loss-based sampling)."""
        raise NotImplementedError(f"{type(self).__name__} does not define a per-row loss")

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Map raw scores to what ``Booster.predict`` returns for the stock objective."""
        return raw

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


def apply_weight(values: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """Multiply per-row values (shape ``(n,)`` or ``(n, K)``) by instance weights in place."""
    if weight is None:
        return values
    if values.ndim == 1:
        values *= weight
    else:
        values *= weight[:, None]
    return values


def check_finite(name: str, values: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` if any entry is NaN or infinite."""
    # One fast pass: a sum is finite when every term is (an overflowing sum of finite
    # values only sends it to the exact check).
    if not np.isfinite(np.sum(values)) and not np.all(np.isfinite(values)):
        bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); all must be finite")
