#!/usr/bin/env python
"""Render the results page and README's results table from the committed comparison records.

Usage: python scripts/render_results.py [--check] [--results docs/results] [--readme README.md]

Reads every ``<results>/<experiment>/records.json`` written by ``smart-lgbm compare`` and
writes ``<results>/README.md`` (one table per experiment: each method's training seconds to
stock LightGBM full's best validation quality within the experiment's tolerance and within
0.0005, and its best quality, with the command, machine, date and library versions the
records state) and the summary table in README.md between ``<!-- results-table:start -->``
and ``<!-- results-table:end -->``.  No figure is typed by hand: rerun this script after a
comparison.  ``--check`` writes nothing and exits 1 when a file differs from what the
records give (CI's tests run it).

Methods are grouped by what they run: stock LightGBM (kinds ``stock_*``), the libraries a
user would pick instead (any other kind that is not a smart-lgbm sampler) and smart-lgbm
(the sampler kinds).  Records that do not state something (older records have no command,
tolerance or numba version) say "not recorded"; the tolerance and target then come from
the config file the records name, found in ``configs/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
START = "<!-- results-table:start -->"
END = "<!-- results-table:end -->"
NOT_RECORDED = "not recorded"
GROUPS = ("stock LightGBM", "other libraries", "smart-lgbm")
# The smart-lgbm method README's table shows: sampler="auto", the default, never the
# per-table fastest. A comparison that did not run it shows the method auto picks for its
# objective on large dense data (smart_lgbm.samplers.auto.RULES), else its fastest, marked so.
RECOMMENDED = ("auto",)
AUTO_PICKS = {"lambdarank": "mvs_auto", "binary": "first_order_auto_refit",
              "multiclass": "first_order_auto_refit"}


# --------------------------------------------------------------------------- reading


@dataclass
class MethodRow:
    """One method of one experiment, read off its mean curve over seeds."""

    label: str
    kind: str
    group: str
    what: str
    runs: int
    to_target: tuple[float | None, int | None, float | None]  # seconds, iteration, speed-up
    to_tight: tuple[float | None, int | None, float | None] | None
    best: float | None
    best_iteration: int | None


@dataclass
class Experiment:
    """One experiment's table and what it states about how it was measured."""

    name: str
    real: bool
    data: str
    metric: str
    higher_is_better: bool
    target: float | None
    target_source: str
    tolerance: float | None
    tolerance_source: str
    tight: float | None
    rows: list[MethodRow]
    full_best: float | None
    commands: dict[str, list[str]] = field(default_factory=dict)
    machines: dict[str, list[str]] = field(default_factory=dict)
    versions: dict[str, list[str]] = field(default_factory=dict)
    dates: list[str] = field(default_factory=list)
    folder: str = ""  # the records' folder, relative to the results folder
    objective: str = ""  # LightGBM's objective of the comparison's parameters

    @property
    def anchor(self) -> str:
        return self.name.lower()


