"""The engine's metrics equal LightGBM's own metrics: names, order and values.

Two ways to get LightGBM's value for given raw scores:

* ``stock_and_ours``: train stock LightGBM with the metrics on a validation set, take its
  last reported values, and evaluate our Evaluator on that model's raw predictions for
  the validation set (the brief's "same model" comparison);
* ``lightgbm_on_scores``: a Booster with no trees evaluates a validation set whose
  init_score is the raw scores we choose, so edge cases (ties, clamping) can be set up.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from smart_lgbm.losses import Target
from smart_lgbm._engine import evaluator_for
from smart_lgbm._engine import canonicalize, resolve_loss

F32 = np.float32


def as_lightgbm_stores(values):
    """Labels and weights as LightGBM holds them (float32), widened back to float64."""
    return None if values is None else np.asarray(values, dtype=F32).astype(np.float64)


def ours(params, raw, y, weight=None, group=None):
    p = canonicalize(params)
    target = Target(label=as_lightgbm_stores(y), weight=as_lightgbm_stores(weight), group=group)
    return [(name, value, higher) for name, value, higher in evaluator_for(p, resolve_loss(p)).evaluate(raw, target)]


def stock_and_ours(params, train, valid, rounds=8):
    """(LightGBM's evaluation list, ours) for the validation set after ``rounds`` stock iterations.

    ``train``/``valid`` are (X, y, weight, group) tuples.
    """
    X, y, w, g = train
    Xv, yv, wv, gv = valid
    dtrain = lgb.Dataset(X, y, weight=w, group=g)
    dvalid = lgb.Dataset(Xv, yv, weight=wv, group=gv, reference=dtrain)
    booster = lgb.train({**params, "verbosity": -1, "num_threads": 1, "num_leaves": 7, "min_data_in_leaf": 5},
                        dtrain, rounds, valid_sets=[dvalid], valid_names=["v"], keep_training_booster=True)
    raw = booster.predict(Xv, raw_score=True)
    stock = [(name, value, higher) for _, name, value, higher in booster.eval_valid()]
    return stock, ours(params, raw, yv, wv, gv)


def assert_same(stock, mine, rel=1e-10):
    assert [n for n, _, _ in mine] == [n for n, _, _ in stock]
    assert [h for _, _, h in mine] == [h for _, _, h in stock]
    for (name, theirs, _), (_, value, _) in zip(stock, mine):
        assert value == pytest.approx(theirs, rel=rel, abs=1e-13), name


def lightgbm_on_scores(params, raw, y, weight=None, group=None):
    n = y.shape[0]
    X = np.random.default_rng(0).normal(size=(n, 2))
    train = lgb.Dataset(X, y, group=group, params={"verbosity": -1})
    booster = lgb.Booster({**params, "verbosity": -1}, train)
    booster.add_valid(lgb.Dataset(X, y, weight=weight, group=group, init_score=raw, reference=train), "v")
    return [(name, value, higher) for _, name, value, higher in booster.eval_valid()]


def split(X, y, n_train, group=None, weighted=False, rng=None):
    w = rng.uniform(0.2, 3.0, size=y.shape[0] - n_train) if weighted else None
    if group is None:
        return (X[:n_train], y[:n_train], None, None), (X[n_train:], y[n_train:], w, None)
    q = np.searchsorted(np.cumsum(group), n_train, side="right")
    return (X[:n_train], y[:n_train], None, group[:q]), (X[n_train:], y[n_train:], w, group[q:])


REGRESSION_METRICS = ["l2", "rmse", "l1", "quantile", "huber", "fair", "poisson", "mape", "tweedie"]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sigmoid", [1.0, 2.0])
def test_binary_objective_metrics(rng, weighted, sigmoid):
    n = 3000
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + rng.normal(size=n) > 0.3).astype(float)
    group = np.full(n // 20, 20)
    metrics = ["binary_logloss", "binary_error", "auc", "average_precision", "cross_entropy", "kullback_leibler",
               *REGRESSION_METRICS, "map", "ndcg"]
    params = {"objective": "binary", "sigmoid": sigmoid, "metric": metrics, "alpha": 0.3, "fair_c": 0.7,
              "tweedie_variance_power": 1.2, "eval_at": [3, 1]}
    train, valid = split(X, y, 2000, group=group, weighted=weighted, rng=rng)
    stock, mine = stock_and_ours(params, train, valid)
    assert [name for name, _, _ in stock][-4:] == ["map@1", "map@3", "ndcg@1", "ndcg@3"]  # eval_at sorted
    assert_same(stock, mine)


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_objective_metrics(rng, weighted):
    n = 3000
    X = rng.normal(size=(n, 4))
    y = np.exp(0.5 * X[:, 0] + 0.3 * rng.normal(size=n))  # positive, for the gamma metrics
    params = {"objective": "regression", "metric": [*REGRESSION_METRICS, "gamma", "gamma_deviance", "auc",
                                                    "average_precision"], "alpha": 1.5, "fair_c": 2.0}
    stock, mine = stock_and_ours(params, *split(X, y, 2000, weighted=weighted, rng=rng))
    assert_same(stock, mine)


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_on_probabilities_cross_entropy(rng, weighted):
    n = 3000
    X = rng.normal(size=(n, 4))
    y = 1.0 / (1.0 + np.exp(-X[:, 0] - 0.5 * rng.normal(size=n)))  # labels in [0, 1]
    params = {"objective": "regression", "metric": ["cross_entropy", "kullback_leibler", "l2"]}
    stock, mine = stock_and_ours(params, *split(X, y, 2000, weighted=weighted, rng=rng))
    assert_same(stock, mine)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("top_k", [1, 2])
def test_multiclass_metrics(rng, weighted, top_k):
    n = 3000
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.8 * rng.normal(size=n), [-0.7, 0.0, 0.7]).astype(float)
    params = {"objective": "multiclass", "num_class": 4, "metric": ["multi_logloss", "multi_error", "auc_mu"],
              "multi_error_top_k": top_k}
    stock, mine = stock_and_ours(params, *split(X, y, 2000, weighted=weighted, rng=rng))
    assert [name for name, _, _ in mine][1] == ("multi_error" if top_k == 1 else f"multi_error@{top_k}")
    assert_same(stock, mine)


def test_auc_mu_with_class_weights(rng):
    n = 2000
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + rng.normal(size=n), [-0.5, 0.5]).astype(float)
    weights = [0, 1, 4, 2, 0, 0.5, 3, 1, 0]
    params = {"objective": "multiclass", "num_class": 3, "metric": "auc_mu", "auc_mu_weights": weights}
    for weighted in (False, True):
        assert_same(*stock_and_ours(params, *split(X, y, 1200, weighted=weighted, rng=rng)))


@pytest.mark.parametrize("weighted", [False, True])
def test_lambdarank_metrics(weighted):
    """Issue #12.3: a weighted ranking validation set gives LightGBM's (weighted) NDCG."""
    from smart_lgbm.datasets.ranking import load_rank_sample

    (X, y, group), (Xt, yt, gt) = load_rank_sample()
    rng = np.random.default_rng(1)
    wt = rng.uniform(0.1, 3.0, yt.size) if weighted else None
    params = {"objective": "lambdarank", "metric": ["ndcg", "map", "l2", "auc"], "eval_at": [10, 1, 3, 3],
              "label_gain": [0, 1, 3, 7, 20]}
    stock, mine = stock_and_ours(params, (X, y, None, group), (Xt, yt, wt, gt), rounds=5)
    assert [name for name, _, _ in stock][:4] == ["ndcg@1", "ndcg@3", "ndcg@3", "ndcg@10"]
    assert_same(stock, mine, rel=1e-12)


def test_weighted_ndcg_differs_from_unweighted():
    """The weights matter on this data: an evaluator that ignored them would fail above."""
    from smart_lgbm.datasets.ranking import load_rank_sample

    _, (Xt, yt, gt) = load_rank_sample()
    raw = np.random.default_rng(2).normal(size=yt.size)
    w = np.random.default_rng(1).uniform(0.1, 3.0, yt.size)
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [5]}
    weighted = ours(params, raw, yt, w, gt)[0][1]
    assert weighted == pytest.approx(lightgbm_on_scores(params, raw, yt, w, gt)[0][1], rel=1e-12)
    assert abs(weighted - ours(params, raw, yt, None, gt)[0][1]) > 1e-3


