"""Engine metrics equal LightGBM's own metric code on the same scores.

LightGBM evaluates a validation set's scores starting from its init_score; a Booster with
no trees and the stock objective therefore evaluates exactly the raw scores we give it.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from smart_lgbm.losses import BinaryLogloss, MulticlassSoftmax, SquaredError, Target
from smart_lgbm.metrics import Evaluator


def lightgbm_metrics(params, X, y, raw, weight=None):
    train = lgb.Dataset(X, y, params={"verbosity": -1})
    booster = lgb.Booster({**params, "verbosity": -1}, train)
    init = raw if raw.ndim == 1 else raw  # lightgbm accepts (n, K) init scores
    valid = lgb.Dataset(X, y, weight=weight, init_score=init, reference=train)
    booster.add_valid(valid, "v")
    return {name: value for _, name, value, _ in booster.eval_valid()}


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_metrics(rng, weighted):
    n = 3000
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) < 0.4).astype(float)
    raw = rng.normal(scale=2.0, size=n)
    raw[:200] = np.round(raw[:200])  # ties for AUC
    raw[5] = 40.0  # clamped log-loss
    w = rng.uniform(0.2, 2.0, size=n).astype(np.float32).astype(np.float64) if weighted else None
    names = ["binary_logloss", "binary_error", "auc"]
    for sigmoid in (1.0, 2.0):
        ours = dict((m, v) for m, v, _ in Evaluator(names, BinaryLogloss(sigmoid), [1]).evaluate(
            raw, Target(label=y, weight=w)))
        theirs = lightgbm_metrics({"objective": "binary", "sigmoid": sigmoid, "metric": names}, X, y, raw, w)
        for name in names:
            assert ours[name] == pytest.approx(theirs[name], rel=1e-9, abs=1e-12), name


def test_regression_metrics(rng):
    n = 2000
    X = rng.normal(size=(n, 3))
    # LightGBM holds labels and weights as float32; the engine's Target does the same
    y = rng.normal(size=n).astype(np.float32).astype(np.float64)
    raw = y + rng.normal(scale=0.5, size=n)
    w = rng.uniform(0.2, 2.0, size=n).astype(np.float32).astype(np.float64)
    names = ["l2", "rmse", "l1"]
    ours = dict((m, v) for m, v, _ in Evaluator(names, SquaredError(), [1]).evaluate(raw, Target(label=y, weight=w)))
    theirs = lightgbm_metrics({"objective": "regression", "metric": names}, X, y, raw, w)
    for name in names:
        assert ours[name] == pytest.approx(theirs[name], rel=1e-9), name


def test_multiclass_metrics(rng):
    n = 1500
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, size=n).astype(float)
    raw = rng.normal(size=(n, 3))
    raw[:50] = 0.0  # ties count as errors in LightGBM's multi_error
    names = ["multi_logloss", "multi_error"]
    ours = dict((m, v) for m, v, _ in Evaluator(names, MulticlassSoftmax(3), [1]).evaluate(raw, Target(label=y)))
    theirs = lightgbm_metrics({"objective": "multiclass", "num_class": 3, "metric": names}, X, y, raw)
    for name in names:
        assert ours[name] == pytest.approx(theirs[name], rel=1e-9), name


def test_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="accepted"):
        Evaluator(["mape"], SquaredError(), [1])
