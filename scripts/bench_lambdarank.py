"""Benchmark LambdaRank: smart_lgbm's numba gradients against stock LightGBM's.

Part 1 (this file's ``bench_gradients``): time to compute LambdaRank gradients and
hessians for every document, ours vs LightGBM's ``LambdarankNDCG``, on the same scores,
measured side by side in one process (repeats interleaved, medians reported).

LightGBM exposes no gradient-only call, so its gradient time is isolated by difference:
a Booster on a one-binary-feature copy of the data (labels, groups and ``init_score`` =
the benchmark scores; 2 leaves, learning rate 1e-12 so the scores stay put) runs one
``update()`` with ``objective="lambdarank"`` and one with ``objective="regression"``.
Both iterations do the same tiny tree work (one feature, two bins); regression's gradient
is a single O(n) pass, so ``t(lambdarank) - t(regression)`` is LightGBM's lambdarank
gradient time (minus that pass, i.e. a slight underestimate in LightGBM's favour).

Ours keeps each query's document order between calls and repairs it (docs/losses.md); each
timed call is preceded by an untimed one on the scores of the iteration before (or by
dropping the kept order, for the first iteration), as in training, so the repair never
starts from an order that is already sorted.

Each measurement runs with ``--threads`` threads (wall clock) and with one thread (CPU
time of the calling thread). On a shared 2-core machine the one-thread CPU figures are
the trustworthy ones: when another process occupies a core, OpenMP's spinning barriers
inflate every multi-threaded wall time, LightGBM's tiny regression iteration included.

Usage::

    python scripts/bench_lambdarank.py                 # 720k docs x 136 features
    python scripts/bench_lambdarank.py --n-docs 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from smart_lgbm.datasets.synthetic_ranking import make_mslr_like  # noqa: E402
from smart_lgbm.losses.base import Target  # noqa: E402
from smart_lgbm.losses.lambdarank import LambdaRank, warmup  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "results" / "bench_lambdarank.md"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-docs", type=int, default=720_000, help="documents in the synthetic MSLR-like set")
    p.add_argument("--n-features", type=int, default=136)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=7, help="timed repeats per measurement (medians reported)")
    p.add_argument("--threads", type=int, default=2, help="threads for LightGBM and numba")
    p.add_argument("--model-rounds", type=int, default=20,
                   help="stock lambdarank rounds producing the realistic score vector")
    p.add_argument("--train-rounds", type=int, default=30,
                   help="rounds per method in part 2 (per-iteration training time); <= 10 skips part 2")
    p.add_argument("--train-repeats", type=int, default=3, help="repeats per method in part 2")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report path")
    return p.parse_args(argv)


def machine_description(threads: int) -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {threads} threads used; Python {platform.python_version()}, "
        f"LightGBM {lgb.__version__}, numba {numba.__version__} ({numba.threading_layer()} threading layer), "
        f"NumPy {np.__version__}"
    )


def model_scores(X: np.ndarray, y: np.ndarray, group: np.ndarray, rounds: int,
                 threads: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores of a stock lambdarank model after ``rounds - 1`` and ``rounds`` iterations
    (realistic spread and ties; the first is the iteration before)."""
    ds = lgb.Dataset(X, y, group=group, params={"verbose": -1})
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_threads": threads}, ds, rounds)
    return (booster.predict(X, raw_score=True, num_threads=threads, num_iteration=rounds - 1),
            booster.predict(X, raw_score=True, num_threads=threads))


def _stock_booster(objective: str, y: np.ndarray, group: np.ndarray, scores: np.ndarray,
                   loss: LambdaRank, threads: int) -> lgb.Booster:
    """One-binary-feature booster whose iteration cost is the objective's gradient + O(n)."""
    feature = (np.arange(y.shape[0]) % 2).astype(np.float64).reshape(-1, 1)
    ds = lgb.Dataset(feature, y, group=group, init_score=scores, params={"verbose": -1})
    params: dict[str, Any] = {
        "objective": objective, "verbose": -1, "num_threads": threads, "num_leaves": 2,
        "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "learning_rate": 1e-12,
        "force_col_wise": True,
    }
    if objective == "lambdarank":
        params.update(loss.lightgbm_params())
    booster = lgb.Booster(params, ds)
    booster.update()  # first iteration pays one-off setup (score buffers, bin layout)
    return booster


def _timed(fn, clock=time.perf_counter) -> float:
    t0 = clock()
    fn()
    return clock() - t0


