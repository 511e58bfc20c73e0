"""Iterations that draw every row: the tree-fitting Booster stays on the training set and keeps
their trees (update plan ``stay_on_train``, ``OneIterationBooster.fit(keep=True)``), and the
models are byte for byte those of the reset-and-roll-back path (forced here through the plan
of a distributed run, which keeps that path) and, where the algorithms coincide, stock's."""

from __future__ import annotations

import dataclasses
import warnings

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._engine import update_plan as up
from smart_lgbm._lightgbm import OneIterationBooster
from smart_lgbm.samplers import Sample, Sampler

BASE = {"objective": "binary", "num_leaves": 7, "verbosity": -1, "min_data_in_leaf": 5, "num_threads": 1}


def _data(n=1500, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    signal = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)
    y = np.digitize(signal, np.linspace(-1, 1, classes - 1)).astype(float) if classes > 2 else (signal > 0).astype(float)
    return X, y


class EveryOther(Sampler):
    """Every row on even iterations, half the rows (weights 2) on odd ones: a user sampler
    that draws every row only sometimes."""

    def sample(self, state, rng):
        g, h = state.grad, state.hess
        if state.iteration % 2 == 0:
            return Sample(np.arange(state.num_rows, dtype=np.int32), g, h)
        idx = np.flatnonzero(rng.random(state.num_rows) < 0.5).astype(np.int32)
        return Sample(idx, g[idx] * 2.0, h[idx] * 2.0)


@pytest.fixture
def kept_counts(monkeypatch):
    """The number of kept iterations the C Booster holds after each fit (records the path taken)."""
    seen: list[int] = []
    real = OneIterationBooster.fit

    def recording(self, *args, **kwargs):
        fitted = real(self, *args, **kwargs)
        seen.append(self.kept)
        return fitted

    monkeypatch.setattr(OneIterationBooster, "fit", recording)
    return seen


def _reset_path(monkeypatch):
    """Force today's reset-and-roll-back path for every-row iterations: the plans of a
    distributed run (which never stay on the training set)."""
    real = up.plan_updates

    def old(run, **kwargs):
        return real(dataclasses.replace(run, network=True), **kwargs)

    monkeypatch.setattr(up, "plan_updates", old)


def _train(params, X, y, rounds, sampler, valid=True, **kw):
    train = lgb.Dataset(X, y)
    valid_sets = [lgb.Dataset(X[:300], y[:300], reference=train)] if valid else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sl.train(params, train, rounds, sampler=sampler, valid_sets=valid_sets, **kw).model_to_string()


def _both_paths(monkeypatch, kept_counts, params, X, y, rounds, make_sampler, **kw):
    kept = _train(params, X, y, rounds, make_sampler(), **kw)
    counts = list(kept_counts)
    kept_counts.clear()
    with monkeypatch.context() as m:
        _reset_path(m)
        reset = _train(params, X, y, rounds, make_sampler(), **kw)
    assert all(c == 0 for c in kept_counts)  # the forced path keeps nothing
    return kept, reset, counts


@pytest.mark.parametrize("extra", [
    {},
    {"feature_fraction": 0.6},  # column draws: the kept path replays the draws of skipped resets
    {"feature_fraction_bynode": 0.5, "extra_trees": True},
    {"force_row_wise": True, "lambda_l2": 1.0},
])
def test_alternating_every_row_and_sampled_iterations_equal_the_reset_path(monkeypatch, kept_counts, extra):
    X, y = _data()
    params = {**BASE, **extra}
    kept, reset, counts = _both_paths(monkeypatch, kept_counts, params, X, y, 8, EveryOther)
    assert kept == reset
    assert counts == [1, 0] * 4  # kept on even iterations, dropped at each sampled one


@pytest.mark.parametrize("extra", [{}, {"feature_fraction": 0.6}, {"use_quantized_grad": True}])
def test_full_runs_keep_every_iteration_and_equal_the_reset_path(monkeypatch, kept_counts, extra):
    X, y = _data()
    params = {**BASE, **extra}
    kept, reset, counts = _both_paths(monkeypatch, kept_counts, params, X, y, 6, sl.Full)
    assert kept == reset
    assert counts == [1, 2, 3, 4, 5, 6]


def test_full_and_uniform_one_equal_stock_with_kept_trees(kept_counts):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = lgb.train(BASE, lgb.Dataset(X, y), 6).model_to_string()
        for sampler in (sl.Full(), sl.Uniform(1.0)):
            assert sl.train(BASE, lgb.Dataset(X, y), 6, sampler=sampler).model_to_string() == stock
    assert kept_counts == [1, 2, 3, 4, 5, 6] * 2


