"""LightGBM parameter handling for the engine: aliases, the objective, what is refused.

The engine takes the same ``params`` dict as ``lightgbm.train``.  This module resolves
aliases with LightGBM's own alias table, turns ``objective`` into a :class:`Loss`, refuses
parameters that cannot work with a row sampler (with the reason and the alternative), and
derives the parameter string of the per-iteration tree-fitting Booster.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np

from . import _lightgbm
from ._param_roles import LOSS_AND_METRIC_PARAMS as LOSS_AND_METRIC_PARAMS  # re-exported (boosting.py)
from ._param_roles import (
    ENGINE_ONLY,
    NOT_FOR_DATASETS,
    NOT_IN_MODEL,
    OBJECTIVE_FAMILIES,
    RANDOM_TREE_PARAMS,
    REFUSED_OBJECTIVES,
    TREE_SEEDS,
    USER_SEEDS,
)
from ._param_values import flag as _flag
from ._param_values import integer as _integer
from ._param_values import number_list as _number_list
from ._param_values import number as _number
from .losses.base import Loss
from .losses.binary import BinaryLogloss
from .losses.multiclass import MulticlassSoftmax
from .losses.cross_entropy import CrossEntropy
from .losses.regression import Huber, SquaredError
from .metrics import Evaluator

# What the engine does with each parameter it handles (ENGINE_ONLY, LOSS_AND_METRIC_PARAMS,
# USER_SEEDS, the seeds of the tree learner, what the Datasets and the saved model get, the
# objective names) is one table, smart_lgbm/_param_roles.py; the lists imported above are
# derived from it.  ENGINE_ONLY and LOSS_AND_METRIC_PARAMS stay importable from here.


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
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


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
                                 and not _INT32_MIN <= v <= _INT32_MAX for v in flat):
            raise ValueError(f"parameter {key}={value!r} is outside LightGBM's integer range "
                             f"[{_INT32_MIN}, {_INT32_MAX}]")
    boosting = str(params.get("boosting", "gbdt")).lower()
    if boosting not in ("gbdt", "gbrt"):
        raise ValueError(
            f"boosting={boosting!r} is not supported: the engine builds each iteration's trees "
            "from a row sample with importance-reweighted gradients, which only plain gradient "
            "boosting (boosting='gbdt') can use; for GOSS use data_sample_strategy='goss' in stock lightgbm.train"
        )
    if str(params.get("data_sample_strategy", "bagging")).lower() == "goss":
        raise ValueError(
            "data_sample_strategy='goss' is not supported: the sampler argument replaces LightGBM's "
            "row sampling; compare against GOSS with stock lightgbm.train, or use sampler=FirstOrder(rate=...)"
        )
    # LightGBM bags only with bagging_freq > 0 (src/boosting/bagging.hpp); a fraction below 1
    # without it changes nothing, in stock training as in the engine, and is accepted.
    if _number(params, "bagging_freq", 0) > 0:
        for key in ("bagging_fraction", "pos_bagging_fraction", "neg_bagging_fraction"):
            if key in params and _number(params, key, 1.0) < 1.0:
                raise ValueError(
                    f"{key}={params[key]!r} with bagging_freq={params['bagging_freq']!r} is not supported: "
                    "LightGBM's bagging would sample again inside the engine's sample; use "
                    "sampler=Uniform(rate=...) for stochastic gradient boosting"
                )
    if _flag(params.get("linear_tree", False)):
        raise ValueError("linear_tree=True is not supported by the engine; use stock lightgbm.train")
    if str(params.get("device_type", "cpu")).lower() != "cpu":
        raise ValueError(f"device_type={params['device_type']!r} is not supported; the engine runs on 'cpu'")


def refuse_for_sampler(params: dict[str, Any], sampler: Any) -> None:
    """Raise ValueError for parameters that only work when every row is in every iteration."""
    from .samplers import Full

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
    from .losses.lambdarank import LambdaRank  # numba import only when ranking

    kwargs: dict[str, Any] = {"sigmoid": _number(params, "sigmoid", 1.0)}
    if "label_gain" in params:
        kwargs["label_gain"] = params["label_gain"]  # a list or LightGBM's "0,1,3" form
    if "lambdarank_truncation_level" in params:
        kwargs["truncation_level"] = int(_number(params, "lambdarank_truncation_level", 30))
    if "lambdarank_norm" in params:
        kwargs["norm"] = str(params["lambdarank_norm"]).lower() not in ("false", "0")
    return LambdaRank(**kwargs)


@dataclass
class EngineConfig:
    """Everything the engine derives from ``params`` once per run."""

    params: dict[str, Any]
    loss: Loss
    evaluator: Evaluator
    num_rounds: int
    seed: int
    early_stopping_round: int | None
    early_stopping_min_delta: float
    first_metric_only: bool
    verbosity: int
    tree_params: dict[str, Any] = field(default_factory=dict)

    def booster_params(self, iteration: int) -> str:
        """Parameter string of the tree-fitting Booster for one iteration.

        Every iteration gets its own seed derived from ``seed`` and the iteration, so that
        an iteration's random draws (``feature_fraction`` subsets, ``extra_trees``
        thresholds) depend only on (seed, iteration); a fixed seed would re-seed every
        tree's draws identically.
        """
        if not self.trees_draw_random_numbers():
            iteration = 0  # the seed changes nothing: keep one string, spare LightGBM a reset
        seeds = {"seed": _derived_seed(self.seed, iteration, 0)}
        # An explicit feature_fraction_seed / extra_seed overrides what LightGBM derives from
        # ``seed`` (as in stock): each gets its own per-iteration stream from the user's value.
        for key, tag in TREE_SEEDS.items():
            if key in self.params:
                seeds[key] = _derived_seed(self.params[key], iteration, tag)
        return _lightgbm.params_to_str({**self.tree_params, **seeds})

    def model_params(self, data_params: dict[str, Any] | None = None) -> str:
        """Parameter string whose LightGBM configuration the saved model's ``parameters:``
        section shows: the run's parameters as ``lightgbm.train`` would have been given them
        (the user's seed, not the per-iteration ones; ``num_iterations``; the objective's
        parameters), except ``objective`` (still ``custom``) and ``metric``, which the
        tree-fitting Booster cannot change (:func:`smart_lgbm._lightgbm.assemble_model_string`
        writes them).  ``data_params``: the training Dataset's parameters, which
        ``lightgbm.train`` adds to the Booster's (:func:`training_data_params`)."""
        params = {k: v for k, v in self.tree_params.items() if k != "metric"}  # verbosity stays -1: quiet
        if "force_col_wise" not in self.params:  # the engine's own choice, not the user's
            params["force_col_wise"] = False
        # every parameter the engine handles itself, as given (loss, metric, early stopping,
        # explicit seeds), except those the tree-fitting Booster cannot take
        params.update({k: v for k, v in self.params.items()
                       if k in ENGINE_ONLY and k not in NOT_IN_MODEL})
        if "seed" in self.params:
            params["seed"] = self.seed
        params["num_iterations"] = self.num_rounds
        # lightgbm.train updates the Booster's parameters with the training Dataset's own
        # (its params and the categorical columns it was constructed with); an explicit
        # categorical_feature parameter still wins, LightGBM's main name over its alias.
        for key, value in (data_params or {}).items():
            if key not in ENGINE_ONLY and not (key == "categorical_feature" and key in self.params):
                params[key] = value
        return _lightgbm.params_to_str(params)

    def trees_draw_random_numbers(self) -> bool:
        """Whether LightGBM's tree learner uses its seed with the current ``tree_params``.

        Column subsampling, extremely randomised thresholds and the stochastic rounding of
        quantised gradients draw random numbers; nothing else in growing a tree does.
        """
        p = self.tree_params
        # (called every iteration: a parameter left at its default never draws, so only
        # those given are tested)
        return any(draws(p, key) for key, draws in RANDOM_TREE_PARAMS.items() if key in p)


