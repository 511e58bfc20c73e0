"""Evaluation metrics on tracked raw scores, equal to LightGBM's metrics of the same name.

The engine never asks LightGBM for metrics: its tree-fitting Booster has a custom
objective, for which LightGBM's metrics would see raw scores.  :class:`Evaluator` reports,
for the metric parameters read the way LightGBM reads them
(:func:`smart_lgbm._engine.metric_params.evaluator_for`), what ``lightgbm.train`` would report
for the same model: the same names (``ndcg@5``, ``map@3``, ``multi_error@2``), in the same
order, with the same values (to the last few bits: LightGBM sums in parallel chunks).

Every LightGBM metric is supported except ``cross_entropy_lambda`` (meant for the
``cross_entropy_lambda`` objective, which the engine does not have).  The metric
parameters are honoured as in LightGBM:

``metric``
    Names and aliases, case-insensitive, as a list or a comma-separated string; repeats
    are dropped; ``None``/``"none"``/``"null"``/``"na"``/``"custom"`` entries add nothing;
    an empty value means the objective's default metric.  Names LightGBM does not know
    are refused here (LightGBM ignores them silently), so is a name with spaces around it.
``eval_at``
    Cut-offs of ``ndcg`` and ``map``, sorted ascending as LightGBM sorts them.
``label_gain``
    Gains of ``ndcg`` (default ``2**l - 1``; with a ranking ``Loss`` object and no
    ``label_gain`` parameter, the loss's gains).
``multi_error_top_k``
    ``multi_error`` becomes the top-k error, reported as ``multi_error@k`` for k > 1.
``auc_mu_weights``
    The flat K x K class-weight matrix of ``auc_mu``.
``alpha``, ``fair_c``, ``tweedie_variance_power``
    Parameters of the ``quantile``/``huber``, ``fair`` and ``tweedie`` metrics.
``metric_freq``, ``is_provide_training_metric``
    LightGBM's command-line tool only; ``lightgbm.train`` ignores them (it evaluates every
    iteration, the training set only when it is among ``valid_sets``), and so does the
    engine.  They are checked as LightGBM checks them.
``first_metric_only``
    Used by the engine's early stopping, as in ``lightgbm.train``.

Metrics see ``loss.transform(raw)`` where LightGBM's see the objective's converted output
(probabilities for ``binary``/``multiclass``, raw scores otherwise), and raw scores where
LightGBM's do (``auc``, ``average_precision``, ``auc_mu``, ``ndcg``, ``map``).  As in
LightGBM, the multiclass metrics (``multi_logloss``, ``multi_error``, ``auc_mu``) go with a
multiclass objective and only they do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import curves as cm
from . import pointwise as pm
from ..losses.base import Loss, Target


@dataclass(frozen=True)
class MetricOptions:
    """The LightGBM parameters that change what a metric computes or how it is named."""

    eval_at: tuple[int, ...] = (1, 2, 3, 4, 5)
    label_gain: tuple[float, ...] | None = None
    multi_error_top_k: int = 1
    auc_mu_weights: np.ndarray | None = None
    alpha: float = 0.9
    fair_c: float = 1.0
    tweedie_variance_power: float = 1.5


class _Scores:
    """Raw scores and, computed once on first use, the objective's converted output."""

    def __init__(self, raw: np.ndarray, loss: Loss) -> None:
        self.raw = raw
        self._loss = loss
        self._converted: np.ndarray | None = None

    @property
    def converted(self) -> np.ndarray:
        if self._converted is None:
            self._converted = self._loss.transform(self.raw)
        return self._converted


MetricFn = Callable[[_Scores, Target, MetricOptions], list[float]]


class Metric(NamedTuple):
    """One LightGBM metric: how to compute it and how LightGBM treats it."""

    fn: MetricFn
    higher_better: bool
    multiclass: bool = False
    check: Callable[[str, Target], None] | None = None


def _converted(fn: Callable[..., float], *option_names: str) -> MetricFn:
    """A metric of the converted output, given the named options."""
    return lambda s, t, o: [fn(s.converted, t, *(getattr(o, name) for name in option_names))]


def _raw(fn: Callable[[np.ndarray, Target], float]) -> MetricFn:
    return lambda s, t, o: [fn(s.raw, t)]


def _ndcg(s: _Scores, t: Target, o: MetricOptions) -> list[float]:
    from .ranking import ndcg_at  # numba: imported when a ranking metric runs

    assert t.group is not None  # the metric's check refused a target without query groups
    return ndcg_at(s.raw, t.label, t.group, list(o.eval_at), label_gain=o.label_gain, weight=t.weight)


def _map(s: _Scores, t: Target, o: MetricOptions) -> list[float]:
    from .ranking import map_at

    assert t.group is not None  # the metric's check refused a target without query groups
    return map_at(s.raw, t.label, t.group, list(o.eval_at), weight=t.weight)


def _auc_mu(s: _Scores, t: Target, o: MetricOptions) -> list[float]:
    assert o.auc_mu_weights is not None  # metric_options sets them for every multiclass loss
    return [cm.auc_mu(s.raw, t, o.auc_mu_weights)]


def _needs_group(name: str, target: Target) -> None:
    if target.group is None:
        raise ValueError(f"metric {name!r} needs query groups: give the Dataset a group")


