"""Squared error, LightGBM's ``objective="regression"`` (L2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Loss, Target, loss_buffer_arrays, weighted_sums


class SquaredError(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
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
        # RegressionL2loss::BoostFromScore: sum(label * weight) / sum(weight), row by row
        suml, sumw = weighted_sums(target.label, w)
        return np.array([suml / sumw])

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        grad = raw - target.label
        if target.weight is None:
            return grad, np.ones_like(grad)
        # LightGBM rounds the residual to float32, then multiplies by the float32 weight in
        # float32 arithmetic: float32(float32(raw - label) * weight), not one rounding of
        # the double product.
        weight32 = target.weight.astype(np.float32)
        grad = (grad.astype(np.float32) * weight32).astype(np.float64)
        return grad, weight32.astype(np.float64)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        from . import _kernels  # numba loads on first use

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.l2_gradients(raw, label, weight, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row ``0.5 * (raw - label)**2``, weighted."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.l2_loss(raw, label, weight, out)

    def _fused_loss(self) -> tuple[str, float] | None:
        return self._fused_as(SquaredError, "l2", 0.0)


class Huber(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
    """LightGBM's ``objective="huber"``: the residual ``F - y`` where ``|F - y| <= alpha``, its
    sign times ``alpha`` beyond; hessian 1 (LightGBM's, not the loss's second derivative).

    Parameters
    ----------
    alpha : float > 0, default=0.9
        LightGBM's ``alpha``: where the loss turns from squared to linear.
    boost_from_average : bool, default=True
        Start from the (weighted) label mean, as LightGBM's Huber objective (L2's initial score).
    """

    lightgbm_objective = "huber"
    default_metric = "huber"

    def __init__(self, alpha: float = 0.9, boost_from_average: bool = True) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not np.isfinite(alpha) or not alpha > 0:
            raise ValueError(f"alpha must be a finite number > 0 for the huber objective, got {alpha!r}")
        self.alpha = float(alpha)
        self.boost_from_average = bool(boost_from_average)

    def lightgbm_params(self) -> dict[str, Any]:
        return {"objective": "huber", "alpha": self.alpha, "boost_from_average": self.boost_from_average}

    def init_score(self, target: Target) -> np.ndarray:
        return SquaredError(self.boost_from_average).init_score(target)

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        diff = raw - target.label
        w = np.ones_like(diff) if target.weight is None else target.weight
        grad = np.where(np.abs(diff) <= self.alpha, diff * w, (np.sign(diff) * w) * self.alpha)
        return grad, w.astype(np.float64)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.huber_gradients(raw, label, weight, self.alpha, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row Huber loss, weighted."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.huber_loss(raw, label, weight, self.alpha, out)
