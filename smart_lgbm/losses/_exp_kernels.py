"""``exp`` in numba, bit for bit the C math library's, so that a row loop calling it vectorises.

Why: the binary gradients (:func:`smart_lgbm.losses._kernels.binary_row`) must be LightGBM's
bits, and LightGBM's ``std::exp`` is the C library's ``exp``; numba lowers ``math.exp`` to a
call of that function, one scalar call per row, which keeps the gradient loop from
vectorising and makes that call most of the gradient sweep's time (about 4 ns a row at one
thread).  :func:`exp_fast` is the algorithm of glibc's ``exp``
since 2.28 (Szabolcs Nagy's, also musl's and ARM's optimized-routines): ``exp(x) =
2^(k/128) * exp(r)``, ``k`` the nearest integer to ``x * 128 / ln 2``, ``2^(k/128)`` from a
128-entry table, ``exp(r)`` a degree-5 polynomial, with the fused multiply-adds of the
library's FMA build (the one glibc picks on x86-64 CPUs with FMA).  Written with them, a
loop over rows compiles to AVX gathers and vector arithmetic.

The fast formula is exact only on the library's main path, ``2^-54 <= |x| < 512``; every
other input (tiny, large, infinite, NaN) goes to :func:`math.exp` itself (callers recompute
those rows: :func:`in_fast_range`).  It is used only where the C library is known to run
this algorithm with FMA (:func:`libm_is_reproduced`: glibc 2.28 or later on x86-64, a CPU
with FMA and AVX2, where glibc picks its FMA build); anywhere else (another C library, an
older glibc, its build without FMA, another architecture) callers keep ``math.exp``.  Where
the rule holds, the two are compared bit for bit (:func:`agrees_with_libm`, on random inputs
and the inputs next to every rounding boundary of ``k``, :func:`probes`, where a build
rounding differently would differ) once per C library version and CPU, and the answer is
kept beside the kernel cache (:func:`libm_is_reproduced`): loading the check's kernel costs
a fresh process's first iteration about 25 ms, so it does not run in every process.  ``tests/test_exp_kernels.py`` makes the same comparison wherever the rule holds.

The table ``2^(k/128) ~= H_k * (1 + T_k)`` is computed here from its definition (``H_k`` the
double nearest ``2^(k/128)``, ``T_k`` the double nearest the relative rest), with 60 decimal
digits: the same doubles as the library's table (the probes check it too).
"""

from __future__ import annotations

import decimal
import functools
import hashlib
import math
import os
import platform
from pathlib import Path

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
    """How many ``xs`` (all :func:`in_fast_range`) :func:`exp_fast` and ``math.exp`` disagree on."""
    bad = 0
    for i in range(xs.shape[0]):
        if exp_fast(xs[i]) != math.exp(xs[i]):
            bad += 1
    return bad


def probes(count: int = 1 << 13, seed: int = 0, edges: int = 1000) -> np.ndarray:
    """Inputs to compare :func:`exp_fast` with ``math.exp`` on: random values over the gradients' usual range
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


def agrees_with_libm(xs: np.ndarray | None = None) -> bool:
    """Whether :func:`exp_fast` gives this process's ``math.exp`` bits on ``xs`` (default
    :func:`probes`)."""
    return bool(_mismatches(probes() if xs is None else xs) == 0)


def platform_rule() -> bool:
    """Whether the platform is one where the C library's ``exp`` is the algorithm
    :func:`exp_fast` reproduces (module notes): glibc 2.28 or later, x86-64, the CPU's FMA
    and AVX2 usable (glibc's choice of its FMA build)."""
    return _glibc_version() is not None and _cpu_has_fma_avx2()


def _glibc_version() -> str | None:
    """``"2.36"`` for glibc 2.28 or later on x86-64, else None."""
    try:  # ("glibc 2.36"; platform.libc_ver() would scan the Python binary for it)
        library, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
    except (AttributeError, ValueError, OSError):
        return None
    if library != "glibc" or platform.machine() != "x86_64":
        return None
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    return version if (major, minor) >= (2, 28) else None


def _cpu_has_fma_avx2() -> bool:
    from llvmlite import binding

    features = binding.get_host_cpu_features()
    return bool(features.get("fma", False) and features.get("avx2", False))


def verdict_path() -> Path:
    """The file recording :func:`agrees_with_libm`'s answer for this C library, CPU and
    version of this module, beside the package's kernel cache."""
    from llvmlite import binding

    from .._numba.runtime import cache_folder

    tag = repr((os.confstr("CS_GNU_LIBC_VERSION"), binding.get_host_cpu_name(),
                sorted(binding.get_host_cpu_features().items()), Path(__file__).read_bytes()))
    return cache_folder() / f"libm_exp-{hashlib.sha256(tag.encode()).hexdigest()[:20]}.verdict"


@functools.cache
def libm_is_reproduced() -> bool:
    """Whether this process's C library ``exp`` gives :func:`exp_fast`'s bits: the platform
    rule (:func:`platform_rule`), checked by :func:`agrees_with_libm` once per C library,
    CPU and version of this module.

    The check's answer is kept in a small file beside the kernel cache
    (:func:`verdict_path`), so later processes only read it: loading the check's kernel costs
    a process about 25 ms.  A C library that changed its ``exp`` under the
    same platform rule (a new glibc version) is checked again and, if it disagrees, every
    caller keeps ``math.exp``: its gradients stay the library's bits.
    """
    if not platform_rule():
        return False
    path = verdict_path()
    try:
        return path.read_bytes() == b"agrees"
    except OSError:  # (not checked yet on this platform; a read-only install checks every time)
        pass
    agrees = agrees_with_libm()
    from .._numba.runtime import write_shared

    write_shared(path, lambda fh: fh.write(b"agrees" if agrees else b"differs"))
    return agrees