#: Every metric whose value LightGBM reports under its own name (one value per data set).
METRICS: dict[str, Metric] = {
    "l2": Metric(_converted(pm.l2), False),
    "rmse": Metric(_converted(pm.rmse), False),
    "l1": Metric(_converted(pm.l1), False),
    "quantile": Metric(_converted(pm.quantile, "alpha"), False),
    "huber": Metric(_converted(pm.huber, "alpha"), False),
    "fair": Metric(_converted(pm.fair, "fair_c"), False),
    "poisson": Metric(_converted(pm.poisson), False),
    "mape": Metric(_converted(pm.mape), False),
    "gamma": Metric(_converted(pm.gamma), False, check=pm.check_positive_labels),
    "gamma_deviance": Metric(_converted(pm.gamma_deviance), False, check=pm.check_positive_labels),
    "tweedie": Metric(_converted(pm.tweedie, "tweedie_variance_power"), False),
    "binary_logloss": Metric(_converted(pm.binary_logloss), False),
    "binary_error": Metric(_converted(pm.binary_error), False),
    "auc": Metric(_raw(cm.auc), True),
    "average_precision": Metric(_raw(cm.average_precision), True),
    "cross_entropy": Metric(_converted(pm.cross_entropy), False, check=pm.check_unit_interval_labels),
    "kullback_leibler": Metric(_converted(pm.kullback_leibler), False, check=pm.check_unit_interval_labels),
    "multi_logloss": Metric(_converted(pm.multi_logloss), False, multiclass=True),
    "multi_error": Metric(_converted(pm.multi_error, "multi_error_top_k"), False, multiclass=True),
    "auc_mu": Metric(_auc_mu, True, multiclass=True),
}

#: Metrics reported once per ``eval_at`` cut-off, as ``name@k``.
AT_K_METRICS: dict[str, Metric] = {
    "ndcg": Metric(_ndcg, True, check=_needs_group),
    "map": Metric(_map, True, check=_needs_group),
}

#: LightGBM metrics the engine refuses, with the reason.
REFUSED = {
    "cross_entropy_lambda": "it evaluates the cross_entropy_lambda objective's output, and the engine does "
                            "not support that objective",
}

#: LightGBM's metric aliases (``ParseMetricAlias``); the main names map to themselves implicitly.
ALIASES = {
    "regression": "l2", "regression_l2": "l2", "mean_squared_error": "l2", "mse": "l2",
    "l2_root": "rmse", "root_mean_squared_error": "rmse",
    "regression_l1": "l1", "mean_absolute_error": "l1", "mae": "l1",
    "binary": "binary_logloss",
    "lambdarank": "ndcg", "rank_xendcg": "ndcg", "xendcg": "ndcg", "xe_ndcg": "ndcg", "xe_ndcg_mart": "ndcg",
    "xendcg_mart": "ndcg",
    "mean_average_precision": "map",
    "multiclass": "multi_logloss", "softmax": "multi_logloss", "multiclassova": "multi_logloss",
    "multiclass_ova": "multi_logloss", "ova": "multi_logloss", "ovr": "multi_logloss",
    "xentropy": "cross_entropy", "xentlambda": "cross_entropy_lambda", "kldiv": "kullback_leibler",
    "mean_absolute_percentage_error": "mape",
}

#: Entries of ``metric`` that LightGBM reads as "no metric" (``custom``).
NO_METRIC = {"none", "null", "custom", "na"}


class Evaluator:
    """Evaluates the configured metrics on raw scores, in LightGBM's result layout.

    Build it from LightGBM parameters with :func:`smart_lgbm._engine.metric_params.evaluator_for`,
    which reads and checks them the way LightGBM does, before any data is seen.

    Parameters
    ----------
    loss : Loss
        The objective: its converted output, default metric and number of classes.
    names : sequence of str
        Main names of the metrics (``ndcg``, ``multi_error``...), in LightGBM's order.
    options : MetricOptions
        The metric parameters (cut-offs, gains, ...).

    Attributes
    ----------
    names : list of str
        Main names of the metrics.
    output_names : list of str
        The names results are reported under (``ndcg@1``, ``multi_error@2``...), in order.
    """

    def __init__(self, loss: Loss, names: Sequence[str], options: MetricOptions) -> None:
        self.loss = loss
        self.names = list(names)
        self.options = options
        self.output_names: list[str] = []
        for name in self.names:
            self.output_names.extend(self._outputs(name))

    def _outputs(self, name: str) -> list[str]:
        if name in AT_K_METRICS:
            return [f"{name}@{k}" for k in self.options.eval_at]
        if name == "multi_error" and self.options.multi_error_top_k != 1:
            return [f"multi_error@{self.options.multi_error_top_k}"]
        return [name]

    def check(self, target: Target) -> None:
        """Refuse data a metric cannot use (``ValueError`` naming the metric), once per target.

        These are the checks LightGBM makes when it sets a metric up on a data set: query
        groups for ``ndcg``/``map``, labels > 0 for the gamma metrics, labels in [0, 1] for
        the cross-entropies.  :meth:`evaluate` makes them; stock LightGBM also makes them on
        the training set (when its Booster is created), whether or not it is evaluated.
        """
        key = ("metrics_checked", tuple(self.names))
        if target.cache.get(key):
            return
        for name in self.names:
            spec = METRICS.get(name) or AT_K_METRICS[name]
            if spec.check is not None:
                spec.check(name, target)
        target.cache[key] = True

    def evaluate(self, raw: np.ndarray, target: Target) -> list[tuple[str, float, bool]]:
        """[(output name, value, higher is better), ...] as LightGBM reports them."""
        self.check(target)
        scores = _Scores(raw, self.loss)
        out: list[tuple[str, float, bool]] = []
        for name in self.names:
            spec = METRICS.get(name) or AT_K_METRICS[name]
            values = spec.fn(scores, target, self.options)
            out.extend((output, float(v), spec.higher_better) for output, v in zip(self._outputs(name), values, strict=True))
        return out
