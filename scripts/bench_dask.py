#!/usr/bin/env python
"""Distributed SMART on Dask against lightgbm.dask, side by side in one run.

On a LocalCluster of 2 worker processes (1 thread each), on the same persisted partitions
(balanced: partition ``i`` on worker ``i % 2``), with the same LightGBM parameters:

  lightgbm.dask full, bagging (``subsample=0.1, subsample_freq=1``) and GOSS
  (``top_rate=0.05, other_rate=0.05``: 10% of the rows, the project's convention at rate
  0.1), and ``DaskSmartClassifier`` with ``FirstOrder(rate=0.1)`` and ``MVS(rate=0.1)``.

Reported per method: the median per-iteration wall time (every worker stamps the end of
each iteration through a Dask event; first 3 iterations dropped; the slower worker's
median), the fit's wall time and its set-up (wall time minus the boosting loop: data
placement, port search, network set-up and binning, returning the model), test log-loss
and AUC after the last iteration, and the time to reach lightgbm.dask full's final test
log-loss (the boosting loop up to the first iteration at or below it, and that plus the
set-up), with ratios against each lightgbm.dask method.

Where the time goes, for the DaskSmart runs: per iteration, the engine's own record of
every worker (gradients and sample, tree fitting including LightGBM's network exchange,
score update) and, for the network's share of the tree, the same engine on one worker's
rows in this process without a network (one thread, ``smart_lgbm.train``): the difference
of the tree times is the network exchange plus waiting for the other worker.

Data: synthetic dense binary (``smart_lgbm.datasets.synthetic.make_dense_binary``, seed 0),
``--rows`` training rows (default 2,000,000) x ``--features`` (default 28), and
``--test-rows`` held out.  Everything is one process tree on one machine: run it on a quiet
machine (other load distorts the ratios).

Usage: python scripts/bench_dask.py [--rows 2000000] [--features 28] [--rounds 300]
       [--sampled-rounds 900] [--test-rows 200000] [--out docs/results/bench_dask.md] [--quick]

``--quick`` checks that the script runs (tiny data, few rounds) and prints the markdown
instead of writing it unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PARAMS = {"num_leaves": 31, "learning_rate": 0.1, "min_child_samples": 100, "verbose": -1, "random_state": 1}
RATE = 0.1
DROP = 3  # first iterations left out of per-iteration medians (binning, compilation)


class _Clock:
    """Stamps iteration ends (or the start of iteration 0) on every worker as Dask events.

    The scheduler keeps at most ``distributed.admin.low-level-log-length`` (1000) events per
    topic and drops the oldest, so the stamps are sent in batches of ``BATCH`` per event
    (and at the last iteration), not one event per iteration.
    """

    BATCH = 100

    def __init__(self, topic: str, start: bool) -> None:
        self.topic, self.start = topic, start
        self.before_iteration = start
        self.order = 0 if start else 100
        self.stamps: list[float] = []

    def __call__(self, env) -> None:
        if self.start and env.iteration != env.begin_iteration:
            return
        self.stamps.append(time.time())
        if self.start or len(self.stamps) >= self.BATCH or env.iteration == env.end_iteration - 1:
            from distributed import get_worker

            worker = get_worker()
            worker.log_event(self.topic, {"worker": worker.address, "start": self.start, "t": self.stamps})
            self.stamps = []


def _placed(client, workers, values: np.ndarray, parts: int):
    import dask.array as da

    pieces = np.array_split(values, parts)
    futures = [client.scatter(p, workers=[workers[i % len(workers)]]) for i, p in enumerate(pieces)]
    blocks = [da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces)]
    return da.concatenate(blocks, axis=0).persist()


def _loop_times(events: list) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Per worker: the loop's start time and each iteration's end time."""
    starts: dict[str, float] = {}
    ends: dict[str, list[float]] = {}
    for _, msg in events:  # in the order each worker sent them
        if msg["start"]:
            starts[msg["worker"]] = msg["t"][0]
        else:
            ends.setdefault(msg["worker"], []).extend(msg["t"])
    return starts, ends


