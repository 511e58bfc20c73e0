"""XGBoost and CatBoost beside LightGBM in a comparison: their kinds, keys and parameters.

Two method kinds train another library on the same data as the LightGBM methods:

* ``xgboost_hist``: ``xgboost.train`` with ``tree_method="hist"``, leaf-wise trees
  (``grow_policy="lossguide"``), keys ``subsample`` and ``sampling_method``;
* ``catboost``: ``catboost.CatBoost`` with plain boosting and symmetric trees, keys
  ``bootstrap_type``, ``subsample`` and ``ranking_loss``.

The experiment's LightGBM parameters are mapped onto each library's (:func:`library_params`,
the table in ``docs/compare.md``); a peer method's own ``params`` table holds that library's
parameters under its own names and goes on top.  A LightGBM parameter the mapping does not
know is refused, naming it, rather than dropped: a comparison whose peer silently ignored a
parameter would compare two different models.  Everything here is checked when a config is
loaded, without importing either library; the libraries (the ``peers`` extra) are needed
only to train (:mod:`.peer_runs`), and a run refuses before anything trains when they are
missing (:func:`require_peers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from .._engine import flag, integer, number, number_list
from .._validation import Interval, Options, Param
from .extras import require_modules

#: Method kinds that train another library, in the order configs list them.
PEER_KINDS = ("xgboost_hist", "catboost")
#: The module each kind imports, and the library's name in messages.
MODULES = {"xgboost_hist": "xgboost", "catboost": "catboost"}
LIBRARIES = {"xgboost_hist": "XGBoost", "catboost": "CatBoost"}

_SHARE = (Interval(Real, 0, 1, closed="right"),)
#: Each kind's keys besides the common ones (kind, params, seeds, rounds, time_budget).
PEER_OPTIONS: dict[str, tuple[Param, ...]] = {
    "xgboost_hist": (
        Param("subsample", _SHARE, 1.0, "XGBoost's subsample: the share of rows each tree is grown on (1: every row)"),
        Param("sampling_method", (Options(("uniform", "gradient_based")),), "uniform",
              "XGBoost's sampling_method: rows drawn uniformly, or by gradient size"),
    ),
    "catboost": (
        Param("bootstrap_type", (Options(("No", "Bernoulli", "MVS")),), "No",
              "CatBoost's bootstrap_type: no row sampling, or drawing subsample of the rows per tree"),
        Param("subsample", _SHARE, 1.0, "CatBoost's subsample: the share of rows drawn (with Bernoulli or MVS)"),
        Param("ranking_loss", (Options(("LambdaMart", "YetiRank")),), "LambdaMart",
              "CatBoost's loss for a lambdarank experiment"),
    ),
}


def check_options(kind: str, options: Mapping[str, Any]) -> None:
    """Rules between a peer method's keys (each key is checked on its own already).

    Raises
    ------
    ValueError
        Naming the keys and what they need.
    """
    if kind == "catboost":
        bootstrap, share = options["bootstrap_type"], options["subsample"]
        if bootstrap == "No" and share != 1.0:
            raise ValueError(f"key 'subsample' = {share!r} needs key 'bootstrap_type' \"Bernoulli\" or \"MVS\" "
                             "(with \"No\", the default, every tree sees every row)")
        if bootstrap != "No" and share == 1.0:
            raise ValueError(f"key 'bootstrap_type' = \"{bootstrap}\" needs key 'subsample' < 1 (the share of rows "
                             "each tree is grown on)")
    elif kind == "xgboost_hist" and options["sampling_method"] == "gradient_based" and options["subsample"] == 1.0:
        raise ValueError("key 'sampling_method' = \"gradient_based\" needs key 'subsample' < 1 (the share of rows "
                         "each tree is grown on)")


# --------------------------------------------------------------------------- the method's own params

#: The libraries' aliases of the parameters this module sets, to their names here: a
#: method's ``params`` under an alias replaces the mapped value instead of clashing with it.
_ALIASES = {
    "xgboost_hist": {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha",
                     "min_split_loss": "gamma", "n_jobs": "nthread", "random_state": "seed"},
    "catboost": {"eta": "learning_rate", "max_depth": "depth", "reg_lambda": "l2_leaf_reg", "max_bin": "border_count",
                 "colsample_bylevel": "rsm", "random_state": "random_seed", "n_jobs": "thread_count",
                 "num_leaves": "max_leaves", "min_child_samples": "min_data_in_leaf", "objective": "loss_function",
                 "n_estimators": "iterations", "num_boost_round": "iterations", "num_trees": "iterations",
                 "verbose": "logging_level", "silent": "logging_level"},
}
_ROUNDS = "set 'rounds' instead"
_SEEDS = "set 'seeds' instead"
_THREADS = "the experiment's num_threads sets it"
_OBJECTIVE = "the experiment's objective sets it"
_METRIC = "the comparison measures the experiment's metric on the model's predictions itself"
_OWN_KEY = "set the method's key of that name instead"
_HARNESS = "the comparison sets it (quiet, no files, no evaluation during training)"
#: A peer's parameters a method's ``params`` cannot set, with the reason.
_RESERVED: dict[str, dict[str, str]] = {
    "xgboost_hist": {
        "objective": _OBJECTIVE, "num_class": _OBJECTIVE, "eval_metric": _METRIC, "nthread": _THREADS,
        "seed": _SEEDS, "num_boost_round": _ROUNDS, "n_estimators": _ROUNDS, "subsample": _OWN_KEY,
        "sampling_method": _OWN_KEY, "tree_method": "the kind is XGBoost's hist method",
        "device": "the comparison runs on the CPU", "early_stopping_rounds": "a comparison runs all rounds",
        "disable_default_eval_metric": _METRIC, "verbosity": "the comparison turns unused-parameter warnings into "
        "errors",
    },
    "catboost": {
        "loss_function": _OBJECTIVE, "classes_count": _OBJECTIVE, "eval_metric": _METRIC, "custom_metric": _METRIC,
        "iterations": _ROUNDS, "thread_count": _THREADS, "random_seed": _SEEDS, "bootstrap_type": _OWN_KEY,
        "subsample": _OWN_KEY, "task_type": "the comparison runs on the CPU", "use_best_model": _METRIC,
        "early_stopping_rounds": "a comparison runs all rounds", "od_type": "a comparison runs all rounds",
        "od_wait": "a comparison runs all rounds", "od_pval": "a comparison runs all rounds",
        "logging_level": _HARNESS, "metric_period": _HARNESS, "allow_writing_files": _HARNESS, "train_dir": _HARNESS,
    },
}


def peer_params(kind: str, value: Any) -> dict[str, Any]:
    """A peer method's ``params`` table: the library's own parameters, aliases resolved.

    Raises
    ------
    TypeError
        For a value TOML cannot hand to the library (a table).
    ValueError
        For a parameter the comparison sets itself, with what to set instead.
    """
    if not isinstance(value, dict):
        raise TypeError(f"params must be a table of {LIBRARIES[kind]} parameters, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for key, val in value.items():
        name = _ALIASES[kind].get(str(key), str(key))
        if name in _RESERVED[kind]:
            alias = "" if name == key else f" ({LIBRARIES[kind]}'s alias of {name})"
            raise ValueError(f"params key {key!r}{alias} cannot be set here: {_RESERVED[kind][name]}")
        items = val if isinstance(val, list) else [val]
        if not all(isinstance(v, (str, int, float, bool)) for v in items):
            raise TypeError(f"params key {key!r} must be a string, number, boolean or a list of those, got {val!r}")
        if any(isinstance(v, float) and not math.isfinite(v) for v in items):
            raise ValueError(f"params key {key!r} must be finite, got {val!r}")
        if name in out:
            raise ValueError(f"params key {key!r} repeats {name!r} ({LIBRARIES[kind]}'s alias of it)")
        out[name] = val
    return out


# --------------------------------------------------------------------------- LightGBM's parameters, mapped

#: LightGBM parameters a peer leaves alone, with why: the comparison's own (metric, seeds,
#: quiet), LightGBM's binning sample and LightGBM-only speed switches (the model is the same).
_NOT_FOR_PEERS = {
    "verbosity", "metric", "eval_at", "seed", "data_random_seed", "bin_construct_sample_cnt", "force_col_wise",
    "force_row_wise", "deterministic", "histogram_pool_size",
}
#: LightGBM parameters each mapping reads (see :func:`library_params`).
_MAPPED = {
    "objective", "num_class", "boost_from_average", "sigmoid", "label_gain", "lambdarank_truncation_level",
    "lambdarank_norm", "learning_rate", "num_leaves", "max_depth", "max_bin", "num_threads", "min_data_in_leaf",
    "min_sum_hessian_in_leaf", "lambda_l1", "lambda_l2", "min_gain_to_split", "feature_fraction",
    "feature_fraction_bynode",
}
def _family(params: Mapping[str, Any]) -> tuple[str, Any]:
    """The loss family (``binary``, ``regression``, ``multiclass``, ``lambdarank``) and the loss."""
    from .._engine import resolve_loss

    try:
        loss = resolve_loss(dict(params))
    except (TypeError, ValueError) as exc:
        # the peers' predictions are measured with the engine's metrics and losses
        raise ValueError(f"a peer method needs an objective the engine has (its metrics measure the peer): {exc}") \
            from None
    family = str(loss.lightgbm_objective)
    if family not in _PEER_FAMILIES:
        raise ValueError(f"a peer method cannot follow objective {family!r}: the peers' mapping covers "
                         f"{', '.join(_PEER_FAMILIES)}")
    return family, loss


#: The loss families the peers' parameter mapping covers.
_PEER_FAMILIES = ("binary", "regression", "multiclass", "lambdarank")


def _default_gains(params: Mapping[str, Any]) -> bool:
    """Whether ``label_gain`` is absent or LightGBM's default ``2**i - 1``."""
    if "label_gain" not in params:
        return True
    gains = number_list(params["label_gain"], "label_gain")
    return gains == [2.0**i - 1.0 for i in range(len(gains))]


