"""The adaptive sampling rate (rate="auto", AdaptiveRate): its test, its decisions, its plumbing."""

from __future__ import annotations

import time

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm.losses import BinaryLogloss, Target
from smart_lgbm.samplers import GradientHistory, RunContext, SamplingState
from smart_lgbm.samplers.adaptive import leaf_noise_sums, pooled_gains, pooled_noise_ratio

BASE = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbosity": -1, "num_threads": 1}


# ---------------------------------------------------------------- the statistic


def test_leaf_noise_sums_match_their_definition(rng):
    n, m = 200, 60
    idx = np.sort(rng.choice(n, m, replace=False)).astype(np.int32)
    p = rng.uniform(0.05, 1.0, size=m)
    g = rng.normal(size=(n, 1))
    h = rng.uniform(0.1, 1.0, size=(n, 1))
    leaves = rng.integers(0, 4, size=n)
    fit_g, fit_h = g[idx] / p[:, None], h[idx] / p[:, None]
    sums = leaf_noise_sums(idx, fit_g, fit_h, h, leaves)
    for j in range(4):
        rows = leaves[idx] == j
        assert sums[0, j] == pytest.approx(fit_g[rows, 0].sum())
        assert sums[1, j] == pytest.approx(fit_h[rows, 0].sum())
        assert sums[2, j] == pytest.approx(np.sum(fit_g[rows, 0] ** 2 * (1 - p[rows])))
        assert sums[3, j] == pytest.approx(np.sum(g[idx][rows, 0] ** 2 / p[rows]))
        assert sums[4, j] == pytest.approx(np.sum(1 / p[rows]))
    # the ratio is the sampling noise over the excess gain (gain less noise less data spread)
    used = sums[1] > 0
    h = sums[1][used]
    noise = np.sum(sums[2][used] / h)
    gain = np.sum(sums[0][used] ** 2 / h)
    data = np.sum(np.maximum(sums[3][used] - sums[0][used] ** 2 / sums[4][used], 0) / h)
    assert pooled_gains([sums]) == pytest.approx((noise, gain, data))
    ratio = pooled_noise_ratio([sums])
    assert ratio == (pytest.approx(noise / (gain - noise - data)) if gain > noise + data else float("inf"))


def test_every_row_drawn_has_no_noise(rng):
    n = 50
    g, h = rng.normal(size=(n, 1)), np.ones((n, 1))
    idx = np.arange(n, dtype=np.int32)
    sums = leaf_noise_sums(idx, g, h, h, rng.integers(0, 3, size=n))
    assert np.all(sums[2] == 0) and pooled_noise_ratio([sums]) == 0.0


def test_multiclass_sums_are_per_tree(rng):
    n, k = 40, 3
    g, h = rng.normal(size=(n, k)), rng.uniform(0.5, 1.0, size=(n, k))
    leaves = rng.integers(0, 2, size=(n, k))
    idx = np.arange(0, n, 2, dtype=np.int32)
    sums = leaf_noise_sums(idx, g[idx] / 0.5, h[idx] / 0.5, h, leaves)
    assert sums.shape == (5, 2 * k)
    for c in range(k):
        for j in range(2):
            rows = leaves[idx, c] == j
            assert sums[0, c * 2 + j] == pytest.approx((g[idx][rows, c] / 0.5).sum())
            assert sums[4, c * 2 + j] == pytest.approx(2.0 * rows.sum())  # p = 0.5: each row counts twice


# ---------------------------------------------------------------- decisions


def _state(it: int, grad: np.ndarray, history: GradientHistory, run: RunContext | None = None) -> SamplingState:
    """Iteration ``it``'s state of the run whose history and context are ``history``, ``run``."""
    loss = BinaryLogloss()
    n = grad.shape[0]
    return SamplingState(it, grad, np.ones(n), np.zeros(n), loss, Target(label=np.zeros(n)), history, run=run)


def _rates(sampler: sl.Sampler, grad_of: callable, leaves: np.ndarray, iterations: int) -> list[float]:
    history, run = GradientHistory(leaves=leaves), RunContext.start(sampler)
    rates = []
    for it in range(iterations):
        state = _state(it, grad_of(it), history, run)
        rates.append(sampler.sample(state, np.random.default_rng(it)).size / leaves.shape[0])
    return rates


