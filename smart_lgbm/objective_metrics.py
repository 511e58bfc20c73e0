"""Right metrics and probabilities for :class:`smart_lgbm.SmartObjective` in stock LightGBM jobs.

With any callable objective LightGBM evaluates its metrics on raw scores: a
``binary_logloss`` of a model whose true log-loss is 0.13 comes out negative, and early
stopping and ``lightgbm.cv`` then act on wrong numbers.  This module gives the objective

* :class:`SmartMetric`: a ``feval`` (``lightgbm.train``/``cv``) and ``eval_metric``
  (LightGBM's estimators) computing LightGBM's metrics, under LightGBM's names, on the
  loss's transformed scores with the engine's metrics (:mod:`smart_lgbm.metrics`);
* :func:`raw_score_metric_error`: the clear error the objective's callback raises when
  LightGBM itself would compute such a metric on raw scores for a validation set or the
  training set;
* :func:`finalize`: the trained Booster as the stock objective's model (its ``objective=``
  line, the constant initial score folded into the first trees), whose ``predict`` gives
  probabilities.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import Any

import lightgbm as lgb
import numpy as np

from . import _lightgbm
from .losses.base import Loss, Target
from ._engine import canonicalize, evaluator_for
from .metrics import ALIASES, AT_K_METRICS, METRICS

#: LightGBM metrics that it computes on raw scores even with its own objectives: right
#: with a custom objective too.  Every other metric sees the objective's converted output.
_RAW_SCORE_METRICS = frozenset({"auc", "average_precision", "auc_mu", "ndcg", "map"})
#: Parameters that change what a metric computes or how it is named.
_METRIC_PARAMS = ("eval_at", "label_gain", "multi_error_top_k", "auc_mu_weights", "alpha", "fair_c",
                  "tweedie_variance_power")


def _has_output_transform(loss: Loss) -> bool:
    return type(loss).transform is not Loss.transform


def _metric_entries(value: Any) -> list[str]:
    if value is None:
        return []
    entries = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    return [e.strip().lower() for e in entries if isinstance(e, str) and e.strip()]


def _forget(cache: dict, key: int, ref: weakref.ref) -> None:
    """Drop a cached Target whose label array has been freed (not a newer one at that id)."""
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]


class SmartMetric:
    """LightGBM's metrics of a loss's transformed scores, as ``feval`` or ``eval_metric``.

    Called as ``metric(preds, eval_data)`` by ``lightgbm.train``/``lightgbm.cv`` and as
    ``metric(y_true, y_pred, weight, group)`` by LightGBM's estimators (which count the
    parameters of the callable); ``preds`` are the raw scores LightGBM hands a custom
    metric.  Returns ``[(name, value, higher_is_better), ...]`` with the names and values
    ``lightgbm.train`` reports for the stock objective (``binary_logloss``, ``ndcg@5``...).

    Parameters
    ----------
    loss : Loss
        The objective's loss (its ``transform`` and default metric).
    params : dict, optional
        LightGBM metric parameters: ``metric`` (default: the loss's default metric),
        ``eval_at``, ``label_gain``, ``multi_error_top_k``, ``auc_mu_weights``, ``alpha``,
        ``fair_c``, ``tweedie_variance_power``.  Checked now.
    """

    def __init__(self, loss: Loss, params: dict[str, Any] | None = None) -> None:
        params = canonicalize(dict(params or {}))
        self.loss = loss
        self.params = params
        self._evaluator = evaluator_for(params, loss)
        if not self._evaluator.names:
            raise ValueError(f"metric={params.get('metric')!r} names no metric; give a LightGBM metric name "
                             f"(e.g. {loss.default_metric or 'l2'!r})")
        self._targets: dict[int, tuple[weakref.ref, Any, Any, Target]] = {}

    @property
    def names(self) -> list[str]:
        """The names results are reported under, in order."""
        return list(self._evaluator.output_names)

    def __call__(self, preds_or_y_true: Any, dataset_or_y_pred: Any, weight: Any = None,
                 group: Any = None) -> list[tuple[str, float, bool]]:
        if isinstance(dataset_or_y_pred, lgb.Dataset):
            data = dataset_or_y_pred
            raw, label, weight, group = preds_or_y_true, data.get_label(), data.get_weight(), data.get_group()
        else:
            raw, label = dataset_or_y_pred, preds_or_y_true
        raw = np.asarray(raw, dtype=np.float64)
        target = self._target_for(np.asarray(label), weight, group)
        k = self.loss.num_model_per_iteration
        if k > 1 and raw.ndim == 1:  # older layouts: class-major flat scores
            raw = raw.reshape(k, -1).T
        expected = (target.num_rows,) if k == 1 else (target.num_rows, k)
        if raw.shape != expected:
            raise ValueError(f"scores of shape {raw.shape} do not fit {target.num_rows} rows and "
                             f"{k} model(s) per iteration")
        return self._evaluator.evaluate(raw, target)

    def _target_for(self, label: np.ndarray, weight: Any, group: Any) -> Target:
        """The validated Target of an evaluation set, made once per label array.

        LightGBM hands the same label array every iteration (as for the objective), so the
        array's identity, held by a weak reference, keys the cache.
        """
        key = id(label)
        entry = self._targets.get(key)
        if entry is not None and entry[0]() is label and entry[1] is weight and entry[2] is group:
            return entry[3]
        target = Target(
            label=np.asarray(label, dtype=np.float32).astype(np.float64).reshape(-1),
            weight=None if weight is None else np.asarray(weight, dtype=np.float32).astype(np.float64).reshape(-1),
            group=None if group is None else np.asarray(group, dtype=np.int64).reshape(-1),
        )
        try:
            ref = weakref.ref(label, functools.partial(_forget, self._targets, key))
        except TypeError:  # not weak-referenceable (a list): do not cache
            return target
        self._targets[key] = (ref, weight, group, target)
        return target

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_targets"] = {}
        return state

    def __deepcopy__(self, memo: dict) -> SmartMetric:
        return self  # stateless apart from its cache; lightgbm may deep-copy its arguments

    def __repr__(self) -> str:
        return f"SmartMetric({self.names})"


def metric_params(metric: str | Sequence[str] | None, options: dict[str, Any]) -> dict[str, Any]:
    """Parameters of a :class:`SmartMetric`, refusing options that are not metric parameters."""
    unknown = sorted(set(canonicalize(dict(options))) - set(_METRIC_PARAMS))
    if unknown:
        raise TypeError(f"unknown metric parameter(s) {unknown}; accepted: {', '.join(_METRIC_PARAMS)}")
    return {**options, "metric": metric} if metric is not None else dict(options)


def raw_score_metric_error(params: dict[str, Any], loss: Loss) -> str | None:
    """The error to raise when LightGBM would report a metric of raw scores as the loss's, or None.

    ``params`` are the run's LightGBM parameters (``env.params``).  A metric LightGBM
    computes on the objective's converted output (log-loss, error, the regression
    metrics...) gets raw scores with a custom objective; that is right only for a loss
    without an output transform.  The objective's callback raises it at once when the run
    has validation sets, and makes the Booster's ``eval_train`` raise it (the training set,
    ``valid_sets=[dtrain]`` or ``eval_set=[(X, y)]``, is evaluated through that alone).
    """
    if not _has_output_transform(loss):
        return None
    names = [ALIASES.get(e, e) for e in _metric_entries(canonicalize(params).get("metric"))]
    wrong = [n for n in names if (n in METRICS or n in AT_K_METRICS) and n not in _RAW_SCORE_METRICS]
    if wrong:
        return (
            f"metric {', '.join(map(repr, wrong))} would be computed by LightGBM on raw scores (a custom objective "
            "has no output transform), so the reported values, early stopping and lightgbm.cv would act on wrong "
            "numbers. Set 'metric': 'None' and pass feval=obj.feval (lightgbm.train, lightgbm.cv) or "
            "metric='None', eval_metric=obj.feval (LightGBM's estimators); obj.metrics('auc', ...) gives other "
            "metrics. Metrics of raw scores (auc, average_precision, auc_mu, ndcg, map) are right as they are."
        )
    return None


def _constant_init(init_score: Any, k: int) -> np.ndarray:
    """The per-model constant of ``init_score``: a number, K numbers, or a per-row array
    (``(n,)``, or ``(n, K)`` for K models per iteration) that is the same on every row."""
    values = np.asarray(init_score, dtype=np.float64)
    if values.ndim == 0:
        values = values.reshape(1)
    elif values.ndim == 2 or (values.ndim == 1 and k == 1 and values.shape[0] > 1):
        rows = values.reshape(-1, 1) if values.ndim == 1 else values
        if rows.shape[1] != k or not np.array_equal(rows, np.broadcast_to(rows[:1], rows.shape)):
            raise ValueError(f"init_score must be the same for every row (shape (n, {k}) or a constant) to be "
                             "folded into the model, as obj.init_score gives it; a per-row init_score cannot be "
                             "part of a model: add it to the raw predictions yourself")
        values = rows[0]
    if values.shape != (k,) or not np.all(np.isfinite(values)):
        raise ValueError(f"init_score must be a finite number or {k} finite numbers (one per model of an "
                         f"iteration), got {init_score!r}")
    return values


def finalize(booster: lgb.Booster, loss: Loss, init_score: Any = None) -> lgb.Booster:
    """A Booster whose model is the stock objective's: see :meth:`SmartObjective.finalize`."""
    if not isinstance(booster, lgb.Booster):
        raise TypeError(f"booster must be a lightgbm.Booster (for an estimator pass est.booster_), "
                        f"got {type(booster).__name__}")
    line = loss.model_objective_line()
    if line is None:
        raise ValueError(f"{loss.describe()} has no stock LightGBM objective to write into the model; "
                         "transform raw predictions with obj.loss.transform(booster.predict(X, raw_score=True))")
    k = loss.num_model_per_iteration
    bias = None if init_score is None else _constant_init(init_score, k)
    # every tree (model_to_string would stop at an early-stopped run's best iteration), and the
    # best iteration carried over, so that predict() defaults to it as on the original
    text = _lightgbm.model_with_objective(booster.model_to_string(num_iteration=-1), line, k, bias,
                                          booster.pandas_categorical)
    final = lgb.Booster(model_str=text)
    final.best_iteration = booster.best_iteration
    return final
