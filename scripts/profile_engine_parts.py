#!/usr/bin/env python
"""Where one engine iteration's time goes, step by step, and what the alternatives cost.

For each data set (all synthetic but a9a, which is real): the steps of one iteration as
the engine makes them, timed one by one (median over repeats, ms) on FirstOrder's sample
of the gradients at the model's scores after a few stock iterations:

* gradients of all rows (compiled), the sampler's rate solve + draw + gather (compiled);
* LightGBM: subset copy, reset to the subset, the tree (``UpdateOneIterCustom``), model
  text, then either the park (reset to a one-row Dataset) + rollback, as the engine does,
  or the rollback on the sample's rows (the alternative: one reset, but the rollback walks
  the sample);
* the tree's parsing (text -> ``Forest`` -> coded forest);
* every row's output of the tree: the coded walk (what the engine does on dense data),
  the raw-feature walk, and LightGBM's binned predictor (the old engine's read-out: a reset
  to the whole training set and ``GetPredict``);
* once per run: LightGBM's binning of the data, reading its bin mappers, coding the data.

The sparse set is also binned with LightGBM's sparse storage, to show what the engine's
dense storage of sparse data (``engine_data._storage_params``) saves on subset and reset.

The kernels that touch every row (gradients, the sampler, the two walks) get a second
table: their bytes, ms at 1 thread, at 2 threads and at ``--threads``, the bandwidth they
reach (bytes / time) and their parallel efficiency from 1 to 2 threads,
``t(1 thread) / (2 * t(2 threads))`` (1.0: perfect scaling).  Bytes are the all-rows
arrays each kernel must read or write once, counted once each (a kernel that reads an
array twice still counts it once, so the figure is the bandwidth it *delivers*, a lower
bound on what it moves):

* gradients: the float64 scores and labels read, the float32 gradients and hessians
  written (24 bytes a row);
* sampler: the float32 gradients and hessians read (8 bytes a row) plus, per sampled
  row, its int32 index and float32 fitting gradient and hessian written;
* coded walk: the whole code matrix read (``codes.nbytes``) plus the float64 outputs read
  and written (16 bytes a row);
* raw-feature walk: the whole raw feature matrix read (for CSR data its data, indices and
  row pointers) plus the float64 outputs read and written.

Usage: python scripts/profile_engine_parts.py [--repeats 7] [--threads 2] [--quick] [--out FILE]

``--threads N`` (default 2) sets LightGBM's ``num_threads`` and numba's thread count;
the default output is ``docs/results/profile_engine_parts.md`` at 2 threads and
``profile_engine_parts_{N}threads.md`` otherwise.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from smart_lgbm import _lightgbm as L  # noqa: E402
from smart_lgbm._engine.run import class_major_float32  # noqa: E402
from smart_lgbm._engine.draw import iteration_rng  # noqa: E402
from smart_lgbm.losses import BinaryLogloss, Target  # noqa: E402
from smart_lgbm.samplers import FirstOrder, GradientHistory, SamplingState  # noqa: E402
from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures, add_coded_outputs, add_outputs  # noqa: E402
from smart_lgbm._numba import kernel_constants as kc  # noqa: E402

#: name -> (description, rows, features, leaves, rate)
CASES = {
    "higgs-like": ("synthetic dense binary, 2,000,000 x 28 float32", 2_000_000, 28, 63, 0.1),
    "mslr-sized": ("synthetic dense binary, 720,000 x 136 float32", 720_000, 136, 31, 0.1),
    "400k-60": ("synthetic dense binary, 400,000 x 60 float32", 400_000, 60, 31, 0.1),
    "yahoo-like": ("synthetic sparse (make_yahoo_like), 470,000 x 700 CSR", 470_000, 700, 31, 0.1),
    "a9a": ("real LIBSVM a9a, 32,561 x 123 sparse", 32_561, 123, 31, 0.3),
}


def _data(name: str, quick: bool):
    scale = 10 if quick else 1
    _, n, f, _, _ = CASES[name]
    if name == "a9a":
        from smart_lgbm.datasets.bundled import load_a9a

        (X, y), _ = load_a9a()
        return X, y
    if name == "yahoo-like":
        from smart_lgbm.datasets.synthetic_sparse_ranking import make_yahoo_like

        X, label, _ = make_yahoo_like(n // scale, f, seed=0)
        return X, (label >= 2).astype(np.float64)
    from smart_lgbm.datasets.synthetic import make_dense_binary

    return make_dense_binary(n // scale, f, seed=0)


def _ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


DEFAULT_THREADS = 2


def results_name(stem: str, threads: int) -> str:
    """Output file name: ``stem.md`` at the default 2 threads (the name docs link to),
    ``stem_{N}threads.md`` otherwise."""
    return f"{stem}.md" if threads == DEFAULT_THREADS else f"{stem}_{threads}threads.md"


def _nbytes(a) -> int:
    """Bytes of a dense array, or of a CSR matrix's three arrays."""
    if hasattr(a, "indptr"):
        return a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
    return int(np.asarray(a).nbytes)


