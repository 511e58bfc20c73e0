"""Values that used to pass the checks and produce garbage (issue 19, class 5), and
SmartObjective validating a user sampler's sample through the engine's own check (class 7)."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm.losses import CustomLoss
from smart_lgbm.samplers import Sample, Sampler

BASE = {"objective": "binary", "verbosity": -1, "num_leaves": 7}


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] + rng.normal(size=n) > 0).astype(float)


class Scaled(Sampler):
    """Every row, its float64 gradients (or hessians) multiplied by a huge finite factor."""

    def __init__(self, what, factor):
        self.what, self.factor = what, factor

    def sample(self, state, rng):
        idx = np.arange(state.num_rows, dtype=np.int32)
        g = state.grad.astype(np.float64)
        h = state.hess.astype(np.float64)
        if self.what == "grad":
            g = g * self.factor
        else:
            h = h * self.factor
        return Sample(idx, g, h)


BEYOND = [("grad", 1e39), ("hess", 1e40), ("grad", -3.5e38 * 1e3)]


@pytest.mark.parametrize("what, factor", BEYOND)
def test_sampler_gradients_beyond_float32_are_refused_by_the_engine(what, factor):
    X, y = _data()
    with pytest.raises(ValueError, match="Scaled.*float32"):
        sl.train(BASE, lgb.Dataset(X, y), 3, sampler=Scaled(what, factor))


@pytest.mark.parametrize("what, factor", BEYOND)
def test_smart_objective_checks_samples_as_the_engine(what, factor):
    X, y = _data()
    obj = sl.SmartObjective("binary", Scaled(what, factor))
    with pytest.raises(ValueError, match="Scaled.*float32"):
        lgb.train({"verbosity": -1, "objective": obj}, lgb.Dataset(X, y), 3, callbacks=[obj.callback])


@pytest.mark.parametrize("bad", [
    lambda idx, g, h: Sample(idx[::-1].copy(), g, h),  # unsorted
    lambda idx, g, h: Sample(idx.astype(np.int64), g, h),  # wrong dtype
    lambda idx, g, h: Sample(idx, g[:-1], h),  # wrong shape
    lambda idx, g, h: Sample(idx, np.where(np.arange(len(g)) == 3, np.nan, g), h),  # NaN
])
def test_smart_objective_refuses_every_malformed_sample_the_engine_refuses(bad):
    X, y = _data()

    class Bad(Sampler):
        def sample(self, state, rng):
            idx = np.arange(0, state.num_rows, 2, dtype=np.int32)
            return bad(idx, state.grad[idx], state.hess[idx])

    with pytest.raises((ValueError, TypeError), match="Bad") as engine:
        sl.train(BASE, lgb.Dataset(X, y), 2, sampler=Bad())
    obj = sl.SmartObjective("binary", Bad())
    with pytest.raises((ValueError, TypeError), match="Bad") as objective:
        lgb.train({"verbosity": -1, "objective": obj}, lgb.Dataset(X, y), 2, callbacks=[obj.callback])
    assert str(engine.value) == str(objective.value)


def test_custom_loss_gradients_beyond_float32_are_refused():
    X, y = _data()
    loss = CustomLoss(grad_hess=lambda label, raw: ((raw - label) * 1e39 + 1e39, np.ones_like(raw)))
    with pytest.raises(ValueError, match="finite"):
        sl.train({"objective": loss, "verbosity": -1}, lgb.Dataset(X, y), 2)


@pytest.mark.parametrize("make_valid", [
    lambda X, y: lgb.Dataset(X[:0], y[:0]),
    lambda X, y: lgb.Dataset(X[:0], y[:0], weight=np.ones(0)),
    lambda X, y: lgb.Dataset(X, y, free_raw_data=False).subset([]),
])
@pytest.mark.parametrize("metric", ["auc", "binary_logloss"])
def test_empty_validation_set_is_refused_as_in_stock(make_valid, metric):
    X, y = _data()
    with pytest.raises(ValueError, match="no rows"):
        sl.train({**BASE, "metric": metric}, lgb.Dataset(X, y), 3, valid_sets=[make_valid(X, y)], sampler=sl.Full())


@pytest.mark.parametrize("key, value", [
    ("learning_rate", float("inf")), ("max_delta_step", float("nan")), ("path_smooth", float("inf")),
    ("lambda_l1", float("nan")), ("feature_contri", [1.0, float("nan"), 1.0, 1.0]),
    ("cat_smooth", np.float32("inf")),
])
def test_non_finite_parameters_are_refused(key, value):
    X, y = _data()
    with pytest.raises(ValueError, match=f"{key}=.*finite"):
        sl.train({**BASE, key: value}, lgb.Dataset(X, y), 2)
