"""Synthetic sparse learning-to-rank data shaped like Yahoo! LTR Set 1 (SYNTHETIC), as CSR.

Yahoo's data cannot be bundled or downloaded here; this generator reproduces what matters
for the sparse training path and for ranking gradients: about 24 documents per query
(Set 1: 473,134 training documents in 19,944 queries), 700 features with values in
[0, 1] of which most are zero for any one document (about 15% are stored), a quarter of
the features never set (Set 1 uses 519 of its 700), and graded labels 0-4 driven by a
nonlinear function of latent document factors plus query-level effects.  Whatever is
made with it is synthetic, and every figure made from it must say so.

The matrix is built as ``scipy.sparse.csr_matrix`` (float32 values, int32 column indices)
in two passes over fixed chunks of rows: the first counts each row's stored values and
draws the relevance, the second fills arrays allocated once at their final size, so peak
memory is the matrix plus one chunk.  The result depends on the seed and the arguments
only (fixed chunk size), and a train/test split is exactly a row slice of the whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .synthetic_ranking import RankingSplit, check_query_and_label_args, labels_from, query_sizes, relevance_of

#: Label shares for grades 0..4: most documents in the middle grades, few "perfect" (4).
#: Shaped after Yahoo Set 1's skew; an assumption, not its published shares.
YAHOO_LABEL_SHARES = (0.24, 0.37, 0.26, 0.09, 0.04)

_CHUNK_ROWS = 8192
_N_LATENT = 8
_DENSE_SHARE = 0.08  # features present in nearly every document
_UNUSED_SHARE = 0.25  # features never present


def _design(n_features: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per-feature presence rates, latent loadings and noise (the fixed 'feature design')."""
    kind = rng.random(n_features)
    presence = np.where(kind < _DENSE_SHARE, rng.uniform(0.85, 1.0, n_features),
                        rng.beta(0.6, 4.5, n_features))
    presence[(kind >= _DENSE_SHARE) & (kind < _DENSE_SHARE + _UNUSED_SHARE)] = 0.0
    informative = rng.random(n_features) < 0.6
    load = np.zeros((_N_LATENT, n_features), dtype=np.float32)
    cols = np.flatnonzero(informative)
    load[rng.integers(0, _N_LATENT, cols.size), cols] = rng.uniform(0.8, 1.6, cols.size)
    load[rng.integers(0, _N_LATENT, cols.size), cols] += rng.uniform(-0.5, 0.5, cols.size)
    # Informative sparse features are present more often for documents high on their factor
    # (a click or anchor-text feature exists mostly for relevant documents).
    tilt = np.where(informative & (kind >= _DENSE_SHARE), rng.uniform(0.3, 1.0, n_features), 0.0)
    tilt_factor = rng.integers(0, _N_LATENT, n_features)
    logit = np.log(np.clip(presence, 1e-12, None)) - np.log1p(-np.clip(presence, None, 1 - 1e-12))
    return {
        "presence": presence, "logit": logit.astype(np.float32), "load": load,
        "tilt": tilt.astype(np.float32), "tilt_factor": tilt_factor,
        "ctx_load": rng.normal(0.0, 0.4, (2, n_features)).astype(np.float32),
        "noise": rng.uniform(0.2, 0.8, n_features).astype(np.float32),
    }


