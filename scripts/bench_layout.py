#!/usr/bin/env python
"""Histogram layout: the engine's default (column-wise) against row-wise, beside stock LightGBM.

The engine forces ``force_col_wise=true`` unless the user forces a layout (column-wise sums
each bin in row order at any thread count); stock LightGBM times both layouts when its
Booster is created and keeps the faster.  This measures what that choice costs per
iteration, for stock full (its own choice, and each layout forced), the engine's ``Full()``
and ``FirstOrder(rate=0.1)`` with each layout, and stock bagging(0.1).

One process per case; the methods interleaved within each repeat (the same data, the same
machine state), each run's median per-iteration wall time after its first 3 iterations,
then the median over repeats.

Usage: python scripts/bench_layout.py [--cases 400k-60 yahoo-like] [--repeats 3] [--rounds 15]
       [--threads 2] [--out docs/results/bench_layout.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numba

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smart_lgbm as sl  # noqa: E402
from smart_lgbm.compare.io import atomic_write  # noqa: E402

CASES = {
    "400k-60": "synthetic dense binary (make_dense_binary), 400,000 x 60 float32; binary, 31 leaves",
    "yahoo-like": "synthetic sparse LambdaMART (make_yahoo_like), 470,000 documents x 700 CSR; lambdarank, 31 leaves",
}
#: (label, how it trains, the layout it is given: None = its own choice)
METHODS = [
    ("stock full, its own choice", "stock_full", None),
    ("stock full, force_col_wise", "stock_full", "force_col_wise"),
    ("stock full, force_row_wise", "stock_full", "force_row_wise"),
    ("stock bagging(0.1), its own choice", "stock_bagging", None),
    ("engine Full(), default (col-wise)", "full", None),
    ("engine Full(), force_row_wise", "full", "force_row_wise"),
    ("engine FirstOrder(0.1), default (col-wise)", "first_order", None),
    ("engine FirstOrder(0.1), force_row_wise", "first_order", "force_row_wise"),
]


def _data(case: str):
    if case == "400k-60":
        from smart_lgbm.datasets.synthetic import make_dense_binary

        X, y = make_dense_binary(400_000, 60, seed=0)
        return X, y, None, {"objective": "binary"}
    from smart_lgbm.datasets.synthetic_sparse_ranking import make_yahoo_like

    X, y, group = make_yahoo_like(470_000, 700, seed=0)
    return X, y, group, {"objective": "lambdarank", "min_data_in_leaf": 50}


def _per_iteration(X, y, group, params: dict, kind: str, layout: str | None, rounds: int) -> float:
    """Median wall seconds per iteration of one run (first 3 iterations dropped)."""
    p = {**params, **({layout: True} if layout else {})}
    times: list[float] = []
    last = [0.0]

    def clock(env) -> None:
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    clock.order = 100  # type: ignore[attr-defined]
    dataset = lgb.Dataset(X, y, group=group, params={"verbosity": -1})
    last[0] = time.perf_counter()
    if kind == "stock_full":
        lgb.train(p, dataset, rounds, callbacks=[clock])
    elif kind == "stock_bagging":
        lgb.train({**p, "bagging_fraction": 0.1, "bagging_freq": 1}, dataset, rounds, callbacks=[clock])
    else:
        sampler = sl.Full() if kind == "full" else sl.FirstOrder(rate=0.1)
        sl.train(p, dataset, rounds, sampler=sampler, callbacks=[clock])
    return statistics.median(times[3:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    for name in ("repeats", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if args.rounds < 5:
        ap.error("--rounds must be >= 5 (the first 3 iterations are dropped)")
    numba.set_num_threads(args.threads)
    lines = [
        "# Histogram layout: column-wise (the engine's default) against row-wise",
        "",
        f"Command: `python scripts/bench_layout.py {' '.join(sys.argv[1:])}`".replace("  ", " "),
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads, Python "
        f"{platform.python_version()}, lightgbm {lgb.__version__}, numba {numba.__version__}; nothing else "
        f"running. Each cell: median over {args.repeats} repeats (methods interleaved in one process) of a "
        f"run's median ms per iteration ({args.rounds} rounds, the first 3 dropped). Learning rate 0.1.",
        "",
    ]
    for case in args.cases:
        X, y, group, extra = _data(case)
        params = {"num_leaves": 31, "learning_rate": 0.1, "verbosity": -1, "num_threads": args.threads, **extra}
        results: dict[str, list[float]] = {label: [] for label, _, _ in METHODS}
        for repeat in range(args.repeats):
            for label, kind, layout in METHODS:
                results[label].append(_per_iteration(X, y, group, params, kind, layout, args.rounds))
                print(f"{case} repeat {repeat + 1}/{args.repeats}: {label} {1000 * results[label][-1]:.1f} ms",
                      flush=True)
        base = statistics.median(results[METHODS[0][0]])
        lines += [f"## {case}: {CASES[case]}", "", "| method | ms/iter | vs stock full (its own choice) |",
                  "|---|---:|---:|"]
        for label, _, _ in METHODS:
            med = statistics.median(results[label])
            lines.append(f"| {label} | {1000 * med:.1f} | {med / base:.2f}x |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        atomic_write(args.out, lambda f: f.write(text + "\n"))


if __name__ == "__main__":
    main()
