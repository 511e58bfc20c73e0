"""SmartObjective: one sampling objective for lightgbm.train, lightgbm.cv and the estimators."""

from __future__ import annotations

import pickle

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._engine.draw import iteration_rng, stream_rng
from smart_lgbm.losses import BinaryLogloss, Target
from smart_lgbm.samplers import GradientHistory, SamplingState

BASE = {"num_leaves": 15, "learning_rate": 0.1, "verbosity": -1}


def raw_predictions(model, X):
    booster = model.booster_ if hasattr(model, "booster_") else model
    return booster.predict(X, raw_score=True)


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


class RecordingSecondOrder(sl.SecondOrder):
    """SecondOrder that keeps what the regulariser is given each iteration."""

    def sample(self, state, rng):
        leaves = state.history.leaves
        anchor = state.history.gradient(self.anchor_lag)
        self.seen = getattr(self, "seen", [])
        self.seen.append((None if leaves is None else leaves.copy(), anchor is not None,
                          self.fitting_gradient(state) is not state.grad))
        return super().sample(state, rng)


def test_second_order_regulariser_gets_the_newest_leaves(a9a_small):
    (X, y), _ = a9a_small
    sampler = RecordingSecondOrder(rate=0.3, anchor_lag=2)
    obj = sl.SmartObjective("binary", sampler)
    booster = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y, free_raw_data=False), 5,
                        callbacks=[obj.callback])
    all_leaves = booster.predict(X, pred_leaf=True)
    assert sampler.seen[0][0] is None
    for it in range(1, 5):
        leaves, has_anchor, regularised = sampler.seen[it]
        np.testing.assert_array_equal(leaves, all_leaves[:, it - 1])  # the tree before this iteration
        assert has_anchor == regularised == (it >= 2)


def test_second_order_regulariser_without_what_it_needs_is_refused(a9a_small):
    """Issue #12.14: without obj.callback the regulariser used to be skipped silently."""
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.SecondOrder(rate=0.3, anchor_lag=2))
    with pytest.raises(ValueError, match=r"needs the leaves of the newest tree.*callbacks=\[obj.callback\]"):
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y, free_raw_data=False), 3)
    with pytest.raises(ValueError, match="free_raw_data=False"):
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 3, callbacks=[obj.callback])
    with pytest.raises(ValueError, match="scikit-learn estimators always free it"):
        lgb.LGBMClassifier(objective=obj, n_estimators=3, verbose=-1).fit(X, y, callbacks=[obj.callback])
    # anchor without the leaf-mean term needs neither the callback nor the raw data
    obj = sl.SmartObjective("binary", sl.SecondOrder(rate=0.3, anchor_lag=2, eta=0.0))
    assert lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 3).num_trees() == 3


def test_init_score_on_a_dataset_not_constructed(a9a_small):
    """Issue #12.14: the docstring's usage raised "Cannot get weight before construct Dataset"."""
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.5))
    data = lgb.Dataset(X, y)
    init = obj.init_score(data)
    assert init.shape == (len(y),) and np.allclose(init, np.log(y.mean() / (1 - y.mean())))
    assert sl._lightgbm.handle_of(data) is None  # not constructed behind the caller's back
    w = np.where(y > 0, 2.0, 1.0)
    odds = 2 * y.sum() / (len(y) - y.sum())
    assert np.allclose(obj.init_score(lgb.Dataset(X, y, weight=w)), np.log(odds))
    assert np.allclose(obj.init_score(lgb.Dataset(X, y, weight=w).construct()), np.log(odds))
    multi = sl.SmartObjective("multiclass", sl.Full(), num_class=3)
    y3 = np.arange(len(y)) % 3
    assert multi.init_score(lgb.Dataset(X, y3)).shape == (len(y), 3)
    with pytest.raises(ValueError, match="construct"):
        obj.init_score(lgb.Dataset(X, y).construct().subset(np.arange(10)))
    with pytest.raises(ValueError, match="label must be 0 or 1"):
        obj.init_score(lgb.Dataset(X, y * 3))