@pytest.mark.parametrize("weighted", [False, True])
def test_scores_with_ties_and_clamping(rng, weighted):
    n = 2000
    y = (rng.random(n) < 0.4).astype(float)
    raw = rng.normal(scale=2.0, size=n)
    raw[:300] = np.round(raw[:300])  # ties for AUC and average precision
    raw[5], raw[6], raw[7] = 40.0, -40.0, 800.0  # probabilities clamped at kEpsilon
    y[5], y[6], y[7] = 0.0, 1.0, 0.0
    w = rng.uniform(0.2, 2.0, size=n) if weighted else None
    params = {"objective": "binary", "metric": ["binary_logloss", "binary_error", "auc", "average_precision",
                                                "cross_entropy"]}
    assert_same(lightgbm_on_scores(params, raw, y, as_lightgbm_stores(w)), ours(params, raw, y, w), rel=1e-12)
    raw3 = rng.normal(size=(n, 3))
    raw3[:100] = 0.0  # ties count as errors in multi_error
    raw3[100:110, 0] = 60.0  # probabilities of the other classes below kEpsilon
    y3 = rng.integers(0, 3, size=n).astype(float)
    params = {"objective": "multiclass", "num_class": 3, "metric": ["multi_logloss", "multi_error", "auc_mu"]}
    assert_same(lightgbm_on_scores(params, raw3, y3, as_lightgbm_stores(w)), ours(params, raw3, y3, w), rel=1e-12)


