"""One draw for every way of training (smart_lgbm._engine.draw).

The engine, SmartObjective (lightgbm.train, lightgbm.cv, LightGBM's scikit-learn
estimators) and the Dask workers all draw through :func:`smart_lgbm._engine.draw.draw_iteration`,
so a malformed sample from a user sampler is refused on every path with the same message,
never fitted silently.
"""

from __future__ import annotations

import logging

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._engine import run as boosting
from smart_lgbm import objective
from smart_lgbm._engine.draw import Gradients, check_sample, draw_iteration, draw_key, stream_rng
from smart_lgbm.losses import BinaryLogloss, Target
from smart_lgbm.samplers import GradientHistory, Sample, Sampler, SamplingState

BASE = {"verbosity": -1, "num_leaves": 7, "min_data_in_leaf": 5}

#: (what is wrong, how the sample's indices are spoiled): every one is a gradient vector
#: LightGBM would fit without complaint if nobody checked
SPOILED = {
    "duplicate": lambda idx, n: np.concatenate([idx[:1], idx[:-1]]),  # first row twice, same length
    "unsorted": lambda idx, n: np.concatenate([idx[1:2], idx[:1], idx[2:]]),
    "beyond the last row": lambda idx, n: np.concatenate([idx[:-1], [n]]).astype(np.int32),
    "negative": lambda idx, n: np.concatenate([[-1], idx[1:]]).astype(np.int32),
}


class Spoiled(Sampler):
    """Every other row, plain gradients, indices spoiled as ``SPOILED[how]`` says."""

    def __init__(self, how):
        self.how = how

    def sample(self, state, rng):
        idx = np.arange(0, state.num_rows, 2, dtype=np.int32)
        g, h = state.grad32[idx], state.hess32[idx]
        return Sample(SPOILED[self.how](idx, state.num_rows), g, h)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] + rng.normal(size=n) > 0).astype(np.int64)


def _message(how, n):
    return rf"Spoiled\(how='{how}'\) returned indices that are not sorted, unique and in \[0, {n}\)"


# ------------------------------------------------------------------ every path refuses the same samples


@pytest.mark.parametrize("how", SPOILED)
def test_the_engine_refuses_a_malformed_sample(how):
    X, y = _data()
    with pytest.raises(ValueError, match=_message(how, 600)):
        sl.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 3, sampler=Spoiled(how))
    with pytest.raises(ValueError, match=_message(how, 600)):
        sl.SmartClassifier(sampler=Spoiled(how), n_estimators=3, verbose=-1).fit(X, y)


@pytest.mark.parametrize("how", SPOILED)
def test_smart_objective_refuses_a_malformed_sample_in_every_interface(how):
    X, y = _data()
    obj = sl.SmartObjective("binary", Spoiled(how))
    with pytest.raises(ValueError, match=_message(how, 600)):
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 3, callbacks=[obj.callback])
    with pytest.raises(ValueError, match=_message(how, 600)):  # without the callback too
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 3)
    with pytest.raises(ValueError, match=_message(how, 600)):
        lgb.LGBMClassifier(objective=obj, n_estimators=3, verbose=-1).fit(X, y, callbacks=[obj.callback])
    with pytest.raises(ValueError, match=_message(how, 300)):  # each fold: 300 training rows
        lgb.cv({**BASE, "objective": obj}, lgb.Dataset(X, y), 3, nfold=2, stratified=False,
               callbacks=[obj.callback])


# ------------------------------------------------------------------ draw_iteration itself


class Recording(Sampler):
    """Uniform draw that records what it saw: the history's length and the state's statistics."""

    history_length = 2

    def __init__(self):
        self.seen = []

    def sample(self, state, rng):
        self.seen.append((len(state.history.gradients), state.statistics))
        keep = np.flatnonzero(rng.random(state.num_rows) < 0.5).astype(np.int32)
        return Sample(keep, state.grad32[keep], state.hess32[keep])


class CountingLoss(BinaryLogloss):
    calls = 0

    def compute_gradients(self, raw, target, grad, hess):
        CountingLoss.calls += 1
        super().compute_gradients(raw, target, grad, hess)


def _gradients(loss, raw, target):
    """Every row's float32 g, h at ``raw``, as the engine hands them to draw_iteration."""
    grad, hess = np.empty(raw.shape, np.float32), np.empty(raw.shape, np.float32)
    loss.compute_gradients(raw, target, grad, hess)
    return grad, hess


