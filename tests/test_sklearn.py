"""Tests of the scikit-learn estimators (smart_lgbm.sklearn, issue #5).

Every fit uses ``n_jobs=1``: the machine is shared and small, and with all OpenMP threads
on a loaded machine a LightGBM iteration can take 100x longer (thread barriers spin).
"""

from __future__ import annotations

import inspect
import pickle
import threading
import unittest

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from lightgbm.compat import LGBMNotFittedError
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_blobs, make_classification, make_regression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import smart_lgbm
from smart_lgbm import FirstOrder, Full, SecondOrder, Uniform
from smart_lgbm.sklearn import SmartClassifier, SmartRanker, SmartRegressor

FAST = {"n_estimators": 20, "n_jobs": 1, "verbose": -1}

# lightgbm 4.7 deprecates eval_set (for eval_X/eval_y) with a warning; both are still
# accepted and these tests pass eval_set to stock and Smart estimators alike.
pytestmark = pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")

#: Whether the installed LightGBM's estimators take eval_X/eval_y (4.7 on).
EVAL_XY = "eval_X" in inspect.signature(lgb.LGBMModel.fit).parameters

_STOCK = {SmartClassifier: lgb.LGBMClassifier, SmartRegressor: lgb.LGBMRegressor, SmartRanker: lgb.LGBMRanker}
_CHECK_PARAMS = {"min_child_samples": 1, "min_data_in_bin": 1, "n_estimators": 25, "n_jobs": 1}


# As LightGBM's test_sklearn_integration: the same two estimator kinds (LightGBM runs no
# scikit-learn checks on LGBMRanker, which needs ``group``), the same set_params; plus few
# trees and one thread to keep the ~110 checks fast.  What is required is exactly what
# LightGBM's own estimator achieves with the installed LightGBM and scikit-learn: every
# check is first run on the stock estimator, and a check it passes must pass here too.  (A
# fixed list of expected failures would not do: LightGBM 4.6 lists fewer than 4.7, whose
# list names checks that scikit-learn 1.9 added.)
@parametrize_with_checks([SmartClassifier(), SmartRegressor(), SmartClassifier(sampler="full"),
                          SmartRegressor(sampler="full")])
def test_sklearn_integration(estimator, check):
    estimator.set_params(**_CHECK_PARAMS)
    stock = _STOCK[type(estimator)](**_CHECK_PARAMS)
    try:
        check(stock)
    except unittest.SkipTest:
        pass  # scikit-learn skips it here (an optional dependency...): ours will skip too
    except Exception as stock_failure:  # noqa: BLE001 - any failure of the stock estimator
        try:
            check(estimator)
        except Exception:  # noqa: BLE001
            pytest.xfail(f"LightGBM's own {type(stock).__name__} fails this check too: {stock_failure!r:.300}")
        return
    check(estimator)


def test_estimator_tags_are_lightgbms():
    for smart_cls, stock_cls in _STOCK.items():
        assert smart_cls()._more_tags() == stock_cls()._more_tags()
        assert smart_cls().__sklearn_tags__() == stock_cls().__sklearn_tags__()


@pytest.mark.parametrize("smart_cls", list(_STOCK), ids=lambda c: c.__name__)
def test_fit_signature_is_the_installed_lightgbms(smart_cls):
    # the public fit is LightGBM's own (first in the method order) ...
    assert inspect.signature(smart_cls.fit) == inspect.signature(_STOCK[smart_cls].fit)
    # ... and the engine's hook below it takes what LGBMModel.fit takes, in this version
    assert inspect.signature(smart_lgbm.sklearn._EngineFit.fit) == inspect.signature(lgb.LGBMModel.fit)
    assert ("eval_X" in inspect.signature(smart_cls.fit).parameters) == EVAL_XY


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def a9a_rows():
    from smart_lgbm.datasets.bundled import load_a9a

    (X, y), (Xt, yt) = load_a9a()
    return X[:5000], y[:5000], Xt[:2000], yt[:2000]