def _scaling(kernels: dict, threads: int, repeats: int) -> list[str]:
    """Each all-rows kernel at 1, 2 and ``threads`` threads: ms, GB/s, 1->2 efficiency.

    ``kernels`` maps a label to ``(fn, bytes)``.  Thread counts are interleaved within each
    repeat so that load drifts hit them alike.
    """
    counts = sorted({1, 2, threads})
    times: dict[tuple[str, int], list[float]] = {}
    before = numba.get_num_threads()
    try:
        for _ in range(repeats):
            for t in counts:
                numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
                for label, (fn, _) in kernels.items():
                    t0 = time.perf_counter()
                    fn()
                    times.setdefault((label, t), []).append(time.perf_counter() - t0)
    finally:
        numba.set_num_threads(before)
    med = {key: statistics.median(v[1:] if len(v) > 2 else v) for key, v in times.items()}
    head = " | ".join(f"ms at {t} thread{'s' if t > 1 else ''}" for t in counts)
    lines = ["", f"All-rows kernels (numba threads as stated; bytes counted as in the script's docstring):", "",
             f"| kernel | MB | {head} | GB/s at {threads} thread{'s' if threads > 1 else ''} | "
             "efficiency 1 -> 2 threads |",
             "|---|---|" + "---|" * len(counts) + "---|---|"]
    for label, (_, nbytes) in kernels.items():
        ms = " | ".join(f"{1000 * med[(label, t)]:.2f}" for t in counts)
        gbs = nbytes / med[(label, threads)] / 1e9
        eff = med[(label, 1)] / (2 * med[(label, 2)])
        lines.append(f"| {label} | {nbytes / 1e6:.1f} | {ms} | {gbs:.1f} | {eff:.2f} |")
    return lines