def test_noise_dominated_trees_grow_the_rate():
    # each leaf's gradients sum to exactly 0: whatever a tree fits on a sample is noise
    n = 20_000
    leaves = np.arange(n) % 8
    signs = np.where((np.arange(n) // 8) % 2 == 0, 1.0, -1.0)
    gen = np.random.default_rng(0)

    pair = (np.arange(n) // 16) * 8 + np.arange(n) % 8  # rows i and i + 8: one leaf, opposite signs

    def noise(it):
        return signs * gen.uniform(0.5, 2.0, size=n // 2)[pair]

    control = sl.AdaptiveRate(start=0.05, threshold=0.3, growth=2.0, window=2)
    rates = _rates(sl.FirstOrder(rate=control), noise, leaves, 8)
    assert rates[0] == pytest.approx(0.05, abs=0.01) and rates[1] == pytest.approx(0.05, abs=0.01)
    assert rates[2] == pytest.approx(0.10, abs=0.01)  # grown after the first window
    assert rates[4] == pytest.approx(0.20, abs=0.01)
    assert rates[7] == pytest.approx(0.40, abs=0.015)


def test_signal_dominated_trees_keep_the_rate():
    # each leaf's gradients share a sign and a size: the sampled leaf sums are nearly exact
    n = 20_000
    leaves = np.arange(n) % 8
    gen = np.random.default_rng(0)

    def signal(it):
        return np.where(leaves % 2 == 0, 1.0, -1.0) * (1.0 + 0.1 * gen.random(n))

    rates = _rates(sl.FirstOrder(rate=sl.AdaptiveRate(start=0.05, window=2)), signal, leaves, 8)
    assert all(r == pytest.approx(0.05, abs=0.01) for r in rates)


def test_growth_stops_at_the_maximum_and_full_draws_every_row():
    n = 4_000
    leaves = np.arange(n) % 4
    signs = np.where((np.arange(n) // 4) % 2 == 0, 1.0, -1.0)  # every leaf's sum is 0
    control = sl.AdaptiveRate(start=0.25, maximum=1.0, growth=2.0, window=1)
    rates = _rates(sl.Uniform(rate=control), lambda it: signs, leaves, 5)
    assert rates[0] == pytest.approx(0.25, abs=0.03) and rates[1] == pytest.approx(0.5, abs=0.03)
    assert rates[2:] == [1.0, 1.0, 1.0]


def _leaf_gradients(per_leaf: int, positives: int, leaves: int) -> np.ndarray:
    """Gradients of +-1, leaf by leaf (leaf = row // per_leaf): ``positives`` of each leaf are +1."""
    leaf = np.r_[np.ones(positives), -np.ones(per_leaf - positives)]
    return np.tile(leaf, leaves)


def test_leaf_sums_at_the_data_noise_level_grow_the_rate_to_full():
    # Every leaf's sum is what coin flips give (G^2 ~ the spread sum g^2 - G^2/n): nothing
    # left to learn, only to overfit. The sampling noise at rate 0.9 is a small share of the
    # sampled gain (the old test, V / G~^2 > 0.3, kept the rate here), but all of the excess.
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 516, n_leaves)  # G = 32, G^2 = 1024, spread = 999
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    rates = _rates(sl.Uniform(rate=sl.AdaptiveRate(start=0.9, window=1)), lambda it: grad, leaves, 3)
    assert rates[0] == pytest.approx(0.9, abs=0.02) and rates[1:] == [1.0, 1.0]
    # the old share test's view of the first iteration's sample: below its 0.3
    history = GradientHistory(leaves=leaves)
    sample = sl.Uniform(rate=0.9).sample(_state(0, grad, history), np.random.default_rng(0))
    noise, gain, _ = pooled_gains([leaf_noise_sums(sample.indices, sample.grad.reshape(-1, 1),
                                                   sample.hess.reshape(-1, 1), np.ones((grad.size, 1)), leaves,
                                                   constant_p=0.9)])
    assert noise / gain < 0.3


def test_leaf_sums_well_above_the_data_noise_keep_a_low_rate():
    # the same gradient sizes, but each leaf leans 70/30: G^2 = 160,000 against a spread of
    # 840, so even the noise of a 10% sample is small next to the excess gain
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 700, n_leaves)
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    control = sl.AdaptiveRate(start=0.1, window=1)
    rates = _rates(sl.Uniform(rate=control), lambda it: grad, leaves, 6)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in rates)
    # ... and a tighter threshold on the same case grows it: the decision follows the ratio
    tight = _rates(sl.Uniform(rate=sl.AdaptiveRate(start=0.1, threshold=0.01, growth=2.0, window=1)),
                   lambda it: grad, leaves, 3)
    assert tight[1] == pytest.approx(0.2, abs=0.03) and tight[2] == pytest.approx(0.4, abs=0.03)


def test_the_default_ramp_on_noise_dominated_trees():
    # rate="auto" as shipped: x2 per window of 10 while the trees are noise-dominated, and
    # straight to full boosting once a step would pass one half
    n = 4_000
    leaves = np.arange(n) % 4
    signs = np.where((np.arange(n) // 4) % 2 == 0, 1.0, -1.0)  # every leaf's sum is 0: always grows
    rates = _rates(sl.Uniform(rate="auto"), lambda it: signs, leaves, 35)
    for first, expected in ((0, 0.1), (10, 0.2), (20, 0.4)):
        assert all(r == pytest.approx(expected, abs=0.03) for r in rates[first:first + 10]), first
    assert rates[30:] == [1.0] * 5


def test_a_rate_grown_past_half_goes_to_the_maximum():
    n = 4_000
    leaves = np.arange(n) % 4
    signs = np.where((np.arange(n) // 4) % 2 == 0, 1.0, -1.0)  # every leaf's sum is 0: always grows
    for maximum, expected in ((1.0, 1.0), (0.9, 0.9)):
        control = sl.AdaptiveRate(start=0.3, maximum=maximum, growth=1.5, window=1)
        rates = _rates(sl.Uniform(rate=control), lambda it: signs, leaves, 3)
        # 0.3 * 1.5 = 0.45 stays; 0.45 * 1.5 = 0.675 > 0.5 jumps to the maximum
        assert rates[0] == pytest.approx(0.3, abs=0.03) and rates[1] == pytest.approx(0.45, abs=0.03)
        assert rates[2] == pytest.approx(expected, abs=0.03 if expected < 1 else 0)


def test_snap_one_grows_by_steps_up_to_the_maximum():
    n = 4_000
    leaves = np.arange(n) % 4
    signs = np.where((np.arange(n) // 4) % 2 == 0, 1.0, -1.0)  # every leaf's sum is 0: always grows
    control = sl.AdaptiveRate(start=0.3, growth=1.5, window=1, snap=1.0)
    rates = _rates(sl.Uniform(rate=control), lambda it: signs, leaves, 5)
    # 0.3, 0.45, 0.675 (no jump past one half), 1.0125 capped at 1.0
    assert rates[:3] == [pytest.approx(r, abs=0.03) for r in (0.3, 0.45, 0.675)]
    assert rates[3] == rates[4] == 1.0


def _rates_with_validation(sampler, grad, leaves, values, higher_is_better=False):
    """Rates of a run whose first validation metric after iteration t is values[t]."""
    history, run = GradientHistory(leaves=leaves), RunContext.start(sampler)
    rates = []
    for it in range(len(values)):
        rates.append(sampler.sample(_state(it, grad, history, run), np.random.default_rng(it)).size / leaves.shape[0])
        run.validation = (("valid_0", "metric", values[it], higher_is_better),)  # what the engine sets
    return rates


@pytest.mark.parametrize("higher_is_better", [False, True])
def test_a_validation_plateau_grows_the_rate(higher_is_better):
    # signal-dominated trees (the noise test alone keeps 0.1) whose validation metric makes
    # its last new best at iteration 9: after 2 windows without one, the rate grows
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 700, n_leaves)
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    better = np.r_[np.linspace(1.0, 0.5, 10), np.full(30, 0.6)]
    values = -better if higher_is_better else better
    control = sl.AdaptiveRate(start=0.1, window=5, growth=2.0, slowdown=0.0)  # the plateau rule alone
    rates = _rates_with_validation(sl.Uniform(rate=control), grad, leaves, values, higher_is_better)
    # iteration t sees the metric after t - 1 (the best at 10); decisions at 4, 9, 14, ...:
    # the first whose last 10 scores hold no new best is at 24
    assert all(r == pytest.approx(0.1, abs=0.02) for r in rates[:25])
    assert all(r == pytest.approx(0.2, abs=0.03) for r in rates[25:35])  # then 10 at the new rate
    assert rates[35] == pytest.approx(0.4, abs=0.03)
    # a metric that keeps improving keeps the rate
    improving = np.linspace(1.0, 0.5, 40)
    kept = _rates_with_validation(sl.Uniform(rate=sl.AdaptiveRate(start=0.1, window=5, growth=2.0)), grad, leaves,
                                  -improving if higher_is_better else improving, higher_is_better)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in kept)


def test_patience_sets_the_plateau_span_and_zero_turns_the_rule_off():
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 700, n_leaves)
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    values = np.r_[np.linspace(1.0, 0.5, 10), np.full(30, 0.6)]  # last new best after iteration 9
    one = _rates_with_validation(sl.Uniform(rate=sl.AdaptiveRate(start=0.1, window=5, patience=1, growth=2.0,
                                                                 slowdown=0.0)), grad, leaves, values)
    # iteration t sees the metric after t - 1 (the best at 10): the first decision whose last
    # 5 scores hold no new best is at 19 (two windows, as the default patience, wait until 24)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in one[:20])
    assert one[20] == pytest.approx(0.2, abs=0.03)
    off = _rates_with_validation(sl.Uniform(rate=sl.AdaptiveRate(start=0.1, window=5, patience=0, slowdown=0.0)),
                                 grad, leaves, values)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in off)


@pytest.mark.parametrize("make", [lambda c, refit: sl.Uniform(rate=c, refit_leaves=refit),
                                  lambda c, refit: sl.FirstOrder(rate=c, refit_leaves=refit)],
                         ids=["Uniform", "FirstOrder"])
def test_refit_leaves_turns_the_plateau_rule_off(make):
    # the plateau case of test_a_validation_plateau_grows_the_rate: a sampler whose leaf
    # values come from every row keeps its rate there; the noise test and the slowdown rule
    # still decide for it
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 700, n_leaves)
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    values = np.r_[np.linspace(1.0, 0.5, 10), np.full(30, 0.6)]

    def rates(refit, **kwargs):
        control = sl.AdaptiveRate(start=0.1, window=5, growth=2.0, **kwargs)
        return _rates_with_validation(make(control, refit), grad, leaves, values)

    assert max(rates(False)[25:35]) > 0.15  # grown by the plateau rule (the control case)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in rates(True))
    # an explicit slowdown rule still applies: the first window's best improved by 0.25 of
    # the total 0.5, the window after the last new best (decision 19) by nothing
    grown = rates(True, slowdown=0.01)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in grown[:20]) and grown[20] == pytest.approx(0.2, abs=0.03)
    # and the noise test: every leaf's gradient sum zero (pure noise, R = inf) grows the rate
    # at once, with the refit too
    signs = np.where((np.arange(per_leaf * n_leaves) // 4) % 2 == 0, 1.0, -1.0)
    noisy = _rates_with_validation(make(sl.AdaptiveRate(start=0.1, window=1), True), signs, leaves,
                                   np.linspace(1.0, 0.5, 5))
    assert noisy[2] > 0.15


def test_under_refit_the_noise_test_grows_only_past_the_signal():
    # one leaf's sums G~, H~, V~, S~, N~ (so many rows that the data noise D is S~ / H~):
    # Q = G~^2 = 100, D = 20, and the value noise N = V~ sets R = N / (Q - N - D)
    def sums(noise):
        return np.array([[10.0], [1.0], [noise], [20.0], [1e15]])

    def rates(noise, refit, threshold="auto"):
        control = sl.AdaptiveRate(start=0.1, window=2, threshold=threshold)
        state = control.start_run()
        return [control.observe(state, it, sums(noise), refit_leaves=refit) for it in range(4)]

    grown, kept = [0.1, 0.2, 0.2, 0.4], [0.1] * 4
    # R = 10 / 70 = 0.14: above the default limit (0.1), below the signal: grows only without the refit
    assert rates(10.0, False) == grown and rates(10.0, True) == kept
    # R = 38 / 42 = 0.9 and 42 / 38 = 1.1: under the refit the default limit is 1
    assert rates(38.0, True) == kept and rates(42.0, True) == grown
    # a threshold the user gives holds with and without the refit
    assert rates(10.0, True, threshold=0.1) == grown and rates(42.0, True, threshold=5.0) == kept
    assert rates(42.0, False, threshold=5.0) == kept and rates(10.0, False, threshold=0.1) == grown
    assert sl.AdaptiveRate().limit(False) == 0.1 and sl.AdaptiveRate().limit(True) == 1.0
    assert sl.AdaptiveRate(threshold=0.3).limit(True) == 0.3
    # pure noise (Q - N - D <= 0, R = inf) grows either way
    assert rates(90.0, True) == grown and rates(90.0, False) == grown


@pytest.mark.parametrize("make", [lambda rate: sl.FirstOrder(rate=rate, refit_leaves=True),
                                  lambda rate: sl.MVS(rate=rate, refit_leaves=True)], ids=["FirstOrder", "MVS"])
def test_auto_under_refit_keeps_its_rate_below_the_signal(make):
    # a clean signal and a threshold the noise test passes on this run (without the refit
    # the rate grows at ~30 iterations, and so it does under the refit when the user sets
    # that threshold); under the refit the default limit is 1, which the ratio stays below, so
    # the model is the fixed start rate's, byte for byte, with or without validation sets
    # (the plateau rule is off there)
    gen = np.random.default_rng(0)
    X = gen.normal(size=(24_000, 10))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * gen.normal(size=24_000) > 0).astype(int)
    (X, y), (Xt, yt) = (X[:20_000], y[:20_000]), (X[20_000:], y[20_000:])
    low = sl.AdaptiveRate(start=0.1, threshold=0.05, window=5)
    _, rec = _train(X, y, sl.FirstOrder(rate=low))
    assert np.mean(rec["sampling_rate"][-10:]) > 0.15
    _, rec = _train(X, y, make(low))
    assert np.mean(rec["sampling_rate"][-10:]) > 0.15
    control = sl.AdaptiveRate(start=0.1, window=5)  # threshold="auto": 1.0 under the refit
    fixed, _ = _train(X, y, make(0.1))
    auto, _ = _train(X, y, make(control))
    assert auto.model_to_string() == fixed.model_to_string()

    def with_validation(sampler):
        return sl.train({**BASE, "seed": 3}, lgb.Dataset(X, y), 60, sampler=sampler,
                        valid_sets=[lgb.Dataset(Xt, yt)]).model_to_string()

    assert with_validation(make(control)) == with_validation(make(0.1))


@pytest.mark.parametrize("higher_is_better", [False, True])
def test_slowdown_grows_the_rate_on_diminishing_returns(higher_is_better):
    # signal-dominated trees (the noise test alone keeps 0.1), a validation metric that keeps
    # improving (no plateau), by less and less: 0.9^(t+1), lower is better
    per_leaf, n_leaves = 1000, 8
    grad = _leaf_gradients(per_leaf, 700, n_leaves)
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    better = 1.0 - (1.0 - 0.9 ** np.arange(1, 61))  # lower is better: 0.9^t
    values = -better if higher_is_better else better

    def run(**kwargs):
        control = sl.AdaptiveRate(start=0.1, window=5, patience=0, growth=2.0, **kwargs)
        return _rates_with_validation(sl.Uniform(rate=control), grad, leaves, values, higher_is_better)

    # at decision t the scores are those after iterations 0..t-1: s_k = 0.9^(k+1); the last
    # window's gain over the total is (0.9^(t-5) - 0.9^t) / (0.9 - 0.9^t)
    def first_growth(share):
        for t in range(9, 60, 5):
            if 0.9 ** (t - 5) - 0.9 ** t < share * (0.9 - 0.9 ** t):
                return t
    for share in (0.05, 0.2):
        rates = run(slowdown=share)
        t = first_growth(share)
        assert all(r == pytest.approx(0.1, abs=0.02) for r in rates[: t + 1])
        assert rates[t + 1] == pytest.approx(0.2, abs=0.03)
        # the rule holds at the grown rate too (the returns keep diminishing): one window later
        assert rates[t + 6] == pytest.approx(0.4, abs=0.03)
    assert all(r == pytest.approx(0.1, abs=0.02) for r in run(slowdown=0.0))  # the rule is off


def test_no_leaves_no_decision():
    # before the first tree there is no partition to judge: the rate stays
    n = 5_000
    gen = np.random.default_rng(2)
    history = GradientHistory()
    sampler = sl.MVS(rate=sl.AdaptiveRate(start=0.1, window=1))
    run = RunContext.start(sampler)
    for it in range(3):
        sampler.sample(_state(it, gen.choice([-1.0, 1.0], size=n), history, run), np.random.default_rng(it))
    assert sampler.rate.rate_for(run.sampler_state, 3) == 0.1


def test_each_run_owns_its_controller_state_made_by_the_samplers_hook():
    # the state lives in the run's context, made by Sampler.start_run: one sampler object
    # serves two runs at once, each growing (or not) at its own pace
    n_leaves, per_leaf = 8, 1000
    leaves = np.arange(per_leaf * n_leaves) // per_leaf
    noise = _leaf_gradients(per_leaf, 516, n_leaves)  # noise-dominated: the rate grows
    signal = _leaf_gradients(per_leaf, 700, n_leaves)  # signal-dominated: the rate stays
    sampler = sl.Uniform(rate=sl.AdaptiveRate(start=0.2, window=1))
    runs = {"noise": (noise, GradientHistory(leaves=leaves), RunContext.start(sampler)),
            "signal": (signal, GradientHistory(leaves=leaves), RunContext.start(sampler))}
    assert all(isinstance(run.sampler_state, sl.samplers.adaptive.AdaptiveRateState) for _, _, run in runs.values())
    assert runs["noise"][2].sampler_state is not runs["signal"][2].sampler_state
    rates = {name: [] for name in runs}
    for it in range(3):
        for name, (grad, history, run) in runs.items():  # interleaved, as two concurrent runs
            size = sampler.sample(_state(it, grad, history, run), np.random.default_rng(it)).size
            rates[name].append(size / leaves.shape[0])
    assert rates["noise"][-1] > 0.35 and all(r == pytest.approx(0.2, abs=0.03) for r in rates["signal"])
    assert runs["noise"][2].sampler_state.rate > runs["signal"][2].sampler_state.rate == 0.2
    # a fixed rate keeps no per-run state; nor do samplers without a start_run of their own
    assert sl.Uniform(rate=0.3).start_run() is None and sl.Full().start_run() is None


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize("kwargs, name", [
    ({"start": 0.0}, "start"), ({"start": 1.5}, "start"), ({"maximum": 0.0}, "maximum"),
    ({"start": 0.5, "maximum": 0.2}, "maximum"), ({"threshold": 0.0}, "threshold"), ({"threshold": -1.0}, "threshold"),
    ({"threshold": float("inf")}, "threshold"),
    ({"growth": 1.0}, "growth"), ({"window": 0}, "window"), ({"start": float("nan")}, "start"),
    ({"patience": -1}, "patience"), ({"snap": 0.0}, "snap"), ({"snap": 1.5}, "snap"),
    ({"slowdown": -0.1}, "slowdown"), ({"slowdown": 1.0}, "slowdown"),
])
def test_invalid_values_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        sl.AdaptiveRate(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    ({"start": "low"}, "start"), ({"growth": True}, "growth"), ({"window": 2.5}, "window"), ({"threshold": None}, "threshold"),
])
def test_invalid_types_name_the_parameter(kwargs, name):
    with pytest.raises(TypeError, match=name):
        sl.AdaptiveRate(**kwargs)


def test_rate_accepts_auto_and_refuses_other_strings():
    for cls in (sl.FirstOrder, sl.SecondOrder, sl.MVS, sl.LossBased, sl.Uniform):
        assert cls(rate="auto").rate == sl.AdaptiveRate()
        assert cls(rate="auto").needs_leaves
        assert not cls(rate=0.2).needs_leaves
        with pytest.raises(TypeError, match="rate must be a number in \\(0, 1\\], \"auto\""):
            cls(rate="fast")
    assert sl.make_sampler("mvs", rate="auto").rate == sl.AdaptiveRate()
    with pytest.raises(ValueError, match="rate"):
        sl.make_sampler("first_order", rate="fast")


def test_rate_accepts_a_table_of_the_adaptive_rates_parameters():
    table = {"start": 0.2, "threshold": 0.05, "window": 5, "patience": 1, "snap": 1.0}
    for cls in (sl.FirstOrder, sl.MVS, sl.Uniform):
        assert cls(rate=table).rate == sl.AdaptiveRate(**table)
    assert sl.make_sampler("mvs", rate={}).rate == sl.AdaptiveRate()
    assert table == {"start": 0.2, "threshold": 0.05, "window": 5, "patience": 1, "snap": 1.0}  # not mutated
    with pytest.raises(ValueError, match="FirstOrder: rate: unknown key 'treshold' .*accepted: start, maximum, "
                                         "threshold, growth, window, patience, snap, slowdown"):
        sl.FirstOrder(rate={"treshold": 0.05})
    with pytest.raises(ValueError, match="rate: AdaptiveRate: threshold must be"):
        sl.MVS(rate={"threshold": -1.0})
    with pytest.raises(TypeError, match="rate: AdaptiveRate: window must be"):
        sl.MVS(rate={"window": "ten"})


# ---------------------------------------------------------------- through the engine


def _train(X, y, sampler, rounds=60, seed=3, **extra):
    rec: dict = {}
    booster = sl.train({**BASE, "seed": seed, **extra}, lgb.Dataset(X, y), rounds, sampler=sampler,
                       callbacks=[sl.record_sampling(rec)])
    return booster, rec


def test_same_seed_same_model_and_rate_recorded(a9a_small):
    (X, y), _ = a9a_small
    # a threshold low enough that this short run must grow its rate
    control = sl.AdaptiveRate(start=0.1, threshold=0.05, window=5)
    one, rec_one = _train(X, y, sl.FirstOrder(rate=control))
    two, rec_two = _train(X, y, sl.FirstOrder(rate=control))
    assert one.model_to_string() == two.model_to_string()
    assert rec_one["sampling_rate"] == rec_two["sampling_rate"]
    rates = np.array(rec_one["sampling_rate"])
    assert np.all(np.abs(rates[:5] - 0.1) < 0.03)  # the first window at the start rate
    assert rates[-10:].mean() > 0.3  # grown since
    assert np.all(np.diff(rates[::5][1:]) > -0.05)  # never shrinks (up to draw noise)
    other, _ = _train(X, y, sl.FirstOrder(rate=control), seed=4)
    assert other.model_to_string() != one.model_to_string()


def test_auto_differs_from_a_fixed_rate_only_once_grown(a9a_small):
    (X, y), _ = a9a_small
    # never grown (window longer than the run): the same model as the fixed start rate
    never = sl.AdaptiveRate(start=0.2, window=1000)
    auto, _ = _train(X, y, sl.MVS(rate=never), rounds=20)
    fixed, _ = _train(X, y, sl.MVS(rate=0.2), rounds=20)
    assert auto.model_to_string() == fixed.model_to_string()


def test_estimator_and_config(a9a_small, tmp_path):
    (X, y), (Xt, yt) = a9a_small
    clf = sl.SmartClassifier(n_estimators=30, num_leaves=15, sampler="first_order", sampler_params={"rate": "auto"},
                             random_state=1, verbose=-1)
    clf.fit(X, y)
    again = sl.SmartClassifier(**clf.get_params()).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(Xt), again.predict_proba(Xt))
    from smart_lgbm.compare.config import ConfigError, load_config

    good = tmp_path / "c.toml"
    good.write_text('[methods.fa]\nkind = "first_order"\nrate = "auto"\n[[experiments]]\nname = "a"\n'
                    'metric = "binary_logloss"\ndata = { source = "bundled", name = "a9a" }\n'
                    'params = { objective = "binary" }\n')
    method = load_config(good).experiments[0].methods[0]
    assert method.options == {"rate": "auto"}
    bad = tmp_path / "b.toml"
    bad.write_text(good.read_text().replace('"auto"', '"fast"'))
    with pytest.raises(ConfigError, match="rate"):
        load_config(bad)
    # the table form: AdaptiveRate's parameters, checked at load time with the method's name
    table = tmp_path / "t.toml"
    table.write_text(good.read_text().replace('"auto"', "{ start = 0.2, threshold = 0.05, snap = 1.0 }"))
    method = load_config(table).experiments[0].methods[0]
    assert method.options == {"rate": {"start": 0.2, "threshold": 0.05, "snap": 1.0}}
    assert sl.make_sampler(method.kind, **method.options).rate == sl.AdaptiveRate(start=0.2, threshold=0.05, snap=1.0)
    for text, match in (("{ start = 0.2, thresold = 0.05 }", r"\[methods.fa\] key 'rate': unknown key 'thresold'.*"
                                                            "accepted: start, maximum"),
                        ("{ growth = 0.5 }", r"\[methods.fa\] key 'rate': AdaptiveRate: growth must be")):
        table.write_text(good.read_text().replace('"auto"', text))
        with pytest.raises(ConfigError, match=match):
            load_config(table)


def test_smart_objective_grows_the_rate_deterministically(a9a_small):
    (X, y), (Xt, _) = a9a_small
    control = sl.AdaptiveRate(start=0.1, threshold=0.05, window=5)
    runs = []
    for _ in range(2):
        obj = sl.SmartObjective("binary", sl.FirstOrder(rate=control), seed=9)
        booster = lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y, free_raw_data=False), 25,
                            callbacks=[obj.callback])
        runs.append((booster.predict(Xt, raw_score=True), list(obj.record["sampling_rate"])))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    rates = np.array(runs[0][1])
    assert runs[0][1] == runs[1][1] and len(rates) == 25
    assert np.all(np.abs(rates[:5] - 0.1) < 0.03) and rates[-5:].mean() > 0.15  # it grew
    # without the callback the objective cannot see the leaves: refused, naming the sampler
    obj = sl.SmartObjective("binary", sl.FirstOrder(rate=control), seed=9)
    with pytest.raises(ValueError, match="leaves"):
        lgb.train({**BASE, "objective": obj}, lgb.Dataset(X, y, free_raw_data=False), 3)


