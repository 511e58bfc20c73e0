#!/usr/bin/env python
"""Serial or parallel row kernels: the engine's iteration by data size, with either twin.

The engine's row kernels have a serial and a parallel twin (:mod:`smart_lgbm._numba.row_kernel`);
calls over fewer than ``PARALLEL_MIN_ROWS`` rows run the serial one.  This script is where
that threshold comes from: for each row count it trains the engine (binary,
``FirstOrder(rate=0.1)``, 31 leaves, synthetic dense float32 data from
``make_dense_binary`` with 20 features; ``a9a``: the bundled real a9a at rate 0.3) with
every kernel call forced to the serial twin and forced to the parallel twin, alternating
the two in short runs inside one process (so machine load hits them alike), and reports
per twin the median and the minimum over iterations of each step that
:func:`smart_lgbm.record_sampling` records: ``sample`` (gradients of all rows and the
draw), ``update`` (every row's scores: the walk and the fused pass) and the whole
iteration.  Each run's first iterations are dropped (binning, first touch), and so is the
first pair of runs (it compiles, or loads, both twins).  The minimum is the figure to read
on a machine that is doing other work.

Usage: python scripts/bench_twins.py [--rows 5000 16384 a9a ...] [--pairs 7] [--rounds 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lightgbm as lgb  # noqa: E402

import smart_lgbm as sl  # noqa: E402
from smart_lgbm._numba import row_kernel as _twins  # noqa: E402

FORCE = {"serial": 1 << 62, "parallel": 0}
DROP = 3
STEPS = {"sample": "sample_seconds", "update": "update_seconds", "iteration": "seconds"}


def data(rows: str) -> tuple[lgb.Dataset, float]:
    if rows == "a9a":
        from smart_lgbm.datasets.bundled import load_a9a

        (X, y), _ = load_a9a()
        rate = 0.3
    else:
        from smart_lgbm.datasets.synthetic import make_dense_binary

        X, y = make_dense_binary(int(rows), 20, seed=0)
        rate = 0.1
    return lgb.Dataset(X, y, params={"verbosity": -1}, free_raw_data=False).construct(), rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", default=["5000", "8192", "12000", "16384", "a9a", "65536", "131072"])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"engine FirstOrder, binary, {args.threads} threads, PARALLEL_MIN_ROWS = {_twins.PARALLEL_MIN_ROWS}; "
          f"ms per step, median / min over {args.pairs} alternating runs of {args.rounds} rounds per twin; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| rows | " + " | ".join(f"{step} serial | {step} parallel" for step in STEPS) + " |")
    print("|---:|" + "---:|" * (2 * len(STEPS)))
    params = {"objective": "binary", "num_leaves": 31, "verbose": -1, "seed": 1, "num_threads": args.threads}
    for rows in args.rows:
        dataset, rate = data(rows)
        times: dict[str, dict[str, list[float]]] = {w: {step: [] for step in STEPS} for w in FORCE}
        for pair in range(args.pairs + 1):
            for which in ("serial", "parallel") if pair % 2 == 0 else ("parallel", "serial"):
                record: dict = {}
                with _twins.parallel_from(FORCE[which]):
                    sl.train(params, dataset, args.rounds, sampler=sl.FirstOrder(rate=rate),
                             callbacks=[sl.record_sampling(record)])
                if pair:
                    for step, key in STEPS.items():
                        times[which][step].extend(record[key][DROP:])
        cells = [f"{1e3 * statistics.median(times[w][step]):.2f} / {1e3 * min(times[w][step]):.2f}"
                 for step in STEPS for w in ("serial", "parallel")]
        print(f"| {rows} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
