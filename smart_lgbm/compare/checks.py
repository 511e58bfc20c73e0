"""Checks that run before the first method trains: the data, then a short pre-flight run.

``smart-lgbm compare|run`` loads and checks every chosen experiment's data and runs each
chosen method for a few rounds on the first rows (whole queries) before any timed run, so
that bad data or parameters stop the command at once, with one line naming the problem
(exit 2), instead of a traceback after other methods have trained.  The pre-flight run is
also the warm-up that compiles the numba kernels outside the timed runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import lightgbm as lgb

from .._numba.row_kernel import parallel_from
from ..losses.base import Target, check_finite
from .._engine import canonicalize, resolve_loss
from ..samplers.rate_solve import compile_rate_solve
from .config import ConfigError, Experiment, MethodSpec, error_text
from ..samplers import Sampler
from .data import ExperimentData, head, load_data, make_datasets
from .methods import method_seeds, run_method, run_params

#: Rows (whole queries) of the pre-flight run, and its rounds with and without warm-up.
PREFLIGHT_ROWS = 2000
WARMUP_ROUNDS = 3


def check_data(exp: Experiment, methods: Sequence[MethodSpec], data: ExperimentData) -> None:
    """Refuse data the methods cannot train on, before any training.

    Both splits need rows; labels must be finite and fit each method's objective (0/1 for
    binary, integers in range for multiclass and ranking, with the engine's own label
    checks); ranking objectives and NDCG need query groups.

    Raises
    ------
    ConfigError
        Naming the experiment, the split and the problem.
    """
    where = f"[experiments.{exp.name}] data"
    objective = str(canonicalize(exp.params).get("objective", "")).lower()
    if not data.is_ranking and (objective in ("lambdarank", "rank_xendcg") or exp.metric.startswith("ndcg")):
        raise ConfigError(f"{where}: objective {objective!r} / metric {exp.metric!r} need query groups, but the "
                          f"data have none ({data.description})")
    splits = (("training", data.train), ("validation", data.valid))
    for name, split in splits:
        if split.num_rows == 0:
            raise ConfigError(f"{where}: the {name} split has no rows ({data.description})")
        try:
            check_finite(f"the {name} split's label", split.y)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    losses: dict[str, Any] = {}
    for method in methods:
        try:
            loss = resolve_loss(canonicalize({**exp.params, **method.lgb_params}))
        except (TypeError, ValueError):
            continue  # an objective only stock LightGBM knows: the pre-flight run asks LightGBM
        losses.setdefault(repr(loss), loss)
    for loss in losses.values():
        for name, split in splits:
            try:
                loss.validate(Target(label=split.y, group=split.group if loss.needs_group else None))
            except ValueError as exc:
                raise ConfigError(f"{where}: the {name} split does not fit {loss!r}: {error_text(exc)}") from None


@contextmanager
def _native_stderr_captured() -> Iterator[None]:
    """Send what C++ code writes to file descriptor 2 into a discarded temporary file.

    LightGBM prints ``[LightGBM] [Fatal] ...`` to stderr itself before raising; the
    pre-flight run reports the error once, as one line, so that print is dropped.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _auto_stand_in(method: MethodSpec, exp: Experiment, data: ExperimentData, seed: int) -> Sampler | None:
    """For an ``auto`` method, the sampler ``sampler="auto"`` chooses on the whole data.

    On the pre-flight's first rows ``auto`` would choose stock LightGBM (small data), so its
    timed run on the whole data would compile the chosen sampler's kernels on the clock.
    None for any other method, and where the whole data get stock LightGBM too.
    """
    if method.kind != "auto":
        return None
    from .._engine import auto_choice

    train_set, _ = make_datasets(data)  # unconstructed: auto reads its shape, nothing is binned
    return auto_choice(run_params(method, exp, seed), train_set, exp.rounds_of(method)).sampler()