@pytest.fixture(scope="module")
def three_class():
    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, n_classes=3, n_clusters_per_class=1, random_state=3
    )
    labels = np.array(["ant", "bee", "cat"])[y]  # string labels: exercises the label encoder
    return X[:600], labels[:600], X[600:], labels[600:]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    n = 800
    df = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n),
            "colour": pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n)),
            "income": rng.lognormal(3, 1, n),
        }
    )
    logit = (df["age"] - 40) / 10 + 2.0 * (df["colour"] == "red") - 1.5 * (df["colour"] == "blue")
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    return df, y


@pytest.fixture(scope="module")
def ranking():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(600, 5))
    y = np.clip(np.round(1.5 * X[:, 0] + rng.normal(size=600)) + 1, 0, 3).astype(int)
    group = np.full(30, 20)
    return X, y, group


def _categorical_split_features(booster: lgb.Booster) -> set[str]:
    """Features the model splits on as categories (``==`` splits)."""
    trees = booster.trees_to_dataframe()
    return set(trees.loc[trees["decision_type"] == "==", "split_feature"])


def _pair(smart_cls, stock_cls, **params):
    params = {**FAST, **params}
    return smart_cls(sampler=Full(), **params), stock_cls(**params)


# --------------------------------------------------------------------------- same model as LightGBM


def test_full_sampler_matches_lgbm_classifier_on_a9a(a9a_rows):
    X, y, Xt, yt = a9a_rows
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, n_estimators=40)
    fit_kw = {"eval_set": [(Xt, yt)], "eval_metric": ["auc"]}
    smart.fit(X, y, **fit_kw)
    stock.fit(X, y, **fit_kw)
    np.testing.assert_allclose(smart.predict_proba(Xt), stock.predict_proba(Xt), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(smart.predict(Xt), stock.predict(Xt))
    assert smart.evals_result_.keys() == stock.evals_result_.keys()
    for metric, values in stock.evals_result_["valid_0"].items():
        np.testing.assert_allclose(smart.evals_result_["valid_0"][metric], values, rtol=1e-9)
    assert smart.n_estimators_ == stock.n_estimators_ == 40
    np.testing.assert_array_equal(smart.feature_importances_, stock.feature_importances_)


def test_full_sampler_matches_lgbm_classifier_on_three_classes(three_class):
    X, y, Xt, yt = three_class
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, num_leaves=15)
    w = np.where(y == "bee", 2.0, 1.0)
    fit_kw = {"sample_weight": w, "eval_set": [(Xt, yt)], "eval_names": ["test"], "eval_metric": "multi_error"}
    smart.fit(X, y, **fit_kw)
    stock.fit(X, y, **fit_kw)
    assert smart.objective_ == stock.objective_ == "multiclass"
    assert smart.n_classes_ == 3
    np.testing.assert_array_equal(smart.classes_, ["ant", "bee", "cat"])
    np.testing.assert_allclose(smart.predict_proba(Xt), stock.predict_proba(Xt), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(smart.predict(Xt), stock.predict(Xt))
    for kw in ({"raw_score": True}, {"pred_leaf": True}, {"pred_contrib": True},
               {"raw_score": True, "start_iteration": 5, "num_iteration": 7}):
        np.testing.assert_allclose(smart.predict(Xt, **kw), stock.predict(Xt, **kw), rtol=0, atol=1e-6, err_msg=str(kw))
    np.testing.assert_array_equal(smart.predict(Xt, num_iteration=3), stock.predict(Xt, num_iteration=3))
    assert smart.booster_.num_model_per_iteration() == 3
    np.testing.assert_allclose(smart.evals_result_["test"]["multi_error"], stock.evals_result_["test"]["multi_error"])
    np.testing.assert_allclose(smart.best_score_["test"]["multi_logloss"], stock.best_score_["test"]["multi_logloss"])


def test_full_sampler_matches_lgbm_regressor():
    X, y = make_regression(n_samples=500, n_features=6, noise=5.0, random_state=0)
    init = np.full(500, 3.0)
    smart, stock = _pair(SmartRegressor, lgb.LGBMRegressor)
    smart.fit(X, y, init_score=init, eval_set=[(X, y)], eval_metric="l1")
    stock.fit(X, y, init_score=init, eval_set=[(X, y)], eval_metric="l1")
    np.testing.assert_allclose(smart.predict(X), stock.predict(X), rtol=0, atol=1e-6)
    assert list(smart.evals_result_) == ["training"]
    np.testing.assert_allclose(smart.evals_result_["training"]["l1"], stock.evals_result_["training"]["l1"])


def test_full_sampler_matches_lgbm_ranker(ranking):
    pytest.importorskip("smart_lgbm.losses.lambdarank")
    X, y, group = ranking
    smart, stock = _pair(SmartRanker, lgb.LGBMRanker)
    fit_kw = {"group": group, "eval_set": [(X, y)], "eval_group": [group], "eval_at": [3, 5]}
    smart.fit(X, y, **fit_kw)
    stock.fit(X, y, **fit_kw)
    assert smart.objective_ == "lambdarank"
    np.testing.assert_allclose(smart.predict(X), stock.predict(X), rtol=0, atol=1e-6)
    assert list(smart.evals_result_["training"]) == ["ndcg@3", "ndcg@5"]
    np.testing.assert_allclose(smart.evals_result_["training"]["ndcg@5"], stock.evals_result_["training"]["ndcg@5"])


def test_pandas_categorical_frame_matches_lgbm(frame):
    df, y = frame
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier)
    smart.fit(df, y)
    stock.fit(df, y)
    np.testing.assert_array_equal(smart.feature_names_in_, ["age", "colour", "income"])
    assert smart.n_features_in_ == 3
    assert smart.booster_.pandas_categorical == [["blue", "green", "grey", "red"]]
    assert _categorical_split_features(smart.booster_) == _categorical_split_features(stock.booster_) == {"colour"}
    np.testing.assert_allclose(smart.predict_proba(df), stock.predict_proba(df), rtol=0, atol=1e-6)


