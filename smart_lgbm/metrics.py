"""Evaluation metrics on tracked raw scores, equal to LightGBM's metrics of the same name.

Metrics see ``loss.transform(raw)``, as LightGBM's metrics see the objective's converted
output (probabilities for ``binary``/``multiclass``; raw scores for custom objectives).
The engine never asks LightGBM for metrics: its tree-fitting Booster has a custom
objective, for which LightGBM's metrics would see raw scores.  Each function here
reproduces the corresponding LightGBM metric (clamping, tie handling, weighting) and
``tests/test_metrics.py`` checks it against LightGBM on trained models.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .losses.base import Loss, Target

_K_EPSILON = 1e-15


def _wmean(values: np.ndarray, weight: np.ndarray | None) -> float:
    return float(values.mean()) if weight is None else float(np.dot(values, weight) / weight.sum())


def binary_logloss(raw: np.ndarray, target: Target, loss: Loss) -> float:
    prob = loss.transform(raw)
    p_true = np.where(target.label > 0, prob, 1.0 - prob)
    return _wmean(-np.log(np.maximum(p_true, _K_EPSILON)), target.weight)


def binary_error(raw: np.ndarray, target: Target, loss: Loss) -> float:
    prob = loss.transform(raw)
    wrong = (prob > 0.5) != (target.label > 0)
    return _wmean(wrong.astype(np.float64), target.weight)


def auc(raw: np.ndarray, target: Target, loss: Loss) -> float:
    """Weighted ROC AUC; tied scores count half, as in LightGBM (and scikit-learn)."""
    w = np.ones_like(raw) if target.weight is None else target.weight
    pos = target.label > 0
    order = np.argsort(-raw, kind="stable")
    s, wp, wn = raw[order], (w * pos)[order], (w * ~pos)[order]
    # group ties: cumulative sums at the end of each run of equal scores
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp = np.cumsum(wp)[ends]
    fp = np.cumsum(wn)[ends]
    if tp[-1] <= 0 or fp[-1] <= 0:
        return 1.0  # LightGBM's value when one class is absent
    tp0 = np.r_[0.0, tp[:-1]]
    fp0 = np.r_[0.0, fp[:-1]]
    return float(np.sum((fp - fp0) * (tp + tp0) / 2.0) / (tp[-1] * fp[-1]))


def l2(raw: np.ndarray, target: Target, loss: Loss) -> float:
    return _wmean((loss.transform(raw) - target.label) ** 2, target.weight)


def rmse(raw: np.ndarray, target: Target, loss: Loss) -> float:
    return float(np.sqrt(l2(raw, target, loss)))


def l1(raw: np.ndarray, target: Target, loss: Loss) -> float:
    return _wmean(np.abs(loss.transform(raw) - target.label), target.weight)


def multi_logloss(raw: np.ndarray, target: Target, loss: Loss) -> float:
    prob = loss.transform(raw)
    p_true = prob[np.arange(prob.shape[0]), target.label.astype(np.int64)]
    return _wmean(-np.log(np.maximum(p_true, _K_EPSILON)), target.weight)


def multi_error(raw: np.ndarray, target: Target, loss: Loss) -> float:
    """Error at top-1: wrong when another class scores at least as high (ties are errors)."""
    prob = loss.transform(raw)
    p_true = prob[np.arange(prob.shape[0]), target.label.astype(np.int64)]
    num_at_least = np.sum(prob >= p_true[:, None], axis=1)
    return _wmean((num_at_least > 1).astype(np.float64), target.weight)


MetricFn = Callable[[np.ndarray, Target, Loss], float]

#: metric name -> (function, higher is better)
METRICS: dict[str, tuple[MetricFn, bool]] = {
    "binary_logloss": (binary_logloss, False),
    "binary_error": (binary_error, False),
    "auc": (auc, True),
    "l2": (l2, False),
    "rmse": (rmse, False),
    "l1": (l1, False),
    "multi_logloss": (multi_logloss, False),
    "multi_error": (multi_error, False),
}

ALIASES = {
    "binary": "binary_logloss", "mean_squared_error": "l2", "mse": "l2", "regression": "l2",
    "regression_l2": "l2", "l2_root": "rmse", "root_mean_squared_error": "rmse", "mae": "l1",
    "mean_absolute_error": "l1", "regression_l1": "l1", "multiclass": "multi_logloss",
    "softmax": "multi_logloss", "lambdarank": "ndcg", "rank_xendcg": "ndcg", "xendcg": "ndcg",
    "xe_ndcg": "ndcg", "xe_ndcg_mart": "ndcg", "xendcg_mart": "ndcg",
}


class Evaluator:
    """Evaluates the configured metrics on raw scores, in LightGBM's result layout.

    Parameters
    ----------
    names : list of str
        LightGBM metric names or aliases (``ndcg`` expands to ``ndcg@k`` for ``eval_at``).
    loss : Loss
    eval_at : list of int
    """

    def __init__(self, names: list[str], loss: Loss, eval_at: list[int]) -> None:
        self.loss = loss
        self.eval_at = eval_at
        self.names: list[str] = []
        for name in names:
            main = ALIASES.get(name.lower(), name.lower())
            if main != "ndcg" and main not in METRICS:
                accepted = ", ".join(sorted([*METRICS, "ndcg"]))
                raise ValueError(f"metric {name!r} is not supported by the engine; accepted: {accepted}, None")
            if main not in self.names:
                self.names.append(main)

    def evaluate(self, raw: np.ndarray, target: Target) -> list[tuple[str, float, bool]]:
        """[(metric name, value, higher is better), ...] as LightGBM reports them."""
        out = []
        for name in self.names:
            if name == "ndcg":
                if target.group is None:
                    raise ValueError("metric 'ndcg' needs query groups: give the Dataset a group")
                from .ranking_metrics import ndcg_at

                gain = getattr(self.loss, "label_gain", None)
                values = ndcg_at(raw, target.label, target.group, self.eval_at, label_gain=gain)
                out.extend((f"ndcg@{k}", float(v), True) for k, v in zip(self.eval_at, values))
            else:
                fn, higher = METRICS[name]
                out.append((name, fn(raw, target, self.loss), higher))
        return out
