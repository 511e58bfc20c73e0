"""Reading LightGBM's parameters: aliases, the objective, what is refused, what Datasets get.

The engine takes the same ``params`` dict as ``lightgbm.train``.  This module resolves
aliases with LightGBM's own alias table (:func:`canonicalize`), turns ``objective`` into a
:class:`~smart_lgbm.losses.Loss` (:func:`resolve_loss`), refuses parameters that cannot
work with a row sampler, with the reason and the alternative (:func:`refuse_unsupported`,
:func:`refuse_for_sampler`), and derives what the engine's own Datasets get
(:func:`dataset_params`).  :func:`smart_lgbm._engine.config.make_config` calls these once per
run; what the engine does with each parameter is one table, :mod:`.param_roles`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _lightgbm
from ..losses.base import Loss
from ..losses.binary import BinaryLogloss
from ..losses.cross_entropy import CrossEntropy
from ..losses.multiclass import MulticlassSoftmax
from ..losses.regression import Huber, SquaredError
from .param_roles import NOT_FOR_DATASETS, OBJECTIVE_FAMILIES, REFUSED_OBJECTIVES
from .param_values import flag as _flag
from .param_values import number as _number
from .param_values import number_list as _number_list


def canonicalize(params: dict[str, Any] | None) -> dict[str, Any]:
    """Copy of ``params`` with every alias replaced by LightGBM's main parameter name.

    When a name and its aliases are all given, the main name wins, as in LightGBM.
    """
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    alias_to_main: dict[str, str] = {}
    for main, names in _lightgbm.param_aliases().items():
        for name in names:
            alias_to_main.setdefault(name, main)
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:  # lightgbm.train drops None-valued parameters too
            continue
        main = alias_to_main.get(key, key)
        if main in out and key != main:
            warnings.warn(f"{key}={value!r} ignored in favour of {main}={out[main]!r}", stacklevel=3)
            continue
        out[main] = value
    return out


#: LightGBM's integer parameters are C ints.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _flat_values(values: Any) -> list[Any]:
    """The scalars of a parameter value (nested lists such as interaction_constraints too)."""
    if isinstance(values, (list, tuple, np.ndarray)):
        return [v for item in values for v in _flat_values(item)]
    return [values]


def refuse_unsupported(params: dict[str, Any]) -> None:
    """Raise ValueError for parameters that cannot work with a row sampler, saying why.

    ``params`` must be canonical (:func:`canonicalize`) and complete: during a run, the
    run's parameters updated with the new ones, since a refusal can depend on two of them
    (``bagging_fraction`` refuses only with ``bagging_freq > 0``).
    """
    for key, value in params.items():
        # LightGBM checks the ranges of some parameters, not their finiteness (learning_rate=inf,
        # max_delta_step=nan train to NaN or constant models); no parameter means anything at nan/inf
        values = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
        flat = _flat_values(values)
        if any(isinstance(v, (float, np.floating)) and not np.isfinite(v) for v in flat):
            raise ValueError(f"parameter {key}={value!r} must be finite")
        # LightGBM reads integer parameters as 32-bit ints: a larger one wraps around or fails
        # its range check deep in training (the engine derives its own seeds from ``seed``)
        if key != "seed" and any(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                 and not INT32_MIN <= v <= INT32_MAX for v in flat):
            raise ValueError(f"parameter {key}={value!r} is outside LightGBM's integer range "
                             f"[{INT32_MIN}, {INT32_MAX}]")
    reason = stock_only_reason(params)
    if reason is not None:
        raise ValueError(reason)


def stock_only_reason(params: Mapping[str, Any]) -> str | None:
    """Why the engine refuses ``params`` (canonical) while stock ``lightgbm.train`` trains
    them (another boosting, GOSS, bagging, linear trees...), or None: the refusal's message,
    which ``sampler="auto"`` reads as "train these with stock LightGBM"."""
    boosting = str(params.get("boosting", "gbdt")).lower()
    if boosting not in ("gbdt", "gbrt"):
        return (
            f"boosting={boosting!r} is not supported: the engine builds each iteration's trees "
            "from a row sample with importance-reweighted gradients, which only plain gradient "
            "boosting (boosting='gbdt') can use; for GOSS use data_sample_strategy='goss' in stock lightgbm.train"
        )
    if str(params.get("data_sample_strategy", "bagging")).lower() == "goss":
        return (
            "data_sample_strategy='goss' is not supported: the sampler argument replaces LightGBM's "
            "row sampling; compare against GOSS with stock lightgbm.train, or use sampler=FirstOrder(rate=...)"
        )
    # LightGBM bags only with bagging_freq > 0 (src/boosting/bagging.hpp); a fraction below 1
    # without it changes nothing, in stock training as in the engine, and is accepted.
    if _number(params, "bagging_freq", 0) > 0:
        for key in ("bagging_fraction", "pos_bagging_fraction", "neg_bagging_fraction"):
            if key in params and _number(params, key, 1.0) < 1.0:
                return (
                    f"{key}={params[key]!r} with bagging_freq={params['bagging_freq']!r} is not supported: "
                    "LightGBM's bagging would sample again inside the engine's sample; use "
                    "sampler=Uniform(rate=...) for stochastic gradient boosting"
                )
    if _flag(params.get("linear_tree", False)):
        return "linear_tree=True is not supported by the engine; use stock lightgbm.train"
    if str(params.get("device_type", "cpu")).lower() != "cpu":
        return f"device_type={params['device_type']!r} is not supported; the engine runs on 'cpu'"
    return None


def refuse_for_sampler(params: Mapping[str, Any], sampler: Any) -> None:
    """Raise ValueError for parameters that only work when every row is in every iteration."""
    from ..samplers import Full

    lazy = params.get("cegb_penalty_feature_lazy")
    if lazy is not None and not isinstance(sampler, Full) and any(v != 0 for v in _number_list(lazy, "cegb_penalty_feature_lazy")):
        raise ValueError(
            "cegb_penalty_feature_lazy is supported with sampler=Full() only: LightGBM charges it once per "
            "(row, feature) and remembers the rows by their position in the training data, which a row "
            "sample changes every iteration; use stock lightgbm.train for it")


def resolve_loss(params: dict[str, Any]) -> Loss:
    """The Loss for ``params["objective"]`` (a LightGBM name or a Loss instance)."""
    objective = params.get("objective", "regression")
    num_class = int(_number(params, "num_class", 1))
    boost_from_average = str(params.get("boost_from_average", True)).lower() not in ("false", "0")
    if isinstance(objective, Loss):
        if num_class > 1 and objective.num_model_per_iteration != num_class:
            raise ValueError(f"num_class={num_class} does not match the loss {objective!r}")
        return objective
    if callable(objective):
        raise TypeError(
            "objective as a callable (preds, dataset) -> (grad, hess) is not supported by the engine, "
            "which needs gradients for all rows as a function of raw scores; wrap it as "
            "smart_lgbm.losses.CustomLoss(grad_hess=lambda label, raw: ...)"
        )
    if not isinstance(objective, str):
        raise TypeError(f"objective must be a LightGBM objective name or a Loss, got {type(objective).__name__}")
    name = OBJECTIVE_FAMILIES.get(objective.lower())
    if name is None:
        accepted = ("accepted: binary, multiclass (softmax), lambdarank, regression (l2, mse, ...), huber, "
                    "cross_entropy (xentropy) or a smart_lgbm.losses.Loss instance (CustomLoss for any other "
                    "twice-differentiable loss)")
        reason = REFUSED_OBJECTIVES.get(objective.lower())
        raise ValueError(f"objective={objective!r} is not supported: {reason}; {accepted}" if reason
                         else f"objective={objective!r} is not supported; {accepted}")
    if name != "multiclass" and num_class > 1:
        raise ValueError(f"num_class={num_class} requires objective='multiclass', got objective={objective!r}")
    if name == "binary":
        return BinaryLogloss(sigmoid=_number(params, "sigmoid", 1.0), boost_from_average=boost_from_average,
                             is_unbalance=_flag(params.get("is_unbalance", False)),
                             scale_pos_weight=_number(params, "scale_pos_weight", 1.0))
    if name == "huber":
        # (LightGBM ignores reg_sqrt for huber, with a warning)
        return Huber(alpha=_number(params, "alpha", 0.9), boost_from_average=boost_from_average)
    if name == "cross_entropy":
        return CrossEntropy(boost_from_average=boost_from_average)
    if name == "regression":
        if _flag(params.get("reg_sqrt", False)):
            # LightGBM would fit sqrt(label) and square every prediction (and what its
            # metrics see); SquaredError does neither, so the result would silently differ.
            raise ValueError("reg_sqrt=True is not supported by the engine; fit a CustomLoss on np.sqrt(label) "
                             "(and square its predictions), or use stock lightgbm.train")
        # "rmse" and its aliases are the L2 objective; lightgbm.train's default metric for
        # all of them is l2 (the objective alias does not carry over to the metric).
        return SquaredError(boost_from_average=boost_from_average)
    if name == "multiclass":
        return MulticlassSoftmax(num_class=num_class, boost_from_average=boost_from_average)
    from ..losses.lambdarank import LambdaRank  # numba import only when ranking

    kwargs: dict[str, Any] = {"sigmoid": _number(params, "sigmoid", 1.0)}
    if "label_gain" in params:
        kwargs["label_gain"] = params["label_gain"]  # a list or LightGBM's "0,1,3" form
    if "lambdarank_truncation_level" in params:
        kwargs["truncation_level"] = int(_number(params, "lambdarank_truncation_level", 30))
    if "lambdarank_norm" in params:
        kwargs["norm"] = str(params["lambdarank_norm"]).lower() not in ("false", "0")
    return LambdaRank(**kwargs)


def training_data_params(train_set: Any, constructed: Any) -> dict[str, Any]:
    """The training Dataset's parameters as ``lightgbm.train`` adds them to the model's:
    the caller's ``Dataset(params=...)`` and the categorical columns it was constructed with.
    An unconstructed training set built with ``reference=`` takes the reference's binning
    parameters over its own, as LightGBM's ``Dataset.construct`` does."""
    out = canonicalize(getattr(train_set, "params", None) or {})
    reference = getattr(train_set, "reference", None)
    if (reference is not None and hasattr(reference, "get_params") and getattr(train_set, "used_indices", None) is None
            and _lightgbm.handle_of(train_set) is None):
        out.update(canonicalize(reference.get_params()))
    columns = (getattr(constructed, "params", None) or {}).get("categorical_column")
    if columns is not None:
        out["categorical_feature"] = columns
    return out


def check_seed(seed: Any) -> int:
    """``seed`` as an int; ValueError unless it is a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def dataset_params(params: dict[str, Any]) -> dict[str, Any]:
    """Params for the engine's internal Datasets: the user's, minus objects LightGBM cannot take."""
    # objective-related keys are cross-checked by LightGBM's Config even for a Dataset
    # (num_class > 1 needs a multiclass objective); binning needs none of them (param_roles)
    out = {k: v for k, v in canonicalize(params).items() if k not in NOT_FOR_DATASETS}
    out["verbosity"] = -1 if int(_number(out, "verbosity", 1)) < 1 else out.get("verbosity", 1)
    return out