def test_early_stopping_callback_and_param_match_lgbm(a9a_rows):
    X, y, Xt, yt = a9a_rows
    results = []
    for kwargs, callbacks in [({}, [lgb.early_stopping(3, verbose=False)]), ({"early_stopping_round": 3}, None)]:
        smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, n_estimators=300, learning_rate=0.5, **kwargs)
        smart.fit(X, y, eval_set=[(Xt, yt)], callbacks=callbacks)
        stock.fit(X, y, eval_set=[(Xt, yt)], callbacks=callbacks)
        assert 0 < smart.best_iteration_ == stock.best_iteration_ < 300
        assert smart.best_score_["valid_0"]["binary_logloss"] == pytest.approx(
            stock.best_score_["valid_0"]["binary_logloss"], rel=1e-9)
        # the model keeps the best iteration's trees, as LightGBM's does; the record covers every
        # iteration trained (the best one plus the patience)
        assert smart.n_estimators_ == stock.n_estimators_ == smart.best_iteration_
        assert len(smart.sampling_record_["num_sampled"]) == smart.best_iteration_ + 3
        results.append(smart.best_iteration_)
    assert results[0] == results[1]


def test_callable_eval_metric_and_eval_weights(three_class):
    X, y, Xt, yt = three_class
    seen = {}

    def weighted_error(y_true, y_pred, weight):
        seen["shape"] = np.shape(y_pred)
        seen["weight"] = np.asarray(weight)
        return "weighted_error", float(np.average(np.argmax(y_pred, axis=1) != y_true, weights=weight)), False

    ew = np.linspace(1.0, 2.0, len(yt))
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier)
    smart.fit(X, y, eval_set=[(Xt, yt)], eval_sample_weight=[ew], eval_metric=[weighted_error, "multi_error"])
    assert seen["shape"] == (len(yt), 3)
    np.testing.assert_allclose(seen["weight"], ew)
    stock.fit(X, y, eval_set=[(Xt, yt)], eval_sample_weight=[ew], eval_metric=[weighted_error, "multi_error"])
    for metric in ("weighted_error", "multi_error", "multi_logloss"):
        np.testing.assert_allclose(smart.evals_result_["valid_0"][metric], stock.evals_result_["valid_0"][metric])