def _staged_logloss(booster, X: np.ndarray, y: np.ndarray) -> tuple[list[float], float]:
    """Test log-loss after every iteration (trees added one by one) and the final AUC."""
    from sklearn.metrics import roc_auc_score

    raw = np.zeros(X.shape[0])
    losses = []
    for it in range(booster.num_trees()):
        raw += booster.predict(X, start_iteration=it, num_iteration=1, raw_score=True)
        p = np.clip(1.0 / (1.0 + np.exp(-raw)), 1e-15, 1 - 1e-15)
        losses.append(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))))
    return losses, float(roc_auc_score(y, raw))


def _run(name: str, make, client, X, y, X_test, y_test) -> dict:
    topic = f"bench-{uuid.uuid4().hex}"
    est = make()
    t0 = time.perf_counter()
    est.fit(X, y, callbacks=[_Clock(topic, True), _Clock(topic, False)])
    wall = time.perf_counter() - t0
    starts, ends = _loop_times(client.get_events(topic))
    if set(starts) != set(ends) or len({len(e) for e in ends.values()}) != 1:
        raise RuntimeError(f"{name}: incomplete iteration stamps: start from {sorted(starts)}, "
                           f"ends {({w: len(e) for w, e in ends.items()})}")
    per_iter = max(statistics.median(np.diff([starts[w], *ends[w]])[DROP:]) for w in ends)
    loop = max(ends[w][-1] - starts[w] for w in ends)
    # Time to reach a loss: from the loop start to the end of that iteration, slower worker.
    reach = [max(ends[w][i] - starts[w] for w in ends) for i in range(min(len(e) for e in ends.values()))]
    losses, auc = _staged_logloss(est.booster_, X_test, y_test)
    out = {"name": name, "s_iter": per_iter, "wall": wall, "setup": wall - loop, "loop": loop, "reach": reach,
           "losses": losses, "auc": auc}
    records = getattr(est, "worker_records_", None)
    if records:
        out["phases"] = {key: max(statistics.median(r[key][DROP:]) for r in records)
                         for key in ("sample_seconds", "tree_seconds", "update_seconds", "seconds")}
    print(f"{name}: {per_iter:.4f} s/iter, wall {wall:.1f} s, set-up {wall - loop:.1f} s, "
          f"final logloss {losses[-1]:.5f}, AUC {auc:.5f}", file=sys.stderr)
    return out