def _chunk_mask(design: dict[str, np.ndarray], z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which features each document of a chunk has (boolean, rows x features)."""
    logit = design["logit"] + design["tilt"] * z[:, design["tilt_factor"]]
    mask = rng.random(logit.shape, dtype=np.float32) < 1.0 / (1.0 + np.exp(-logit))
    mask[:, design["presence"] == 0.0] = False
    return mask


def make_yahoo_like(
    n_docs: int = 590_000,
    n_features: int = 700,
    seed: int = 0,
    *,
    mean_query_size: float = 24.0,
    query_size_sigma: float = 0.6,
    max_query_size: int = 140,
    label_shares: tuple[float, ...] = YAHOO_LABEL_SHARES,
    noise: float = 0.7,
) -> RankingSplit:
    """Generate Yahoo-LTR-like sparse ranking data (SYNTHETIC).

    Generative model (all draws from ``numpy.random.default_rng`` seeded by ``seed``):

    * **Queries**: sizes log-normal with mean ``mean_query_size`` and log-sd
      ``query_size_sigma``, clipped to ``[1, max_query_size]``, the last one trimmed to hit
      ``n_docs``; each query draws a relevance offset ``u_q ~ N(0, 0.5^2)``, a weight
      ``w_q ~ U(0.5, 1.5)`` of the main factor and a 2-d context ``c_q ~ N(0, I)``.
    * **Documents**: 8 latent factors ``z ~ N(0, I)``; relevance
      ``w_q z0 + 0.8 tanh(1.5 z1) + 0.5 z2 z3 + 0.6 max(z4, 0) - 0.4 |z5| + 0.3 z6 c_q0 + u_q
      + noise * N(0, 1)``, cut at the global quantiles of ``label_shares`` into labels.
    * **Features**: 8% nearly always present, 25% never, the rest present with a
      Beta(0.6, 4.5) rate (mean ~12%); 60% of the features load on one or two factors (and
      the sparse ones among them are present more often when their factor is high), the
      others are noise.  A present value is ``sigmoid(loading . z + context + noise)`` in
      (0, 1), as Yahoo's normalised features; an absent one is 0 and is not stored.

    Parameters
    ----------
    n_docs : int, default=590_000
        Documents (rows); with ``test_size=0.2`` about 470k go to training, Set 1's size.
    n_features : int, default=700
        Columns, >= 20.
    seed : int, default=0
        Same seed and arguments, same data byte for byte.
    mean_query_size, query_size_sigma, max_query_size
        Query sizes (see above).
    label_shares : tuple of float, default=YAHOO_LABEL_SHARES
        Share of each label 0, 1, ...; normalised to sum to 1.
    noise : float, default=0.7
        Standard deviation of the relevance noise.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_docs, n_features), float32 with int32 indices
    y : ndarray of shape (n_docs,), int32 labels
    group : ndarray of shape (n_queries,), int64 query sizes
    """
    return _generate(n_docs, n_features, seed, None, mean_query_size, query_size_sigma, max_query_size,
                     label_shares, noise)[0]


def make_yahoo_like_split(
    n_docs: int = 590_000,
    n_features: int = 700,
    seed: int = 0,
    test_size: float = 0.2,
    **kwargs: float | int | tuple[float, ...],
) -> tuple[RankingSplit, RankingSplit]:
    """:func:`make_yahoo_like` split by whole queries into train and test, each built directly.

    The first ``1 - test_size`` share of the queries (independent of each other, so a
    random split) is the training data; both sides equal row slices of
    ``make_yahoo_like(n_docs, n_features, seed)``, without a whole matrix ever being copied.

    Returns
    -------
    (X_train, y_train, group_train), (X_test, y_test, group_test)
    """
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    options: dict[str, Any] = {"mean_query_size": 24.0, "query_size_sigma": 0.6, "max_query_size": 140,
               "label_shares": YAHOO_LABEL_SHARES, "noise": 0.7}
    unknown = set(kwargs) - set(options)
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}; accepted: {', '.join(options)}")
    options.update(kwargs)
    train, test = _generate(n_docs, n_features, seed, test_size, **options)
    return train, test


def _generate(n_docs: int, n_features: int, seed: int, test_size: float | None, mean_query_size: float,
              query_size_sigma: float, max_query_size: int, label_shares: tuple[float, ...],
              noise: float) -> list[RankingSplit]:
    """The data (one part), or its train and test parts split at a query boundary."""
    for name, value, low in (("n_docs", n_docs, 1), ("n_features", n_features, 20)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    shares = check_query_and_label_args(max_query_size, label_shares)

    setup_seq, chunk_seq = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(setup_seq)
    group = query_sizes(n_docs, mean_query_size, query_size_sigma, max_query_size, rng)
    nq = int(group.shape[0])
    u = rng.normal(0.0, 0.5, nq).astype(np.float32)
    w = rng.uniform(0.5, 1.5, nq).astype(np.float32)
    ctx = rng.normal(0.0, 1.0, (nq, 2)).astype(np.float32)
    design = _design(n_features, rng)
    doc_query = np.repeat(np.arange(nq, dtype=np.int64), group)
    n_chunks = -(-n_docs // _CHUNK_ROWS)
    chunk_seqs = [seq.spawn(2) for seq in chunk_seq.spawn(n_chunks)]  # (mask and factors, values)

    def factors(c: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
        crng = np.random.default_rng(chunk_seqs[c][0])
        lo, hi = c * _CHUNK_ROWS, min(n_docs, (c + 1) * _CHUNK_ROWS)
        z = crng.standard_normal((hi - lo, _N_LATENT), dtype=np.float32)
        return z, doc_query[lo:hi], crng

    # Pass 1: relevance and the number of stored values of every row.
    relevance = np.empty(n_docs, dtype=np.float32)
    row_nnz = np.empty(n_docs, dtype=np.int64)
    for c in range(n_chunks):
        z, q, crng = factors(c)
        lo = c * _CHUNK_ROWS
        relevance[lo:lo + z.shape[0]] = relevance_of(z, w[q], u[q], ctx[q, 0],
                                                     noise * crng.standard_normal(int(z.shape[0]), dtype=np.float32))
        row_nnz[lo:lo + z.shape[0]] = _chunk_mask(design, z, crng).sum(axis=1)
    y = labels_from(relevance, shares)
    del relevance

    if test_size is None:
        parts = [(0, n_docs, 0, nq)]
    else:
        if nq < 2:
            raise ValueError("too few queries to split; increase n_docs")
        n_train_q = min(max(1, int(round((1.0 - test_size) * nq))), nq - 1)
        cut = int(group[:n_train_q].sum())
        parts = [(0, cut, 0, n_train_q), (cut, n_docs, n_train_q, nq)]
    matrices = []
    for lo, hi, _, _ in parts:
        indptr = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(row_nnz[lo:hi], out=indptr[1:])
        if indptr[-1] < np.iinfo(np.int32).max:
            indptr = indptr.astype(np.int32)
        matrices.append((lo, hi, indptr, np.empty(int(indptr[-1]), dtype=np.float32),
                         np.empty(int(indptr[-1]), dtype=np.int32)))

    # Pass 2: the same masks again, and the values, written straight into their rows.
    for c in range(n_chunks):
        z, q, crng = factors(c)
        crng.standard_normal(z.shape[0], dtype=np.float32)  # the relevance noise of pass 1
        mask = _chunk_mask(design, z, crng)
        vrng = np.random.default_rng(chunk_seqs[c][1])
        pre = z @ design["load"] + ctx[q] @ design["ctx_load"]
        rows, cols = np.nonzero(mask)
        eps = vrng.standard_normal(rows.size, dtype=np.float32)
        values = 1.0 / (1.0 + np.exp(-(pre[rows, cols] + design["noise"][cols] * eps)))
        start = c * _CHUNK_ROWS
        for lo, hi, indptr, data, indices in matrices:
            a, b = max(lo, start), min(hi, start + z.shape[0])
            if a >= b:
                continue
            sel = slice(np.searchsorted(rows, a - start), np.searchsorted(rows, b - start))
            dst = slice(int(indptr[a - lo]), int(indptr[b - lo]))
            data[dst] = values[sel]
            indices[dst] = cols[sel]

    out = []
    for (lo, hi, indptr, data, indices), (_, _, qa, qb) in zip(matrices, parts, strict=True):
        X = sp.csr_matrix((data, indices, indptr), shape=(hi - lo, n_features), copy=False)
        out.append((X, y[lo:hi].copy() if len(parts) > 1 else y, group[qa:qb].copy()))
    return out
