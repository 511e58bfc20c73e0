"""Metrics that average a per-row loss, each equal to the LightGBM metric of the same name.

Every function takes the model output ``pred`` as LightGBM's metric sees it (the
objective's converted output: probabilities for ``binary``/``multiclass``, raw scores for
regression and ranking), the :class:`~smart_lgbm.losses.Target` and the metric's own
parameters, and returns the value LightGBM reports.  The per-row formulas follow
``src/metric/regression_metric.hpp``, ``binary_metric.hpp``, ``multiclass_metric.hpp`` and
``xentropy_metric.hpp`` of LightGBM 4.6 term by term, including LightGBM's clamping
constants, several of which are float32 values (``kEpsilon = 1e-15f``, ``1e-10f``).

With instance weights the mean is ``sum(w_i * loss_i) / sum(w_i)``; LightGBM sums in
parallel chunks, so results agree to the last few bits, not bit for bit.  Label checks
that LightGBM makes when a metric is set up (positive labels for the gamma metrics, labels
in [0, 1] for the cross-entropies) are the ``check_*`` functions here.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses.base import Target

#: LightGBM's ``kEpsilon``: ``1e-15f``, a float32 widened to double.
K_EPSILON = float(np.float32(1e-15))
#: ``-std::log(kEpsilon)``: LightGBM takes the float32 overload of ``log`` here (the
#: rounded double log equals the C library's ``logf`` of this value).
_NEG_LOG_K_EPSILON = float(np.float32(-math.log(K_EPSILON)))
#: The ``1e-10f`` that the Poisson and Tweedie metrics clamp scores to.
_SCORE_EPSILON = float(np.float32(1e-10))
#: The double ``1.0e-12`` that the cross-entropy metrics clamp probabilities to.
_LOG_ARG_EPSILON = 1.0e-12


def _mean(values: np.ndarray, weight: np.ndarray | None) -> float:
    if weight is None:
        return float(values.sum() / values.shape[0])
    return float(np.dot(values, weight) / weight.sum())


def _safe_log(x: np.ndarray) -> np.ndarray:
    """LightGBM's ``Common::SafeLog``: ``log(x)`` for ``x > 0``, else ``-inf``."""
    out = np.full(x.shape, -np.inf)
    np.log(x, out=out, where=x > 0)
    return out


def _neg_log_clamped(p: np.ndarray) -> np.ndarray:
    """``-log(p)`` if ``p > kEpsilon``, else ``-log(kEpsilon)`` (LightGBM's log-losses)."""
    out = np.full(p.shape, _NEG_LOG_K_EPSILON)
    big = p > K_EPSILON
    out[big] = -np.log(p[big])
    return out


# ------------------------------------------------------------------------- regression


def l2(pred: np.ndarray, target: Target) -> float:
    diff = pred - target.label
    return _mean(diff * diff, target.weight)


def rmse(pred: np.ndarray, target: Target) -> float:
    return float(np.sqrt(l2(pred, target)))


def l1(pred: np.ndarray, target: Target) -> float:
    return _mean(np.abs(pred - target.label), target.weight)


def quantile(pred: np.ndarray, target: Target, alpha: float) -> float:
    delta = target.label - pred
    return _mean(np.where(delta < 0, (alpha - 1.0) * delta, alpha * delta), target.weight)


def huber(pred: np.ndarray, target: Target, alpha: float) -> float:
    diff = pred - target.label
    adiff = np.abs(diff)
    values = np.where(adiff <= alpha, 0.5 * diff * diff, alpha * (adiff - 0.5 * alpha))
    return _mean(values, target.weight)


def fair(pred: np.ndarray, target: Target, fair_c: float) -> float:
    x = np.abs(pred - target.label)
    c = fair_c
    return _mean(c * x - c * c * np.log1p(x / c), target.weight)


def poisson(pred: np.ndarray, target: Target) -> float:
    score = np.maximum(pred, _SCORE_EPSILON)
    return _mean(score - target.label * np.log(score), target.weight)


def mape(pred: np.ndarray, target: Target) -> float:
    label = target.label
    return _mean(np.abs(label - pred) / np.maximum(1.0, np.abs(label)), target.weight)


def gamma(pred: np.ndarray, target: Target) -> float:
    from ._pointwise_kernels import logf  # numba: imported when the gamma metric runs

    label = target.label  # > 0 (checked)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = -1.0 / pred
        b = -_safe_log(-theta)
        # LightGBM's c = 1/psi * SafeLog(label/psi) - SafeLog(label) with psi = 1: the first
        # log is of a double, the second of the float32 label (logf), so c is not quite 0.
        c = np.log(label) - logf(label.astype(np.float32)).astype(np.float64)
        values = -((label * theta - b) + c)
    return _mean(values, target.weight)


