"""The gradient sweep, the fused path (smart_lgbm._engine.sweep): taken by the built-in losses and
samplers, and the same model byte for byte as the unfused path, at any number of threads."""

from __future__ import annotations

import lightgbm as lgb
import numba
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm import _lightgbm as L
from smart_lgbm._engine import sweep as fused
from smart_lgbm.losses.base import Loss
from smart_lgbm.losses.binary import BinaryLogloss
from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures
from smart_lgbm._numba import kernel_constants as kc
from smart_lgbm.samplers import rate_solve
from smart_lgbm.samplers import _rate_solve_kernels as rsk

N = 40_000  # three reduction blocks of 16,384 rows, the last one partial
BASE = {"num_leaves": 15, "learning_rate": 0.2, "verbosity": -1, "seed": 7, "min_data_in_leaf": 5}


def _data(objective: str, weighted: bool = False, n: int = N):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    signal = Z[:, 0] - 0.5 * Z[:, 1] * Z[:, 2] + 0.3 * rng.normal(size=n)
    if objective == "binary":
        y = (signal > 0.2).astype(float)
    elif objective == "regression":
        y = signal
    else:
        y = np.digitize(signal, [-0.5, 0.5]).astype(float)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    return X, y, w


def _unfused(sampler: sl.Sampler) -> sl.Sampler:
    """The same sampler, taking the unfused path (its declaration withdrawn)."""
    cls = type(f"Unfused{type(sampler).__name__}", (type(sampler),), {"_fused_statistics": lambda self: None})
    copy = cls.__new__(cls)
    copy.__dict__.update({k: v for k, v in vars(sampler).items() if k != "_workspace"})
    return copy


SAMPLERS = {
    "uniform": lambda: sl.Uniform(0.2),
    "first": lambda: sl.FirstOrder(rate=0.1),
    "first-high-rate": lambda: sl.FirstOrder(rate=0.4),  # rows read from LightGBM, not walked
    "first-rho": lambda: sl.FirstOrder(rho=2.0),
    "mvs": lambda: sl.MVS(rate=0.15),
    "mvs-reg": lambda: sl.MVS(rate=0.15, reg=0.3),
    "second": lambda: sl.SecondOrder(rate=0.15),
    "second-anchor": lambda: sl.SecondOrder(rate=0.15, anchor_lag=1, eta=0.0),
    # samplers that read every row's leaf in the newest tree: the fused walk writes them
    "second-anchor-leaves": lambda: sl.SecondOrder(rate=0.15, anchor_lag=1, eta=0.5),
    "first-auto": lambda: sl.FirstOrder(rate=sl.AdaptiveRate(window=2, threshold=1e-6)),
    "mvs-auto": lambda: sl.MVS(rate=sl.AdaptiveRate(window=2, threshold=1e-6)),
    "uniform-auto": lambda: sl.Uniform(sl.AdaptiveRate(window=2, threshold=1e-6)),
}


def _train(params, X, y, w, sampler, rounds=8):
    return sl.train(params, lgb.Dataset(X, y, weight=w), rounds, sampler=sampler).model_to_string()


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_fused_equals_unfused_for_each_builtin_sampler(name):
    X, y, w = _data("binary")
    params = {**BASE, "objective": "binary"}
    fused_model = _train(params, X, y, w, SAMPLERS[name]())
    assert fused_model == _train(params, X, y, w, _unfused(SAMPLERS[name]()))


@pytest.mark.parametrize("objective,weighted", [("binary", True), ("regression", False), ("regression", True),
                                                ("multiclass", False), ("multiclass", True)])
@pytest.mark.parametrize("name", ["first", "mvs", "uniform"])
def test_fused_equals_unfused_for_each_builtin_loss(objective, weighted, name):
    X, y, w = _data(objective, weighted)
    params = {**BASE, "objective": objective, **({"num_class": 3} if objective == "multiclass" else {})}
    assert _train(params, X, y, w, SAMPLERS[name](), 5) == _train(params, X, y, w, _unfused(SAMPLERS[name]()), 5)


@pytest.fixture
def gradient_calls(monkeypatch):
    """How often the engine computes the gradients through the loss (the unfused path)."""
    calls = []
    original = Loss.compute_gradients

    def counting(self, raw, target, grad, hess):
        calls.append(1)
        original(self, raw, target, grad, hess)

    monkeypatch.setattr(Loss, "compute_gradients", counting)
    return calls


@pytest.mark.parametrize("name", sorted(set(SAMPLERS) - {"first-high-rate"}))
def test_builtins_take_the_fused_path(name, gradient_calls):
    X, y, w = _data("binary", n=5000)
    _train({**BASE, "objective": "binary"}, X, y, w, SAMPLERS[name](), 6)
    assert len(gradient_calls) == 0  # the sweep computed every iteration's, the first one's too


