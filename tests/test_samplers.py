"""Samplers: probabilities follow the paper's formulas, weights are unbiased, rates are hit."""

from __future__ import annotations

import numpy as np
import pytest

from smart_lgbm import MVS, Auto, FirstOrder, Full, LossBased, SecondOrder, Uniform, WeightTrimming, make_sampler
from smart_lgbm.losses import BinaryLogloss, Target
from smart_lgbm.samplers import GradientHistory, ProbabilitySampler, SamplingState, regularised_gradient, solve_rho


def _state(grad, hess, raw=None, history=None, loss=None, label=None, iteration=5):
    n = grad.shape[0]
    label = np.zeros(n) if label is None else label
    return SamplingState(
        iteration=iteration, grad=grad, hess=hess, raw=np.zeros_like(grad) if raw is None else raw,
        loss=loss or BinaryLogloss(), target=Target(label=label), history=history or GradientHistory(),
    )


def _grads(rng, n=400, k=None):
    shape = (n,) if k is None else (n, k)
    grad = rng.standard_t(2, size=shape)  # heavy tails exercise the p = 1 cap
    hess = rng.gamma(0.5, size=shape) + 1e-3
    return grad, hess


# ------------------------------------------------------------------ probabilities


def test_first_order_probabilities_follow_paper(rng):
    grad, hess = _grads(rng)
    p = FirstOrder(rho=0.7).probabilities(grad, hess)
    expected = [min(1.0, 0.7 * abs(g)) for g in grad]
    np.testing.assert_allclose(p, expected, rtol=0, atol=0)


def test_second_order_probabilities_follow_paper(rng):
    grad, hess = _grads(rng)
    p = SecondOrder(rho=1.3).probabilities(grad, hess)
    np.testing.assert_array_equal(p, [min(1.0, 1.3 * h) for h in hess])


def test_mvs_probabilities_follow_formula(rng):
    grad, hess = _grads(rng)
    p = MVS(rho=0.5, reg=0.3).probabilities(grad, hess)
    expected = [min(1.0, np.sqrt(g * g + 0.3 * h * h) / 2.0) for g, h in zip(grad, hess)]
    np.testing.assert_allclose(p, expected, rtol=1e-15)


def test_multiclass_importance_uses_row_norm_and_hessian_sum(rng):
    grad, hess = _grads(rng, k=3)
    p1 = FirstOrder(rho=0.4).probabilities(grad, hess)
    np.testing.assert_allclose(p1, np.minimum(1.0, 0.4 * np.linalg.norm(grad, axis=1)), rtol=1e-14)
    p2 = SecondOrder(rho=0.4).probabilities(grad, hess)
    np.testing.assert_allclose(p2, np.minimum(1.0, 0.4 * hess.sum(axis=1)), rtol=1e-14)


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.3, 0.77])
@pytest.mark.parametrize("sampler_cls", [FirstOrder, SecondOrder, MVS])
def test_rate_targeting_hits_expected_size(rng, sampler_cls, rate):
    grad, hess = _grads(rng, n=5000)
    p = sampler_cls(rate=rate).probabilities(grad, hess)
    assert abs(p.sum() - rate * 5000) <= 1e-9 * rate * 5000
    assert p.max() <= 1.0 and p.min() >= 0.0


def test_solve_rho_matches_bruteforce(rng):
    s = np.concatenate([rng.pareto(0.8, size=3000), np.zeros(50)])  # many capped rows
    for m in [1.0, 30.0, 700.0, 2999.0]:
        rho = solve_rho(s, m)
        # independent check: bisection on the monotone function sum(min(1, rho s))
        lo, hi = 0.0, 1e12
        for _ in range(300):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.minimum(1, mid * s).sum() < m else (lo, mid)
        assert rho == pytest.approx(lo, rel=1e-9)
    assert solve_rho(s, 3050.0) == np.inf  # more than the rows with positive importance


def test_loss_based_probabilities_proportional_to_loss(rng):
    raw = rng.normal(size=300)
    label = (rng.random(300) < 0.5).astype(float)
    loss = BinaryLogloss()
    per_row = loss.loss(raw, Target(label=label))
    p = LossBased(rho=0.5).probabilities_from_loss(per_row)
    np.testing.assert_allclose(p, np.minimum(1.0, 0.5 * np.log1p(np.exp(-(2 * label - 1) * raw))), rtol=1e-12)
    state = _state(np.zeros(300), np.ones(300), raw=raw, label=label)
    sample = LossBased(rho=0.5).sample(state, np.random.default_rng(0))
    np.testing.assert_allclose(LossBased(rho=0.5).probabilities_from_state(state), p)
    np.testing.assert_array_equal(sample.hess, 1.0 / p[sample.indices])  # the draw used those p


# ------------------------------------------------------------------ unbiasedness


