"""Seeded synthetic data for benchmarks, made in chunks so large sizes fit in memory.

Whatever comes from here is synthetic, and every figure made with it must say so.
"""

from __future__ import annotations

import numpy as np

_CHUNK = 200_000


def _check_size(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def make_dense_binary(
    n_rows: int = 720_000, n_features: int = 136, seed: int = 0, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Dense binary-classification data with nonlinear structure (HIGGS-like, synthetic).

    Features are float32 mixtures: a third standard normal, a third heavy-tailed
    (``|t_3|``-like, as HIGGS's momenta), a third uniform on a few discrete levels (binned
    with few distinct values, as many web-search features are).  The log-odds is a fixed
    random function of 16 "informative" features: linear terms, pairwise products,
    thresholds and a sine, plus Gaussian noise of scale ``noise``; the rest are
    distractors.  About 53% positives, a Bayes log-loss well above zero, so that boosting
    keeps improving for hundreds of iterations as on real data.

    Parameters
    ----------
    n_rows, n_features : int
        Size; ``n_features >= 16``.  720,000 x 136 is MSLR-WEB10K's shape.
    seed : int
        Same seed, same data, byte for byte.
    noise : float
        Scale of the label noise in log-odds units.

    Returns
    -------
    X : ndarray of float32, shape (n_rows, n_features)
    y : ndarray of float64 in {0, 1}, shape (n_rows,)
    """
    n_rows = _check_size("n_rows", n_rows)
    n_features = _check_size("n_features", n_features, 16)
    root = np.random.SeedSequence(seed)
    design_rng = np.random.default_rng(root.spawn(1)[0])
    kinds = design_rng.integers(0, 3, size=n_features)
    informative = design_rng.choice(n_features, size=16, replace=False)
    coef = design_rng.normal(size=16)
    pairs = design_rng.choice(16, size=(8, 2))
    pair_coef = design_rng.normal(scale=0.8, size=8)
    thresholds = design_rng.normal(scale=0.5, size=16)
    X = np.empty((n_rows, n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    chunk_seeds = root.spawn((n_rows + _CHUNK - 1) // _CHUNK + 1)[1:]
    for c, start in enumerate(range(0, n_rows, _CHUNK)):
        stop = min(start + _CHUNK, n_rows)
        rng = np.random.default_rng(chunk_seeds[c])
        m = stop - start
        block = rng.standard_normal((m, n_features), dtype=np.float32)
        heavy = kinds == 1
        block[:, heavy] = np.abs(rng.standard_t(3, size=(m, int(heavy.sum())))).astype(np.float32)
        discrete = kinds == 2
        block[:, discrete] = rng.integers(0, 8, size=(m, int(discrete.sum()))).astype(np.float32) / 7.0
        Z = block[:, informative].astype(np.float64)
        Z = (Z - Z.mean(axis=0)) / (Z.std(axis=0) + 1e-12)
        logit = Z @ coef * 0.6
        logit += (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ pair_coef * 0.5
        logit += ((Z > thresholds).astype(np.float64) - 0.5) @ coef[::-1] * 0.8
        logit += np.sin(2.0 * Z[:, 0]) + 0.2
        logit += noise * rng.standard_normal(m)
        X[start:stop] = block
        y[start:stop] = (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float64)
    return X, y
