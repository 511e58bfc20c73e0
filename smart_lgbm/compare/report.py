"""The comparison table in the paper's layout, computed from per-iteration records.

Pure functions: records in, numbers and markdown out (no training, no files), so the
arithmetic is testable on hand-made records.

A method with several seeds is summarised by its mean curve: at each iteration the mean
over seeds of the metric, of the sampling rate and of the seconds.  On that curve:

* upper part, at the target quality: the first iteration whose metric reaches the target
  (``>=`` when higher is better, ``<=`` otherwise), the ASRI over iterations 1..that one,
  the cumulative training seconds up to it, and the speed-ups (reference seconds / method
  seconds) against stock full and stock GOSS;
* lower part: the best metric, the first iteration reaching it, the ASRI and the seconds
  up to it;
* the equal-time table: each method's metric after a share (25%, 50%, 100% by default) of
  the training time the reference (stock full) needed to reach the target;
* the lower part sets each method's best beside stock full's best (signed difference);
* the time-to-target table: every method's seconds to the target within the config's
  tolerance and within the tight :data:`TIGHT_TOLERANCE` (0.0005), with the speed-up
  against stock full at each.

The target is a given number, or a method's best (default) or final quality; a run long
enough to converge gives the paper's "ideal accuracy", and ``tolerance`` states how close
counts as reaching it.

ASRI (average sampling rate per iteration) = mean over the iterations used of
(rows the tree was fitted on / training rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .peers import LIBRARIES


@dataclass(frozen=True)
class Curve:
    """A method's mean curve over its seeds (arrays indexed by iteration - 1)."""

    method: str
    kind: str
    seeds: tuple[int, ...]
    values: np.ndarray
    sampling_rate: np.ndarray
    seconds: np.ndarray

    @property
    def cumulative_seconds(self) -> np.ndarray:
        return np.cumsum(self.seconds)

    @property
    def num_iterations(self) -> int:
        return int(self.values.shape[0])


@dataclass(frozen=True)
class Row:
    """One line of the table; ``iterations`` is None when the target was not reached."""

    method: str
    runs: int
    value: float | None
    iterations: int | None
    asri: float | None
    seconds: float | None
    speedup_full: float | None = None
    speedup_goss: float | None = None


@dataclass(frozen=True)
class Table:
    """Both parts of the table with what they refer to.

    ``target`` is None when it cannot be set yet (its method has no results); then
    ``target_source`` says why.  ``notes`` holds, per method, why it has fewer iterations
    than asked for (or none); methods without iterations have no curve but still a row.
    """

    experiment: str
    metric: str
    higher_is_better: bool
    target: float | None
    target_source: str
    tolerance: float
    upper: list[Row]
    lower: list[Row]
    full_reference: str | None
    goss_reference: str | None
    notes: dict[str, list[str]] = field(default_factory=dict)
    equal_time: EqualTime | None = None
    full_best: float | None = None
    time_to_target: TimeToTarget | None = None
    #: with peer methods: each library's best quality, ``(library, method, value)``
    library_best: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class EqualTime:
    """Every method's quality after shares of one reference time (the equal-time table).

    ``cells[method]`` holds, per share, ``(value, iteration, ended)``: the metric at the
    last iteration finished within ``share * seconds`` (None if even the first took
    longer), and whether the method's run had ended before that time (it could not have
    gone further).
    """

    shares: tuple[float, ...]
    reference: str
    seconds: float
    basis: str  # what ``seconds`` is, e.g. "its time to the target"
    cells: dict[str, list[tuple[float | None, int | None, bool]]]


#: The tight tolerance of the time-to-target table (absolute, in the metric's units: 0.0005
#: log-loss or NDCG@10), beside the config's own.
TIGHT_TOLERANCE = 0.0005


@dataclass(frozen=True)
class TimeToTarget:
    """Each method's training seconds to the target at several tolerances.

    ``cells[method]`` holds, per tolerance, ``(seconds, iteration, speed-up vs the full
    reference)``; seconds and iteration are None when the method's mean curve never gets
    within that tolerance, the speed-up None also when the reference does not.
    """

    tolerances: tuple[float, ...]
    reference: str | None
    cells: dict[str, list[tuple[float | None, int | None, float | None]]]


