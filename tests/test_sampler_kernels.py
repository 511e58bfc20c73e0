"""Compiled samplers: rate solve, counter-based draw, thread independence, trimming, input checks."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from smart_lgbm import MVS, FirstOrder, Full, LossBased, ProbabilitySampler, SecondOrder, Uniform, WeightTrimming
from smart_lgbm.losses import BinaryLogloss, SquaredError, Target
from smart_lgbm.samplers import GradientHistory, SamplingState, regularised_gradient, solve_rho
from smart_lgbm.samplers import buffers
from smart_lgbm.samplers import _draw_kernels as drk
from smart_lgbm.samplers import _importance_kernels as imk
from smart_lgbm._numba import kernel_constants as kc
from smart_lgbm.samplers import rate_solve
from smart_lgbm.samplers import _rate_solve_kernels as rsk
from smart_lgbm.samplers import draw as sampler_draw


def _state(grad, hess, raw=None, history=None, loss=None, label=None, iteration=3):
    n = grad.shape[0]
    return SamplingState(
        iteration=iteration, grad=grad, hess=hess, raw=np.zeros(grad.shape) if raw is None else raw,
        loss=loss or BinaryLogloss(), target=Target(label=np.zeros(n) if label is None else label),
        history=history or GradientHistory(),
    )


def _grads32(rng, n, k=None):
    shape = (n,) if k is None else (n, k)
    grad = rng.standard_t(1.5, size=shape).astype(np.float32)  # heavy tails: many rows capped at p = 1
    hess = (rng.gamma(0.3, size=shape) + 1e-4).astype(np.float32)
    return grad, hess


class Scores(ProbabilitySampler):
    """A user sampler whose importance is whatever ``fn(grad)`` returns."""

    def __init__(self, fn, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def importance(self, grad, hess):
        return self.fn(grad)


def _splitmix_uniforms(key: int, n: int) -> np.ndarray:
    """The documented generator, written independently with numpy's wrapping uint64 arithmetic."""
    z = np.uint64(key) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


PROBABILITY_SAMPLERS = {
    "first_order": lambda **kw: FirstOrder(**kw),
    "second_order": lambda **kw: SecondOrder(**kw),
    "mvs_auto": lambda **kw: MVS(**kw),
    "mvs_reg": lambda **kw: MVS(reg=0.5, **kw),
    "loss_based": lambda **kw: LossBased(**kw),
    "user": lambda **kw: Scores(lambda g: np.abs(g) ** 0.5, **kw),
}


def _loss_state(rng, n, k=None):
    """A float32 state from a real loss (LossBased needs raw scores and labels)."""
    raw = rng.normal(scale=2.0, size=n)
    label = (rng.random(n) < 0.4).astype(float)
    g = np.empty(n, np.float32)
    h = np.empty(n, np.float32)
    loss = BinaryLogloss()
    loss.compute_gradients(raw, Target(label=label), g, h)
    return _state(g, h, raw=raw, label=label, loss=loss)


# ------------------------------------------------------------------ the draw itself


def test_uniform_draw_is_splitmix_of_the_key_from_rng(rng):
    g, h = _grads32(rng, 5000)
    sample = Uniform(0.3).sample(_state(g, h), np.random.default_rng(5))
    key = np.random.default_rng(5).bit_generator.random_raw()
    u = _splitmix_uniforms(key, 5000)
    np.testing.assert_array_equal(sample.indices, np.flatnonzero(u < 0.3))
    assert sample.indices.dtype == np.int32 and sample.grad.dtype == np.float32
    np.testing.assert_array_equal(sample.grad, (g[sample.indices].astype(float) * (1.0 / 0.3)).astype(np.float32))


@pytest.mark.parametrize("name", sorted(PROBABILITY_SAMPLERS))
def test_probability_draw_uses_its_p_and_reweights_by_it(rng, name):
    sampler = PROBABILITY_SAMPLERS[name](rate=0.2)
    state = _loss_state(rng, 6000)
    seed_rng = np.random.default_rng(11)
    sample = sampler.sample(state, seed_rng)
    p = sampler.probabilities_from_state(state)
    u = _splitmix_uniforms(np.random.default_rng(11).bit_generator.random_raw(), 6000)
    np.testing.assert_array_equal(sample.indices, np.flatnonzero(u < p))
    inv = 1.0 / p[sample.indices]
    np.testing.assert_array_equal(sample.grad, (state.grad32[sample.indices] * inv).astype(np.float32))
    np.testing.assert_array_equal(sample.hess, (state.hess32[sample.indices] * inv).astype(np.float32))
    assert abs(p.sum() - 0.2 * 6000) <= 1e-9 * 6000


def test_same_key_same_sample_other_key_other_sample(rng):
    g, h = _grads32(rng, 20_000)
    a = MVS(rate=0.1).sample(_state(g, h), np.random.default_rng(3))
    b = MVS(rate=0.1).sample(_state(g, h), np.random.default_rng(3))
    c = MVS(rate=0.1).sample(_state(g, h), np.random.default_rng(4))
    for x, y in ((a.indices, b.indices), (a.grad, b.grad), (a.hess, b.hess)):
        assert x.tobytes() == y.tobytes()
    assert not np.array_equal(a.indices, c.indices)


def test_empty_draw_becomes_the_row_closest_to_being_drawn():
    g = np.array([1e-9, 3e-9, 2e-9, 0.0], dtype=np.float32)
    h = np.ones(4, dtype=np.float32)
    sampler = FirstOrder(rho=1e-3)  # p ~ 1e-12: every draw is empty
    for seed in range(30):
        s = sampler.sample(_state(g, h), np.random.default_rng(seed))
        p = sampler.probabilities_from_state(_state(g, h))
        u = _splitmix_uniforms(np.random.default_rng(seed).bit_generator.random_raw(), 4)
        with np.errstate(divide="ignore"):
            expected = int(np.argmin(np.where(p > 0, u / p, np.inf)))
        np.testing.assert_array_equal(s.indices, [expected])
        assert s.grad[0] == np.float32(g[expected] * (1.0 / p[expected]))


# ------------------------------------------------------------------ rates


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("name", sorted(PROBABILITY_SAMPLERS))
def test_rate_is_hit(rng, name, rate):
    state = _loss_state(rng, 20_000)
    p = PROBABILITY_SAMPLERS[name](rate=rate).probabilities_from_state(state)
    assert abs(p.sum() - rate * 20_000) <= 1e-9 * rate * 20_000
    assert p.max() <= 1.0 and p.min() >= 0.0