@pytest.mark.parametrize("estimator", [lgb.LGBMClassifier, lgb.LGBMRegressor])
def test_estimator_with_objective_equals_lightgbm_train(a9a_small, estimator):
    """Issues #12.14 / #11.2: objective=obj in LightGBM's estimators (an AttributeError before)
    trains the same model as lightgbm.train with the same objective and seed."""
    (X, y), (Xt, _) = a9a_small
    name = "binary" if estimator is lgb.LGBMClassifier else "regression"
    if name == "regression":
        y = y + np.asarray(X[:, :5].sum(axis=1)).ravel()
    obj = sl.SmartObjective(name, sl.FirstOrder(rate=0.3), seed=3)
    model = estimator(objective=obj, n_estimators=8, num_leaves=15, verbose=-1).fit(X, y, callbacks=[obj.callback])
    rates = list(obj.record["sampling_rate"])
    twin = sl.SmartObjective(name, sl.FirstOrder(rate=0.3), seed=3)
    booster = lgb.train({**BASE, "objective": twin}, lgb.Dataset(X, y), 8, callbacks=[twin.callback])
    np.testing.assert_array_equal(raw_predictions(model, Xt), booster.predict(Xt, raw_score=True))
    assert len(rates) == 8 and abs(np.mean(rates) - 0.3) < 0.02


def test_ranker_with_objective(a9a_small):
    from smart_lgbm.datasets import load_rank_sample

    (X, y, g), (Xt, _, _) = load_rank_sample()
    obj = sl.SmartObjective("lambdarank", sl.MVS(rate=0.3), seed=1)
    ranker = lgb.LGBMRanker(objective=obj, n_estimators=5, num_leaves=15, verbose=-1)
    ranker.fit(X, y, group=g, callbacks=[obj.callback])
    twin = sl.SmartObjective("lambdarank", sl.MVS(rate=0.3), seed=1)
    booster = lgb.train({**BASE, "objective": twin}, lgb.Dataset(X, y, group=g), 5, callbacks=[twin.callback])
    np.testing.assert_array_equal(raw_predictions(ranker, Xt), booster.predict(Xt, raw_score=True))
    assert len(obj.record["num_sampled"]) == 5


def test_multiclass_classifier_with_objective(higgs):
    (X, y), (Xt, _) = higgs
    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    obj = sl.SmartObjective("multiclass", sl.FirstOrder(rate=0.4), num_class=3)
    clf = lgb.LGBMClassifier(objective=obj, n_estimators=4, verbose=-1).fit(X, y3, callbacks=[obj.callback])
    assert clf.booster_.num_trees() == 12
    assert raw_predictions(clf, Xt).shape == (len(Xt), 3)


def test_cv_keeps_one_history_per_fold(a9a_small):
    """lightgbm.cv interleaves its folds' calls: each fold must keep its own gradient
    history and leaves, so that fold 0 trains exactly as lightgbm.train on its rows does."""
    (X, y), _ = a9a_small
    n = 3001  # folds of unequal size: a shared history could not even be subtracted
    X, y = X[:n], y[:n]
    folds = [(np.setdiff1d(np.arange(n), test), test) for test in np.array_split(np.arange(n), 3)]

    def objective():
        return sl.SmartObjective("binary", sl.SecondOrder(rate=0.4, anchor_lag=1, eta=0.5), seed=5)

    obj = objective()
    full = lgb.Dataset(X, y, free_raw_data=False)
    result = lgb.cv({**BASE, "objective": obj, "metric": "auc"}, full, 6, folds=folds, callbacks=[obj.callback],
                    return_cvbooster=True)
    assert len(obj.record["num_sampled"]) == 3 * 6
    twin = objective()
    alone = lgb.train({**BASE, "objective": twin}, full.subset(folds[0][0]), 6, callbacks=[twin.callback])
    cv_fold0 = result["cvbooster"].boosters[0]
    def trees(booster):
        return booster.model_to_string().split("Tree=0")[1].split("end of trees")[0]

    assert trees(cv_fold0) == trees(alone)


def test_one_objective_two_runs_same_model(a9a_small):
    """The callback starts every run afresh; without it, a fresh Dataset does."""
    (X, y), (Xt, _) = a9a_small
    obj = sl.SmartObjective("binary", sl.SecondOrder(rate=0.3, anchor_lag=1, eta=0.0), seed=2)
    data = lgb.Dataset(X, y)
    first = lgb.train({**BASE, "objective": obj}, data, 5, callbacks=[obj.callback]).predict(Xt, raw_score=True)
    second = lgb.train({**BASE, "objective": obj}, data, 5, callbacks=[obj.callback]).predict(Xt, raw_score=True)
    third = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 5).predict(Xt, raw_score=True)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, third)
    assert len(obj.record["num_sampled"]) == 10  # cleared by the second run's callback, not by the third


