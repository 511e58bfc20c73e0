"""Every parameter LightGBM accepts (``LGBM_DumpParamAliases``) either takes effect in
``smart_lgbm.train`` exactly as in ``lightgbm.train``, or is refused (or warned about) with a
message naming it.

For each parameter the test trains stock LightGBM and the engine (``Full()``, one thread)
with one non-default value.  Where the engine accepts it and stock does too:

* parameters that do not draw random numbers: the whole model string (trees, header and
  ``parameters:`` section) must equal stock's byte for byte;
* parameters of random draws (column subsampling, extremely randomised trees, quantised
  gradients' stochastic rounding), which the engine re-seeds per iteration by design: the
  ``parameters:`` section must equal stock's, and the value must change the engine's trees
  exactly when it changes stock's.

Where stock refuses a value, the engine must refuse it too.

The engine's role table (``smart_lgbm/_engine/param_roles.py``) is checked against LightGBM's list
too: it names only LightGBM main parameters, and every parameter it says defines the loss or
the metrics is refused by a ``reset_parameter`` callback mid-run, naming it.
"""

from __future__ import annotations

import json
import re
import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._lightgbm import param_aliases, split_model_string
from smart_lgbm._engine.param_roles import LOSS_AND_METRIC_PARAMS, RANDOM_TREE_PARAMS, ROLES, TREE_SEEDS

N, F, CAT = 600, 6, 5
RANK = {"lambdarank_truncation_level", "lambdarank_norm", "label_gain", "lambdarank_position_bias_regularization",
        "eval_at"}
MULTI = {"num_class", "multi_error_top_k", "auc_mu_weights"}
REG = {"reg_sqrt", "alpha", "fair_c", "poisson_max_delta_step", "tweedie_variance_power"}
#: parameters whose effect is a random draw (the engine re-seeds them per iteration): the role
#: table's random tree parameters and tree seeds, ``seed``, and stochastic rounding (a draw only
#: with use_quantized_grad, which the table marks)
RANDOM = {*RANDOM_TREE_PARAMS, *TREE_SEEDS, "seed", "stochastic_rounding"}
#: parameters that need others to have an effect
COMPANIONS = {
    "feature_fraction_seed": {"feature_fraction": 0.5},
    "extra_seed": {"extra_trees": True},
    "seed": {"feature_fraction": 0.5, "extra_trees": True},
    "stochastic_rounding": {"use_quantized_grad": True},
    "num_grad_quant_bins": {"use_quantized_grad": True, "stochastic_rounding": False},
    "quant_train_renew_leaf": {"use_quantized_grad": True, "stochastic_rounding": False},
    "monotone_constraints_method": {"monotone_constraints": [1, -1, 0, 0, 0, 0]},
    "monotone_penalty": {"monotone_constraints": [1, -1, 0, 0, 0, 0]},
    "cegb_tradeoff": {"cegb_penalty_split": 1.0},
    "data_random_seed": {"bin_construct_sample_cnt": 100},
    "multi_error_top_k": {"metric": "multi_error"},
    "auc_mu_weights": {"metric": "auc_mu"},
    "early_stopping_min_delta": {"early_stopping_round": 2},
    "first_metric_only": {"early_stopping_round": 2, "metric": ["auc", "binary_logloss"]},
}
#: network parameters: stock would try to connect, the engine must refuse on its own
NETWORK_REFUSED = {"num_machines": 2, "machines": "127.0.0.1:12400,127.0.0.1:12401"}


