"""``sampler="auto"``: the rule table, stock LightGBM's model on small data, the sampled
method on large data, and the choice logged, recorded and written into the model."""

from __future__ import annotations

import logging
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._lightgbm import model_note, without_model_note
from smart_lgbm.samplers import auto as auto_module
from smart_lgbm.samplers.auto import RULES, SMALL_ROWS, DataFacts, choose

ROOT = Path(__file__).resolve().parents[1]
BASE = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbosity": -1, "seed": 3}
LARGE = 2 * SMALL_ROWS


def _binary(n: int = 3000, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.5, size=n) > 0.5).astype(float)
    return X, y


# --------------------------------------------------------------------------- the rule table

@pytest.mark.parametrize(("facts", "rule", "method"), [
    (DataFacts("binary", LARGE, 10, stock_only="bagging"), "parameters only stock LightGBM trains", "stock"),
    (DataFacts("binary", LARGE, 10, in_memory=False), "features not in memory", "stock"),
    (DataFacts("binary", SMALL_ROWS - 1, 10), "small data", "stock"),
    (DataFacts("lambdarank", 32_561, 123, sparse=True, density=0.11), "small data", "stock"),
    (DataFacts("binary", None, 10, in_memory=True), "unknown size", "stock"),
    (DataFacts("binary", LARGE, 10, refit_refused="path_smooth"), "leaf refit refused", "stock"),
    (DataFacts("binary", LARGE, 10, categorical=2, refit_refused="path_smooth"), "leaf refit refused", "stock"),
    (DataFacts("binary", LARGE, 10, categorical=2), "categorical columns, binary", "first_order_refit"),
    (DataFacts("multiclass", LARGE, 10, categorical=1), "categorical columns", "stock"),
    (DataFacts("lambdarank", LARGE, 10, categorical=1), "categorical columns", "stock"),
    (DataFacts("lambdarank", LARGE, 700, sparse=True, density=0.16), "large LambdaMART, sparse features",
     "first_order_refit"),
    (DataFacts("lambdarank", LARGE, 136), "large LambdaMART", "mvs_auto"),
    (DataFacts("binary", SMALL_ROWS, 28), "large binary", "first_order_auto_refit"),
    (DataFacts("multiclass", LARGE, 10), "large multiclass", "first_order_auto_refit"),
    (DataFacts("regression", LARGE, 10), "large regression", "stock"),
    (DataFacts("loss", LARGE, 10), "large data, another loss", "first_order_auto_refit"),
    # stock LightGBM cannot take a Loss objective's or a distributed machine's run: Full() instead
    (DataFacts("loss", 100, 10), "small data", "full"),
    (DataFacts("binary", 100, 10, distributed=True), "small data", "full"),
])
def test_each_rule_row_chooses_its_method(facts, rule, method):
    choice = choose(facts)
    assert (choice.rule.name, choice.method) == (rule, method)
    assert choose(facts) == choice  # a pure function of the facts
    sampler = choice.sampler()
    expected = {"stock": None, "full": sl.Full(), "first_order_refit": sl.FirstOrder(rate=0.1, refit_leaves=True),
                "first_order_auto_refit": sl.FirstOrder(rate="auto", refit_leaves=True),
                "mvs_auto": sl.MVS(rate="auto")}[method]
    assert repr(sampler) == repr(expected)
    assert choice.describe().startswith(f'sampler="auto" chose {choice.label}: {rule} (')


def test_every_rule_cites_committed_files_and_the_last_row_catches_all():
    for rule in RULES:
        assert rule.evidence, rule.name
        for path in rule.evidence:
            assert (ROOT / path).is_file(), (rule.name, path)
    assert RULES[-1].applies(DataFacts("other", 1, 1))
    with pytest.raises(TypeError, match="facts must be a DataFacts"):
        choose({"rows": 10})  # type: ignore[arg-type]


def test_auto_is_the_default_and_has_three_spellings():
    assert isinstance(sl.make_sampler(None), sl.Auto)
    assert isinstance(sl.make_sampler("auto"), sl.Auto)
    with pytest.raises(TypeError, match="resolved by smart_lgbm.train"):
        sl.Auto().sample(None, np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='SmartObjective cannot take sampler="auto"'):
        sl.SmartObjective("binary", "auto")


# --------------------------------------------------------------------------- small data: stock LightGBM

@pytest.mark.parametrize("sampler", [None, "auto", sl.Auto()])
def test_small_data_trains_stock_lightgbms_model_byte_for_byte(sampler, caplog):
    X, y = _binary()
    Xv, yv = _binary(1000, seed=1)
    with caplog.at_level(logging.INFO, logger="smart_lgbm"):
        ours = sl.train(BASE, lgb.Dataset(X, y), 20, sampler=sampler, valid_sets=[lgb.Dataset(Xv, yv)])
    stock = lgb.train(BASE, lgb.Dataset(X, y), 20, valid_sets=[lgb.Dataset(Xv, yv)])
    text = ours.model_to_string()
    assert without_model_note(text) == stock.model_to_string()
    np.testing.assert_array_equal(ours.predict(Xv, raw_score=True), stock.predict(Xv, raw_score=True))
    note = model_note(text)
    assert note is not None and note.startswith('sampler="auto" chose stock LightGBM (lightgbm.train); small data')
    # the saved model says which sampler ran, and stock LightGBM loads and keeps it
    loaded = lgb.Booster(model_str=text)
    assert model_note(loaded.model_to_string()) == note
    np.testing.assert_array_equal(loaded.predict(Xv), stock.predict(Xv))
    logged = [r.getMessage() for r in caplog.records if r.name == "smart_lgbm"]
    assert len(logged) == 1 and logged[0].startswith('sampler="auto" chose stock LightGBM')
    assert "docs/results/a9a/a9a/table.md" in logged[0]


