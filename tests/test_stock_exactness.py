"""Full() against stock LightGBM, byte for byte: the initial score (BoostFromScore's float32
kEpsilon clamp and row-by-row sums) and the first tree it is folded into."""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl

# one thread: LightGBM's BoostFromScore sums row by row only with one thread (or deterministic=true)
BASE = {"verbosity": -1, "num_leaves": 7, "num_threads": 1}


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return rng, X


def _both(params, X, y, w=None, rounds=4):
    params = {**BASE, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = sl.train(params, lgb.Dataset(X, y, weight=w), rounds, sampler=sl.Full())
        stock = lgb.train(params, lgb.Dataset(X, y, weight=w), rounds)
    return ours.model_to_string(), stock.model_to_string()


def _cases():
    rng, X = _data()
    yb = (X[:, 0] + rng.normal(size=len(X)) > 0).astype(float)
    w = rng.uniform(0.1, 3.0, len(X))
    yr = X[:, 0] * 3.3 + rng.normal(size=len(X)) * 1e3
    ym = np.digitize(X[:, 1], [-0.5, 0.5]).astype(float)
    return X, {
        "binary": ({"objective": "binary"}, yb, None),
        "binary_weighted": ({"objective": "binary"}, yb, w),
        "binary_sigmoid_weighted": ({"objective": "binary", "sigmoid": 1.7}, yb, w),
        "binary_all_positive": ({"objective": "binary"}, np.ones(len(X)), None),
        "binary_all_negative_weighted": ({"objective": "binary"}, np.zeros(len(X)), w),
        "regression": ({"objective": "regression"}, yr, None),
        "regression_weighted": ({"objective": "regression"}, yr, w),
        "multiclass_weighted": ({"objective": "multiclass", "num_class": 3}, ym, w),
        "multiclass_missing_class": ({"objective": "multiclass", "num_class": 4}, ym, None),
        "multiclass_missing_class_weighted": ({"objective": "multiclass", "num_class": 4}, ym, w),
    }


@pytest.mark.parametrize("case", list(_cases()[1]))
def test_full_model_is_stock_model_byte_for_byte(case):
    X, cases = _cases()
    params, y, w = cases[case]
    ours, stock = _both(params, X, y, w)
    assert ours == stock


def test_initial_score_clamps_with_float32_epsilon():
    from smart_lgbm.losses.base import K_EPSILON, Target
    from smart_lgbm.losses.binary import BinaryLogloss

    assert K_EPSILON == float(np.float32(1e-15)) != 1e-15
    init = BinaryLogloss().init_score(Target(label=np.zeros(10)))[0]
    assert init == np.log(K_EPSILON / (1.0 - K_EPSILON))