def bench_gradients(args: argparse.Namespace, X: np.ndarray, y: np.ndarray, group: np.ndarray) -> list[str]:
    """Part 1: gradient time, ours vs stock LightGBM; returns markdown lines.

    Two settings per score vector: ``args.threads`` threads timed by wall clock, and one
    thread timed by the calling thread's CPU clock (both LightGBM and numba run a
    one-thread parallel region in the calling thread), which is far less sensitive to
    other processes competing for the cores.
    """
    loss = LambdaRank()
    target = Target(label=y.astype(np.float32).astype(np.float64), group=group)
    load_start = os.getloadavg()[0]
    first_use = warmup()
    t0 = time.perf_counter()
    loss.validate(target)  # per-data-set precomputation (inverse max DCG, cost blocks)
    prep_time = time.perf_counter() - t0

    # scores -> the scores of the iteration before (None: the first iteration).  LambdaRank
    # keeps each query's order from its last call and repairs it (docs/losses.md); before
    # each timed call it is given the order of the iteration before, as in training (or
    # none, for the first iteration), so that it never times a repair of an order that is
    # already sorted.
    before, after = model_scores(X, y, group, args.model_rounds, args.threads)
    scenarios = {
        "all scores 0 (iteration 1)": (np.zeros(y.shape[0]), None),
        f"stock model after {args.model_rounds} rounds (order kept from round {args.model_rounds - 1})":
            (after, before),
    }

    def previous_order(previous: np.ndarray | None) -> None:
        if previous is None:
            target.cache.pop("lambdarank_orders", None)
        else:
            loss.gradient_hessian(previous, target)

    settings = [(args.threads, time.perf_counter, "wall")]
    if args.threads != 1:
        settings.append((1, time.thread_time, "CPU"))
    rows = []
    for threads, clock, clock_name in settings:
        numba.set_num_threads(threads)
        for name, (scores, previous) in scenarios.items():
            stock_rank = _stock_booster("lambdarank", y, group, scores, loss, threads)
            stock_reg = _stock_booster("regression", y, group, scores, loss, threads)
            loss.gradient_hessian(scores, target)
            ours, rank, reg = [], [], []
            for _ in range(args.repeats):  # interleaved, so load changes hit all three alike
                previous_order(previous)
                ours.append(_timed(lambda: loss.gradient_hessian(scores, target), clock))
                rank.append(_timed(stock_rank.update, clock))
                reg.append(_timed(stock_reg.update, clock))
            t_ours, t_rank, t_reg = (float(np.median(v)) for v in (ours, rank, reg))
            t_stock = t_rank - t_reg
            rows.append(
                f"| {name} | {threads} ({clock_name}) | {1e3 * t_ours:.1f} | {1e3 * t_stock:.1f} | "
                f"{1e3 * t_rank:.1f} | {1e3 * t_reg:.1f} | {t_ours / t_stock:.2f} |"
            )
            print(rows[-1], flush=True)
    numba.set_num_threads(args.threads)
    load_end = os.getloadavg()[0]

    sizes = group
    return [
        "## Part 1: LambdaRank gradient time, smart_lgbm vs stock LightGBM",
        "",
        f"Data: synthetic MSLR-like (`make_mslr_like(n_docs={args.n_docs}, n_features={args.n_features}, "
        f"seed={args.seed})`): {y.shape[0]:,} documents, {sizes.shape[0]:,} queries "
        f"(mean {sizes.mean():.1f}, median {np.median(sizes):.0f}, max {sizes.max()} documents), "
        f"labels 0-4 shares {np.round(np.bincount(y, minlength=5) / y.size, 3).tolist()}.",
        "Objective: lambdarank with LightGBM's defaults (sigmoid 1, label_gain 2^l-1, truncation 30, norm on).",
        f"Machine: {machine_description(args.threads)}. 1-minute load average at start / end of the "
        f"measurements: {load_start:.1f} / {load_end:.1f}"
        + (" (other processes competed for the cores: trust the 1-thread CPU rows over the wall-clock rows)."
           if max(load_start, load_end) > (os.cpu_count() or 1) else "."),
        f"Medians of {args.repeats} interleaved repeats, milliseconds per gradient evaluation of all documents; "
        "wall = wall clock, CPU = CPU time of the calling thread (1 thread only).",
        "",
        "| scores | threads (clock) | ours | stock LightGBM (= lambdarank iter - regression iter) | "
        "stock lambdarank iter (1 feature) | stock regression iter (1 feature) | ours / stock |",
        "|---|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "Ours includes validation of the scores and the float32-to-float64 copy of the outputs "
        "(`LambdaRank.gradient_hessian` as the engine calls it). "
        f"One-off costs: first use of the numba kernels in this process {first_use:.2f} s "
        "(loaded from numba's on-disk cache when present, else compiled), per-data-set "
        f"precomputation {1e3 * prep_time:.1f} ms.",
        "",
    ]


