"""SmartObjective, the custom-objective drop-in for stock lightgbm.train."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm.engine import iteration_rng
from smart_lgbm.losses import BinaryLogloss, Target
from smart_lgbm.samplers import GradientHistory, SamplingState

BASE = {"num_leaves": 15, "learning_rate": 0.1, "verbosity": -1}


def test_full_sampler_objective_equals_stock_custom_objective(a9a_small):
    (X, y), (Xt, _) = a9a_small
    obj = sl.SmartObjective("binary", sl.Full())
    ours = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 10, callbacks=[obj.callback])
    loss = BinaryLogloss()

    def plain(preds, data):
        return loss.gradient_hessian(preds, Target(label=data.get_label().astype(float)))

    stock = lgb.train({**BASE, "objective": plain}, lgb.Dataset(X, y), 10)
    np.testing.assert_array_equal(ours.predict(Xt, raw_score=True), stock.predict(Xt, raw_score=True))


def test_samples_are_the_engines_draws(a9a_small):
    (X, y), _ = a9a_small
    sampler = sl.FirstOrder(rate=0.2)
    obj = sl.SmartObjective("binary", sampler, seed=9)
    seen = []
    original = obj._sampled_gradients

    def spy(preds, label, weight, group):
        out = original(preds, label, weight, group)
        seen.append((np.array(preds, dtype=float), obj.last_sample))
        return out

    obj._sampled_gradients = spy
    booster = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 4, callbacks=[obj.callback])
    assert booster.num_trees() == 4 and len(seen) == 4
    loss = BinaryLogloss()
    target = Target(label=y)
    for it, (raw, sample) in enumerate(seen):
        g, h = loss.gradient_hessian(raw, target)
        expected = sampler.sample(SamplingState(it, g, h, raw, loss, target, GradientHistory()),
                                  iteration_rng(9, it))
        np.testing.assert_array_equal(sample.indices, expected.indices)
    # the first iteration sees the same scores as the engine without boost-from-average:
    # same sample as the engine's first iteration
    rec = {}
    sl.train({**BASE, "objective": "binary", "boost_from_average": False, "seed": 9}, lgb.Dataset(X, y), 1,
             sampler=sl.FirstOrder(rate=0.2), callbacks=[sl.record_sampling(rec)])
    assert rec["num_sampled"][0] == seen[0][1].size


def test_unsampled_rows_get_zero_gradients(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.Uniform(0.3), seed=0)
    data = lgb.Dataset(X, y).construct()
    g, h = obj(np.zeros(len(y)), data)
    mask = np.zeros(len(y), dtype=bool)
    mask[obj.last_sample.indices] = True
    assert np.all(g[~mask] == 0) and np.all(h[~mask] == 0)
    assert np.all(h[mask] > 0)
    assert abs(mask.mean() - 0.3) < 0.03
    assert obj.record["sampling_rate"][-1] == pytest.approx(mask.mean())


def test_second_order_regulariser_needs_raw_data(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.SecondOrder(rate=0.3, anchor_lag=2))
    with pytest.raises(ValueError, match="free_raw_data=False"):
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 3, callbacks=[obj.callback])
    obj = sl.SmartObjective("binary", sl.SecondOrder(rate=0.3, anchor_lag=2))
    lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y, free_raw_data=False), 4, callbacks=[obj.callback])
    assert obj._history.leaves is not None and obj._history.leaves.shape == (len(y),)


def test_init_score_and_sklearn_signature(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.5), seed=2)
    init = obj.init_score(lgb.Dataset(X, y).construct())
    assert np.allclose(init, np.log(y.mean() / (1 - y.mean())))
    clf = lgb.LGBMClassifier(objective=obj.sklearn, n_estimators=5, verbose=-1).fit(X, y)
    assert clf.booster_.num_trees() == 5
    with pytest.raises(ValueError, match="label must be 0 or 1"):
        obj.sklearn(y * 3, np.zeros(len(y)))


def test_new_label_array_is_validated_even_at_a_reused_address():
    # A temporary label array freed after one call and a new one allocated at the same
    # address must not be mistaken for the already-validated labels.
    obj = sl.SmartObjective("binary", sl.Uniform(rate=0.5), seed=0)
    preds, y = np.zeros(1000), np.ones(1000)
    for _ in range(5):
        valid = y.copy()
        obj.sklearn(valid, preds)
        del valid
        invalid = y * 3  # CPython typically reuses the freed object's address here
        with pytest.raises(ValueError, match="label must be 0 or 1"):
            obj.sklearn(invalid, preds)
