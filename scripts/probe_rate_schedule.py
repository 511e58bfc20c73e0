"""Oracle study of rate schedules: how fast can *any* growing rate reach full boosting's quality?

An adaptive rate (``rate="auto"``) decides online when to grow the sample.  This script
asks what the best such decision could give: it trains the same sampler with fixed
schedules, "rate ``a`` for the first ``k`` iterations, then rate ``b``", for several
switch points ``k``, next to stock LightGBM's full boosting, all on one experiment of a
comparison config (same data, split, parameters and metric as ``smart-lgbm compare``),
and reports for each its best validation metric and the first iteration (and seconds)
at which it reaches stock full's best within the config's tolerance (or ``--tolerance``).

If no switch point reaches the target within a given speed-up, no controller that only
grows the rate from ``a`` to ``b`` can: it would have to pick one of these schedules.

Seconds are wall time per iteration including the validation metric's evaluation: the
same cost added to every run's iterations, which understates the cheaper sampled
iterations' speed-up (a conservative figure, not a benchmark).  Quality is exact (same
seed, same model).

Example::

    python scripts/probe_rate_schedule.py configs/mslr-like.toml --sampler first_order \\
        --switch 100 150 200 250 300 --rounds 600 --jobs 6 --out docs/results/rate_schedules/mslr-like.md

Variants of the adaptive rate run beside them with ``--auto SPEC ...``: ``default`` is
``rate="auto"``, any other SPEC is AdaptiveRate's parameters as ``key=value,...`` (the keys
of a config's ``rate = { ... }`` table).  ``--stock-records`` takes stock full's curve and
seconds from a committed comparison's ``records.json`` instead of rerunning it (every
run's seconds are then training seconds, evaluation excluded, as the comparison records
them).  The JSON beside the table keeps each run's rate per iteration and, for an adaptive
run, its noise ratio at each decision (``ratios``)::

    python scripts/probe_rate_schedule.py configs/higgs-like.toml --sampler mvs --rounds 360 --seeds 0 1 \\
        --auto default growth=1.5 slowdown=0.01 --stock-records docs/results/higgs-like/higgs-like/records.json \\
        --out /tmp/higgs_auto_variants.md
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numba
import numpy as np

import smart_lgbm as sl
from smart_lgbm.compare.config import load_config
from smart_lgbm._numba.row_kernel import parallel_from
from smart_lgbm.samplers.rate_solve import compile_rate_solve
from smart_lgbm.compare.data import head, load_data, make_datasets
from smart_lgbm.compare.io import atomic_write
from smart_lgbm.compare.methods import run_params
import smart_lgbm.samplers.base as _sampler_base
import smart_lgbm.samplers.simple as _sampler_simple
from smart_lgbm.samplers.adaptive import AdaptiveRate, adaptive_rate_from_table, leaf_noise_sums, pooled_gains


class StructureTrace:
    """Per iteration, how the newest tree's split structure did on its own sample and on every
    row (``--structure``: an O(rows) numpy pass per iteration, a probe's instrument, not the
    controller's).

    At iteration ``t`` the run's leaves are tree ``t - 1``'s, which was grown on the previous
    iteration's sample with the previous iteration's gradients; both are kept from the last
    call.  Each entry is ``(t - 1, N_in, Q_in, D_in, F, D_full, N_f, Q_f, D_f)``: the in-sample
    sums of :func:`smart_lgbm.samplers.adaptive.pooled_gains` on the sample that grew the tree,
    the full-data gain ``F = sum_j G_j^2 / H_j`` and data noise ``D_full = sum_j (sum g^2 -
    G_j^2 / n_j) / H_j`` of every row on the same leaves, and the controller's own (fresh
    sample) sums.
    """

    def __init__(self) -> None:
        self.entries: list[list[float]] = []
        self._previous: tuple[np.ndarray, ...] | None = None

    def __call__(self, state: Any, indices: np.ndarray, fit_grad: np.ndarray, fit_hess: np.ndarray,
                 constant_p: float | None) -> None:
        g_all, h_all = (np.asarray(a, dtype=np.float64).reshape(state.num_rows, -1)[:, 0] for a in state.kernel_arrays())
        leaves = state.history.leaves
        m = indices.shape[0]
        if leaves is not None and self._previous is not None:
            leaves = np.asarray(leaves).reshape(state.num_rows, -1)[:, 0].astype(np.int32)
            idx, fg, fh, g_prev, h_prev, cp = self._previous
            inside = pooled_gains([leaf_noise_sums(idx, fg.reshape(-1, 1), fh.reshape(-1, 1), h_prev.reshape(-1, 1),
                                                   leaves, cp)])
            fresh = pooled_gains([leaf_noise_sums(indices, fit_grad.reshape(m, 1), fit_hess.reshape(m, 1),
                                                  h_all.reshape(-1, 1), leaves, constant_p)])
            width = int(leaves.max()) + 1
            big_g = np.bincount(leaves, weights=g_prev, minlength=width)
            big_h = np.bincount(leaves, weights=h_prev, minlength=width)
            big_s = np.bincount(leaves, weights=g_prev * g_prev, minlength=width)
            count = np.bincount(leaves, minlength=width).astype(np.float64)
            used = big_h > 0.0
            gain = float(np.sum(big_g[used] ** 2 / big_h[used]))
            spread = float(np.sum(np.maximum(big_s[used] - big_g[used] ** 2 / np.maximum(count[used], 1.0), 0.0)
                                  / big_h[used]))
            self.entries.append([state.iteration - 1, *inside, gain, spread, *fresh])
        self._previous = (indices.copy(), np.asarray(fit_grad, dtype=np.float64).reshape(-1).copy(),
                          np.asarray(fit_hess, dtype=np.float64).reshape(-1).copy(), g_all.copy(), h_all.copy(),
                          constant_p)


def _traced(original: Any, trace: StructureTrace) -> Any:
    """``observe_sample`` that feeds ``trace`` first (one output column only)."""

    def observe(sampler: Any, state: Any, indices: np.ndarray, fit_grad: np.ndarray, fit_hess: np.ndarray,
                constant_p: float | None = None) -> None:
        trace(state, indices, fit_grad, fit_hess, constant_p)
        original(sampler, state, indices, fit_grad, fit_hess, constant_p=constant_p)

    return observe


class ScheduledRate(AdaptiveRate):
    """A rate fixed in advance: ``before`` for iterations < ``switch``, then ``after``."""

    def __init__(self, before: float, switch: int, after: float) -> None:
        super().__init__(start=min(before, after), maximum=max(before, after))
        self.before, self.switch, self.after = before, switch, after

    def rate_for(self, state: Any, iteration: int) -> float:
        return self.before if iteration < self.switch else self.after

    def observe(self, state: Any, iteration: int, sums: Any, allgather: Any = None, **kwargs: Any) -> float:
        return self.rate_for(state, iteration + 1)


class LoggedRate(AdaptiveRate):
    """An adaptive rate that keeps a handle on its (last) run's state, to report its decisions."""

    def observe(self, state: Any, iteration: int, sums: Any, allgather: Any = None, **kwargs: Any) -> float:
        rate = super().observe(state, iteration, sums, allgather, **kwargs)
        self.last_state = state
        return rate


