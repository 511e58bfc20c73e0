#!/usr/bin/env python
"""Engine overhead against stock LightGBM, side by side in one run.

For each data set, per-iteration wall time and peak memory of:
  stock full training, stock ``bagging_fraction=r`` (``bagging_freq=1``), and the engine
  with ``Uniform(r)`` and ``FirstOrder(rate=r)`` (and ``Full()``),
each measured in its own fresh subprocess (so peak RSS is that method's alone), repeated,
reported as medians, with ratios against stock bagging at the same rate and stock full.

Data: ``mslr-sized`` = synthetic dense binary data of MSLR-WEB10K's shape (720,000 x 136,
``smart_lgbm.datasets.synthetic.make_dense_binary``, seed 0) at r = 0.1;
``a9a`` = the bundled real LIBSVM a9a training set (32,561 x 123 sparse) at r = 0.3.

Usage: python scripts/bench_engine.py [--repeats 3] [--a9a-repeats 15] [--paired 40] [--quick]
       [--out docs/results/bench_engine.md]

a9a gets its own, larger number of repeats: an a9a process takes seconds, and on a
shared 2-core machine the per-iteration time of the same method varies widely from
process to process (the per-process figures go to stderr), so a median of a few
processes would decide the ratio by chance.
For the same reason a9a also gets a paired timing (``--paired``): stock bagging and the
engine alternate in short runs inside one process and each engine run is compared with
the stock run next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PARAMS = {"objective": "binary", "num_leaves": 31, "learning_rate": 0.1, "verbosity": -1, "seed": 1}


def _status_mb(field: str) -> float:
    """VmRSS / VmHWM of this process from /proc (getrusage's ru_maxrss would include the
    parent's peak: it survives fork and exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _load(data_path: str) -> tuple:
    if data_path.endswith(".npz"):
        import scipy.sparse as sp

        return sp.load_npz(data_path), np.load(data_path.replace(".npz", "_y.npy"))
    return np.load(data_path), np.load(data_path.replace(".npy", "_y.npy"))


def _seconds_per_iter(X, y, method: str, rate: float, rounds: int) -> float:
    """Train one method once; median wall time per iteration (first 3 dropped)."""
    import lightgbm as lgb

    import smart_lgbm as sl

    times: list[float] = []
    last = [0.0]

    def clock(env) -> None:  # after each iteration: wall time since the previous one
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    clock.order = 100  # type: ignore[attr-defined]
    # As a user would pass it: not constructed.  Stock lightgbm.train bins it; the engine
    # bins its own copy (the caller's object stays untouched).  Binning falls in the first
    # iterations, which are dropped below.
    dataset = lgb.Dataset(X, y, params={"verbosity": -1}, free_raw_data=False)
    last[0] = time.perf_counter()
    if method == "stock_full":
        lgb.train(PARAMS, dataset, rounds, callbacks=[clock])
    elif method == "stock_bagging":
        lgb.train({**PARAMS, "bagging_fraction": rate, "bagging_freq": 1}, dataset, rounds, callbacks=[clock])
    else:
        sampler = {"engine_uniform": sl.Uniform(rate), "engine_first_order": sl.FirstOrder(rate=rate),
                   "engine_full": sl.Full()}[method]
        sl.train(PARAMS, dataset, rounds, sampler=sampler, callbacks=[clock])
    # drop the first iterations: one-off set-up (binning, histogram pools, first-touch pages)
    return statistics.median(times[min(3, len(times) - 1):])


def worker(data_path: str, method: str, rate: float, rounds: int) -> dict:
    """Train one method in this (fresh) process; per-iteration seconds and peak RSS."""
    import lightgbm  # noqa: F401  (imported before the baseline RSS: not training memory)

    import smart_lgbm  # noqa: F401

    X, y = _load(data_path)
    rss_data = _status_mb("VmRSS")
    seconds = _seconds_per_iter(X, y, method, rate, rounds)
    peak = _status_mb("VmHWM")
    return {"seconds_per_iter": seconds, "peak_rss_mb": peak, "training_mb": peak - rss_data}


PAIRED = ["stock_bagging", "engine_uniform", "engine_first_order"]


def paired_worker(data_path: str, rate: float, rounds: int, pairs: int) -> dict:
    """Short runs of stock bagging and the engine alternating in one process.

    The speed of a shared machine drifts while one process runs; runs seconds or minutes
    apart then compare different machines.  Here each round trains every method once, in rotating
    order, a fraction of a second apart, and each engine run is divided by the stock
    bagging run of its own round.
    """
    X, y = _load(data_path)
    out: dict[str, list[float]] = {m: [] for m in PAIRED}
    for i in range(pairs):
        for m in PAIRED[i % len(PAIRED):] + PAIRED[:i % len(PAIRED)]:
            out[m].append(_seconds_per_iter(X, y, m, rate, rounds))
    return out


def run_worker(data_path: str, method: str, rate: float, rounds: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", data_path, method, str(rate), str(rounds)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_data(name: str, folder: Path, quick: bool) -> tuple[str, str, float, int]:
    """Write the data set once; workers load it.  Returns (path, description, rate, rounds)."""
    if name == "a9a":
        import scipy.sparse as sp

        from smart_lgbm.datasets.bundled import load_a9a

        (X, y), _ = load_a9a()
        path = folder / "a9a.npz"
        sp.save_npz(path, X)
        np.save(folder / "a9a_y.npy", y)
        return str(path), "a9a (real, 32,561 x 123 sparse)", 0.3, 60 if quick else 200
    from smart_lgbm.datasets.synthetic import make_dense_binary

    n = 100_000 if quick else 720_000
    X, y = make_dense_binary(n, 136, seed=0)
    path = folder / "dense.npy"
    np.save(path, X)
    np.save(folder / "dense_y.npy", y)
    return str(path), f"mslr-sized (synthetic dense binary, {n:,} x 136)", 0.1, 15 if quick else 25


def paired_section(path: str, rate: float, pairs: int, rounds: int = 60) -> list[str]:
    """Markdown lines: per-round ratios engine / stock bagging from :func:`paired_worker`."""
    out = subprocess.run([sys.executable, __file__, "--paired-worker", path, str(rate), str(rounds), str(pairs)],
                         check=True, capture_output=True, text=True)
    times = json.loads(out.stdout.strip().splitlines()[-1])
    base = np.array(times["stock_bagging"])
    lines = [f"### a9a, paired in one process: {pairs} rounds of {rounds}-iteration runs, methods alternating", "",
             "Each engine run divided by the stock bagging run of the same round (a fraction of a second "
             "apart); median and quartiles of those ratios. Less exposed to this machine's drifting speed "
             "than the table above, whose processes run seconds to minutes apart.", "",
             "| method | median s/iter | ratio to stock bagging, median | quartiles |", "|---|---|---|---|"]
    for m in PAIRED:
        ratio = np.array(times[m]) / base
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        label = {"stock_bagging": f"stock bagging_fraction={rate}", "engine_uniform": f"engine Uniform({rate})",
                 "engine_first_order": f"engine FirstOrder(rate={rate})"}[m]
        lines.append(f"| {label} | {np.median(times[m]):.4f} | {q2:.2f}x | {q1:.2f}x - {q3:.2f}x |")
    return lines + [""]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--paired-worker":
        print(json.dumps(paired_worker(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per method (mslr-sized)")
    ap.add_argument("--a9a-repeats", type=int, default=15, help="fresh processes per method on a9a")
    ap.add_argument("--paired", type=int, default=40, help="rounds of the paired a9a timing (0: skip)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--data", nargs="+", default=["mslr-sized", "a9a"], choices=["mslr-sized", "a9a"])
    ap.add_argument("--out", default=str(ROOT / "docs/results/bench_engine.md"))
    args = ap.parse_args()
    from smart_lgbm.compare.io import write_text

    methods = ["stock_full", "stock_bagging", "engine_uniform", "engine_first_order", "engine_full"]
    lines = [
        "# Engine overhead vs stock LightGBM",
        "",
        f"Command: `python scripts/bench_engine.py {' '.join(sys.argv[1:])}`".rstrip(),
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"lightgbm {__import__('lightgbm').__version__}. Each cell: median over {args.repeats} fresh "
        f"processes ({args.a9a_repeats} for a9a) of the median per-iteration wall time (first 3 iterations dropped); peak RSS "
        "(VmHWM) of the whole process, raw data included, and the training part of it (peak minus "
        "RSS after loading the raw data: binned data, gradients, scores, histograms). 31 leaves, learning rate 0.1, binary objective.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.data:
            path, desc, rate, rounds = make_data(name, Path(tmp), args.quick)
            results: dict[str, list[dict]] = {m: [] for m in methods}
            for rep in range(args.a9a_repeats if name == "a9a" else args.repeats):
                for m in methods:  # interleaved, so drifts in machine load hit all methods alike
                    results[m].append(run_worker(path, m, rate, rounds))
                    print(f"{name} rep {rep} {m}: {results[m][-1]}", file=sys.stderr, flush=True)
            med = {m: {k: statistics.median(r[k] for r in results[m]) for k in results[m][0]} for m in methods}
            lines += [f"## {desc}, rate r = {rate}, {rounds} rounds", "",
                      "| method | s/iter | vs stock bagging r | vs stock full | peak RSS MB | vs stock full | "
                      "training MB (peak - data) | vs stock full |",
                      "|---|---|---|---|---|---|---|---|"]
            for m in methods:
                label = {"stock_bagging": f"stock bagging_fraction={rate}", "engine_uniform": f"engine Uniform({rate})",
                         "engine_first_order": f"engine FirstOrder(rate={rate})"}.get(m, m.replace("_", " "))
                s = med[m]["seconds_per_iter"]
                lines.append(
                    f"| {label} | {s:.4f} | {s / med['stock_bagging']['seconds_per_iter']:.2f}x | "
                    f"{s / med['stock_full']['seconds_per_iter']:.2f}x | {med[m]['peak_rss_mb']:.0f} | "
                    f"{med[m]['peak_rss_mb'] / med['stock_full']['peak_rss_mb']:.2f}x | "
                    f"{med[m]['training_mb']:.0f} | {med[m]['training_mb'] / med['stock_full']['training_mb']:.2f}x |"
                )
            lines.append("")
            if name == "a9a" and args.paired:
                lines += paired_section(path, rate, args.paired)
    write_text(args.out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
