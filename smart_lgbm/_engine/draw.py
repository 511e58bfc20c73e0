"""One iteration's draw, the same for every way of training: sample, checks, history.

:func:`draw_iteration` is the one place that turns an iteration's gradients of every row
into the rows and fitting gradients the tree is fitted on.  Its callers:

* the engine (:meth:`smart_lgbm._engine.run.BoostingRun.step`), on one machine and on every
  machine of a distributed run (:mod:`smart_lgbm.dask` runs the engine on each worker,
  with the worker's rank as its sampling stream);
* :class:`smart_lgbm.SmartObjective`, the custom objective for stock ``lightgbm.train``,
  ``lightgbm.cv``, LightGBM's scikit-learn estimators and ``lightgbm.dask``.

Both compute the same float32 gradients (the loss's, or the run's gradient sweep's: the
same bits), so every path draws with the same per-iteration random generator
(:func:`stream_rng`: same seed, iteration and stream, same sample), keeps the same gradient
history and refuses the same malformed samples (:func:`check_sample`) with the same
message, naming the sampler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..losses.base import Loss, Target, check_float32_finite, count_nonfinite
from ..samplers import GradientHistory, RunContext, Sample, Sampler, SamplingState
from ..samplers.rate_solve import Statistics

__all__ = ["Gradients", "check_sample", "draw_iteration", "draw_key", "iteration_rng", "stream_rng"]


def iteration_rng(seed: int, iteration: int) -> np.random.Generator:
    """The random generator of one iteration: same seed and iteration, same draws.

    Both the engine and :class:`smart_lgbm.SmartObjective` use it, so they draw the same
    samples for the same seed.
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, iteration])))


def stream_rng(seed: int, iteration: int, stream: int | None) -> np.random.Generator:
    """The random generator of one iteration of sampling stream ``stream``.

    ``stream=None`` is the engine's own stream (:func:`iteration_rng`); every integer
    ``stream`` is an independent stream of the same seed (numpy's ``SeedSequence`` spawn
    key), for example one per machine of a distributed run, whose rows are its own.
    """
    if stream is None:
        return iteration_rng(seed, iteration)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, iteration], spawn_key=(stream,))))


_KERNELS: Any = None


def _kernels() -> Any:
    global _KERNELS
    if _KERNELS is None:  # numba loads on first use
        from . import _draw_kernels as kernels

        _KERNELS = kernels
    return _KERNELS


def _words(value: int, out: list[int]) -> None:
    """``value``'s little-endian 32-bit words (at least one), as SeedSequence reads an int."""
    while True:
        out.append(value & 0xFFFFFFFF)
        value >>= 32
        if not value:
            return


def draw_key(seed: int, iteration: int, stream: int | None) -> np.uint64:
    """``stream_rng(seed, iteration, stream).bit_generator.random_raw()``, without the generator.

    The one 64-bit key the built-in samplers' draws take from the iteration's generator
    (:func:`smart_lgbm.samplers.draw.draw_sample`): computed by a compiled copy of numpy's
    SeedSequence and PCG64 (``_draw_kernels.draw_key``), the same bits.  Why: building the
    generator (SeedSequence, PCG64, Generator) is numpy code that every iteration meets with
    cold caches after the all-rows kernels and LightGBM's tree, many times the few
    microseconds this takes.  Seeds or iterations beyond 64 bits take numpy's path.
    """
    if not all(0 <= v < 1 << 64 for v in (seed, iteration, 0 if stream is None else stream)):
        return np.uint64(stream_rng(seed, iteration, stream).bit_generator.random_raw())
    words: list[int] = []
    _words(seed, words)
    _words(iteration, words)
    if stream is not None:  # SeedSequence pads the run entropy to its pool (4 words) before a spawn key
        words.extend([0] * (4 - len(words)))
        _words(stream, words)
    return np.uint64(_kernels().draw_key(np.array(words, dtype=np.uint64), len(words)))


def _plain_float32(values: Any, m: int) -> bool:
    """Whether ``values`` is a writeable C-contiguous float32 array of shape ``(m,)``: the fast check's
    form (numba would compile the kernel anew for a read-only or strided array)."""
    return (isinstance(values, np.ndarray) and values.dtype == np.float32 and values.shape == (m,)
            and values.flags.c_contiguous and values.flags.writeable)