def test_draw_iteration_draws_from_the_gradients_checks_and_then_keeps_the_history():
    rng = np.random.default_rng(0)
    n = 500
    raw = rng.normal(size=n)
    target = Target(label=(rng.random(n) < 0.5).astype(float))
    loss, sampler, history = CountingLoss(), Recording(), GradientHistory(maxlen=2)
    grad, hess = _gradients(BinaryLogloss(), raw, target)
    CountingLoss.calls = 0
    sample = draw_iteration(sampler, Gradients(grad, hess), loss=loss, target=target, history=history, raw=raw,
                            iteration=3, seed=5, stream=1)
    assert CountingLoss.calls == 0  # the gradients given are the ones drawn from: no loss call
    # the sampler's draw with the stream's generator
    expected = Recording().sample(SamplingState(3, grad, hess, raw, loss, target, GradientHistory()),
                                  stream_rng(5, 3, 1))
    np.testing.assert_array_equal(sample.indices, expected.indices)
    np.testing.assert_array_equal(sample.grad, expected.grad)
    # the sampler saw the earlier iterations only; this one's gradients are kept after the draw
    assert sampler.seen == [(0, None)]
    np.testing.assert_array_equal(history.gradient(1), grad)

    # the gradient sweep's statistics reach the sampler with the gradients they came from
    marker = object()
    draw_iteration(sampler, Gradients(grad, hess, marker), loss=loss, target=target, history=history, raw=raw,
                   iteration=4, seed=5)
    assert CountingLoss.calls == 0 and sampler.seen[-1] == (1, marker)
    assert len(history.gradients) == 2


def test_a_refused_sample_leaves_the_history_unchanged():
    n = 100
    raw = np.zeros(n)
    target = Target(label=np.tile([0.0, 1.0], n // 2))
    history = GradientHistory(maxlen=1)
    with pytest.raises(ValueError, match="not sorted"):
        draw_iteration(Spoiled("unsorted"), Gradients(*_gradients(BinaryLogloss(), raw, target)),
                       loss=BinaryLogloss(), target=target, history=history, raw=raw, iteration=0, seed=0)
    assert history.gradients == ()


@pytest.mark.parametrize("train", ["engine", "objective"])
def test_the_engine_and_smart_objective_draw_through_draw_iteration(monkeypatch, train):
    # one draw, not two copies: both modules call the same function every iteration
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs["iteration"])
        return draw_iteration(*args, **kwargs)

    monkeypatch.setattr(boosting, "draw_iteration", counted)
    monkeypatch.setattr(objective, "draw_iteration", counted)
    X, y = _data()
    if train == "engine":
        sl.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 4, sampler=sl.FirstOrder(rate=0.3))
    else:
        obj = sl.SmartObjective("binary", sl.FirstOrder(rate=0.3))
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y), 4, callbacks=[obj.callback])
    assert calls == [0, 1, 2, 3]


def test_the_compiled_sample_check_answers_as_the_numpy_checks():
    """check_sample's one-pass kernel (float32 (m,) samples) passes exactly the samples the
    numpy checks pass; any other goes on to those checks and their messages."""
    from smart_lgbm._engine import _draw_kernels as _iteration_kernels

    rng = np.random.default_rng(3)
    n = 1000
    for case in range(240):
        idx = np.sort(rng.choice(n, size=int(rng.integers(1, 60)), replace=False)).astype(np.int32)
        g, h = rng.normal(size=idx.size).astype(np.float32), rng.random(size=idx.size).astype(np.float32)
        spoil = case % 8
        if spoil == 1 and idx.size > 1:
            idx[-1] = idx[-2]  # a duplicate
        elif spoil == 2 and idx.size > 1:
            idx[[0, -1]] = idx[[-1, 0]]  # unsorted
        elif spoil == 3:
            idx[0] = -1
        elif spoil == 4:
            idx[-1] = n
        elif spoil in (5, 6):
            (g if spoil == 5 else h)[int(rng.integers(idx.size))] = [np.nan, np.inf, -np.inf][case % 3]
        expected = bool(idx[0] >= 0 and idx[-1] < n and np.all(idx[1:] > idx[:-1])
                        and np.all(np.isfinite(g)) and np.all(np.isfinite(h)))
        assert _iteration_kernels.plain_sample(idx, n, g, h) == expected, case
        if expected:
            check_sample(Sample(idx, g, h), n, 1, Spoiled("x"))
        else:
            with pytest.raises(ValueError, match=r"not sorted, unique|NaN or infinite"):
                check_sample(Sample(idx, g, h), n, 1, Spoiled("x"))


def test_float64_sample_gradients_beyond_float32_are_still_refused():
    # the float32 fast path of check_sample skips nothing a float64 sample needs checked
    idx = np.arange(3, dtype=np.int32)
    ok = np.ones(3)
    with pytest.raises(ValueError, match="hessians from .*float32's range"):
        check_sample(Sample(idx, ok, np.array([1.0, 1e39, 1.0])), 3, 1, Spoiled("x"))
    with pytest.raises(ValueError, match="gradients from .*NaN or infinite"):
        check_sample(Sample(idx, np.array([1.0, np.inf, 1.0], dtype=np.float32), ok), 3, 1, Spoiled("x"))
    check_sample(Sample(idx, ok.astype(np.float32), ok), 3, 1, Spoiled("x"))


