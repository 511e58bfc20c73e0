"""Drop-in parity with ``lightgbm.train`` (issue 40): class weights (``is_unbalance``,
``scale_pos_weight``), the huber and cross_entropy objectives, continued training
(``init_model``) and ``keep_training_booster``, and the reasons of every objective refused."""

from __future__ import annotations

import functools
import difflib
import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._lightgbm import split_model_string
from smart_lgbm._engine.param_roles import REFUSED_OBJECTIVES
from smart_lgbm.losses import BinaryLogloss, CrossEntropy, Huber, Target


# The engine's own path: the default sampler="auto" hands these small runs to lightgbm.train,
# and these tests are of what the engine does (Full() is stock LightGBM's algorithm).
train_engine = functools.partial(sl.train, sampler=sl.Full())

BASE = {"verbosity": -1, "num_threads": 1, "num_leaves": 7}


def _same(ours: lgb.Booster, stock: lgb.Booster) -> None:
    a, b = ours.model_to_string(), stock.model_to_string()
    assert a == b, "\n".join(list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))[:12])


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return rng, X


# --------------------------------------------------------------------------- class weights and objectives


@pytest.mark.parametrize("extra", [{"is_unbalance": True}, {"scale_pos_weight": 3.5}, {"scale_pos_weight": 0.25},
                                   {"is_unbalance": True, "sigmoid": 2.0}])
@pytest.mark.parametrize("weighted", [False, True])
def test_class_weights_train_as_stock(extra, weighted):
    rng, X = _data()
    y = (X[:, 0] + rng.normal(size=len(X)) > 1.2).astype(float)  # a rare positive class
    w = rng.uniform(0.1, 3.0, len(X)) if weighted else None
    params = {**BASE, "objective": "binary", **extra}
    _same(train_engine(params, lgb.Dataset(X, y, weight=w), 10), lgb.train(params, lgb.Dataset(X, y, weight=w), 10))