def gamma_deviance(pred: np.ndarray, target: Target) -> float:
    """Twice the *sum* (not the mean) of the per-row deviances, as LightGBM reports it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tmp = target.label / (pred + 1.0e-9)
        values = tmp - _safe_log(tmp) - 1.0
    total = values.sum() if target.weight is None else np.dot(values, target.weight)
    return float(total * 2.0)


def tweedie(pred: np.ndarray, target: Target, variance_power: float) -> float:
    rho = variance_power
    log_score = np.log(np.maximum(pred, _SCORE_EPSILON))
    a = target.label * np.exp((1.0 - rho) * log_score) / (1.0 - rho)
    b = np.exp((2.0 - rho) * log_score) / (2.0 - rho)
    return _mean(-a + b, target.weight)


def check_positive_labels(name: str, target: Target) -> None:
    """The gamma metrics need labels > 0 (LightGBM: ``CHECK_GT(label, 0)``)."""
    bad = ~(target.label > 0)
    if bad.any():
        raise ValueError(f"metric {name!r} needs labels > 0; found {np.unique(target.label[bad])[:5].tolist()}")


# ------------------------------------------------------------------------- binary


def binary_logloss(prob: np.ndarray, target: Target) -> float:
    p_true = np.where(target.label > 0, prob, 1.0 - prob)
    return _mean(_neg_log_clamped(p_true), target.weight)


def binary_error(prob: np.ndarray, target: Target) -> float:
    wrong = np.where(prob <= 0.5, target.label > 0, target.label <= 0)
    return _mean(wrong.astype(np.float64), target.weight)


def _xent(label: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """LightGBM's ``XentLoss``: cross-entropy with both logs clamped at ``1e-12``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = label * np.log(np.where(prob > _LOG_ARG_EPSILON, prob, _LOG_ARG_EPSILON))
        q = 1.0 - prob
        # ``1.0f - label`` is float32 arithmetic in LightGBM (the label is a float32)
        complement = (np.float32(1.0) - label.astype(np.float32)).astype(np.float64)
        b = complement * np.log(np.where(q > _LOG_ARG_EPSILON, q, _LOG_ARG_EPSILON))
    return -(a + b)


def _xent_mean(values: np.ndarray, weight: np.ndarray | None) -> float:
    """The cross-entropy metrics' mean: their weight total is a float32 sum, added in pairs
    (LightGBM's ``Common::ObtainMinMaxSum``), not the double sum of the other metrics."""
    if weight is None:
        return _mean(values, None)
    w32 = weight.astype(np.float32)
    if w32.shape[0] % 2:
        terms = np.concatenate((w32[:1], w32[1::2] + w32[2::2]))
    else:
        terms = w32[0::2] + w32[1::2]
    total = np.cumsum(terms, dtype=np.float32)[-1]  # cumsum adds in order, in float32
    return float(np.dot(values, weight) / float(total))


def cross_entropy(prob: np.ndarray, target: Target) -> float:
    return _xent_mean(_xent(target.label, prob), target.weight)


def kullback_leibler(prob: np.ndarray, target: Target) -> float:
    """Cross-entropy plus the (weighted mean) entropy of the labels, which is <= 0."""
    label = target.label
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = np.where(label > 0, label * np.log(label), 0.0)
        q = 1.0 - label
        entropy = entropy + np.where(q > 0, q * np.log(q), 0.0)
    return _xent_mean(entropy, target.weight) + _xent_mean(_xent(label, prob), target.weight)


def check_unit_interval_labels(name: str, target: Target) -> None:
    """The cross-entropy metrics need labels in [0, 1] and non-negative weights of positive sum."""
    label = target.label
    bad = ~((label >= 0) & (label <= 1))
    if bad.any():
        raise ValueError(f"metric {name!r} needs labels in [0, 1]; found {np.unique(label[bad])[:5].tolist()}")
    if target.weight is not None:
        if np.any(target.weight < 0):
            raise ValueError(f"metric {name!r} needs non-negative weights")
        if not target.weight.sum() > 0:
            raise ValueError(f"metric {name!r} needs weights with a positive sum")


# ------------------------------------------------------------------------- multiclass


def _true_class(prob: np.ndarray, target: Target) -> np.ndarray:
    return prob[np.arange(prob.shape[0]), target.label.astype(np.int64)]


def multi_logloss(prob: np.ndarray, target: Target) -> float:
    return _mean(_neg_log_clamped(_true_class(prob, target)), target.weight)


def multi_error(prob: np.ndarray, target: Target, top_k: int) -> float:
    """Top-k error: wrong unless at most ``top_k`` classes (the true one included) score at
    least as high as the true class, so ties count against the model."""
    num_at_least = np.sum(prob >= _true_class(prob, target)[:, None], axis=1)
    return _mean((num_at_least > top_k).astype(np.float64), target.weight)
