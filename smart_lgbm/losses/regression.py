"""Squared error, LightGBM's ``objective="regression"`` (L2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Loss, Target, apply_weight


class SquaredError(Loss):
    """``0.5 * (F - y)^2``: ``g = F - y``, ``h = 1`` (LightGBM's L2 regression).

    Parameters
    ----------
    boost_from_average : bool, default=True
        Start from the (weighted) label mean, as LightGBM does.
    """

    lightgbm_objective = "regression"
    default_metric = "l2"

    def __init__(self, boost_from_average: bool = True) -> None:
        self.boost_from_average = bool(boost_from_average)

    def lightgbm_params(self) -> dict[str, Any]:
        return {"objective": "regression", "boost_from_average": self.boost_from_average}

    def init_score(self, target: Target) -> np.ndarray:
        if not self.boost_from_average:
            return np.zeros(1)
        w = target.weight
        if w is not None and not w.sum() > 0:
            return np.zeros(1)  # all-zero weights: nothing to average
        mean = target.label.mean() if w is None else np.dot(target.label, w) / w.sum()
        return np.array([mean])

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        grad = raw - target.label
        hess = np.ones_like(grad) if target.weight is None else target.weight.astype(np.float64, copy=True)
        return apply_weight(grad, target.weight), hess

    def loss(self, raw: np.ndarray, target: Target) -> np.ndarray:
        return apply_weight(0.5 * (raw - target.label) ** 2, target.weight)
