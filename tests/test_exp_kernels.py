"""The vectorising ``exp`` (smart_lgbm.losses._exp_kernels): the C library's bits, and the binary
gradients it gives the fused sweep the same bits as ``math.exp``'s, special inputs included."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from smart_lgbm._engine import _sweep_kernels as fk
from smart_lgbm.losses import _exp_kernels as ek
from smart_lgbm._numba import kernel_constants as kc
from smart_lgbm.samplers import rate_solve

# (the platform rule, not libm_is_reproduced: a library that disagrees must fail here, not skip)
needs_agreement = pytest.mark.skipif(not ek.platform_rule(),
                                     reason="this C library's exp is not the one the fast formula reproduces")


def test_table_is_the_library_table() -> None:
    # the first entries of glibc's / musl's __exp_data.tab (tail bits, scale bits - (k << 45))
    known = {0: (0x0, 0x3FF0000000000000), 1: (0x3C9B3B4F1A88BF6E, 0x3FEFF63DA9FB3335),
             2: (0xBC7160139CD8DC5D, 0x3FEFEC9A3E778061), 5: (0xBC8BCE8023F98EFA, 0x3FEFD06B29DDF6DE)}
    for k, (tail, scale) in known.items():
        assert (int(ek._TAB[2 * k]), int(ek._TAB[2 * k + 1])) == (tail, scale)


@needs_agreement
def test_exp_fast_is_math_exp_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    xs = np.concatenate([rng.standard_normal(1 << 20) * 8.0, rng.uniform(-511.9, 511.9, 1 << 20),
                         ek.probes(count=1 << 18, seed=3, edges=6000)])
    xs = xs[np.vectorize(ek.in_fast_range.py_func)(xs)]
    assert ek.agrees_with_libm(xs)
    assert ek.agrees_with_libm()
    # the boundaries of the fast range
    for x in (ek.LOW, -ek.LOW, np.nextafter(ek.HIGH, 0.0), -np.nextafter(ek.HIGH, 0.0), 1.0, -1.0, 0.5):
        assert ek.in_fast_range.py_func(x)
        assert ek._mismatches(np.array([x])) == 0
    for x in (0.0, -0.0, ek.LOW / 2, ek.HIGH, -ek.HIGH, 700.0, -745.0, math.inf, -math.inf, math.nan):
        assert not ek.in_fast_range.py_func(x)


@pytest.mark.parametrize("agrees", [True, False])
def test_the_check_runs_once_per_platform_and_its_answer_decides(tmp_path, monkeypatch, agrees: bool) -> None:
    """The comparison runs in the first process on a platform; its answer is kept beside the
    kernel cache, read by later processes, and a disagreement turns the fast ``exp`` off."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path), raising=False)
    monkeypatch.setattr(ek, "platform_rule", lambda: True)
    calls = []
    monkeypatch.setattr(ek, "agrees_with_libm", lambda xs=None: calls.append(1) or agrees)
    ek.libm_is_reproduced.cache_clear()
    try:
        assert ek.libm_is_reproduced() is agrees
        assert ek.verdict_path().parent == tmp_path and ek.verdict_path().is_file()
        assert fk.fast_exp() is agrees
        ek.libm_is_reproduced.cache_clear()  # a later process: reads the answer, no check
        assert ek.libm_is_reproduced() is agrees and len(calls) == 1
        ek.verdict_path().write_bytes(b"damaged")  # anything but the agreeing answer: keep math.exp
        ek.libm_is_reproduced.cache_clear()
        assert ek.libm_is_reproduced() is False
    finally:
        ek.libm_is_reproduced.cache_clear()


def test_no_check_off_the_platform_rule(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path), raising=False)
    monkeypatch.setattr(ek, "platform_rule", lambda: False)
    monkeypatch.setattr(ek, "agrees_with_libm", lambda xs=None: pytest.fail("checked off the platform rule"))
    ek.libm_is_reproduced.cache_clear()
    try:
        assert ek.libm_is_reproduced() is False
        assert list(tmp_path.iterdir()) == []
    finally:
        ek.libm_is_reproduced.cache_clear()


@needs_agreement
def test_the_recorded_answer_on_this_machine_is_the_comparison() -> None:
    ek.libm_is_reproduced.cache_clear()
    assert ek.libm_is_reproduced() is True
    assert ek.verdict_path().read_bytes() == b"agrees"


def test_probes_hold_inputs_where_the_shift_rounding_matters() -> None:
    """Next to the half-way points the probes hold, rounding ``x * 128 / ln 2`` before adding
    the shift (a build without the fused multiply-add there) picks another ``k`` than the FMA
    build: the inputs where such a library's bits can differ are among the probes."""
    from decimal import Decimal, localcontext

    xs = ek.probes()
    split = 0
    with localcontext() as ctx:
        ctx.prec = 60
        inv, shift = Decimal(ek._INV_LN2_N), Decimal(ek._SHIFT)
        for x in xs[-2 * 2_000 * 9:]:  # the probes next to the rounding boundaries
            fused = float(inv * Decimal(float(x)) + shift)  # one rounding (exact product and sum)
            apart = float(np.float64(ek._INV_LN2_N) * np.float64(x)) + ek._SHIFT  # two roundings
            split += fused != apart
    assert split > 0


@pytest.mark.parametrize("n", [5_000, 3 * kc.BLOCK + 123])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_sweep_same_bits_with_either_exp(n: int, weighted: bool) -> None:
    rng = np.random.default_rng(n + weighted)
    raw = rng.normal(scale=4.0, size=n)
    # the slow path's inputs, scattered: 0 (exp's argument 0), tiny, huge, infinite, NaN
    specials = [0.0, -0.0, 1e-20, -1e-300, 300.0, -300.0, 600.0, -800.0, math.inf, -math.inf, math.nan]
    where = rng.choice(n, size=len(specials), replace=False)
    raw[where] = specials
    sign = np.where(rng.random(n) < 0.4, 1, -1).astype(np.int8)
    weight = rng.uniform(0.5, 2.0, n) if weighted else np.empty(0)
    nb = rate_solve.n_blocks(n)
    out = {}
    for fast in (False, True):
        grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
        blocks = np.zeros(nb), np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb)
        fk.one_column(n, raw, fk.BINARY, sign, np.empty(0), weight, 1.0, grad, hess, kc.STATS_SCAN,
                      kc.FIRST, *blocks, np.zeros((nb, 2)), numba.get_num_threads(), fast)
        out[fast] = (grad, hess, *blocks)
    for a, b in zip(out[False], out[True], strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
