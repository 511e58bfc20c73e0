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
    design = _design(design_rng)
    X = np.empty((n_rows, n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    for start, stop, rng in _chunks(root, n_rows):
        m = stop - start
        block = _feature_block(rng, kinds, m)
        logit = _structure(_informative(block, informative), design, 0.2)
        logit += noise * rng.standard_normal(m)
        X[start:stop] = block
        y[start:stop] = (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float64)
    return X, y


def _chunks(root: np.random.SeedSequence, n_rows: int) -> list[tuple[int, int, np.random.Generator]]:
    """The row ranges made at a time, each with its own generator (so a chunk needs no other)."""
    chunk_seeds = root.spawn((n_rows + _CHUNK - 1) // _CHUNK + 1)[1:]
    return [(start, min(start + _CHUNK, n_rows), np.random.default_rng(chunk_seeds[c]))
            for c, start in enumerate(range(0, n_rows, _CHUNK))]


def _feature_block(rng: np.random.Generator, kinds: np.ndarray, m: int) -> np.ndarray:
    """``m`` rows of float32 features: standard normal, heavy-tailed (``kinds == 1``) or
    uniform on 8 levels (``kinds == 2``)."""
    block = rng.standard_normal((m, kinds.shape[0]), dtype=np.float32)
    heavy = kinds == 1
    block[:, heavy] = np.abs(rng.standard_t(3, size=(m, int(heavy.sum())))).astype(np.float32)
    discrete = kinds == 2
    block[:, discrete] = rng.integers(0, 8, size=(m, int(discrete.sum()))).astype(np.float32) / 7.0
    return block


def _informative(block: np.ndarray, informative: np.ndarray) -> np.ndarray:
    """The informative columns of a block, standardised within the block."""
    Z = block[:, informative].astype(np.float64)
    return (Z - Z.mean(axis=0)) / (Z.std(axis=0) + 1e-12)


def _design(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A random function of 16 standardised features (see :func:`_structure`)."""
    coef = rng.normal(size=16)
    pairs = rng.choice(16, size=(8, 2))
    pair_coef = rng.normal(scale=0.8, size=8)
    thresholds = rng.normal(scale=0.5, size=16)
    return coef, pairs, pair_coef, thresholds


def _structure(Z: np.ndarray, design: tuple[np.ndarray, ...], offset: float = 0.0) -> np.ndarray:
    """Linear terms, pairwise products, thresholds and a sine of the 16 columns of ``Z``, plus ``offset``."""
    coef, pairs, pair_coef, thresholds = design
    out = Z @ coef * 0.6
    out += (Z[:, pairs[:, 0]] * Z[:, pairs[:, 1]]) @ pair_coef * 0.5
    out += ((Z > thresholds).astype(np.float64) - 0.5) @ coef[::-1] * 0.8
    out += np.sin(2.0 * Z[:, 0]) + offset
    return out


def make_dense_multiclass(
    n_rows: int = 400_000, n_features: int = 40, n_classes: int = 5, seed: int = 0, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Dense multiclass data (synthetic): features as :func:`make_dense_binary`'s, classes
    drawn from a softmax of nonlinear scores.

    Each class has its own random function of the same 16 informative features (linear
    terms, pairwise products, thresholds and a sine); the label is drawn with probabilities
    ``softmax(scores / noise)`` (the arg-max of the scores plus Gumbel noise of scale
    ``noise``), so classes overlap and the Bayes multi-log-loss is well above zero.

    Parameters
    ----------
    n_rows, n_features : int
        Size; ``n_features >= 16``.
    n_classes : int
        Number of classes K >= 2; labels are 0 .. K-1.
    seed : int
        Same seed, same data, byte for byte.
    noise : float
        Scale of the Gumbel noise (larger: classes harder to tell apart).

    Returns
    -------
    X : ndarray of float32, shape (n_rows, n_features)
    y : ndarray of float64 in {0, ..., n_classes - 1}, shape (n_rows,)
    """
    n_rows = _check_size("n_rows", n_rows)
    n_features = _check_size("n_features", n_features, 16)
    n_classes = _check_size("n_classes", n_classes, 2)
    root = np.random.SeedSequence(seed)
    design_rng = np.random.default_rng(root.spawn(1)[0])
    kinds = design_rng.integers(0, 3, size=n_features)
    informative = design_rng.choice(n_features, size=16, replace=False)
    designs = [_design(design_rng) for _ in range(n_classes)]
    X = np.empty((n_rows, n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    for start, stop, rng in _chunks(root, n_rows):
        m = stop - start
        block = _feature_block(rng, kinds, m)
        Z = _informative(block, informative)
        scores = np.column_stack([_structure(Z, design) for design in designs])
        scores += noise * rng.gumbel(size=(m, n_classes))
        X[start:stop] = block
        y[start:stop] = np.argmax(scores, axis=1).astype(np.float64)
    return X, y


def make_dense_regression(
    n_rows: int = 400_000, n_features: int = 40, seed: int = 0, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Dense regression data (synthetic): features as :func:`make_dense_binary`'s, the label a
    nonlinear function of 16 of them plus Gaussian noise.

    The function is :func:`make_dense_binary`'s kind (linear terms, pairwise products,
    thresholds and a sine; its variance is several times 1), the noise standard normal
    times ``noise``, so the best squared error is ``noise**2`` and boosting keeps improving
    for hundreds of iterations.

    Parameters
    ----------
    n_rows, n_features : int
        Size; ``n_features >= 16``.
    seed : int
        Same seed, same data, byte for byte.
    noise : float
        Standard deviation of the label noise.

    Returns
    -------
    X : ndarray of float32, shape (n_rows, n_features)
    y : ndarray of float64, shape (n_rows,)
    """
    n_rows = _check_size("n_rows", n_rows)
    n_features = _check_size("n_features", n_features, 16)
    root = np.random.SeedSequence(seed)
    design_rng = np.random.default_rng(root.spawn(1)[0])
    kinds = design_rng.integers(0, 3, size=n_features)
    informative = design_rng.choice(n_features, size=16, replace=False)
    design = _design(design_rng)
    X = np.empty((n_rows, n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    for start, stop, rng in _chunks(root, n_rows):
        m = stop - start
        block = _feature_block(rng, kinds, m)
        X[start:stop] = block
        y[start:stop] = _structure(_informative(block, informative), design) + noise * rng.standard_normal(m)
    return X, y