@pytest.mark.parametrize(
    "sampler",
    [FirstOrder(rho=0.8), SecondOrder(rho=1.5, anchor_lag=None), MVS(rho=0.6, reg=1.0), Uniform(0.3)],
    ids=["first_order", "second_order", "mvs", "uniform"],
)
def test_fitted_gradient_is_unbiased(rng, sampler):
    grad, hess = _grads(rng, n=200)
    state = _state(grad, hess)
    reps = 4000
    mean_g, mean_h = _average_fit(sampler, state, reps)
    p = sampler.probabilities_from_state(state) if isinstance(sampler, ProbabilitySampler) else np.full(200, 0.3)
    # Var of g q / p is g^2 (1 - p) / p: allow 5 standard errors per row
    se_g = np.abs(grad) * np.sqrt((1 - p) / p / reps)
    se_h = np.abs(hess) * np.sqrt((1 - p) / p / reps)
    assert np.all(np.abs(mean_g - grad) <= 5 * se_g + 1e-12)
    assert np.all(np.abs(mean_h - hess) <= 5 * se_h + 1e-12)
    # and a biased estimator (no 1/p) would fail the same check
    assert np.any(np.abs(mean_g * p - grad) > 5 * se_g + 1e-12) or np.all(p == 1)


def _average_fit(sampler, state, reps):
    """Mean over ``reps`` seeds of each row's fitted (g, h), 0 when not drawn."""
    total_g = np.zeros(state.shape)
    total_h = np.zeros(state.shape)
    for seed in range(reps):
        sample = sampler.sample(state, np.random.default_rng(seed))
        total_g[sample.indices] += sample.grad
        total_h[sample.indices] += sample.hess
    return total_g / reps, total_h / reps


class _SqrtGradient(ProbabilitySampler):
    def importance(self, grad, hess):
        return np.sqrt(np.abs(grad))


@pytest.mark.parametrize("sampler", [LossBased(rate=0.3), MVS(rate=0.3), _SqrtGradient(rate=0.3)],
                         ids=["loss_based", "mvs_auto", "user"])
def test_float32_states_are_unbiased_too(rng, sampler):
    n, reps = 150, 3000
    raw = rng.normal(scale=2.0, size=n)
    label = (rng.random(n) < 0.4).astype(float)
    g, h = np.empty(n, np.float32), np.empty(n, np.float32)  # the engine's buffers
    BinaryLogloss().compute_gradients(raw, Target(label=label), g, h)
    state = _state(g, h, raw=raw, label=label)
    mean_g, _ = _average_fit(sampler, state, reps)
    p = sampler.probabilities_from_state(state)
    grad = state.grad
    se = np.abs(grad) * np.sqrt((1 - p) / p / reps)
    assert np.all(np.abs(mean_g - grad) <= 5 * se + 1e-6 * np.abs(grad))  # + float32 rounding
    # the sum over rows, which every histogram bin estimates
    assert abs(mean_g.sum() - grad.sum()) <= 5 * np.sqrt(np.sum(grad**2 * (1 - p) / p) / reps)
    assert np.any(p < 1)


def test_regularised_second_order_is_unbiased_for_its_gradient(rng):
    grad, hess = _grads(rng, n=150)
    anchor = rng.normal(size=150)
    leaves = rng.integers(0, 7, size=150)
    history = GradientHistory(maxlen=2)
    history.push_gradient(anchor)
    history.push_gradient(rng.normal(size=150))
    history.leaves = leaves
    sampler = SecondOrder(rho=2.0, eta=0.5, anchor_lag=2)
    state = _state(grad, hess, history=history)
    target = regularised_gradient(grad, anchor, leaves, 0.5)
    reps = 3000
    mean_g, _ = _average_fit(sampler, state, reps)
    p = sampler.probabilities_from_state(state)
    se = np.abs(target) * np.sqrt((1 - p) / p / reps)
    assert np.all(np.abs(mean_g - target) <= 5 * se + 1e-12)


# ------------------------------------------------------------------ SecondOrder regulariser


def test_regularised_gradient_matches_independent_computation():
    grad = np.array([0.5, -1.0, 0.25, 2.0, -0.75, 1.5])
    anchor = np.array([0.4, -0.8, 0.1, 1.0, -1.0, 0.5])  # l'(y~) from iteration t - lag
    leaves = np.array([0, 1, 0, 2, 1, 0])
    eta = 0.7
    expected = []
    for i in range(6):
        members = [k for k in range(6) if leaves[k] == leaves[i]]
        leaf_mean = sum(anchor[k] for k in members) / len(members)
        expected.append(grad[i] - anchor[i] + eta * leaf_mean)
    np.testing.assert_allclose(regularised_gradient(grad, anchor, leaves, eta), expected, rtol=1e-15)

    history = GradientHistory(maxlen=2)
    history.push_gradient(anchor)           # t - 2
    history.push_gradient(np.full(6, 9.0))  # t - 1 (must not be used with anchor_lag=2)
    history.leaves = leaves
    hess = np.full(6, 10.0)  # rho * h >= 1: every row drawn with p = 1
    s = SecondOrder(rho=1.0, eta=eta, anchor_lag=2).sample(_state(grad, hess, history=history), np.random.default_rng(0))
    np.testing.assert_array_equal(s.indices, np.arange(6))
    np.testing.assert_allclose(s.grad, expected, rtol=1e-15)