# ---------------------------------------------------------------- the comparison report


def test_report_sets_best_beside_stock_full_and_times_two_tolerances():
    from smart_lgbm.compare.methods import RunRecord
    from smart_lgbm.compare.report import build_table, mean_curves, to_markdown

    def rec(method, kind, values, seconds):
        return RunRecord("e", method, kind, 0, "m", False, list(values), [1.0] * len(values), list(seconds))

    records = [rec("stock_full", "stock_full", [0.5, 0.4, 0.45], [1, 1, 1]),
               rec("fo_auto", "first_order", [0.6, 0.405, 0.4003], [0.2, 0.2, 0.2]),
               rec("fo", "first_order", [0.6, 0.42, 0.41], [0.1, 0.1, 0.1])]
    table = build_table("e", "m", False, mean_curves(records), tolerance=0.01)
    assert table.full_best == 0.4
    ttt = table.time_to_target
    assert ttt.tolerances == (0.01, 0.0005) and ttt.reference == "stock_full"
    # config tolerance: threshold 0.41; tight: 0.4005
    assert ttt.cells["stock_full"] == [(2.0, 2, 1.0), (2.0, 2, 1.0)]
    seconds, iteration, speedup = ttt.cells["fo_auto"][0]
    assert (iteration, speedup) == (2, pytest.approx(5.0)) and seconds == pytest.approx(0.4)
    seconds, iteration, speedup = ttt.cells["fo_auto"][1]
    assert (iteration, speedup) == (3, pytest.approx(2.0 / 0.6))
    assert ttt.cells["fo"][0][1] == 3 and ttt.cells["fo"][1] == (None, None, None)
    text = to_markdown(table)
    assert "vs stock_full's best" in text
    assert "| fo_auto | 1 | 0.4003 | 3 |" in text and "+0.0003 (worse)" in text
    assert "| fo | 1 | 0.4100 | 3 |" in text and "+0.0100 (worse)" in text
    assert "| method | target + 0.01 | target + 0.0005 |" in text
    assert "| fo | 0.300 (3, 6.67x) | not reached |" in text
    # a tight tolerance equal to the config's gives one column
    one = build_table("e", "m", False, mean_curves(records), tolerance=0.0005)
    assert one.time_to_target.tolerances == (0.0005,)


