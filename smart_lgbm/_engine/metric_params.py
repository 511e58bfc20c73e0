"""The metric parameters of a run, read once: which metrics, and their options.

LightGBM reads ``metric``, ``eval_at``, ``label_gain``, ``multi_error_top_k``,
``auc_mu_weights``, ``alpha``, ``fair_c``, ``tweedie_variance_power``, ``metric_freq`` and
``is_provide_training_metric`` (see :mod:`smart_lgbm.metrics` for what each means); this
module reads them from a canonical parameter dict (:func:`.params.canonicalize`), refuses
what LightGBM would refuse or silently ignore, and builds the
:class:`~smart_lgbm.metrics.Evaluator` of the run (:func:`evaluator_for`), so that every
metric parameter is checked before any data is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..losses._ranking import check_label_gain
from ..losses.base import Loss
from ..metrics import ALIASES, AT_K_METRICS, METRICS, NO_METRIC, REFUSED, Evaluator, MetricOptions
from ..metrics import curves as cm
from .param_values import integer, number, number_list

__all__ = ["evaluator_for", "metric_names", "metric_options"]


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
        if key in NO_METRIC:
            continue
        main = ALIASES.get(key, key)
        if main in REFUSED:
            raise ValueError(f"metric {entry!r} is not supported: {REFUSED[main]}; accepted: {_accepted()}")
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


def evaluator_for(params: Mapping[str, Any], loss: Loss) -> Evaluator:
    """The :class:`~smart_lgbm.metrics.Evaluator` of the metric parameters in ``params``
    (LightGBM's main names), every one checked now."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of LightGBM parameters, got {type(params).__name__}")
    return Evaluator(loss, metric_names(params, loss), metric_options(params, loss))
