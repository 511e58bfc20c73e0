"""``smart_lgbm.warmup()`` / ``smart-lgbm warmup`` and the one-line notice of a first compilation."""

from __future__ import annotations

import logging
import subprocess
import sys
import types

import numpy as np
import pytest
from numba import njit

import smart_lgbm as sl
from smart_lgbm import cli
from smart_lgbm._numba import notice

# Row kernels every recommended method runs: after a warmup both their twins are compiled.
_KERNELS = (
    "smart_lgbm._engine._refit_kernels.add_by_leaf", "smart_lgbm._engine._refit_kernels.walk_leaf_sums",
    "smart_lgbm._engine._sweep_kernels.gradients_statistics", "smart_lgbm._engine._sweep_kernels.one_column",
    "smart_lgbm._engine.walk._encode_kernels.encode_dense", "smart_lgbm._engine.walk._kernels.encode_sparse",
    "smart_lgbm._engine.walk._bitmask_kernels.walk_bitmask", "smart_lgbm.samplers._draw_kernels.draw",
    "smart_lgbm.samplers._draw_kernels.gather", "smart_lgbm.samplers._rate_solve_kernels.scan",
    "smart_lgbm.samplers._adaptive_kernels.leaf_sums_one_column",
)

_CHECK = """
import smart_lgbm as sl
from smart_lgbm._numba.row_kernel import REGISTRY
import importlib
names = {names!r}
for name in names:
    importlib.import_module(name.rsplit(".", 1)[0])
before = [n for n in names if REGISTRY[n].serial.signatures or REGISTRY[n].parallel.signatures]
assert not before, before  # a fresh process has compiled (or loaded) nothing yet
done = sl.warmup(processes=1)
missing = [n for n in names if not (REGISTRY[n].serial.signatures and REGISTRY[n].parallel.signatures)]
assert not missing, missing
print(len(done))
"""


def test_warmup_compiles_both_twins_of_the_recommended_methods_kernels():
    out = subprocess.run([sys.executable, "-c", _CHECK.format(names=_KERNELS)], capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    # 4 tasks (binary also float32 and CSR) x 2 methods x 2 twins
    assert int(out.stdout.strip().splitlines()[-1]) == (3 + 3) * 2 * 2
    assert "compiling smart-lgbm's kernels once" not in out.stderr  # warmup says what it does itself


def test_warmup_refuses_a_bad_progress():
    with pytest.raises(TypeError, match="progress must be a callable"):
        sl.warmup(progress="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="processes must be an int >= 1 or None, got 0"):
        sl.warmup(processes=0)


def test_warmup_splits_the_twins_between_processes(monkeypatch):
    """processes=2: the serial twins' trainings in one process, the parallel twins' in
    another, their lines merged in that order (the pool here runs them in this process)."""
    from concurrent.futures import Future

    from smart_lgbm import _warmup

    submitted = []

    class Pool:
        def __init__(self, workers, mp_context=None):
            submitted.append(("workers", workers, mp_context.get_start_method()))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, twins):
            submitted.append(twins)
            future = Future()
            future.set_result([f"x, {twins}"])
            return future

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", Pool)
    lines = []
    assert _warmup.warmup(progress=lines.append, processes=2) == ["x, serial twins", "x, parallel twins"]
    assert lines == ["warmup: x, serial twins", "warmup: x, parallel twins"]
    assert submitted == [("workers", 2, "spawn"), "serial twins", "parallel twins"]


def test_cli_has_the_warmup_command(monkeypatch, capsys):
    calls = []

    def fake(progress=None):
        progress("warmup: binary, dense float64, FirstOrder, serial twins")
        calls.append(progress)
        return ["one"]

    monkeypatch.setattr("smart_lgbm._warmup.warmup", fake)
    assert cli.main(["warmup"]) == 0
    err = capsys.readouterr().err
    assert len(calls) == 1
    assert "warmup: binary, dense float64" in err and "smart-lgbm warmup: 1 trainings" in err
    assert "warmup" in cli._parser().format_help()


def _package_kernel(name: str):
    """A numba function that numba sees as one of the package's (its module is smart_lgbm.*)."""
    def f(x):
        return x + 1

    func = types.FunctionType(f.__code__, {}, name)
    func.__module__ = "smart_lgbm._test_notice"
    func.__qualname__ = name
    return njit(func)


def test_first_compilation_is_said_once_and_only_inside_the_block(monkeypatch, caplog):
    monkeypatch.setattr(notice, "_SAID", False)
    outside = _package_kernel("outside")
    with caplog.at_level(logging.WARNING, logger="smart_lgbm"):
        outside(1)  # no notice outside compile_notice()
        assert not caplog.records
        mine = njit(lambda x: x * 2)  # a user's own numba function: not the package's
        with notice.compile_notice():
            mine(1.0)
            assert not caplog.records
            first, second = _package_kernel("first"), _package_kernel("second")
            first(1)
            second(np.float64(1.0))
            first(2.0)
        with notice.compile_notice():
            _package_kernel("third")(1)
    lines = [r.getMessage() for r in caplog.records if r.name == "smart_lgbm"]
    assert lines == [notice.NOTICE]
    assert "smart-lgbm warmup" in notice.NOTICE and "once" in notice.NOTICE


def test_quiet_holds_the_notice_back_only_inside(monkeypatch, caplog):
    monkeypatch.setattr(notice, "_SAID", False)
    with caplog.at_level(logging.WARNING, logger="smart_lgbm"):
        with notice.quiet(), notice.compile_notice():
            _package_kernel("quiet")(1)
        assert not caplog.records
        with notice.compile_notice():
            _package_kernel("loud")(1)
    assert [r.getMessage() for r in caplog.records] == [notice.NOTICE]


def test_training_watches_for_the_first_compilation(monkeypatch):
    import contextlib

    import lightgbm as lgb

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield

    monkeypatch.setattr("smart_lgbm._engine.training.compile_notice", recording)
    X = np.random.default_rng(0).normal(size=(300, 3))
    sl.train({"objective": "regression", "verbosity": -1}, lgb.Dataset(X, X[:, 0]), 2, sampler=sl.FirstOrder(0.5))
    assert entered == [True]