def time_to_target(curves: Sequence[Curve], full: Curve | None, target: float, higher_is_better: bool,
                   tolerances: Sequence[float]) -> TimeToTarget:
    """Seconds (and iterations) of every curve to ``target`` within each tolerance, with the
    speed-up against ``full``'s seconds to the same threshold."""

    def reach(curve: Curve, tol: float) -> tuple[float | None, int | None]:
        i = first_reaching(curve.values, target, higher_is_better, tol)
        return (None, None) if i is None else (float(curve.cumulative_seconds[i]), i + 1)

    cells = {}
    for curve in curves:
        row = []
        for tol in tolerances:
            seconds, iteration = reach(curve, tol)
            ref = reach(full, tol)[0] if full is not None else None
            speedup = ref / seconds if ref is not None and seconds is not None and seconds > 0 else None
            row.append((seconds, iteration, speedup))
        cells[curve.method] = row
    return TimeToTarget(tuple(tolerances), None if full is None else full.method, cells)


def mean_curves(records: Sequence[Any]) -> list[Curve]:
    """Group run records by method (first-seen order) and average over seeds.

    Parameters
    ----------
    records : sequence of RunRecord-like objects
        Each with ``method``, ``kind``, ``seed``, ``values``, ``sampling_rate``, ``seconds``.

    Returns
    -------
    list of Curve
        Seeds of unequal length (a run that stopped early) are cut to the shortest.
    """
    groups: dict[str, list[Any]] = {}
    for rec in records:
        groups.setdefault(rec.method, []).append(rec)
    curves = []
    for method, recs in groups.items():
        n = min(len(r.values) for r in recs)
        if n == 0:
            continue

        def mean(attr: str, recs: list[Any] = recs, n: int = n) -> np.ndarray:
            return np.mean([np.asarray(getattr(r, attr)[:n], dtype=np.float64) for r in recs], axis=0)

        curves.append(Curve(method, recs[0].kind, tuple(r.seed for r in recs),
                            mean("values"), mean("sampling_rate"), mean("seconds")))
    return curves


def method_notes(records: Sequence[Any]) -> dict[str, list[str]]:
    """Every method of ``records`` (first-seen order) with what its table rows cannot show.

    A run's own ``note`` (why it stopped early, which iterations added no tree), prefixed
    by its seed when the method has several, and a line when seeds of unequal length were
    cut to the shortest for the mean curve.
    """
    groups: dict[str, list[Any]] = {}
    for rec in records:
        groups.setdefault(rec.method, []).append(rec)
    notes: dict[str, list[str]] = {}
    for method, recs in groups.items():
        lines = []
        for r in recs:
            note = getattr(r, "note", "")
            if note:
                lines.append(f"seed {r.seed}: {note}" if len(recs) > 1 else note)
        lengths = [len(r.values) for r in recs]
        if len(set(lengths)) > 1 and min(lengths) > 0:
            lines.append(f"its {len(recs)} seeds ran {min(lengths)}-{max(lengths)} iterations; the mean curve "
                         f"stops at the shortest ({min(lengths)})")
        notes[method] = lines
    return notes


#: Relative slack always granted when comparing with the target: two implementations of
#: the same algorithm (stock full and the engine's Full) agree to ~1e-15, not bit for bit.
FLOAT_SLACK = 1e-9


def reach_threshold(target: float, higher_is_better: bool, tolerance: float) -> float:
    """The metric value a method must reach (``>=`` or ``<=``) to count as reaching ``target``."""
    slack = tolerance + FLOAT_SLACK * max(1.0, abs(target))
    return target - slack if higher_is_better else target + slack


def reaches(value: float, target: float, higher_is_better: bool, tolerance: float = 0.0) -> bool:
    """Whether ``value`` is at least as good as ``target`` (within ``tolerance``)."""
    threshold = reach_threshold(target, higher_is_better, tolerance)
    return value >= threshold if higher_is_better else value <= threshold