def test_one_class_absent_gives_lightgbm_values(rng):
    y = np.ones(50)
    raw = rng.normal(size=50)
    params = {"objective": "binary", "metric": ["auc", "average_precision"]}
    assert_same(lightgbm_on_scores(params, raw, y), ours(params, raw, y))
    assert [v for _, v, _ in ours(params, raw, y)] == [1.0, 1.0]


def test_metric_parameter_parsing_follows_lightgbm(rng):
    n = 500
    y = (rng.random(n) < 0.5).astype(float)
    raw = rng.normal(size=n)
    cases = [
        {"metric": ["None", "auc"]},  # "None" adds nothing; the rest stays
        {"metric": "AUC,binary_error"},  # case-insensitive, comma-separated
        {"metric": ["mse", "l2", "auc", "auc"]},  # aliases and repeats collapse
        {"metric": ""},  # empty: the objective's default
        {"metric": []},
        {"metric": "none"},
        {"metric": "binary,xentropy,kldiv,mean_absolute_percentage_error"},
        {"metric_types": "auc", "metric_freq": 5, "is_provide_training_metric": True},  # CLI-only ones ignored
        {"metric": "ndcg,map", "eval_at": []},  # empty eval_at: the default 1..5
    ]
    group = np.full(n // 10, 10)
    for extra in cases:
        params = {"objective": "binary", **extra}
        assert_same(lightgbm_on_scores(params, raw, y, group=group), ours(params, raw, y, group=group))


def test_objective_rmse_reports_l2_like_lightgbm(rng):
    y = rng.normal(size=300)
    raw = rng.normal(size=300)
    for objective in ("rmse", "l2_root", "root_mean_squared_error", "mse"):
        params = {"objective": objective}
        mine = ours(params, raw, y)
        assert [n for n, _, _ in mine] == ["l2"]
        assert_same(lightgbm_on_scores(params, raw, y), mine)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"objective": "binary", "metric": "mape2"}, ValueError, "metric 'mape2' is not a LightGBM metric; accepted"),
        ({"objective": "binary", "metric": "ndcg@5"}, ValueError, r"give metric='ndcg' and eval_at=\[5\]"),
        ({"objective": "multiclass", "num_class": 3, "metric": "multi_error@2"}, ValueError, "multi_error_top_k"),
        ({"objective": "binary", "metric": "auc, binary_error"}, ValueError, "' binary_error' has spaces"),
        ({"objective": "binary", "metric": "xentlambda"}, ValueError, "'xentlambda' is not supported"),
        ({"objective": "binary", "metric": "multi_error"}, ValueError, "does not fit a single-output objective"),
        ({"objective": "multiclass", "num_class": 3, "metric": "auc"}, ValueError,
         "does not fit a multiclass objective.*multi_error"),
        ({"objective": "binary", "metric": 3}, TypeError, "metric must be a string or a list"),
        ({"objective": "binary", "metric": ["auc", 3]}, TypeError, "metric entries must be strings"),
        ({"objective": "multiclass", "num_class": 3, "multi_error_top_k": 0}, ValueError, "multi_error_top_k must"),
        ({"objective": "multiclass", "num_class": 3, "multi_error_top_k": 1.5}, TypeError, "multi_error_top_k"),
        ({"objective": "multiclass", "num_class": 3, "auc_mu_weights": [0, 1, 1, 1]}, ValueError,
         "auc_mu_weights must have num_class \\* num_class = 9"),
        ({"objective": "multiclass", "num_class": 2, "auc_mu_weights": [0, 0, 1, 0]}, ValueError,
         r"non-zero off the diagonal; entry \[0, 1\]"),
        ({"objective": "binary", "eval_at": [0, 3]}, ValueError, "eval_at must contain positive"),
        ({"objective": "binary", "eval_at": [2.5]}, TypeError, "eval_at must be a list of positive integers"),
        ({"objective": "binary", "ndcg_at": "1,x"}, TypeError, "eval_at must be a list of numbers"),
        ({"objective": "binary", "alpha": -1}, ValueError, "alpha must be a finite number > 0"),
        ({"objective": "binary", "fair_c": 0}, ValueError, "fair_c must be a finite number > 0"),
        ({"objective": "binary", "tweedie_variance_power": 2.0}, ValueError, r"tweedie_variance_power must be in \[1, 2\)"),
        ({"objective": "binary", "metric_freq": 0}, ValueError, "metric_freq must be an integer > 0"),
        ({"objective": "lambdarank", "label_gain": "0,1,x"}, ValueError, "label_gain must be a sequence of numbers"),
    ],
)
def test_bad_metric_parameters_are_refused_early(params, error, match):
    p = canonicalize(params)
    loss = resolve_loss(dict(p, label_gain=None) if "label_gain" in p else p)
    with pytest.raises(error, match=match):
        evaluator_for(p, loss)


