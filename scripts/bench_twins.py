#!/usr/bin/env python
"""Serial or parallel row kernels: per-iteration time of the engine at each data size.

The engine's row kernels have a serial and a parallel twin (:mod:`smart_lgbm._twins`);
calls over fewer than ``PARALLEL_MIN_ROWS`` rows run the serial one.  This script picks
that threshold: for each row count it trains the engine (binary, ``FirstOrder(rate=0.1)``,
31 leaves, synthetic dense float32 data made by ``make_dense_binary``, 20 features) with
every kernel call forced to the serial twin and forced to the parallel twin, alternating
the two in short runs inside one process (so machine load hits them alike), and reports
the median per-iteration wall time of each and their ratio.  Each run's first iterations
are dropped (binning, first touch, and the first runs compile the twins).

Usage: python scripts/bench_twins.py [--rows 16384 65536 ...] [--pairs 5] [--rounds 12] [--threads 2]
Times are wall-clock on whatever else the machine is doing: run it alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402

import smart_lgbm as sl  # noqa: E402
from smart_lgbm import _twins  # noqa: E402
from smart_lgbm.datasets.synthetic import make_dense_binary  # noqa: E402

FORCE = {"serial": 1 << 62, "parallel": 0}
DROP = 3


def per_iteration(dataset: lgb.Dataset, rounds: int, threads: int) -> list[float]:
    times: list[float] = []
    last = [time.perf_counter()]

    def clock(env) -> None:
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    params = {"objective": "binary", "num_leaves": 31, "verbose": -1, "seed": 1, "num_threads": threads}
    last[0] = time.perf_counter()
    sl.train(params, dataset, rounds, sampler=sl.FirstOrder(rate=0.1), callbacks=[clock])
    return times[DROP:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[16_384, 32_768, 65_536, 131_072, 262_144])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"engine FirstOrder(0.1), binary, 20 features, {args.threads} threads; median ms per iteration "
          f"over {args.pairs} alternating runs of {args.rounds} rounds (first {DROP} dropped); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| rows | serial | parallel | parallel / serial |")
    print("|---:|---:|---:|---:|")
    for n in args.rows:
        X, y = make_dense_binary(n, 20, seed=0)
        dataset = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
        runs: dict[str, list[float]] = {"serial": [], "parallel": []}
        for pair in range(args.pairs + 1):
            for which in ("serial", "parallel") if pair % 2 == 0 else ("parallel", "serial"):
                _twins.PARALLEL_MIN_ROWS = FORCE[which]
                times = per_iteration(dataset, args.rounds, args.threads)
                if pair:  # the first pair compiles (or loads) both twins
                    runs[which].extend(times)
        s, p = statistics.median(runs["serial"]), statistics.median(runs["parallel"])
        print(f"| {n:,} | {1e3 * s:.2f} | {1e3 * p:.2f} | {p / s:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