def test_eval_init_score_and_class_weight_match_lgbm(a9a_rows):
    X, y, Xt, yt = a9a_rows
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, class_weight={0: 1.0, 1: 3.0})
    fit_kw = {"init_score": np.full(len(y), -0.5), "eval_set": [(Xt, yt)], "eval_init_score": [np.full(len(yt), -0.5)]}
    smart.fit(X, y, **fit_kw)
    stock.fit(X, y, **fit_kw)
    np.testing.assert_allclose(smart.evals_result_["valid_0"]["binary_logloss"],
                               stock.evals_result_["valid_0"]["binary_logloss"], rtol=1e-9)
    np.testing.assert_allclose(smart.predict(Xt, raw_score=True), stock.predict(Xt, raw_score=True), atol=1e-6)


@pytest.mark.skipif(not EVAL_XY, reason="eval_X/eval_y arrived in lightgbm 4.7")
def test_eval_x_eval_y_match_lgbm(a9a_rows, ranking):
    X, y, Xt, yt = a9a_rows
    for eval_kw in ({"eval_X": Xt, "eval_y": yt}, {"eval_X": (Xt[:1000], Xt[1000:]), "eval_y": (yt[:1000], yt[1000:])}):
        smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier)
        smart.fit(X, y, eval_names=None if isinstance(eval_kw["eval_X"], tuple) else ["test"], **eval_kw)
        stock.fit(X, y, eval_names=None if isinstance(eval_kw["eval_X"], tuple) else ["test"], **eval_kw)
        assert list(smart.evals_result_) == list(stock.evals_result_)
        for name, metrics in stock.evals_result_.items():
            np.testing.assert_allclose(smart.evals_result_[name]["binary_logloss"], metrics["binary_logloss"], rtol=1e-9)
        np.testing.assert_allclose(smart.predict_proba(Xt), stock.predict_proba(Xt), rtol=0, atol=1e-6)
    Xr, yr, group = ranking
    smart, stock = _pair(SmartRanker, lgb.LGBMRanker)
    for model in (smart, stock):
        model.fit(Xr, yr, group=group, eval_X=Xr, eval_y=yr, eval_group=[group], eval_at=[3])
    np.testing.assert_allclose(smart.evals_result_["training"]["ndcg@3"], stock.evals_result_["training"]["ndcg@3"])


@pytest.mark.skipif(not EVAL_XY, reason="eval_set is deprecated from lightgbm 4.7")
def test_eval_set_deprecation_warned_like_lgbm(a9a_rows):
    X, y, Xt, yt = a9a_rows
    for model in _pair(SmartClassifier, lgb.LGBMClassifier, n_estimators=2):
        with pytest.warns(lgb.basic.LGBMDeprecationWarning, match="'eval_set' is deprecated") as record:
            model.fit(X, y, eval_set=[(Xt, yt)])
        # reported at the same place: LightGBM's LGBMModel.fit code, which both run
        assert {w.filename for w in record if "eval_set" in str(w.message)} == {lgb.sklearn.__file__}


