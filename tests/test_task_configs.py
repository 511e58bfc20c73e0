"""Multiclass and regression comparisons (issue #37): their data sources and shipped configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smart_lgbm.compare.config import ConfigError, load_config
from smart_lgbm.compare.data import load_data
from smart_lgbm.compare.store import setup_of
from smart_lgbm.datasets import load_digits_split, make_dense_multiclass, make_dense_regression

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_dense_multiclass_is_seeded_and_draws_every_class_with_overlap():
    X, y = make_dense_multiclass(6000, 20, 4, seed=3)
    again = make_dense_multiclass(6000, 20, 4, seed=3)
    other = make_dense_multiclass(6000, 20, 4, seed=4)
    assert X.dtype == np.float32 and X.shape == (6000, 20) and y.dtype == np.float64
    assert X.tobytes() == again[0].tobytes() and y.tobytes() == again[1].tobytes()
    assert not np.array_equal(y, other[1])
    counts = np.bincount(y.astype(int), minlength=4)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0} and counts.min() > 300
    # learnable but noisy: a tree model beats the majority class, far from perfectly
    import lightgbm as lgb

    model = lgb.train({"objective": "multiclass", "num_class": 4, "verbosity": -1}, lgb.Dataset(X[:4000], y[:4000]),
                      50)
    accuracy = np.mean(model.predict(X[4000:]).argmax(axis=1) == y[4000:])
    assert counts.max() / 6000 + 0.1 < accuracy < 0.95
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        make_dense_multiclass(100, 20, 1)


def test_dense_regression_is_seeded_with_unit_noise():
    X, y = make_dense_regression(20000, 20, seed=1)
    X2, y2 = make_dense_regression(20000, 20, seed=1)
    assert X.tobytes() == X2.tobytes() and y.tobytes() == y2.tobytes()
    assert X.dtype == np.float32 and y.dtype == np.float64
    # the signal's variance is several times the unit noise's
    assert 3.0 < np.var(y) < 20.0
    with pytest.raises(ValueError, match="n_features must be an integer >= 16"):
        make_dense_regression(100, 8)


def test_digits_are_scikit_learn_s_bundled_digits_split_the_same_way_every_time():
    (X, y), (Xv, yv) = load_digits_split()
    (X2, _), (Xv2, yv2) = load_digits_split()
    assert X.shape == (1258, 64) and Xv.shape == (539, 64)
    assert np.array_equal(Xv, Xv2) and np.array_equal(yv, yv2) and np.array_equal(X, X2)
    assert set(np.unique(y)) == set(np.unique(yv)) == set(range(10))


def _config(tmp_path, data: str, params: str = '{ objective = "multiclass", num_class = 3 }',
            metric: str = "multi_logloss"):
    path = tmp_path / "c.toml"
    path.write_text(f'[methods.stock_full]\n[[experiments]]\nname = "e"\nmetric = "{metric}"\n'
                    f"data = {data}\nparams = {params}\n")
    return load_config(path).experiments[0]


def test_synthetic_sources_for_multiclass_and_regression(tmp_path):
    exp = _config(tmp_path, '{ source = "synthetic", generator = "dense_multiclass", n_rows = 500, n_classes = 3 }')
    data = load_data(exp.data)
    assert data.train.num_rows == 400 and data.valid.num_rows == 100 and data.train.X.shape[1] == 40
    assert set(np.unique(data.train.y)) == {0.0, 1.0, 2.0}
    assert "synthetic dense_multiclass (n_rows=500, n_classes=3, seed=0)" in data.description
    assert setup_of(exp)["data"]["n_classes"] == 3
    reg = _config(tmp_path, '{ source = "synthetic", generator = "dense_regression", n_rows = 500 }',
                  '{ objective = "regression" }', "l2")
    assert load_data(reg.data).description.startswith("synthetic dense_regression (n_rows=500, seed=0)")
    # records written before n_classes existed hold no such key: still the same setup
    assert "n_classes" not in setup_of(reg)["data"]
    with pytest.raises(ConfigError, match="key 'n_classes' is for generator 'dense_multiclass' only"):
        _config(tmp_path, '{ source = "synthetic", generator = "dense_regression", n_rows = 500, n_classes = 3 }',
                '{ objective = "regression" }', "l2")
    # labels above num_class are refused before training (the data checks)
    from smart_lgbm.compare.checks import check_data

    wide = _config(tmp_path, '{ source = "synthetic", generator = "dense_multiclass", n_rows = 500, n_classes = 4 }')
    with pytest.raises(ConfigError, match="label must be an integer in \\[0, num_class=3\\)"):
        check_data(wide, wide.methods, load_data(wide.data))
    digits = _config(tmp_path, '{ source = "bundled", name = "digits" }', '{ objective = "multiclass", num_class = 10 }')
    assert load_data(digits.data).train.num_rows == 1258


@pytest.mark.parametrize("name, metric, objective", [
    ("multiclass-like.toml", "multi_logloss", "multiclass"),
    ("regression-like.toml", "l2", "regression"),
    ("digits.toml", "multi_logloss", "multiclass"),
])
def test_task_configs_hold_every_method_family_and_a_tight_target(name, metric, objective):
    (exp,) = load_config(CONFIGS / name).experiments
    assert exp.metric == metric and exp.params["objective"] == objective
    assert exp.target_method == "stock_full" and exp.target_at == "best"
    assert exp.tolerance <= 0.0015
    kinds = {m.kind for m in exp.methods}
    assert {"stock_full", "stock_bagging", "stock_goss", "stock_quantized", "xgboost_hist", "catboost",
            "first_order", "mvs", "uniform"} <= kinds
    labels = {m.label: m for m in exp.methods}
    # the peers with and without their subsampling
    assert labels["xgboost_hist_subsample"].options["subsample"] < 1.0
    assert labels["catboost_bernoulli"].options["bootstrap_type"] == "Bernoulli"
    # the recommended method: the adaptive rate with leaf values from every row
    rec = labels["first_order_auto_refit"]
    assert rec.kind == "first_order" and rec.options["rate"] == "auto" and rec.options["refit_leaves"] is True
    assert labels["mvs_auto_refit"].options["refit_leaves"] is True
    if exp.data.source == "synthetic":  # labelled synthetic in every table (the Data line)
        assert exp.data.describe().startswith("synthetic ")
        assert "SYNTHETIC" in (CONFIGS / name).read_text()
        assert exp.time_budget == 1.0
        assert any(m.lgb_params.get("use_quantized_grad") for m in exp.methods if not m.is_stock)


def test_binary_configs_carry_the_peers_too():
    for name in ("a9a.toml", "higgs-like.toml"):
        (exp,) = load_config(CONFIGS / name).experiments
        assert {"stock_quantized", "xgboost_hist", "catboost"} <= {m.kind for m in exp.methods}
