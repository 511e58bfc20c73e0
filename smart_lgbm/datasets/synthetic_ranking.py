"""Synthetic learning-to-rank data shaped like MSLR-WEB10K/30K, for benchmarks and tests.

Real MSLR data cannot be bundled; this generator reproduces what matters for timing and
for the behaviour of ranking gradients: ~120 documents per query with a heavy-tailed size
distribution, 136 dense features of mixed kinds (real-valued scores, integer counts,
bounded ratios, query-level constants, pure noise), and graded labels 0-4 skewed like
MSLR (about 52% / 32% / 13% / 2% / 1%), driven by a nonlinear function of the features
plus query-level effects.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

RankingSplit = tuple[np.ndarray, np.ndarray, np.ndarray]

#: MSLR-WEB10K label shares for labels 0..4 (rounded).
MSLR_LABEL_SHARES = (0.52, 0.32, 0.13, 0.02, 0.01)

# Fixed so that the data depend on the seed only, never on memory-related choices.
_CHUNK_ROWS = 1 << 16
_N_LATENT = 8
_N_QUERY_FEATURES = 3


def query_sizes(n_docs: int, mean_size: float, size_sigma: float, max_size: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Log-normal query sizes (mean ``mean_size`` before clipping to ``[1, max_size]``)."""
    mu = np.log(mean_size) - size_sigma**2 / 2.0
    sizes: list[np.ndarray] = []
    total = 0
    while total < n_docs:
        batch = np.clip(np.rint(rng.lognormal(mu, size_sigma, 4096)), 1, max_size).astype(np.int64)
        sizes.append(batch)
        total += int(batch.sum())
    out = np.concatenate(sizes)
    cum = np.cumsum(out)
    last = int(np.searchsorted(cum, n_docs))
    out = out[: last + 1].copy()
    out[-1] -= int(cum[last]) - n_docs  # trim the last query so the sizes sum to n_docs
    return out[out > 0]


def check_query_and_label_args(max_query_size: int, label_shares: tuple[float, ...]) -> np.ndarray:
    """Validate the query-size cap and the label shares of a ranking generator; the shares as an array."""
    if not 1 <= max_query_size <= 10_000:
        raise ValueError(f"max_query_size must be in [1, 10000] (LightGBM's limit), got {max_query_size}")
    shares = np.asarray(label_shares, dtype=np.float64)
    if shares.ndim != 1 or shares.shape[0] < 2 or np.any(shares < 0) or shares.sum() <= 0:
        raise ValueError(f"label_shares must be >= 2 non-negative numbers, got {label_shares!r}")
    return shares


def relevance_of(z: np.ndarray, w_q: np.ndarray, u_q: np.ndarray, context_q: np.ndarray,
                 noise: np.ndarray) -> np.ndarray:
    """The latent relevance of documents with factors ``z`` in queries with the given effects.

    ``w_q z0 + 0.8 tanh(1.5 z1) + 0.5 z2 z3 + 0.6 max(z4, 0) - 0.4 |z5| + 0.3 z6 c_q + u_q
    + noise``, the model both synthetic ranking generators share (per-document query
    effects ``w_q``, ``u_q``, ``context_q`` and the drawn, scaled ``noise``).
    """
    return (
        w_q * z[:, 0]
        + 0.8 * np.tanh(1.5 * z[:, 1])
        + 0.5 * z[:, 2] * z[:, 3]
        + 0.6 * np.maximum(z[:, 4], 0.0)
        - 0.4 * np.abs(z[:, 5])
        + 0.3 * z[:, 6] * context_q
        + u_q
        + noise
    )