def _values(tmp):
    forced_splits = tmp / "forced_splits.json"
    forced_splits.write_text(json.dumps({"feature": 0, "threshold": 0.25}))
    forced_bins = tmp / "forced_bins.json"
    forced_bins.write_text(json.dumps([{"feature": 1, "bin_upper_bound": [-1.0, 0.0, 1.0]}]))
    return {
        "config": "unused.conf", "task": "predict", "objective": "huber", "boosting": "dart",
        "data_sample_strategy": "goss", "data": "unused.txt", "valid": "unused.txt", "num_iterations": 2,
        "learning_rate": 0.3, "num_leaves": 5, "tree_learner": "feature", "num_threads": 2, "device_type": "gpu",
        "seed": 7, "deterministic": True, "force_col_wise": True, "force_row_wise": True,
        "histogram_pool_size": 1.0, "max_depth": 2, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 5.0,
        "bagging_fraction": 0.5, "pos_bagging_fraction": 0.5, "neg_bagging_fraction": 0.5, "bagging_freq": 1,
        "bagging_seed": 9, "bagging_by_query": True, "feature_fraction": 0.5, "feature_fraction_bynode": 0.5,
        "feature_fraction_seed": 9, "extra_trees": True, "extra_seed": 9, "early_stopping_round": 2,
        "early_stopping_min_delta": 0.1, "first_metric_only": True, "max_delta_step": 0.05, "lambda_l1": 1.0,
        "lambda_l2": 3.0, "linear_lambda": 1.0, "min_gain_to_split": 1.0, "drop_rate": 0.2, "max_drop": 10,
        "skip_drop": 0.3, "xgboost_dart_mode": True, "uniform_drop": True, "drop_seed": 9, "top_rate": 0.3,
        "other_rate": 0.2, "min_data_per_group": 20, "max_cat_threshold": 2, "cat_l2": 1.0, "cat_smooth": 1.0,
        "max_cat_to_onehot": 16, "top_k": 5, "monotone_constraints": [1, -1, 0, 0, 0, 0],
        "monotone_constraints_method": "advanced", "monotone_penalty": 1.0,
        "feature_contri": [0.5, 1.0, 1.0, 1.0, 1.0, 1.0], "forcedsplits_filename": str(forced_splits),
        "refit_decay_rate": 0.5, "cegb_tradeoff": 0.5, "cegb_penalty_split": 1.0,
        "cegb_penalty_feature_lazy": [5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        "cegb_penalty_feature_coupled": [5.0, 0.0, 0.0, 0.0, 0.0, 0.0], "path_smooth": 1.0,
        "interaction_constraints": [[0, 1], [2, 3, 4, 5]], "verbosity": 0, "input_model": "unused.txt",
        "output_model": "unused.txt", "saved_feature_importance_type": 1, "snapshot_freq": 1,
        "use_quantized_grad": True, "num_grad_quant_bins": 8, "quant_train_renew_leaf": True,
        "stochastic_rounding": False, "linear_tree": True, "max_bin": 15, "max_bin_by_feature": [15, 7, 255, 255, 255, 255],
        "min_data_in_bin": 10, "bin_construct_sample_cnt": 100, "data_random_seed": 9, "is_enable_sparse": False,
        "enable_bundle": False, "use_missing": False, "zero_as_missing": True, "feature_pre_filter": False,
        "pre_partition": True, "two_round": True, "header": True, "label_column": "1", "weight_column": "1",
        "group_column": "1", "ignore_column": "1", "categorical_feature": "4",
        "forcedbins_filename": str(forced_bins), "save_binary": True, "precise_float_parser": True,
        "parser_config_file": "unused.json", "start_iteration_predict": 1, "num_iteration_predict": 1,
        "predict_raw_score": True, "predict_leaf_index": True, "predict_contrib": True,
        "predict_disable_shape_check": True, "pred_early_stop": True, "pred_early_stop_freq": 5,
        "pred_early_stop_margin": 5.0, "output_result": "unused.txt", "convert_model_language": "cpp",
        "convert_model": "unused.cpp", "objective_seed": 9, "num_class": 4, "is_unbalance": True,
        "scale_pos_weight": 2.0, "sigmoid": 2.0, "boost_from_average": False, "reg_sqrt": True, "alpha": 0.5,
        "fair_c": 2.0, "poisson_max_delta_step": 0.5, "tweedie_variance_power": 1.2,
        "lambdarank_truncation_level": 3, "lambdarank_norm": False, "label_gain": [0, 2, 5, 9],
        "lambdarank_position_bias_regularization": 0.5, "eval_at": [2], "multi_error_top_k": 2,
        "auc_mu_weights": [0, 1, 2, 1, 0, 1, 2, 1, 0], "metric": "auc", "metric_freq": 2,
        "is_provide_training_metric": True, "num_machines": 2, "local_listen_port": 12401, "time_out": 10,
        "machine_list_filename": "unused.txt", "machines": "127.0.0.1:12400,127.0.0.1:12401",
        "gpu_platform_id": 0, "gpu_device_id": 0, "gpu_device_id_list": "0", "gpu_use_dp": True, "num_gpu": 2,
    }


def _setting(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, F))
    X[:, CAT] = rng.integers(0, 10, N)
    base = {"verbosity": -1, "num_threads": 1, "num_leaves": 7, "min_data_in_leaf": 10}
    group = None
    signal = X[:, 0] + 0.3 * X[:, CAT] + rng.normal(size=N)
    if name in RANK:
        y, group, base["objective"] = np.digitize(signal, [0.0, 1.0, 2.0]).astype(float), [20] * (N // 20), "lambdarank"
    elif name in MULTI:
        y, base["objective"], base["num_class"] = np.digitize(signal, [0.0, 1.0]).astype(float), "multiclass", 3
    elif name in REG:
        y, base["objective"] = signal, "regression"
    else:
        y, base["objective"] = (signal > 0.5).astype(float), "binary"
    return X, y, group, base


def _train(fn, params, X, y, group, **kw):
    valid = None
    if "early_stopping_round" in params:
        valid = lgb.Dataset(X[:100], y[:100], categorical_feature=[CAT], group=group and group[:5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        booster = fn(params, lgb.Dataset(X, y, categorical_feature=[CAT], group=group), 4,
                     valid_sets=[valid] if valid is not None else None, **kw)
    return booster.model_to_string(), [str(w.message) for w in caught]


def _trees(model):
    return split_model_string(model)[1]


def _names(name):
    return [name, *param_aliases().get(name, ())]


def test_parameter_values_cover_lightgbm_s_whole_list(tmp_path):
    # the table below must name every parameter this LightGBM knows: a new one fails here
    assert set(param_aliases()) - set(_values(tmp_path)) == set()


@pytest.mark.parametrize("name", sorted(param_aliases()))
def test_parameter_takes_effect_as_in_stock_or_is_refused(name, tmp_path):
    value = _values(tmp_path)[name]
    X, y, group, base = _setting(name)
    params = {**base, **COMPANIONS.get(name, {}), name: value}
    mentions = re.compile("|".join(re.escape(n) for n in _names(name)))
    try:
        ours, ours_warnings = _train(sl.train, params, X, y, group, sampler=sl.Full())
    except (ValueError, TypeError) as exc:
        assert mentions.search(str(exc)), f"{name}: refused without naming it: {exc}"
        return
    if name in NETWORK_REFUSED:
        pytest.fail(f"{name}={value!r} accepted without a network")
    try:
        stock, _ = _train(lgb.train, params, X, y, group)
    except (lgb.basic.LightGBMError, ValueError) as exc:
        pytest.fail(f"{name}={value!r}: stock refuses it ({exc}) but the engine trained")
    if any(mentions.search(w) for w in ours_warnings) and _trees(ours) != _trees(stock):
        return  # warned about, naming the parameter
    if name not in RANDOM:
        assert ours == stock, f"{name}={value!r}: the engine's model differs from stock's"
        return
    assert split_model_string(ours)[2] == split_model_string(stock)[2]
    without = {k: v for k, v in params.items() if k != name}
    ours_before, _ = _train(sl.train, without, X, y, group, sampler=sl.Full())
    stock_before, _ = _train(lgb.train, without, X, y, group)
    assert (_trees(ours) != _trees(ours_before)) == (_trees(stock) != _trees(stock_before)), \
        f"{name}={value!r} changes stock's trees but not the engine's (or the reverse)"


def test_role_table_names_lightgbm_main_parameters():
    # an alias (or a typo) in the table would never match a canonical parameter: it would
    # reach the tree-fitting Booster unhandled
    assert set(ROLES) - set(param_aliases()) == set()


@pytest.mark.parametrize("name", sorted(LOSS_AND_METRIC_PARAMS))
def test_reset_parameter_refuses_every_loss_and_metric_parameter(name, tmp_path):
    value = _values(tmp_path)[name]
    X, y, group, base = _setting(name)
    params = {**base, **COMPANIONS.get(name, {})}
    assert params.get(name) != value
    schedule = lgb.reset_parameter(**{name: lambda i: value})
    mentions = re.compile("|".join(re.escape(n) for n in _names(name)))
    with pytest.raises(ValueError) as info:
        _train(sl.train, params, X, y, group, sampler=sl.Full(), callbacks=[schedule])
    assert mentions.search(str(info.value)), str(info.value)