def test_user_losses_and_samplers_take_the_unfused_path(gradient_calls):
    X, y, w = _data("binary", n=5000)
    params = {**BASE, "objective": "binary"}

    class MyFirstOrder(sl.FirstOrder):  # its own importance: the built-in statistics do not apply
        def importance(self, grad, hess):
            return np.abs(grad) + 0.1

    class MyLogloss(BinaryLogloss):  # its own gradients
        def gradient_hessian(self, raw, target):
            return super().gradient_hessian(raw, target)

    assert MyFirstOrder(rate=0.2)._fused_statistics() is None
    assert MyLogloss()._fused_loss() is None
    assert sl.LossBased(rate=0.2)._fused_statistics() is None
    assert sl.WeightTrimming(0.1)._fused_statistics() is None
    _train(params, X, y, w, MyFirstOrder(rate=0.2), 6)
    assert len(gradient_calls) == 6


def test_plan_needs_codes_and_declarations():
    X, y, w = _data("binary", n=100)
    target = sl.losses.base.Target(y)
    assert fused.sweep_for(BinaryLogloss(), sl.FirstOrder(), target, None, 100, 1) is None  # raw walk / none
    assert fused.sweep_for(BinaryLogloss(), sl.LossBased(), target, None, 100, 1) is None


@pytest.mark.parametrize("name", ["first", "mvs", "uniform"])
def test_same_model_at_any_thread_count(name):
    X, y, w = _data("binary")
    models = set()
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            model = _train({**BASE, "objective": "binary", "num_threads": threads}, X, y, w, SAMPLERS[name]())
            models.add(model.split("\nparameters:\n")[0])  # (the parameters name the thread count)
    finally:
        numba.set_num_threads(before)
    assert len(models) == 1


def test_fused_statistics_are_the_scan_passes_values():
    """The fused pass's per-block scan and norm sums give what the sampler kernels compute."""
    X, y, w = _data("binary")
    ds = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    codes = book.encode(RawFeatures.from_data(X))
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 15}, ds, 1)
    forest = book.coded_forest(Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())))
    target = sl.losses.base.Target(y)
    for sampler, kind in ((sl.FirstOrder(), kc.FIRST), (sl.SecondOrder(), kc.SECOND), (sl.MVS(), None)):
        run = fused.sweep_for(BinaryLogloss(), sampler, target, codes, N, 1)
        scores = np.zeros((N, 1))
        grad, hess = np.empty(N, np.float32), np.empty(N, np.float32)
        stats = run.walk(codes, forest, scores, None, grad, hess).statistics
        g2, h2 = np.empty(N, np.float32), np.empty(N, np.float32)
        BinaryLogloss().compute_gradients(scores[:, 0], target, g2, h2)
        assert grad.tobytes() == g2.tobytes() and hess.tobytes() == h2.tobytes()
        g, h = grad.reshape(N, 1), hess.reshape(N, 1)
        if kind is None:
            assert rate_solve.mvs_lambda(g, h, stats) == rate_solve.mvs_lambda(g, h)
            continue
        imp = rate_solve.Importance(kind, N, g, h)
        for want_sum in (True, False):
            assert rate_solve._scan(imp, "x", want_sum, stats) == rate_solve._scan(imp, "x", want_sum)



@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("kind", [kc.FIRST, kc.SECOND])
def test_grouped_statistics_equal_the_scan_kernel_per_block(kind, threads):
    """``one_column`` forms the SCAN statistics of whole groups of blocks side by side: every
    block's values (and the g, h) are still those the sampler's scan kernel forms for it,
    whichever thread and group take it, also for a block holding a NaN gradient (scanned
    again exactly) and the partial last block."""
    from smart_lgbm._engine import _sweep_kernels as fk

    block = kc.BLOCK
    n = 9 * block + 5_000  # two full groups on one thread and block by block tails, at 1 to 3 threads
    rng = np.random.default_rng(11)
    raw = rng.normal(scale=3.0, size=n)
    raw[2 * block + 17] = np.nan  # a bad gradient inside a full group's block
    sign = np.where(rng.random(n) < 0.4, 1, -1).astype(np.int8)
    nb = rate_solve.n_blocks(n)
    empty = np.empty(0)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
        blocks = np.zeros(nb), np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb)
        fk.one_column(n, raw, fk.BINARY, sign, empty, empty, 1.0, grad, hess, kc.STATS_SCAN, kind, *blocks,
                      np.zeros((nb, 2)), numba.get_num_threads(), fk.fast_exp())
    finally:
        numba.set_num_threads(before)
    g2, h2 = np.empty(n, np.float32), np.empty(n, np.float32)
    BinaryLogloss().compute_gradients(raw, sl.losses.base.Target(np.where(sign > 0, 1.0, 0.0)), g2, h2)
    assert grad.tobytes() == g2.tobytes() and hess.tobytes() == h2.tobytes()
    bmax, bpos, bbad, bexp, bsum = rate_solve.scan_blocks(n)
    rsk.scan(kc.KIND_MARKERS[kind], n, grad.reshape(n, 1), hess.reshape(n, 1), empty, 0.0, True, True,
            bmax, bpos, bbad, bexp, bsum)
    assert blocks[2][2] == 1  # the NaN block's bad count: its fast loop did not settle it
    for mine, reference in zip(blocks, (bmax, bpos, bbad, bsum), strict=True):
        assert mine.tobytes() == reference.tobytes()
