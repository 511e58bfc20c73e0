"""Run the methods of a config, write records after each method, then tables and plots.

Output layout (folder ``config.output``)::

    summary.md                       every experiment's table
    <experiment>/records.json        per-run, per-iteration records + metadata
    <experiment>/records.csv         one row per (method, seed, iteration)
    <experiment>/table.md            the paper-layout table
    <experiment>/*.png               metric vs iteration / seconds, sampling rate vs iteration

Records are rewritten after each finished method, so an interrupted comparison (Ctrl-C)
keeps every finished method; the table and plots are then drawn from what finished.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import lightgbm as lgb

from .._version import __version__
from .config import CompareConfig, ConfigError, Experiment, MethodSpec
from .data import ExperimentData, head, load_data
from .io import write_csv, write_json, write_text
from .methods import RunRecord, method_seeds, run_method
from .plots import plot_curves
from .progress import Progress
from .report import Table, build_table, mean_curves, to_markdown

CSV_COLUMNS = ("experiment", "method", "kind", "seed", "iteration", "metric", "value", "sampling_rate",
               "seconds", "cumulative_seconds")


@dataclass
class ExperimentResult:
    """What one experiment produced (so far)."""

    experiment: Experiment
    data_description: str = ""
    records: list[RunRecord] = field(default_factory=list)
    finished_methods: list[str] = field(default_factory=list)
    table: Table | None = None
    folder: Path | None = None


def environment() -> dict[str, Any]:
    """Machine and versions, stored with the records (timings are only comparable within one machine)."""
    return {
        "smart_lgbm": __version__, "lightgbm": lgb.__version__, "python": platform.python_version(),
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "time": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def write_records(result: ExperimentResult, folder: Path, config_path: Path | None) -> None:
    """records.json and records.csv of the finished runs, atomically."""
    exp = result.experiment
    write_json(folder / "records.json", {
        "experiment": exp.name, "metric": exp.metric, "higher_is_better": exp.higher_is_better,
        "rounds": exp.rounds, "data": result.data_description, "params": exp.params,
        "config": None if config_path is None else str(config_path), "environment": environment(),
        "methods": [{"label": m.label, "kind": m.kind, "options": m.options, "params": m.params}
                    for m in exp.methods if m.label in result.finished_methods],
        "runs": [r.to_dict() for r in result.records],
    })
    write_csv(folder / "records.csv", (row for r in result.records for row in r.rows()), CSV_COLUMNS)


def write_report(result: ExperimentResult, folder: Path) -> Table | None:
    """table.md and the plots from the finished runs; None when the target cannot be set."""
    exp = result.experiment
    curves = mean_curves(result.records)
    if not curves:
        return None
    try:
        table = build_table(exp.name, exp.metric, exp.higher_is_better, curves, exp.target, exp.tolerance)
    except ValueError:  # e.g. the target method did not finish before an interrupt
        return None
    text = to_markdown(table) + f"\nData: {result.data_description}.\n"
    write_text(folder / "table.md", text)
    plot_curves(curves, exp.metric, exp.name, folder, table.target)
    return table


WARMUP_ROWS = 2000
WARMUP_ROUNDS = 3


def warm_up(exp: Experiment, data: ExperimentData, methods: list[MethodSpec]) -> None:
    """Run every method for a few rounds on a small head of the data, untimed.

    The first call of a numba kernel compiles it (or loads it from the cache), which takes
    seconds and would be charged to the first timed iteration of whichever method runs first.
    """
    small = head(data, WARMUP_ROWS)
    brief = replace(exp, rounds=min(WARMUP_ROUNDS, exp.rounds))
    for method in methods:
        run_method(method, brief, small, method_seeds(method, exp)[0])


def check_data(exp: Experiment, data: ExperimentData) -> None:
    """Refuse ranking objectives or metrics on data without query groups, before any training."""
    from ..params import canonicalize

    objective = str(canonicalize(exp.params).get("objective", "")).lower()
    if not data.is_ranking and (objective in ("lambdarank", "rank_xendcg") or exp.metric.startswith("ndcg")):
        raise ConfigError(f"[experiments.{exp.name}] objective {objective!r} / metric {exp.metric!r} need query "
                          f"groups, but the data have none ({data.description})")


def _run_experiment(exp: Experiment, config: CompareConfig, progress: Progress, result: ExperimentResult,
                    only: list[str] | None, write: bool) -> None:
    methods = [m for m in exp.methods if only is None or m.label in only]
    progress.note(f"experiment {exp.name}: loading data")
    data: ExperimentData = load_data(exp.data)
    result.data_description = data.description
    check_data(exp, data)
    progress.note(f"experiment {exp.name}: {data.description}; {exp.rounds} rounds, metric {exp.metric}")
    if config.warmup:
        progress.note(f"experiment {exp.name}: warming up (compiles the numba kernels; not timed)")
        warm_up(exp, data, methods)
    runs = [(m, s) for m in methods for s in method_seeds(m, exp)]
    done = 0
    for method in methods:
        finished = []
        for seed in method_seeds(method, exp):
            done += 1
            label = f"({done}/{len(runs)}) {exp.name} {method.label} seed {seed}"
            hook = progress.run_hook(label, exp.rounds, exp.metric)
            record = run_method(method, exp, data, seed, hook)
            progress.run_done(label, record)
            finished.append(record)
        result.records.extend(finished)
        result.finished_methods.append(method.label)
        if write:
            write_records(result, result.folder, config.path)


def run_compare(
    config: CompareConfig,
    *,
    methods: list[str] | None = None,
    experiments: list[str] | None = None,
    output: str | os.PathLike | None = None,
    stream: TextIO | None = None,
) -> list[ExperimentResult]:
    """Run a comparison and write its files.

    Parameters
    ----------
    config : CompareConfig
    methods, experiments : list of str, optional
        Run only these method labels / experiment names.
    output : path-like, optional
        Overrides ``config.output``.
    stream : text stream, optional
        Progress goes here (default ``sys.stderr``).

    Returns
    -------
    list of ExperimentResult

    Raises
    ------
    KeyboardInterrupt
        Re-raised after the finished methods' records, tables and plots are written and the
        kept results are listed on ``stream``.
    """
    progress = Progress(stream or sys.stderr, config.progress_seconds)
    out = Path(output) if output is not None else config.output
    chosen = [config.experiment(n) for n in experiments] if experiments else list(config.experiments)
    for label in methods or []:  # unknown labels fail before anything runs
        if not any(label in exp.labels for exp in chosen):
            known = dict.fromkeys(m for exp in chosen for m in exp.labels)
            raise ConfigError(f"no method {label!r} in the chosen experiments; methods: {', '.join(known)}")
    results: list[ExperimentResult] = []
    try:
        for exp in chosen:
            result = ExperimentResult(exp, folder=out / exp.name)
            results.append(result)
            _run_experiment(exp, config, progress, result, methods, write=True)
            result.table = write_report(result, result.folder)
            progress.note(f"experiment {exp.name}: wrote {result.folder}")
    except KeyboardInterrupt:
        kept = []
        for result in results:
            if result.records:
                result.table = write_report(result, result.folder)
                kept.append(f"{result.experiment.name}: {', '.join(result.finished_methods)}")
        _write_summary(results, out)
        progress.note("interrupted; kept the finished methods' results"
                      + (f" in {out}: " + "; ".join(kept) if kept else ": none had finished")
                      + ". Unfinished runs were discarded.")
        raise
    _write_summary(results, out)
    return results


def _write_summary(results: list[ExperimentResult], out: Path) -> None:
    tables = [to_markdown(r.table) + f"\nData: {r.data_description}.\n" for r in results if r.table is not None]
    if tables:
        write_text(out / "summary.md", "# smart-lgbm comparison\n\n" + "\n".join(tables))


def run_single(
    config: CompareConfig,
    method: str,
    *,
    experiments: list[str] | None = None,
    seeds: list[int] | None = None,
    output: str | os.PathLike | None = None,
    stream: TextIO | None = None,
) -> list[RunRecord]:
    """Train one method (every experiment, or the chosen ones) and write its records and models.

    Records go to ``<output>/<experiment>/run_<method>.json`` and ``.csv``, each seed's model
    (LightGBM's text format, loadable with ``lightgbm.Booster(model_file=...)``) to
    ``<output>/<experiment>/model_<method>_seed<seed>.txt``, as soon as that seed finishes;
    the comparison's own files are left alone.
    """
    progress = Progress(stream or sys.stderr, config.progress_seconds)
    out = Path(output) if output is not None else config.output
    chosen = [config.experiment(n) for n in experiments] if experiments else list(config.experiments)
    records: list[RunRecord] = []
    for exp in chosen:
        spec = exp.method(method)
        data = load_data(exp.data)
        check_data(exp, data)
        progress.note(f"experiment {exp.name}: {data.description}; {exp.rounds} rounds, metric {exp.metric}")
        if config.warmup:
            warm_up(exp, data, [spec])
        mine = []
        folder = out / exp.name
        for seed in seeds or method_seeds(spec, exp):
            label = f"{exp.name} {spec.label} seed {seed}"
            model_path = folder / f"model_{spec.label}_seed{seed}.txt"
            record = run_method(spec, exp, data, seed, progress.run_hook(label, exp.rounds, exp.metric),
                                on_model=lambda booster, path=model_path: write_text(path, booster.model_to_string()))
            progress.run_done(label, record)
            mine.append(record)
        write_json(folder / f"run_{spec.label}.json", {"environment": environment(), "data": data.description,
                                                       "runs": [r.to_dict() for r in mine]})
        write_csv(folder / f"run_{spec.label}.csv", (row for r in mine for row in r.rows()), CSV_COLUMNS)
        records.extend(mine)
    return records