def labels_from(relevance: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Graded labels: ``relevance`` cut at its global quantiles of the label ``shares``."""
    cuts = np.quantile(relevance, np.cumsum(shares / shares.sum())[:-1])
    return np.searchsorted(cuts, relevance, side="right").astype(np.int32)


def make_mslr_like(
    n_docs: int = 720_000,
    n_features: int = 136,
    seed: int = 0,
    *,
    mean_query_size: float = 120.0,
    query_size_sigma: float = 0.8,
    max_query_size: int = 1_000,
    label_shares: tuple[float, ...] = MSLR_LABEL_SHARES,
    noise: float = 0.7,
) -> RankingSplit:
    """Generate an MSLR-like ranking data set.

    Generative model (all draws from ``numpy.random.default_rng`` seeded by ``seed``):

    * **Queries**: sizes log-normal with mean ``mean_query_size`` and log-sd
      ``query_size_sigma`` (0.8: median ~87, 1% of queries above ~600 documents),
      clipped to ``[1, max_query_size]``; the last query is trimmed to hit ``n_docs``.
      Each query ``q`` draws a relevance offset ``u_q ~ N(0, 0.6^2)`` (some queries have
      many relevant documents, some none), a weight ``w_q ~ U(0.5, 1.5)`` of the main
      relevance factor, and a 2-d context ``c_q ~ N(0, I)``.
    * **Documents**: 8 latent factors ``z ~ N(0, I)``. Relevance is
      ``r = w_q z0 + 0.8 tanh(1.5 z1) + 0.5 z2 z3 + 0.6 max(z4, 0) - 0.4 |z5|
      + 0.3 z6 c_q0 + u_q + noise * N(0, 1)``; labels cut ``r`` at the global quantiles of
      ``label_shares`` (so label frequencies match them to within a document).
    * **Features**: the last 3 are query-level (``c_q0``, a noisy ``u_q``, log query
      size). Of the others, 70% are informative: a random mix of two latent factors
      (redundant families, like MSLR's per-stream copies of one feature), a query
      context shift and noise, passed through one of four transforms in turn: identity,
      integer count ``floor(exp(x))``, ratio ``sigmoid(x)``, positive score
      ``softplus(2x)``. The remaining 30% are noise with a query-level shift.

    Memory: ``X`` is filled in float32 chunks of 65,536 rows, so peak memory is ``X``
    itself (``4 * n_docs * n_features`` bytes; 1.25 GB for 2.3M x 136) plus a few tens of
    MB.

    Parameters
    ----------
    n_docs : int, default=720_000
        Number of documents (rows).
    n_features : int, default=136
        Number of features, >= 4.
    seed : int, default=0
        Seed; the output depends on it and on the other arguments only.
    mean_query_size, query_size_sigma, max_query_size
        Query-size distribution (see above).
    label_shares : tuple of float, default=MSLR_LABEL_SHARES
        Share of each label 0, 1, ...; normalised to sum to 1.
    noise : float, default=0.7
        Standard deviation of the relevance noise (higher: lower attainable NDCG).

    Returns
    -------
    X : ndarray of shape (n_docs, n_features), float32
    y : ndarray of shape (n_docs,), int32
    group : ndarray of shape (n_queries,), int64
        Query sizes; queries are contiguous and independent of each other.
    """
    if n_docs < 1:
        raise ValueError(f"n_docs must be >= 1, got {n_docs}")
    if n_features < _N_QUERY_FEATURES + 1:
        raise ValueError(f"n_features must be >= {_N_QUERY_FEATURES + 1}, got {n_features}")
    shares = check_query_and_label_args(max_query_size, label_shares)

    master = np.random.SeedSequence(seed)
    setup_seq, chunk_seq = master.spawn(2)
    rng = np.random.default_rng(setup_seq)

    group = query_sizes(n_docs, mean_query_size, query_size_sigma, max_query_size, rng)
    nq = int(group.shape[0])
    u = rng.normal(0.0, 0.6, nq).astype(np.float32)
    w = rng.uniform(0.5, 1.5, nq).astype(np.float32)
    ctx = rng.normal(0.0, 1.0, (nq, 2)).astype(np.float32)
    qsize_feature = np.log(group).astype(np.float32)

    # Feature design: loadings on latent factors and on the query context.
    n_doc_features = n_features - _N_QUERY_FEATURES
    n_informative = int(round(0.7 * n_doc_features))
    load = np.zeros((_N_LATENT, n_doc_features), dtype=np.float32)
    primary = rng.integers(0, _N_LATENT, n_informative)
    secondary = rng.integers(0, _N_LATENT, n_informative)
    cols = np.arange(n_informative)
    load[primary, cols] += rng.uniform(0.6, 1.2, n_informative).astype(np.float32)
    load[secondary, cols] += rng.uniform(-0.4, 0.4, n_informative).astype(np.float32)
    ctx_load = rng.normal(0.0, 0.5, (2, n_doc_features)).astype(np.float32)
    noise_sd = np.ones(n_doc_features, dtype=np.float32)
    noise_sd[:n_informative] = rng.uniform(0.3, 1.0, n_informative).astype(np.float32)
    kind = np.full(n_doc_features, -1)
    kind[:n_informative] = np.arange(n_informative) % 4

    X = np.empty((n_docs, n_features), dtype=np.float32)
    relevance = np.empty(n_docs, dtype=np.float32)
    doc_query = np.repeat(np.arange(nq, dtype=np.int64), group)
    n_chunks = -(-n_docs // _CHUNK_ROWS)
    for c, seq in enumerate(chunk_seq.spawn(n_chunks)):
        crng = np.random.default_rng(seq)
        lo, hi = c * _CHUNK_ROWS, min(n_docs, (c + 1) * _CHUNK_ROWS)
        m = hi - lo
        q = doc_query[lo:hi]
        z = crng.standard_normal((m, _N_LATENT), dtype=np.float32)
        cq = ctx[q]
        pre = z @ load
        pre += cq @ ctx_load
        pre += crng.standard_normal((m, n_doc_features), dtype=np.float32) * noise_sd
        out = X[lo:hi]
        out[:, :n_doc_features] = pre
        for k, fn in enumerate((_identity, _count, _ratio, _score)):
            idx = np.flatnonzero(kind == k)
            if idx.size:
                out[:, idx] = fn(pre[:, idx])
        out[:, n_doc_features] = cq[:, 0]
        out[:, n_doc_features + 1] = u[q] + crng.normal(0.0, 0.3, m).astype(np.float32)
        out[:, n_doc_features + 2] = qsize_feature[q]
        relevance[lo:hi] = relevance_of(z, w[q], u[q], cq[:, 0], noise * crng.standard_normal(m, dtype=np.float32))
    return X, labels_from(relevance, shares), group


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _count(x: np.ndarray) -> np.ndarray:
    # Integer term-frequency-like counts (MSLR has many integer features).
    return np.floor(np.exp(np.minimum(x, 8.0)))


def _ratio(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _score(x: np.ndarray) -> np.ndarray:
    # BM25-like positive score.
    return np.logaddexp(0.0, 2.0 * x)


def split_by_query(n_queries: int, test_size: float, seed: int | None) -> np.ndarray:
    """Boolean mask over queries marking a random ``test_size`` share as test (>= 1 each side)."""
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    if n_queries < 2:
        raise ValueError("need at least 2 queries to split by query")
    n_test = min(max(1, int(round(test_size * n_queries))), n_queries - 1)
    mask = np.zeros(n_queries, dtype=bool)
    mask[np.random.default_rng(seed).choice(n_queries, n_test, replace=False)] = True
    return mask


def train_test_split_by_query(
    X: np.ndarray | sp.spmatrix,
    y: np.ndarray,
    group: np.ndarray,
    test_size: float = 0.2,
    seed: int | None = 0,
) -> tuple[tuple[Any, np.ndarray, np.ndarray], tuple[Any, np.ndarray, np.ndarray]]:
    """Split ranking data into train and test by whole queries (random, seeded).

    Queries keep their relative order and their documents' order on each side.

    Returns
    -------
    (X_train, y_train, group_train), (X_test, y_test, group_test)
    """
    group = np.asarray(group, dtype=np.int64)
    if int(group.sum()) != X.shape[0] or np.shape(y) != (X.shape[0],):
        raise ValueError("group must sum to the number of rows of X, and y must have one entry per row")
    test_q = split_by_query(group.shape[0], test_size, seed)
    test_rows = np.repeat(test_q, group)
    out = []
    for rows, q in ((~test_rows, ~test_q), (test_rows, test_q)):
        idx = np.flatnonzero(rows)
        out.append((X[idx], np.asarray(y)[idx], group[q]))
    return out[0], out[1]


def make_mslr_like_split(
    n_docs: int = 720_000,
    n_features: int = 136,
    seed: int = 0,
    test_size: float = 0.2,
    **kwargs: Any,
) -> tuple[RankingSplit, RankingSplit]:
    """:func:`make_mslr_like` split into train and test by whole queries, without copying.

    Queries are generated independently, so the first ``1 - test_size`` share of them is
    a random split already; train and test are row slices (views) of one array.

    Returns
    -------
    (X_train, y_train, group_train), (X_test, y_test, group_test)
    """
    X, y, group = make_mslr_like(n_docs, n_features, seed, **kwargs)
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    if group.shape[0] < 2:
        raise ValueError("too few queries to split; increase n_docs")
    n_train_q = min(max(1, int(round((1.0 - test_size) * group.shape[0]))), group.shape[0] - 1)
    cut = int(group[:n_train_q].sum())
    return (X[:cut], y[:cut], group[:n_train_q]), (X[cut:], y[cut:], group[n_train_q:])