def parse_variant(text: str) -> dict[str, Any]:
    """``"threshold=0.05,window=5"`` as AdaptiveRate's parameters (``"default"``: none);
    ValueError naming the accepted keys for a bad one."""
    table: dict[str, Any] = {}
    for item in filter(None, text.split(",")) if text != "default" else []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--auto: {item!r} is not key=value")
        table[key.strip()] = float(value) if any(c in value for c in ".eE") else int(value)
    adaptive_rate_from_table(table)  # checks the keys and values now, not in a worker
    return table


def stock_from_records(path: str, experiment: str) -> tuple[np.ndarray, np.ndarray]:
    """Stock full's metric and cumulative training seconds per iteration from a comparison's
    ``records.json`` (seconds as that comparison measured them: evaluation excluded)."""
    records = json.loads(Path(path).read_text())
    runs = [r for r in records["runs"] if r["method"] == "stock_full" and r["experiment"] == experiment]
    if not runs:
        raise ValueError(f"no stock_full run of experiment {experiment!r} in {path}")
    return np.asarray(runs[0]["values"]), np.cumsum(runs[0]["seconds"])


def _training_seconds(steps: list[float]) -> np.ndarray:
    """Cumulative training seconds per iteration, the first iteration (which also holds the
    setup) counted at the run's median."""
    steps_a = np.asarray(steps, dtype=np.float64).copy()
    if steps_a.size > 1:
        steps_a[0] = np.median(steps_a[1:])
    return np.cumsum(steps_a)


