"""The output folder: what earlier runs left in it, merging new runs in, writing it consistently.

Layout (folder ``output``)::

    summary.md                          the table of every experiment folder below
    <experiment>/records.json, .csv     per-run, per-iteration records, with the setup they share
    <experiment>/table.md, *.png        drawn from those records
    <experiment>/run_<method>.json, .csv, model_<method>_seed<S>.txt     from ``smart-lgbm run``

Rules (``docs/compare.md``, "Output folders"):

* **Consistent.** Whenever an experiment's records change, its table and plots and the
  summary are rebuilt from them at once, all inside :func:`.io.interrupts_deferred`, each
  file atomically: records, table, plots and summary always describe the same runs.
* **Merged.** New runs join the records already in the folder when those were made with
  the same *setup* (data, metric, LightGBM parameters): a method that finishes replaces
  that method's earlier runs; every other method's runs stay.  A method kept from an
  earlier invocation must still be configured as it was run (kind, options, parameters,
  rounds, time budget), or be re-run.
* **Never lost silently.** Records of another setup, of an older format, or unreadable
  are refused before anything trains, unless ``overwrite`` is given; then they are
  replaced when the first new method (or seed) finishes, and not before.
* **Same data.** The records store a fingerprint of the rows they were made from
  (:func:`.data.fingerprint`); once the data are loaded, before any timed run, records of
  other rows (a file replaced at the same path) or that do not say theirs are refused in
  the same way.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from .._version import __version__
from .config import ConfigError, Experiment, MethodSpec
from .io import interrupts_deferred, staged_text, write_csv, write_json, write_text, written_together
from .methods import RunRecord
from .plots import PLOT_FILES, VERDICT_PLOT, plot_curves
from .report import Table, build_table, mean_curves, method_notes, reach_threshold, to_markdown

#: Version of the records layout; records without it (or older) do not say their setup.
FORMAT = 2
RECORDS = "records.json"
SUMMARY = "summary.md"
TABLE = "table.md"
CSV_COLUMNS = ("experiment", "method", "kind", "seed", "iteration", "metric", "value", "sampling_rate",
               "seconds", "cumulative_seconds")
_OVERWRITE_HINT = "pass --overwrite to replace them, or choose another --output"


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux), else what :mod:`platform` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def command_line(argv: Sequence[str] | None = None) -> str:
    """The running command as typed: ``smart-lgbm compare configs/a9a.toml``, or ``python -m
    smart_lgbm.compare.quick ...`` for a module run with ``-m``."""
    argv = list(sys.argv if argv is None else argv)
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        prog = "python -m " + spec.name.removesuffix(".__main__")
    else:
        prog = os.path.basename(argv[0]) if argv else "python"
    return " ".join([prog, *(shlex.quote(a) for a in argv[1:])])


def environment() -> dict[str, Any]:
    """Command, machine and versions, stored with the records (timings are only comparable
    within one machine, and the results page states them)."""
    return {
        "smart_lgbm": __version__, "lightgbm": lgb.__version__, "numpy": np.__version__,
        "numba": _version_of("numba"), "python": platform.python_version(),
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "cpu": cpu_model(), "cpu_count": os.cpu_count(), "command": command_line(),
        "time": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def _version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _plain(obj: Any) -> Any:
    """``obj`` as it reads back from JSON (paths as strings, tuples as lists), for comparisons."""
    return json.loads(json.dumps(obj, default=str))


def setup_of(exp: Experiment) -> dict[str, Any]:
    """What every run of an experiment shares, and records must agree on to be merged."""
    data = {key: value for key, value in dataclasses.asdict(exp.data).items()
            if not (key in exp.data.LATER_FIELDS and value is None)}
    return _plain({"data": data, "metric": exp.metric, "params": exp.params})


def method_setup(method: MethodSpec, exp: Experiment) -> dict[str, Any]:
    """What defines one method's runs besides the experiment's setup (and the seed)."""
    return _plain({"kind": method.kind, "options": method.options, "params": method.params,
                   "rounds": exp.rounds_of(method), "time_budget": exp.budget_of(method)})


def check_output_folder(out: Path, folders: Sequence[Path] = ()) -> None:
    """Make sure results can be written to ``out`` and the experiment ``folders`` in it.

    Raises
    ------
    ConfigError
        If one of them is a file, cannot be created, or cannot be written in.
    """
    for path in [out, *folders]:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"output folder {path} is a file, not a folder; choose another --output")
    # the result files themselves, plots too: a folder in the place of one would fail only
    # after training
    names = (RECORDS, "records.csv", TABLE, *PLOT_FILES.values(), VERDICT_PLOT)
    files = [out / SUMMARY, *(f / name for f in folders for name in names)]
    for path in files:
        if path.is_dir():
            raise ConfigError(f"the result file {path} is a folder; remove it or choose another --output")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None
    for path in [out, *(f for f in folders if f.exists())]:
        try:
            fd, probe = tempfile.mkstemp(dir=path, prefix=".smart-lgbm-probe.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise ConfigError(f"cannot write in the output folder {path}: {exc.strerror or exc}") from None


def _read_saved(path: Path, exp: Experiment) -> dict[str, Any] | None:
    """The saved records at ``path`` if they share ``exp``'s setup; None if there are none."""
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); {_OVERWRITE_HINT}") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT or not isinstance(saved.get("setup"), dict):
        raise ConfigError(f"{path} holds records of an older smart-lgbm that do not say their setup "
                          f"(data, metric, parameters), so new runs cannot be merged into them; {_OVERWRITE_HINT}")
    setup = setup_of(exp)
    differ = [key for key in setup if saved["setup"].get(key) != setup[key]]
    if differ:
        raise ConfigError(f"{path} holds results of another setup (its {' and '.join(differ)} differ from those "
                          f"of experiment {exp.name!r} now); {_OVERWRITE_HINT}")
    return saved