def test_second_order_falls_back_without_history(rng):
    grad, hess = _grads(rng, n=50)
    hess = hess + 5.0
    s = SecondOrder(rho=1.0, anchor_lag=2).sample(_state(grad, hess), np.random.default_rng(0))
    np.testing.assert_array_equal(s.grad, grad)


# ------------------------------------------------------------------ other samplers


def test_weight_trimming_drops_smallest_weights_up_to_alpha(rng):
    grad, hess = _grads(rng, n=1000)
    s = WeightTrimming(alpha=0.1).sample(_state(grad, hess), np.random.default_rng(0))
    dropped = np.setdiff1d(np.arange(1000), s.indices)
    assert hess[dropped].sum() <= 0.1 * hess.sum()
    assert hess[dropped].max() <= hess[s.indices].min()
    # maximal: dropping the next-smallest kept row would exceed alpha
    assert hess[dropped].sum() + hess[s.indices].min() > 0.1 * hess.sum()
    np.testing.assert_array_equal(s.grad, grad[s.indices])  # no reweighting


def test_full_and_uniform_one_take_every_row_unweighted(rng):
    grad, hess = _grads(rng, n=100)
    for sampler in (Full(), Uniform(1.0)):
        s = sampler.sample(_state(grad, hess), np.random.default_rng(0))
        np.testing.assert_array_equal(s.indices, np.arange(100))
        np.testing.assert_array_equal(s.grad, grad)
        np.testing.assert_array_equal(s.hess, hess)


def test_sample_is_never_empty():
    grad = np.full(3, 1e-9)
    for seed in range(50):
        s = FirstOrder(rho=1e-3).sample(_state(grad, np.ones(3)), np.random.default_rng(seed))
        assert s.size >= 1


def test_same_rng_same_sample(rng):
    grad, hess = _grads(rng)
    a = FirstOrder(rate=0.2).sample(_state(grad, hess), np.random.default_rng(7))
    b = FirstOrder(rate=0.2).sample(_state(grad, hess), np.random.default_rng(7))
    np.testing.assert_array_equal(a.indices, b.indices)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("kwargs, match", [
    ({"rate": 0.0}, "rate"), ({"rate": 1.5}, "rate"), ({"rate": -0.1}, "rate"),
    ({"rho": 0.0}, "rho"), ({"rho": -1.0}, "rho"), ({"rate": 0.1, "rho": 1.0}, "rate or rho"),
])
@pytest.mark.parametrize("cls", [FirstOrder, SecondOrder, MVS, LossBased])
def test_bad_rate_or_rho(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_bad_second_order_params():
    with pytest.raises(ValueError, match="eta"):
        SecondOrder(eta=-0.1)
    with pytest.raises(ValueError, match="anchor_lag"):
        SecondOrder(anchor_lag=0)
    with pytest.raises(TypeError, match="anchor_lag"):
        SecondOrder(anchor_lag=1.5)
    with pytest.raises(ValueError, match="rate"):
        Uniform(0.0)
    with pytest.raises(ValueError, match="alpha"):
        WeightTrimming(alpha=1.0)
    with pytest.raises(TypeError, match="rate"):
        Uniform("0.1")


def test_default_rate_is_point_one():
    assert FirstOrder().rate == 0.1 and SecondOrder().rate == 0.1 and MVS().rate == 0.1


def test_make_sampler_names():
    assert isinstance(make_sampler("first_order", rate=0.2), FirstOrder)
    assert isinstance(make_sampler("FirstOrder"), FirstOrder)
    assert isinstance(make_sampler("mvs"), MVS)
    assert isinstance(make_sampler(None), Auto)  # sampler=None means sampler="auto"
    assert isinstance(make_sampler("full"), Full)
    with pytest.raises(ValueError, match="accepted"):
        make_sampler("goss")
    with pytest.raises(TypeError, match="sampler"):
        make_sampler(3)


@pytest.mark.parametrize("bad", [-0.5, np.nan, np.inf])
def test_user_importance_must_be_finite_and_non_negative(bad):
    from smart_lgbm.samplers import ProbabilitySampler

    class Custom(ProbabilitySampler):
        def importance(self, grad, hess):
            out = np.abs(grad)
            out[3] = bad
            return out

    g = np.linspace(-1.0, 1.0, 20)
    with pytest.raises(ValueError, match="finite and non-negative"):
        Custom(rate=0.5).probabilities(g, np.ones_like(g))


def test_solve_rho_with_zero_importances_hits_the_rate(rng):
    s = np.abs(rng.standard_t(2, size=2000))
    s[::3] = 0.0
    for rate in (0.05, 0.3, 0.6):
        rho = solve_rho(s, rate * s.size)
        assert abs(np.minimum(1.0, rho * s).sum() / (rate * s.size) - 1.0) < 1e-9
