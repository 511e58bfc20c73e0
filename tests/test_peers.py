"""XGBoost and CatBoost as comparison methods (issue #37): config, mapping, records, refusals.

The config and mapping tests need neither library; the training tests are skipped when the
``peers`` extra is missing (scripts/venv.sh installs it, so they run in CI).
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from smart_lgbm.compare.config import ConfigError, load_config
from smart_lgbm.compare.data import load_data
from smart_lgbm.compare.methods import RunRecord, method_seeds, run_method
from smart_lgbm.compare.peers import library_params
from smart_lgbm._engine.params import canonicalize

HAVE_XGBOOST = importlib.util.find_spec("xgboost") is not None
HAVE_CATBOOST = importlib.util.find_spec("catboost") is not None
needs_xgboost = pytest.mark.skipif(not HAVE_XGBOOST, reason="xgboost (the 'peers' extra) is not installed")
needs_catboost = pytest.mark.skipif(not HAVE_CATBOOST, reason="catboost (the 'peers' extra) is not installed")

PEERS = """
output = "out"
rounds = 6
seeds = [0, 1]
progress_seconds = -1

[params]
learning_rate = 0.2
num_leaves = 7
num_threads = 1
min_data_in_leaf = 20

[methods.stock_full]
[methods.xgboost_hist]
[methods.xgb_half]
kind = "xgboost_hist"
subsample = 0.5
[methods.catboost]
[methods.cb_half]
kind = "catboost"
bootstrap_type = "Bernoulli"
subsample = 0.5
{extra_methods}
[[experiments]]
name = "a9a"
metric = "binary_logloss"
data = {{ source = "bundled", name = "a9a", max_rows = 1500 }}
params = {{ objective = "binary", sigmoid = 2.0 }}

[[experiments]]
name = "classes"
metric = "multi_logloss"
data = {{ source = "synthetic", generator = "dense_multiclass", n_rows = 2500, n_features = 16, n_classes = 3 }}
params = {{ objective = "multiclass", num_class = 3 }}

[[experiments]]
name = "l2"
metric = "l2"
data = {{ source = "synthetic", generator = "dense_regression", n_rows = 2500, n_features = 16 }}
params = {{ objective = "regression" }}

