"""LightGBM's quantised gradients: the stock_quantized comparison method, and the engine with them.

LightGBM's tree learner quantises the gradients it is handed (``use_quantized_grad``), also
the custom ones the engine gives it for its sample: with deterministic rounding the engine's
``Full()`` grows stock LightGBM's quantised trees exactly.
"""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm.compare.config import ConfigError, load_config
from smart_lgbm.compare.data import load_data
from smart_lgbm.compare.methods import method_seeds, run_method, run_params


def _trees(model: str) -> str:
    return model[model.index("Tree=0"):model.index("end of trees")]


def _data(task: str):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    if task == "binary":
        return X, (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=3000) > 0).astype(float), {}
    if task == "multiclass":
        return X, np.digitize(X[:, 0] + 0.5 * rng.normal(size=3000), [-1, 0, 1]).astype(float), {"num_class": 4}
    return X, 3 * X[:, 0] + np.sin(X[:, 1]) + rng.normal(size=3000), {}


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_engine_full_grows_stock_lightgbm_s_quantised_trees(task):
    X, y, extra = _data(task)
    params = {"objective": task, "verbosity": -1, "num_leaves": 7, "use_quantized_grad": True,
              "stochastic_rounding": False, **extra}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = lgb.train(params, lgb.Dataset(X, y), 6).model_to_string()
        engine = sl.train(params, lgb.Dataset(X, y), 6, sampler=sl.Full()).model_to_string()
        plain = lgb.train({**params, "use_quantized_grad": False}, lgb.Dataset(X, y), 6).model_to_string()
    assert _trees(engine) == _trees(stock)
    assert _trees(stock) != _trees(plain)  # the quantisation changes the trees


def test_quantised_gradients_on_the_engine_s_sample_are_reproducible():
    X, y, _ = _data("binary")
    params = {"objective": "binary", "verbosity": -1, "num_leaves": 7, "seed": 3}
    runs = [sl.train({**params, "use_quantized_grad": q}, lgb.Dataset(X, y), 8,
                     sampler=sl.FirstOrder(rate=0.3)).model_to_string() for q in (True, True, False)]
    assert _trees(runs[0]) == _trees(runs[1]) and _trees(runs[0]) != _trees(runs[2])


QUANTIZED = """
output = "out"
rounds = 5
seeds = [0, 1]
progress_seconds = -1
[params]
num_leaves = 7
num_threads = 1
[methods.stock_full]
[methods.stock_quantized]
[methods.q8]
kind = "stock_quantized"
num_grad_quant_bins = 8
stochastic_rounding = false
quant_train_renew_leaf = true
[methods.fo_q]
kind = "first_order"
rate = 0.3
params = { use_quantized_grad = true }
[[experiments]]
name = "a9a"
metric = "binary_logloss"
data = { source = "bundled", name = "a9a", max_rows = 2000 }
params = { objective = "binary" }
"""


def test_stock_quantized_is_lightgbm_with_use_quantized_grad(tmp_path):
    path = tmp_path / "q.toml"
    path.write_text(QUANTIZED)
    exp = load_config(path).experiments[0]
    methods = {m.label: m for m in exp.methods}
    assert methods["stock_quantized"].options == {"num_grad_quant_bins": 4, "quant_train_renew_leaf": False,
                                                  "stochastic_rounding": True}
    params = run_params(methods["q8"], exp, 1)
    assert (params["use_quantized_grad"], params["num_grad_quant_bins"], params["stochastic_rounding"],
            params["quant_train_renew_leaf"]) == (True, 8, False, True)
    # quantised gradients' stochastic rounding draws: every seed runs, the engine's too
    assert method_seeds(methods["stock_quantized"], exp) == (0, 1) and method_seeds(methods["fo_q"], exp) == (0, 1)
    data = load_data(exp.data)
    full, quantized, engine = (run_method(methods[label], exp, data, 0) for label in ("stock_full", "q8", "fo_q"))
    assert quantized.num_iterations == engine.num_iterations == 5
    assert quantized.values != full.values and quantized.sampling_rate == [1.0] * 5
    for bad, message in (("num_grad_quant_bins = 8", "num_grad_quant_bins = 1"),
                         ("stochastic_rounding = false", "stochastic_rounding = 0")):
        path.write_text(QUANTIZED.replace(bad, message))
        with pytest.raises(ConfigError, match=rf"\[methods.q8\] key '{message.split()[0]}' must be"):
            load_config(path)