def library_params(kind: str, params: Mapping[str, Any], options: Mapping[str, Any], own: Mapping[str, Any],
                   seed: int = 0) -> dict[str, Any]:
    """The peer library's parameters for a run: LightGBM's mapped, then the method's own.

    Parameters
    ----------
    kind : {"xgboost_hist", "catboost"}
    params : mapping
        The experiment's LightGBM parameters under their main names
        (:func:`smart_lgbm._engine.params.canonicalize`).
    options : mapping
        The method's keys (:data:`PEER_OPTIONS`, defaults filled in).
    own : mapping
        The method's ``params`` table (:func:`peer_params`).
    seed : int, default=0

    Returns
    -------
    dict
        Ready for ``xgboost.train`` or ``catboost.CatBoost``, except rounds and callbacks.

    Raises
    ------
    ValueError
        For an objective or a LightGBM parameter the peer cannot follow, naming it.
    """
    family, loss = _family(params)
    unknown = sorted(set(params) - _MAPPED - _NOT_FOR_PEERS)
    if unknown:
        raise ValueError(f"LightGBM parameter(s) {', '.join(unknown)} have no {LIBRARIES[kind]} counterpart in the "
                         f"comparison's mapping (docs/compare.md); a {kind} method cannot train the same model. Set "
                         f"them on the LightGBM methods only (their own params), or leave the {kind} method out of "
                         "this experiment")
    if family == "lambdarank" and not _default_gains(params):
        raise ValueError(f"label_gain other than LightGBM's default 2**i - 1 has no {LIBRARIES[kind]} counterpart "
                         "(its NDCG gains are exponential)")
    num_leaves = integer(params, "num_leaves", 31)
    max_depth = integer(params, "max_depth", -1)
    threads = integer(params, "num_threads", 0)
    max_bin = integer(params, "max_bin", 255)
    learning_rate = number(params, "learning_rate", 0.1)
    from_average = flag(params.get("boost_from_average", True))
    truncation = integer(params, "lambdarank_truncation_level", 30)
    out: dict[str, Any]
    if kind == "xgboost_hist":
        out = {"tree_method": "hist", "grow_policy": "lossguide", "max_leaves": num_leaves,
               "max_depth": max(max_depth, 0), "eta": learning_rate, "max_bin": max_bin, "seed": seed,
               "subsample": options["subsample"], "sampling_method": options["sampling_method"], "verbosity": 1}
        if threads > 0:
            out["nthread"] = threads
        if family == "binary":
            out["objective"] = "binary:logistic"
        elif family == "regression":
            out["objective"] = "reg:squarederror"
        elif family == "multiclass":
            out.update(objective="multi:softprob", num_class=loss.num_model_per_iteration)
        else:
            out.update(objective="rank:ndcg", lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=truncation,
                       ndcg_exp_gain=True, lambdarank_normalization=flag(params.get("lambdarank_norm", True)))
        if not from_average and family in ("binary", "regression"):
            out["base_score"] = 0.5 if family == "binary" else 0.0  # a raw score of 0 to start from
        for lgb_name, name in (("min_sum_hessian_in_leaf", "min_child_weight"), ("lambda_l2", "lambda"),
                               ("lambda_l1", "alpha"), ("min_gain_to_split", "gamma"),
                               ("feature_fraction", "colsample_bytree"), ("feature_fraction_bynode", "colsample_bynode")):
            if lgb_name in params:
                out[name] = number(params, lgb_name, 0.0)
        if family == "regression" and "min_data_in_leaf" in params:
            # under L2 every row's hessian is 1: a hessian sum is a row count
            out["min_child_weight"] = max(out.get("min_child_weight", 0.0), float(integer(params, "min_data_in_leaf", 20)))
    else:
        depth = max(1, math.ceil(math.log2(max(num_leaves, 2))))
        if max_depth > 0:
            depth = min(depth, max_depth)
        out = {"grow_policy": "SymmetricTree", "depth": min(depth, 16), "learning_rate": learning_rate,
               "border_count": max_bin - 1, "boosting_type": "Plain", "random_seed": seed,
               "thread_count": threads if threads > 0 else -1, "bootstrap_type": options["bootstrap_type"]}
        if options["bootstrap_type"] != "No":
            out["subsample"] = options["subsample"]
        if family == "binary":
            out.update(loss_function="Logloss", boost_from_average=from_average)
        elif family == "regression":
            out.update(loss_function="RMSE", boost_from_average=from_average)
        elif family == "multiclass":
            out.update(loss_function="MultiClass", classes_count=loss.num_model_per_iteration)
        elif options["ranking_loss"] == "LambdaMart":
            out["loss_function"] = f"LambdaMart:metric=NDCG;top={truncation};type=Exp"
        else:
            out["loss_function"] = "YetiRank"
        if "lambda_l2" in params:
            out["l2_leaf_reg"] = number(params, "lambda_l2", 0.0)
        if "feature_fraction" in params:
            out["rsm"] = number(params, "feature_fraction", 1.0)
    out.update(own)
    if kind == "catboost" and out.get("grow_policy") in ("Depthwise", "Lossguide"):
        # trees grown node by node take LightGBM's leaf limit and row minimum too
        if out["grow_policy"] == "Lossguide":
            out.setdefault("max_leaves", num_leaves)
        if "min_data_in_leaf" in params:
            out.setdefault("min_data_in_leaf", integer(params, "min_data_in_leaf", 20))
    return out