def test_pickle_round_trip_of_objective_and_fitted_estimator(a9a_small):
    (X, y), (Xt, _) = a9a_small
    obj = sl.SmartObjective("binary", sl.MVS(rate=0.2), seed=4, sigmoid=2.0)
    clf = lgb.LGBMClassifier(objective=obj, n_estimators=5, verbose=-1).fit(X, y, callbacks=[obj.callback])
    clone = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(raw_predictions(clone, Xt), raw_predictions(clf, Xt))
    copy = pickle.loads(pickle.dumps(obj))
    assert copy.callback.objective is copy and copy.record == obj.record
    assert (copy.loss.sigmoid, copy.seed, repr(copy.sampler)) == (2.0, 4, repr(obj.sampler))
    # the copy trains the very model the original does
    a = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 4, callbacks=[obj.callback])
    b = lgb.train({**BASE, "objective": copy}, lgb.Dataset(X, y), 4, callbacks=[copy.callback])
    np.testing.assert_array_equal(a.predict(Xt, raw_score=True), b.predict(Xt, raw_score=True))


def test_streams_are_independent_and_reproducible(a9a_small):
    (X, y), _ = a9a_small

    def drawn(stream):
        obj = sl.SmartObjective("binary", sl.Uniform(0.5), seed=7, stream=stream)
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 1, callbacks=[obj.callback])
        return obj.last_sample.indices

    engine = drawn(None)
    np.testing.assert_array_equal(engine, drawn(None))
    np.testing.assert_array_equal(drawn(1), drawn(1))
    assert not np.array_equal(drawn(1), drawn(2)) and not np.array_equal(drawn(1), engine)
    assert stream_rng(7, 0, None).random() == iteration_rng(7, 0).random()
    obj = sl.SmartObjective("binary")
    obj.stream = 3
    assert obj.stream == 3
    with pytest.raises(ValueError, match="stream must be a non-negative integer"):
        obj.stream = -1
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        sl.SmartObjective("binary", seed=1.5)


def test_deprecated_sklearn_alias_is_the_objective():
    obj = sl.SmartObjective("binary", sl.Uniform(0.5))
    with pytest.warns(DeprecationWarning, match="objective=obj"):
        assert obj.sklearn is obj


def test_callback_outside_lightgbm_is_refused(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.Uniform(0.5))
    with pytest.raises(TypeError, match="smart_lgbm.train samples by itself"):
        sl.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 2, callbacks=[obj.callback])
    with pytest.raises(TypeError, match="labels as a numpy array"):
        obj([0.0, 1.0], np.zeros(2))


def test_new_label_array_is_validated_even_at_a_reused_address():
    # A temporary label array freed after one call and a new one allocated at the same
    # address must not be mistaken for the already-validated labels.
    obj = sl.SmartObjective("binary", sl.Uniform(rate=0.5), seed=0)
    preds, y = np.zeros(1000), np.ones(1000)
    for _ in range(5):
        valid = y.copy()
        obj(valid, preds)
        del valid
        invalid = y * 3  # CPython typically reuses the freed object's address here
        with pytest.raises(ValueError, match="label must be 0 or 1"):
            obj(invalid, preds)


# ---------------------------------------------------------------- metrics and the final model (issue #21.3)

def _logloss(y, p):
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _with_init(obj, X, y, Xt, yt):
    """Training and validation Datasets starting from the stock objective's initial score."""
    dtrain = lgb.Dataset(X, y)
    init = obj.init_score(dtrain)
    dtrain.set_init_score(init)
    dvalid = lgb.Dataset(Xt, yt, reference=dtrain)
    dvalid.set_init_score(np.full(len(yt), init[0]))
    return dtrain, dvalid, init