# ---------------------------------------------------------------- Dask: one rate for all workers


def test_dask_workers_share_one_rate():
    distributed = pytest.importorskip("distributed")
    import logging

    import dask.array as da

    from smart_lgbm.dask import DaskSmartClassifier
    from smart_lgbm.dask.worker import _model_digest

    rng = np.random.default_rng(0)
    Xn = rng.integers(0, 12, size=(6000, 5)).astype(np.float64)
    # machine 0 holds coin-flip labels (its trees' leaf sums are noise), machine 1 clean ones:
    # alone, machine 0 would grow its rate and machine 1 keep it; together they decide once
    yn = (Xn[:, 0] + Xn[:, 1] > 11).astype(np.int64)
    yn[:3000] = rng.integers(0, 2, size=3000)
    control = sl.AdaptiveRate(start=0.1, threshold=0.3, window=5)
    params = {"n_estimators": 30, "num_leaves": 7, "learning_rate": 0.1, "min_child_samples": 5, "verbose": -1,
              "seed": 2, "sampler": sl.FirstOrder(rate=control)}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        pieces = np.array_split(np.arange(6000), 2)
        futures_X = [client.scatter(Xn[p], workers=[w]) for p, w in zip(pieces, workers)]
        futures_y = [client.scatter(yn[p], workers=[w]) for p, w in zip(pieces, workers)]
        X = da.concatenate([da.from_delayed(f, shape=(len(p), 5), dtype=np.float64)
                            for f, p in zip(futures_X, pieces)]).persist()
        y = da.concatenate([da.from_delayed(f, shape=(len(p),), dtype=np.int64)
                            for f, p in zip(futures_y, pieces)]).persist()
        est = DaskSmartClassifier(client=client, **params).fit(X, y)
        again = DaskSmartClassifier(client=client, **params).fit(X, y)
        # Variable.delete() is a message to the scheduler, not a round trip: poll until they are gone
        deadline = time.monotonic() + 30
        while True:
            left = [name for name in client.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.extensions["variables"].variables))
                if "adaptive_rate" in name]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    rates = [np.array(r["sampling_rate"]) for r in est.worker_records_]
    assert len(rates) == 2 and all(len(r) == 30 for r in rates)
    # the same decisions on both machines: per window, both draw at the same target rate
    for start in range(0, 30, 5):
        window = [r[start:start + 5].mean() for r in rates]
        assert abs(window[0] - window[1]) < 0.05, (start, window)
    assert rates[0][:5].mean() < 0.15
    # same seed, same model (but for the parameters section, which names each run's ports)
    assert _model_digest(est.booster_) == _model_digest(again.booster_)
    assert left == []  # the exchanges' Variables were deleted


