"""The short verdict of a comparison: who reached the target first, by how much, how sure.

Pure functions from an experiment's run records and its table (:mod:`.report`) to

* one verdict line per experiment: the method that reached the target quality in the
  least training time, its speed-up over stock full with the spread over seeds and over
  the repeated stock full runs (a reference run at the start and one at the end of the
  experiment, so that a change in machine load shows as spread rather than as a result),
  and the best quality each reached;
* warnings: a busy machine (load average above its cores), a method whose whole training
  is too short to time, stock full's two timings far apart;
* one picture: quality against training seconds, the target line, each method's
  time to the target marked.

Timing is only as good as the machine was quiet: the verdict says so when it was not.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .io import write_bytes
from .plots import line_style, matplotlib_agg
from .report import Table, best_index, first_reaching, mean_curves, reach_threshold

#: Whole trainings shorter than this are dominated by fixed costs and timer noise.
MIN_TIMED_SECONDS = 2.0
#: Stock full's repeated timings further apart than this (max / min) make every speed-up doubtful.
MAX_REFERENCE_DRIFT = 1.2


@dataclass(frozen=True)
class MethodTiming:
    """One method's time to the target: on its mean curve and per seed."""

    method: str
    kind: str
    seconds: float | None            # mean curve's training seconds to the target (None: not reached)
    seed_seconds: tuple[float | None, ...]
    best: float                      # best value of the mean curve
    total_seconds: float             # mean over seeds of the whole training time


@dataclass(frozen=True)
class Verdict:
    experiment: str
    metric: str
    target: float | None
    threshold: float | None
    timings: list[MethodTiming]
    reference_seconds: tuple[float, ...]   # stock full's time(s) to the target, every run of it
    lines: list[str]
    warnings: list[str]


