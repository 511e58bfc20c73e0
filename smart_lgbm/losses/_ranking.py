"""Ranking inputs shared by the LambdaRank loss and the ranking metrics.

LightGBM's default label gains and the checks of query sizes, relevance labels and label
gains live here, so that :mod:`smart_lgbm.losses.lambdarank` and
:mod:`smart_lgbm.metrics.ranking` both import them and neither imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: LightGBM's default ``label_gain``: ``2**l - 1`` for labels 0..30.
DEFAULT_LABEL_GAIN: tuple[float, ...] = tuple(float((1 << i) - 1) for i in range(31))


def check_group(group: Any, n_rows: int) -> np.ndarray:
    """Validate LightGBM-style query sizes and return them as int64.

    Raises ``ValueError`` (naming ``group``) unless ``group`` is a 1-D array of positive
    integers summing to ``n_rows``.
    """
    if group is None:
        raise ValueError("group is required for ranking: pass the query sizes (LightGBM's group)")
    g = np.asarray(group)
    if g.ndim != 1 or g.shape[0] == 0:
        raise ValueError(f"group must be a non-empty 1-D array of query sizes, got shape {g.shape}")
    if g.dtype.kind not in "iuf" or g.dtype.kind == "f" and not np.all(np.isfinite(g) & (g == np.round(g))):
        raise ValueError("group must contain integer query sizes")
    gi = g.astype(np.int64)
    if np.any(gi <= 0):
        raise ValueError(
            f"group must contain positive query sizes; query {int(np.argmax(gi <= 0))} has size "
            f"{int(gi[gi <= 0][0])} (empty queries are not allowed)"
        )
    total = int(gi.sum())
    if total != n_rows:
        raise ValueError(f"group sums to {total} but there are {n_rows} rows; they must be equal")
    return gi


def check_ranking_labels(label: np.ndarray, n_gains: int) -> np.ndarray:
    """Validate ranking labels (non-negative integers < ``n_gains``) and return them as int32."""
    lab = np.asarray(label, dtype=np.float64)
    if lab.ndim != 1:
        raise ValueError(f"label must be 1-D for ranking, got shape {lab.shape}")
    if not np.all(np.isfinite(lab)):
        raise ValueError("label contains NaN or infinite values; ranking labels must be integers >= 0")
    if np.any(lab < 0):
        raise ValueError(f"label must be non-negative for ranking, found {float(lab.min())}")
    if np.any(lab != np.floor(lab)):
        bad = lab[lab != np.floor(lab)][0]
        raise ValueError(
            f"label must be integers for ranking, found {bad}; map graded relevance to integers "
            "and set label_gain for the gains"
        )
    if lab.size and lab.max() >= n_gains:
        raise ValueError(
            f"label {int(lab.max())} is not less than the number of label_gain entries ({n_gains}); "
            "extend label_gain"
        )
    return lab.astype(np.int32)


def check_label_gain(label_gain: Sequence[float] | np.ndarray | str | None) -> np.ndarray:
    """Validate ``label_gain`` (None: LightGBM's default ``2**l - 1``) as a float64 array.

    Accepts a sequence of numbers or LightGBM's comma-separated string form (``"0,1,3"``).
    """
    if label_gain is None:
        return np.asarray(DEFAULT_LABEL_GAIN)
    if isinstance(label_gain, str):  # numpy parses the parts below
        label_gain = [part.strip() for part in label_gain.split(",")]  # type: ignore[misc]
    try:
        gains = np.asarray(label_gain, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"label_gain must be a sequence of numbers, got {label_gain!r}") from exc
    if gains.ndim != 1 or gains.shape[0] == 0:
        raise ValueError(f"label_gain must be a non-empty 1-D sequence, got shape {gains.shape}")
    if not np.all(np.isfinite(gains)):
        raise ValueError("label_gain must contain finite numbers")
    return gains