def _derived_seed(seed: int, iteration: int, tag: int) -> int:
    """A seed for one iteration's tree from a user's seed (``tag`` keeps streams apart)."""
    state = np.random.SeedSequence([seed % 2**32, iteration, 0x5EED, *([tag] if tag else [])]).generate_state(1)[0]
    return int(state % (2**31 - 1))


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


def make_config(params: dict[str, Any] | None, num_boost_round: int) -> EngineConfig:
    """Validate ``params`` and derive the engine's configuration."""
    p = canonicalize(params)
    refuse_unsupported(p)
    if "num_iterations" in p:
        warnings.warn(f"Found num_iterations={p['num_iterations']} in params; it overrides num_boost_round", stacklevel=3)
        num_boost_round = p["num_iterations"]
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) or num_boost_round < 1:
        raise ValueError(f"num_boost_round must be a positive integer, got {num_boost_round!r}")
    if num_boost_round > _INT32_MAX:
        raise ValueError(f"num_boost_round={num_boost_round!r} is more than LightGBM can count ({_INT32_MAX})")
    loss = resolve_loss(p)
    evaluator = Evaluator(p, loss)  # every metric parameter checked before any data is read
    seed = check_seed(p.get("seed", 0))
    for key in USER_SEEDS:
        if key in p:
            p[key] = _integer(p, key, 0)  # LightGBM's seeds are any int, negative too
    es = p.get("early_stopping_round")
    tree_params = {k: v for k, v in p.items() if k not in ENGINE_ONLY}
    tree_params.update(objective="custom", metric="None", verbosity=-1, num_class=loss.num_model_per_iteration)
    if not any(_flag(p.get(k, False)) for k in ("force_col_wise", "force_row_wise")):
        # Column-wise histograms sum each bin over the rows in row order, whatever the number
        # of threads, so the same seed gives the same model at any thread count; row-wise
        # ones add per-thread partial histograms, whose rounding depends on the thread count.
        # (Stock LightGBM picks one by timing both when a Booster is created, and keeps it
        # through later resets to other data: a timed choice would also make the model
        # depend on the machine's load.)  Row-wise is often faster on dense data with many
        # columns; a user who prefers it passes force_row_wise=true.
        tree_params["force_col_wise"] = True
    cfg = EngineConfig(
        params=p,
        loss=loss,
        evaluator=evaluator,
        num_rounds=int(num_boost_round),
        seed=int(seed),
        early_stopping_round=int(es) if es is not None and int(es) > 0 else None,
        early_stopping_min_delta=_number(p, "early_stopping_min_delta", 0.0),
        first_metric_only=_flag(p.get("first_metric_only", False)),
        verbosity=int(_number(p, "verbosity", 1)),
        tree_params=tree_params,
    )
    # LightGBM's own checks of every parameter the model will show before any data is read:
    # those the engine handles itself (the loss's, the metrics', the run's) would otherwise
    # reach a LightGBM Booster only when the final model is written, after training, and
    # the tree learner's only when the data are binned
    try:
        _lightgbm.check_booster_params(cfg.model_params())
    except lgb.basic.LightGBMError as exc:
        raise ValueError(f"LightGBM refuses the parameters: {exc}".rstrip(" .")) from None
    return cfg


def dataset_params(params: dict[str, Any]) -> dict[str, Any]:
    """Params for the engine's internal Datasets: the user's, minus objects LightGBM cannot take."""
    # objective-related keys are cross-checked by LightGBM's Config even for a Dataset
    # (num_class > 1 needs a multiclass objective); binning needs none of them (_param_roles)
    out = {k: v for k, v in canonicalize(params).items() if k not in NOT_FOR_DATASETS}
    out["verbosity"] = -1 if int(_number(out, "verbosity", 1)) < 1 else out.get("verbosity", 1)
    return out