def test_multiclass_rates_and_shapes(rng):
    g, h = _grads32(rng, 8000, k=3)
    for sampler in (FirstOrder(rate=0.2), SecondOrder(rate=0.2), MVS(rate=0.2)):
        state = _state(g, h, raw=np.zeros((8000, 3)))
        p = sampler.probabilities_from_state(state)
        assert abs(p.sum() - 1600) <= 1e-9 * 1600
        s = sampler.sample(state, np.random.default_rng(0))
        assert s.grad.shape == (s.size, 3) and s.grad.dtype == np.float32
        np.testing.assert_array_equal(s.hess, (h[s.indices] * (1.0 / p[s.indices])[:, None]).astype(np.float32))


SPECTRA = {
    "pareto0.5": lambda r, n: r.pareto(0.5, n),
    "lognormal6": lambda r, n: r.lognormal(0.0, 6.0, n),
    "geometric": lambda r, n: 0.999 ** np.arange(n, dtype=float),
    "two_levels": lambda r, n: np.where(np.arange(n) % 97 == 0, 50.0, 1.0),
    "ties_with_zeros": lambda r, n: r.integers(0, 4, n).astype(float),
    "tiny_tail": lambda r, n: np.where(np.arange(n) < 10, 1.0, 1e-30),
}


@pytest.mark.parametrize("histogram", [True, False], ids=["histogram", "plain_rounds"])
@pytest.mark.parametrize("spectrum", sorted(SPECTRA))
def test_solve_rho_hits_the_target_on_hard_spectra(spectrum, histogram, monkeypatch):
    # the solve brackets with a histogram from _HISTOGRAM_ROWS rows on, and goes straight to
    # its capping rounds below: both paths must hit the target exactly

    monkeypatch.setattr(rate_solve, "_HISTOGRAM_ROWS", 0 if histogram else 1 << 40)
    s = SPECTRA[spectrum](np.random.default_rng(0), 30_000)
    n_pos = int(np.count_nonzero(s))
    for frac in (0.001, 0.05, 0.3, 0.8):
        m = frac * n_pos
        rho = solve_rho(s, m)
        assert abs(np.minimum(1.0, rho * s).sum() - m) <= 1e-9 * m
        # the sort-based fallback (no Newton rounds allowed) finds the same rho
        assert solve_rho(s, m, max_rounds=0) == pytest.approx(rho, rel=1e-12)


@pytest.mark.parametrize("spectrum", sorted(SPECTRA))
def test_a_starting_guess_gives_the_same_rho_bit_for_bit(spectrum):
    # the sampler starts each solve from the previous iteration's rho: whatever the guess
    # (near, above, far above, below the root, out of range), the answer is the cold solve's

    s = SPECTRA[spectrum](np.random.default_rng(1), 20_000)
    for rate in (0.01, 0.1, 0.3, 0.8):
        imp = rate_solve.buffer_importance(s, s.shape[0], "test")
        cold = rate_solve.solve(imp, rate, None, "test")
        assert cold.solved_rho is not None or cold.rho == np.inf
        for factor in (1.0, 1.0001, 0.97, 1.3, 2.0, 1e3, 1e300, 1e-5):
            warm = rate_solve.solve(imp, rate, None, "test", start=(cold.solved_rho or 1.0) * factor)
            assert (warm.c1, warm.c2, warm.rho) == (cold.c1, cold.c2, cold.rho), (rate, factor)


#: Spectra of the guess test at histogram sizes: SPECTRA's, and two of gradients' shape.
GUESS_SPECTRA = {**SPECTRA, "gradients_t1.5": lambda r, n: np.abs(r.standard_t(1.5, n)),
                 "gradients_normal": lambda r, n: np.abs(r.normal(size=n))}
#: Those without ties, where a guess near the root must settle the solve in two passes.
CONTINUOUS = {"pareto0.5", "lognormal6", "gradients_t1.5", "gradients_normal"}


def _importances_of(spectrum, rng):
    """One spectrum as each kind of importance the solve sees: a user's float64 buffer,
    FirstOrder's ``|g|`` and SecondOrder's ``h`` over float32 rows, MVS over float32 ``g, h``."""

    n = spectrum.shape[0]
    s32 = spectrum.astype(np.float32)
    g = buffers.as_rows(s32 * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32))
    h = buffers.as_rows((rng.gamma(0.5, size=n) + 1e-3).astype(np.float32))
    return {"buffer": rate_solve.buffer_importance(spectrum, n, "test"),
            "first_order": rate_solve.Importance(kc.FIRST, n, g, h),
            "second_order": rate_solve.Importance(kc.SECOND, n, g, buffers.as_rows(s32)),
            "mvs": rate_solve.Importance(kc.MVS, n, g, h, lam=rate_solve.mvs_lambda(g, h))}


@pytest.mark.parametrize("spectrum", sorted(GUESS_SPECTRA))
def test_a_guess_at_histogram_sizes_gives_the_cold_solves_rho_bit_for_bit(spectrum, monkeypatch):
    # from _HISTOGRAM_ROWS rows on, the previous iteration's rho is tried first
    # (rate_solve._settle_from_guess: a window pass and one capping round instead of the
    # histogram and its rounds); whatever the guess, the importances' drift since it, the
    # kind and the rate, the answer must be the cold solve's double

    monkeypatch.setattr(rate_solve, "_HISTOGRAM_ROWS", 0)  # the histogram path at a test's size
    settled, scanned = [], []
    real = rate_solve._settle_from_guess

    def spy(*args):
        result = real(*args)
        settled.append(result is not None)
        scanned.append(args[-1] is not None)  # the window came from MVS's scan
        return result

    monkeypatch.setattr(rate_solve, "_settle_from_guess", spy)
    rng = np.random.default_rng(4)
    n = 3 * kc.BLOCK + 4321  # four blocks, the last one partial
    base = GUESS_SPECTRA[spectrum](rng, n)
    for drift in (0.0, 1e-3, 1e-2):  # how far the importances moved since the guess's iteration
        now = np.abs(base * (1.0 + drift * rng.standard_normal(n))) if drift else base
        before, after = _importances_of(base, np.random.default_rng(9)), _importances_of(now, np.random.default_rng(9))
        for name, imp in after.items():
            for rate in (0.02, 0.2, 0.5, 0.9):
                cold = rate_solve.solve(imp, rate, None, "test")
                guesses = [rate_solve.solve(before[name], rate, None, "test").solved_rho]
                if drift == 0.0 and cold.solved_rho is not None:
                    guesses += [cold.solved_rho * f for f in (1.0001, 0.999, 0.97, 1.04, 2.0, 1e-3, 1e300)]
                for guess in guesses:
                    warm = rate_solve.solve(imp, rate, None, "test", start=guess)
                    assert (warm.c1, warm.c2, warm.rho) == (cold.c1, cold.c2, cold.rho), (name, rate, drift, guess)
                    if name == "mvs":  # the sampler's path: the scan stores the importances (and gathers
                        # the window when the previous solve, in the same workspace, capped rows)
                        workspace = buffers.Workspace()
                        rate_solve.solve(before[name], rate, None, "test", workspace=workspace)
                        stored = rate_solve.solve(imp, rate, None, "test", start=guess, workspace=workspace)
                        assert (stored.c1, stored.c2, stored.rho) == (cold.c1, cold.c2, cold.rho)
    assert settled  # (a spectrum with capped rows at some rate)
    if spectrum in CONTINUOUS:  # without ties a guess near the root settles the solve
        assert sum(settled) >= len(settled) // 2, (sum(settled), len(settled))
        assert any(s and w for s, w in zip(settled, scanned, strict=True))