def scores_for_metric(kind: str, params: Mapping[str, Any], raw: np.ndarray) -> np.ndarray:
    """A peer's raw scores as the experiment's LightGBM loss reads them.

    A binary LightGBM loss with ``sigmoid = s`` predicts ``1 / (1 + exp(-s F))``; the peers
    fit the plain logistic model, so their raw score ``m`` is LightGBM's ``s F``: divided by
    ``s``, the loss's transform gives the peer's own probabilities.
    """
    family, loss = _family(params)
    if family == "binary":
        return raw / float(loss.sigmoid)
    return raw


def is_deterministic(kind: str, library: Mapping[str, Any]) -> bool:
    """Whether a peer run with these parameters (:func:`library_params`) is the same for every seed."""
    if kind == "xgboost_hist":
        shares = ("subsample", "colsample_bytree", "colsample_bylevel", "colsample_bynode")
        return all(float(library.get(name, 1.0)) >= 1.0 for name in shares)
    return (library.get("bootstrap_type") == "No" and float(library.get("random_strength", 1.0)) == 0.0
            and float(library.get("rsm", 1.0)) >= 1.0)


def sampling_share(kind: str, library: Mapping[str, Any]) -> float:
    """The expected share of rows each tree is grown on (the libraries do not report the drawn count)."""
    if kind == "catboost" and library.get("bootstrap_type") == "No":
        return 1.0
    return float(library.get("subsample", 1.0))


def require_peers(kinds: Sequence[str]) -> None:
    """Refuse peer kinds whose library is not installed (the ``peers`` extra), before training.

    Raises
    ------
    MissingExtraError
        Naming the library and the extra.
    """
    modules = {MODULES[k]: f"method kind {k!r}" for k in dict.fromkeys(kinds) if k in MODULES}
    require_modules(modules, "peers")
