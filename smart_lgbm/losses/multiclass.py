"""Softmax cross-entropy, LightGBM's ``objective="multiclass"`` (K trees per iteration)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import softmax

from .base import K_EPSILON, Loss, Target, apply_weight, loss_buffer_arrays, weighted_sums


class MulticlassSoftmax(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
    """Multinomial log-loss on K raw scores per row.

    ``g_ik = p_ik - [y_i = k]`` and ``h_ik = K / (K - 1) * p_ik (1 - p_ik)``, LightGBM's
    factor that keeps the diagonal Newton step well scaled.

    Parameters
    ----------
    num_class : int
        Number of classes K >= 2; labels must be integers in ``[0, K)``.
    boost_from_average : bool, default=True
        Start each class from the log of its (weighted) frequency, as LightGBM does.
    """

    lightgbm_objective = "multiclass"
    default_metric = "multi_logloss"

    def __init__(self, num_class: int, boost_from_average: bool = True) -> None:
        if isinstance(num_class, bool) or not isinstance(num_class, (int, np.integer)) or num_class < 2:
            raise ValueError(f"num_class must be an integer >= 2 for multiclass, got {num_class!r}")
        self.num_class = int(num_class)
        self.num_model_per_iteration = self.num_class
        self.boost_from_average = bool(boost_from_average)

    def validate(self, target: Target) -> None:
        label = target.label
        ok = (label >= 0) & (label < self.num_class) & (label == np.floor(label))
        if not ok.all():
            raise ValueError(
                f"label must be an integer in [0, num_class={self.num_class}) for multiclass; "
                f"found {np.unique(label[~ok])[:5].tolist()}"
            )

    def lightgbm_params(self) -> dict[str, Any]:
        return {"objective": "multiclass", "num_class": self.num_class}

    def model_objective_line(self) -> str:
        return f"multiclass num_class:{self.num_class}"

    def init_score(self, target: Target) -> np.ndarray:
        if not self.boost_from_average:
            return np.zeros(self.num_class)
        w = target.weight
        sumw = float(target.num_rows) if w is None else weighted_sums(w, None)[0]
        if not sumw > 0:
            return np.zeros(self.num_class)  # all-zero weights: nothing to average
        # MulticlassSoftmax::Init/BoostFromScore: each class's weight added row by row
        # (bincount adds in row order), over the total weight; log(max(kEpsilon, p)).
        counts = np.bincount(target.label.astype(np.int64), weights=w, minlength=self.num_class)
        return np.log(np.maximum(K_EPSILON, counts / sumw))

    def _onehot(self, target: Target) -> np.ndarray:
        if "onehot" not in target.cache:
            target.cache["onehot"] = np.eye(self.num_class)[target.label.astype(np.int64)]
        return target.cache["onehot"]

    @property
    def _factor(self) -> float:
        # LightGBM's rescaling of the redundant K-class form (Friedman's GBDT paper)
        return self.num_class / (self.num_class - 1.0)

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        # LightGBM's Common::Softmax: exp(x - max), summed class by class in order (numpy's
        # pairwise sum would change the rounding from K = 8 on), then divided.
        prob = np.exp(raw - raw.max(axis=1, keepdims=True))
        total = prob[:, 0].copy()
        for k in range(1, self.num_class):
            total += prob[:, k]
        prob /= total[:, None]
        grad = prob - self._onehot(target)
        hess = self._factor * prob * (1.0 - prob)
        return apply_weight(grad, target.weight), apply_weight(hess, target.weight)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        from . import _kernels  # numba loads on first use

        raw, label, weight = loss_buffer_arrays(raw, target, self.num_class)
        _kernels.softmax_gradients(raw, label, weight, self._factor, grad, hess)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Per-row ``-log softmax(raw)[label]``, weighted."""
        from . import _kernels

        raw, label, weight = loss_buffer_arrays(raw, target, self.num_class)
        _kernels.softmax_loss(raw, label, weight, out)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return softmax(raw, axis=1)

    def _fused_loss(self) -> tuple[str, float] | None:
        return self._fused_as(MulticlassSoftmax, "softmax", self._factor)
