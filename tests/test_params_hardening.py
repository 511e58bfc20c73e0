"""Parameters that used to be dropped or mangled on their way to LightGBM (issue 19, class 1),
and values that passed the checks and produced garbage (class 5, parameter side)."""

from __future__ import annotations

import textwrap
import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm import _lightgbm
from smart_lgbm._lightgbm import split_model_string
from smart_lgbm.compare.config import ConfigError, ConfigTypeError, load_config

BASE = {"objective": "binary", "verbosity": -1, "num_leaves": 7, "num_threads": 1}


def _data(n=2000, f=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    return X, (X[:, 0] + X[:, 2] + rng.normal(size=n) > 0).astype(float)


def _trees(booster):
    return split_model_string(booster.model_to_string())[1]


@pytest.mark.parametrize("constraints", [[[0, 1], [2, 3]], [[0], [1, 2, 3, 4, 5]], [[0, 2], [1, 3, 4], [5]]])
def test_interaction_constraints_train_and_load_like_stock(constraints):
    X, y = _data()
    params = {**BASE, "interaction_constraints": constraints}
    ours = sl.train(params, lgb.Dataset(X, y), 5, sampler=sl.Full())
    stock = lgb.train(params, lgb.Dataset(X, y), 5)
    assert ours.model_to_string() == stock.model_to_string()
    sampled = sl.train(params, lgb.Dataset(X, y), 5, sampler=sl.FirstOrder(rate=0.5))
    reloaded = lgb.Booster(model_str=sampled.model_to_string())
    np.testing.assert_array_equal(reloaded.predict(X), sampled.predict(X))


@pytest.mark.parametrize("params, text", [
    ({"interaction_constraints": [[0, 1], [2, 3]]}, "interaction_constraints=[0,1],[2,3]"),
    ({"eval_at": np.array([1, 3]), "flag": np.bool_(True)}, "eval_at=1,3 flag=true"),
    ({"metric": ("auc", "l2"), "label_gain": "0,1,3"}, "metric=auc,l2 label_gain=0,1,3"),
])
def test_parameter_strings_are_written_as_lightgbm_train_writes_them(params, text):
    assert _lightgbm.params_to_str(params) == text


@pytest.mark.parametrize("value", ["auc, l2", "a b", "x\ty"])
def test_parameter_text_with_whitespace_is_refused_not_split(value):
    with pytest.raises(ValueError, match="metric=.*whitespace"):
        _lightgbm.params_to_str({"metric": value})


@pytest.mark.parametrize("key, extra", [
    ("feature_fraction_seed", {"feature_fraction": 0.5}),
    ("extra_seed", {"extra_trees": True}),
    ("feature_fraction_seed", {"feature_fraction_bynode": 0.5}),
])
@pytest.mark.parametrize("sampler", [sl.Full(), sl.FirstOrder(rate=0.5)], ids=["full", "first_order"])
def test_explicit_tree_seeds_take_effect(key, extra, sampler):
    X, y = _data()
    params = {**BASE, **extra}
    run = {s: sl.train({**params, key: s}, lgb.Dataset(X, y), 5, sampler=sampler) for s in (1, 2)}
    assert _trees(run[1]) != _trees(run[2])  # the seed is used
    again = sl.train({**params, key: 1}, lgb.Dataset(X, y), 5, sampler=sampler)
    assert again.model_to_string() == run[1].model_to_string()  # and deterministic
    if isinstance(sampler, sl.Full):  # (a sampler's draws follow `seed`)
        # as in LightGBM, an explicit seed wins over the ones derived from `seed`
        other_seed = sl.train({**params, key: 1, "seed": 99}, lgb.Dataset(X, y), 5, sampler=sampler)
        assert _trees(other_seed) == _trees(run[1])
    assert f"[{key}: 1]" in run[1].model_to_string()


def test_seeds_must_be_integers():
    X, y = _data(300)
    with pytest.raises(TypeError, match="feature_fraction_seed must be an integer"):
        sl.train({**BASE, "feature_fraction_seed": 1.5}, lgb.Dataset(X, y), 2)


@pytest.mark.skipif(not hasattr(lgb.Dataset(np.zeros((1, 1))), "position"), reason="LightGBM < 4.1 has no position")
@pytest.mark.parametrize("construct", [False, True])
@pytest.mark.parametrize("subset", [False, True])
def test_ranking_positions_are_refused_not_ignored(construct, subset):
    X, _ = _data(400)
    y = np.arange(400) % 3
    ds = lgb.Dataset(X, y, group=[20] * 20, position=np.tile(np.arange(20), 20), free_raw_data=False)
    if construct:
        ds.construct()
    if subset:
        ds = ds.subset(list(range(200)))
    with pytest.raises(ValueError, match="position"):
        sl.train({"objective": "lambdarank", "verbosity": -1}, ds, 2, sampler=sl.Full())


@pytest.mark.parametrize("sampler", [sl.FirstOrder(rate=0.5), sl.Uniform(0.5), sl.MVS(rate=0.5)])
def test_lazy_cegb_penalty_refused_with_a_row_sampler(sampler):
    X, y = _data(500)
    params = {**BASE, "cegb_penalty_feature_lazy": [1.0] * 6}
    with pytest.raises(ValueError, match="cegb_penalty_feature_lazy"):
        sl.train(params, lgb.Dataset(X, y), 2, sampler=sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sl.train(params, lgb.Dataset(X, y), 2, sampler=sl.Full())  # every row every time: as stock


CONFIG = """
output = "out"
rounds = 5
{top}
[params]
num_leaves = 7
{param}
[methods.stock_full]
[methods.fo]
kind = "first_order"
rate = 0.2

[[experiments]]
name = "a9a"
metric = "binary_logloss"
data = {{ source = "bundled", name = "a9a" }}
params = {{ objective = "binary" }}
"""


def _config(tmp_path, top="", param=""):
    path = tmp_path / "c.toml"
    path.write_text(textwrap.dedent(CONFIG.format(top=top, param=param)))
    return load_config(path)


@pytest.mark.parametrize("param, value", [
    ("interaction_constraints = [[0, 1], [2, 3]]", [[0, 1], [2, 3]]),
    ("interaction_constraints = [[0], [1, 2]]", [[0], [1, 2]]),
    ("monotone_constraints = [1, 0, -1]", [1, 0, -1]),
])
def test_config_takes_lists_of_lists_as_lightgbm_train_does(tmp_path, param, value):
    cfg = _config(tmp_path, param=param)
    assert cfg.experiments[0].params[param.split(" ")[0]] == value


@pytest.mark.parametrize("param, error", [
    ("interaction_constraints = [[[0]]]", ConfigTypeError),
    ("feature_contri = [1.0, nan]", ConfigError),
    ("interaction_constraints = [[0, inf]]", ConfigError),
    ("feature_contri = [{a = 1}]", ConfigTypeError),
])
def test_config_refuses_values_lightgbm_cannot_take(tmp_path, param, error):
    with pytest.raises(error, match=param.split(" ")[0]):
        _config(tmp_path, param=param)


@pytest.mark.parametrize("target", ["nan", "inf", "-inf"])
def test_config_target_must_be_finite(tmp_path, target):
    with pytest.raises(ConfigError, match="target.*finite"):
        _config(tmp_path, top=f"target = {target}")
