"""``exp`` in numba, bit for bit the C math library's, so that a row loop calling it vectorises.

Why: the binary gradients (:func:`smart_lgbm.losses._kernels.binary_row`) must be LightGBM's
bits, and LightGBM's ``std::exp`` is the C library's ``exp``; numba lowers ``math.exp`` to a
call of that function, one scalar call per row, which keeps the gradient loop from
vectorising and bounds the fused sweep (about 4 ns a row at one thread in development runs,
400,000 rows; the whole sweep 2.7 ms).  :func:`exp_fast` is the algorithm of glibc's ``exp``
since 2.28 (Szabolcs Nagy's, also musl's and ARM's optimized-routines): ``exp(x) =
2^(k/128) * exp(r)``, ``k`` the nearest integer to ``x * 128 / ln 2``, ``2^(k/128)`` from a
128-entry table, ``exp(r)`` a degree-5 polynomial, with the fused multiply-adds of the
library's FMA build (the one glibc picks on x86-64 CPUs with FMA).  Written with them, a
loop over rows compiles to AVX gathers and vector arithmetic.

The fast formula is exact only on the library's main path, ``2^-54 <= |x| < 512``; every
other input (tiny, large, infinite, NaN) goes to :func:`math.exp` itself (callers recompute
those rows: :func:`in_fast_range`).  Whether the fast formula gives this machine's library
bits is checked once per process on probe inputs (:func:`agrees_with_libm`: random values and
the values next to every rounding boundary of ``k``, where a different build would differ);
where it does not (another C library, a build without FMA), callers keep ``math.exp``.

The table ``2^(k/128) ~= H_k * (1 + T_k)`` is computed here from its definition (``H_k`` the
double nearest ``2^(k/128)``, ``T_k`` the double nearest the relative rest), with 60 decimal
digits: the same doubles as the library's table (the probes check it too).
"""

from __future__ import annotations

import decimal
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: ``2^(k/N)`` table size, as the library's (``EXP_TABLE_BITS = 7``).
N = 128
#: ``|x|`` bounds of the fast path: the library's main path (below it returns ``1 + x``;
#: from 512 on it takes its special cases).
LOW = 2.0 ** -54
HIGH = 512.0

_INV_LN2_N = float.fromhex("0x1.71547652b82fep0") * N
_SHIFT = float.fromhex("0x1.8p52")
_NEG_LN2_HI_N = -float.fromhex("0x1.62e42fefa0000p-8")
_NEG_LN2_LO_N = -float.fromhex("0x1.cf79abc9e3b3ap-47")
_C2 = float.fromhex("0x1.ffffffffffdbdp-2")
_C3 = float.fromhex("0x1.555555555543cp-3")
_C4 = float.fromhex("0x1.55555cf172b91p-5")
_C5 = float.fromhex("0x1.1111167a4d017p-7")


def _table() -> np.ndarray:
    """``tab[2k]``: the bits of ``T_k``; ``tab[2k + 1]``: the bits of ``H_k`` minus ``k << 45``
    (so that adding ``k << 45`` of any ``k = k mod 128 + 128 j`` also adds ``j`` to the exponent)."""
    ctx = decimal.Context(prec=60)
    ln2 = ctx.ln(decimal.Decimal(2))
    tab = np.empty(2 * N, dtype=np.uint64)
    for k in range(N):
        exact = ctx.exp(ctx.divide(ctx.multiply(ln2, k), N))
        h = float(exact)  # (the nearest double: Decimal -> float rounds correctly)
        t = float(ctx.divide(ctx.subtract(exact, decimal.Decimal(h)), decimal.Decimal(h)))
        tab[2 * k] = np.float64(t).view(np.uint64)
        tab[2 * k + 1] = (int(np.float64(h).view(np.uint64)) - (k << 45)) & 0xFFFFFFFFFFFFFFFF
    return tab


_TAB = _table()


@intrinsic
def _bits(typingctx, x):
    """The bits of a double as uint64 (a bitcast, which vectorises; a view would not)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@intrinsic
def _double(typingctx, u):
    """The double of uint64 bits."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``fma``: the instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]), "llvm.fma.f64")
        return builder.call(fn, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(cache=True, inline="always")
def in_fast_range(x):
    """Whether :func:`exp_fast` gives the library's ``exp(x)`` (False for NaN)."""
    a = abs(x)
    return a >= LOW and a < HIGH


@njit(cache=True, inline="always")
def exp_fast(x):
    """The library's ``exp(x)`` for ``x`` :func:`in_fast_range` (module notes); anything for others."""
    kd = _fma(_INV_LN2_N, x, _SHIFT)  # k in the low bits of kd
    ki = _bits(kd)
    kd -= _SHIFT
    r = _fma(kd, _NEG_LN2_LO_N, _fma(kd, _NEG_LN2_HI_N, x))
    idx = np.uint64(2) * (ki % np.uint64(N))
    top = ki << np.uint64(45)
    tail = _double(_TAB[idx])
    sbits = _TAB[idx + np.uint64(1)] + top
    r2 = r * r
    tmp = _fma(r2 * r2, _fma(r, _C5, _C4), _fma(r2, _fma(r, _C3, _C2), tail + r))
    scale = _double(sbits)
    return _fma(scale, tmp, scale)


@njit(cache=True)
def _mismatches(xs):
    """How many ``xs`` (all :func:`in_fast_range`) :func:`exp_fast` and ``math.exp`` disagree on.

    Serial: it runs once per process, before the first sweep, on a few hundred thousand
    inputs (about a millisecond); a parallel kernel costs more to load from numba's cache."""
    bad = 0
    for i in range(xs.shape[0]):
        if exp_fast(xs[i]) != math.exp(xs[i]):
            bad += 1
    return bad


def probes(count: int = 1 << 13, seed: int = 0, edges: int = 1000) -> np.ndarray:
    """Inputs :func:`agrees_with_libm` checks: random values over the gradients' usual range
    and the whole fast range, and, for every ``k`` with ``|k| < edges``, the doubles next to
    ``(k + 1/2) ln 2 / 128``, where ``k`` is rounded (a build that rounds ``x * 128 / ln 2``
    before adding the shift differs there) and next to ``k ln 2 / 128``."""
    rng = np.random.default_rng(seed)
    ks = np.arange(-edges, edges, dtype=np.float64)
    near = []
    for centre in ((ks + 0.5) / _INV_LN2_N, ks / _INV_LN2_N):
        up = down = centre
        near.append(centre)
        for _ in range(4):
            up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
            near += [up, down]
    xs = np.concatenate([rng.standard_normal(count) * 4.0, rng.uniform(-HIGH, HIGH, count), *near])
    a = np.abs(xs)
    return xs[(a >= LOW) & (a < HIGH)]


_AGREES: bool | None = None


def agrees_with_libm() -> bool:
    """Whether :func:`exp_fast` gives this process's ``math.exp`` bits on :func:`probes`
    (checked once per process, about 0.05 M inputs)."""
    global _AGREES
    if _AGREES is None:
        _AGREES = _mismatches(probes()) == 0
    return _AGREES