def test_feval_records_stock_objectives_metric_and_finalize_its_model(a9a_small):
    """With Full(), SmartObjective + feval records the validation log-loss stock LightGBM's
    binary objective records, and finalize() gives stock's model: its probabilities'
    log-loss is the recorded value.  LightGBM's own metric of a custom objective is that
    of raw scores (negative here)."""
    (X, y), (Xt, yt) = a9a_small
    obj = sl.SmartObjective("binary", sl.Full())
    dtrain, dvalid, init = _with_init(obj, X, y, Xt, yt)
    ours, stock = {}, {}
    booster = lgb.train({**BASE, "objective": obj, "metric": "None"}, dtrain, 20, valid_sets=[dvalid],
                        feval=obj.feval, callbacks=[obj.callback, lgb.record_evaluation(ours)])
    stock_booster = lgb.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 20,
                              valid_sets=[lgb.Dataset(Xt, yt)], callbacks=[lgb.record_evaluation(stock)])
    np.testing.assert_allclose(ours["valid_0"]["binary_logloss"], stock["valid_0"]["binary_logloss"],
                               rtol=0, atol=1e-9)
    final = obj.finalize(booster, init)
    proba = final.predict(Xt)
    np.testing.assert_allclose(proba, stock_booster.predict(Xt), rtol=0, atol=1e-12)
    assert abs(_logloss(yt, proba) - ours["valid_0"]["binary_logloss"][-1]) <= 1e-9
    assert "objective=binary sigmoid:1" in final.model_to_string()
    # the raw model is unchanged and still predicts raw scores (without the initial score)
    np.testing.assert_allclose(booster.predict(Xt) + init[0], final.predict(Xt, raw_score=True), atol=1e-12)


def test_early_stopping_acts_on_the_final_models_metric(a9a_small):
    """With a sampler, early stopping on obj.feval stops where the log-loss of the final
    model's probabilities, iteration by iteration, says it should."""
    (X, y), (Xt, yt) = a9a_small
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.2), seed=4)
    dtrain, dvalid, init = _with_init(obj, X, y, Xt, yt)
    rec = {}
    booster = lgb.train({**BASE, "objective": obj, "metric": "None", "learning_rate": 0.5}, dtrain, 300,
                        valid_sets=[dvalid], feval=obj.feval,
                        callbacks=[obj.callback, lgb.early_stopping(5, verbose=False), lgb.record_evaluation(rec)])
    final = obj.finalize(booster, init)
    recorded = rec["valid_0"]["binary_logloss"]
    assert len(recorded) < 300, "the test needs early stopping to stop"
    # lightgbm.train returns the model up to its best iteration; every recorded value up to
    # there is the final model's log-loss at that iteration
    values = [_logloss(yt, final.predict(Xt, num_iteration=i)) for i in range(1, final.current_iteration() + 1)]
    np.testing.assert_allclose(recorded[:len(values)], values, rtol=0, atol=1e-9)
    best = int(np.argmin(values)) + 1
    assert booster.best_iteration == best == int(np.argmin(recorded)) + 1 and len(recorded) == best + 5
    assert final.best_iteration == best  # predict() defaults to it, as on the original
    np.testing.assert_array_equal(final.predict(Xt), final.predict(Xt, num_iteration=best))


def test_cv_reports_the_loss_metric_as_stock_cv_does(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.Full())
    ours = lgb.cv({**BASE, "objective": obj, "metric": "None"}, lgb.Dataset(X, y), 10, nfold=3, seed=2,
                  feval=obj.feval, callbacks=[obj.callback])
    stock = lgb.cv({**BASE, "objective": "binary", "boost_from_average": False}, lgb.Dataset(X, y), 10,
                   nfold=3, seed=2)
    assert set(ours) == set(stock) == {"valid binary_logloss-mean", "valid binary_logloss-stdv"}
    np.testing.assert_allclose(ours["valid binary_logloss-mean"], stock["valid binary_logloss-mean"], atol=1e-9)
    # without feval LightGBM reports nothing for a custom objective: the reason feval exists
    bare = lgb.cv({**BASE, "objective": obj}, lgb.Dataset(X, y), 2, nfold=3, callbacks=[obj.callback])
    assert bare == {}


