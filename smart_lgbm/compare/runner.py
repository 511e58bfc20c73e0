"""Run the methods of a config: check everything first, then train, saving after each method.

Order of work (``docs/compare.md``):

1. the command line against the config (experiments, methods, seeds; repeats dropped);
2. the output folder: writable, and its existing records mergeable (:mod:`.store`);
3. every chosen experiment's data, loaded and checked, and a short pre-flight run of every
   chosen method (:mod:`.checks`; with several experiments, first in child processes side
   by side, so that their kernels compile on every core) -- all before the first timed run;
4. the timed runs.  After each method (``compare``) or seed (``run``) its records are
   merged into the folder and everything drawn from them is rewritten at once.

Ctrl-C stops the run in progress; what had finished is on disk already, and the command
says what it kept before exiting with 130.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .checks import WARMUP_ROUNDS, check_data, compile_side_by_side, preflight
from .config import CompareConfig, ConfigError, Experiment, MethodSpec
from .data import ExperimentData, fingerprint, load_data
from .io import interrupts_deferred, written_together
from .methods import RunRecord, method_seeds, run_method
from .peer_runs import model_text
from .peers import require_peers
from .plots import matplotlib_agg
from .progress import Progress
from .report import Table
from .store import ExperimentStore, RunStore, budget_reference_seconds, check_output_folder, write_summary


@dataclass
class ExperimentResult:
    """What one experiment produced (so far)."""

    experiment: Experiment
    data_description: str = ""
    records: list[RunRecord] = field(default_factory=list)
    finished_methods: list[str] = field(default_factory=list)
    table: Table | None = None
    folder: Path | None = None


def _unique(values: Sequence | None) -> list | None:
    """``values`` without repeats (first occurrence kept), or None."""
    return None if values is None else list(dict.fromkeys(values))


def _choose_experiments(config: CompareConfig, names: Sequence[str] | None) -> list[Experiment]:
    return [config.experiment(n) for n in _unique(names) or []] if names else list(config.experiments)


def _load_checked(exp: Experiment, methods: Sequence[MethodSpec]) -> ExperimentData:
    data = load_data(exp.data, f"[experiments.{exp.name}] data")
    check_data(exp, methods, data)
    return data


def _prepare(plan: Sequence[tuple[Experiment, list[MethodSpec]]], config: CompareConfig,
             progress: Progress, stores: dict[str, list[ExperimentStore | RunStore]]) -> dict[str, ExperimentData]:
    """Load and check every experiment's data and pre-fly every method, before any timed run.

    Each experiment's ``stores`` (the records its runs join, or whose times they read) get
    the data's fingerprint first, and refuse records made from other rows.

    Returns the first experiment's data (trained next); the others are loaded again when
    their turn comes, so that only one experiment's data is held at a time.
    """
    rounds = WARMUP_ROUNDS if config.warmup else 1
    if rounds > 1 and len(plan) > 1 and (os.cpu_count() or 1) > 1:
        progress.note(f"compiling the methods' kernels for {len(plan)} experiments in "
                      f"{min(len(plan), os.cpu_count() or 1)} processes side by side (not timed)")
        compile_side_by_side(plan, rounds)
    kept: dict[str, ExperimentData] = {}
    for i, (exp, methods) in enumerate(plan):
        progress.note(f"experiment {exp.name}: loading and checking the data")
        data = _load_checked(exp, methods)
        digest = fingerprint(data)
        for store in stores.get(exp.name, []):
            store.check_data(digest)
        progress.note(f"experiment {exp.name}: {data.description}; pre-flight run of "
                      f"{len(methods)} method(s), {rounds} round(s) on the first rows (not timed)")
        preflight(exp, data, methods, rounds)
        if i == 0:
            kept[exp.name] = data
    return kept


def run_compare(
    config: CompareConfig,
    *,
    methods: list[str] | None = None,
    experiments: list[str] | None = None,
    output: str | os.PathLike | None = None,
    overwrite: bool = False,
    stream: TextIO | None = None,
) -> list[ExperimentResult]:
    """Run a comparison and write its files.

    Parameters
    ----------
    config : CompareConfig
    methods, experiments : list of str, optional
        Run only these method labels / experiment names (repeats are ignored).  The other
        methods' earlier results in the output folder are kept (see :mod:`.store`).
    output : path-like, optional
        Overrides ``config.output``.
    overwrite : bool, default=False
        Replace records in the output folder that new runs cannot be merged into (another
        setup, an older format) instead of refusing to start.
    stream : text stream, optional
        Progress goes here (default ``sys.stderr``).

    Returns
    -------
    list of ExperimentResult

    Raises
    ------
    ConfigError
        Before anything trains: bad command-line choices, output folder, data or parameters.
    MissingExtraError
        Before anything trains: matplotlib, which draws the plots, is not installed (the
        ``compare`` extra), or XGBoost or CatBoost, which a chosen method needs (the
        ``peers`` extra).
    KeyboardInterrupt
        Re-raised after the kept results are listed on ``stream`` (they are on disk already).
    """
    matplotlib_agg()  # the plots come after hours of training: fail now if they cannot be drawn
    progress = Progress(stream or sys.stderr, config.progress_seconds)
    out = Path(output) if output is not None else config.output
    chosen = _choose_experiments(config, experiments)
    labels = _unique(methods)
    for label in labels or []:  # unknown labels fail before anything runs
        if not any(label in exp.labels for exp in chosen):
            known = dict.fromkeys(m for exp in chosen for m in exp.labels)
            raise ConfigError(f"no method {label!r} in the chosen experiments; methods: {', '.join(known)}")
    plan = [(exp, _in_order([m for m in exp.methods if labels is None or m.label in labels], exp)) for exp in chosen]
    plan = [(exp, ms) for exp, ms in plan if ms]
    require_peers([m.kind for _, ms in plan for m in ms])
    check_output_folder(out, [out / exp.name for exp, _ in plan])
    stores = {exp.name: ExperimentStore(exp, out / exp.name, [m.label for m in ms], overwrite, config.path)
              for exp, ms in plan}
    for exp, ms in plan:  # budgets need the target's time: from this run, or from the folder
        if any(exp.budget_of(m) is not None for m in ms) and exp.target_method not in [m.label for m in ms]:
            budget_reference_seconds(exp, stores[exp.name])
    order = [e.name for e in config.experiments]
    results: list[ExperimentResult] = []
    try:
        loaded = _prepare(plan, config, progress, {name: [store] for name, store in stores.items()})
        for exp, exp_methods in plan:
            store = stores[exp.name]
            result = ExperimentResult(exp, folder=store.folder)
            results.append(result)
            data = loaded.pop(exp.name, None) or _load_checked(exp, exp_methods)
            result.data_description = store.data_description = data.description
            progress.note(f"experiment {exp.name}: {data.description}; metric {exp.metric}")
            _run_methods(exp, exp_methods, data, store, result, progress, out, order)
            progress.note(f"experiment {exp.name}: wrote {store.folder}")
    except KeyboardInterrupt:
        kept = [f"{r.experiment.name}: {', '.join(r.finished_methods)}" for r in results if r.finished_methods]
        progress.note("interrupted; "
                      + (f"kept the finished methods' results in {out} ({'; '.join(kept)})" if kept
                         else "no method had finished, nothing was written")
                      + ". The unfinished method's runs were discarded; its earlier results, if any, are kept.")
        raise
    return results


def _in_order(methods: list[MethodSpec], exp: Experiment) -> list[MethodSpec]:
    """``methods`` with the target method first when another method's time budget needs its time."""
    if not any(exp.budget_of(m) is not None for m in methods):
        return methods
    return sorted(methods, key=lambda m: m.label != exp.target_method)  # stable: config order otherwise