def _rounds_from_python(imp, m, start, max_rounds, histogram):
    """The rate solve as it ran before ``_solve_kernels.cap_rounds``: Newton's capping rounds
    as one ``cap_round`` call each from a Python loop (the reference the compiled rounds
    must match bit for bit); ``histogram``: start from the histogram's bracket instead."""
    import math


    smax, n_pos, exponent, total = rate_solve._scan(imp, "test", True)
    c1, c2 = imk.pow2_pair(-exponent)
    if m >= n_pos:
        return c1, c2, math.inf
    rho = m / total
    if rho * ((smax * c1) * c2) < 1.0:
        return c1, c2, rho
    capped = 0
    nb = rate_solve.n_blocks(imp.n)
    blocks = np.empty(nb, np.int64), np.empty(nb), np.empty(nb), np.empty(nb)
    guess = rate_solve.scaled_start(start, exponent)
    if histogram:
        if guess is not None:
            settled = rate_solve._settle_from_guess(imp, m, c1, c2, max(guess, rho), max_rounds, blocks, None)
            if settled is not None:
                return c1, c2, settled
        count, sums = rsk.scaled_histogram(*imp.args(), c1, c2)
        rho, capped, _, exact = rsk.bracket(count, sums, m)
        if exact:
            return c1, c2, rho
    elif guess is not None and guess > rho:
        now_capped, free_sum, _, _ = rsk.cap_round(*imp.args(), c1, c2, guess, *blocks)
        if now_capped < m and free_sum > 0.0:
            capped = now_capped
            rho = (m - capped) / free_sum
    for _ in range(max_rounds):
        if not math.isfinite(rho) or rho <= 0.0:
            break
        now_capped, free_sum, _, _ = rsk.cap_round(*imp.args(), c1, c2, rho, *blocks)
        if now_capped == capped or now_capped >= m:
            return c1, c2, rho
        if free_sum <= 0.0:
            break
        capped = now_capped
        rho = (m - capped) / free_sum
    return c1, c2, rsk.sorted_rho(*imp.args(), c1, c2, m)


#: Spectra of the compiled rounds' test: SPECTRA's, plus ties everywhere, a few large rows
#: over many equal ones, and one positive row among zeros.
ROUND_SPECTRA = {**SPECTRA, "all_equal": lambda r, n: np.full(n, 3.0),
                 "few_large": lambda r, n: np.where(np.arange(n) % 1000 == 7, 1e6, 1.0 + (np.arange(n) % 3)),
                 "one_positive": lambda r, n: np.where(np.arange(n) == n // 2, 2.5, 0.0),
                 "gradients_t1.5": lambda r, n: np.abs(r.standard_t(1.5, n))}


@pytest.mark.parametrize("histogram", [False, True], ids=["plain_rounds", "histogram"])
@pytest.mark.parametrize("spectrum", sorted(ROUND_SPECTRA))
def test_compiled_capping_rounds_give_the_python_loops_rho_bit_for_bit(spectrum, histogram, monkeypatch):
    # _solve_kernels.cap_rounds runs every Newton round (from the previous rho, the cold start
    # or the histogram's bracket) in one compiled call, counting before it sums; whatever the
    # spectrum, size, kind, rate, guess or round limit, the answer is the Python loop's double

    monkeypatch.setattr(rate_solve, "_HISTOGRAM_ROWS", 0 if histogram else 1 << 40)
    rng = np.random.default_rng(11)
    for n in (1, 7, kc.BLOCK + 100, 2 * kc.BLOCK + 555):  # (blocks paired: a partial second, an odd one)
        base = ROUND_SPECTRA[spectrum](rng, n)
        moved = np.abs(base * (1.0 + 1e-2 * rng.standard_normal(n)))  # the next iteration's importances
        for name, imp in _importances_of(moved, np.random.default_rng(3)).items():
            smax, n_pos, exponent, total = rate_solve._scan(imp, "test", True)
            if n_pos == 0:
                continue
            for rate in (0.01, 0.3, 0.7):
                m = rate * n
                cold = rate_solve._rate_rho(imp, m, n_pos, smax, exponent, total, 64)
                assert cold == _rounds_from_python(imp, m, None, 64, histogram), (name, n, rate)
                previous = rate_solve.solve(_importances_of(base, np.random.default_rng(3))[name], rate, None,
                                          "test").solved_rho
                root = cold[2] * 2.0 ** -exponent if np.isfinite(cold[2]) else 1.0
                for start in (previous, root, root * 1.0001, root * 0.97, root * 3.0, root * 1e300, root * 1e-300):
                    for max_rounds in (64, 1, 0):
                        got = rate_solve._rate_rho(imp, m, n_pos, smax, exponent, total, max_rounds, start)
                        want = _rounds_from_python(imp, m, start, max_rounds, histogram)
                        assert got == want, (name, n, rate, start, max_rounds)


def test_sampler_starts_from_the_previous_iteration_only(rng, monkeypatch):
    # same samples as a fresh sampler's, and the start is used only for iteration t + 1

    starts = []
    solve = rate_solve.solve
    monkeypatch.setattr(rate_solve, "solve", lambda *a, start=None, **k: starts.append(start) or solve(*a, **k))
    sampler, fresh = FirstOrder(rate=0.2), FirstOrder(rate=0.2)
    g = rng.normal(size=5000).astype(np.float32)
    h = np.ones_like(g)
    for it in (0, 1, 2, 5):
        a = sampler.sample(_state(g * (1 + it / 10), h, iteration=it), np.random.default_rng(it))
        b = fresh.sample(_state(g * (1 + it / 10), h, iteration=it), np.random.default_rng(it))
        fresh = FirstOrder(rate=0.2)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.grad, b.grad)
    assert [x is None for x in starts[::2]] == [True, False, False, True]