def machine_load() -> tuple[float, int]:
    """(1-minute load average, number of usable cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return os.getloadavg()[0], cores


def load_warning(when: str) -> str | None:
    """A warning when the machine is busier than its cores (other work skews every timing)."""
    load, cores = machine_load()
    if load > cores:
        return (f"machine busy {when}: load average {load:.1f} on {cores} cores; other work takes the CPUs "
                "from the timed runs, so seconds and speed-ups are unreliable (rerun on a quiet machine)")
    return None


def _timings(records: Sequence, target: float, higher: bool, tolerance: float) -> list[MethodTiming]:
    out = []
    by_method: dict[str, list] = {}
    for record in records:
        by_method.setdefault(record.method, []).append(record)
    for curve in mean_curves(records):
        if curve.num_iterations == 0:
            continue
        hit = first_reaching(curve.values, target, higher, tolerance)
        seeds = []
        for record in by_method[curve.method]:
            i = first_reaching(np.asarray(record.values), target, higher, tolerance) if record.values else None
            seeds.append(None if i is None else float(np.sum(record.seconds[: i + 1])))
        out.append(MethodTiming(
            method=curve.method, kind=curve.kind,
            seconds=None if hit is None else float(curve.cumulative_seconds[hit]),
            seed_seconds=tuple(seeds),
            best=float(curve.values[best_index(curve.values, higher)]),
            total_seconds=float(np.mean([np.sum(r.seconds) for r in by_method[curve.method]])),
        ))
    return out


def _spread(reference: Sequence[float], seeds: Sequence[float | None]) -> tuple[float, float] | None:
    """Smallest and largest speed-up over every stock full run and every seed that got there."""
    ratios = [r / s for r in reference for s in seeds if s is not None and s > 0]
    return (min(ratios), max(ratios)) if ratios else None


def _fmt(value: float) -> str:
    return f"{value:.4f}" if abs(value) < 100 else f"{value:.1f}"


def verdict(table: Table, records: Sequence) -> Verdict:
    """The verdict of one experiment (see the module docstring)."""
    name, metric, higher = table.experiment, table.metric, table.higher_is_better
    warns: list[str] = []
    if table.target is None or not records:
        return Verdict(name, metric, None, None, [], (), [f"{name}: no verdict: no target ({table.target_source})"],
                       warns)
    timings = _timings(records, table.target, higher, table.tolerance)
    threshold = reach_threshold(table.target, higher, table.tolerance)
    references = [t for t in timings if t.kind == "stock_full"]
    reference_seconds = tuple(s for t in references for s in t.seed_seconds if s is not None)
    short = [t for t in timings if t.total_seconds < MIN_TIMED_SECONDS]
    if short:  # one line per experiment: on tiny data every method is short
        warns.append(f"{name}: whole training too short to time (under {MIN_TIMED_SECONDS:g} s: fixed costs and "
                     "timer noise dominate, speed-ups say little): "
                     + ", ".join(f"{t.method} {t.total_seconds:.2f} s" for t in short))
    if len(reference_seconds) > 1 and max(reference_seconds) > MAX_REFERENCE_DRIFT * min(reference_seconds):
        warns.append(f"{name}: stock full's time to the target moved from {min(reference_seconds):.2f} s to "
                     f"{max(reference_seconds):.2f} s between its runs: the machine's load changed during the "
                     "experiment, and every speed-up carries that spread")
    # (seconds, timing) pairs: the sort key and the seconds below are never None.
    reached = sorted(((t.seconds, t) for t in timings if t.seconds is not None and t.kind != "stock_full"),
                     key=lambda pair: pair[0])
    better = "higher" if higher else "lower"
    lines = [f"{name} ({metric}, {better} is better): target {_fmt(threshold)} "
             f"(stock full's {'final' if 'final' in table.target_source else 'best'} "
             f"{_fmt(table.target)} {'-' if higher else '+'} {table.tolerance:g})"]
    if references:
        lines.append(f"  stock full (the reference, {len(reference_seconds)} timed run(s)): "
                     + ", ".join(f"{s:.1f} s" for s in reference_seconds) + " to the target; best "
                     + _fmt(references[0].best))
    if not reached:
        lines.append("  no other method reached the target")
    elif not reference_seconds:
        lines.append(f"  fastest: {reached[0][1].method} in {reached[0][0]:.1f} s (stock full has no time to the "
                     "target to compare with)")
    else:
        ref = float(np.median(reference_seconds))
        for i, (seconds, t) in enumerate(reached):
            s = _spread(reference_seconds, t.seed_seconds)
            spread_text = f" (spread {s[0]:.2f}-{s[1]:.2f}x over seeds and stock full runs)" if s else ""
            head = "fastest" if i == 0 else "then"
            lines.append(f"  {head}: {t.method}, {seconds:.1f} s: {ref / seconds:.2f}x stock full "
                         f"({ref:.1f} s){spread_text}; best {_fmt(t.best)}")
        if reached[0][0] > ref:
            lines.append("  => stock full was fastest: no sampled method beat it here")
    missed = [t for t in timings if t.seconds is None and t.kind != "stock_full"]
    if missed:
        lines.append("  not reached: " + ", ".join(f"{t.method} (best {_fmt(t.best)})" for t in missed))
    return Verdict(name, metric, table.target, threshold, timings, reference_seconds, lines, warns)


def plot_verdict(table: Table, records: Sequence, path: Path) -> Path | None:
    """Quality against training seconds, the target line and each method's time to it marked."""
    if table.target is None or not records:
        return None
    higher = table.higher_is_better
    threshold = reach_threshold(table.target, higher, table.tolerance)
    figure, canvas = matplotlib_agg()
    fig = figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    curves = [c for c in mean_curves(records) if c.num_iterations]
    lows, highs = [], []
    for curve in curves:
        seconds = curve.cumulative_seconds
        (line,) = ax.plot(seconds, curve.values, lw=2.0 if curve.kind == "stock_full" else 1.4,
                          ls=line_style(curve.kind), label=curve.method)
        hit = first_reaching(curve.values, table.target, higher, table.tolerance)
        if hit is not None:
            ax.plot([seconds[hit]], [curve.values[hit]], "o", color=line.get_color(), ms=7)
            ax.annotate(f"{seconds[hit]:.1f} s", (seconds[hit], curve.values[hit]), textcoords="offset points",
                        xytext=(4, 6), fontsize=8, color=line.get_color())
        tail = curve.values[curve.num_iterations // 4:]
        lows.append(float(np.min(tail)))
        highs.append(float(np.max(tail)))
    ax.axhline(threshold, color="black", lw=1, ls=":", label=f"target {_fmt(threshold)}")
    span = max(highs + [threshold]) - min(lows + [threshold])
    ax.set_ylim(min(lows + [threshold]) - 0.05 * span, max(highs + [threshold]) + 0.05 * span)
    ax.set_xlabel("training seconds")
    ax.set_ylabel(f"validation {table.metric}")
    ax.set_title(f"{table.experiment}: same quality, less time? (o = first reaching the target)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    canvas(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return write_bytes(path, buffer.getvalue())