def _preflight_part(exp: Experiment, methods: list[MethodSpec], rounds: int, twins: str) -> None:
    """A child process's share of :func:`compile_side_by_side`: one experiment's pre-flight,
    the serial or the parallel twins' part."""
    try:
        with _native_stderr_captured():
            preflight(exp, load_data(exp.data), methods, rounds, twins)
    except Exception:  # noqa: BLE001 (the parent's own pre-flight reports it, naming the method)
        pass


def compile_side_by_side(plan: Sequence[tuple[Experiment, list[MethodSpec]]], rounds: int) -> bool:
    """Pre-fly the experiments in child processes, side by side, one per core.

    The pre-flight's warm-up compiles each method's numba kernels into numba's on-disk cache
    (:func:`preflight`), one kernel after another on one core.  With two or more experiments
    and cores, child processes take each experiment's serial and parallel twins' warm-up as
    two tasks, the next one whenever a process is free, and compile at once; the
    pre-flights of this process then load the kernels from the cache, and still check
    everything.  Nothing is gained where the cache already holds them, or where numba cannot
    write its cache (each child's work is then lost, and this process compiles as before).

    Returns whether children ran (two or more experiments and cores, and a warm-up).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = min(len(plan), os.cpu_count() or 1)
    if workers < 2 or rounds < 2:
        return False
    # spawn: a fresh interpreter (no fork of this process's OpenMP and numba thread pools);
    # two tasks per experiment (its serial and its parallel twins), so that a process that
    # is done takes the next one
    tasks = [(exp, list(methods), twins) for exp, methods in plan for twins in ("serial", "parallel")]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in [pool.submit(_preflight_part, exp, methods, rounds, twins) for exp, methods, twins in tasks]:
            try:
                future.result()
            except Exception:  # noqa: BLE001 (a child that died: this process compiles what it left)
                pass
    return True


def preflight(exp: Experiment, data: ExperimentData, methods: Sequence[MethodSpec], rounds: int,
              twins: str = "both") -> None:
    """Run each method for ``rounds`` rounds on the first rows of the data, untimed.

    It catches what only LightGBM or the engine can judge (``num_leaves = 1``, a parameter
    value out of range, labels of a stock-only objective) before the timed runs, and
    compiles (or loads from cache) the numba kernels, which would otherwise be charged to
    the first timed iteration.  A warm-up (``rounds > 1``) runs each method a second time
    with every row kernel on its parallel twin (:func:`smart_lgbm._numba.row_kernel.parallel_from`):
    on its few rows the pre-flight alone would compile only the serial twins, and the timed
    runs on the whole data would then compile the parallel ones on the clock.  The rate
    solve's data-dependent kernels, which a few rows may never call, are compiled for the
    layouts the warm-up used (:func:`smart_lgbm.samplers.rate_solve.compile_rate_solve`).
    ``twins``: ``"serial"`` or ``"parallel"`` runs only that part (the child processes of
    :func:`compile_side_by_side` share an experiment's warm-up so).

    Raises
    ------
    ConfigError
        ``[experiments.E] method 'M' cannot train: <LightGBM's or the engine's message>``.
    """
    small = head(data, PREFLIGHT_ROWS)
    for method in methods:
        try:
            with _native_stderr_captured():
                seed = method_seeds(method, exp)[0]
                sampler = _auto_stand_in(method, exp, data, seed)
                if twins != "parallel":
                    run_method(method, exp, small, seed, rounds=min(rounds, exp.rounds_of(method)), sampler=sampler)
                if rounds > 1 and not method.is_peer and twins != "serial":  # the warm-up's parallel twins
                    compile_rate_solve()
                    with parallel_from(0):
                        run_method(method, exp, small, seed, rounds=min(rounds, exp.rounds_of(method)),
                                   sampler=sampler)
                        compile_rate_solve()
        except (ValueError, TypeError, lgb.basic.LightGBMError) as exc:
            raise ConfigError(f"[experiments.{exp.name}] method {method.label!r} cannot train: "
                              f"{error_text(exc)}") from None
