"""PNG curves of a comparison: metric vs iteration, metric vs seconds, sampling rate vs iteration.

Drawn with matplotlib's Agg canvas on a private Figure (no pyplot, no global backend
switch), so plotting works headless and never disturbs the caller's matplotlib state.
Files are written atomically.

matplotlib is the ``compare`` extra (``pip install 'smart-lgbm[compare]'``), not a core
dependency: it is imported when a plot is drawn (:func:`matplotlib_agg`), so that
``import smart_lgbm`` and training never need it, and a comparison without it fails at
once, before anything trains, naming the extra.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .extras import INSTALL_EXTRA, MissingExtraError
from .io import write_bytes
from .peers import PEER_KINDS
from .report import Curve

if TYPE_CHECKING:  # imported when drawing (matplotlib_agg): the compare extra
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

__all__ = ["INSTALL_EXTRA", "MissingExtraError", "PLOT_FILES", "line_style", "matplotlib_agg", "plot_curves"]


def matplotlib_agg() -> tuple[type[Figure], type[FigureCanvasAgg]]:
    """matplotlib's ``Figure`` and Agg canvas classes, imported on first use.

    Raises
    ------
    MissingExtraError
        When matplotlib cannot be imported; the message names the extra to install.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError(
            f"the comparison draws its plots with matplotlib, which cannot be imported ({exc}); install the "
            f"'compare' extra: {INSTALL_EXTRA}") from exc
    return Figure, FigureCanvasAgg

PLOT_FILES = {
    "metric_vs_iteration": "metric_vs_iteration.png",
    "metric_vs_seconds": "metric_vs_seconds.png",
    "sampling_rate": "sampling_rate_vs_iteration.png",
}
#: ``scripts/run``'s picture of each experiment (:mod:`smart_lgbm.compare.quick`)
VERDICT_PLOT = "verdict.png"


def _save(fig: Figure, path: Path) -> Path:
    matplotlib_agg()[1](fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return write_bytes(path, buffer.getvalue())


def _line_style(curve: Curve) -> dict:
    # Stock LightGBM dashed, engine methods solid, other libraries dash-dotted: the
    # families stay apart at a glance.
    return {"linestyle": line_style(curve.kind), "linewidth": 1.4}


def line_style(kind: str) -> str:
    """The line style of a method kind's curves: stock ``--``, peers ``-.``, engine ``-``."""
    if kind.startswith("stock_"):
        return "--"
    return "-." if kind in PEER_KINDS else "-"


def _zoom(ax, curves: Sequence[Curve], target: float | None) -> None:
    """Limit the y-axis to the values after the first tenth of the iterations.

    The first iterations' metric is far from the rest (a log-loss starts near 0.69) and would
    squash the part of the curves the comparison is about.
    """
    tails = [c.values[c.num_iterations // 10:] for c in curves if c.num_iterations]
    tails += [np.array([target])] if target is not None else []
    if not tails:
        return
    values = np.concatenate(tails)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return
    lo, hi = float(values.min()), float(values.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.01 * max(abs(hi), 1e-12)
    ax.set_ylim(lo - pad, hi + pad)


def plot_curves(
    curves: Sequence[Curve],
    metric: str,
    title: str,
    folder: str | os.PathLike,
    target: float | None = None,
) -> list[Path]:
    """Draw the three plots of one experiment into ``folder``.

    Parameters
    ----------
    curves : sequence of Curve
        Mean curves (see :func:`smart_lgbm.compare.report.mean_curves`); may be empty.
    metric : str
        Y-axis label of the metric plots.
    title : str
        Title prefix (experiment and data).
    folder : path-like
        Where the PNG files go.
    target : float, optional
        The value a method must reach to count as reaching the target (the target quality
        with its tolerance), drawn as a horizontal line on the metric plots.

    Returns
    -------
    list of Path
        The files written.
    """
    figure, _ = matplotlib_agg()
    folder = Path(folder)
    written = []
    specs = [
        ("metric_vs_iteration", "iteration", metric, lambda c: (np.arange(1, c.num_iterations + 1), c.values)),
        ("metric_vs_seconds", "training seconds (evaluation excluded)", metric,
         lambda c: (c.cumulative_seconds, c.values)),
        ("sampling_rate", "iteration", "sampling rate (rows fitted / rows)",
         lambda c: (np.arange(1, c.num_iterations + 1), c.sampling_rate)),
    ]
    for key, xlabel, ylabel, xy in specs:
        fig = figure(figsize=(7.0, 4.5))
        ax = fig.add_subplot(1, 1, 1)
        for curve in curves:
            x, y = xy(curve)
            seeds = f" ({len(curve.seeds)} seeds)" if len(curve.seeds) > 1 else ""
            ax.plot(x, y, label=curve.method + seeds, **_line_style(curve))
        if target is not None and key != "sampling_rate":
            ax.axhline(target, color="grey", linewidth=0.8, linestyle=":", label=f"target {target:.4g}")
        if key == "sampling_rate":
            ax.set_ylim(0.0, 1.05)
        else:
            _zoom(ax, curves, target)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}: {ylabel.split(' (')[0]} vs {xlabel.split(' (')[0]}", fontsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
        else:  # every method ended without an iteration: say so rather than show empty axes
            ax.text(0.5, 0.5, "no method has iterations", transform=ax.transAxes, ha="center", va="center")
        written.append(_save(fig, folder / PLOT_FILES[key]))
    return written