def test_stock_branch_is_recorded_like_the_engine_and_keeps_early_stopping():
    X, y = _binary()
    Xv, yv = _binary(1000, seed=1)
    record: dict = {}
    params = {**BASE, "learning_rate": 0.5, "num_leaves": 63, "min_data_in_leaf": 2}
    cbs = [lgb.early_stopping(3, verbose=False)]
    ours = sl.train(params, lgb.Dataset(X, y), 200, valid_sets=[lgb.Dataset(Xv, yv)],
                    callbacks=[sl.record_sampling(record), *cbs])
    stock = lgb.train(params, lgb.Dataset(X, y), 200, valid_sets=[lgb.Dataset(Xv, yv)], callbacks=cbs)
    assert ours.best_iteration == stock.best_iteration < 200
    assert without_model_note(ours.model_to_string()) == stock.model_to_string()
    n = len(record["num_sampled"])
    assert n == stock.best_iteration + 3  # every iteration run, up to early stopping's patience
    assert record["num_sampled"] == [len(y)] * n and record["sampling_rate"] == [1.0] * n
    assert record["sampler"] == ["stock LightGBM (lightgbm.train)"] * n
    assert all(s > 0 for s in record["seconds"]) and set(record["num_trees"]) == {1}
    assert all("small data" in r for r in record["sampler_reason"])
    assert not hasattr(ours, "last_record")


def test_parameters_only_stock_trains_go_to_stock_with_auto_and_are_refused_otherwise():
    X, y = _binary()
    params = {**BASE, "bagging_freq": 1, "bagging_fraction": 0.5}
    ours = sl.train(params, lgb.Dataset(X, y), 10)
    stock = lgb.train(params, lgb.Dataset(X, y), 10)
    assert without_model_note(ours.model_to_string()) == stock.model_to_string()
    assert "parameters only stock LightGBM trains" in model_note(ours.model_to_string())
    with pytest.raises(ValueError, match="bagging_fraction=0.5 with bagging_freq=1"):
        sl.train(params, lgb.Dataset(X, y), 10, sampler=sl.Full())


def test_bad_values_are_still_refused_early_on_the_stock_branch():
    X, y = _binary()
    with pytest.raises(ValueError, match="num_boost_round"):
        sl.train(BASE, lgb.Dataset(X, y), 0)
    with pytest.raises(ValueError, match="machines / num_machines"):
        sl.train({**BASE, "num_machines": 2}, lgb.Dataset(X, y), 3)


def test_estimators_default_to_stock_on_small_data():
    X, y = _binary()
    ours = sl.SmartClassifier(n_estimators=15, verbose=-1).fit(X, y)
    stock = lgb.LGBMClassifier(n_estimators=15, verbose=-1).fit(X, y)
    np.testing.assert_array_equal(ours.predict_proba(X), stock.predict_proba(X))
    assert "stock LightGBM" in model_note(ours.booster_.model_to_string())


# --------------------------------------------------------------------------- large data: the sampled method

def test_large_data_trains_the_chosen_sampler(monkeypatch, caplog):
    monkeypatch.setattr(auto_module, "SMALL_ROWS", 1000)  # (a large data set's choice on test-sized data)
    X, y = _binary()
    with caplog.at_level(logging.INFO, logger="smart_lgbm"):
        chosen = sl.train(BASE, lgb.Dataset(X, y), 8)
    explicit = sl.train(BASE, lgb.Dataset(X, y), 8, sampler=sl.FirstOrder(rate="auto", refit_leaves=True))
    text = chosen.model_to_string()
    assert without_model_note(text) == explicit.model_to_string()
    assert model_note(explicit.model_to_string()) is None  # an explicit sampler's model is as before
    assert model_note(text).startswith('sampler="auto" chose FirstOrder(rate="auto", refit_leaves=True); large binary')
    assert any("large binary" in r.getMessage() for r in caplog.records if r.name == "smart_lgbm")
    record: dict = {}
    sl.train(BASE, lgb.Dataset(X, y), 3, callbacks=[sl.record_sampling(record)])
    assert record["sampler"] == ['FirstOrder(rate="auto", refit_leaves=True)'] * 3
    assert max(record["sampling_rate"]) < 1.0


# --------------------------------------------------------------------------- configs and the command line

def test_a_config_method_auto_trains_stock_lightgbms_run_on_small_data(tmp_path, compare_config):

    from smart_lgbm.compare.data import load_data
    from smart_lgbm.compare.methods import run_method

    exp = compare_config("""
        rounds = 6
        [params]
        num_leaves = 7
        num_threads = 1
        [methods.stock_full]
        [methods.auto]
        [[experiments]]
        name = "h"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample" }
        params = { objective = "binary" }
    """).experiments[0]
    assert exp.method("auto").kind == "auto"
    data = load_data(exp.data)
    auto = run_method(exp.method("auto"), exp, data, seed=0)
    stock = run_method(exp.method("stock_full"), exp, data, seed=0)
    assert auto.values == stock.values and auto.sampling_rate == [1.0] * 6