def test_feature_names_in_like_lgbm(frame):
    # lightgbm 4.7 has feature_names_in_ only after training data with feature names; 4.6 always
    df, y = frame
    X = df[["age", "income"]]
    for fit_args, fit_kw in [((X, y), {}), ((X.to_numpy(), y), {}), ((X.to_numpy(), y), {"feature_name": ["u", "v"]})]:
        smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, n_estimators=2)
        smart.fit(*fit_args, **fit_kw)
        stock.fit(*fit_args, **fit_kw)
        assert hasattr(smart, "feature_names_in_") == hasattr(stock, "feature_names_in_"), fit_kw
        if hasattr(stock, "feature_names_in_"):
            np.testing.assert_array_equal(smart.feature_names_in_, stock.feature_names_in_)
        np.testing.assert_array_equal(smart.feature_name_, stock.feature_name_)


def test_subsample_without_subsample_freq_is_accepted_like_lgbm(a9a_rows):
    # LightGBM bags only with subsample_freq > 0: subsample alone changes nothing
    X, y, Xt, _ = a9a_rows
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier, subsample=0.5, subsample_freq=0)
    smart.fit(X, y)
    stock.fit(X, y)
    np.testing.assert_allclose(smart.predict_proba(Xt), stock.predict_proba(Xt), rtol=0, atol=1e-6)
    plain = lgb.LGBMClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(stock.predict_proba(Xt), plain.predict_proba(Xt))


# --------------------------------------------------------------------------- the sampler parameter


def test_training_goes_through_the_engine_with_the_sampler(a9a_rows):
    X, y, Xt, yt = a9a_rows
    model = SmartClassifier(sampler="first_order", sampler_params={"rate": 0.2}, **FAST).fit(X, y)
    record = model.sampling_record_
    assert set(record) >= {"num_sampled", "sampling_rate", "seconds"}
    assert len(record["sampling_rate"]) == 20
    assert 0.1 < np.mean(record["sampling_rate"]) < 0.3
    stock = lgb.LGBMClassifier(**FAST).fit(X, y)
    assert np.abs(model.predict_proba(Xt) - stock.predict_proba(Xt)).max() > 1e-3
    # still a usable model
    assert np.mean(model.predict(Xt) == yt) > 0.8


def test_sampler_instance_is_not_modified_by_fit(a9a_rows):
    X, y, _, _ = a9a_rows
    sampler = SecondOrder(rate=0.3)
    before = pickle.dumps(sampler)
    model = SmartClassifier(sampler=sampler, **FAST).fit(X, y)
    assert model.sampler is sampler
    assert pickle.dumps(sampler) == before
    assert np.mean(model.sampling_record_["sampling_rate"]) < 0.6