def test_the_constructor_is_its_parameter_specs():
    """AdaptiveRate's defaults and checks come from its Params (samplers/adaptive.py), so a
    changed constraint shows in the constructor and its messages at once."""
    import inspect
    import re

    from smart_lgbm.samplers.adaptive import ADAPTIVE_RATE_PARAMS

    signature = inspect.signature(sl.AdaptiveRate)
    assert list(signature.parameters) == [p.name for p in ADAPTIVE_RATE_PARAMS]
    for param in ADAPTIVE_RATE_PARAMS:
        assert signature.parameters[param.name].default == param.default
        with pytest.raises((TypeError, ValueError), match=re.escape(f"{param.name} must be {param.accepted}")):
            sl.AdaptiveRate(**{param.name: "x"})


@pytest.mark.parametrize("constant_p", [None, 0.25])
def test_compiled_leaf_sums_are_numpys_doubles(constant_p):
    """The one-column compiled pass gives exactly the doubles of the numpy bincounts (taken
    here through int64 leaves, which keep the numpy path): the same decisions, the same models."""
    from smart_lgbm.samplers.adaptive import leaf_noise_sums

    rng = np.random.default_rng(5)
    n, m = 5000, 900
    indices = np.sort(rng.choice(n, m, replace=False)).astype(np.int32)
    hess = rng.gamma(0.5, size=(n, 1)).astype(np.float32)
    p = np.minimum(1.0, rng.uniform(0.05, 1.5, size=m))
    fit_grad = (rng.standard_t(2.0, size=(m, 1)) / p[:, None]).astype(np.float32)
    fit_hess = (hess[indices] / p[:, None]).astype(np.float32)
    fit_hess[::97] = 0.0  # rows whose hessian is 0: p read as 1
    leaves = rng.integers(0, 31, size=n).astype(np.int32)
    compiled_sums = leaf_noise_sums(indices, fit_grad, fit_hess, hess, leaves, constant_p)
    numpy_sums = leaf_noise_sums(indices, fit_grad, fit_hess, hess, leaves.astype(np.int64), constant_p)
    assert compiled_sums.shape == numpy_sums.shape == (5, 31)
    assert compiled_sums.tobytes() == numpy_sums.tobytes()