def test_rate_solve_is_scale_free(rng):
    s = rng.integers(0, 1024, 5000).astype(float)  # exact after any power-of-two scaling
    sampler = Scores(lambda g: g, rate=0.25)
    p = sampler.probabilities_from_importance(s)
    for scale in (2.0**-1060, 2.0**-1000, 2.0**1000):  # subnormal, tiny, huge: same p bit for bit
        np.testing.assert_array_equal(sampler.probabilities_from_importance(s * scale), p)
    cont = np.minimum(rng.pareto(1.0, 5000) + 0.01, 150.0)  # times 1e306 stays finite
    p = sampler.probabilities_from_importance(cont)
    huge = sampler.probabilities_from_importance(cont * 1e306)  # the plain sum overflows
    np.testing.assert_allclose(huge, p, rtol=1e-12)
    rounded = cont * 1e-320  # subnormal: the inputs themselves keep only a few significant bits
    tiny = sampler.probabilities_from_importance(rounded)
    np.testing.assert_array_equal(tiny, sampler.probabilities_from_importance(rounded * 2.0**1000))
    np.testing.assert_allclose(tiny, p, rtol=0.05)
    for q in (huge, tiny):
        assert abs(q.sum() - 1250) <= 1e-9 * 1250
    assert solve_rho(cont * 1e306, 1250.0) * 1e306 == pytest.approx(solve_rho(cont, 1250.0), rel=1e-12)
    # a draw over such importances keeps about the rate (it used to take every row)
    g = cont.astype(np.float32)
    s = Scores(lambda grad: np.asarray(grad, dtype=float) * 1e-320, rate=0.25).sample(
        _state(g, np.ones_like(g)), np.random.default_rng(0))
    assert 1100 < s.size < 1400


def test_importances_wider_than_the_float_range_do_not_break_the_solve():
    # relative to 1e300, 1e-300 and 5e-324 underflow to 0 once scaled: they get p = 0
    s = np.array([1e300, 1.0, 1e-300, 5e-324, 0.0])
    p = Scores(lambda g: g, rate=0.5).probabilities_from_importance(s)
    np.testing.assert_array_equal(p, [1.0, 1.0, 0.0, 0.0, 0.0])
    p = Scores(lambda g: g, rate=0.2).probabilities_from_importance(s)
    assert p[0] == 1.0 and p.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("num_class", [1, 3])
def test_mvs_scan_in_one_pass_gives_the_scaled_scans_bits(num_class):
    # MVS over float32 g, h is summed in the scan's first pass (rate_solve._sums_plainly): the
    # plain sum must be the per-block scaled sum's exact double, from the smallest float32
    # to the largest, at every lambda up to the bound (and the bound must hold past it too)
    from smart_lgbm.samplers.rate_solve import _MVS_PLAIN_LAMBDA, Importance, _sums_plainly, scan_blocks
    from smart_lgbm._numba.kernel_constants import KIND_MARKERS, MVS
    from smart_lgbm.samplers.buffers import as_rows

    rng = np.random.default_rng(11)
    n = 3 * 4096 + 77
    octaves = rng.integers(-149, 128, (n, num_class))
    g = (rng.uniform(0.5, 1.0, (n, num_class)) * np.exp2(octaves)).astype(np.float32)
    g[rng.random((n, num_class)) < 0.3] = 0.0  # rows whose importance is lambda * h alone
    g *= np.where(rng.random((n, num_class)) < 0.5, -1, 1).astype(np.float32)
    h = (rng.uniform(0.5, 1.0, (n, num_class)) * np.exp2(rng.integers(-149, 128, (n, num_class)))).astype(np.float32)
    h[:7] = np.float32(2.0**-149)  # the smallest subnormal float32
    g[7:9] = np.float32(np.finfo(np.float32).max)
    gg, hh = as_rows(g), as_rows(h)
    for lam in (0.0, 5e-324, 1e-300, 0.7, 2.0**100, _MVS_PLAIN_LAMBDA):
        imp = Importance(MVS, n, gg, hh, lam=lam)
        assert _sums_plainly(imp)
        args = (KIND_MARKERS[MVS], n, gg, hh, imp.buf, lam, True)
        plain = rsk.scan(*args, True, *scan_blocks(n))
        scaled = rsk.scan(*args, False, *scan_blocks(n))
        assert plain[2] == 0 and np.asarray(plain).tobytes() == np.asarray(scaled).tobytes(), lam
    assert not _sums_plainly(Importance(MVS, n, gg, hh, lam=_MVS_PLAIN_LAMBDA * 2))
    assert not _sums_plainly(Importance(MVS, n, gg.astype(np.float64), hh.astype(np.float64), lam=0.7))


def _scan_reference(values):
    """Per block of ``BLOCK`` rows: (largest, positives, bad, plain sum in row order) of
    the importances, written row by row in Python, scan_row's rule."""
    from smart_lgbm._numba.kernel_constants import BLOCK

    out: list[tuple[float, int, int, float]] = []
    for lo in range(0, len(values), BLOCK):
        mx, pos, bad, acc = 0.0, 0, 0, 0.0
        for s in values[lo:lo + BLOCK].tolist():
            ok = s > 0.0 and s != np.inf
            mx = max(mx, s if ok else 0.0)
            pos += ok
            bad += (not ok) and s != 0.0
            acc += s if ok else 0.0
        out.append((mx, pos, bad, acc))
    return out


def test_block_scans_take_the_fast_loop_only_where_it_gives_scan_rows_values():
    # scan_values (MVS's stored importances, the fused fold) sums a block in one fast loop
    # and falls back to scan_row's where a NaN, infinite or negative importance (or an
    # overflowing sum) is in it: each block must give the reference's values bit for bit,
    # clean or not, through every kernel that scans (scan itself keeps scan_row's loop)
    from smart_lgbm._engine import _sweep_kernels as fk
    from smart_lgbm.samplers.rate_solve import _NO_WINDOW, buffer_importance, scan_blocks
    from smart_lgbm._numba.kernel_constants import BLOCK, FIRST, STATS_SCAN

    rng = np.random.default_rng(5)
    n = 8 * BLOCK + 123
    values = rng.gamma(0.5, size=n) * np.exp2(rng.integers(-30, 30, n))
    values[rng.random(n) < 0.1] = 0.0
    dirty = {1: np.nan, 2: np.inf, 3: -1.5, 4: -0.0, 6: -np.inf}
    for block, value in dirty.items():
        values[block * BLOCK + 17] = value
    values[5 * BLOCK:5 * BLOCK + 3] = np.finfo(np.float64).max  # finite, but the block's sum overflows
    expected = _scan_reference(values)
    got = []
    bmax, bpos, bbad, bexp, bsum = scan_blocks(n)
    imp = buffer_importance(values, n, "test")
    rsk.scan(*imp.args(), True, True, bmax, bpos, bbad, bexp, bsum)
    got.append(list(zip(bmax.tolist(), bpos.tolist(), bbad.tolist(), bsum.tolist())))
    bmax, bpos, bbad, bexp, bsum = scan_blocks(n)
    out = np.empty(n)
    rsk.scan_store(*imp.args(), True, bmax, bpos, bbad, bexp, bsum, out, *_NO_WINDOW)  # (no window gathered)
    got.append(list(zip(bmax.tolist(), bpos.tolist(), bbad.tolist(), bsum.tolist())))
    for got_blocks in got:
        assert len(got_blocks) == len(expected)
        for block, (a, b) in enumerate(zip(got_blocks, expected)):
            assert np.asarray(a).tobytes() == np.asarray(b, dtype=np.float64).tobytes() or \
                (a[1:3] == b[1:3] and np.array_equal(a, b, equal_nan=True)), (block, a, b)
    assert [e[2] for e in expected[:7]] == [0, 1, 1, 1, 0, 0, 1]  # the dirty blocks are dirty
    # the fused pass's fold over float32 gradients (|g|, FirstOrder's importance)
    with np.errstate(over="ignore"):
        g = values.astype(np.float32)  # the largest doubles become inf
    ref32 = _scan_reference(np.abs(g.astype(np.float64)))
    nb = len(ref32)
    bmax, bsum = np.zeros(nb), np.zeros(nb)
    bpos, bbad = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    fk.one_column(n, np.zeros(n), fk.L2, np.empty(0, np.int8), -g.astype(np.float64), np.empty(0), 0.0, grad, hess,
                  STATS_SCAN, FIRST, bmax, bpos, bbad, bsum, np.zeros((nb, 2)), numba.get_num_threads(), fk.fast_exp())
    assert np.array_equal(grad, g.astype(np.float64).astype(np.float32), equal_nan=True)
    fused = list(zip(bmax.tolist(), bpos.tolist(), bbad.tolist(), bsum.tolist()))
    for block, (a, b) in enumerate(zip(fused, ref32)):
        assert a[1:3] == b[1:3] and np.array_equal(a, b, equal_nan=True), (block, a, b)