def first_reaching(values: np.ndarray, target: float, higher_is_better: bool, tolerance: float = 0.0) -> int | None:
    """0-based index of the first value at least as good as ``target``, None if none is.

    "At least as good" allows ``tolerance`` (absolute) plus :data:`FLOAT_SLACK` relative.
    """
    values = np.asarray(values, dtype=np.float64)
    threshold = reach_threshold(target, higher_is_better, tolerance)
    hits = np.flatnonzero(values >= threshold if higher_is_better else values <= threshold)
    return int(hits[0]) if hits.size else None


def best_index(values: np.ndarray | Sequence[float], higher_is_better: bool) -> int:
    """0-based index of the first occurrence of the best value."""
    values = np.asarray(values, dtype=np.float64)
    return int(np.argmax(values) if higher_is_better else np.argmin(values))


def asri(sampling_rate: np.ndarray | Sequence[float], index: int) -> float:
    """Average sampling rate per iteration over iterations 0..``index`` (inclusive)."""
    return float(np.mean(np.asarray(sampling_rate, dtype=np.float64)[: index + 1]))


def _first_of_kind(curves: Sequence[Curve], kind: str) -> Curve | None:
    return next((c for c in curves if c.kind == kind), None)


def resolve_target(curves: Sequence[Curve], target: float | str | None, at: str = "best",
                   higher_is_better: bool = False) -> tuple[float, str]:
    """The target quality and a phrase saying where it comes from.

    ``target`` is a number (used as is), a method label, or None: stock full (or the first
    method when there is no stock full).  Of a method, ``at`` takes its ``"best"`` quality
    (the first iteration with it) or its ``"final"`` one.

    Raises
    ------
    ValueError
        If ``target`` names a method without results, or ``at`` is neither.
    """
    if at not in ("best", "final"):
        raise ValueError(f"at must be 'best' or 'final', got {at!r}")
    if isinstance(target, (int, float)) and not isinstance(target, bool):
        return float(target), "given"
    if target is None:
        ref = _first_of_kind(curves, "stock_full") or (curves[0] if curves else None)
        if ref is None:
            raise ValueError("no results to take a target from")
    else:
        ref = next((c for c in curves if c.method == target), None)
        if ref is None:
            raise ValueError(f"target method {target!r} has no results; methods with results: "
                             f"{', '.join(c.method for c in curves)}")
    if at == "final":
        return float(ref.values[-1]), f"{ref.method} after {ref.num_iterations} iterations"
    b = best_index(ref.values, higher_is_better)
    return float(ref.values[b]), f"best of {ref.method}: iteration {b + 1} of {ref.num_iterations}"


def equal_time(curves: Sequence[Curve], reference: Curve, seconds: float, basis: str,
               shares: Sequence[float]) -> EqualTime:
    """Each curve's metric after ``share * seconds`` of training, for every share.

    The value is that of the last iteration whose cumulative seconds are within the time;
    None when the first iteration alone took longer.
    """
    cells: dict[str, list[tuple[float | None, int | None, bool]]] = {}
    for curve in curves:
        cumulative = curve.cumulative_seconds
        row: list[tuple[float | None, int | None, bool]] = []
        for share in shares:
            n = int(np.searchsorted(cumulative, share * seconds, side="right"))
            ended = n == curve.num_iterations and bool(cumulative[-1] < share * seconds)
            row.append((float(curve.values[n - 1]), n, ended) if n else (None, None, False))
        cells[curve.method] = row
    return EqualTime(tuple(shares), reference.method, seconds, basis, cells)


def _row_at(curve: Curve, index: int | None, value: float | None) -> Row:
    if index is None:
        return Row(curve.method, len(curve.seeds), None, None, None, None)
    return Row(curve.method, len(curve.seeds), value, index + 1, asri(curve.sampling_rate, index),
               float(curve.cumulative_seconds[index]))