def _local_tree_seconds(X: np.ndarray, y: np.ndarray, sampler, rounds: int) -> float:
    """Median tree seconds of the engine on these rows in this process, without a network."""
    import lightgbm as lgb

    import smart_lgbm as sl

    record: dict = {}
    params = {"objective": "binary", "num_leaves": PARAMS["num_leaves"], "learning_rate": PARAMS["learning_rate"],
              "min_data_in_leaf": PARAMS["min_child_samples"], "verbosity": -1, "seed": 1, "num_threads": 1}
    times: list[float] = []

    def keep(env) -> None:
        times.append(env.model.last_record["tree_seconds"])

    sl.train(params, lgb.Dataset(X, y), rounds, sampler=sampler, callbacks=[keep, sl.record_sampling(record)])
    return statistics.median(times[DROP:])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def _markdown(args, results: dict, target: float, local_tree: dict, command: str, shape: tuple) -> str:
    import lightgbm as lgb

    rows, features, parts = shape
    lines = [
        "# Distributed SMART on Dask vs lightgbm.dask",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}, "
        f"lightgbm {lgb.__version__}. LocalCluster of 2 worker processes with 1 thread each, one fit per method "
        f"in one run. Data: synthetic dense binary (make_dense_binary, seed 0), {rows:,} training rows x "
        f"{features} features in {parts} persisted partitions (balanced over the 2 workers), "
        f"{args.test_rows:,} test rows. {args.rounds} rounds for lightgbm.dask full, {args.sampled_rounds} for the "
        f"sampling methods; 31 leaves, learning rate 0.1, "
        f"min_child_samples 100.",
        "",
        "s/iter: median wall time per iteration (first 3 dropped; the slower worker's median). Set-up: fit wall "
        "time minus the boosting loop. Test logloss: after the last round; best: the lowest over the rounds. "
        "Target: lightgbm.dask full's test log-loss after the last round "
        f"({target:.5f}; lightgbm.dask's own result varies slightly from run to run); time to target = boosting "
        "loop up to the first iteration at or below it (and with the set-up added).",
        "",
        "| method | s/iter | vs lgb full | vs lgb GOSS | vs lgb bagging | test logloss | best (iteration) | AUC | "
        "iters to target | loop to target (s) | vs lgb full | with set-up (s) | vs lgb full | fit wall (s) | "
        "set-up (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    full, goss, bag = results["lgb full"], results["lgb GOSS"], results["lgb bagging"]

    def to_target(r: dict) -> tuple[int | None, float | None]:
        hit = next((i for i, loss in enumerate(r["losses"]) if loss <= target), None)
        return (None, None) if hit is None or hit >= len(r["reach"]) else (hit + 1, r["reach"][hit])

    full_iters, full_time = to_target(full)
    for r in results.values():
        iters, t = to_target(r)
        cells = [r["name"], f"{r['s_iter']:.4f}", _ratio(r["s_iter"], full["s_iter"]),
                 _ratio(r["s_iter"], goss["s_iter"]), _ratio(r["s_iter"], bag["s_iter"]),
                 f"{r['losses'][-1]:.5f}", f"{min(r['losses']):.5f} ({int(np.argmin(r['losses'])) + 1})",
                 f"{r['auc']:.5f}"]
        if iters is None:
            cells += ["not reached", "-", "-", "-", "-"]
        else:
            cells += [str(iters), f"{t:.1f}", _ratio(t, full_time), f"{t + r['setup']:.1f}",
                      _ratio(t + r["setup"], full_time + full["setup"])]
        cells += [f"{r['wall']:.1f}", f"{r['setup']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Where a DaskSmart iteration goes", "",
              "Medians over iterations of each worker's engine record, the slower worker's (seconds). Tree: "
              "LightGBM's tree learner on the worker's sample, including the network exchange of histograms and "
              "splits. Local tree: the same engine and sampler on one worker's rows in one process without a "
              "network; tree - local tree is the network exchange plus waiting for the other worker. Other: "
              "the iteration's wall time not in the record (evaluation, callbacks, Python).", "",
              "| method | s/iter | gradients + sample | tree | local tree | network + wait | score update | other |",
              "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "phases" not in r:
            continue
        ph = r["phases"]
        lines.append(f"| {name} | {r['s_iter']:.4f} | {ph['sample_seconds']:.4f} | {ph['tree_seconds']:.4f} | "
                     f"{local_tree[name]:.4f} | {ph['tree_seconds'] - local_tree[name]:.4f} | "
                     f"{ph['update_seconds']:.4f} | {max(r['s_iter'] - ph['seconds'], 0.0):.4f} |")
    lines += ["", "Set-up per fit (seconds, from the table above): "
              + ", ".join(f"{r['name']} {r['setup']:.1f}" for r in results.values())
              + ". DaskSmart's set-up also holds the survey of the workers' rows, the port search and a scheduler "
              "round trip for the initial score.", "",
              "## Goals", ""]
    for name in ("smart FirstOrder(0.1)", "smart MVS(0.1)"):
        r = results[name]
        lines.append(f"- {name}: per iteration {_ratio(r['s_iter'], full['s_iter'])} of lightgbm.dask full "
                     f"(goal <= 0.50x: {'met' if r['s_iter'] <= 0.5 * full['s_iter'] else 'not met'}), "
                     f"{_ratio(r['s_iter'], goss['s_iter'])} of its GOSS (goal < 1.00x: "
                     f"{'met' if r['s_iter'] < goss['s_iter'] else 'not met'}).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=300, help="rounds of lightgbm.dask full (its final "
                        "test log-loss is the target)")
    parser.add_argument("--sampled-rounds", type=int, default=None, help="rounds of the sampling methods, "
                        "enough to reach the target (default 3 x --rounds)")
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8, help="partitions of the training data (even)")
    parser.add_argument("--out", default=None, help="markdown output (default docs/results/bench_dask.md; "
                                                    "--quick prints instead)")
    parser.add_argument("--quick", action="store_true", help="tiny data and few rounds: check that it runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.features, args.rounds, args.test_rows, args.partitions = 20_000, 16, 12, 5_000, 4
    args.sampled_rounds = args.sampled_rounds or 3 * args.rounds
    out = args.out or (None if args.quick else str(ROOT / "docs/results/bench_dask.md"))
    command = "python scripts/bench_dask.py " + " ".join(argv if argv is not None else sys.argv[1:])

    import lightgbm as lgb
    from distributed import Client, LocalCluster

    from smart_lgbm import MVS, FirstOrder
    from smart_lgbm.datasets.synthetic import make_dense_binary
    from smart_lgbm.dask import DaskSmartClassifier

    X_all, y_all = make_dense_binary(args.rows + args.test_rows, args.features, seed=0)
    X_all = np.ascontiguousarray(X_all, dtype=np.float32)
    X_train, y_train = X_all[: args.rows], y_all[: args.rows].astype(np.int64)
    X_test, y_test = X_all[args.rows:], y_all[args.rows:].astype(np.int64)
    full = {**PARAMS, "n_estimators": args.rounds}
    common = {**PARAMS, "n_estimators": args.sampled_rounds}
    methods = {
        "lgb full": lambda: lgb.DaskLGBMClassifier(**full),
        "lgb bagging": lambda: lgb.DaskLGBMClassifier(subsample=RATE, subsample_freq=1, **common),
        "lgb GOSS": lambda: lgb.DaskLGBMClassifier(data_sample_strategy="goss", top_rate=RATE / 2,
                                                   other_rate=RATE / 2, **common),
        "smart FirstOrder(0.1)": lambda: DaskSmartClassifier(sampler=FirstOrder(rate=RATE), **common),
        "smart MVS(0.1)": lambda: DaskSmartClassifier(sampler=MVS(rate=RATE), **common),
    }
    samplers = {"smart FirstOrder(0.1)": FirstOrder(rate=RATE), "smart MVS(0.1)": MVS(rate=RATE)}
    results = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        # Warm-up on a small slice, not timed: numba compiles (or loads) the engine's kernels
        # in each worker process on first use.
        small = slice(0, min(args.rows, 20_000))
        X_small = _placed(client, workers, X_train[small], 2)
        y_small = _placed(client, workers, y_train[small], 2)
        for sampler in samplers.values():
            DaskSmartClassifier(sampler=sampler, **{**PARAMS, "n_estimators": 5}).fit(X_small, y_small)
        lgb.DaskLGBMClassifier(**{**PARAMS, "n_estimators": 5}).fit(X_small, y_small)
        del X_small, y_small
        X = _placed(client, workers, X_train, args.partitions)
        y = _placed(client, workers, y_train, args.partitions)
        for name, make in methods.items():
            results[name] = _run(name, make, client, X, y, X_test, y_test)
    # One worker's rows (partitions 0, 2, 4, ...), for the engine without a network.
    mine = np.concatenate([p for i, p in enumerate(np.array_split(np.arange(args.rows), args.partitions)) if i % 2 == 0])
    local_tree = {name: _local_tree_seconds(X_train[mine], y_train[mine], sampler, min(args.rounds, 30))
                  for name, sampler in samplers.items()}
    target = results["lgb full"]["losses"][-1]
    text = _markdown(args, results, target, local_tree, command, (args.rows, args.features, args.partitions))
    if out is None:
        print(text)
    else:
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