def test_multiclass_with_importance_sampler(three_class):
    X, y, Xt, yt = three_class
    model = SmartClassifier(sampler=FirstOrder(rate=0.4), n_estimators=40, n_jobs=1, verbose=-1).fit(X, y)
    proba = model.predict_proba(Xt)
    assert proba.shape == (len(yt), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(model.predict(Xt) == yt) > 0.7
    rates = np.asarray(model.sampling_record_["sampling_rate"])
    assert 0.2 < rates.mean() < 0.7
    text = model.booster_.model_to_string()
    assert "num_class=3" in text and "objective=multiclass num_class:3" in text
    # a stock model: reloads and predicts the same
    reloaded = lgb.Booster(model_str=text)
    np.testing.assert_allclose(reloaded.predict(Xt), proba, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("sampler", "sampler_params", "exc"),
    [
        ("no_such_sampler", None, ValueError),
        (42, None, TypeError),
        (Full, None, TypeError),  # the class, not an instance
        ("uniform", {"rate": 2.0}, ValueError),
        ("uniform", {"speed": 2.0}, ValueError),
        (Uniform(0.5), {"rate": 0.2}, ValueError),
        ("uniform", [("rate", 0.5)], TypeError),
    ],
)
def test_bad_sampler_is_refused_at_fit_naming_it(sampler, sampler_params, exc, frame):
    df, y = frame
    model = SmartClassifier(sampler=sampler, sampler_params=sampler_params, **FAST)  # no work in __init__
    assert model.get_params()["sampler"] is sampler
    with pytest.raises(exc, match="sampler"):
        model.fit(df, y)


# --------------------------------------------------------------------------- scikit-learn tooling


def test_get_params_set_params_clone():
    model = SmartRegressor(sampler="first_order", sampler_params={"rate": 0.3}, num_leaves=7, max_bin=63)
    params = model.get_params()
    assert params["sampler"] == "first_order" and params["sampler_params"] == {"rate": 0.3}
    assert params["num_leaves"] == 7 and params["max_bin"] == 63
    assert set(lgb.LGBMRegressor().get_params()) <= set(params)
    twin = clone(model)
    assert twin.get_params()["sampler_params"] == {"rate": 0.3} and twin.get_params()["max_bin"] == 63
    model.set_params(sampler=Uniform(0.5), sampler_params=None, learning_rate=0.05)
    assert isinstance(model.sampler, Uniform) and model.learning_rate == 0.05
    assert clone(model).sampler is not model.sampler  # cloned parameters are copies
    X, y = make_regression(n_samples=300, n_features=4, random_state=1)
    model.set_params(n_estimators=10, n_jobs=1, verbose=-1).fit(X, y)
    assert np.mean(model.sampling_record_["sampling_rate"]) == pytest.approx(0.5, abs=0.1)


def test_grid_search_over_sampler_and_learning_rate(a9a_rows):
    X, y, Xt, yt = a9a_rows
    X, y = X[:3000], y[:3000]
    grid = GridSearchCV(
        SmartClassifier(n_estimators=15, n_jobs=1, verbose=-1),
        {"sampler": ["full", FirstOrder(rate=0.3)], "learning_rate": [0.05, 0.2]},
        cv=2,
        scoring="roc_auc",
    )
    grid.fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    assert grid.cv_results_["mean_test_score"].min() > 0.8
    assert grid.best_params_["learning_rate"] in (0.05, 0.2)
    assert len(grid.best_estimator_.sampling_record_["seconds"]) == 15
    assert grid.score(Xt, yt) > 0.8


def test_pipeline_with_column_transformer_on_categorical_frame(frame):
    df, y = frame
    pre = ColumnTransformer(
        [("num", StandardScaler(), ["age", "income"]), ("cat", OrdinalEncoder(), ["colour"])],
        verbose_feature_names_out=False,
    ).set_output(transform="pandas")
    pipe = Pipeline([("pre", pre), ("gbm", SmartClassifier(sampler="uniform", sampler_params={"rate": 0.5}, **FAST))])
    pipe.fit(df, y, gbm__categorical_feature=["colour"])
    assert pipe.score(df, y) > 0.7
    gbm = pipe.named_steps["gbm"]
    np.testing.assert_array_equal(gbm.feature_names_in_, ["age", "income", "colour"])
    assert _categorical_split_features(gbm.booster_) == {"colour"}
    assert pipe.predict_proba(df.iloc[:5]).shape == (5, 2)


def test_pickle_round_trip(three_class):
    X, y, Xt, _ = three_class
    model = SmartClassifier(sampler=FirstOrder(rate=0.5), **FAST).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(Xt), model.predict_proba(Xt))
    np.testing.assert_array_equal(restored.predict(Xt), model.predict(Xt))
    assert restored.sampling_record_["num_sampled"] == model.sampling_record_["num_sampled"]
    assert restored.get_params()["sampler"].rate == 0.5


