"""Evaluation metrics on tracked raw scores, equal to LightGBM's metrics of the same name.

The engine never asks LightGBM for metrics: its tree-fitting Booster has a custom
objective, for which LightGBM's metrics would see raw scores.  :class:`Evaluator` reads the
metric parameters the way LightGBM does and reports what ``lightgbm.train`` would report
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from . import curves as cm
from . import pointwise as pm
from .._engine.param_values import integer, number, number_list
from ..losses._ranking import check_label_gain
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
_REFUSED = {
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
_NO_METRIC = {"none", "null", "custom", "na"}


def _accepted() -> str:
    return ", ".join(sorted([*METRICS, *AT_K_METRICS])) + " (or None)"


def metric_names(params: Mapping[str, Any], loss: Loss) -> list[str]:
    """Main names of the metrics in ``params["metric"]``, in LightGBM's order and rules.

    Raises ``ValueError`` naming the entry for anything LightGBM does not know as a
    metric, for ``cross_entropy_lambda`` and for a metric that does not fit the loss
    (multiclass metrics with other objectives and the reverse, as LightGBM does).
    """
    value = params.get("metric", None)
    if value is None or (isinstance(value, (str, list, tuple)) and len(value) == 0):
        entries = [loss.default_metric] if loss.default_metric else []
    elif isinstance(value, str):
        entries = value.split(",")
    elif isinstance(value, (list, tuple)):
        entries = list(value)
    else:
        raise TypeError(f"metric must be a string or a list of strings, got {type(value).__name__}")
    names: list[str] = []
    multiclass_loss = loss.num_model_per_iteration > 1
    for entry in entries:
        if entry is None:
            continue
        if not isinstance(entry, str):
            raise TypeError(f"metric entries must be strings, got {type(entry).__name__} {entry!r}")
        if entry == "":
            continue  # LightGBM skips empty entries ("auc," is "auc")
        if entry != entry.strip():
            raise ValueError(f"metric {entry!r} has spaces around it; LightGBM would ignore it silently. "
                             f"Write {entry.strip()!r}")
        key = entry.lower()
        if key in _NO_METRIC:
            continue
        main = ALIASES.get(key, key)
        if main in _REFUSED:
            raise ValueError(f"metric {entry!r} is not supported: {_REFUSED[main]}; accepted: {_accepted()}")
        spec = METRICS.get(main) or AT_K_METRICS.get(main)
        if spec is None:
            hint = ""
            if "@" in main:
                base, _, k = main.partition("@")
                hint = f" (for {main} give metric={base!r} and eval_at=[{k}]" + (
                    ", or multi_error_top_k" if base == "multi_error" else "") + ")"
            raise ValueError(f"metric {entry!r} is not a LightGBM metric{hint}; accepted: {_accepted()}")
        if spec.multiclass != multiclass_loss:
            kind = "a multiclass" if multiclass_loss else "a single-output"
            fitting = sorted(n for n, m in {**METRICS, **AT_K_METRICS}.items() if m.multiclass == multiclass_loss)
            raise ValueError(f"metric {entry!r} does not fit {kind} objective (LightGBM: \"Multiclass objective "
                             f"and metrics don't match\"); with this objective use: {', '.join(fitting)}")
        if main not in names:
            names.append(main)
    return names


def _positive(params: Mapping[str, Any], key: str, default: float) -> float:
    value = number(params, key, default)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{key} must be a finite number > 0, got {params.get(key)!r}")
    return value


def _eval_at(params: Mapping[str, Any]) -> tuple[int, ...]:
    value = params.get("eval_at", None)
    values = [] if value is None else number_list(value, "eval_at")
    if not values:
        return MetricOptions.eval_at  # LightGBM's default for an empty eval_at too
    if any(v != int(v) for v in values):
        raise TypeError(f"eval_at must be a list of positive integers, got {value!r}")
    if any(v <= 0 for v in values):
        raise ValueError(f"eval_at must contain positive integers, got {value!r}")
    return tuple(sorted(int(v) for v in values))  # LightGBM sorts eval_at


def metric_options(params: Mapping[str, Any], loss: Loss) -> MetricOptions:
    """Read and check the metric parameters of ``params`` (main names, see :func:`canonicalize`)."""
    p = params
    top_k = integer(p, "multi_error_top_k", 1)
    if top_k < 1:
        raise ValueError(f"multi_error_top_k must be an integer > 0, got {params['multi_error_top_k']!r}")
    if "metric_freq" in p and integer(p, "metric_freq", 1) < 1:
        raise ValueError(f"metric_freq must be an integer > 0, got {p['metric_freq']!r}")
    rho = number(p, "tweedie_variance_power", 1.5)
    if not 1.0 <= rho < 2.0:
        raise ValueError(f"tweedie_variance_power must be in [1, 2), got {p['tweedie_variance_power']!r}")
    gain = p.get("label_gain", getattr(loss, "label_gain", None))
    weights = p.get("auc_mu_weights", None)
    if weights is not None:
        weights = cm.auc_mu_weight_matrix(np.asarray(number_list(weights, "auc_mu_weights")),
                                          loss.num_model_per_iteration)
    elif loss.num_model_per_iteration > 1:
        weights = cm.auc_mu_weight_matrix(None, loss.num_model_per_iteration)
    return MetricOptions(
        eval_at=_eval_at(p),
        label_gain=None if gain is None else tuple(check_label_gain(gain).tolist()),
        multi_error_top_k=top_k,
        auc_mu_weights=weights,
        alpha=_positive(p, "alpha", 0.9),
        fair_c=_positive(p, "fair_c", 1.0),
        tweedie_variance_power=rho,
    )


class Evaluator:
    """Evaluates the configured metrics on raw scores, in LightGBM's result layout.

    Parameters
    ----------
    params : mapping
        LightGBM parameters under their main names (``smart_lgbm.params.canonicalize``);
        see the module docstring for the ones read here.  Every one is checked now, before
        any data is seen.
    loss : Loss
        The objective: its converted output, default metric and number of classes.

    Attributes
    ----------
    names : list of str
        Main names of the metrics (``ndcg``, ``multi_error``...).
    output_names : list of str
        The names results are reported under (``ndcg@1``, ``multi_error@2``...), in order.
    """

    def __init__(self, params: Mapping[str, Any], loss: Loss) -> None:
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping of LightGBM parameters, got {type(params).__name__}")
        self.loss = loss
        self.names = metric_names(params, loss)
        self.options = metric_options(params, loss)
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