[[experiments]]
name = "rank"
metric = "ndcg@5"
rounds = 4
data = {{ source = "bundled", name = "rank_sample", max_rows = 800 }}
params = {{ objective = "lambdarank" }}
"""


def _config(tmp_path, extra_methods: str = "", text: str | None = None):
    path = tmp_path / "peers.toml"
    path.write_text(text if text is not None else PEERS.format(extra_methods=extra_methods))
    return load_config(path)


# --------------------------------------------------------------------------- config (no library needed)


def test_peer_methods_parse_with_their_defaults_and_their_library_s_params(tmp_path):
    cfg = _config(tmp_path, '[methods.xgb_own]\nkind = "xgboost_hist"\nparams = { colsample_bytree = 0.8, '
                            'reg_lambda = 2.0 }\n')
    exp = cfg.experiment("a9a")
    methods = {m.label: m for m in exp.methods}
    assert methods["xgboost_hist"].is_peer and not methods["xgboost_hist"].is_stock
    assert methods["xgboost_hist"].options == {"subsample": 1.0, "sampling_method": "uniform"}
    assert methods["cb_half"].options == {"bootstrap_type": "Bernoulli", "subsample": 0.5, "ranking_loss": "LambdaMart"}
    # a peer's params are its library's, aliases resolved; they are no LightGBM parameters
    assert methods["xgb_own"].params == {"colsample_bytree": 0.8, "lambda": 2.0}
    assert methods["xgb_own"].lgb_params == {}
    own = library_params("xgboost_hist", canonicalize(exp.params), methods["xgb_own"].options,
                         methods["xgb_own"].params)
    assert own["colsample_bytree"] == 0.8 and own["lambda"] == 2.0


@pytest.mark.parametrize("method, message", [
    ('kind = "catboost"\nsubsample = 0.5', "key 'subsample' = 0.5 needs key 'bootstrap_type'"),
    ('kind = "catboost"\nbootstrap_type = "MVS"', "key 'bootstrap_type' = \"MVS\" needs key 'subsample' < 1"),
    ('kind = "catboost"\nbootstrap_type = "Poisson"\nsubsample = 0.5', "key 'bootstrap_type' must be \"No\", "
                                                                      "\"Bernoulli\" or \"MVS\""),
    ('kind = "xgboost_hist"\nsubsample = 1.5', r"key 'subsample' must be a number in \(0, 1\], got 1.5"),
    ('kind = "xgboost_hist"\nsampling_method = "gradient_based"', "key 'sampling_method' = \"gradient_based\" "
                                                                  "needs key 'subsample' < 1"),
    ('kind = "xgboost_hist"\nrate = 0.1', "unknown key 'rate'; accepted: kind, params, rounds, sampling_method"),
    ('kind = "xgboost_hist"\nparams = { objective = "reg:squarederror" }',
     "params key 'objective' cannot be set here: the experiment's objective sets it"),
    ('kind = "xgboost_hist"\nparams = { n_jobs = 4 }', r"params key 'n_jobs' \(XGBoost's alias of nthread\) cannot be "
                                                     "set here: the experiment's num_threads sets it"),
    ('kind = "xgboost_hist"\nparams = { subsample = 0.5 }', "params key 'subsample' cannot be set here: set "
                                                             "the method's key of that name instead"),
    ('kind = "catboost"\nparams = { n_estimators = 10 }', r"params key 'n_estimators' \(CatBoost's alias of "
                                                         r"iterations\) cannot be set here: set 'rounds' instead"),
    ('kind = "catboost"\nparams = { random_seed = 3 }', "params key 'random_seed' cannot be set here: set 'seeds' "
                                                        "instead"),
    ('kind = "catboost"\nparams = { depth = 4, max_depth = 5 }', r"params key 'max_depth' repeats 'depth' "
                                                                 r"\(CatBoost's alias of it\)"),
    ('kind = "catboost"\nparams = { depth = { a = 1 } }', "params key 'depth' must be a string, number"),
])
def test_bad_peer_keys_are_refused_at_load_time_naming_the_key(tmp_path, method, message):
    with pytest.raises(ConfigError, match=r"\[methods.bad\] " + message):
        _config(tmp_path, f"[methods.bad]\n{method}\n")


def test_lightgbm_parameters_are_mapped_onto_each_library():
    params = canonicalize({"objective": "regression", "learning_rate": 0.05, "num_leaves": 63, "max_bin": 127,
                           "num_threads": 2, "min_data_in_leaf": 100, "lambda_l2": 1.5})
    xgb = library_params("xgboost_hist", params, {"subsample": 0.5, "sampling_method": "uniform"}, {}, seed=7)
    assert xgb["tree_method"] == "hist" and xgb["grow_policy"] == "lossguide"
    assert (xgb["max_leaves"], xgb["max_depth"], xgb["eta"], xgb["max_bin"]) == (63, 0, 0.05, 127)
    assert (xgb["nthread"], xgb["seed"], xgb["subsample"], xgb["lambda"]) == (2, 7, 0.5, 1.5)
    # under L2 a hessian sum is a row count: min_data_in_leaf becomes min_child_weight
    assert xgb["objective"] == "reg:squarederror" and xgb["min_child_weight"] == 100.0
    cb = library_params("catboost", params, {"bootstrap_type": "No", "subsample": 1.0, "ranking_loss": "LambdaMart"},
                        {}, seed=7)
    assert (cb["grow_policy"], cb["depth"], cb["border_count"], cb["boosting_type"]) == ("SymmetricTree", 6, 126, "Plain")
    assert (cb["loss_function"], cb["boost_from_average"], cb["bootstrap_type"]) == ("RMSE", True, "No")
    assert (cb["thread_count"], cb["random_seed"], cb["l2_leaf_reg"]) == (2, 7, 1.5) and "subsample" not in cb
    # a log-loss's hessians are no row counts: XGBoost keeps its own min_child_weight
    binary = library_params("xgboost_hist", canonicalize({"objective": "binary", "min_data_in_leaf": 100}),
                            {"subsample": 1.0, "sampling_method": "uniform"}, {})
    assert binary["objective"] == "binary:logistic" and "min_child_weight" not in binary
    multi = canonicalize({"objective": "multiclass", "num_class": 4})
    assert library_params("xgboost_hist", multi, {"subsample": 1.0, "sampling_method": "uniform"}, {})[
        "num_class"] == 4
    assert library_params("catboost", multi, {"bootstrap_type": "No", "subsample": 1.0, "ranking_loss": "YetiRank"},
                          {})["classes_count"] == 4
    rank = canonicalize({"objective": "lambdarank", "lambdarank_truncation_level": 12})
    assert library_params("xgboost_hist", rank, {"subsample": 1.0, "sampling_method": "uniform"}, {})[
        "lambdarank_num_pair_per_sample"] == 12
    assert library_params("catboost", rank, {"bootstrap_type": "No", "subsample": 1.0, "ranking_loss": "LambdaMart"},
                          {})["loss_function"] == "LambdaMart:metric=NDCG;top=12;type=Exp"


@pytest.mark.parametrize("params, message", [
    ('{ objective = "binary", extra_trees = true }', "LightGBM parameter\\(s\\) extra_trees have no XGBoost "
                                                     "counterpart"),
    ('{ objective = "lambdarank", label_gain = [0, 1, 2, 3, 4] }', "label_gain other than LightGBM's default"),
    ('{ objective = "quantile" }', "a peer method needs an objective the engine has"),
    ('{ objective = "huber" }', "a peer method cannot follow objective 'huber'"),
    ('{ objective = "cross_entropy" }', "a peer method cannot follow objective 'cross_entropy'"),
])
def test_what_a_peer_cannot_follow_is_refused_at_load_time(tmp_path, params, message):
    text = ('[methods.stock_full]\n[methods.xgboost_hist]\n[[experiments]]\nname = "e"\nmetric = "l2"\n'
            f'data = {{ source = "bundled", name = "higgs_sample" }}\nparams = {params}\n')
    if "lambdarank" in params:
        text = text.replace('metric = "l2"', 'metric = "ndcg@5"').replace("higgs_sample", "rank_sample")
    with pytest.raises(ConfigError, match=r"\[experiments.e\] method 'xgboost_hist': " + message):
        _config(tmp_path, text=text)


def test_missing_peers_extra_is_refused_before_anything_trains(tmp_path, monkeypatch, capsys):
    from smart_lgbm.cli import main
    from smart_lgbm.compare import extras

    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("xgboost", "catboost") else real(name, *a))
    path = tmp_path / "peers.toml"
    path.write_text(PEERS.format(extra_methods=""))
    assert main(["compare", str(path), "--experiment", "a9a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smart-lgbm: error: method kind 'xgboost_hist' needs xgboost; method kind 'catboost' "
                          "needs catboost, which is not installed; install the 'peers' extra: pip install "
                          "'smart-lgbm[peers]'"), err
    assert not (tmp_path / "out").exists()
    assert main(["run", str(path), "--method", "catboost", "--experiment", "a9a"]) == 2
    assert "method kind 'catboost' needs catboost" in capsys.readouterr().err
    # LightGBM's methods of the same config need no extra
    assert main(["compare", str(path), "--experiment", "a9a", "--method", "stock_full"]) == 0


def test_the_peers_extra_is_in_pyproject_and_the_scripts_install_it():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(d.split(">=")[0] for d in extras["peers"]) == ["catboost", "xgboost"]
    assert all(">=" in d for d in extras["peers"])
    import re

    # every extra, what scripts/test installs (scripts/run's quick config has no peers)
    venv = (root / "scripts" / "venv.sh").read_text()
    every = re.findall(r'^ALL_EXTRAS="([a-z,]+)"$', venv, flags=re.MULTILINE)
    assert len(every) == 1 and "peers" in every[0].split(","), every
    assert '-e ".[$extras]"' in venv


# --------------------------------------------------------------------------- training (the peers extra)


def _reference_curve(kind, model, valid, metric, rounds):
    """The validation metric after each iteration, from the library's own predictions."""
    X, y = valid.X, np.asarray(valid.y, dtype=np.float32).astype(np.float64)
    if kind == "xgboost_hist":
        import xgboost as xgb

        d = xgb.DMatrix(X)
        preds = [model.predict(d, iteration_range=(0, i + 1), output_margin=metric.startswith("ndcg"))
                 for i in range(rounds)]
    else:
        import catboost as cb

        kind_ = "RawFormulaVal" if metric in ("l2", "ndcg@5") else "Probability"
        dense = X.toarray() if hasattr(X, "toarray") else X
        preds = list(model.staged_predict(cb.Pool(dense), prediction_type=kind_))
    out = []
    for p in preds:
        p = np.asarray(p, dtype=np.float64)
        if metric == "binary_logloss":
            p = np.clip(p[:, 1] if p.ndim == 2 else p, 1e-15, 1 - 1e-15)
            out.append(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
        elif metric == "multi_logloss":
            out.append(-np.mean(np.log(np.clip(p[np.arange(len(y)), y.astype(int)], 1e-15, None))))
        elif metric == "l2":
            out.append(np.mean((p - y) ** 2))
        else:
            from smart_lgbm.metrics.ranking import ndcg_at

            out.append(ndcg_at(p, y, valid.group, [5])[0])
    return out


@needs_xgboost
@needs_catboost
@pytest.mark.parametrize("experiment", ["a9a", "classes", "l2", "rank"])
@pytest.mark.parametrize("label", ["xgboost_hist", "xgb_half", "catboost", "cb_half"])
def test_peer_runs_give_the_lightgbm_methods_records_and_the_library_s_own_curve(tmp_path, experiment, label):
    cfg = _config(tmp_path)
    exp = cfg.experiment(experiment)
    data = load_data(exp.data)
    method = exp.method(label)
    models: list = []
    seen: list = []
    record = run_method(method, exp, data, 1, on_iteration=lambda *a: seen.append(a), on_model=models.append)
    stock = run_method(exp.method("stock_full"), exp, data, 0)
    assert isinstance(record, RunRecord) and record.to_dict().keys() == stock.to_dict().keys()
    rounds = exp.rounds_of(method)
    assert (record.method, record.kind, record.seed, record.metric) == (label, method.kind, 1, exp.metric)
    assert record.higher_is_better == stock.higher_is_better and record.rounds == rounds == record.num_iterations
    assert len(record.values) == len(record.sampling_rate) == len(record.seconds) == rounds
    assert all(s > 0 for s in record.seconds) and record.wall_seconds >= sum(record.seconds)
    assert record.sampling_rate == [0.5 if label.endswith("half") else 1.0] * rounds
    assert [i for i, _, _ in seen] == list(range(1, rounds + 1)) and record.note == ""
    assert len(record.rows()) == rounds and RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    # the curve measured by the project's metrics is the library's own (float32 predictions)
    expected = _reference_curve(method.kind, models[0], data.valid, exp.metric, rounds)
    np.testing.assert_allclose(record.values, expected, rtol=2e-6, atol=1e-7)
    # and it learns: the last iteration beats the first
    assert (record.values[-1] > record.values[0]) == record.higher_is_better


@needs_xgboost
@needs_catboost
def test_peer_seeds_budget_and_reproducibility(tmp_path):
    cfg = _config(tmp_path)
    exp = cfg.experiment("a9a")
    data = load_data(exp.data)
    seeds = {m.label: method_seeds(m, exp) for m in exp.methods}
    # XGBoost without subsampling draws nothing; CatBoost's split scores are randomised
    assert seeds == {"stock_full": (0,), "xgboost_hist": (0,), "xgb_half": (0, 1), "catboost": (0, 1),
                     "cb_half": (0, 1)}
    for label in ("xgb_half", "cb_half"):
        a, b, c = (run_method(exp.method(label), exp, data, s) for s in (0, 0, 1))
        assert a.values == b.values and a.values != c.values
        stopped = run_method(exp.method(label), exp, data, 0, budget_seconds=1e-9)
        assert stopped.num_iterations == 1 and stopped.values == a.values[:1]
        assert stopped.note.startswith("stopped after 1 of 6 iterations: its time budget")


@needs_xgboost
@needs_catboost
def test_unknown_library_parameters_stop_the_preflight(tmp_path, capsys):
    from smart_lgbm.cli import main

    text = PEERS.format(extra_methods='[methods.typo]\nkind = "xgboost_hist"\nparams = { colsample_bytre = 0.5 }\n'
                                      '[methods.cbtypo]\nkind = "catboost"\nparams = { l2_leaf_regg = 1 }\n')
    path = tmp_path / "p.toml"
    path.write_text(text)
    assert main(["compare", str(path), "--experiment", "a9a", "--method", "typo"]) == 2
    assert ("[experiments.a9a] method 'typo' cannot train: XGBoost does not know the parameter(s) "
            '{ "colsample_bytre" }') in capsys.readouterr().err
    assert main(["compare", str(path), "--experiment", "a9a", "--method", "cbtypo"]) == 2
    assert "method 'cbtypo' cannot train: CatBoost: " in capsys.readouterr().err
    assert not list((tmp_path / "out").rglob("records.json"))  # nothing trained, nothing written


@needs_xgboost
@needs_catboost
def test_compare_with_peers_end_to_end_and_run_keeps_their_models(tmp_path, capsys):
    from smart_lgbm.cli import main

    path = tmp_path / "peers.toml"
    path.write_text("warmup = false\n" + PEERS.format(extra_methods=""))
    assert main(["compare", str(path), "--experiment", "l2"]) == 0
    folder = tmp_path / "out" / "l2"
    records = json.loads((folder / "records.json").read_text())
    assert {r["method"] for r in records["runs"]} == {"stock_full", "xgboost_hist", "xgb_half", "catboost", "cb_half"}
    table = (folder / "table.md").read_text()
    for label in ("xgboost_hist", "cb_half"):
        assert f"| {label} |" in table.split("**best quality**")[1]  # every method's best beside stock full's
    capsys.readouterr()
    assert main(["run", str(path), "--method", "xgboost_hist", "--experiment", "l2"]) == 0
    assert main(["run", str(path), "--method", "catboost", "--experiment", "l2", "--seed", "1"]) == 0
    import catboost as cb
    import xgboost as xgb

    valid = load_data(load_config(path).experiment("l2").data).valid
    booster = xgb.Booster()
    booster.load_model(bytearray((folder / "model_xgboost_hist_seed0.txt").read_bytes()))
    (run,) = json.loads((folder / "run_xgboost_hist.json").read_text())["runs"]
    assert np.mean((booster.predict(xgb.DMatrix(valid.X)) - valid.y) ** 2) == pytest.approx(run["values"][-1],
                                                                                            rel=1e-5)
    model = cb.CatBoost().load_model(str(folder / "model_catboost_seed1.txt"), format="json")
    (run,) = json.loads((folder / "run_catboost.json").read_text())["runs"]
    assert np.mean((model.predict(valid.X) - valid.y) ** 2) == pytest.approx(run["values"][-1], rel=1e-6)


def test_tables_with_peers_state_each_library_s_best_quality():
    from smart_lgbm.compare.report import build_table, mean_curves, to_markdown

    def rec(method, kind, values):
        return RunRecord("e", method, kind, 0, "binary_logloss", False, list(values), [1.0] * len(values),
                         [1.0] * len(values))

    records = [rec("stock_full", "stock_full", [0.6, 0.5, 0.45, 0.46]),
               rec("stock_goss", "stock_goss", [0.6, 0.52, 0.47, 0.47]),
               rec("fo", "first_order", [0.55, 0.46, 0.451, 0.452]),
               rec("xgb", "xgboost_hist", [0.6, 0.5, 0.452, 0.449]),
               rec("cb", "catboost", [0.61, 0.55, 0.5, 0.44]),   # ends better than LightGBM
               rec("cb_half", "catboost", [0.62, 0.56, 0.51, 0.48])]
    table = build_table("e", "binary_logloss", False, mean_curves(records))
    assert table.library_best == [("LightGBM", "stock_full", 0.45), ("smart-lgbm", "fo", 0.451),
                                  ("XGBoost", "xgb", 0.449), ("CatBoost", "cb", 0.44)]
    text = to_markdown(table)
    assert ("Best quality by library: LightGBM 0.4500 (stock_full, +0.0000 (same) against stock_full); smart-lgbm "
            "0.4510 (fo, +0.0010 (worse) against stock_full); XGBoost 0.4490 (xgb, -0.0010 (better) against "
            "stock_full); CatBoost 0.4400 (cb, -0.0100 (better) against stock_full).") in text
    # without peers the table is as before
    assert build_table("e", "binary_logloss", False, mean_curves(records[:3])).library_best == []