def test_stock_lightgbm_is_left_alone():
    # The swap happens in a per-fit copy of LGBMModel.fit, not in lightgbm's namespace:
    # a stock estimator fitted while Smart estimators fit in other threads trains with
    # stock LightGBM (it has bagging, which the engine refuses).
    import lightgbm.sklearn as lgb_sklearn

    X, y = make_classification(n_samples=400, n_features=6, random_state=0)
    errors: list[BaseException] = []

    def smart_fits() -> None:
        try:
            for _ in range(3):
                SmartClassifier(sampler="uniform", sampler_params={"rate": 0.5}, **FAST).fit(X, y)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=smart_fits)
    thread.start()
    for _ in range(3):
        stock = lgb.LGBMClassifier(subsample=0.5, subsample_freq=1, **FAST).fit(X, y)
        assert stock.n_estimators_ == 20
    thread.join()
    assert not errors
    assert lgb_sklearn.train is lgb.train
    assert lgb.LGBMModel.fit.__globals__ is lgb_sklearn.__dict__


def test_exported_from_package():
    assert smart_lgbm.SmartClassifier is SmartClassifier
    assert smart_lgbm.SmartRegressor is SmartRegressor
    assert smart_lgbm.SmartRanker is SmartRanker
    assert {"SmartClassifier", "SmartRanker", "SmartRegressor"} <= set(smart_lgbm.__all__)


# --------------------------------------------------------------------------- bad input, as LightGBM


def _bad_inputs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    yb = (X[:, 0] > 0).astype(int)
    yr = X[:, 1]
    return [
        ("classifier one row", "clf", lambda m: m.fit(X[:1], yb[:1])),
        ("classifier y length", "clf", lambda m: m.fit(X, yb[:-3])),
        ("classifier continuous y", "clf", lambda m: m.fit(X, yr)),
        ("classifier nan y", "clf", lambda m: m.fit(X, np.where(yb == 1, np.nan, 0.0))),
        ("classifier 3-d X", "clf", lambda m: m.fit(X.reshape(100, 3, 1), yb)),
        ("classifier sample_weight length", "clf", lambda m: m.fit(X, yb, sample_weight=np.ones(5))),
        ("classifier eval_sample_weight type", "clf",
         lambda m: m.fit(X, yb, eval_set=[(X.copy(), yb)], eval_sample_weight=np.ones(100))),
        ("classifier predict unfitted", "clf", lambda m: m.predict(X)),
        ("classifier predict_proba wrong width", "clf", lambda m: m.fit(X, yb).predict_proba(X[:, :2])),
        ("regressor string y", "reg", lambda m: m.fit(X, np.array(["a", "b"] * 50))),
        ("regressor empty X", "reg", lambda m: m.fit(np.empty((0, 3)), np.empty(0))),
        ("regressor sparse wrong width", "reg", lambda m: m.fit(X, yr).predict(sp.csr_matrix(X[:, :2]))),
        ("regressor unfitted attribute", "reg", lambda m: m.booster_),
        ("ranker no group", "rank", lambda m: m.fit(X, yb)),
        ("ranker eval_set without eval_group", "rank", lambda m: m.fit(X, yb, group=[100], eval_set=[(X, yb)])),
        ("ranker eval_group length", "rank",
         lambda m: m.fit(X, yb, group=[100], eval_set=[(X, yb)], eval_group=[[100], [100]])),
        # 4.7's eval_X/eval_y, refused by 4.6 as unknown arguments: the same either way
        ("classifier eval_X without eval_y", "clf", lambda m: m.fit(X, yb, eval_X=X)),
        ("classifier eval_X and eval_set", "clf", lambda m: m.fit(X, yb, eval_set=[(X, yb)], eval_X=X, eval_y=yb)),
        ("classifier eval_X tuple, eval_y not", "clf", lambda m: m.fit(X, yb, eval_X=(X, X), eval_y=yb)),
        ("regressor eval_X tuple lengths", "reg", lambda m: m.fit(X, yr, eval_X=(X, X), eval_y=(yr,))),
        ("regressor unknown fit argument", "reg", lambda m: m.fit(X, yr, eval_weight=[yr])),
        ("ranker eval_X without eval_group", "rank", lambda m: m.fit(X, yb, group=[100], eval_X=X, eval_y=yb)),
    ]


