#!/usr/bin/env python
"""Per-iteration cost of binary, multiclass (K trees) and L2 regression: the engine's parts
against stock LightGBM's whole iterations.

For each task (synthetic data the size of the comparison configs' training splits:
binary 500,000 x 30 as in issue #37's measurement, ``configs/multiclass-like.toml``'s
400,000 x 40 with 5 classes, ``configs/regression-like.toml``'s 400,000 x 40), with the
configs' tree parameters (learning rate 0.1, 31 leaves, min_data_in_leaf 100):

1. **Whole iterations**, ms per iteration (median over ``--repeats`` iterations after
   ``--warmup`` untimed ones; training rows only, no validation set):

   * stock LightGBM: full, GOSS (0.05 + 0.05: it samples only after its first 10
     iterations, inside the warm-up), bagging (0.1), quantised gradients: each
     ``Booster.update()`` timed;
   * the engine: FirstOrder(0.1), FirstOrder(rate="auto", refit_leaves=True) and
     MVS(rate="auto", refit_leaves=True), with the engine's own split of each iteration
     (``smart_lgbm.record_sampling``): *sample* (gradients of all rows unless the previous
     iteration's fused pass made them, the rate solve and the draw), *tree* (LightGBM's K
     trees on the sample, its subset copy included) and *update* (every row's new scores: the
     walk of the K new trees, and with the fused pass the next iteration's gradients), and the
     mean sampling rate.

2. **The parts alone**, ms (median over ``--repeats``), at the scores of a stock model
   after ``--warmup`` iterations:

   * the loss's gradients of all rows (K columns for multiclass);
   * FirstOrder's and MVS's rate solve, draw and gather at rate 0.1 (their importance
     reads all K columns: the Euclidean norm of a row's K gradients, MVS also its K
     hessians);
   * LightGBM's K trees on a 10% sample (a Dataset of the sampled rows binned like the whole
     one, custom gradients): the floor of a sampled iteration;
   * the coded walk of one iteration's K trees over all rows (what the engine's update does).

The last lines of each task put the engine's iteration beside stock GOSS's.

Usage: python scripts/profile_tasks.py [--tasks binary multiclass regression] [--threads 2]
       [--repeats 10] [--warmup 15] [--quick] [--out FILE]

Default output ``docs/results/profile_tasks.md`` (``--quick``: 1/20 of the rows, a smoke
run, written to ``profile_tasks_quick.md``). A timing: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smart_lgbm as sl  # noqa: E402
from smart_lgbm import _lightgbm as L  # noqa: E402
from smart_lgbm.datasets.synthetic import make_dense_binary, make_dense_multiclass, make_dense_regression  # noqa: E402
from smart_lgbm._engine.params import resolve_loss  # noqa: E402
from smart_lgbm.samplers import FirstOrder, GradientHistory, SamplingState  # noqa: E402
from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures, add_coded_outputs  # noqa: E402

#: task -> (description, rows, data maker, objective parameters)
TASKS: dict[str, tuple[str, int, Callable[[int], tuple[np.ndarray, np.ndarray]], dict[str, Any]]] = {
    "binary": ("synthetic dense binary (make_dense_binary), 30 features", 500_000,
               lambda n: make_dense_binary(n, 30, seed=0), {"objective": "binary"}),
    "multiclass": ("synthetic dense multiclass (make_dense_multiclass), 40 features, 5 classes", 400_000,
                   lambda n: make_dense_multiclass(n, 40, 5, seed=0), {"objective": "multiclass", "num_class": 5}),
    "regression": ("synthetic dense L2 regression (make_dense_regression), 40 features", 400_000,
                   lambda n: make_dense_regression(n, 40, seed=0), {"objective": "regression"}),
}
TREE = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 100, "verbosity": -1}
STOCK = {
    "stock full": {},
    "stock GOSS (0.05 + 0.05)": {"data_sample_strategy": "goss", "top_rate": 0.05, "other_rate": 0.05},
    "stock bagging (0.1)": {"bagging_fraction": 0.1, "bagging_freq": 1},
    "stock quantised gradients": {"use_quantized_grad": True},
}
ENGINE: dict[str, Callable[[], sl.Sampler]] = {
    "FirstOrder(0.1)": lambda: sl.FirstOrder(rate=0.1),
    "FirstOrder(auto, refit)": lambda: sl.FirstOrder(rate="auto", refit_leaves=True),
    "MVS(auto, refit)": lambda: sl.MVS(rate="auto", refit_leaves=True),
}


def _median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def _timed(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # once untimed (compilation, first touch)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return _median_ms(times)


def whole_iterations(X: np.ndarray, y: np.ndarray, params: dict[str, Any], warmup: int,
                     repeats: int) -> list[str]:
    rows = ["| method | ms / iteration | rate | engine: sample ms | tree ms | update ms |", "|---|---|---|---|---|---|"]
    per_iteration: dict[str, float] = {}
    for label, extra in STOCK.items():
        booster = lgb.Booster({**params, **extra}, lgb.Dataset(X, y))
        times = []
        for i in range(warmup + repeats):
            t0 = time.perf_counter()
            booster.update()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        per_iteration[label] = _median_ms(times)
        rows.append(f"| {label} | {per_iteration[label]:.1f} | | | | |")
    for label, make in ENGINE.items():
        record: dict[str, list[Any]] = {}
        sl.train(params, lgb.Dataset(X, y), warmup + repeats, sampler=make(), callbacks=[sl.record_sampling(record)])
        last = slice(warmup, None)
        ms = {key: _median_ms(record[key][last]) for key in ("seconds", "sample_seconds", "tree_seconds",
                                                               "update_seconds")}
        per_iteration[label] = ms["seconds"]
        rate = float(np.mean(record["sampling_rate"][last]))
        rows.append(f"| engine {label} | {ms['seconds']:.1f} | {rate:.3f} | {ms['sample_seconds']:.1f} | "
                    f"{ms['tree_seconds']:.1f} | {ms['update_seconds']:.1f} |")
    goss = per_iteration["stock GOSS (0.05 + 0.05)"]
    rows += ["", "Per iteration against stock GOSS's (below 1: the engine's iteration is cheaper): "
             + ", ".join(f"{label} {per_iteration[label] / goss:.2f}" for label in ENGINE) + "."]
    return rows


def parts(X: np.ndarray, y: np.ndarray, params: dict[str, Any], warmup: int, repeats: int) -> list[str]:
    n = X.shape[0]
    dataset = lgb.Dataset(X, y, params={"verbosity": -1, "is_enable_sparse": False}).construct()
    booster = lgb.train(params, dataset, warmup)
    k = booster.num_model_per_iteration()
    raw = booster.predict(X, raw_score=True).reshape(n, k) if k > 1 else booster.predict(X, raw_score=True)
    raw = np.ascontiguousarray(raw, dtype=np.float64)
    loss = resolve_loss(dict(params))
    target = sl.losses.Target(label=np.asarray(y, dtype=np.float32).astype(np.float64))
    g, h = np.empty(raw.shape, np.float32), np.empty(raw.shape, np.float32)
    out: dict[str, float] = {}
    out[f"gradients of all rows ({k} column{'s' if k > 1 else ''})"] = _timed(
        lambda: loss.compute_gradients(raw, target, g, h), repeats)
    loss.compute_gradients(raw, target, g, h)
    sample = None
    for name, sampler in (("FirstOrder", FirstOrder(rate=0.1)), ("MVS", sl.MVS(rate=0.1))):
        def draw(sampler: sl.Sampler = sampler, it: list[int] = [0]) -> Any:  # noqa: B006 (the draw counter)
            it[0] += 1
            state = SamplingState(it[0], g, h, raw, loss, target, GradientHistory())
            return sampler.sample(state, np.random.default_rng(it[0]))

        out[f"{name}(0.1): importance over {k} column{'s' if k > 1 else ''}, rate solve, draw, gather"] = _timed(
            draw, repeats)
        if sample is None:
            sample = draw()
    assert sample is not None
    # LightGBM's K trees on the sample: the sampled rows binned as the whole data
    idx = np.sort(sample.indices)
    sub = lgb.Dataset(X[idx], y[idx], reference=dataset, params={"verbosity": -1, "is_enable_sparse": False}).construct()
    fit_g = np.asarray(sample.grad, dtype=np.float64).reshape(len(idx), -1)
    fit_h = np.asarray(sample.hess, dtype=np.float64).reshape(len(idx), -1)

    def fobj(preds: np.ndarray, data: lgb.Dataset) -> tuple[np.ndarray, np.ndarray]:
        return (fit_g, fit_h) if k > 1 else (fit_g[:, 0], fit_h[:, 0])

    tree_booster = lgb.Booster({**params, "objective": "none", "num_class": k}, sub)
    out[f"LightGBM: {k} tree{'s' if k > 1 else ''} on the {len(idx) / n:.3f} sample (custom gradients)"] = _timed(
        lambda: tree_booster.update(fobj=fobj), repeats)
    # the walk of one iteration's K trees over every row, on bin codes (the engine's update)
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(dataset)))
    codes = book.encode(RawFeatures.from_data(X))
    texts = L.tree_bodies(booster.model_to_string())[-k:]
    coded = book.coded_forest(Forest.from_tree_texts(texts))
    scores = np.zeros((n, k))
    out[f"coded walk of {k} tree{'s' if k > 1 else ''} over all rows"] = _timed(
        lambda: add_coded_outputs(codes, coded, scores), repeats)
    return ["| part | ms (median) |", "|---|---|"] + [f"| {key} | {value:.2f} |" for key, value in out.items()]


def profile(task: str, threads: int, repeats: int, warmup: int, quick: bool) -> list[str]:
    desc, rows, make, objective = TASKS[task]
    n = rows // 20 if quick else rows
    X, y = make(n)
    params = {**TREE, **objective, "num_threads": threads}
    lines = [f"## {task}: {desc}, {n:,} training rows", "", "Whole iterations:", ""]
    lines += whole_iterations(X, y, params, warmup, repeats)
    lines += ["", "The parts alone:", ""]
    lines += parts(X, y, params, warmup, repeats)
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--threads", type=int, default=2, help="LightGBM's num_threads and numba's threads (default 2)")
    ap.add_argument("--repeats", type=int, default=10, help="timed iterations / repeats (default 10)")
    ap.add_argument("--warmup", type=int, default=15, help="untimed iterations first (default 15; >= 10 for GOSS)")
    ap.add_argument("--quick", action="store_true", help="1/20 of the rows: a smoke run")
    ap.add_argument("--out", default=None, help="output file (default docs/results/profile_tasks.md; with "
                                                "--quick, profile_tasks_quick.md)")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.repeats < 1 or args.warmup < 1:
        ap.error("--threads, --repeats and --warmup must be >= 1")
    out = Path(args.out or ROOT / "docs/results" / ("profile_tasks_quick.md" if args.quick else "profile_tasks.md"))
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    lines = ["# Per-iteration cost by task: the engine's parts against stock LightGBM", "",
             f"Command: `python scripts/profile_tasks.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
             .rstrip(), "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads, Python "
             f"{platform.python_version()}, lightgbm {lgb.__version__}, numba {numba.__version__}. Medians over "
             f"{args.repeats} iterations or repeats after {args.warmup} warm-up iterations. Synthetic data.", ""]
    for task in args.tasks:
        lines += profile(task, args.threads, args.repeats, args.warmup, args.quick)
        print("\n".join(lines[-30:]), file=sys.stderr, flush=True)
    from smart_lgbm.compare.io import write_text

    write_text(out, "\n".join(lines))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