@pytest.mark.parametrize(
    "params, y, weight, group, match",
    [
        ({"metric": "ndcg"}, [0.0, 1.0], None, None, "metric 'ndcg' needs query groups"),
        ({"metric": "map"}, [0.0, 1.0], None, None, "metric 'map' needs query groups"),
        ({"metric": "gamma"}, [0.0, 1.0], None, None, "metric 'gamma' needs labels > 0; found \\[0.0\\]"),
        ({"metric": "gamma_deviance"}, [-1.0, 1.0], None, None, "labels > 0"),
        ({"metric": "cross_entropy"}, [0.5, 2.0], None, None, "metric 'cross_entropy' needs labels in \\[0, 1\\]"),
        ({"metric": "kullback_leibler"}, [0.5, 1.0], [1.0, -1.0], None, "non-negative weights"),
        ({"metric": "ndcg", "label_gain": [0, 1]}, [0.0, 2.0], None, np.array([2]), "label_gain"),
    ],
)
def test_data_a_metric_cannot_use_is_refused(params, y, weight, group, match):
    with pytest.raises(ValueError, match=match):
        ours({"objective": "regression", **params}, np.zeros(2), np.array(y),
             None if weight is None else np.array(weight), group)


def test_evaluator_takes_a_parameter_mapping():
    from smart_lgbm.losses import BinaryLogloss

    assert evaluator_for({"metric": ["auc", "map"], "eval_at": [5, 2]}, BinaryLogloss()).output_names == [
        "auc", "map@2", "map@5"]
    with pytest.raises(TypeError, match="params must be a mapping"):
        evaluator_for("auc", BinaryLogloss())


