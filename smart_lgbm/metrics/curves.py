"""Ranking-quality metrics of a whole data set: ``auc``, ``average_precision``, ``auc_mu``.

Each equals LightGBM's metric of the same name (``src/metric/binary_metric.hpp``,
``multiclass_metric.hpp``).  LightGBM computes them on raw scores, never on the
objective's converted output, and so do these functions: a sigmoid maps large scores to
the same probability 1.0, which would create ties that LightGBM does not see.

* ``auc`` and ``average_precision``: rows ranked by score, descending; rows with equal
  scores form one threshold (for AUC a positive and a negative with equal scores count
  half); a row is positive when its label is above 0; instance weights weigh the rows.
  Both are 1.0 when the positives or the negatives have no weight at all.
* ``auc_mu`` (Kleiman & Page, ICML 2019): the mean over pairs of classes of a weighted
  AUC on the distance to the hyperplane that ``auc_mu_weights`` defines between them.
  LightGBM ranks rows whose distances differ by less than ``kEpsilon`` (1e-15) as
  ties; here only equal distances sort as ties (distances that close but not equal do
  not occur in practice), while the half-counting of near-equal distances follows
  LightGBM exactly.
"""

from __future__ import annotations

import numpy as np

from ..losses.base import Target
from .pointwise import K_EPSILON


def _thresholds(raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative positive and negative weight at the end of each distinct score, highest first."""
    w = np.ones(raw.shape[0]) if target.weight is None else target.weight
    positive = target.label > 0
    order = np.argsort(-raw, kind="stable")
    s = raw[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp = np.cumsum(np.where(positive, w, 0.0)[order])[ends]
    fp = np.cumsum(np.where(positive, 0.0, w)[order])[ends]
    return tp, fp


def auc(raw: np.ndarray, target: Target) -> float:
    """Area under the ROC curve, LightGBM's ``auc``."""
    tp, fp = _thresholds(raw, target)
    if tp[-1] <= 0 or fp[-1] <= 0:
        return 1.0  # LightGBM's value when one class has no weight
    tp0 = np.r_[0.0, tp[:-1]]
    fp0 = np.r_[0.0, fp[:-1]]
    return float(np.sum((fp - fp0) * (tp + tp0) * 0.5) / (tp[-1] * fp[-1]))


def average_precision(raw: np.ndarray, target: Target) -> float:
    """Area under the precision-recall curve as a step sum, LightGBM's ``average_precision``."""
    tp, fp = _thresholds(raw, target)
    if tp[-1] <= 0 or fp[-1] <= 0:
        return 1.0
    new_positives = np.diff(tp, prepend=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / (tp + fp)  # 0/0 only at a threshold holding zero-weight rows alone
    return float(np.sum(new_positives * precision) / tp[-1])


def auc_mu_weight_matrix(weights: np.ndarray | None, num_class: int) -> np.ndarray:
    """LightGBM's ``auc_mu_weights_matrix`` from the flat ``auc_mu_weights`` (row-major).

    None gives 1 off the diagonal.  The diagonal is always 0 (LightGBM overwrites it);
    off-diagonal entries must be non-zero, as in LightGBM.
    """
    if weights is None:
        return np.ones((num_class, num_class)) - np.eye(num_class)
    flat = np.asarray(weights, dtype=np.float64)
    if flat.shape != (num_class * num_class,):
        raise ValueError(
            f"auc_mu_weights must have num_class * num_class = {num_class * num_class} elements "
            f"(a row-major {num_class} x {num_class} matrix), got {flat.size}"
        )
    matrix = flat.reshape(num_class, num_class).copy()
    np.fill_diagonal(matrix, 0.0)
    off = ~np.eye(num_class, dtype=bool)
    if not np.all(np.isfinite(matrix)):
        raise ValueError("auc_mu_weights must contain finite numbers")
    zero = off & (np.abs(matrix) < float(np.float32(1e-35)))
    if zero.any():
        i, j = np.argwhere(zero)[0]
        raise ValueError(f"auc_mu_weights must be non-zero off the diagonal; entry [{i}, {j}] "
                         f"(position {i * num_class + j}) is 0")
    return matrix


def auc_mu(raw: np.ndarray, target: Target, class_weights: np.ndarray) -> float:
    """LightGBM's ``auc_mu`` of raw scores ``(n, K)`` with the ``K x K`` ``class_weights``.

    A class without rows (or without weight) makes the value NaN, as in LightGBM.
    """
    from ._curve_kernels import auc_mu_pair_sums  # numba: imported when auc_mu runs

    num_class = class_weights.shape[0]
    labels = target.label.astype(np.int64)
    members = np.argsort(labels, kind="stable")
    offsets = np.searchsorted(labels[members], np.arange(num_class + 1)).astype(np.int64)
    weight = np.ones(labels.shape[0]) if target.weight is None else np.asarray(target.weight, dtype=np.float64)
    s = auc_mu_pair_sums(np.ascontiguousarray(raw, dtype=np.float64), members.astype(np.int64), offsets,
                         weight, np.ascontiguousarray(class_weights, dtype=np.float64), K_EPSILON)
    if target.weight is None:
        class_size: np.ndarray = np.diff(offsets).astype(np.float64)
    else:
        class_size = np.bincount(labels, weights=weight, minlength=num_class)  # (float64 with weights)
    total = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(num_class):
            for j in range(i + 1, num_class):
                total += (s[i, j] / class_size[i]) / class_size[j]
    return float((2.0 * total / num_class) / (num_class - 1))