def build_table(
    experiment: str,
    metric: str,
    higher_is_better: bool,
    curves: Sequence[Curve],
    target: float | str | None = None,
    tolerance: float = 0.0,
    notes: dict[str, list[str]] | None = None,
    target_at: str = "best",
    equal_time_shares: Sequence[float] | None = (0.25, 0.5, 1.0),
    tight_tolerance: float | None = TIGHT_TOLERANCE,
) -> Table:
    """Both parts of the paper's table from the methods' mean curves.

    Parameters
    ----------
    experiment, metric : str
        Names shown in the title.
    higher_is_better : bool
        Direction of ``metric``.
    curves : sequence of Curve
        See :func:`mean_curves`.
    target : float, str or None
        See :func:`resolve_target`.  A target method without results leaves the table
        without a target (``Table.target`` None) instead of failing.
    tolerance : float, default=0.0
        Absolute slack of "reaches the target" (see :func:`first_reaching`).
    notes : dict, optional
        :func:`method_notes` of the records: every method in table order, so that methods
        without iterations (no curve) keep a row.
    target_at : {"best", "final"}, default="best"
        Which quality of a target method (see :func:`resolve_target`).
    equal_time_shares : sequence of float or None, default=(0.25, 0.5, 1.0)
        Shares of the reference's time to the target for the equal-time table (None: no
        such table).  The reference is stock full, else the target method, else the first
        method; when it does not reach the target its whole training time is the basis.
    tight_tolerance : float or None, default=TIGHT_TOLERANCE
        A second tolerance for the time-to-target table (``Table.time_to_target``), beside
        ``tolerance``; None (or equal to ``tolerance``): that table has one column.

    Returns
    -------
    Table
    """
    if target_at not in ("best", "final"):
        raise ValueError(f"target_at must be 'best' or 'final', got {target_at!r}")
    try:
        target_value: float | None
        target_value, source = resolve_target(curves, target, target_at, higher_is_better)
    except ValueError as exc:
        target_value, source = None, str(exc)
    full = _first_of_kind(curves, "stock_full")
    goss = _first_of_kind(curves, "stock_goss")

    def seconds_to_target(curve: Curve | None) -> float | None:
        if curve is None or target_value is None:
            return None
        i = first_reaching(curve.values, target_value, higher_is_better, tolerance)
        return None if i is None else float(curve.cumulative_seconds[i])

    def speedup(ref: float | None, mine: float | None) -> float | None:
        if ref is None or mine is None or mine <= 0:
            return None
        return ref / mine

    full_s, goss_s = seconds_to_target(full), seconds_to_target(goss)
    by_method = {c.method: c for c in curves}
    order = list(dict.fromkeys([*(notes or {}), *by_method]))
    upper, lower = [], []
    for method in order:
        curve = by_method.get(method)
        if curve is None:  # no iterations: a row without numbers; the notes say why
            upper.append(Row(method, 0, None, None, None, None))
            lower.append(Row(method, 0, None, None, None, None))
            continue
        i = None if target_value is None else first_reaching(curve.values, target_value, higher_is_better, tolerance)
        row = _row_at(curve, i, None if i is None else float(curve.values[i]))
        upper.append(Row(row.method, row.runs, row.value, row.iterations, row.asri, row.seconds,
                         speedup(full_s, row.seconds), speedup(goss_s, row.seconds)))
        b = best_index(curve.values, higher_is_better)
        lower.append(_row_at(curve, b, float(curve.values[b])))
    full_best = None if full is None else float(full.values[best_index(full.values, higher_is_better)])
    ttt = None
    if target_value is not None and curves:
        tolerances = [tolerance] + ([tight_tolerance] if tight_tolerance is not None
                                    and tight_tolerance != tolerance else [])
        ttt = time_to_target(curves, full, target_value, higher_is_better, tolerances)
    return Table(experiment, metric, higher_is_better, target_value, source, tolerance, upper, lower,
                 None if full is None else full.method, None if goss is None else goss.method,
                 {m: list(lines) for m, lines in (notes or {}).items() if lines},
                 _equal_time_table(curves, full, target, target_value, higher_is_better, tolerance,
                                   equal_time_shares), full_best, ttt, library_best(curves, higher_is_better))


def library_of(kind: str) -> str:
    """The library a method kind trains with: LightGBM (stock), smart-lgbm, XGBoost or CatBoost."""
    if kind.startswith("stock_"):
        return "LightGBM"
    return LIBRARIES.get(kind, "smart-lgbm")