# ------------------------------------------------------------------ the Dask workers


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'smart-lgbm[dask]')")
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    from distributed import Client, LocalCluster

    # its own cluster: workers whose training failed are not handed to other tests
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        yield client


def _dask_data(client):
    import dask.array as da

    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    X, y = _data(2000)

    def placed(values):
        pieces = np.array_split(values, 2)
        futures = [client.scatter(p, workers=[w]) for p, w in zip(pieces, workers)]
        return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=p.dtype)
                               for f, p in zip(futures, pieces)]).persist()

    return placed(X), placed(y)


@pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored")
def test_dask_workers_refuse_a_malformed_sample(client):
    from smart_lgbm.dask import DaskSmartClassifier, DaskTrainingError

    X, y = _dask_data(client)

    class Duplicated(Sampler):  # local: shipped to the workers by value
        def sample(self, state, rng):
            idx = np.arange(0, state.num_rows, 2, dtype=np.int32)
            idx[1] = idx[0]
            return Sample(idx, state.grad32[idx], state.hess32[idx])

    est = DaskSmartClassifier(client=client, sampler=Duplicated(), n_estimators=3, num_leaves=7, verbose=-1)
    with pytest.raises(DaskTrainingError, match=r"Duplicated\(\) returned indices that are not sorted, unique"):
        est.fit(X, y)
    assert not hasattr(est, "fitted_")
    # SmartObjective inside lightgbm.dask: the same draw on every worker
    obj = sl.SmartObjective("binary", Duplicated())
    with pytest.raises(ValueError, match=r"Duplicated\(\) returned indices that are not sorted, unique"):
        lgb.DaskLGBMClassifier(client=client, objective=obj, n_estimators=3, num_leaves=7,
                               verbose=-1).fit(X, y, callbacks=[obj.callback])


def test_draw_key_is_the_iteration_generators_first_raw_output():
    """draw_key computes numpy's PCG64(SeedSequence(...)) first output itself: the same 64 bits
    for every seed, iteration and stream (multi-word seeds and spawn keys included), and
    numpy's own path beyond 64 bits."""
    rng = np.random.default_rng(2)
    cases = [(0, 0, None), (0, 0, 0), (1, 0, None), (2**32, 7, 3), (2**64 - 1, 2**64 - 1, 2**64 - 1),
             (2**64, 1, None), (5, 2**70, 2)]
    for trial in range(2000):
        seed = int(rng.integers(0, 2**63)) if trial % 2 else int(rng.integers(0, 2**31))
        iteration = int(rng.integers(0, 2**40)) if trial % 7 == 0 else trial
        stream = None if trial % 3 else int(rng.integers(0, 2**34 if trial % 5 == 0 else 64))
        cases.append((seed, iteration, stream))
    for seed, iteration, stream in cases:
        expected = stream_rng(seed, iteration, stream).bit_generator.random_raw()
        assert int(draw_key(seed, iteration, stream)) == expected, (seed, iteration, stream)


@pytest.mark.parametrize("make", [lambda: sl.FirstOrder(rate=0.2), lambda: sl.MVS(rate=0.2),
                                  lambda: sl.SecondOrder(rate=0.2), lambda: sl.Uniform(0.3)])
def test_builtin_draws_through_draw_iteration_equal_the_draw_with_the_generator(make):
    """draw_iteration hands the built-in samplers the generator's key, not the generator: the
    same sample as their own sample() with the iteration's generator (and a subclass that
    overrides sample() still gets a generator)."""
    rng = np.random.default_rng(4)
    n = 3000
    raw = rng.normal(size=n)
    target = Target(label=(rng.random(n) < 0.5).astype(float))
    loss = BinaryLogloss()
    assert make().draws_from_key  # declared by the built-in draw
    for stream in (None, 2):
        grad, hess = _gradients(loss, raw, target)
        sample = draw_iteration(make(), Gradients(grad, hess), loss=loss, target=target,
                                history=GradientHistory(maxlen=2), raw=raw, iteration=6, seed=9, stream=stream)
        state = SamplingState(6, grad, hess, raw, loss, target, GradientHistory(maxlen=2))
        expected = make().sample(state, stream_rng(9, 6, stream))
        for a, b in ((sample.indices, expected.indices), (sample.grad, expected.grad), (sample.hess, expected.hess)):
            assert a.tobytes() == b.tobytes()
    seen = []

    class Overriding(type(make())):
        def sample(self, state, rng):
            seen.append(rng)
            return super().sample(state, rng)

    assert not Overriding(rate=make().rate).draws_from_key  # its own sample(): the generator
    draw_iteration(Overriding(rate=make().rate), Gradients(*_gradients(loss, raw, target)), loss=loss, target=target,
                   history=GradientHistory(maxlen=2), raw=raw, iteration=6, seed=9)
    assert isinstance(seen[0], np.random.Generator)