def group_of(kind: str) -> str:
    """Which group a method kind belongs to."""
    from smart_lgbm.compare.config import engine_kinds

    if kind.startswith("stock_"):
        return GROUPS[0]
    if kind in engine_kinds():
        return GROUPS[2]
    return GROUPS[1]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_toml(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "off"
    return str(value)


def describe_method(entry: dict[str, Any], ranking: bool = True) -> str:
    """``kind (key=value, ...)`` of a method's stored settings; a peer's ranking loss only
    for a ranking experiment (``ranking``), where it applies."""
    options = entry.get("options") or {}
    if not ranking:
        options = {k: v for k, v in options.items() if k != "ranking_loss"}
    params = entry.get("params") or {}
    parts = [f"{k}={_toml(v)}" for k, v in {**options, **params}.items()]
    kind = entry.get("kind", "?")
    return f"{kind} ({', '.join(parts)})" if parts else kind


def _is_real(records: dict[str, Any]) -> bool:
    source = (records.get("setup") or {}).get("data", {}).get("source")
    return source != "synthetic"


def _config_settings(records: dict[str, Any], configs: Path) -> tuple[Any, str, float | None, str]:
    """(target, target_at, tolerance, where they come from) for records that do not store them."""
    if "tolerance" in records:
        return records.get("target"), records.get("target_at") or "best", float(records["tolerance"]), "recorded"
    name = Path(str(records.get("config") or "")).name
    path = configs / name
    if name and path.is_file():
        from smart_lgbm.compare.config import ConfigError, load_config

        try:
            exp = load_config(path).experiment(records["experiment"])
        except ConfigError:
            pass
        else:
            return exp.target, exp.target_at, exp.tolerance, f"from configs/{name}: {NOT_RECORDED} in the records"
    return None, "best", None, NOT_RECORDED


def _distinct(methods: list[dict[str, Any]], value: Any) -> dict[str, list[str]]:
    """Each distinct value of ``value(environment)`` over the methods, with their labels."""
    out: dict[str, list[str]] = {}
    for entry in methods:
        env = entry.get("environment") or {}
        out.setdefault(value(env), []).append(entry.get("label", "?"))
    return out


def _machine(env: dict[str, Any]) -> str:
    if not env:
        return NOT_RECORDED
    cpu = env.get("cpu") or env.get("processor") or NOT_RECORDED
    return f"{cpu}, {env.get('cpu_count', '?')} cores, {env.get('platform', NOT_RECORDED)}"


def _versions(env: dict[str, Any]) -> str:
    if not env:
        return NOT_RECORDED
    names = (("smart-lgbm", "smart_lgbm"), ("lightgbm", "lightgbm"), ("numpy", "numpy"), ("numba", "numba"),
             ("Python", "python"))
    return ", ".join(f"{shown} {env.get(key) or NOT_RECORDED}" for shown, key in names)


def read_experiment(path: Path, configs: Path = ROOT / "configs") -> Experiment:
    """An experiment's table from its ``records.json``."""
    from smart_lgbm.compare.methods import RunRecord
    from smart_lgbm.compare.report import TIGHT_TOLERANCE, build_table, mean_curves, method_notes

    records = json.loads(path.read_text(encoding="utf-8"))
    runs = [RunRecord.from_dict(r) for r in records["runs"]]
    target, target_at, tolerance, tolerance_source = _config_settings(records, configs)
    tight = TIGHT_TOLERANCE if tolerance is None or TIGHT_TOLERANCE < tolerance else None
    table = build_table(records["experiment"], records["metric"], records["higher_is_better"], mean_curves(runs),
                        target=target, tolerance=tolerance or 0.0, notes=method_notes(runs), target_at=target_at,
                        equal_time_shares=None, tight_tolerance=tight)
    methods = {m["label"]: m for m in records.get("methods", [])}
    ranking = str((records.get("params") or {}).get("objective", "")).lower() in ("lambdarank", "rank_xendcg")
    ttt = table.time_to_target
    rows = []
    for lower in table.lower:
        entry = methods.get(lower.method, {"label": lower.method, "kind": "?"})
        cells = ttt.cells.get(lower.method) if ttt is not None else None
        missing = (None, None, None)
        rows.append(MethodRow(
            label=lower.method, kind=entry.get("kind", "?"), group=group_of(entry.get("kind", "")), what=describe_method(entry, ranking), runs=lower.runs,
            to_target=cells[0] if cells else missing, to_tight=(cells[1] if cells and len(cells) > 1 else None),
            best=lower.value, best_iteration=lower.iterations))
    order = {g: i for i, g in enumerate(GROUPS)}
    rows.sort(key=lambda r: order[r.group])  # stable: the records' order within a group
    entries = list(methods.values())
    dates = sorted({(m.get("environment") or {}).get("time", "")[:10] for m in entries} - {""})
    return Experiment(
        name=records["experiment"], real=_is_real(records), data=records.get("data") or NOT_RECORDED,
        metric=records["metric"], higher_is_better=records["higher_is_better"], target=table.target,
        target_source=table.target_source, tolerance=tolerance, tolerance_source=tolerance_source,
        tight=tight if ttt is not None and len(ttt.tolerances) > 1 else None, rows=rows, full_best=table.full_best,
        commands=_distinct(entries, lambda env: env.get("command") or NOT_RECORDED),
        machines=_distinct(entries, _machine), versions=_distinct(entries, _versions), dates=dates,
        objective=str((records.get("params") or {}).get("objective", "")).lower())


def read_all(results: Path, configs: Path = ROOT / "configs") -> list[Experiment]:
    """Every experiment folder of ``results`` with records: real data first, then by name.

    An experiment's folder sits in ``results`` or one level deeper: ``smart-lgbm compare
    --output docs/results/<config>`` writes ``docs/results/<config>/<experiment>/``."""
    experiments = []
    for path in sorted([*results.glob("*/records.json"), *results.glob("*/*/records.json")]):
        exp = read_experiment(path, configs)
        exp.folder = path.parent.relative_to(results).as_posix()
        experiments.append(exp)
    return sorted(experiments, key=lambda e: (not e.real, e.name))


# --------------------------------------------------------------------------- writing


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _reach(cell: tuple[float | None, int | None, float | None] | None) -> str:
    if cell is None:
        return "—"
    seconds, iteration, speedup = cell
    if seconds is None:
        return "not reached"
    return f"{_seconds(seconds)} s ({speedup:.2f}x)" if speedup is not None else f"{_seconds(seconds)} s"


def _versus(value: float | None, reference: float | None, higher_is_better: bool) -> str:
    if value is None or reference is None:
        return "—"
    diff = value - reference
    if abs(diff) < 5e-5:
        return "same"
    better = diff > 0 if higher_is_better else diff < 0
    return f"{diff:+.4f} ({'better' if better else 'worse'})"


def _kind_of_data(exp: Experiment) -> str:
    return "real" if exp.real else "synthetic"


def _listing(values: dict[str, list[str]], all_methods: int) -> str:
    """One value, or each value with the methods it applies to."""
    if len(values) == 1:
        return next(iter(values))
    return "; ".join(f"{value} ({', '.join(labels)})" for value, labels in values.items()
                     if len(labels) < all_methods)


def _tolerance_text(exp: Experiment) -> str:
    if exp.tolerance is None:
        return f"tolerance {NOT_RECORDED} (0 used)"
    text = f"tolerance of {exp.tolerance:g}"
    if exp.tolerance_source != "recorded":
        text += f" ({exp.tolerance_source})"
    return text


def experiment_markdown(exp: Experiment) -> str:
    """One experiment's section of the results page."""
    sign = "-" if exp.higher_is_better else "+"
    direction = "higher is better" if exp.higher_is_better else "lower is better"
    n = len(exp.rows)
    dates = (exp.dates[0] if len(exp.dates) == 1 else f"{exp.dates[0]} to {exp.dates[-1]} (methods from "
             f"{len(exp.dates)} days' runs, merged into one folder)") if exp.dates else NOT_RECORDED
    target = (f"stock LightGBM full's best {exp.metric}, {exp.target:.4f} ({exp.target_source})"
              if exp.target is not None else f"none ({exp.target_source})")
    lines = [
        f"## {exp.name}", "",
        f"- **Data**: {_kind_of_data(exp)}: {exp.data}.",
        f"- **Target**: {target}, reached within a {_tolerance_text(exp)}"
        + (f" and within {exp.tight:g}." if exp.tight is not None else "."),
        f"- **Command**: {_listing({f'`{c}`' if c != NOT_RECORDED else c: m for c, m in exp.commands.items()}, n)}.",
        f"- **Machine**: {_listing(exp.machines, n)}.",
        f"- **Date**: {dates}.",
        f"- **Versions**: {_listing(exp.versions, n)}.",
        "",
    ]
    tol = f"{sign} {exp.tolerance:g}" if exp.tolerance is not None else "(tolerance not recorded)"
    header = ["group", "method", "runs", f"seconds to target {tol} (speed-up)"]
    if exp.tight is not None:
        header.append(f"seconds to target {sign} {exp.tight:g}")
    header += [f"best {exp.metric} (iteration)", "best vs stock full's best"]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---", "---:"] + ["---:"] * (len(header) - 3))
              + "|"]
    previous = None
    for row in exp.rows:
        best = "—" if row.best is None else f"{row.best:.4f} ({row.best_iteration})"
        if row.what.split(" ")[0] == row.label:  # the label is the kind: say it once
            method = f"`{row.label}`{row.what[len(row.label):]}"
        else:
            method = f"`{row.label}`: {row.what}"
        cells = [row.group if row.group != previous else "", method, str(row.runs),
                 _reach(row.to_target)]
        if exp.tight is not None:
            cells.append(_reach(row.to_tight))
        cells += [best, _versus(row.best, exp.full_best, exp.higher_is_better)]
        lines.append("| " + " | ".join(cells) + " |")
        previous = row.group
    lines += ["", f"Seconds are training seconds (evaluation excluded) of the mean curve over the seeds until it "
              f"first reaches the target; the speed-up is stock LightGBM full's seconds to the same threshold over "
              f"the method's. {exp.metric}: {direction}.", ""]
    return "\n".join(lines)