def library_best(curves: Sequence[Curve], higher_is_better: bool) -> list[tuple[str, str, float]]:
    """Each library's best quality over its methods, ``(library, method, value)``, when the
    curves include another library's (a peer that ends better than LightGBM shows there)."""
    if not any(c.kind in LIBRARIES for c in curves):
        return []
    best: dict[str, tuple[str, float]] = {}
    for curve in curves:
        value = float(curve.values[best_index(curve.values, higher_is_better)])
        library = library_of(curve.kind)
        if library not in best or (value > best[library][1] if higher_is_better else value < best[library][1]):
            best[library] = (curve.method, value)
    return [(library, method, value) for library, (method, value) in best.items()]


def _equal_time_table(curves: Sequence[Curve], full: Curve | None, target: float | str | None,
                      target_value: float | None, higher_is_better: bool, tolerance: float,
                      shares: Sequence[float] | None) -> EqualTime | None:
    """The equal-time table against the reference's time to the target (see :func:`build_table`)."""
    if not shares or not curves:
        return None
    reference = full or next((c for c in curves if c.method == target), None) or curves[0]
    i = None if target_value is None else first_reaching(reference.values, target_value, higher_is_better, tolerance)
    if i is None:
        seconds, basis = float(reference.cumulative_seconds[-1]), "its whole training time (it misses the target)"
    else:
        seconds, basis = float(reference.cumulative_seconds[i]), "its time to the target"
    if target_value is None:
        basis = "its whole training time (no target)"
    if not seconds > 0:
        return None
    return equal_time(curves, reference, seconds, basis, shares)


