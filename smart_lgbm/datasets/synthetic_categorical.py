"""Seeded synthetic binary data with numerical and high-cardinality categorical columns.

Whatever comes from here is synthetic, and every figure made with it must say so.
"""

from __future__ import annotations

import numpy as np

from .synthetic import _check_size, _chunks, _design, _feature_block, _informative, _structure

#: Levels of the categorical columns :func:`make_mixed_categorical` makes by default: one of
#: 1,000 levels, then 200, 30 and 4.
DEFAULT_LEVELS = (1000, 200, 30, 4)
#: Share of NaN in each numerical column.
_NAN_SHARE = 0.05


def make_mixed_categorical(
    n_rows: int = 1_200_000, n_numerical: int = 36, levels: tuple[int, ...] = DEFAULT_LEVELS, seed: int = 0,
    noise: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Binary-classification data of numerical columns with NaN and categorical columns.

    The numerical columns are :func:`smart_lgbm.datasets.make_dense_binary`'s mixtures
    (normal, heavy-tailed, few discrete levels), each with 5% NaN; the log-odds takes a fixed
    random function of 16 of them (NaN read as 0).  Categorical column ``j`` holds integer
    categories ``0 .. levels[j] - 1`` (as float32, LightGBM's categorical input) with
    Zipf-like frequencies (exponent 1.1: a few frequent levels and a long tail of rare
    ones, as customer, product or region codes are), in a random order, each level with its
    own random effect on the log-odds (normal, scale 0.6); the first two categorical
    columns also interact (a random effect per pair of the first column's level and the
    second's level modulo 8).  Gaussian label noise of scale ``noise``.

    Parameters
    ----------
    n_rows : int
        Rows.
    n_numerical : int
        Numerical columns, at least 16.
    levels : tuple of int
        Levels of each categorical column, at least 2 each and at most 2**24 (exact in
        float32); at least one column.
    seed : int
        Same seed, same data, byte for byte.
    noise : float
        Scale of the label noise in log-odds units.

    Returns
    -------
    X : ndarray of float32, shape (n_rows, n_numerical + len(levels))
        The numerical columns, then the categorical ones.
    y : ndarray of float64 in {0, 1}, shape (n_rows,)
    categorical : list of int
        The categorical columns' indices (LightGBM's ``categorical_feature``).
    """
    n_rows = _check_size("n_rows", n_rows)
    n_numerical = _check_size("n_numerical", n_numerical, 16)
    if not isinstance(levels, (tuple, list)) or not levels:
        raise ValueError(f"levels must be a non-empty tuple of integers >= 2, got {levels!r}")
    levels = tuple(_check_size("levels", v, 2) for v in levels)
    if max(levels) > 1 << 24:
        raise ValueError(f"levels must be at most {1 << 24} (exact in float32), got {max(levels)}")
    root = np.random.SeedSequence(seed)
    design_rng = np.random.default_rng(root.spawn(1)[0])
    kinds = design_rng.integers(0, 3, size=n_numerical)
    informative = design_rng.choice(n_numerical, size=16, replace=False)
    design = _design(design_rng)
    # per column: the level of each frequency rank (a random order), and each level's effect
    shares = [_zipf(v) for v in levels]
    order = [design_rng.permutation(v) for v in levels]
    effects = [design_rng.normal(scale=0.6, size=v) for v in levels]
    pair_effects = design_rng.normal(scale=0.4, size=(levels[0], 8)) if len(levels) > 1 else None
    X = np.empty((n_rows, n_numerical + len(levels)), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    for start, stop, rng in _chunks(root, n_rows):
        m = stop - start
        block = _feature_block(rng, kinds, m)
        logit = _structure(_informative(block, informative), design, 0.2) * 0.7
        block[rng.random((m, n_numerical)) < _NAN_SHARE] = np.nan
        X[start:stop, :n_numerical] = block
        cats = [order[j][rng.choice(v, size=m, p=shares[j])] for j, v in enumerate(levels)]
        for j, c in enumerate(cats):
            logit += effects[j][c]
            X[start:stop, n_numerical + j] = c
        if pair_effects is not None:
            logit += pair_effects[cats[0], cats[1] % 8]
        logit += noise * rng.standard_normal(m)
        y[start:stop] = (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float64)
    return X, y, list(range(n_numerical, n_numerical + len(levels)))


def _zipf(levels: int, exponent: float = 1.1) -> np.ndarray:
    """Probabilities of ranks ``1 .. levels`` proportional to ``rank ** -exponent``."""
    weights = 1.0 / np.arange(1, levels + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()