def profile(name: str, repeats: int, quick: bool, threads: int = DEFAULT_THREADS) -> list[str]:
    desc, _, _, leaves, rate = CASES[name]
    X, y = _data(name, quick)
    n = X.shape[0]
    out: dict[str, float] = {}
    storage = {"verbosity": -1, "is_enable_sparse": False}
    t0 = time.perf_counter()
    ds = lgb.Dataset(X, y, params=storage).construct()
    out["once: LightGBM bins the data (s)"] = time.perf_counter() - t0
    handle = L.handle_of(ds)
    t0 = time.perf_counter()
    book = CodeBook.from_mappers(L.bin_mappers(handle))
    out["once: read LightGBM's bin mappers (s)"] = time.perf_counter() - t0
    raw = RawFeatures.from_data(X)
    book.encode(RawFeatures.from_data(X[:100]))  # compile
    t0 = time.perf_counter()
    codes = book.encode(raw)
    out["once: code the raw features (s)"] = time.perf_counter() - t0
    lgb_threads = f"num_threads={threads} verbosity=-1"
    params = (f"objective=custom metric=None verbosity=-1 num_leaves={leaves} min_data_in_leaf=100 "
              f"learning_rate=0.1 num_class=1 force_col_wise=true num_threads={threads}")
    fitter = L.OneIterationBooster(params, 1, handle, lgb_threads)
    # realistic scores: a few stock iterations
    booster = lgb.train({"objective": "binary", "num_leaves": leaves, "verbosity": -1, "num_threads": threads},
                        ds, 5)
    scores = booster.predict(X, raw_score=True)
    loss, target = BinaryLogloss(), Target(label=np.asarray(y, dtype=np.float64))
    g, h = np.empty(n, np.float32), np.empty(n, np.float32)
    sampler = FirstOrder(rate=rate)
    state = SamplingState(0, g, h, scores, loss, target, GradientHistory())
    loss.compute_gradients(scores, target, g, h)
    sampler.sample(state, iteration_rng(0, 0))  # compile
    steps: dict[str, list[float]] = {}
    finished = ctypes.c_int(0)
    out_all = np.zeros((n, 1))
    for it in range(repeats):

        def tick(key: str, since: float) -> float:
            now = time.perf_counter()
            steps.setdefault(key, []).append(1000 * (now - since))
            return now

        t = time.perf_counter()
        loss.compute_gradients(scores, target, g, h)
        t = tick("gradients of all rows (compiled)", t)
        sample = sampler.sample(state, iteration_rng(0, it))
        t = tick("FirstOrder: rate solve, draw, gather (compiled)", t)
        gg, hh = class_major_float32(sample.grad), class_major_float32(sample.hess)
        sub = L.SubsetHandle(handle, sample.indices, lgb_threads)
        t = tick("LightGBM: subset copy", t)
        L._check(L._LIB.LGBM_BoosterResetTrainingData(fitter.handle, sub.handle))
        t = tick("LightGBM: reset to the sample", t)
        L._check(L._LIB.LGBM_BoosterUpdateOneIterCustom(
            fitter.handle, gg.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            hh.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), ctypes.byref(finished)))
        t = tick("LightGBM: the tree on the sample", t)
        text = L.tree_bodies(fitter._buffer.model_string(fitter.handle))
        t = tick("LightGBM: model text", t)
        forest = Forest.from_tree_texts(text)
        coded = book.coded_forest(forest)
        t = tick("parse the tree (text -> forest -> coded forest)", t)
        if it % 2 == 0:  # the engine's way
            L._check(L._LIB.LGBM_BoosterResetTrainingData(fitter.handle, fitter._parked.handle))
            L._check(L._LIB.LGBM_BoosterRollbackOneIter(fitter.handle))
            t = tick("park (reset to one row) + rollback [engine]", t)
        else:  # one reset only: the rollback subtracts the tree from the sample's scores
            L._check(L._LIB.LGBM_BoosterRollbackOneIter(fitter.handle))
            t = tick("rollback on the sample's rows [alternative]", t)
            L._check(L._LIB.LGBM_BoosterResetTrainingData(fitter.handle, fitter._parked.handle))
            t = time.perf_counter()
        add_coded_outputs(codes, coded, out_all)
        t = tick("coded walk of all rows [engine]", t)
        add_outputs(raw, forest, out_all)
        t = tick("raw-feature walk of all rows", t)
        sub.free()
        # the old engine's read-out: the Booster pointed at the whole training set
        steps.setdefault("LightGBM's binned predictor over all rows [old engine]", []).append(
            _binned_read_out(fitter, handle, n, gg, hh, sample.indices, lgb_threads))
    last_forest, last_coded = forest, coded
    fitter.free()
    lines = [f"## {name}: {desc}; {leaves} leaves, FirstOrder(rate={rate})", "",
             "| step | ms (median) |", "|---|---|"]
    lines += [f"| {key} | {statistics.median(v[1:] if len(v) > 2 else v):.2f} |" for key, v in steps.items()]
    lines += [f"| {key} | {value:.2f} |" for key, value in out.items()]
    n_sampled = sample.indices.shape[0]
    kernels = {
        "gradients of all rows": (lambda: loss.compute_gradients(scores, target, g, h),
                                  scores.nbytes + target.label.nbytes + g.nbytes + h.nbytes),
        "FirstOrder: rate solve, draw, gather": (lambda: sampler.sample(state, iteration_rng(0, 1)),
                                                 g.nbytes + h.nbytes + 12 * n_sampled),
        "coded walk of all rows [engine]": (lambda: add_coded_outputs(codes, last_coded, out_all),
                                            codes.codes.nbytes
                                            + 2 * out_all.nbytes),
        "raw-feature walk of all rows": (lambda: add_outputs(raw, last_forest, out_all),
                                         _nbytes(X) + 2 * out_all.nbytes),
    }
    lines += _scaling(kernels, threads, repeats)
    lines += ["", "The end of an iteration, unfused against the fused pass (smart_lgbm._engine.sweep), interleaved:", ""]
    lines += fused_pass_rows(codes, last_coded, scores, y, rate, repeats)
    if name == "yahoo-like":
        lines += _sparse_storage(X, y, rate, repeats, lgb_threads)
    return lines + [""]