def test_engine_validation_ndcg_is_weighted_like_lightgbm():
    """Issue #12.3 end to end: smart_lgbm.train reports LightGBM's NDCG of its own model
    on a weighted ranking validation set."""
    import smart_lgbm as sl
    from smart_lgbm.datasets.ranking import load_rank_sample

    (X, y, group), (Xt, yt, gt) = load_rank_sample()
    wt = np.random.default_rng(1).uniform(0.1, 3.0, yt.size)
    params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [5, 1], "num_leaves": 7, "verbosity": -1}
    record: dict = {}
    booster = sl.train(params, lgb.Dataset(X, y, group=group), 3, sampler=sl.Full(),
                       valid_sets=[lgb.Dataset(Xt, yt, weight=wt, group=gt)], valid_names=["v"],
                       callbacks=[lgb.record_evaluation(record)])
    raw = booster.predict(Xt, raw_score=True)
    stock = lightgbm_on_scores(params, raw, yt, wt, gt)
    assert [name for name, _, _ in stock] == list(record["v"]) == ["ndcg@1", "ndcg@5"]
    for name, value, _ in stock:
        assert record["v"][name][-1] == pytest.approx(value, rel=1e-12)


def test_engine_reports_metric_parameters_like_lightgbm(rng):
    """Issue #12.4 end to end: multi_error_top_k (and every other metric parameter) reaches
    the engine's evaluation."""
    import smart_lgbm as sl

    n = 1500
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + rng.normal(size=n), [-0.5, 0.5]).astype(float)
    params = {"objective": "multiclass", "num_class": 3, "metric": ["multi_error", "auc_mu"],
              "multi_error_top_k": 2, "auc_mu_weights": [0, 1, 3, 1, 0, 1, 2, 1, 0], "verbosity": -1}
    record: dict = {}
    booster = sl.train(params, lgb.Dataset(X[:1000], y[:1000]), 3, valid_sets=[lgb.Dataset(X[1000:], y[1000:])],
                       valid_names=["v"], callbacks=[lgb.record_evaluation(record)])
    stock = lightgbm_on_scores(params, booster.predict(X[1000:], raw_score=True), y[1000:])
    assert list(record["v"]) == [name for name, _, _ in stock] == ["multi_error@2", "auc_mu"]
    for name, value, _ in stock:
        assert record["v"][name][-1] == pytest.approx(value, rel=1e-12)


def test_engine_evaluation_and_early_stopping_follow_stock(a9a_small):
    """The whole evaluation path of smart_lgbm.train against lightgbm.train on the same
    (Full) training run: names, order, values per iteration, and the iteration that
    first_metric_only early stopping picks."""
    import smart_lgbm as sl

    (X, y), (Xt, yt) = a9a_small
    wt = np.random.default_rng(4).uniform(0.5, 2.0, yt.size)
    gt = np.full(yt.size // 40, 40)
    params = {"objective": "binary", "metric": ["average_precision", "map", "binary_logloss", "cross_entropy"],
              "eval_at": [3, 1], "first_metric_only": True, "early_stopping_round": 5, "num_leaves": 15,
              "learning_rate": 0.3, "verbosity": -1}
    records: list[dict] = [{}, {}]
    g = np.full(y.size // 40, 40)  # stock LightGBM sets every metric up on the training set too
    ours = sl.train(params, lgb.Dataset(X, y, group=g), 80, sampler=sl.Full(),
                    valid_sets=[lgb.Dataset(Xt, yt, weight=wt, group=gt)], valid_names=["v"],
                    callbacks=[lgb.record_evaluation(records[0])])
    train = lgb.Dataset(X, y, group=g)
    stock = lgb.train(params, train, 80, valid_sets=[lgb.Dataset(Xt, yt, weight=wt, group=gt, reference=train)],
                      valid_names=["v"], callbacks=[lgb.record_evaluation(records[1])])
    mine, theirs = records
    assert list(mine["v"]) == list(theirs["v"]) == ["average_precision", "map@1", "map@3", "binary_logloss",
                                                    "cross_entropy"]
    for name in theirs["v"]:
        np.testing.assert_allclose(mine["v"][name], theirs["v"][name], rtol=0, atol=1e-6, err_msg=name)
    assert 0 < ours.best_iteration == stock.best_iteration < 80
