"""Failures the differential property tests (tests/test_properties.py) found, as plain
regression tests: each is the smallest example hypothesis shrank it to."""

from __future__ import annotations

import functools
import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl


# The engine's own path: the default sampler="auto" hands these small runs to lightgbm.train,
# and these tests are of what the engine does (Full() is stock LightGBM's algorithm).
train_engine = functools.partial(sl.train, sampler=sl.Full())


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("sampler", [sl.Full(), sl.WeightTrimming(0.0), sl.FirstOrder(rate=0.5)])
def test_no_usable_feature_with_feature_fraction_trains_constant_trees_as_stock(sampler):
    # 31 rows, max_bin=3, min_data_in_leaf=15: LightGBM's pre-filter drops the only feature;
    # the engine's per-iteration parameter reset (feature_fraction's draws) then hit
    # LightGBM's "Check failed: (train_data->num_features()) > (0)"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(31, 1)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    params = {"objective": "binary", "verbosity": -1, "num_leaves": 2, "max_bin": 3, "min_data_in_leaf": 15,
              "feature_fraction": 0.5, "num_threads": 1, "force_col_wise": True}
    ours = _quiet(train_engine, params, lgb.Dataset(X, y), 3, sampler=sampler)
    stock = _quiet(lgb.train, params, lgb.Dataset(X, y), 3)
    if isinstance(sampler, sl.FirstOrder):  # (the constant tree counts the sampled rows)
        np.testing.assert_array_equal(ours.predict(X, raw_score=True), stock.predict(X, raw_score=True))
    else:
        assert ours.model_to_string() == stock.model_to_string()


@pytest.mark.parametrize("params, name", [({"objective": "regression", "scale_pos_weight": 0.0}, "scale_pos_weight"),
                                          ({"objective": "binary", "scale_pos_weight": -1.0}, "scale_pos_weight"),
                                          ({"objective": "regression", "fair_c": -1.0}, "fair_c"),
                                          ({"objective": "huber", "alpha": 0.0}, "alpha")])
def test_loss_parameters_lightgbm_refuses_are_refused_before_training(params, name):
    # a parameter the engine handles itself (here ignored by the L2 loss, as by LightGBM's)
    # reached a LightGBM Booster only when the final model was written: a LightGBMError
    # after training instead of a ValueError before it
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    trained = []
    with pytest.raises(ValueError, match=name):
        _quiet(train_engine, {"verbosity": -1, **params}, lgb.Dataset(X, y), 2,
               callbacks=[lambda env: trained.append(env.iteration)])
    assert trained == []


@pytest.mark.parametrize("params, name", [({"num_leaves": 1}, "num_leaves"), ({"max_bin": 1}, "max_bin"),
                                          ({"learning_rate": -0.1}, "learning_rate"),
                                          ({"min_data_in_bin": 0}, "min_data_in_bin")])
def test_tree_parameters_lightgbm_refuses_are_value_errors_before_binning(params, name, monkeypatch):
    # found as a LightGBMError raised while the engine binned the data
    from smart_lgbm._engine import training

    def never(*args, **kwargs):
        raise AssertionError("the data were read before the parameters were checked")

    monkeypatch.setattr(training, "prepare_train", never)
    X = np.zeros((20, 2))
    with pytest.raises(ValueError, match=name):
        _quiet(train_engine, {"objective": "binary", "verbosity": -1, **params}, lgb.Dataset(X, np.zeros(20)), 2)


@pytest.mark.parametrize("params", [{"monotone_constraints": [1, 0, -1]}, {"max_bin_by_feature": [10, 10, 10]},
                                    {"interaction_constraints": [[0, 1], [2]]}, {"feature_contri": [1.0, 0.5, 1.0]}])
def test_per_feature_parameters_are_left_to_the_data(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    base = {"objective": "binary", "verbosity": -1, "num_threads": 1, "force_col_wise": True}
    assert _quiet(train_engine, {**base, **params}, lgb.Dataset(X, y), 2).model_to_string() \
        == _quiet(lgb.train, {**base, **params}, lgb.Dataset(X, y), 2).model_to_string()