def _fastest(rows: Sequence[MethodRow]) -> MethodRow | None:
    reached = [r for r in rows if r.to_target[0] is not None]
    return min(reached, key=lambda r: r.to_target[0]) if reached else None  # type: ignore[arg-type, return-value]


def _recommended(rows: Sequence[MethodRow], objective: str = "") -> tuple[MethodRow | None, bool]:
    """The recommended smart-lgbm method's row, or the fastest one's (and False) without it."""
    by_label = {r.label: r for r in rows}
    pick = AUTO_PICKS.get(objective)
    for label in (*RECOMMENDED, *([pick] if pick else [])):
        if label in by_label:
            return by_label[label], True
    return _fastest(rows), False


def summary_markdown(experiments: Sequence[Experiment], link: str) -> str:
    """The one-screen table: per experiment, stock full's time to the target, the fastest
    other method and the recommended smart-lgbm method, with their speed-ups."""
    lines = [
        "| data | target | stock LightGBM full | fastest other method | smart-lgbm, recommended method | "
        "smart-lgbm vs stock full | smart-lgbm vs fastest other |",
        "|---|---|---:|---|---|---:|---:|",
    ]
    notes = []
    for exp in experiments:
        full = next((r for r in exp.rows if r.kind == "stock_full"), None)
        others = [r for r in exp.rows if r.group != GROUPS[2] and r is not full]
        ours = [r for r in exp.rows if r.group == GROUPS[2]]
        best_other = _fastest(others)
        best_ours, recommended = _recommended(ours, exp.objective)
        sign = "-" if exp.higher_is_better else "+"
        target = f"best {exp.metric} {sign} " + (f"{exp.tolerance:g}" if exp.tolerance is not None else "?")

        def cell(row: MethodRow | None) -> str:
            if row is None:
                return "none reaches it"
            if row.to_target[0] is None:
                return f"`{row.label}` not reached"
            return f"`{row.label}` {_seconds(row.to_target[0])} s"

        full_cell = "—" if full is None else (_seconds(full.to_target[0]) + " s" if full.to_target[0] is not None
                                              else "not reached")
        vs_full = f"{best_ours.to_target[2]:.2f}x" if best_ours and best_ours.to_target[2] is not None else "—"
        vs_other = "—"
        ours_cell = cell(best_ours) + ("" if recommended or best_ours is None else " (fastest)")
        if best_ours is None or best_ours.to_target[0] is None:
            vs_other = "—"
        elif best_other is not None:
            vs_other = f"{best_other.to_target[0] / best_ours.to_target[0]:.2f}x"  # type: ignore[operator]
        elif best_ours is not None:
            vs_other = "only smart-lgbm"
        lines.append(f"| [{exp.name}]({link}#{exp.anchor}) ({_kind_of_data(exp)}) | {target} | {full_cell} | "
                     f"{cell(best_other)} | {ours_cell} | {vs_full} | {vs_other} |")
        notes.append(f"{exp.name}: {', '.join(exp.dates) or NOT_RECORDED}")
    machines = sorted({m for exp in experiments for m in exp.machines})
    versions = sorted({v for exp in experiments for v in exp.versions})
    lines += ["", "Training seconds (evaluation excluded) until a method first reaches stock LightGBM full's best "
              "validation quality within the stated tolerance; each row is one comparison of every method on "
              "the same data and machine. smart-lgbm's column shows `sampler=\"auto\"`, the default; a "
              "comparison that did not run it shows the method auto picks for its objective on large data "
              "(docs/choosing.md), else its fastest smart-lgbm method, marked (fastest). "
              + (f"Commands, every method's figures and plots: [the results page]({link}). " if link else "")
              + f"Machine: {'; '.join(machines)}. Versions: {'; '.join(versions)}. Dates: {'; '.join(notes)}."]
    return "\n".join(lines) + "\n"


def bench_files(results: Path) -> list[tuple[str, str]]:
    """(path relative to ``results``, title) of every benchmark output beside the records."""
    out = []
    skip = {"README.md", "summary.md"}
    for path in sorted([*results.glob("*.md"), *results.glob("*/*.md")]):
        rel = path.relative_to(results).as_posix()
        if path.name in skip or path.name == "table.md":
            continue
        first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), rel)
        out.append((rel, first.lstrip("# ").strip()))
    return out


def page_markdown(experiments: Sequence[Experiment], results: Path) -> str:
    """The whole results page."""
    lines = [
        "# Results", "",
        "<!-- Generated by scripts/render_results.py from the records.json files of this folder: do not edit. -->",
        "",
        "Each table below is one `smart-lgbm compare` comparison: every method trained on the same data, on the "
        "same machine, with the same LightGBM parameters. The target is the best validation quality of a long "
        "stock LightGBM run on every row (the paper's \"ideal accuracy\"); a method reaches it when its mean "
        "curve over its seeds first gets within the stated tolerance. Seconds are training seconds: data "
        "loading, binning and evaluation are excluded for every method. Data sets are marked real or synthetic; "
        "the synthetic ones are seeded generators of the shape of public data sets "
        "(`smart_lgbm.datasets`).", "",
        "## Summary", "", summary_markdown(experiments, ""), "",
    ]
    for exp in experiments:
        lines += [experiment_markdown(exp), f"![{exp.name}: quality against training seconds]"
                  f"({exp.folder}/metric_vs_seconds.png)" if (results / exp.folder / "metric_vs_seconds.png").is_file()
                  else "", ""]
    benches = bench_files(results)
    if benches:
        lines += ["## Benchmark outputs", "",
                  "Per-iteration costs and other measurements, each made by the script named at the top of its "
                  "file:", ""]
        lines += [f"- [{title}]({rel})" for rel, title in benches]
    return "\n".join(lines).rstrip() + "\n"


def readme_with_table(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    if START not in readme or END not in readme or readme.index(START) > readme.index(END):
        raise ValueError(f"README has no {START} ... {END} block for the results table")
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}{END}{tail}"


def render(results: Path, readme: Path, configs: Path = ROOT / "configs") -> dict[Path, str]:
    """The new text of the results page and of README.md."""
    experiments = read_all(results, configs)
    link = results.relative_to(readme.parent).as_posix() + "/README.md" if results.is_relative_to(
        readme.parent) else str(results / "README.md")
    return {results / "README.md": page_markdown(experiments, results),
            readme: readme_with_table(readme.read_text(encoding="utf-8"), summary_markdown(experiments, link))}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is not what the records give")
    ap.add_argument("--results", type=Path, default=ROOT / "docs" / "results", help="folder of the experiment folders")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md", help="README with the results-table markers")
    ap.add_argument("--configs", type=Path, default=ROOT / "configs", help="configs named by records without a tolerance")
    args = ap.parse_args(argv)
    pages = render(args.results.resolve(), args.readme.resolve(), args.configs.resolve())
    stale = [path for path, text in pages.items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path} differs from what the records give: run python scripts/render_results.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(pages[path], encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