def write_report(path: Path, lines: list[str]) -> None:
    """Write atomically: a temporary file in the same directory, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def bench_training(args: argparse.Namespace, X: np.ndarray, y: np.ndarray, group: np.ndarray) -> list[str]:
    """Part 2: per-iteration training time, SMART samplers vs stock lambdarank, one run.

    Every method trains ``args.train_rounds`` rounds on the same data with the same
    parameters (no validation sets, so nothing but training happens per iteration).  The
    reported figure is the median wall time of iterations 11.. (LightGBM's GOSS uses every
    row for the first 1 / learning_rate = 10 iterations), median over ``args.repeats``
    interleaved repeats.
    """
    import lightgbm as lgb

    import smart_lgbm as sl

    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 50,
              "num_threads": args.threads, "verbosity": -1, "seed": 1}
    methods = {
        "stock full": ("stock", {}),
        "stock bagging_fraction=0.1": ("stock", {"bagging_fraction": 0.1, "bagging_freq": 1}),
        "stock GOSS (top 0.05 + other 0.05)": ("stock", {"data_sample_strategy": "goss", "top_rate": 0.05,
                                                          "other_rate": 0.05}),
        "engine Full()": ("engine", sl.Full()),
        "engine Uniform(0.1)": ("engine", sl.Uniform(0.1)),
        "engine FirstOrder(rate=0.1)": ("engine", sl.FirstOrder(rate=0.1)),
        "engine SecondOrder(rate=0.1)": ("engine", sl.SecondOrder(rate=0.1)),
        "engine MVS(rate=0.1)": ("engine", sl.MVS(rate=0.1)),
    }
    dataset = lgb.Dataset(X, y, group=group, params={"verbosity": -1}, free_raw_data=False).construct()
    times: dict[str, list[float]] = {name: [] for name in methods}
    for rep in range(args.train_repeats):
        for name, (kind, spec) in methods.items():
            stamps: list[float] = []

            def clock(env, stamps=stamps) -> None:
                stamps.append(time.perf_counter())

            clock.order = 100  # type: ignore[attr-defined]
            start = time.perf_counter()
            if kind == "stock":
                lgb.train({**params, **spec}, dataset, args.train_rounds, callbacks=[clock])
            else:
                sl.train(params, dataset, args.train_rounds, sampler=spec, callbacks=[clock])
            per_iter = np.diff([start, *stamps])[10:]
            times[name].append(float(np.median(per_iter)))
            print(f"rep {rep} {name}: {times[name][-1]:.4f} s/iter", file=sys.stderr, flush=True)
    base = {k: float(np.median(times[k])) for k in times}
    lines = ["", "## Part 2: per-iteration training time", "",
             f"{len(y):,} documents (synthetic MSLR-like), 31 leaves, learning rate 0.1, min_data_in_leaf 50, "
             f"{args.threads} threads. Median per-iteration wall time of iterations 11-{args.train_rounds}, "
             f"median over {args.train_repeats} interleaved repeats. Engine rows include computing the LambdaRank "
             "gradients of every document (the sampling probabilities need them).", "",
             "| method | s/iter | vs stock full | vs stock GOSS |", "|---|---|---|---|"]
    for name, value in base.items():
        lines.append(f"| {name} | {value:.4f} | {value / base['stock full']:.2f}x | "
                     f"{value / base['stock GOSS (top 0.05 + other 0.05)']:.2f}x |")
    return lines


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT), *sys.argv[1:]])
    X, y, group = make_mslr_like(n_docs=args.n_docs, n_features=args.n_features, seed=args.seed)
    lines = [f"# LambdaRank benchmark", "", f"Command: `{command}`", ""]
    lines += bench_gradients(args, X, y, group)
    if args.train_rounds > 10:
        lines += bench_training(args, X, y, group)
    write_report(args.out, lines)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