@pytest.mark.parametrize("n, rate", [(5000, 0.2), ((1 << 17) + 5, 0.4)], ids=["rounds", "histogram"])
def test_mvs_stored_importances_give_the_recomputed_draw(n, rate):
    # with a workspace MVS's scan stores its square roots and the later passes read them:
    # the same rho, probabilities and sample, bit for bit, as recomputing them each pass

    rng = np.random.default_rng(3)
    g, h = _grads32(rng, n)
    g, h = buffers.as_rows(g), buffers.as_rows(h)
    imp = rate_solve.Importance(kc.MVS, n, g, h, lam=rate_solve.mvs_lambda(g, h))
    workspace = buffers.Workspace()
    plain = rate_solve.solve(imp, rate, None, "MVS")
    stored = rate_solve.solve(imp, rate, None, "MVS", workspace=workspace)
    assert stored.importance.kind == kc.BUFFER and plain.importance.kind == kc.MVS
    assert (stored.c1, stored.c2, stored.rho) == (plain.c1, plain.c2, plain.rho)
    np.testing.assert_array_equal(rate_solve.probabilities(stored), rate_solve.probabilities(plain))
    assert 0 < (rate_solve.probabilities(plain) == 1.0).sum() < n  # some rows capped: the solve's rounds ran
    draws = [sampler_draw.draw_sample(sol, h, sampler_draw.Fit(g), np.random.default_rng(5), buffers.Workspace(), True)
             for sol in (plain, stored)]
    for a, b in zip(*draws):
        assert a.tobytes() == b.tobytes()


# ------------------------------------------------------------------ the draw kernel against its rule


def test_uniforms_integer_conversion_is_exact():
    # the kernels' uniform converts SplitMix64's 53 bits to a double by hand (it vectorises):
    # it must be the exact value at every width, the halves' edges included
    from numba import njit


    @njit
    def convert(values):
        out = np.empty(values.shape[0])
        for j in range(values.shape[0]):
            out[j] = drk.exact_double(values[j])
        return out

    rng = np.random.default_rng(0)
    edges = [b + d for b in (0, 2**31, 2**32, 2**52, 2**53 - 1) for d in (-1, 0, 1) if 0 <= b + d < 2**53]
    widths = rng.integers(0, 2**63, 4096, dtype=np.uint64) >> rng.integers(11, 64, 4096).astype(np.uint64)
    values = np.concatenate([np.array(edges, dtype=np.uint64), widths, rng.integers(0, 2**53, 4096, dtype=np.uint64)])
    got = convert(values)
    assert [float(x) for x in got] == [float(int(v)) for v in values]


def _kernel_draw(twin, imp, c1, c2, rho, key):
    """The rows a twin of ``drk.draw`` keeps, block after block, checking its counts and offsets."""
    from smart_lgbm.samplers.rate_solve import n_blocks

    n = imp[1]
    nb = n_blocks(n)
    scratch = np.full(n, -7, np.int32)
    counts = np.full(nb, -7, np.int64)
    offsets = np.full(nb, -7, np.int64)
    m = twin(*imp, c1, c2, rho, np.uint64(key), scratch, counts, offsets)
    assert offsets.tolist() == [0, *np.cumsum(counts)[:-1].tolist()] and m == counts.sum()
    return np.concatenate([scratch[b * kc.BLOCK:b * kc.BLOCK + counts[b]] for b in range(nb)])


def _edge_importances(u, rng):
    """Importances that, as ``p = min(1, s)`` (BUFFER, ``c1 = c2 = rho = 1``), span the rule's
    edges: 0 and negative (never drawn), subnormal, ``p`` equal to ``u_i`` (not drawn) and one
    double either side of it, the largest double below 1, exactly 1, above 1 and infinite (capped),
    and ordinary values."""
    n = u.shape[0]
    s = rng.random(n)
    pick = rng.integers(0, 12, n)
    edges = {0: np.zeros(n), 1: np.full(n, -0.5), 2: np.full(n, 5e-324), 3: np.full(n, 2.2e-310), 4: u,
             5: np.nextafter(u, np.inf), 6: np.nextafter(u, -np.inf), 7: np.full(n, 1.0 - 2.0**-53),
             8: np.ones(n), 9: np.full(n, 1.5), 10: np.full(n, np.inf)}
    for where, values in edges.items():
        s[pick == where] = values[pick == where]
    return s


DRAW_SIZES = [1, 50, 64, 65, 200, 2 * 16384 + 37]