def _check_fingerprint(path: Path, saved: dict[str, Any] | None, fingerprint: str) -> None:
    """Refuse records made from other rows than ``fingerprint``'s (or that do not say which)."""
    if saved is None:
        return
    recorded = saved.get("data_fingerprint")
    if recorded is None:
        raise ConfigError(f"{path} holds records that do not say which rows they were made from (a data "
                          f"fingerprint), so new runs cannot be merged into them; {_OVERWRITE_HINT}")
    if recorded != fingerprint:
        raise ConfigError(f"{path} holds results made from other data than the experiment's now (the same data "
                          f"table, but other rows: a file replaced at the same path?); {_OVERWRITE_HINT}")


def _check_kept_method(path: Path, entry: dict[str, Any], exp: Experiment, hint: str) -> None:
    """Refuse to keep a method's earlier runs when the config now defines it differently."""
    label = entry.get("label")
    configured = next((m for m in exp.methods if m.label == label), None)
    if configured is None:
        return  # no longer in the config: kept as it was run (its settings are in the records)
    now = method_setup(configured, exp)
    differ = [key for key in now if entry.get(key) != now[key]]
    if differ:
        raise ConfigError(f"{path}: method {label!r} was run with other {', '.join(differ)} than the config now "
                          f"gives it; {hint}, or pass --overwrite")


