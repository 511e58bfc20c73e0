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
from .data import ExperimentData, head
from .methods import method_seeds, run_method

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


def preflight(exp: Experiment, data: ExperimentData, methods: Sequence[MethodSpec], rounds: int) -> None:
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

    Raises
    ------
    ConfigError
        ``[experiments.E] method 'M' cannot train: <LightGBM's or the engine's message>``.
    """
    small = head(data, PREFLIGHT_ROWS)
    for method in methods:
        try:
            with _native_stderr_captured():
                run_method(method, exp, small, method_seeds(method, exp)[0], rounds=min(rounds, exp.rounds_of(method)))
                if rounds > 1 and not method.is_peer:  # the warm-up: the parallel twins too (docstring)
                    compile_rate_solve()
                    with parallel_from(0):
                        run_method(method, exp, small, method_seeds(method, exp)[0],
                                   rounds=min(rounds, exp.rounds_of(method)))
                        compile_rate_solve()
        except (ValueError, TypeError, lgb.basic.LightGBMError) as exc:
            raise ConfigError(f"[experiments.{exp.name}] method {method.label!r} cannot train: "
                              f"{error_text(exc)}") from None