def test_multiclass_every_row_equals_stock_and_the_reset_path(monkeypatch, kept_counts):
    X, y = _data(classes=3)
    params = {**BASE, "objective": "multiclass", "num_class": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = lgb.train(params, lgb.Dataset(X, y), 5).model_to_string()
        assert sl.train(params, lgb.Dataset(X, y), 5, sampler=sl.Full()).model_to_string() == stock
    assert kept_counts == [1, 2, 3, 4, 5]
    kept_counts.clear()
    kept, reset, _ = _both_paths(monkeypatch, kept_counts, params, X, y, 6, EveryOther)
    assert kept == reset


def test_reset_parameter_in_every_row_iterations_equals_stock(kept_counts):
    X, y = _data()
    rates = [0.3, 0.2, 0.1, 0.05, 0.2]
    leaves = [7, 4, 7, 15, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cb = [lgb.reset_parameter(learning_rate=rates, num_leaves=leaves)]
        stock = lgb.train(BASE, lgb.Dataset(X, y), 5, callbacks=cb).model_to_string()
        cb = [lgb.reset_parameter(learning_rate=rates, num_leaves=leaves)]
        ours = sl.train(BASE, lgb.Dataset(X, y), 5, sampler=sl.Full(), callbacks=cb).model_to_string()
    assert ours == stock
    assert kept_counts == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("stuck", [0, 3])
def test_iteration_that_cannot_split_in_every_row_mode_equals_the_reset_path(monkeypatch, kept_counts, stuck):
    # min_gain_to_split huge at one iteration: that iteration cannot split (the first one, or
    # one after kept iterations, which LightGBM drops itself); column sampling keeps the run
    # going after it (a deterministic run would stop there)
    X, y = _data()
    params = {**BASE, "feature_fraction": 0.8}
    gains = [0.0] * 7
    gains[stuck] = 1e12

    def callbacks():
        return [lgb.reset_parameter(min_gain_to_split=gains)]

    kept, reset, counts = _both_paths(monkeypatch, kept_counts, params, X, y, 7, sl.Full, callbacks=callbacks())
    assert kept == reset
    model = lgb.Booster(model_str=kept)
    assert model.num_trees() == (7 if stuck == 0 else 6)  # the first iteration's constant tree stays
    # kept iterations in a row, then a fresh Booster after the finished one, then again
    assert counts == [*range(1, stuck + 1), 0, *range(1, 7 - stuck)]


@pytest.mark.parametrize("data", [lambda: _data(3000), lambda: _sparse(4000)], ids=["dense", "sparse"])
def test_auto_rate_reaching_every_row_equals_the_reset_path(monkeypatch, kept_counts, data):
    X, y = data()

    def make():
        return sl.Uniform(rate=sl.AdaptiveRate(start=0.25, growth=2.0, window=1, threshold=1e-9))

    kept, reset, counts = _both_paths(monkeypatch, kept_counts, BASE, X, y, 10, make)
    assert kept == reset
    assert max(counts) >= 2  # the rate reached 1.0: every-row iterations in a row kept their trees


def test_first_iteration_on_the_fresh_booster_needs_no_reset(monkeypatch):
    # the Booster is created on the training set: a first every-row iteration fits there at once
    from smart_lgbm._lightgbm import booster as booster_module

    calls = []
    real = booster_module._LIB

    class Counting:
        def __getattr__(self, name):
            if name == "LGBM_BoosterResetTrainingData":
                calls.append(name)
            return getattr(real, name)

    monkeypatch.setattr(booster_module, "_LIB", Counting())
    X, y = _data()
    _train(BASE, X, y, 3, sl.Full())
    assert calls == []


# --------------------------------------------------------------------------- sparse input
#
# The engine bins sparse input into a dense copy (engine_data._storage_params) and fits every-row
# iterations on it column-wise: each feature's bins summed in row order, so stock's trees on that
# storage, at any thread count.  (A sparse storage for these iterations would have to keep that:
# LightGBM's fast sparse histograms, the multi-value bin, sum per block of rows per thread.)


def _sparse(n=2500, seed=0):
    """CSR with features of every density, stored NaNs (missing values), integer codes
    (categorical when asked) and negative values."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = []
    for j in range(12):
        density = (0.03, 0.12, 0.25, 0.6, 1.0)[j % 5]
        values = rng.integers(1, 6, size=n).astype(float) if j in (2, 7) else rng.normal(size=n) * (1 + j % 3)
        if j % 4 == 1:
            values[rng.random(n) < 0.2] = np.nan
        cols.append(np.where(rng.random(n) < density, values, 0.0))
    X = np.column_stack(cols)
    signal = (np.nan_to_num(X[:, 0]) * 3 + np.nan_to_num(X[:, 4]) - np.nan_to_num(X[:, 1]) + (X[:, 2] == 3)
              + 0.5 * rng.normal(size=n))
    return sp.csr_matrix(X), (signal > 0.2).astype(float)


@pytest.mark.parametrize("extra, categorical", [
    ({}, None),
    ({"num_threads": 2}, None),
    ({"zero_as_missing": True}, None),
    ({"use_missing": False, "max_bin": 15}, None),
    ({}, [2, 7]),
])
def test_full_on_sparse_input_equals_stock_column_wise_on_the_engines_storage(kept_counts, extra, categorical):
    X, y = _sparse()
    params = {**BASE, **extra}
    kw = {} if categorical is None else {"categorical_feature": categorical}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = sl.train(params, lgb.Dataset(X, y, **kw), 8, sampler=sl.Full()).model_to_string()
        stock = lgb.train({**params, "force_col_wise": True},
                          lgb.Dataset(X, y, params={"is_enable_sparse": False}, **kw), 8).model_to_string()
    assert ours.split("\nparameters:\n")[0] == stock.split("\nparameters:\n")[0]
    assert kept_counts == [1, 2, 3, 4, 5, 6, 7, 8]


def test_every_row_on_sparse_input_same_model_at_any_thread_count():
    X, y = _sparse(6000)
    params = {**BASE, "feature_fraction": 0.8, "seed": 5}
    for make in (sl.Full, EveryOther):
        models = {_train({**params, "num_threads": t}, X, y, 6, make()).split("\nparameters:\n")[0]
                  for t in (1, 2, 3)}
        assert len(models) == 1  # (the parameters section names the thread count)