@pytest.mark.parametrize("width", [1, 7, 31, 200])
def test_compiled_leaf_sums_add_fixed_blocks_of_drawn_rows_in_order(width):
    """Past ``BLOCK`` drawn rows the compiled pass runs in parallel over fixed blocks of
    ``BLOCK`` drawn rows: each block's sums are numpy's bincount doubles over its rows, the
    blocks added in order (the same bits at any number of threads); the width guess
    changes nothing."""
    from smart_lgbm._numba.kernel_constants import BLOCK

    rng = np.random.default_rng(8)
    n, m = 5 * BLOCK, 3 * BLOCK + 999
    indices = np.sort(rng.choice(n, m, replace=False)).astype(np.int32)
    hess = rng.gamma(0.5, size=(n, 1)).astype(np.float32)
    p = np.minimum(1.0, rng.uniform(0.05, 1.5, size=m))
    fit_grad = (rng.standard_t(2.0, size=(m, 1)) / p[:, None]).astype(np.float32)
    fit_hess = (hess[indices] / p[:, None]).astype(np.float32)
    leaves = rng.integers(0, 31, size=n).astype(np.int32)
    sums = leaf_noise_sums(indices, fit_grad, fit_hess, hess, leaves, None, width)
    expected = np.zeros((5, 31))
    for lo in range(0, m, BLOCK):
        block = slice(lo, lo + BLOCK)  # numpy's path (int64 leaves) over one block
        part = leaf_noise_sums(indices[block], fit_grad[block], fit_hess[block], hess, leaves.astype(np.int64))
        expected[:, : part.shape[1]] += part
    assert sums.shape == (5, 31) and sums.tobytes() == expected.tobytes()


def test_no_sums_once_the_rate_is_at_its_maximum(monkeypatch):
    """At the maximum no decision is left: the O(sample) sums are not computed (at 1.0 they
    would cost a pass over every row per iteration), and the model is unchanged."""
    from smart_lgbm.samplers import adaptive

    calls = []
    real = adaptive.leaf_noise_sums

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(float)
    params = {"objective": "binary", "num_leaves": 7, "verbosity": -1, "min_data_in_leaf": 5}
    grows = sl.AdaptiveRate(start=0.5, maximum=1.0, window=1, threshold=1e-9)  # 0.5 -> 1.0 after one decision
    before = sl.train(params, lgb.Dataset(X, y), 6, sampler=sl.FirstOrder(rate=grows)).model_to_string()
    monkeypatch.setattr(adaptive, "leaf_noise_sums", counting)
    record = {}
    model = sl.train(params, lgb.Dataset(X, y), 6, sampler=sl.FirstOrder(rate=grows),
                     callbacks=[sl.record_sampling(record)]).model_to_string()
    assert model == before
    assert record["sampling_rate"][2:] == [1.0] * 4
    assert len(calls) == 1  # iteration 1 only (no leaves before the first tree; settled from iteration 2)