@pytest.mark.parametrize("sampler", ["full", None])  # the engine, and the default (sampler="auto")
@pytest.mark.parametrize(("case", "kind", "action"), _bad_inputs(), ids=[c[0] for c in _bad_inputs()])
def test_bad_input_refused_like_lightgbm(case, kind, action, sampler):
    smart_cls, stock_cls = {"clf": (SmartClassifier, lgb.LGBMClassifier), "reg": (SmartRegressor, lgb.LGBMRegressor),
                            "rank": (SmartRanker, lgb.LGBMRanker)}[kind]
    with pytest.raises(Exception) as stock_exc:
        action(stock_cls(**FAST))
    with pytest.raises(Exception) as smart_exc:
        action(smart_cls(sampler=sampler, **FAST))
    assert type(smart_exc.value) is type(stock_exc.value), (smart_exc.value, stock_exc.value)
    assert str(smart_exc.value).replace("Smart", "LGBM") == str(stock_exc.value)


def test_unfitted_sampling_record_raises_not_fitted():
    with pytest.raises(LGBMNotFittedError):
        SmartClassifier().sampling_record_


@pytest.mark.parametrize(
    ("params", "fit_kw", "exc", "match"),
    [
        ({"boosting_type": "dart"}, {}, ValueError, "boosting"),
        ({"subsample": 0.5, "subsample_freq": 1}, {}, ValueError, "bagging_fraction=0.5 with bagging_freq=1"),
        ({"objective": lambda y_true, y_pred: (y_pred - y_true, np.ones_like(y_pred))}, {}, TypeError, "CustomLoss"),
        ({}, {"init_model": "model.txt"}, ValueError, "init_model"),
    ],
)
def test_what_the_engine_cannot_do_is_refused(params, fit_kw, exc, match):
    X, y = make_regression(n_samples=100, n_features=3, random_state=0)
    with pytest.raises(exc, match=match):
        SmartRegressor(sampler="full", **{**FAST, **params}).fit(X, y, **fit_kw)


def test_single_class_like_lightgbm():
    # scikit-learn's check_classifiers_one_label, spelled out: LightGBM trains a constant model
    X = np.random.default_rng(0).uniform(size=(10, 3))
    y = np.ones(10)
    stock = lgb.LGBMClassifier(**FAST).fit(X, y)
    smart = SmartClassifier(sampler=Full(), **FAST).fit(X, y)
    np.testing.assert_array_equal(smart.predict(X), stock.predict(X))
    assert smart.booster_.num_trees() == stock.booster_.num_trees()


def test_blobs_binary_with_sparse_input():
    X, y = make_blobs(n_samples=300, centers=2, n_features=4, random_state=42)
    smart, stock = _pair(SmartClassifier, lgb.LGBMClassifier)
    smart.fit(sp.csr_matrix(X), y)
    stock.fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(smart.predict_proba(sp.csc_matrix(X)), stock.predict_proba(sp.csc_matrix(X)), atol=1e-6)


def test_loss_instance_objective_in_regressor():
    from smart_lgbm.losses.custom import CustomLoss

    X, y = make_regression(n_samples=300, n_features=4, noise=3.0, random_state=0)
    loss = CustomLoss(grad_hess=lambda label, raw: (raw - label, np.ones_like(raw)))
    smart = SmartRegressor(objective=loss, **FAST).fit(X, y, eval_set=[(X.copy(), y)])
    # squared error from zero: stock L2 without boost_from_average
    stock = lgb.LGBMRegressor(boost_from_average=False, **FAST).fit(X, y, eval_set=[(X.copy(), y)])
    assert smart.objective_ is loss
    np.testing.assert_allclose(smart.predict(X), stock.predict(X), rtol=0, atol=1e-6)
    np.testing.assert_allclose(smart.evals_result_["valid_0"]["l2"], stock.evals_result_["valid_0"]["l2"], rtol=1e-9)