@pytest.mark.parametrize("n", DRAW_SIZES)
@pytest.mark.parametrize("key", [0, 0x1234567890ABCDEF, 2**64 - 1])
def test_draw_kernel_keeps_exactly_the_rows_with_u_below_p_at_the_edges(n, key):
    # the draw's rule is u_i < p_i, u_i = SplitMix64's 53 bits * 2**-53 (written here with numpy):
    # a p equal to u_i must not draw the row, the next double up must, whatever the kernel's
    # arithmetic (an inexact uniform, a 52-bit one, or <= for < fail here)
    from smart_lgbm._numba.kernel_constants import BUFFER, KIND_MARKERS

    rng = np.random.default_rng(n + key % 1000)
    u = _splitmix_uniforms(key, n)
    s = _edge_importances(u, rng)
    expected = np.flatnonzero((s > 0) & (u < np.minimum(s, 1.0)))
    empty = np.empty((0, 1))
    imp = (KIND_MARKERS[BUFFER], n, empty, empty, s, 0.0)
    for twin in (drk.draw.serial, drk.draw.parallel):
        np.testing.assert_array_equal(_kernel_draw(twin, imp, 1.0, 1.0, 1.0, key), expected)
    # and as FirstOrder's |g| over float64 gradients of either sign
    g = np.ascontiguousarray((s * np.where(rng.random(n) < 0.5, -1.0, 1.0))[:, None])
    g[s < 0] = 0.0
    imp = (KIND_MARKERS[kc.FIRST], n, g, g, np.empty(0), 0.0)
    for twin in (drk.draw.serial, drk.draw.parallel):
        np.testing.assert_array_equal(_kernel_draw(twin, imp, 1.0, 1.0, 1.0, key), expected)


@pytest.mark.parametrize("n", DRAW_SIZES)
@pytest.mark.parametrize("kind, num_class, dtype", [
    ("FIRST", 1, np.float32), ("FIRST", 3, np.float64), ("SECOND", 1, np.float32), ("SECOND", 2, np.float64),
    ("MVS", 1, np.float32), ("MVS", 3, np.float32), ("MVS", 2, np.float64), ("CONST", 1, np.float32),
    ("BUFFER", 1, np.float64)])
def test_draw_kernel_equals_its_rule_for_every_kind(n, kind, num_class, dtype):
    # p_i from the probabilities kernel (the rate solve's rule), u_i from numpy's SplitMix64:
    # the draw keeps exactly the rows with u_i < p_i, in order, serial and parallel, at scales
    # (c1, c2, rho) that cap some rows and leave others tiny

    rng = np.random.default_rng(n)
    g = (rng.standard_t(1.5, (n, num_class)) * np.exp2(rng.integers(-60, 4, (n, num_class)))).astype(dtype)
    h = np.abs(rng.standard_t(1.5, (n, num_class))).astype(dtype)
    g[rng.random((n, num_class)) < 0.1] = 0.0
    h[rng.random((n, num_class)) < 0.1] = 0.0
    buf = np.abs(rng.standard_cauchy(n))
    buf[rng.random(n) < 0.1] = 0.0
    imp = (kc.KIND_MARKERS[getattr(kc, kind)], n, g, h, buf, 0.7)
    key = 0xD1B54A32D192ED03
    u = _splitmix_uniforms(key, n)
    for c1, c2, rho in ((0.25, 1.0, 0.3), (2.0**-1000, 2.0**-40, 2.0**1000), (1.0, 1.0, 0.0), (1.0, 1.0, 1e300)):
        p = np.empty(n)
        rsk.probabilities.serial(*imp, c1, c2, rho, p)
        expected = np.flatnonzero(u < p)
        for twin in (drk.draw.serial, drk.draw.parallel):
            np.testing.assert_array_equal(_kernel_draw(twin, imp, c1, c2, rho, key), expected)


# ------------------------------------------------------------------ zero importance


def test_zero_importance_rows_are_never_drawn(rng):
    g, h = _grads32(rng, 3000)
    g[::4] = 0.0
    for sampler in (FirstOrder(rate=0.5), FirstOrder(rho=100.0)):
        for seed in range(40):
            s = sampler.sample(_state(g, h), np.random.default_rng(seed))
            assert np.all(g[s.indices] != 0) and np.all(np.isfinite(s.grad))
    # more than the positive rows asked for: all of them, with p = 1
    p = FirstOrder(rate=0.9).probabilities_from_state(_state(g, h))
    np.testing.assert_array_equal(p, (g != 0).astype(float))


def test_all_zero_importance_falls_back_to_uniform_at_the_rate(rng):
    g = np.zeros(2000, np.float32)
    h = np.ones(2000, np.float32)
    sampler = FirstOrder(rate=0.2)
    np.testing.assert_array_equal(sampler.probabilities_from_state(_state(g, h)), np.full(2000, 0.2))
    s = sampler.sample(_state(g, h), np.random.default_rng(1))
    assert 300 < s.size < 500
    np.testing.assert_array_equal(s.hess, np.full(s.size, np.float32(1 / 0.2)))
    np.testing.assert_array_equal(FirstOrder(rho=3.0).probabilities_from_state(_state(g, h)), np.ones(2000))


# ------------------------------------------------------------------ threads


@pytest.fixture
def thread_counts():
    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("needs at least 2 numba threads")
    before = numba.get_num_threads()
    yield [1, most]
    numba.set_num_threads(before)


def _under_threads(counts, fn):
    out = []
    for k in counts:
        numba.set_num_threads(k)
        out.append(fn())
    return out


