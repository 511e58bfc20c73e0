"""LightGBM 4.6 and 4.7 both: the supported range in every place that states it, one clear
error outside it, and callbacks that see exactly what the installed LightGBM's own
``lgb.train`` shows them.  CI runs the whole suite under each supported version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm import _lightgbm

ROOT = Path(__file__).resolve().parent.parent
BASE = {"num_leaves": 15, "learning_rate": 0.2, "verbosity": -1, "objective": "binary"}


# ------------------------------------------------------------------ the supported range


def test_supported_range_is_stated_the_same_everywhere():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"lightgbm{_lightgbm.SUPPORTED_LIGHTGBM}"' in pyproject
    # the versions CI tests, one environment each (scripts/venv.sh)
    venv = (ROOT / "scripts" / "venv.sh").read_text()
    [listed] = re.findall(r'^LIGHTGBM_VERSIONS="([^"]*)"$', venv, flags=re.MULTILINE)
    assert tuple(listed.split()) == _lightgbm.SUPPORTED_MINOR_VERSIONS
    readme = (ROOT / "README.md").read_text()
    assert f"`lightgbm{_lightgbm.SUPPORTED_LIGHTGBM}`" in readme


def test_unsupported_lightgbm_is_refused_at_import_naming_the_range():
    code = "import lightgbm; lightgbm.__version__ = '4.8.0'; import smart_lgbm"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last == ("ImportError: smart_lgbm supports lightgbm>=4.6,<4.8 (versions 4.6.x, 4.7.x); found lightgbm "
                    "4.8.0. Install a supported one: pip install 'lightgbm>=4.6,<4.8'")


def test_scripts_test_refuses_an_unknown_version_naming_the_accepted_ones():
    proc = subprocess.run(["bash", "scripts/test", "--co"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "SMART_LGBM_LIGHTGBM": "4.5"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "SMART_LGBM_LIGHTGBM=4.5 is not supported; accepted: 4.6, 4.7 (empty: 4.7)"


# ------------------------------------------------------------------ callbacks as in lgb.train


def _results_spy(store: list) -> object:
    def spy(env):
        store.append(list(env.evaluation_result_list))

    spy.order = 5  # before early stopping (30), so that the stopping iteration is seen too
    return spy


def _as_third_party_would(lines: list) -> object:
    """A progress callback written against the installed LightGBM's documented result form."""

    def progress(env):
        for result in env.evaluation_result_list:
            if hasattr(lgb, "EvalResult"):  # 4.7: named fields
                lines.append(f"{result.dataset_name} {result.metric_name} {result.metric_value:.6g} {result.maximize}")
            else:  # 4.6: tuples
                dataset_name, metric_name, value, maximize = result
                lines.append(f"{dataset_name} {metric_name} {value:.6g} {maximize}")

    return progress


def _train_both(data, **kwargs):
    """Run stock lgb.train and smart_lgbm.train (Full) with the same stock callbacks."""
    (X, y), (Xt, yt) = data
    out = {}
    for who, train in (("stock", lgb.train), ("ours", sl.train)):
        seen, lines, evals, stops = [], [], {}, []
        stopper = lgb.early_stopping(3, first_metric_only=True, verbose=False)

        def watch(env, stopper=stopper, stops=stops):
            try:
                stopper(env)
            except lgb.callback.EarlyStopException as exc:
                stops.append(exc)
                raise

        watch.order = stopper.order
        train_set = lgb.Dataset(X, y)
        extra = {"sampler": sl.Full()} if train is sl.train else {}
        booster = train(
            {**BASE, "metric": ["binary_logloss", "auc"]}, train_set, 200,
            valid_sets=[train_set, lgb.Dataset(Xt, yt, reference=train_set)], valid_names=["fit", "test"],
            feval=lambda preds, ds: ("mean_prob", float(np.mean(preds)), False),
            callbacks=[_results_spy(seen), _as_third_party_would(lines), watch, lgb.record_evaluation(evals),
                       lgb.log_evaluation(period=4), lgb.reset_parameter(learning_rate=lambda i: 0.3 if i < 5 else 0.1)],
            **extra, **kwargs,
        )
        out[who] = {"seen": seen, "lines": lines, "evals": evals, "stops": stops, "booster": booster}
    return out


def test_stock_callbacks_see_what_lgb_train_shows_them(a9a_small, capsys):
    runs = _train_both(a9a_small)
    stock, ours = runs["stock"], runs["ours"]
    printed = capsys.readouterr().out.split("\n")
    # every iteration's evaluation_result_list: same type of entry, same names and values
    assert len(ours["seen"]) == len(stock["seen"]) > 5
    for mine, theirs in zip(ours["seen"], stock["seen"]):
        assert [type(r) for r in mine] == [type(r) for r in theirs]
        assert [(r[0], r[1], r[3]) for r in mine] == [(r[0], r[1], r[3]) for r in theirs]
        np.testing.assert_allclose([r[2] for r in mine], [r[2] for r in theirs], rtol=1e-9)
    # a third-party callback reading the results the documented way prints the same
    assert ours["lines"] == stock["lines"]
    # log_evaluation printed the same lines (half of the output each)
    logged = [line for line in printed if line.startswith("[")]
    assert logged[: len(logged) // 2] == logged[len(logged) // 2:] and len(logged) >= 4
    # record_evaluation, early stopping (which skips the training set "fit") and reset_parameter
    assert ours["evals"].keys() == stock["evals"].keys() == {"fit", "test"}
    for name, metrics in stock["evals"].items():
        for metric, values in metrics.items():
            np.testing.assert_allclose(ours["evals"][name][metric], values, rtol=1e-9)
    assert ours["booster"].best_iteration == stock["booster"].best_iteration > 0
    # EarlyStopException.best_score: the same form, and the best scores the boosters keep
    [mine], [theirs] = ours["stops"], stock["stops"]
    assert [type(r) for r in mine.best_score] == [type(r) for r in theirs.best_score]
    assert [tuple(r)[:2] for r in mine.best_score] == [tuple(r)[:2] for r in theirs.best_score]
    for dataset_name, metrics in stock["booster"].best_score.items():
        assert list(ours["booster"].best_score[dataset_name]) == list(metrics)
        np.testing.assert_allclose(list(ours["booster"].best_score[dataset_name].values()), list(metrics.values()),
                                   rtol=1e-9)
    (_, _), (Xt, _) = a9a_small
    # (predict stops at best_iteration by default)
    np.testing.assert_allclose(ours["booster"].predict(Xt, raw_score=True), stock["booster"].predict(Xt, raw_score=True),
                               rtol=0, atol=1e-6)