def _fmt(value: float | None, spec: str, missing: str = "—") -> str:
    return missing if value is None else format(value, spec)


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def to_markdown(table: Table) -> str:
    """The table as markdown: an upper part at the target quality, a lower part at each best.

    Missing values (target not reached, no reference method) are shown as "not reached"
    and "—"; a method without iterations as "no iterations", with the reason in the notes
    under the table; a table without a target says why.
    """
    direction = "higher is better" if table.higher_is_better else "lower is better"
    refs = [r for r in (table.full_reference, table.goss_reference) if r]
    header = ["method", "runs", table.metric, "iter", "ASRI", "time/s"] + [f"speed-up vs {r}" for r in refs]
    if table.target is None:
        target_line = f"No target quality: {table.target_source}. Upper part: empty until it has results"
    else:
        threshold = reach_threshold(table.target, table.higher_is_better, table.tolerance)
        target_line = (f"Target: {table.metric} {table.target:.6g} ({table.target_source}); a method reaches it at "
                       f"{'>=' if table.higher_is_better else '<='} {threshold:.6g}"
                       + (f" (tolerance {table.tolerance:g})" if table.tolerance else "")
                       + ". Upper part: first iteration reaching the target")
    lines = [
        f"### {table.experiment}: {table.metric} ({direction})",
        "",
        target_line + "; lower part: each method's best quality. time/s = training seconds (evaluation "
        "excluded); ASRI = average sampling rate per iteration.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for row in table.upper:
        cells = [row.method, str(row.runs)]
        if row.runs == 0:
            cells += ["no iterations", "—", "—", "—"] + ["—"] * len(refs)
        elif row.iterations is None:
            cells += ["not reached" if table.target is not None else "—", "—", "—", "—"] + ["—"] * len(refs)
        else:
            cells += [f"{row.value:.4f}", str(row.iterations), f"{row.asri:.4f}", _seconds(row.seconds)]
            speedups = ([row.speedup_full] if table.full_reference else []) + (
                [row.speedup_goss] if table.goss_reference else [])
            cells += [_fmt(s, ".2f") + ("x" if s is not None else "") for s in speedups]
        lines.append("| " + " | ".join(cells) + " |")
    beside = table.full_best is not None and bool(refs)
    lines.append("| **best quality** |" + " |" * (len(header) - 1 - beside)
                 + (f" **vs {table.full_reference}'s best** |" if beside else ""))
    for row in table.lower:
        if row.runs == 0:
            cells = [row.method, "0", "no iterations", "—", "—", "—"] + [""] * len(refs)
        else:
            cells = [row.method, str(row.runs), f"{row.value:.4f}", str(row.iterations), f"{row.asri:.4f}",
                     _seconds(row.seconds)] + [""] * len(refs)
            if beside and row.value is not None and table.full_best is not None:
                cells[-1] = _versus(row.value, table.full_best, table.higher_is_better)
        lines.append("| " + " | ".join(cells) + " |")
    if table.library_best:
        parts = []
        for library, method, value in table.library_best:
            versus = ""
            if table.full_best is not None and table.full_reference is not None:
                versus = f", {_versus(value, table.full_best, table.higher_is_better)} against {table.full_reference}"
            parts.append(f"{library} {value:.4f} ({method}{versus})")
        lines += ["", "Best quality by library: " + "; ".join(parts) + "."]
    if table.time_to_target is not None:
        lines += ["", *_time_to_target_markdown(table.time_to_target, table)]
    if table.equal_time is not None:
        lines += ["", *_equal_time_markdown(table.equal_time, table.metric, table.higher_is_better)]
    if table.notes:
        lines += ["", "Notes:"]
        lines += [f"- {method}: {note}" for method, notes in table.notes.items() for note in notes]
    return "\n".join(lines) + "\n"


def _versus(value: float, reference: float, higher_is_better: bool) -> str:
    """``value - reference`` signed, with whether that is better or worse."""
    diff = value - reference
    if abs(diff) < 5e-5:
        return f"{diff:+.4f} (same)"
    better = diff > 0 if higher_is_better else diff < 0
    return f"{diff:+.4f} ({'better' if better else 'worse'})"


def _time_to_target_markdown(ttt: TimeToTarget, table: Table) -> list[str]:
    """Seconds to the target at each tolerance, the speed-up against stock full in brackets."""
    sign = "-" if table.higher_is_better else "+"
    columns = [f"{sign} {tol:g}" for tol in ttt.tolerances]
    vs = f" and the speed-up against {ttt.reference}" if ttt.reference else ""
    lines = [
        f"Time to the target within each tolerance: training seconds until the mean curve first reaches the "
        f"target {sign} the tolerance, the iteration{vs} in brackets.",
        "",
        "| method | " + " | ".join(f"target {c}" for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for method, row in ttt.cells.items():
        cells = []
        for seconds, iteration, speedup in row:
            if seconds is None:
                cells.append("not reached")
                continue
            extra = f", {speedup:.2f}x" if speedup is not None else ""
            cells.append(f"{_seconds(seconds)} ({iteration}{extra})")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def _equal_time_markdown(et: EqualTime, metric: str, higher_is_better: bool) -> list[str]:
    """The equal-time table: one column per share of the reference time, best value in bold."""
    shares = [f"{100 * s:g}%" for s in et.shares]
    lines = [
        f"Quality at equal training time: each method's {metric} after {' / '.join(shares)} of {et.reference}'s "
        f"training time to the target ({_seconds(et.seconds)} s, {et.basis}); the iteration in brackets; "
        "† = its run had ended before that time; — = its first iteration took longer.",
        "",
        "| method | " + " | ".join(f"{share} ({_seconds(s * et.seconds)} s)" for share, s in zip(shares, et.shares, strict=True))
        + " |",
        "|---|" + "---:|" * len(shares),
    ]
    best = []
    for k in range(len(et.shares)):
        values = [v for row in et.cells.values() if (v := row[k][0]) is not None]
        best.append((max(values) if higher_is_better else min(values)) if values else None)
    for method, row in et.cells.items():
        cells = []
        for k, (value, iteration, ended) in enumerate(row):
            if value is None:
                cells.append("—")
                continue
            text = f"{value:.4f} ({iteration}{', †' if ended else ''})"
            cells.append(f"**{text}**" if value == best[k] else text)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def parse_markdown_table(text: str) -> list[list[str]]:
    """Cells of the first markdown table in ``text`` (header first, alignment row dropped)."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-:") and c for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows
