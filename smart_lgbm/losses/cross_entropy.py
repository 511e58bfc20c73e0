"""Cross-entropy on labels in [0, 1], LightGBM's ``objective="cross_entropy"`` (``xentropy``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from .base import K_EPSILON, Loss, Target, loss_buffer_arrays, weighted_sums


class CrossEntropy(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
    """``-y log(p) - (1 - y) log(1 - p)`` with ``p = 1 / (1 + exp(-F))`` and any label ``y`` in
    [0, 1] (probabilities as labels): ``g = p - y``, ``h = p (1 - p)``, computed as LightGBM's
    ``CrossEntropy::GetGradients`` does.

    Parameters
    ----------
    boost_from_average : bool, default=True
        Start from the log-odds of the (weighted) label mean, as LightGBM does.
    """

    lightgbm_objective = "cross_entropy"
    default_metric = "cross_entropy"

    def __init__(self, boost_from_average: bool = True) -> None:
        self.boost_from_average = bool(boost_from_average)

    def validate(self, target: Target) -> None:
        label = target.label
        if np.any((label < 0.0) | (label > 1.0)):
            bad = label[(label < 0.0) | (label > 1.0)]
            raise ValueError(f"label must be in [0, 1] for the cross_entropy objective; found {np.unique(bad)[:5].tolist()}")
        if target.weight is not None and not target.weight.sum() > 0:
            raise ValueError("the weights sum to zero: the cross_entropy objective needs a positive total weight "
                             "(LightGBM refuses it too)")

    def lightgbm_params(self) -> dict[str, Any]:
        return {"objective": "cross_entropy", "boost_from_average": self.boost_from_average}

    def init_score(self, target: Target) -> np.ndarray:
        if not self.boost_from_average:
            return np.zeros(1)
        # CrossEntropy::BoostFromScore: the (weighted) label mean, row by row, clamped to
        # [kEpsilon, 1 - kEpsilon], as log-odds
        suml, sumw = weighted_sums(target.label, target.weight)
        pavg = min(max(suml / sumw, K_EPSILON), 1.0 - K_EPSILON)
        return np.array([np.log(pavg / (1.0 - pavg))])

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        y = target.label
        with np.errstate(over="ignore"):
            e = np.exp(np.where(raw > -37.0, -raw, raw))
        one_minus = (np.float32(1.0) - y.astype(np.float32)).astype(np.float64)
        grad = np.where(raw > -37.0, (one_minus - y * e) / (1.0 + e), e - y)
        hess = np.where(raw > -37.0, e / ((1.0 + e) * (1.0 + e)), e)
        if target.weight is not None:
            grad, hess = grad * target.weight, hess * target.weight
        return grad, hess

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.xentropy_gradients(raw, label, weight, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row cross-entropy, weighted."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.xentropy_loss(raw, label, weight, out)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return expit(raw)