class ExperimentStore:
    """The records of one experiment folder, merged with what is on disk, and their views.

    Parameters
    ----------
    exp : Experiment
    folder : Path
        ``<output>/<experiment>``.
    rerun : sequence of str
        Labels of the methods this invocation will run (their earlier runs are replaced
        as each finishes; the others are kept).
    overwrite : bool
        Ignore what the folder holds (replaced at the first :meth:`add_method`).
    config_path : Path, optional
        Stored with the records.

    Raises
    ------
    ConfigError
        If the folder holds records that cannot be merged and ``overwrite`` is False.
    """

    def __init__(self, exp: Experiment, folder: Path, rerun: Sequence[str], overwrite: bool = False,
                 config_path: Path | None = None) -> None:
        self.exp = exp
        self.folder = folder
        self.config_path = config_path
        self.session = environment()
        self.data_description = ""
        self.methods: dict[str, dict[str, Any]] = {}
        self.runs: list[RunRecord] = []
        self.fingerprint: str | None = None
        saved = None if overwrite else _read_saved(folder / RECORDS, exp)
        self._saved = saved
        if saved is not None:
            for entry in saved.get("methods", []):
                if entry.get("label") not in rerun:
                    _check_kept_method(folder / RECORDS, entry, exp, f"re-run it too (--method {entry.get('label')})")
                self.methods[entry["label"]] = entry
            self.runs = [RunRecord.from_dict(r) for r in saved.get("runs", [])]
            self.data_description = saved.get("data", "")

    def check_data(self, fingerprint: str) -> None:
        """Take the fingerprint of the experiment's loaded data; ConfigError if the folder's
        records were made from other rows (before any timed run)."""
        _check_fingerprint(self.folder / RECORDS, self._saved, fingerprint)
        self.fingerprint = fingerprint

    def add_method(self, method: MethodSpec, records: list[RunRecord]) -> None:
        """Replace ``method``'s runs by ``records`` (all its seeds, just finished)."""
        self.methods.pop(method.label, None)
        self.methods[method.label] = {"label": method.label, **method_setup(method, self.exp),
                                      "environment": self.session}
        self.runs = [r for r in self.runs if r.method != method.label] + list(records)

    def _ordered(self) -> tuple[list[str], list[RunRecord]]:
        """Method labels in config order (then methods no longer configured), and their runs."""
        configured = [m.label for m in self.exp.methods]
        labels = [m for m in configured if m in self.methods] + [m for m in self.methods if m not in configured]
        return labels, [r for label in labels for r in self.runs if r.method == label]

    def table(self) -> Table:
        """The experiment's table from the current records."""
        _, runs = self._ordered()
        curves = mean_curves(runs)
        # Without a 'target' key the target is the configured stock_full method, also while
        # it has no results yet (then the table has no target rather than another method's).
        exp = self.exp
        target = exp.target if exp.target is not None else exp.target_method
        return build_table(exp.name, exp.metric, exp.higher_is_better, curves, target, exp.tolerance,
                           method_notes(runs), exp.target_at, exp.equal_time)

    def training_seconds(self, label: str) -> float | None:
        """``label``'s training time in the records (its mean curve's total), None without results."""
        curve = next((c for c in mean_curves([r for r in self.runs if r.method == label]) if c.method == label), None)
        return None if curve is None else float(curve.cumulative_seconds[-1])

    def table_text(self, table: Table) -> str:
        """``table.md``: the table, its data, and when the methods ran if not all at once."""
        text = to_markdown(table) + f"\nData: {self.data_description}.\n"
        sessions: dict[str, list[str]] = {}
        for label in self._ordered()[0]:
            when = self.methods[label].get("environment", {}).get("time", "an unknown time")
            sessions.setdefault(when, []).append(label)
        if len(sessions) > 1:
            text += ("\nMerged from several runs into this folder (timings compare best within one run): "
                     + "; ".join(f"{', '.join(labels)} at {when}" for when, labels in sessions.items()) + ".\n")
        return text

    def write(self) -> Table:
        """Write records, table and plots of the current records (Ctrl-C held back meanwhile)."""
        labels, runs = self._ordered()
        exp = self.exp
        table = self.table()
        with interrupts_deferred(), written_together():  # all of them replaced, or none
            write_json(self.folder / RECORDS, {
                "format": FORMAT, "experiment": exp.name, "metric": exp.metric,
                "higher_is_better": exp.higher_is_better, "rounds": exp.rounds, "data": self.data_description,
                "params": exp.params, "setup": setup_of(exp), "data_fingerprint": self.fingerprint,
                "config": None if self.config_path is None else str(self.config_path),
                "target": exp.target, "target_at": exp.target_at, "tolerance": exp.tolerance,
                "environment": self.session, "methods": [self.methods[label] for label in labels],
                "runs": [r.to_dict() for r in runs],
            })
            write_csv(self.folder / "records.csv", (row for r in runs for row in r.rows()), CSV_COLUMNS)
            write_text(self.folder / TABLE, self.table_text(table))
            line = None if table.target is None else reach_threshold(table.target, table.higher_is_better,
                                                                      table.tolerance)
            plot_curves(mean_curves(runs), exp.metric, exp.name, self.folder, line)
        return table


