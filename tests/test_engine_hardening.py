"""Silent wrong metrics and models of the engine and the samplers, and the training set's
evaluation order (issue 40): each case against what stock LightGBM or the docs promise."""

from __future__ import annotations

import functools
import pickle
import warnings

import lightgbm as lgb
import numpy as np
import pytest
from sklearn.datasets import load_iris

import smart_lgbm as sl
from smart_lgbm.samplers import ProbabilitySampler


# The engine's own path: the default sampler="auto" hands these small runs to lightgbm.train,
# and these tests are of what the engine does (Full() is stock LightGBM's algorithm).
train_engine = functools.partial(sl.train, sampler=sl.Full())

BASE = {"objective": "binary", "verbosity": -1, "num_threads": 1, "num_leaves": 7}


def _data(n=600, f=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    return X, (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(float)


# --------------------------------------------------------------------------- evaluation order


def _evaluations(train, params, X, y, Xv, yv, position, names):
    """What a run reports: record_evaluation's keys, the last env.evaluation_result_list
    (set, metric) and best_score's sets and metrics, with the training set at ``position``."""
    dtrain = lgb.Dataset(X, y, free_raw_data=False)
    sets = [lgb.Dataset(Xv, yv, reference=dtrain), lgb.Dataset(Xv[:150], yv[:150], reference=dtrain)]
    sets.insert(position, dtrain)
    record, seen = {}, []
    booster = train(params, dtrain, 3, valid_sets=sets, valid_names=names,
                    callbacks=[lgb.record_evaluation(record),
                               lambda env: seen.append([r[:2] for r in env.evaluation_result_list])])
    return list(record), seen[-1], [(k, list(v)) for k, v in booster.best_score.items()]


@pytest.mark.parametrize("names", [None, ["a", "b", "c"]])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_training_set_is_evaluated_first_wherever_it_stands(position, names):
    X, y = _data()
    Xv, yv = _data(300, seed=1)
    params = {**BASE, "metric": ["binary_logloss", "auc"]}
    ours = _evaluations(train_engine, params, X, y, Xv, yv, position, names)
    stock = _evaluations(lgb.train, params, X, y, Xv, yv, position, names)
    assert ours == stock
    assert ours[0][0] == (names[position] if names else "training")


def test_training_set_listed_twice_is_evaluated_once_under_its_last_name():
    X, y = _data()
    Xv, yv = _data(300, seed=1)
    out = {}
    for train in (train_engine, lgb.train):
        dtrain = lgb.Dataset(X, y, free_raw_data=False)
        record = {}
        train(BASE, dtrain, 2, valid_sets=[dtrain, lgb.Dataset(Xv, yv, reference=dtrain), dtrain],
              valid_names=["first", "v", "last"], callbacks=[lgb.record_evaluation(record)])
        out[train] = list(record)
    assert out[train_engine] == out[lgb.train] == ["last", "v"]


@pytest.mark.parametrize("estimator, stock", [(sl.SmartClassifier, lgb.LGBMClassifier),
                                              (sl.SmartRegressor, lgb.LGBMRegressor)])
def test_estimators_evaluate_the_training_data_first(estimator, stock):
    X, y = _data()
    Xv, yv = _data(300, seed=1)
    y, yv = y.astype(int), yv.astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LightGBM 4.7 deprecates eval_set for eval_X/eval_y
        ours = estimator(n_estimators=3, verbose=-1).fit(X, y, eval_set=[(Xv, yv), (X, y)])
        theirs = stock(n_estimators=3, verbose=-1).fit(X, y, eval_set=[(Xv, yv), (X, y)])
    assert list(ours.evals_result_) == list(theirs.evals_result_) == ["training", "valid_0"]
    assert list(ours.best_score_) == list(theirs.best_score_)


def test_ranker_evaluates_the_training_data_first():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = rng.integers(0, 3, 500)
    group, eval_group = [50] * 10, [[100, 100], [50] * 10]
    eval_set = [(X[:200], y[:200]), (X, y)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = sl.SmartRanker(n_estimators=3, verbose=-1, sampler="full").fit(X, y, group=group, eval_set=eval_set,
                                                              eval_group=eval_group)
        theirs = lgb.LGBMRanker(n_estimators=3, verbose=-1).fit(X, y, group=group, eval_set=eval_set,
                                                                eval_group=eval_group)
    assert list(ours.evals_result_) == list(theirs.evals_result_) == ["training", "valid_0"]
    assert list(ours.best_score_) == list(theirs.best_score_)


# --------------------------------------------------------------------------- reference=


@pytest.mark.parametrize("params, reference_params", [
    ({}, None), ({"max_bin": 63}, None), ({}, {"max_bin": 15}), ({"max_bin": 63}, {"max_bin": 15, "min_data_in_bin": 5}),
])
def test_training_set_built_with_a_reference_is_binned_with_it(params, reference_params):
    X, y = _data(500)
    Xr = np.random.default_rng(3).normal(size=(300, 5)) * 3  # other bin boundaries than X's

    def dataset():
        return lgb.Dataset(X, y, reference=lgb.Dataset(Xr, (Xr[:, 0] > 0).astype(float), params=reference_params))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours_set = dataset()
        ours = train_engine({**BASE, **params}, ours_set, 5)
        stock = lgb.train({**BASE, **params}, dataset(), 5)
    assert ours.model_to_string() == stock.model_to_string()
    assert ours_set.reference is not None and ours_set.reference._handle is None  # the caller's, never constructed


# --------------------------------------------------------------------------- samplers


class _RefittingImportance(ProbabilitySampler):
    """A user's sampler that asks for the refit the way docs/samplers.md says: a class attribute."""

    refit_leaves = True

    def importance(self, grad, hess):
        return np.abs(grad) + 1e-3


def test_a_user_sampler_declaring_refit_leaves_gets_the_refit():
    sampler = _RefittingImportance(rate=0.3)
    assert sampler.refit_leaves is True
    assert _RefittingImportance(rate=0.3, refit_leaves=False).refit_leaves is False  # an explicit argument wins
    X, y = _data(2000)
    refit = train_engine(BASE, lgb.Dataset(X, y), 3, sampler=sampler)
    plain = train_engine(BASE, lgb.Dataset(X, y), 3, sampler=_RefittingImportance(rate=0.3, refit_leaves=False))
    # the first tree: the same sample, so the same splits; other leaf values, those of all rows
    def lines(booster, key):
        return [line for line in booster.model_to_string().split("Tree=1")[0].splitlines() if line.startswith(key)]

    assert lines(refit, "threshold=") == lines(plain, "threshold=")
    assert lines(refit, "leaf_value=") != lines(plain, "leaf_value=")
    assert sl.FirstOrder(rate=0.3).refit_leaves is False


@pytest.mark.parametrize("sampler", [sl.FirstOrder(rate=1.0), sl.MVS(rate=1.0), sl.SecondOrder(rate=1.0),
                                     sl.LossBased(rate=1.0), _RefittingImportance(rate=1.0, refit_leaves=False),
                                     sl.FirstOrder(rate=sl.AdaptiveRate(start=1.0))],
                         ids=["first_order", "mvs", "second_order", "loss_based", "user", "adaptive_at_max"])
def test_rate_one_draws_every_row_and_trains_full_boosting(sampler):
    # a third of the rows weigh 0: their gradient and hessian (every importance) are 0, yet
    # they count towards min_data_in_leaf in full boosting
    X, y = _data(900)
    weight = np.where(np.arange(900) % 3 == 0, 0.0, 1.0)
    params = {**BASE, "min_data_in_leaf": 40}
    record = {}
    ours = train_engine(params, lgb.Dataset(X, y, weight=weight), 5, sampler=sampler,
                    callbacks=[sl.record_sampling(record)])
    full = train_engine(params, lgb.Dataset(X, y, weight=weight), 5, sampler=sl.Full())
    assert record["num_sampled"] == [900] * 5
    assert ours.model_to_string() == full.model_to_string()


def test_probabilities_at_rate_one_are_all_one():
    g = np.array([0.0, 1.0, 2.0, 0.0])
    assert np.array_equal(sl.FirstOrder(rate=1.0).probabilities(g, np.ones(4)), np.ones(4))


@pytest.mark.parametrize("sampler", [sl.FirstOrder(rate="auto"), sl.Uniform(rate="auto"), sl.MVS(rate="auto")],
                         ids=["first_order", "uniform", "mvs"])
def test_an_adaptive_rate_grows_when_its_samples_are_too_small_to_split(sampler):
    X, y = load_iris(return_X_y=True)  # 150 rows: 15 at the start rate, below min_data_in_leaf=20
    params = {"objective": "multiclass", "num_class": 3, "verbosity": -1, "seed": 0}
    record = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = train_engine(params, lgb.Dataset(X, y), 100, sampler=sampler, callbacks=[sl.record_sampling(record)])
        full = train_engine(params, lgb.Dataset(X, y), 100)
    assert record["sampling_rate"][0] == pytest.approx(0.1, abs=0.05)
    assert record["sampling_rate"][-1] == 1.0
    assert (booster.predict(X).argmax(axis=1) == y).mean() == (full.predict(X).argmax(axis=1) == y).mean() == 1.0


# --------------------------------------------------------------------------- SmartObjective on the training set


def test_smart_objective_refuses_a_raw_score_metric_on_the_training_set():
    X, y = _data()
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.5))
    dtrain = lgb.Dataset(X, y)
    with pytest.raises(ValueError, match="metric 'binary_logloss' would be computed by LightGBM on raw scores"):
        lgb.train({"objective": obj, "metric": "binary_logloss", "verbosity": -1}, dtrain, 3, valid_sets=[dtrain],
                  callbacks=[obj.callback])
    with warnings.catch_warnings(), pytest.raises(ValueError, match="on raw scores"):
        warnings.simplefilter("ignore")
        lgb.LGBMClassifier(objective=obj, n_estimators=3, verbose=-1).fit(
            X, y.astype(int), eval_set=[(X, y.astype(int))], callbacks=[obj.callback])
    # without an evaluation of the training set nothing is refused, and the model pickles
    booster = lgb.train({"objective": obj, "metric": "binary_logloss", "verbosity": -1}, lgb.Dataset(X, y), 3,
                        callbacks=[obj.callback])
    assert pickle.loads(pickle.dumps(booster)).num_trees() == 3
    # the right way: the objective's feval on the training set
    record = {}
    dtrain = lgb.Dataset(X, y)
    lgb.train({"objective": obj, "metric": "None", "verbosity": -1}, dtrain, 3, valid_sets=[dtrain], feval=obj.feval,
              callbacks=[obj.callback, lgb.record_evaluation(record)])
    assert 0 < record["training"]["binary_logloss"][-1] < np.log(2)


# --------------------------------------------------------------------------- integers LightGBM cannot take


@pytest.mark.parametrize("params, rounds, name", [
    ({"num_leaves": 3_000_000_000}, 2, "num_leaves"), ({"min_data_in_leaf": -(2**31) - 1}, 2, "min_data_in_leaf"),
    ({"max_bin_by_feature": [255, 2**32]}, 2, "max_bin_by_feature"), ({"num_iterations": 3_000_000_000}, 2, "num_iterations"),
    ({"interaction_constraints": [[0, 2**40]]}, 2, "interaction_constraints"), ({}, 3_000_000_000, "num_boost_round"),
])
def test_integers_lightgbm_cannot_take_are_refused_before_training(params, rounds, name):
    X, y = _data(200)
    with pytest.raises(ValueError, match=name):
        train_engine({**BASE, **params}, lgb.Dataset(X, y), rounds)