def _run(train_fn: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(metric per iteration, cumulative wall seconds per iteration) of one training."""
    values: list[float] = []
    stamps: list[float] = []

    def record(env: Any) -> None:
        stamps.append(time.perf_counter())
        values.append(next(r[2] for r in env.evaluation_result_list if r[1] == metric))

    train_fn([record])
    stamps_a = np.asarray(stamps)
    # seconds of training to each iteration, setup (binning, the engine's coding) left out: the
    # first iteration, which also holds the setup, is counted at the run's median iteration time
    step = float(np.median(np.diff(stamps_a))) if stamps_a.size > 1 else 0.0
    return np.asarray(values), stamps_a - stamps_a[0] + step


@functools.lru_cache(maxsize=1)
def _data(config_path: str, name: str) -> Any:
    """The experiment's data, made once per process (runs in one process share it)."""
    return load_data(load_config(config_path).experiment(name).data)


def _one_run(config_path: str, name: str, sampler_name: str, before: float, after: float, rounds: int,
             refit: bool, structure: bool, spec: tuple[str, int, int, dict | None],
             ) -> tuple[np.ndarray, np.ndarray, str, dict]:
    """One training of ``spec = (label, switch, seed, variant)`` (switch -1: stock full
    boosting, -2: the sampler with the adaptive rate ``AdaptiveRate(**variant)``); also
    returns the run's rate per iteration and the adaptive rate's decisions.  ``refit``: the
    sampler with ``refit_leaves=True``; ``structure``: an adaptive run also records
    :class:`StructureTrace`'s entries."""
    exp = load_config(config_path).experiment(name)
    data = _data(config_path, name)
    # the comparison's own parameters for a full-boosting method (metric, pinned binning seed)
    params = run_params(exp.method(exp.target_method), exp, seed=spec[2])
    label, switch, seed, variant = spec
    adaptive = LoggedRate(**(variant or {}))

    def sampler(k: int) -> Any:  # k = -2: the adaptive rate itself
        extra = {"refit_leaves": True} if refit else {}
        return sl.make_sampler(sampler_name, rate=adaptive if k == -2 else ScheduledRate(before, k, after), **extra)

    if switch == -1:
        def train(callbacks: list) -> None:
            tr, va = make_datasets(data)
            lgb.train(params, tr, rounds, valid_sets=[va], valid_names=["valid"], callbacks=callbacks)
    else:
        # compile the engine's kernels (serial and parallel twins) before anything is timed
        small = head(data, 20_000)
        for threshold in (None, 0):
            with parallel_from(threshold) if threshold is not None else contextlib.nullcontext():
                tr, va = make_datasets(small)
                sl.train(params, tr, 3, sampler=sampler(switch if switch == -2 else 1), valid_sets=[va])
                compile_rate_solve()  # the rate solve's kernels a few warm-up rows may never call

        def train(callbacks: list) -> None:
            tr, va = make_datasets(data)
            sl.train(params, tr, rounds, sampler=sampler(switch), valid_sets=[va], valid_names=["valid"],
                     callbacks=[sl.record_sampling(sampled), *callbacks])
    sampled: dict[str, list] = {}
    trace = StructureTrace()
    originals = _sampler_base.observe_sample, _sampler_simple.observe_sample
    if structure and switch == -2:
        _sampler_base.observe_sample = _traced(originals[0], trace)  # type: ignore[assignment]
        _sampler_simple.observe_sample = _traced(originals[1], trace)  # type: ignore[assignment]
    try:
        v, t = _run(train, exp.metric)
    finally:
        _sampler_base.observe_sample, _sampler_simple.observe_sample = originals  # type: ignore[assignment]
    state = getattr(adaptive, "last_state", None)
    extra = {"sampling_rate": sampled.get("sampling_rate", []), "train_seconds": sampled.get("seconds", []),
             "ratios": [] if state is None or switch != -2 else state.ratios}
    if structure and switch == -2:
        extra["structure"] = trace.entries
    print(f"{label} seed {seed}: best {(v.max() if exp.higher_is_better else v.min()):.5f}, {t[-1]:.1f} s",
          flush=True)
    return v, t, data.description, extra


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="comparison config (TOML): data, params, metric, tolerance")
    ap.add_argument("--experiment", help="experiment name (default: the config's first)")
    ap.add_argument("--sampler", default="first_order", help="sampler name (default first_order)")
    ap.add_argument("--before", type=float, default=0.1, help="rate before the switch (default 0.1)")
    ap.add_argument("--after", type=float, default=1.0, help="rate after the switch (default 1.0)")
    ap.add_argument("--switch", type=int, nargs="*", default=[], help="switch iterations k")
    ap.add_argument("--auto", nargs="*", metavar="SPEC",
                    help='also run the sampler with adaptive rates: each SPEC "default" (rate="auto") or '
                         'AdaptiveRate\'s parameters as key=value,... (e.g. threshold=0.05,snap=1.0); '
                         '--auto alone: "default"')
    ap.add_argument("--stock-records", metavar="RECORDS_JSON",
                    help="take stock full's curve and seconds from a comparison's records.json instead of "
                         "running it (every run's seconds are then training seconds, evaluation excluded)")
    ap.add_argument("--refit", action="store_true",
                    help="the sampler with refit_leaves=True (leaf values from every row; the sample chooses "
                         "the splits)")
    ap.add_argument("--structure", action="store_true",
                    help="adaptive runs also record, per iteration, the newest tree's in-sample and full-data "
                         "gains (JSON: structure; an O(rows) pass per iteration, so their seconds are inflated)")
    ap.add_argument("--rounds", type=int, default=600)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--tolerance", type=float, help="default: the config's")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (default 1)")
    ap.add_argument("--out", required=True, help="markdown output (written atomically)")
    args = ap.parse_args(argv)
    if any(k < 0 for k in args.switch):
        ap.error(f"--switch: switch iterations must be >= 0, got {args.switch}")
    if args.rounds < 2 or args.jobs < 1:
        ap.error(f"--rounds must be >= 2 and --jobs >= 1, got {args.rounds} and {args.jobs}")

    try:
        variants = [(text, parse_variant(text)) for text in (args.auto or ["default"])] if args.auto is not None \
            else []
    except (TypeError, ValueError) as exc:
        ap.error(f"--auto: {exc}")

    config = load_config(args.config)
    exp = config.experiment(args.experiment) if args.experiment else config.experiments[0]
    # stock full from a comparison's records: read (and checked) before anything runs
    try:
        stock_records = stock_from_records(args.stock_records, exp.name) if args.stock_records else None
    except (OSError, ValueError, KeyError) as exc:
        ap.error(f"--stock-records: {exc}")
    specs = [] if args.stock_records else [("stock full", -1, 0, None)]
    specs += [(f"{args.before} for {k}, then {args.after}", k, seed, None) for k in args.switch for seed in args.seeds]
    specs += [('rate "auto"' if text == "default" else f"auto {text}", -2, seed, table)
              for text, table in variants for seed in args.seeds]
    job = functools.partial(_one_run, args.config, exp.name, args.sampler, args.before, args.after, args.rounds,
                            args.refit, args.structure)
    if args.jobs > 1:  # each run in its own process, each with the config's num_threads
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(job, specs))
    else:
        results = [job(spec) for spec in specs]
    if args.stock_records:  # every run's seconds: training only, as the comparison records them
        results = [(v, _training_seconds(extra["train_seconds"]), desc, extra) for v, _t, desc, extra in results]
        assert stock_records is not None
        sv, st = stock_records
        specs = [("stock full", -1, 0, None)] + specs
        # its whole curve: the target is its best over the comparison's rounds, as there
        results = [(sv, st, "", {"sampling_rate": [], "ratios": []})] + results
    runs = [(label, seed, v, t) for (label, _, seed, _var), (v, t, _desc, _x) in zip(specs, results, strict=True)]
    description = results[-1][2]
    metric, higher = exp.metric, exp.higher_is_better
    tol = exp.tolerance if args.tolerance is None else args.tolerance
    v = runs[0][2]
    best = v.max() if higher else v.min()
    target = best - tol if higher else best + tol
    reached = (lambda v: v >= target) if higher else (lambda v: v <= target)
    stock_v, stock_t = runs[0][2], runs[0][3]
    stock_hit = int(np.argmax(reached(stock_v)))
    lines = [f"# Rate schedules on {exp.name}: {args.sampler}{' (refit_leaves=True)' if args.refit else ''}, rate {args.before} then {args.after}", "",
             f"Command: `python scripts/probe_rate_schedule.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
             "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"lightgbm {lgb.__version__}, numba {numba.__version__}.", "",
             f"Data: {description}. Params: {exp.params}. Metric {metric} on the validation split; target = "
             f"stock full's best over {len(stock_v)} rounds ({best:.5f}) {'-' if higher else '+'} {tol} = "
             f"{target:.5f}. Seconds: " + (
                 f"training seconds (evaluation excluded; stock full's from {args.stock_records}) "
                 if args.stock_records else "wall time ") +
             "of the iterations up to that one (setup left out: the first "
             "iteration counts at the run's median iteration time)" + (
                 "" if args.stock_records else ", the validation metric's evaluation included (the same for every "
                 "run)") + "; kernels compiled before. Mean curve = the seeds' metric averaged per "
             "iteration; its time = the seeds' median seconds at that iteration.", "",
             "| schedule | seeds | best (iteration) | reaches target at | seconds | vs stock full |",
             "|---|---:|---:|---:|---:|---:|",
             f"| stock full | 1 | {best:.5f} ({int(np.argmax(stock_v) if higher else np.argmin(stock_v)) + 1}) | "
             f"{stock_hit + 1} | {stock_t[stock_hit]:.1f} | 1.00x |"]
    labels = list(dict.fromkeys(r[0] for r in runs[1:]))
    for label in labels:
        group = [r for r in runs[1:] if r[0] == label]
        n = min(len(r[2]) for r in group)
        mean = np.mean([r[2][:n] for r in group], axis=0)
        secs = np.median([r[3][:n] for r in group], axis=0)
        b = int(np.argmax(mean) if higher else np.argmin(mean))
        hit = np.flatnonzero(reached(mean))
        if hit.size:
            i = int(hit[0])
            cells = f"{i + 1} | {secs[i]:.1f} | {stock_t[stock_hit] / secs[i]:.2f}x"
        else:
            cells = "not reached | — | —"
        lines.append(f"| {label} | {len(group)} | {mean[b]:.5f} ({b + 1}) | {cells} |")
    steps = np.diff(runs[0][3])
    rates = {f"stock full {1000 * statistics.median(steps):.0f}"}
    for (_label, switch, _, _var), (_v, t, _d, _x) in zip(specs[1:], results[1:], strict=True):
        steps = np.diff(t)
        if switch == -2:
            continue
        if switch > 1:
            rates.add(f"rate {args.before} {1000 * statistics.median(steps[: switch - 1]):.0f}")
        if switch < len(t) - 1:
            rates.add(f"rate {args.after} {1000 * statistics.median(steps[max(switch, 1):]):.0f}")
    lines += ["", f"Runs: {len(specs)}, {args.jobs} at a time (each in its own process, with the config's num_threads). "
              "Median ms per iteration: " + "; ".join(sorted(rates)) + " (one entry per distinct median)."]
    for (label, switch, seed, _var), (_v, _t, _d, extra) in zip(specs, results, strict=True):
        if switch == -2:  # where the adaptive rate grew, and its noise ratio at each decision
            rates = extra["sampling_rate"]
            steps = [f"{i + 1}: {rates[i]:.2f}" for i in range(1, len(rates)) if abs(rates[i] - rates[i - 1]) > 0.02]
            lines.append(f"- {label} seed {seed}: rate {rates[0]:.2f} at 1" + "".join(f", {x}" for x in steps))
    text = "\n".join(lines) + "\n"
    curves = {f"{label} seed {seed}": {"values": v.tolist(), "seconds": t.tolist(), **extra}
              for (label, seed, v, t), (_v, _t, _d, extra) in zip(runs, results, strict=True)}
    atomic_write(Path(args.out).with_suffix(".json"), lambda fh: fh.write(json.dumps(curves)))
    atomic_write(args.out, lambda fh: fh.write(text))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
