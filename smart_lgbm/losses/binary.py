"""Binary log-loss, exactly LightGBM's ``objective="binary"`` (the paper's LogitBoost at sigmoid=2)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from scipy.special import expit

from .base import K_EPSILON, Loss, Target, apply_weight, loss_buffer_arrays, weighted_sums

def label_sign(target: Target) -> np.ndarray:
    """The binary label as ``+1``/``-1`` in one byte per row (label > 0 is positive), made once
    per target: what the binary gradient kernels read (the loss's and the run's gradient sweep)."""
    if "binary_sign" not in target.cache:
        target.cache["binary_sign"] = np.where(np.asarray(target.label) > 0.0, 1, -1).astype(np.int8)
    return target.cache["binary_sign"]


def one_column_gradients(raw: np.ndarray, sign: np.ndarray, weight: np.ndarray, sigmoid: float, grad: np.ndarray,
                         hess: np.ndarray) -> None:
    """Binary float32 gradients of every row (``sign`` +-1 per row as int8) into ``grad``, ``hess``
    (:func:`._kernels.binary_gradients`: ``binary_row``, the weight applied in double before
    the float32 store)."""
    from . import _kernels  # numba loads on first use
    from ._exp_kernels import libm_is_reproduced

    n = raw.shape[0]
    _kernels.binary_gradients(n, raw, sign, weight, sigmoid, grad.reshape(n), hess.reshape(n),
                              numba.get_num_threads(), libm_is_reproduced())


class BinaryLogloss(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
    """Logistic loss with LightGBM's ``sigmoid`` scale.

    With raw score ``F`` and ``psi = 1 / (1 + exp(-sigmoid * F))`` the loss is
    ``-y log(psi) - (1 - y) log(1 - psi)``; ``g = sigmoid * (psi - y)`` and
    ``h = sigmoid**2 * psi * (1 - psi)``.  At ``sigmoid=2`` this is the paper's
    LogitBoost (``psi = e^F / (e^F + e^-F)``, ``g = 2(psi - y)``, ``h = 4 psi (1 - psi)``).

    Parameters
    ----------
    sigmoid : float, default=1.0
        LightGBM's ``sigmoid`` parameter; must be > 0.
    boost_from_average : bool, default=True
        Start from the log-odds of the (weighted) positive rate, as LightGBM does.
    """

    lightgbm_objective = "binary"
    default_metric = "binary_logloss"

    def __init__(self, sigmoid: float = 1.0, boost_from_average: bool = True) -> None:
        if not isinstance(sigmoid, (int, float)) or isinstance(sigmoid, bool) or not sigmoid > 0:
            raise ValueError(f"sigmoid must be a positive number, got {sigmoid!r}")
        self.sigmoid = float(sigmoid)
        self.boost_from_average = bool(boost_from_average)

    def validate(self, target: Target) -> None:
        bad = ~np.isin(target.label, (0.0, 1.0))
        if bad.any():
            raise ValueError(
                "label must be 0 or 1 for the binary objective; found "
                f"{np.unique(target.label[bad])[:5].tolist()}"
            )

    def lightgbm_params(self) -> dict[str, Any]:
        return {"objective": "binary", "sigmoid": self.sigmoid, "boost_from_average": self.boost_from_average}

    def model_objective_line(self) -> str:
        return f"binary sigmoid:{self.sigmoid:g}"

    def init_score(self, target: Target) -> np.ndarray:
        if not self.boost_from_average:
            return np.zeros(1)
        w = target.weight
        if w is not None and not w.sum() > 0:
            return np.zeros(1)  # all-zero weights: nothing to average
        # LightGBM's BinaryLogloss::BoostFromScore: the positive rows' weight over all the
        # weight, summed row by row, clamped to [kEpsilon, 1 - kEpsilon] (float32 epsilon).
        suml, sumw = weighted_sums((target.label > 0).astype(np.float64), w)
        pavg = min(max(suml / sumw, K_EPSILON), 1.0 - K_EPSILON)
        return np.array([np.log(pavg / (1.0 - pavg)) / self.sigmoid])

    def _signed_sigmoid(self, target: Target) -> tuple[np.ndarray, np.ndarray]:
        """``sign * sigmoid`` and ``-sign * sigmoid`` with labels mapped to sign = -1/+1."""
        key = ("binary_signed_sigmoid", self.sigmoid)
        if key not in target.cache:
            sign = 2.0 * target.label - 1.0
            target.cache[key] = (sign * self.sigmoid, -sign * self.sigmoid)
        return target.cache[key]

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        # LightGBM's expression, -sign * sigmoid / (1 + exp(sign * sigmoid * raw)), so that
        # float32 casts agree; evaluated in place (the same roundings in the same order),
        # with the label terms computed once per data set.
        signed, neg_signed = self._signed_sigmoid(target)
        response = np.multiply(signed, raw)
        np.exp(response, out=response)
        response += 1.0
        np.divide(neg_signed, response, out=response)
        hess = np.abs(response)
        np.multiply(hess, self.sigmoid - hess, out=hess)
        return apply_weight(response, target.weight), apply_weight(hess, target.weight)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        raw, _, weight = loss_buffer_arrays(raw, target, 1)
        one_column_gradients(raw, label_sign(target), weight, self.sigmoid, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row ``log(1 + exp(-sign * sigmoid * raw))`` (sign = +-1 for label 1/0), weighted."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.binary_loss(raw, label, weight, self.sigmoid, out)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return expit(self.sigmoid * raw)

    def _fused_loss(self) -> tuple[str, float] | None:
        return self._fused_as(BinaryLogloss, "binary", self.sigmoid)