def _budget_seconds(exp: Experiment, method: MethodSpec, store: ExperimentStore) -> float | None:
    share = exp.budget_of(method)
    return None if share is None else share * budget_reference_seconds(exp, store)


def _run_methods(exp: Experiment, methods: Sequence[MethodSpec], data: ExperimentData, store: ExperimentStore,
                 result: ExperimentResult, progress: Progress, out: Path, order: Sequence[str]) -> None:
    runs = [(m, s) for m in methods for s in method_seeds(m, exp)]
    done = 0
    for method in methods:
        finished = []
        budget = _budget_seconds(exp, method, store)
        for seed in method_seeds(method, exp):
            done += 1
            label = f"({done}/{len(runs)}) {exp.name} {method.label} seed {seed}"
            record = run_method(method, exp, data, seed, progress.run_hook(label, exp.rounds_of(method), exp.metric),
                                budget_seconds=budget)
            progress.run_done(label, record)
            finished.append(record)
        store.add_method(method, finished)
        result.records.extend(finished)
        result.finished_methods.append(method.label)
        # records, table, plots and summary: all new, or (on a crash or a file that cannot be
        # replaced) all as they were
        with interrupts_deferred(), written_together():
            result.table = store.write()
            write_summary(out, order)


def run_single(
    config: CompareConfig,
    method: str,
    *,
    experiments: list[str] | None = None,
    seeds: list[int] | None = None,
    output: str | os.PathLike | None = None,
    overwrite: bool = False,
    stream: TextIO | None = None,
) -> list[RunRecord]:
    """Train one method (in every experiment that has it, or the chosen ones) and keep its models.

    Records go to ``<output>/<experiment>/run_<method>.json`` and ``.csv``, each seed's model
    (LightGBM's text format, loadable with ``lightgbm.Booster(model_file=...)``; a peer's is
    its library's JSON model) to ``<output>/<experiment>/model_<method>_seed<seed>.txt``,
    together, as soon as that seed finishes; seeds run before (same setup) stay.  The
    comparison's own files are left alone.

    Raises
    ------
    ConfigError
        Before anything trains, as :func:`run_compare`; also for a negative seed or an
        experiment without the method.
    MissingExtraError
        Before anything trains: the method is XGBoost's or CatBoost's, and the library is
        not installed (the ``peers`` extra).
    KeyboardInterrupt
        Re-raised after the kept seeds are listed on ``stream``.
    """
    progress = Progress(stream or sys.stderr, config.progress_seconds)
    out = Path(output) if output is not None else config.output
    if experiments:
        chosen = _choose_experiments(config, experiments)
        for exp in chosen:
            exp.method(method)  # the method must be in every chosen experiment
    else:
        chosen = [e for e in config.experiments if method in e.labels]
        if not chosen:
            known = dict.fromkeys(m for e in config.experiments for m in e.labels)
            raise ConfigError(f"no method {method!r} in the config; methods: {', '.join(known)}")
    seed_list = _unique(seeds)
    for seed in seed_list or []:
        if seed < 0:
            raise ConfigError(f"--seed must be an integer >= 0, got {seed}")
    plan = [(exp, [exp.method(method)]) for exp in chosen]
    require_peers([spec.kind for _, (spec,) in plan])
    check_output_folder(out, [out / exp.name for exp in chosen])
    stores = {exp.name: RunStore(exp, exp.method(method), out / exp.name, overwrite) for exp in chosen}
    # a time budget multiplies the target method's time in the folder's comparison records
    comparisons = {exp.name: ExperimentStore(exp, out / exp.name, exp.labels) for exp in chosen}
    budgets = {exp.name: _budget_seconds(exp, spec, comparisons[exp.name]) for exp, (spec,) in plan}
    # a budget read from the comparison's records needs those made from the same rows
    checked: dict[str, list[ExperimentStore | RunStore]] = {
        exp.name: [stores[exp.name], *([comparisons[exp.name]] if budgets[exp.name] is not None else [])]
        for exp in chosen}
    records: list[RunRecord] = []
    try:
        loaded = _prepare(plan, config, progress, checked)
        for exp, (spec,) in plan:
            store = stores[exp.name]
            data = loaded.pop(exp.name, None) or _load_checked(exp, [spec])
            store.data_description = data.description
            progress.note(f"experiment {exp.name}: {data.description}; {exp.rounds_of(spec)} rounds, "
                          f"metric {exp.metric}")
            for seed in seed_list or method_seeds(spec, exp):
                label = f"{exp.name} {spec.label} seed {seed}"
                models: list[Any] = []
                record = run_method(spec, exp, data, seed, progress.run_hook(label, exp.rounds_of(spec), exp.metric),
                                    on_model=models.append, budget_seconds=budgets[exp.name])
                progress.run_done(label, record)
                store.add_seed(record, model_text(models[0]))
                records.append(record)
    except KeyboardInterrupt:
        kept = [f"{e.name} seeds {', '.join(map(str, stores[e.name].seeds))}" for e in chosen if stores[e.name].seeds]
        progress.note("interrupted; "
                      + (f"{method}'s finished seeds are saved in {out} ({'; '.join(kept)})" if kept
                         else "no seed had finished, nothing was written")
                      + ". The unfinished seed was discarded.")
        raise
    return records
