#!/usr/bin/env python
"""Per-iteration time and peak memory of the engine against stock LightGBM, side by side.

For each data set, every method trains in its own fresh subprocess (so its peak RSS is its
own), the methods interleaved within each repeat (so drifts in machine load hit them
alike); reported are medians over the repeats of each process's median per-iteration wall
time (first 3 iterations dropped: binning, first-touch pages, numba's cache load) and the
ratios against stock full training and stock bagging at the same rate.  For the engine the
median time of each step of an iteration comes from :func:`smart_lgbm.record_sampling`:
gradients and draw of all rows ("sample"), LightGBM's tree on the sample ("tree": subset
copy, one training-data reset, update, model text, rollback; for ``Full()`` only the update
and the model text: the Booster stays on the training set) and every row's score update
("update": the compiled walk of the new trees over every row's bin codes, and on the fused path
the sweep that also computes the next iteration's gradients and the rate solve's statistics).

Methods: stock full, stock ``bagging_fraction=r`` (``bagging_freq=1``), stock GOSS
(``top_rate = other_rate = r/2``), and the engine with ``Uniform(r)``, ``FirstOrder(rate=r)``,
``MVS(rate=r)`` and ``Full()``.  Data (all made in-process, seeded; ``synthetic`` is said
wherever it is):

* ``higgs-like``: synthetic dense binary, 2,000,000 x 28 float32 (HIGGS's width), 63 leaves,
  ``min_data_in_leaf=100``, r = 0.1;
* ``400k-60``: synthetic dense binary, 400,000 x 60 float32, 31 leaves, r = 0.1;
* ``mslr-sized``: synthetic dense binary, 720,000 x 136 float32 (MSLR-WEB10K's shape), 31
  leaves, r = 0.1;
* ``nan-float64``: synthetic dense binary, 1,200,000 x 44 float64 with 10% NaN, 63 leaves,
  r = 0.1;
* ``mslr-like``: synthetic LambdaMART, ``make_mslr_like``: 720,000 documents x 136, 31 leaves,
  r = 0.1;
* ``yahoo-like``: synthetic sparse LambdaMART, ``make_yahoo_like``: 470,000 documents x 700
  CSR, 31 leaves, r = 0.1;
* ``a9a``: the bundled real LIBSVM a9a training set (32,561 x 123 sparse), 31 leaves, r = 0.3,
  with 15 repeats and a paired timing (stock bagging and the engine alternating in short runs
  inside one process, each engine run divided by the stock run next to it);
* ``mixed-categorical``: synthetic binary with categorical columns, ``make_mixed_categorical``:
  960,000 x 40 float32 (36 numerical with 5% NaN; 4 categorical, of 1,000, 200, 30 and 4
  levels, given as ``categorical_feature``), 63 leaves, r = 0.1.

Per-run fixed costs: every case table also gives each method's time to the end of its first
iteration (from the ``train`` call on the unconstructed Dataset: binning, setup and one
iteration).  With ``400k-60``, a further section times 25-round runs on an already
constructed Dataset, stock bagging(0.1) against the engine's ``Uniform(0.1)``, paired in one
process (``--setup-pairs``), and the engine's setup steps one by one.

Usage: python scripts/bench_engine.py [--repeats 5] [--a9a-repeats 15] [--paired 40] [--setup-pairs 5] [--threads 2]
       [--data higgs-like a9a ...] [--quick] [--out docs/results/bench_engine.md]

``--threads N`` sets LightGBM's and the engine's ``num_threads`` (default 2); the default
output is ``docs/results/bench_engine.md`` at 2 threads and ``bench_engine_{N}threads.md``
otherwise, so results at several thread counts sit side by side.
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

#: name -> (description, rate, rounds, LightGBM parameters besides the shared ones)
CASES: dict[str, tuple[str, float, int, dict]] = {
    "higgs-like": ("synthetic dense binary, 2,000,000 x 28 float32", 0.1, 25,
                   {"objective": "binary", "num_leaves": 63, "min_data_in_leaf": 100}),
    "400k-60": ("synthetic dense binary, 400,000 x 60 float32", 0.1, 25, {"objective": "binary", "num_leaves": 31}),
    "mslr-sized": ("synthetic dense binary, 720,000 x 136 float32 (MSLR-WEB10K's shape)", 0.1, 25,
                   {"objective": "binary", "num_leaves": 31}),
    "nan-float64": ("synthetic dense binary, 1,200,000 x 44 float64, 10% NaN", 0.1, 25,
                    {"objective": "binary", "num_leaves": 63}),
    "mslr-like": ("synthetic LambdaMART (make_mslr_like), 720,000 documents x 136 float32", 0.1, 20,
                  {"objective": "lambdarank", "num_leaves": 31, "min_data_in_leaf": 50}),
    "yahoo-like": ("synthetic sparse LambdaMART (make_yahoo_like), 470,000 documents x 700 CSR", 0.1, 20,
                   {"objective": "lambdarank", "num_leaves": 31, "min_data_in_leaf": 50}),
    "a9a": ("real LIBSVM a9a, 32,561 x 123 sparse", 0.3, 200, {"objective": "binary", "num_leaves": 31}),
    "mixed-categorical": ("synthetic binary with categorical columns (make_mixed_categorical), 960,000 x 40 float32: "
                          "36 numerical with 5% NaN, 4 categorical of 1,000, 200, 30 and 4 levels", 0.1, 25,
                          {"objective": "binary", "num_leaves": 63}),
}
SHARED = {"learning_rate": 0.1, "verbosity": -1, "seed": 1}
DEFAULT_THREADS = 2
METHODS = ["stock_full", "stock_bagging", "stock_goss", "engine_uniform", "engine_first_order", "engine_mvs",
           "engine_first_order_refit", "engine_full"]
STEPS = ("sample_seconds", "tree_seconds", "update_seconds")


def results_name(stem: str, threads: int) -> str:
    """Output file name: ``stem.md`` at the default 2 threads (the name docs link to),
    ``stem_{N}threads.md`` otherwise."""
    return f"{stem}.md" if threads == DEFAULT_THREADS else f"{stem}_{threads}threads.md"


def _status_mb(field: str) -> float:
    """VmRSS / VmHWM of this process from /proc (getrusage's ru_maxrss would include the
    parent's peak: it survives fork and exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def make_data(name: str, folder: Path, quick: bool) -> Path:
    """Write the case's data once (workers load it); returns the .npz path."""
    import scipy.sparse as sp

    from smart_lgbm.datasets.synthetic import make_dense_binary

    scale = 20 if quick else 1
    path = folder / f"{name}.npz"
    group = None
    categorical: list[int] = []
    if name == "mixed-categorical":
        from smart_lgbm.datasets.synthetic_categorical import make_mixed_categorical

        X, y, categorical = make_mixed_categorical(960_000 // scale, 36, seed=0)
    elif name == "a9a":
        from smart_lgbm.datasets.bundled import load_a9a

        (X, y), _ = load_a9a()
    elif name in ("mslr-like", "yahoo-like"):
        if name == "mslr-like":
            from smart_lgbm.datasets.synthetic_ranking import make_mslr_like as make
            split = make(720_000 // scale, 136, seed=0)
        else:
            from smart_lgbm.datasets.synthetic_sparse_ranking import make_yahoo_like as make
            split = make(470_000 // scale, 700, seed=0)
        X, y, group = split
    else:
        n, f = {"higgs-like": (2_000_000, 28), "400k-60": (400_000, 60), "mslr-sized": (720_000, 136),
                "nan-float64": (1_200_000, 44)}[name]
        X, y = make_dense_binary(n // scale, f, seed=0)
        if name == "nan-float64":
            X = X.astype(np.float64)
            X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    if sp.issparse(X):
        sp.save_npz(folder / f"{name}_X.npz", sp.csr_matrix(X))
        np.savez(path, y=y, group=np.zeros(0) if group is None else group, sparse=True,
                 categorical=np.array(categorical, dtype=np.int64))
    else:
        np.savez(path, X=X, y=y, group=np.zeros(0) if group is None else group, sparse=False,
                 categorical=np.array(categorical, dtype=np.int64))
    return path


def _load(path: str) -> tuple:
    """Features, labels, query sizes (or None) and the categorical columns of a case's data."""
    import scipy.sparse as sp

    arrays = np.load(path)
    X = sp.load_npz(path.replace(".npz", "_X.npz")) if arrays["sparse"] else arrays["X"]
    group = arrays["group"] if arrays["group"].size else None
    return X, arrays["y"], group, [int(j) for j in arrays["categorical"]]


def _train(X, y, group, case: str, method: str, rounds: int, threads: int = DEFAULT_THREADS,
           categorical: list[int] | None = None) -> tuple[list[float], dict[str, list[float]]]:
    """Train one method once; per-iteration wall times and, for the engine, its step record."""
    import lightgbm as lgb

    import smart_lgbm as sl

    _, rate, _, extra = CASES[case]
    params = {**SHARED, "num_threads": threads, **extra}
    times: list[float] = []
    last = [0.0]

    def clock(env) -> None:  # after each iteration: wall time since the previous one
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    clock.order = 100  # type: ignore[attr-defined]
    # As a user would pass it: not constructed.  Stock lightgbm.train bins it; the engine
    # bins its own copy and walks the caller's raw array (the caller's object stays untouched).
    dataset = lgb.Dataset(X, y, group=group, params={"verbosity": -1}, categorical_feature=categorical or "auto")
    record: dict[str, list[float]] = {}
    last[0] = time.perf_counter()
    if method.startswith("stock"):
        extra_params = {"stock_full": {},
                        "stock_bagging": {"bagging_fraction": rate, "bagging_freq": 1},
                        "stock_goss": {"data_sample_strategy": "goss", "top_rate": rate / 2,
                                       "other_rate": rate / 2}}[method]
        lgb.train({**params, **extra_params}, dataset, rounds, callbacks=[clock])
    else:
        sampler = {"engine_uniform": sl.Uniform(rate), "engine_first_order": sl.FirstOrder(rate=rate),
                   "engine_mvs": sl.MVS(rate=rate), "engine_full": sl.Full(),
                   "engine_first_order_refit": sl.FirstOrder(rate=rate, refit_leaves=True)}[method]
        sl.train(params, dataset, rounds, sampler=sampler, callbacks=[clock, sl.record_sampling(record)])
    return times, record


def worker(path: str, case: str, method: str, rounds: int, threads: int) -> dict:
    """Train one method in this (fresh) process; per-iteration seconds, steps and peak RSS."""
    import lightgbm  # noqa: F401  (imported before the baseline RSS: not training memory)

    import smart_lgbm  # noqa: F401

    X, y, group, categorical = _load(path)
    rss_data = _status_mb("VmRSS")
    times, record = _train(X, y, group, case, method, rounds, threads, categorical)
    peak = _status_mb("VmHWM")
    out = {"seconds_per_iter": statistics.median(times[3:]), "peak_rss_mb": peak, "training_mb": peak - rss_data,
           "first_iter_s": times[0]}
    for step in STEPS:
        if record:
            out[step] = statistics.median(record[step][3:])
    return out


PAIRED = ["stock_bagging", "engine_uniform", "engine_first_order"]


def paired_worker(path: str, rounds: int, pairs: int, threads: int) -> dict:
    """Short runs of stock bagging and the engine alternating in one process (a9a).

    Each round trains every method once, in rotating order, a fraction of a second apart,
    and each engine run is divided by the stock bagging run of its own round.
    """
    X, y, group, _ = _load(path)
    out: dict[str, list[float]] = {m: [] for m in PAIRED}
    for i in range(pairs):
        for m in PAIRED[i % len(PAIRED):] + PAIRED[:i % len(PAIRED)]:
            out[m].append(statistics.median(_train(X, y, group, "a9a", m, rounds, threads)[0][3:]))
    return out


SETUP_ROUNDS = 25


def setup_worker(path: str, pairs: int, threads: int) -> dict:
    """Per-run fixed costs on an already constructed Dataset (400k-60), in one process.

    The Dataset is constructed once with ``free_raw_data=False`` (the engine's walk reads
    the raw features; without them it falls back to LightGBM's slower binned predictor).
    Each pair trains stock ``lgb.train`` with bagging(0.1) and ``sl.train`` with
    ``Uniform(0.1)`` for ``SETUP_ROUNDS`` rounds, order alternating, recording each whole
    call and the time to the end of its first iteration.  Then, once per pair, the
    engine's setup steps one by one (the calls ``sl.train`` makes before its first tree).
    """
    import lightgbm as lgb

    import smart_lgbm as sl
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine import make_config, numba_threads
    from smart_lgbm._engine.data import prepare_train
    from smart_lgbm._engine.run import BoostingRun
    from smart_lgbm._engine.walk import CodeBook

    X, y, _, _ = _load(path)
    _, rate, _, extra = CASES["400k-60"]
    params = {**SHARED, "num_threads": threads, **extra}
    dataset = lgb.Dataset(X, y, params={"verbosity": -1}, free_raw_data=False).construct()
    sl.train(params, lgb.Dataset(X[:2000], y[:2000]), 2, sampler=sl.Uniform(rate))  # numba's cache load
    out: dict[str, list[float]] = {}

    def add(key: str, seconds: float) -> None:
        out.setdefault(key, []).append(seconds)

    for i in range(pairs):
        for method in (("stock", "engine") if i % 2 == 0 else ("engine", "stock")):
            first = []
            t0 = time.perf_counter()

            def clock(env) -> None:
                if env.iteration == 0:
                    first.append(time.perf_counter() - t0)

            clock.order = 100  # type: ignore[attr-defined]
            if method == "stock":
                lgb.train({**params, "bagging_fraction": rate, "bagging_freq": 1}, dataset, SETUP_ROUNDS,
                          callbacks=[clock])
            else:
                sl.train(params, dataset, SETUP_ROUNDS, sampler=sl.Uniform(rate), callbacks=[clock])
            add(f"{method} whole call", time.perf_counter() - t0)
            add(f"{method} to end of 1st iteration", first[0])
        # the engine's setup, step by step (what BoostingRun.__init__ and before do)
        t = time.perf_counter()
        cfg = make_config(params, SETUP_ROUNDS)
        train = prepare_train(dataset, cfg)
        add("engine setup: config + training set (fields, target)", time.perf_counter() - t)
        t = time.perf_counter()
        fitter = L.OneIterationBooster(cfg.booster_params(0), 1, train.handle, f"num_threads={threads} verbosity=-1")
        add("engine setup: tree-fitting Booster", time.perf_counter() - t)
        fitter.free()
        t = time.perf_counter()
        book = CodeBook.from_mappers(L.bin_mappers(train.handle))
        add("engine setup: read bin mappers, code book", time.perf_counter() - t)
        t = time.perf_counter()
        raw = train.raw
        add("engine setup: raw feature view", time.perf_counter() - t)
        t = time.perf_counter()
        with numba_threads(threads):
            book.encode(raw)
        add("engine setup: code the raw features", time.perf_counter() - t)
        t = time.perf_counter()
        with numba_threads(threads):
            BoostingRun(cfg, sl.Uniform(rate), prepare_train(dataset, cfg), []).fitter.free()
        add("engine setup: all of BoostingRun (Booster, book, codes, buffers)", time.perf_counter() - t)
    return out


def setup_section(path: Path, pairs: int, threads: int) -> list[str]:
    times = _run(["--setup-worker", str(path), str(pairs), str(threads)])
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = [e / s for e, s in zip(times["engine whole call"], times["stock whole call"])]
    lines = [f"## Per-run fixed costs: {SETUP_ROUNDS} rounds on an already constructed 400k-60 Dataset", "",
             f"One process, {pairs} pairs (stock ``lgb.train`` with bagging_fraction=0.1, bagging_freq=1, and "
             "``sl.train`` with ``Uniform(0.1)``, order alternating) on one ``lgb.Dataset(X, y, "
             "free_raw_data=False).construct()``; medians. The time to the end of the first iteration on an "
             "unconstructed Dataset (binning included) is the case table's last columns.", "",
             "| measure | seconds (median) |", "|---|---|"]
    for key in ("stock whole call", "engine whole call", "stock to end of 1st iteration",
                "engine to end of 1st iteration"):
        lines.append(f"| {key} | {med[key]:.3f} |")
    lines.append(f"| engine whole call / stock whole call (median of pair ratios) | {statistics.median(ratio):.2f}x |")
    lines += ["", "The engine's setup, step by step (the same calls, timed alone):", "",
              "| step | ms (median) |", "|---|---|"]
    lines += [f"| {key[len('engine setup: '):]} | {1000 * v:.1f} |" for key, v in med.items()
              if key.startswith("engine setup: ")]
    return lines + [""]


def _run(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


LABELS = {"stock_full": "stock full", "stock_bagging": "stock bagging_fraction={r}",
          "stock_goss": "stock GOSS top_rate=other_rate={h}", "engine_uniform": "engine Uniform({r})",
          "engine_first_order": "engine FirstOrder(rate={r})", "engine_mvs": "engine MVS(rate={r})",
          "engine_first_order_refit": "engine FirstOrder(rate={r}, refit_leaves=True)",
          "engine_full": "engine Full()"}


def case_section(case: str, path: Path, repeats: int, rounds: int, threads: int) -> list[str]:
    desc, rate, _, extra = CASES[case]
    results: dict[str, list[dict]] = {m: [] for m in METHODS}
    for rep in range(repeats):
        for m in METHODS:  # interleaved, so drifts in machine load hit all methods alike
            results[m].append(_run(["--worker", str(path), case, m, str(rounds), str(threads)]))
            print(f"{case} rep {rep} {m}: {results[m][-1]}", file=sys.stderr, flush=True)
    med = {m: {k: statistics.median(r[k] for r in results[m]) for k in results[m][0]} for m in METHODS}
    full, bag = med["stock_full"], med["stock_bagging"]
    lines = [f"## {case}: {desc}; {extra['objective']}, {extra['num_leaves']} leaves, rate r = {rate}, "
             f"{rounds} rounds, {repeats} repeats", "",
             "| method | s/iter | vs stock full | vs stock bagging r | peak RSS MB | vs stock full | "
             "sample ms | tree ms | update ms | to end of 1st iter s | vs stock bagging r |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in METHODS:
        s = med[m]["seconds_per_iter"]
        steps = " | ".join(f"{1000 * med[m][k]:.1f}" if k in med[m] else "" for k in STEPS)
        label = LABELS[m].format(r=rate, h=rate / 2)
        lines.append(f"| {label} | {s:.4f} | {s / full['seconds_per_iter']:.2f}x | "
                     f"{s / bag['seconds_per_iter']:.2f}x | {med[m]['peak_rss_mb']:.0f} | "
                     f"{med[m]['peak_rss_mb'] / full['peak_rss_mb']:.2f}x | {steps} | "
                     f"{med[m]['first_iter_s']:.2f} | {med[m]['first_iter_s'] / bag['first_iter_s']:.2f}x |")
    return lines + [""]


def paired_section(path: Path, pairs: int, threads: int, rounds: int = 60) -> list[str]:
    times = _run(["--paired-worker", str(path), str(rounds), str(pairs), str(threads)])
    base = np.array(times["stock_bagging"])
    lines = [f"### a9a, paired in one process: {pairs} rounds of {rounds}-iteration runs, methods alternating", "",
             "Each engine run divided by the stock bagging run of the same round (a fraction of a second "
             "apart); median and quartiles of those ratios.", "",
             "| method | median s/iter | ratio to stock bagging, median | quartiles |", "|---|---|---|---|"]
    for m in PAIRED:
        ratio = np.array(times[m]) / base
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        lines.append(f"| {LABELS[m].format(r=0.3, h=0.15)} | {np.median(times[m]):.4f} | {q2:.2f}x | "
                     f"{q1:.2f}x - {q3:.2f}x |")
    return lines + [""]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--setup-worker":
        print(json.dumps(setup_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--paired-worker":
        print(json.dumps(paired_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="fresh processes per method (a9a: --a9a-repeats)")
    ap.add_argument("--a9a-repeats", type=int, default=15)
    ap.add_argument("--paired", type=int, default=40, help="rounds of the paired a9a timing (0: skip)")
    ap.add_argument("--setup-pairs", type=int, default=5,
                    help="pairs of the per-run fixed-cost timing on a constructed 400k-60 Dataset (0: skip)")
    ap.add_argument("--quick", action="store_true", help="1/20 of the sizes and few rounds: a smoke run")
    ap.add_argument("--data", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                    help="num_threads of LightGBM and the engine (default 2)")
    ap.add_argument("--out", default=None,
                    help="output file (default docs/results/bench_engine.md at 2 threads, "
                         "docs/results/bench_engine_{N}threads.md at N threads)")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error(f"--threads must be >= 1, got {args.threads}")
    if args.out is None:
        args.out = str(ROOT / "docs/results" / results_name("bench_engine", args.threads))
    import lightgbm
    import numba

    from smart_lgbm.compare.io import write_text

    # the title names the data sets when only some ran (the results page lists outputs by title)
    some = "" if set(args.data) == set(CASES) else f": {', '.join(args.data)}"
    lines = [
        f"# Engine per iteration vs stock LightGBM{some}",
        "",
        f"Command: `python scripts/bench_engine.py {' '.join(sys.argv[1:])}`".rstrip(),
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, lightgbm {lightgbm.__version__}, numba {numba.__version__}; nothing else "
        "running. Each cell: median over fresh processes of each process's median per-iteration wall time (first 3 "
        "iterations dropped); peak RSS (VmHWM) of the whole process, raw data included (its file-backed share, the "
        "shared libraries' code, depends on how much the kernel maps per page fault: scripts/probe_memory.py). "
        "Engine steps: gradients and draw of all rows (sample), LightGBM's tree on the sample (tree), every row's "
        "score update (update). Learning rate 0.1, "
        f"{args.threads} thread{'s' if args.threads > 1 else ''}.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.data:
            path = make_data(case, Path(tmp), args.quick)
            rounds = min(CASES[case][2], 12) if args.quick else CASES[case][2]
            repeats = args.a9a_repeats if case == "a9a" else args.repeats
            lines += case_section(case, path, 2 if args.quick else repeats, rounds, args.threads)
            if case == "400k-60" and args.setup_pairs:
                lines += setup_section(path, 2 if args.quick else args.setup_pairs, args.threads)
            if case == "a9a" and args.paired:
                lines += paired_section(path, 3 if args.quick else args.paired, args.threads)
    write_text(args.out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
