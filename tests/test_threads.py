"""The thread pool behind the all-rows kernels (smart_lgbm._threads): every block once,
small work on the calling thread, errors raised, and models that do not depend on the
number of threads."""

from __future__ import annotations

import threading

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm import _threads


@pytest.fixture
def threads(monkeypatch):
    """Set the thread count the pool uses (numba's, which cannot exceed the cores here)."""

    def use(count):
        monkeypatch.setattr(_threads, "_requested", lambda: count)

    return use


@pytest.mark.parametrize("count", [1, 2, 3, 4])
@pytest.mark.parametrize("nblocks", [1, 2, 5, 64])
def test_every_block_runs_once(threads, count, nblocks):
    threads(count)
    seen = np.zeros(nblocks, dtype=np.int64)
    shares = []
    lock = threading.Lock()

    def kernel(b0, b1, out):
        with lock:
            shares.append((b0, b1))
        out[b0:b1] += 1

    _threads.for_blocks(kernel, nblocks, 10**9, seen)
    np.testing.assert_array_equal(seen, 1)
    assert len(shares) == (1 if count == 1 else min(nblocks, _threads.PIECES_PER_THREAD * count))
    assert min(b0 for b0, _ in shares) == 0 and max(b1 for _, b1 in shares) == nblocks


def test_small_work_stays_on_the_calling_thread(threads, monkeypatch):
    threads(4)
    monkeypatch.setattr(_threads, "MIN_ROWS_PER_THREAD", 1000)
    callers = set()

    def kernel(b0, b1):
        callers.add(threading.get_ident())

    _threads.for_blocks(kernel, 8, 1999)  # one thread's worth
    assert callers == {threading.get_ident()}
    assert _threads.num_threads(1999) == 1
    assert _threads.num_threads(3000) == 3
    assert _threads.num_threads(10**9) == 4


def test_an_error_in_any_share_is_raised(threads):
    threads(3)

    def kernel(b0, b1):
        if b0 > 0:
            raise RuntimeError(f"share {b0}")

    with pytest.raises(RuntimeError, match="share"):
        _threads.for_blocks(kernel, 9, 10**9)


def _data(objective):
    rng = np.random.default_rng(5)
    n = 3000
    X = rng.normal(size=(n, 8)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    params = {"objective": objective, "verbosity": -1, "num_leaves": 15, "seed": 2}
    group = None
    if objective == "binary":
        y = (score > 0).astype(float)
    elif objective == "multiclass":
        y = np.digitize(score, [-0.7, 0.7]).astype(float)
        params["num_class"] = 3
    else:
        y = np.clip(np.round(score + 1.5), 0, 4)
        group = [30] * (n // 30)
    return params, X, y, group


CASES = {
    "binary-first_order": ("binary", lambda: sl.FirstOrder(rate=0.2)),
    "binary-second_order_anchored": ("binary", lambda: sl.SecondOrder(rate=0.2, anchor_lag=1, eta=0.5)),
    "binary-mvs": ("binary", lambda: sl.MVS(rate=0.2)),
    "binary-uniform": ("binary", lambda: sl.Uniform(rate=0.2)),
    "binary-weight_trimming": ("binary", lambda: sl.WeightTrimming(alpha=0.2)),
    "binary-loss_based": ("binary", lambda: sl.LossBased(rate=0.2)),
    "multiclass-first_order": ("multiclass", lambda: sl.FirstOrder(rate=0.2)),
    "lambdarank-first_order": ("lambdarank", lambda: sl.FirstOrder(rate=0.2)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_model_at_one_two_and_three_threads(threads, monkeypatch, case):
    """Every kernel split into 1, 2 and 3 shares (MIN_ROWS_PER_THREAD is 1 in the tests):
    the same model byte for byte."""
    objective, make = CASES[case]
    params, X, y, group = _data(objective)
    models = set()
    for count in (1, 2, 3):
        threads(count)
        booster = sl.train(params, lgb.Dataset(X, y, group=group), 6, sampler=make())
        models.add(booster.model_to_string())
    assert len(models) == 1