def check_sample(sample: Any, n: int, k: int, sampler: Sampler) -> None:
    """Refuse a malformed sample early, naming the sampler (user samplers included).

    A sample must hold at least one int32 row index, sorted, unique and in ``[0, n)``, and
    float fitting gradients and hessians of shape ``(m,)`` (``(m, K)`` for ``k > 1``),
    finite and within float32's range.  Duplicate or unsorted indices would otherwise fit
    a wrong gradient vector silently (the engine's subset Dataset, the custom objective's
    scatter into all rows), so this runs for every sampler, the built-in ones included:
    every check is O(m) in the sample, vectorised, with no pass over all ``n`` rows.

    Raises
    ------
    TypeError, ValueError
        Naming the sampler and what was wrong.
    """
    if not isinstance(sample, Sample):
        raise TypeError(f"{sampler!r}.sample() returned {type(sample).__name__}; expected a smart_lgbm.Sample")
    idx = sample.indices
    if not isinstance(idx, np.ndarray):
        raise TypeError(f"{sampler!r} returned indices of type {type(idx).__name__}; expected a 1-D numpy array of "
                        "int32 row indices")
    if idx.ndim != 1:
        raise ValueError(f"{sampler!r} returned indices of shape {idx.shape}; expected a 1-D array of row indices")
    m = idx.shape[0]
    if m < 1:
        raise ValueError(f"{sampler!r} returned no rows; a sample needs at least one row")
    if idx.dtype != np.int32:
        raise TypeError(f"{sampler!r} returned indices of dtype {idx.dtype}; expected int32")
    # the built-in samplers' form (float32 (m,) gradients): one compiled pass answers it all;
    # anything else, or a sample it does not pass, takes the checks below (and their messages)
    if (k == 1 and idx.flags.c_contiguous and idx.flags.writeable and _plain_float32(sample.grad, m)
            and _plain_float32(sample.hess, m)):
        if _kernels().plain_sample(idx, n, sample.grad, sample.hess):
            return
    # strictly increasing: sorted and unique at once; then the ends bound every index
    if idx[0] < 0 or idx[-1] >= n or (m > 1 and np.any(idx[1:] <= idx[:-1])):
        raise ValueError(f"{sampler!r} returned indices that are not sorted, unique and in [0, {n})")
    shape = (m,) if k == 1 else (m, k)
    for name in ("grad", "hess"):
        values = getattr(sample, name)
        if not isinstance(values, np.ndarray) or values.dtype.kind != "f":  # (numpy's float types)
            raise TypeError(f"{sampler!r} returned {name} of type {type(values).__name__}"
                            f"{'' if not isinstance(values, np.ndarray) else ' ' + str(values.dtype)}; "
                            f"expected a float numpy array of shape {shape}")
        if values.shape != shape:
            raise ValueError(f"{sampler!r} returned {name} of shape {values.shape}; expected {shape}")
        # float32 (the built-in samplers' output) fits float32 when finite: one vectorised
        # sum decides, and the message (the sampler's repr) is built only when it fails
        if values.dtype.itemsize <= 4 and not count_nonfinite(values):
            continue
        check_float32_finite(f"{'gradients' if name == 'grad' else 'hessians'} from {sampler!r}", values)


@dataclass(frozen=True)
class Gradients:
    """Every training row's float32 ``g, h`` at the run's current scores.

    Attributes
    ----------
    grad, hess : ndarray of float32, shape (n,) or (n, K)
        The buffers they are in (the engine reuses its own every iteration).
    statistics : Statistics or None
        What the run's gradient sweep (:mod:`.sweep`) gathered from them for the built-in
        sampler's rate solve; None when the loss computed them.
    """

    grad: np.ndarray
    hess: np.ndarray
    statistics: Statistics | None = None


def draw_iteration(sampler: Sampler, gradients: Gradients, *, loss: Loss, target: Target, history: GradientHistory,
                   raw: np.ndarray, iteration: int, seed: int, stream: int | None = None,
                   run: RunContext | None = None) -> Sample:
    """Draw one iteration's sample from its gradients: the sampler's draw, its checks, the history.

    Parameters
    ----------
    sampler : Sampler
    gradients : Gradients
        Every training row's ``g, h`` at ``raw``.
    loss : Loss
    target : Target
        The training rows' labels, weights and groups.
    history : GradientHistory
        The run's history; this iteration's gradients are pushed once the sample is drawn
        (the sampler sees the earlier iterations' only).
    raw : ndarray of float64, shape (n,) or (n, K)
        The training rows' raw scores (initial score included).
    iteration : int
        0-based boosting iteration; with ``seed`` and ``stream`` it seeds the draw.
    seed : int
    stream : int or None, default=None
        Sampling stream (:func:`stream_rng`).
    run : RunContext, optional
        The run's context for the sampler (its per-run state, validation scores, the
        machines' ``allgather``).

    Returns
    -------
    Sample
        Checked by :func:`check_sample`.

    Notes
    -----
    A sampler that declares :attr:`~smart_lgbm.samplers.Sampler.draws_from_key` gets the
    iteration generator's one key (:func:`draw_key`) in ``state.draw_key`` and no generator;
    every other sampler gets the generator.
    """
    key = draw_key(seed, iteration, stream) if sampler.draws_from_key else None
    state = SamplingState(iteration, gradients.grad, gradients.hess, raw, loss, target, history, run=run,
                          draw_key=key, statistics=gradients.statistics)
    # (a sampler that draws from the key accepts rng=None: Sampler.draws_from_key)
    rng = cast("np.random.Generator", None) if key is not None else stream_rng(seed, iteration, stream)
    sample = sampler.sample(state, rng)
    check_sample(sample, target.num_rows, loss.num_model_per_iteration, sampler)
    history.push_gradient(gradients.grad)
    return sample