def test_samples_do_not_depend_on_the_thread_count(thread_counts):
    rng = np.random.default_rng(2)
    n = 300_000  # several blocks of every kernel
    g, h = _grads32(rng, n)
    anchor = rng.normal(size=n).astype(np.float32)
    history = GradientHistory(maxlen=1)
    history.push_gradient(anchor)
    history.leaves = rng.integers(0, 31, n).astype(np.int32)
    g3, h3 = _grads32(rng, n // 3, k=3)
    cases = [
        (FirstOrder(rate=0.1), _state(g, h)),
        (MVS(rate=0.3), _state(g, h)),
        (SecondOrder(rate=0.1, anchor_lag=1, eta=0.7), _state(g, h, history=history)),
        (Scores(lambda x: np.abs(x) ** 3, rate=0.05), _state(g, h)),
        (WeightTrimming(alpha=0.3), _state(g, h)),
        (MVS(rate=0.2), _state(g3, h3, raw=np.zeros((n // 3, 3)))),
        (WeightTrimming(alpha=0.2), _state(g3, h3, raw=np.zeros((n // 3, 3)))),
    ]
    for sampler, state in cases:
        one, many = _under_threads(thread_counts, lambda: sampler.sample(state, np.random.default_rng(9)))
        for a, b in ((one.indices, many.indices), (one.grad, many.grad), (one.hess, many.hess)):
            assert a.tobytes() == b.tobytes(), sampler
        if isinstance(sampler, ProbabilitySampler):
            p1, p2 = _under_threads(thread_counts, lambda: sampler.probabilities_from_state(state))
            assert p1.tobytes() == p2.tobytes()
    heavy = np.abs(g.astype(float)) ** 4
    r1, r2 = _under_threads(thread_counts, lambda: solve_rho(heavy, 0.05 * n))
    assert r1 == r2


# ------------------------------------------------------------------ SecondOrder's regulariser


@pytest.mark.parametrize("eta", [0.0, 0.6])
def test_regularised_draw_matches_an_independent_computation(rng, eta):
    n = 40_000
    g, h = _grads32(rng, n)
    anchor = rng.normal(size=n).astype(np.float32)
    leaves = rng.integers(0, 12, n).astype(np.int32)
    leaves[leaves == 5] = 6  # an empty leaf in the middle
    history = GradientHistory(maxlen=2)
    history.push_gradient(anchor)
    history.push_gradient(np.full(n, 9.0, np.float32))
    history.leaves = leaves
    sampler = SecondOrder(rate=0.2, eta=eta, anchor_lag=2)
    state = _state(g, h, history=history)
    s = sampler.sample(state, np.random.default_rng(0))
    p = sampler.probabilities_from_state(state)
    a = anchor.astype(float)
    sums = np.bincount(leaves, weights=a, minlength=12)
    counts = np.bincount(leaves, minlength=12)
    means = sums / np.maximum(counts, 1)
    expected = (g.astype(float) - a + eta * means[leaves])[s.indices] * (1.0 / p[s.indices])
    np.testing.assert_allclose(s.grad, expected.astype(np.float32), rtol=2e-6, atol=1e-6)
    # exactly the public regularised_gradient, reweighted and rounded once
    exact = regularised_gradient(g, anchor, leaves, eta)[s.indices] * (1.0 / p[s.indices])
    np.testing.assert_array_equal(s.grad, exact.astype(np.float32))


def test_multiclass_regulariser_uses_each_trees_leaves(rng):
    n = 3000
    g, h = _grads32(rng, n, k=3)
    h += 10.0  # every row drawn with p = 1
    anchor = rng.normal(size=(n, 3))
    leaves = rng.integers(0, 5, (n, 3))
    history = GradientHistory(maxlen=1)
    history.push_gradient(anchor)
    history.leaves = leaves
    s = SecondOrder(rho=1.0, eta=0.5, anchor_lag=1).sample(_state(g, h, history=history, raw=np.zeros((n, 3))),
                                                          np.random.default_rng(0))
    assert s.size == n
    for k in range(3):
        means = np.bincount(leaves[:, k], weights=anchor[:, k]) / np.bincount(leaves[:, k])
        expected = g[:, k] - anchor[:, k] + 0.5 * means[leaves[:, k]]
        np.testing.assert_allclose(s.grad[:, k], expected.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_bad_leaves_are_refused_naming_the_sampler(rng):
    g, h = _grads32(rng, 100)
    history = GradientHistory(maxlen=1)
    history.push_gradient(g)
    history.leaves = np.zeros(99, dtype=np.int32)
    with pytest.raises(ValueError, match=r"SecondOrder: history.leaves must be an integer array of shape \(100,\)"):
        SecondOrder(rate=0.5, anchor_lag=1).sample(_state(g, h, history=history), np.random.default_rng(0))
    history.leaves = -np.ones(100, dtype=np.int32)
    with pytest.raises(ValueError, match="non-negative"):
        SecondOrder(rate=0.5, anchor_lag=1).sample(_state(g, h, history=history), np.random.default_rng(0))


# ------------------------------------------------------------------ weight trimming


def _trim_reference(w, alpha):
    """The definition: stable sort by weight, drop the longest prefix within alpha * sum."""
    order = np.argsort(w, kind="stable")
    cumulative = np.cumsum(w[order])
    n_drop = min(int(np.searchsorted(cumulative, alpha * cumulative[-1], side="right")), w.size - 1)
    return np.sort(order[n_drop:])


@pytest.mark.parametrize("weights", [
    lambda r, n: r.gamma(0.5, size=n),                          # continuous
    lambda r, n: r.integers(0, 6, n).astype(float),              # ties and zeros, exact sums
    lambda r, n: np.ones(n),                                      # all equal
    lambda r, n: np.zeros(n),                                     # nothing to weigh: keep one row
    lambda r, n: r.integers(1, 3, n) * 2.0**-1060,                # subnormal weights
    lambda r, n: np.where(r.random(n) < 0.5, 1e300, 1.0),         # huge range
], ids=["gamma", "integers", "equal", "zeros", "subnormal", "huge"])
@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.99])
def test_weight_trimming_equals_its_definition(weights, alpha):
    for n in (1, 7, 200_000):
        w = weights(np.random.default_rng(n), n)
        kept = WeightTrimming(alpha).kept_rows(w)
        np.testing.assert_array_equal(kept, _trim_reference(w, alpha))
        assert kept.dtype == np.int32


def test_weight_trimming_sample_on_float32_and_multiclass(rng):
    g, h = _grads32(rng, 50_000, k=3)
    s = WeightTrimming(0.2).sample(_state(g, h, raw=np.zeros((50_000, 3))), np.random.default_rng(0))
    w = h.astype(float).sum(axis=1)
    np.testing.assert_array_equal(s.indices, _trim_reference(w, 0.2))
    np.testing.assert_array_equal(s.grad, g[s.indices])
    np.testing.assert_array_equal(s.hess, h[s.indices])
    assert s.grad.dtype == np.float32


def test_weight_trimming_refuses_bad_weights():
    with pytest.raises(ValueError, match="WeightTrimming: weights .* must be finite and non-negative; 2 are"):
        WeightTrimming(0.1).kept_rows(np.array([1.0, -1.0, np.nan, 2.0]))


# ------------------------------------------------------------------ user importances


@pytest.mark.parametrize("fn, error, match", [
    (lambda g: np.abs(g)[: g.size // 2], ValueError, r"Scores: importance must have shape \(400,\), one score per row; got shape \(200,\)"),
    (lambda g: np.append(np.abs(g), 1.0), ValueError, r"Scores: importance must have shape \(400,\).*got shape \(401,\)"),
    (lambda g: np.abs(g)[:, None], ValueError, r"Scores: importance must have shape \(400,\).*got shape \(400, 1\)"),
    (lambda g: np.where(np.arange(g.size) == 7, np.nan, 1.0), ValueError, "Scores: importance must be finite and non-negative; it has 1"),
    (lambda g: np.where(np.arange(g.size) < 3, -1.0, 1.0), ValueError, "non-negative; it has 3 NaN, infinite or negative"),
    (lambda g: np.where(np.arange(g.size) < 2, np.inf, 1.0), ValueError, "it has 2 NaN, infinite or negative"),
    (lambda g: np.array(["a"] * g.size), TypeError, "Scores: importance must be real numbers"),
])
def test_bad_user_importance_is_refused_naming_the_sampler(rng, fn, error, match):
    g, h = _grads32(rng, 400)
    for sampler in (Scores(fn, rate=0.3), Scores(fn, rho=1.0)):
        with pytest.raises(error, match=match):
            sampler.sample(_state(g, h), np.random.default_rng(0))


def test_user_overrides_are_honoured(rng):
    g, h = _grads32(rng, 4000)

    class Doubled(FirstOrder):
        def fitting_gradient(self, state):
            return 2.0 * state.grad

    class ByHessian(FirstOrder):
        def importance_from_state(self, state):
            return state.hess.sum(axis=-1) if state.hess.ndim > 1 else state.hess

    state = _state(g, h)
    s = Doubled(rate=0.3).sample(state, np.random.default_rng(0))
    p = Doubled(rate=0.3).probabilities_from_state(state)
    np.testing.assert_array_equal(s.grad, (2.0 * g[s.indices].astype(float)) * (1.0 / p[s.indices]))
    p_h = ByHessian(rate=0.3).probabilities_from_state(state)
    np.testing.assert_array_equal(p_h, SecondOrder(rate=0.3).probabilities_from_state(state))


# ------------------------------------------------------------------ state, history, Full


def test_sampling_state_converts_lazily_and_once(rng):
    g, h = _grads32(rng, 100)
    state = _state(g, h)
    assert state.grad32 is g and state.hess32 is h
    assert state.grad.dtype == np.float64 and state.grad is state.grad
    np.testing.assert_array_equal(state.grad, g.astype(float))
    g64 = g.astype(float)
    state = _state(g64, h.astype(float))
    assert state.grad is g64 and state.grad32.dtype == np.float32
    with pytest.raises(ValueError, match="same shape"):
        _state(g, h[:50])


def test_full_hands_over_the_engines_buffers(rng):
    g, h = _grads32(rng, 100)
    s = Full().sample(_state(g, h), np.random.default_rng(0))
    assert np.shares_memory(s.grad, g) and np.shares_memory(s.hess, h) and s.grad.dtype == np.float32
    np.testing.assert_array_equal(s.indices, np.arange(100))


def test_gradient_history_copies_into_a_ring():
    history = GradientHistory(maxlen=2)
    buf = np.zeros(5, np.float32)
    for it in range(4):
        buf[:] = it  # the engine reuses its buffer
        history.push_gradient(buf)
    np.testing.assert_array_equal(history.gradient(1), np.full(5, 3.0))
    np.testing.assert_array_equal(history.gradient(2), np.full(5, 2.0))
    assert history.gradient(3) is None and history.gradient(0) is None
    assert history.gradient(1).dtype == np.float32 and not history.gradient(1).flags.writeable
    assert [float(a[0]) for a in history.gradients] == [2.0, 3.0]
    with pytest.raises(ValueError, match="push_gradient got a float32 array of shape \\(4,\\)"):
        history.push_gradient(np.zeros(4, np.float32))
    nothing = GradientHistory()
    nothing.push_gradient(buf)
    assert nothing.gradient(1) is None


def test_samplers_pickle_and_copy_without_their_buffers(rng):
    import copy
    import pickle

    g, h = _grads32(rng, 1000)
    sampler = FirstOrder(rate=0.2)
    first = sampler.sample(_state(g, h), np.random.default_rng(0))
    for clone in (copy.deepcopy(sampler), pickle.loads(pickle.dumps(sampler))):
        assert repr(clone) == "FirstOrder(rate=0.2)"
        again = clone.sample(_state(g, h), np.random.default_rng(0))
        np.testing.assert_array_equal(again.indices, first.indices)


def test_loss_based_reads_the_compiled_per_row_loss(rng):
    n = 3000
    raw = rng.normal(size=n)
    y = rng.normal(size=n)
    g = np.empty(n, np.float32)
    h = np.empty(n, np.float32)
    loss = SquaredError()
    target = Target(label=y)
    loss.compute_gradients(raw, target, g, h)
    state = SamplingState(0, g, h, raw, loss, target, GradientHistory())
    p = LossBased(rho=0.5).probabilities_from_state(state)
    np.testing.assert_allclose(p, np.minimum(1.0, 0.5 * 0.5 * (raw - y) ** 2), rtol=1e-15)

    class NaNLoss(SquaredError):
        def compute_loss(self, raw, target, out):
            super().compute_loss(raw, target, out)
            out[4] = np.nan

    state = SamplingState(0, g, h, raw, NaNLoss(), target, GradientHistory())
    with pytest.raises(ValueError, match="LossBased: importance must be finite"):
        LossBased(rate=0.1).sample(state, np.random.default_rng(0))


@pytest.mark.parametrize("make", [
    lambda rng: rng.random(50).astype(np.float32),                      # g of a single-output loss
    lambda rng: rng.random((50, 3)).astype(np.float32),                 # multiclass g, C-contiguous
    lambda rng: rng.random((50, 6))[:, ::2],                            # a strided float64 view
    lambda rng: rng.random(100)[::2],                                   # a strided 1-D view
    lambda rng: np.empty(0),                                            # the empty buffer of the g/h kinds
])
def test_compile_rate_solve_builds_what_numba_types_alike(make):
    """The few rows compile_rate_solve calls the kernels on must have the numba type of the
    arrays they stand for; a wrong dtype, dimension or layout would compile a kernel the
    timed run never calls and leave the real one to compile on the clock."""

    arr = make(np.random.default_rng(0))
    assert numba.typeof(rate_solve._tiny(rate_solve._layout(arr), 4)) == numba.typeof(arr)


def test_compile_rate_solve_compiles_the_kernels_a_small_run_never_called(monkeypatch):
    """A FirstOrder draw on a few rows with nobody capped records its layout without calling
    the capping round; compile_rate_solve then compiles that round (and the histogram
    bracket) for exactly the types the sampler's own solve passes them."""

    seen = []
    real_solve = rate_solve.solve

    def spy(imp, *args, **kwargs):
        seen.append(imp)
        return real_solve(imp, *args, **kwargs)

    monkeypatch.setattr(rate_solve, "solve", spy)
    n = 64
    ones = np.ones(n, np.float32)  # equal importances: nobody capped at rate 0.5, no capping round
    FirstOrder(rate=0.5).sample(_state(ones, ones.copy()), np.random.default_rng(0))
    (imp,) = seen
    assert rate_solve.compile_rate_solve() >= 1
    blocks = (np.empty(1, np.int64), np.empty(1), np.empty(1), np.empty(1))
    assert tuple(map(numba.typeof, (*imp.args(), 1.0, 1.0, 0.5, *blocks))) in rsk.cap_round.serial.signatures
    window = (1.0, 1.0, 0.25, 0.75, np.empty(1, np.int32), np.empty(1, np.int64), np.empty(1, np.int64), np.empty(1))
    assert tuple(map(numba.typeof, (*imp.args(), *window))) in rsk.window_rows.serial.signatures
    assert tuple(map(numba.typeof, (*imp.args(), 1.0, 1.0))) in rsk.scaled_histogram.serial.signatures
    assert tuple(map(numba.typeof, (*imp.args(), 1.0, 1.0, 2.0))) in rsk.sorted_rho.signatures