def budget_reference_seconds(exp: Experiment, store: ExperimentStore) -> float:
    """The target method's training time, which ``time_budget`` values multiply.

    Raises
    ------
    ConfigError
        If the records have no run of the target method.
    """
    target = exp.target_method
    seconds = None if target is None else store.training_seconds(target)
    if seconds is None:
        budgeted = ", ".join(m.label for m in exp.methods if exp.budget_of(m) is not None)
        raise ConfigError(f"[experiments.{exp.name}] methods {budgeted} have a 'time_budget', a multiple of the "
                          f"target method {target!r}'s training time, but {store.folder / RECORDS} has no run of "
                          f"it: run {target!r} too (smart-lgbm compare --method {target})")
    return seconds


def write_summary(out: Path, order: Sequence[str] = ()) -> Path | None:
    """``summary.md``: the table of every experiment folder in ``out`` that has records.

    Experiments named in ``order`` come first, in that order, then the others by name.
    Without any table, a stale summary is removed.
    """
    def table_of(folder: Path) -> str | None:
        # inside written_together the new tables are staged, not on disk yet
        staged = staged_text(folder / TABLE)
        if staged is not None:
            return staged
        return (folder / TABLE).read_text(encoding="utf-8") if (folder / TABLE).is_file() else None

    folders = {p.parent for p in out.glob(f"*/{RECORDS}")} | {p for p in out.iterdir() if staged_text(p / TABLE)}
    tables = {f.name: text for f in folders if (text := table_of(f)) is not None}
    names = [n for n in order if n in tables] + sorted(set(tables) - set(order))
    path = out / SUMMARY
    with interrupts_deferred():
        if not names:
            path.unlink(missing_ok=True)
            return None
        return write_text(path, "# smart-lgbm comparison\n\n" + "\n".join(tables[name] for name in names))


_MODEL = "model_{label}_seed{seed}.txt"


class RunStore:
    """``smart-lgbm run``'s files of one method in one experiment folder, merged by seed.

    ``run_<method>.json`` / ``.csv`` hold one record per seed and ``model_<method>_seed<S>.txt``
    each seed's model; a seed run again replaces its record and model, other seeds stay
    (under the same rules as :class:`ExperimentStore`).
    """

    def __init__(self, exp: Experiment, method: MethodSpec, folder: Path, overwrite: bool = False) -> None:
        self.exp = exp
        self.method = method
        self.folder = folder
        self.path = folder / f"run_{method.label}.json"
        self.overwrite = overwrite
        self.runs: list[RunRecord] = []
        self.data_description = ""
        self.fingerprint: str | None = None
        saved = None if overwrite else _read_saved(self.path, exp)
        self._saved = saved
        if saved is not None:
            _check_kept_method(self.path, saved.get("method", {}), exp, "run every seed again")
            self.runs = [RunRecord.from_dict(r) for r in saved.get("runs", [])]

    def _stale_models(self) -> list[Path]:
        """Model files of this method whose seed has no record here."""
        pattern = re.compile(rf"model_{re.escape(self.method.label)}_seed([0-9]+)\.txt")
        seeds = {r.seed for r in self.runs}
        return [p for p in self.folder.glob(f"model_{self.method.label}_seed*.txt")
                if (m := pattern.fullmatch(p.name)) and int(m.group(1)) not in seeds]

    def check_data(self, fingerprint: str) -> None:
        """As :meth:`ExperimentStore.check_data`, for this method's run records."""
        _check_fingerprint(self.path, self._saved, fingerprint)
        self.fingerprint = fingerprint

    def add_seed(self, record: RunRecord, model_text: str) -> None:
        """Save one finished seed's model and records together (Ctrl-C held back meanwhile)."""
        self.runs = [r for r in self.runs if r.seed != record.seed] + [record]
        with interrupts_deferred(), written_together():  # model and records replaced together, or neither
            write_text(self.folder / _MODEL.format(label=self.method.label, seed=record.seed), model_text)
            write_json(self.path, {
                "format": FORMAT, "experiment": self.exp.name, "setup": setup_of(self.exp),
                "data_fingerprint": self.fingerprint,
                "method": {"label": self.method.label, **method_setup(self.method, self.exp)},
                "environment": environment(), "data": self.data_description,
                "runs": [r.to_dict() for r in self.runs],
            })
            write_csv(self.folder / f"run_{self.method.label}.csv", (row for r in self.runs for row in r.rows()),
                      CSV_COLUMNS)
            if self.overwrite:  # the earlier files are replaced now: drop models no record describes
                for stale in self._stale_models():
                    stale.unlink(missing_ok=True)

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]
