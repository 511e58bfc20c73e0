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
    is_unbalance : bool, default=False
        Weigh the rarer class by the ratio of the class counts (LightGBM's ``is_unbalance``):
        its rows' gradients and hessians are multiplied by ``count(majority) /
        count(minority)``, counted over the training rows (of every machine of a
        distributed run).  The initial score is not weighted, as in LightGBM.
    scale_pos_weight : float > 0, default=1.0
        Multiply the positive rows' gradients and hessians by it (LightGBM's
        ``scale_pos_weight``); not together with ``is_unbalance``.
    """

    lightgbm_objective = "binary"
    default_metric = "binary_logloss"

    def __init__(self, sigmoid: float = 1.0, boost_from_average: bool = True, is_unbalance: bool = False,
                 scale_pos_weight: float = 1.0) -> None:
        if not isinstance(sigmoid, (int, float)) or isinstance(sigmoid, bool) or not sigmoid > 0:
            raise ValueError(f"sigmoid must be a positive number, got {sigmoid!r}")
        if isinstance(scale_pos_weight, bool) or not isinstance(scale_pos_weight, (int, float)) \
                or not np.isfinite(scale_pos_weight) or not scale_pos_weight > 0:
            raise ValueError(f"scale_pos_weight must be a finite number > 0, got {scale_pos_weight!r}")
        if is_unbalance and abs(scale_pos_weight - 1.0) > 1e-6:
            raise ValueError("is_unbalance=True and scale_pos_weight cannot be set together (LightGBM refuses "
                             "it too): give one of them")
        self.sigmoid = float(sigmoid)
        self.boost_from_average = bool(boost_from_average)
        self.is_unbalance = bool(is_unbalance)
        self.scale_pos_weight = float(scale_pos_weight)

    @property
    def weighs_classes(self) -> bool:
        """Whether the rows' gradients get class weights (``is_unbalance`` or ``scale_pos_weight``)."""
        return self.is_unbalance or self.scale_pos_weight != 1.0

    def class_weights(self, target: Target) -> tuple[float, float]:
        """``(negative, positive)`` class weights of the training rows ``target``, as
        LightGBM's ``BinaryLogloss::Init`` sets its label weights.

        The class counts are ``target.cache["class_counts"]`` when a distributed run put
        every machine's there, else those of ``target``'s rows.
        """
        counts = target.cache.get("class_counts")
        if counts is None:
            positive = int(np.count_nonzero(target.label > 0.0))
            counts = (target.num_rows - positive, positive)
        negative, positive = int(counts[0]), int(counts[1])
        weights = [1.0, 1.0]
        if self.is_unbalance and positive > 0 and negative > 0:
            if positive > negative:
                weights[0] = positive / negative
            else:
                weights[1] = negative / positive
        weights[1] *= self.scale_pos_weight
        return weights[0], weights[1]

    def validate(self, target: Target) -> None:
        bad = ~np.isin(target.label, (0.0, 1.0))
        if bad.any():
            raise ValueError(
                "label must be 0 or 1 for the binary objective; found "
                f"{np.unique(target.label[bad])[:5].tolist()}"
            )

    def lightgbm_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"objective": "binary", "sigmoid": self.sigmoid,
                               "boost_from_average": self.boost_from_average}
        if self.is_unbalance:
            out["is_unbalance"] = True
        if self.scale_pos_weight != 1.0:
            out["scale_pos_weight"] = self.scale_pos_weight
        return out

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
        if self.weighs_classes:  # the label weight first, then the instance weight, as LightGBM
            negative, positive = self.class_weights(target)
            label_weight = np.where(target.label > 0.0, positive, negative)
            response *= label_weight
            hess *= label_weight
        return apply_weight(response, target.weight), apply_weight(hess, target.weight)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        if self.weighs_classes:
            from . import _kernels

            negative, positive = self.class_weights(target)
            _kernels.binary_class_weighted_gradients(raw, label, weight, self.sigmoid, negative, positive, grad, hess)
            return
        one_column_gradients(raw, label_sign(target), weight, self.sigmoid, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row ``log(1 + exp(-sign * sigmoid * raw))`` (sign = +-1 for label 1/0), weighted
        (class weights too, as the gradients)."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, 1)
        _kernels.binary_loss(raw, label, weight, self.sigmoid, out)
        if self.weighs_classes:
            negative, positive = self.class_weights(target)
            out *= np.where(label > 0.0, positive, negative)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return expit(self.sigmoid * raw)

    def _fused_loss(self) -> tuple[str, float] | None:
        if self.weighs_classes:  # (the fused pass has no class weights: the unfused path)
            return None
        return self._fused_as(BinaryLogloss, "binary", self.sigmoid)