def _binned_read_out(fitter, handle, n, gg, hh, indices, lgb_threads: str) -> float:
    """ms to add a fresh tree's output to every training row through LightGBM's binned predictor."""
    sub = L.SubsetHandle(handle, indices, lgb_threads)
    finished = ctypes.c_int(0)
    fitter._point_at(sub.handle)
    L._check(L._LIB.LGBM_BoosterUpdateOneIterCustom(
        fitter.handle, gg.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
        hh.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), ctypes.byref(finished)))
    t0 = time.perf_counter()
    fitter._point_at(handle)  # reset to all rows: LightGBM walks them to rebuild the scores
    buf = np.empty(n)
    got = ctypes.c_int64(0)
    L._check(L._LIB.LGBM_BoosterGetPredict(fitter.handle, ctypes.c_int(0), ctypes.byref(got),
                                           buf.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
    elapsed = 1000 * (time.perf_counter() - t0)
    fitter._point_at(fitter._parked.handle)
    L._check(L._LIB.LGBM_BoosterRollbackOneIter(fitter.handle))
    sub.free()
    return elapsed


def fused_pass_rows(codes, coded, scores: np.ndarray, y: np.ndarray, rate: float, repeats: int) -> list[str]:
    """The end of an iteration unfused against fused (smart_lgbm._engine.sweep), interleaved, as table rows.

    Unfused: coded walk, the loss's gradients of all rows, FirstOrder's rate solve, draw and
    gather.  Fused: the walk, one sweep for the gradients and the scan's per-block values,
    then the same solve (from those values), draw and gather.  ``codes``/``coded`` the
    BinCodes and one iteration's CodedForest, ``scores`` (n,) raw scores (not modified).
    Self-contained: call it from ``profile`` with the data there to add its rows.
    """
    from smart_lgbm._engine import sweep as fused

    n = scores.shape[0]
    loss, target = BinaryLogloss(), Target(label=np.asarray(y, dtype=np.float64))
    g, h = np.empty(n, np.float32), np.empty(n, np.float32)
    sampler = FirstOrder(rate=rate)
    run = fused.sweep_for(loss, sampler, target, codes, n, 1)
    steps: dict[str, list[float]] = {}

    def unfused(it: int) -> None:
        out = scores.reshape(n, 1).copy()
        t0 = time.perf_counter()
        add_coded_outputs(codes, coded, out)
        t1 = time.perf_counter()
        loss.compute_gradients(out[:, 0], target, g, h)
        t2 = time.perf_counter()
        sampler.sample(SamplingState(it, g, h, out[:, 0], loss, target, GradientHistory()), iteration_rng(0, it))
        t3 = time.perf_counter()
        for key, ms in (("unfused: coded walk", t1 - t0), ("unfused: gradients of all rows", t2 - t1),
                        ("unfused: rate solve, draw, gather", t3 - t2), ("unfused: all", t3 - t0)):
            steps.setdefault(key, []).append(1000 * ms)

    def fused_run(it: int) -> None:
        out = scores.reshape(n, 1).copy()
        t0 = time.perf_counter()
        stats = run.walk(codes, coded, out, None, g, h).statistics
        t1 = time.perf_counter()
        state = SamplingState(it, g, h, out[:, 0], loss, target, GradientHistory(), statistics=stats)
        sampler.sample(state, iteration_rng(0, it))
        t2 = time.perf_counter()
        for key, ms in (("fused: walk + gradients and statistics sweep", t1 - t0),
                        ("fused: rate solve (from the statistics), draw, gather", t2 - t1), ("fused: all", t2 - t0)):
            steps.setdefault(key, []).append(1000 * ms)

    assert run is not None and kc.STATS_SCAN == run.stats
    for it in range(repeats + 1):  # interleaved; the first (compiling) pair dropped below
        unfused(it)
        fused_run(it)
    return ["| step | ms (median) |", "|---|---|"] + [
        f"| {key} | {statistics.median(v[1:]):.2f} |" for key, v in steps.items()]


def _sparse_storage(X, y, rate: float, repeats: int, lgb_threads: str) -> list[str]:
    """Subset + reset and the tree with LightGBM's sparse storage vs the engine's dense one."""
    rows = ["", "Sparse data: LightGBM's sparse storage against the engine's dense storage of its own copy:", "",
            "| storage | subset + reset ms | tree ms |", "|---|---|---|"]
    rng = np.random.default_rng(0)
    for label, params in (("sparse (LightGBM's default)", {}), ("dense (the engine's)", {"is_enable_sparse": False})):
        ds = lgb.Dataset(X, y, params={"verbosity": -1, **params}).construct()
        handle = L.handle_of(ds)
        fitter = L.OneIterationBooster("objective=custom metric=None verbosity=-1 num_leaves=31 num_class=1 "
                                       f"force_col_wise=true {lgb_threads}", 1, handle, "")
        prep, tree = [], []
        for _ in range(repeats):
            idx = np.flatnonzero(rng.random(X.shape[0]) < rate).astype(np.int32)
            g = rng.standard_normal(idx.size).astype(np.float32)
            h = np.full(idx.size, 0.25, np.float32)
            t0 = time.perf_counter()
            sub = L.SubsetHandle(handle, idx, "")
            fitter._point_at(sub.handle)
            t1 = time.perf_counter()
            finished = ctypes.c_int(0)
            L._check(L._LIB.LGBM_BoosterUpdateOneIterCustom(
                fitter.handle, g.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                h.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), ctypes.byref(finished)))
            t2 = time.perf_counter()
            fitter._point_at(fitter._parked.handle)
            L._check(L._LIB.LGBM_BoosterRollbackOneIter(fitter.handle))
            sub.free()
            prep.append(1000 * (t1 - t0))
            tree.append(1000 * (t2 - t1))
        fitter.free()
        rows.append(f"| {label} | {statistics.median(prep):.1f} | {statistics.median(tree):.1f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1/10 of the sizes: a smoke run")
    ap.add_argument("--data", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                    help="LightGBM's num_threads and numba's thread count (default 2)")
    ap.add_argument("--out", default=None,
                    help="output file (default docs/results/profile_engine_parts.md at 2 threads, "
                         "docs/results/profile_engine_parts_{N}threads.md at N threads)")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error(f"--threads must be >= 1, got {args.threads}")
    if args.out is None:
        args.out = str(ROOT / "docs/results" / results_name("profile_engine_parts", args.threads))
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    from smart_lgbm.compare.io import write_text

    lines = ["# One engine iteration, step by step", "",
             f"Command: `python scripts/profile_engine_parts.py {' '.join(sys.argv[1:])}`".rstrip(), "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads, Python {platform.python_version()}, "
             f"lightgbm {lgb.__version__}, numba {numba.__version__}; nothing else running. Medians over "
             f"{args.repeats} repeats (the first dropped); the steps marked [engine] are what an engine iteration "
             "does, the others the alternatives it was measured against.", ""]
    for name in args.data:
        lines += profile(name, args.repeats, args.quick, args.threads)
        print("\n".join(lines[-12:]), file=sys.stderr, flush=True)
    write_text(args.out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