def test_estimator_eval_metric_equals_stock_estimator(a9a_small):
    (X, y), (Xt, yt) = a9a_small
    obj = sl.SmartObjective("binary", sl.Full())
    ours = lgb.LGBMClassifier(objective=obj, metric="None", n_estimators=8, num_leaves=15, verbose=-1)
    ours.fit(X, y, eval_set=[(Xt, yt)], eval_metric=obj.feval, callbacks=[obj.callback])
    stock = lgb.LGBMClassifier(n_estimators=8, num_leaves=15, boost_from_average=False, verbose=-1)
    stock.fit(X, y, eval_set=[(Xt, yt)])
    np.testing.assert_allclose(ours.evals_result_["valid_0"]["binary_logloss"],
                               stock.evals_result_["valid_0"]["binary_logloss"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(obj.finalize(ours.booster_).predict(Xt), stock.predict_proba(Xt)[:, 1], atol=1e-12)


def test_multiclass_feval_and_finalize_equal_stock(higgs):
    (X, y), (Xt, _) = higgs
    y3, yt3 = np.digitize(X[:, 1], [-0.5, 0.5]), np.digitize(Xt[:, 1], [-0.5, 0.5])
    obj = sl.SmartObjective("multiclass", sl.Full(), num_class=3)
    dtrain = lgb.Dataset(X, y3)
    init = obj.init_score(dtrain)
    dtrain.set_init_score(init)
    dvalid = lgb.Dataset(Xt, yt3, reference=dtrain)
    dvalid.set_init_score(np.tile(init[0], (len(yt3), 1)))
    ours, stock = {}, {}
    params = {**BASE, "num_class": 3}
    booster = lgb.train({**params, "objective": obj, "metric": "None"}, dtrain, 6, valid_sets=[dvalid],
                        feval=obj.metrics(["multi_logloss", "multi_error"]),
                        callbacks=[obj.callback, lgb.record_evaluation(ours)])
    stock_booster = lgb.train({**params, "objective": "multiclass", "metric": ["multi_logloss", "multi_error"]},
                              lgb.Dataset(X, y3), 6, valid_sets=[lgb.Dataset(Xt, yt3)],
                              callbacks=[lgb.record_evaluation(stock)])
    for name in ("multi_logloss", "multi_error"):
        np.testing.assert_allclose(ours["valid_0"][name], stock["valid_0"][name], rtol=0, atol=1e-9)
    np.testing.assert_allclose(obj.finalize(booster, init).predict(Xt), stock_booster.predict(Xt), atol=1e-12)


@pytest.mark.parametrize("metric", ["binary_logloss", "binary_error", "xentropy", "l2"])
def test_metric_of_raw_scores_is_refused_with_validation_sets(a9a_small, metric):
    (X, y), (Xt, yt) = a9a_small
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.3))
    with pytest.raises(ValueError, match="raw scores.*'metric': 'None'.*feval=obj.feval"):
        lgb.train({**BASE, "objective": obj, "metric": metric}, lgb.Dataset(X, y), 2,
                  valid_sets=[lgb.Dataset(Xt, yt)], callbacks=[obj.callback])
    with pytest.raises(ValueError, match="raw scores"):
        lgb.LGBMClassifier(objective=obj, n_estimators=2, verbose=-1).fit(  # the estimator's default metric
            X, y, eval_set=[(Xt, yt)], callbacks=[obj.callback])
    # no validation set: nothing is evaluated, nothing to refuse
    lgb.train({**BASE, "objective": obj, "metric": metric}, lgb.Dataset(X, y), 2, callbacks=[obj.callback])


def test_metrics_of_raw_scores_and_of_identity_losses_are_allowed(a9a_small):
    (X, y), (Xt, yt) = a9a_small
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.3))
    rec = {}
    lgb.train({**BASE, "objective": obj, "metric": "auc"}, lgb.Dataset(X, y), 2, valid_sets=[lgb.Dataset(Xt, yt)],
              feval=obj.metrics("auc"), callbacks=[obj.callback, lgb.record_evaluation(rec)])
    assert rec["valid_0"]["auc"] == pytest.approx(rec["valid_0"]["auc"])  # both reported under one name
    reg = sl.SmartObjective("regression", sl.FirstOrder(rate=0.3))
    lgb.train({**BASE, "objective": reg, "metric": "l2"}, lgb.Dataset(X, y), 2, valid_sets=[lgb.Dataset(Xt, yt)],
              callbacks=[reg.callback])


def test_metrics_and_finalize_refuse_bad_input(a9a_small):
    (X, y), _ = a9a_small
    obj = sl.SmartObjective("binary", sl.Full())
    with pytest.raises(ValueError, match="not a LightGBM metric"):
        obj.metrics("logloss_of_mine")
    with pytest.raises(TypeError, match="unknown metric parameter"):
        obj.metrics("auc", num_leaves=3)
    assert obj.metrics("ndcg", eval_at=[3]).names == ["ndcg@3"]
    booster = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 2, callbacks=[obj.callback])
    with pytest.raises(ValueError, match="same for every row"):
        obj.finalize(booster, np.arange(len(y), dtype=float))
    with pytest.raises(TypeError, match="lightgbm.Booster"):
        obj.finalize("model.txt")
    with pytest.raises(ValueError, match="finite number"):
        obj.finalize(booster, [np.nan])