@pytest.mark.parametrize("objective, label", [
    ("huber", lambda rng, X: X[:, 0] * 3 + rng.normal(size=len(X)) * 2),
    ("cross_entropy", lambda rng, X: rng.uniform(size=len(X)) * (X[:, 0] > 0)),
    ("xentropy", lambda rng, X: (X[:, 1] > 0).astype(float)),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_huber_and_cross_entropy_train_as_stock(objective, label, weighted):
    rng, X = _data()
    y = label(rng, X)
    w = rng.uniform(0.1, 3.0, len(X)) if weighted else None
    for extra in ({}, {"alpha": 0.3} if objective == "huber" else {"boost_from_average": False}):
        params = {**BASE, "objective": objective, **extra}
        record = {}, {}
        ours = train_engine(params, lgb.Dataset(X, y, weight=w), 10, valid_sets=[lgb.Dataset(X[:500], y[:500])],
                        callbacks=[lgb.record_evaluation(record[0])])
        stock = lgb.train(params, lgb.Dataset(X, y, weight=w), 10, valid_sets=[lgb.Dataset(X[:500], y[:500])],
                          callbacks=[lgb.record_evaluation(record[1])])
        _same(ours, stock)
        (metric, values), = record[0]["valid_0"].items()  # the objective's own default metric
        assert metric == ("huber" if objective == "huber" else "cross_entropy")
        np.testing.assert_allclose(values, record[1]["valid_0"][metric], rtol=1e-12)


@pytest.mark.parametrize("loss, label", [
    (BinaryLogloss(is_unbalance=True), lambda rng, n: (rng.random(n) < 0.2).astype(float)),
    (BinaryLogloss(scale_pos_weight=2.5, sigmoid=1.5), lambda rng, n: (rng.random(n) < 0.5).astype(float)),
    (Huber(alpha=0.5), lambda rng, n: rng.normal(size=n) * 2),
    (CrossEntropy(), lambda rng, n: rng.random(n)),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_gradients_equal_the_python_expressions(loss, label, weighted):
    rng = np.random.default_rng(3)
    n = 5000
    target = Target(label=label(rng, n).astype(np.float32).astype(np.float64),
                    weight=rng.uniform(0, 3, n).astype(np.float32).astype(np.float64) if weighted else None)
    raw = np.concatenate([rng.normal(size=n - 4) * 5, [-40.0, -37.0, 0.0, 60.0]])
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    loss.compute_gradients(raw, target, grad, hess)
    g, h = loss.gradient_hessian(raw, target)
    np.testing.assert_array_equal(grad, g.astype(np.float32))
    np.testing.assert_array_equal(hess, h.astype(np.float32))


@pytest.mark.parametrize("objective, label", [("huber", lambda rng, X: X[:, 0] + rng.normal(size=len(X))),
                                              ("cross_entropy", lambda rng, X: rng.uniform(size=len(X))),
                                              ("binary", lambda rng, X: (X[:, 0] > 1).astype(float))])
@pytest.mark.parametrize("sampler", [sl.FirstOrder(rate=0.3), sl.MVS(rate=0.3), sl.LossBased(rate=0.3),
                                     sl.FirstOrder(rate=0.3, refit_leaves=True)], ids=["fo", "mvs", "loss", "refit"])
def test_samplers_train_the_new_objectives_and_track_their_scores(objective, label, sampler):
    rng, X = _data(2000)
    y = label(rng, X)
    params = {**BASE, "objective": objective, **({"is_unbalance": True} if objective == "binary" else {})}
    dtrain = lgb.Dataset(X, y, free_raw_data=False)
    booster = train_engine(params, dtrain, 8, sampler=sampler, valid_sets=[dtrain], feval=_tracked)
    # the run's tracked predictions are the saved model's
    np.testing.assert_allclose(_tracked.last, lgb.Booster(model_str=booster.model_to_string()).predict(X),
                               rtol=1e-12, atol=1e-15)


def _tracked(preds, dataset):
    """A feval keeping the run's last tracked predictions (on the converted scale)."""
    _tracked.last = np.array(preds)
    return "seen", 0.0, False


def test_class_weight_conflicts_and_ranges_are_refused():
    rng, X = _data(300)
    y = (X[:, 0] > 0).astype(float)
    for bad, name in (({"is_unbalance": True, "scale_pos_weight": 2.0}, "scale_pos_weight"),
                      ({"scale_pos_weight": -1.0}, "scale_pos_weight"), ({"objective": "huber", "alpha": 0.0}, "alpha")):
        with pytest.raises(ValueError, match=name):
            train_engine({**BASE, "objective": "binary", **bad}, lgb.Dataset(X, y), 2)
    with pytest.raises(ValueError, match=r"label must be in \[0, 1\]"):
        train_engine({**BASE, "objective": "cross_entropy"}, lgb.Dataset(X, y * 2), 2)


@pytest.mark.parametrize("objective", sorted(REFUSED_OBJECTIVES))
def test_every_refused_objective_names_its_reason(objective):
    rng, X = _data(200)
    y = (X[:, 0] > 0).astype(float)
    with pytest.raises(ValueError, match=rf"objective='{objective}' is not supported: \w+"):
        train_engine({**BASE, "objective": objective}, lgb.Dataset(X, y), 2)


# --------------------------------------------------------------------------- continued training


def _runs(init, params, X, y, Xv, yv, rounds=5, keep=False, **kwargs):
    out = {}
    for train in (train_engine, lgb.train):
        dtrain = lgb.Dataset(X, y, free_raw_data=False)
        record, envs = {}, []

        def note(env, envs=envs):
            envs.append((env.iteration, env.begin_iteration, env.end_iteration))

        booster = train(params, dtrain, rounds, valid_sets=[lgb.Dataset(Xv, yv, reference=dtrain), dtrain],
                        init_model=init, keep_training_booster=keep,
                        callbacks=[lgb.record_evaluation(record), note, *kwargs.get("callbacks", [])])
        out[train] = booster, record, envs
    return out[train_engine], out[lgb.train]


@pytest.mark.parametrize("objective", ["binary", "multiclass", "regression", "huber"])
@pytest.mark.parametrize("as_file", [False, True])
def test_init_model_continues_training_as_lightgbm_train(tmp_path, objective, as_file):
    rng, X = _data(2000)
    y = {"binary": (X[:, 0] > 0).astype(float), "multiclass": np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)}.get(
        objective, X[:, 0] + rng.normal(size=2000))
    params = {**BASE, "objective": objective, **({"num_class": 3} if objective == "multiclass" else {})}
    first = lgb.train(params, lgb.Dataset(X, y), 4)
    init = first
    if as_file:
        init = str(tmp_path / "first.txt")
        first.save_model(init)
    (ours, ours_record, ours_envs), (stock, stock_record, stock_envs) = _runs(init, params, X, y, X[:300], y[:300])
    _same(ours, stock)
    assert ours.current_iteration() == stock.current_iteration() == 9
    assert ours_envs == stock_envs == [(4 + i, 4, 9) for i in range(5)]
    for name in ("training", "valid_0"):  # the metrics start from the init model's predictions
        for metric, values in stock_record[name].items():
            np.testing.assert_allclose(ours_record[name][metric], values, rtol=1e-10)
    assert list(ours_record) == list(stock_record) == ["training", "valid_0"]


def test_init_model_with_a_sampler_starts_from_its_predictions():
    rng, X = _data(2000)
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(float)
    params = {**BASE, "objective": "binary"}
    first = train_engine(params, lgb.Dataset(X, y), 5, sampler=sl.FirstOrder(rate=0.3))
    dtrain = lgb.Dataset(X, y, free_raw_data=False)
    more = train_engine(params, dtrain, 5, sampler=sl.FirstOrder(rate=0.3), init_model=first, valid_sets=[dtrain],
                    feval=_tracked)
    assert more.num_trees() == 10
    # its trees first, unchanged
    assert split_model_string(more.model_to_string())[1][:5] == split_model_string(first.model_to_string())[1]
    np.testing.assert_allclose(_tracked.last, lgb.Booster(model_str=more.model_to_string()).predict(X), rtol=1e-12)


def test_init_model_replaces_a_datasets_init_score_with_a_warning():
    rng, X = _data(1000)
    y = (X[:, 0] > 0).astype(float)
    params = {**BASE, "objective": "binary"}
    first = lgb.train(params, lgb.Dataset(X, y), 3)
    with pytest.warns(UserWarning, match="init_score is replaced by the init model's predictions"):
        ours = train_engine(params, lgb.Dataset(X, y, init_score=np.full(1000, 5.0)), 3, init_model=first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = lgb.train(params, lgb.Dataset(X, y, init_score=np.full(1000, 5.0)), 3, init_model=first)
    _same(ours, stock)


def test_init_model_is_refused_clearly():
    rng, X = _data(500)
    y = (X[:, 0] > 0).astype(float)
    binary = lgb.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="init_model has 1 tree.* per iteration but the objective fits 3"):
        train_engine({**BASE, "objective": "multiclass", "num_class": 3}, lgb.Dataset(X, y), 2, init_model=binary)
    with pytest.raises(TypeError, match="init_model must be"):
        train_engine({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 2, init_model=3)
    freed = lgb.Dataset(X, y).construct()
    with pytest.raises(ValueError, match="raw data"):
        train_engine({**BASE, "objective": "binary"}, freed, 2, init_model=binary)
    with pytest.raises(ValueError, match="cannot be loaded"):
        train_engine({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 2, init_model="/nonexistent/model.txt")


def test_early_stopping_after_an_init_model_counts_its_iterations():
    rng, X = _data(2000)
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(float)
    Xv, yv = X[:400], y[:400]
    params = {**BASE, "objective": "binary", "learning_rate": 0.5}
    first = lgb.train(params, lgb.Dataset(X, y), 5)
    for keep in (False, True):
        (ours, *_), (stock, *_) = _runs(first, params, X[400:], y[400:], Xv, yv, rounds=60, keep=keep,
                                        callbacks=[lgb.early_stopping(3, verbose=False)])
        assert ours.best_iteration == stock.best_iteration > 5
        assert ours.num_trees() == stock.num_trees()  # all trees when kept, up to the best otherwise
        assert ours.model_to_string(num_iteration=-1).split("end of trees")[0].split("tree_sizes")[1] \
            == stock.model_to_string(num_iteration=-1).split("end of trees")[0].split("tree_sizes")[1]


def test_keep_training_booster_keeps_the_data_for_eval_and_update():
    rng, X = _data(2000)
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(float)
    params = {**BASE, "objective": "binary"}
    out = {}
    for train in (train_engine, lgb.train):
        dtrain = lgb.Dataset(X, y, free_raw_data=False)
        dvalid = lgb.Dataset(X[:300], y[:300], reference=dtrain)
        booster = train(params, dtrain, 5, valid_sets=[dvalid], keep_training_booster=True)
        evals = booster.eval_train(), booster.eval_valid()
        booster.update()  # one more (stock) iteration from where the run ended
        out[train] = evals, booster.eval_train(), booster.num_trees()
    for ours, stock in zip(out[train_engine], out[lgb.train], strict=True):
        if isinstance(ours, int):
            assert ours == stock == 6
            continue
        flat = [r for group in (ours if isinstance(ours, tuple) else (ours,)) for r in group]
        ref = [r for group in (stock if isinstance(stock, tuple) else (stock,)) for r in group]
        assert [r[:2] for r in flat] == [r[:2] for r in ref]
        np.testing.assert_allclose([r[2] for r in flat], [r[2] for r in ref], rtol=1e-12)
    # a Dataset without raw data cannot be copied: refused before training
    with pytest.raises(ValueError, match="keep_training_booster=True: train_set has no raw data"):
        train_engine(params, lgb.Dataset(X, y).construct(), 2, keep_training_booster=True)


def test_estimators_continue_training_from_an_init_model():
    rng, X = _data(2000)
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(int)
    ours = sl.SmartClassifier(n_estimators=5, verbose=-1, sampler="full").fit(
        X, y, init_model=sl.SmartClassifier(n_estimators=5, verbose=-1, sampler="full").fit(X, y))
    stock = lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(
        X, y, init_model=lgb.LGBMClassifier(n_estimators=5, verbose=-1).fit(X, y))
    _same(ours.booster_, stock.booster_)
