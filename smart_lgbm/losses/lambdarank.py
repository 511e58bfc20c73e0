"""LambdaRank / LambdaMART for NDCG, exactly LightGBM's ``objective="lambdarank"``.

Gradients and hessians are bit-identical to LightGBM 4.x ``LambdarankNDCG`` (float32
values, written as such by ``compute_gradients`` and widened to float64 by
``gradient_hessian``), so boosting with this loss fits the same trees as stock
LightGBM; see :mod:`smart_lgbm.losses._lambdarank_kernels` for the details that make
that hold (stable sort, sigmoid lookup table, float32 accumulation order).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from ._ranking import check_group, check_label_gain, check_ranking_labels
from . import _lambdarank_kernels as _k
from .base import Loss, Target

#: Truncation level used by :meth:`LambdaRank.plain`: LightGBM's largest ``int``, so every
#: document of every query (LightGBM caps queries at 10,000 rows) starts pairs and the
#: max DCG runs over the whole query.
NO_TRUNCATION = 2**31 - 1

# Queries are split into at most this many blocks of similar pair cost, handed to the
# threads one block at a time (numba.parallel_chunksize(1)), so threads stay balanced when
# query sizes vary by orders of magnitude (MSLR: 1 to 1,000+) or a core is shared with
# other work -- the role of LightGBM's OpenMP schedule(guided).
_MAX_CHUNKS = 256

_sigmoid_tables: dict[float, tuple[np.ndarray, float, float, float]] = {}
_discount: np.ndarray = np.empty(0)


def _sigmoid_table(sigmoid: float) -> tuple[np.ndarray, float, float, float]:
    """LightGBM's sigmoid lookup table for this ``sigmoid`` (8 MiB, built once per value)."""
    if sigmoid not in _sigmoid_tables:
        _sigmoid_tables[sigmoid] = _k.sigmoid_table(sigmoid, _k.SIGMOID_BINS)
    return _sigmoid_tables[sigmoid]


def _discounts(n: int) -> np.ndarray:
    """``1 / log2(2 + i)`` for at least ``n`` positions (grown on demand, shared)."""
    global _discount
    if _discount.shape[0] < n:
        _discount = _k.discount_table(max(n, 10_000))
    return _discount


def _cost_chunks(sizes: np.ndarray, truncation: int) -> np.ndarray:
    """Query indices ``[0, ..., n_queries]`` cutting the queries into blocks of similar cost."""
    nq = sizes.shape[0]
    # Pairs started by the top min(truncation, size - 1) documents, plus the sort.
    cost = np.minimum(sizes - 1, truncation).astype(np.float64) * sizes + sizes
    cum = np.cumsum(cost)
    n_chunks = min(nq, _MAX_CHUNKS)
    cuts = np.searchsorted(cum, np.linspace(0.0, cum[-1], n_chunks + 1)[1:-1], side="right")
    return np.unique(np.concatenate(([0], cuts, [nq]))).astype(np.int64)


class _KeptOrders:
    """Each query's document order from the last gradient call on one :class:`Target`.

    Lives in ``target.cache``, so it belongs to one training run (the engine and
    :class:`~smart_lgbm.SmartObjective` each make their own Target per training set) and
    never outlives it.  Gradients do not depend on it: the kernel's repair sorts on a
    strict total order (score descending, position ascending) and falls back to a fresh
    sort per query when the kept order is far from sorted (scores that do not come from
    the previous iteration), so a stale or foreign order costs time, never exactness.
    """

    __slots__ = ("orders", "filled")

    def __init__(self, n: int) -> None:
        self.orders = np.empty(n, dtype=np.int32)
        self.filled = False


def _kept_orders(target: Target) -> _KeptOrders:
    kept = target.cache.get("lambdarank_orders")
    if kept is None:
        kept = target.cache["lambdarank_orders"] = _KeptOrders(target.num_rows)
    return kept


class LambdaRank(Loss, kernels={"gradient_hessian": "_gradient_kernel", "loss": "_loss_kernel"}):
    """LambdaRank with NDCG (LambdaMART), identical to LightGBM's ``lambdarank`` objective.

    For each query, documents are sorted by score (descending, ties in input order).
    Every pair of documents with different labels in which the better-*ranked* document
    sits at a position below ``truncation_level`` contributes, with ``hi`` the document
    of higher label, ``delta = s_hi - s_lo`` and
    ``dNDCG = (gain_hi - gain_lo) * |1/log2(2+r_hi) - 1/log2(2+r_lo)| / maxDCG@truncation_level``
    (divided further by ``0.01 + |delta|`` when ``norm`` and the query's scores are not all
    equal), ``rho = 1 / (1 + exp(sigmoid * delta))``:
    ``g_lo += sigmoid * dNDCG * rho``, ``g_hi -= sigmoid * dNDCG * rho``,
    ``h_lo, h_hi += sigmoid**2 * dNDCG * rho * (1 - rho)``.
    With ``norm``, a query's g and h are scaled by ``log2(1 + S) / S``, ``S`` the sum of
    ``2 * sigmoid * dNDCG * rho`` over its pairs. Instance weights multiply g and h.
    Queries of one document, or whose documents all share a label, or without relevant
    documents (maxDCG = 0) get zero gradients.

    Exactness: ``rho`` is read from LightGBM's own lookup table (2**20 bins over
    ``[-25/sigmoid, 25/sigmoid)``, rebuilt here entry for entry) rather than computed with
    ``exp``, and sums are float32 in LightGBM's order, so gradients equal LightGBM's
    bit for bit and stock and plugin boosting fit identical trees. The table's resolution
    (about 5e-5 in ``delta``) is far below anything that matters for the fit.

    Parameters
    ----------
    sigmoid : float, default=1.0
        LightGBM's ``sigmoid``; must be > 0.
    label_gain : sequence of float, optional
        Gain of each integer label; default ``2**l - 1`` for ``l = 0..30``.
    truncation_level : int, default=30
        LightGBM's ``lambdarank_truncation_level``: only pairs whose better-ranked
        document is among the top ``truncation_level`` count, and maxDCG is taken at it.
    norm : bool, default=True
        LightGBM's ``lambdarank_norm``.

    Notes
    -----
    Differences from LightGBM: queries longer than 10,000 documents are accepted (LightGBM
    refuses them); position-bias correction (``position`` in LightGBM's Dataset) is not
    supported.
    """

    lightgbm_objective = "lambdarank"
    default_metric = "ndcg"
    needs_group = True

    def __init__(
        self,
        sigmoid: float = 1.0,
        label_gain: Sequence[float] | None = None,
        truncation_level: int = 30,
        norm: bool = True,
    ) -> None:
        if isinstance(sigmoid, bool) or not isinstance(sigmoid, (int, float, np.floating)) or not sigmoid > 0:
            raise ValueError(f"sigmoid must be a positive number, got {sigmoid!r}")
        if isinstance(truncation_level, bool) or not isinstance(truncation_level, (int, np.integer)):
            raise TypeError(f"truncation_level must be an int, got {truncation_level!r}")
        if not 1 <= truncation_level <= NO_TRUNCATION:
            raise ValueError(f"truncation_level must be in [1, {NO_TRUNCATION}], got {truncation_level}")
        self.sigmoid = float(sigmoid)
        self.label_gain = None if label_gain is None else check_label_gain(label_gain).tolist()
        self.truncation_level = int(truncation_level)
        self.norm = bool(norm)

    @classmethod
    def plain(cls, sigmoid: float = 1.0, label_gain: Sequence[float] | None = None) -> LambdaRank:
        """The paper's plain LambdaRank: no normalisation, no truncation (full-query NDCG)."""
        return cls(sigmoid=sigmoid, label_gain=label_gain, truncation_level=NO_TRUNCATION, norm=False)

    @property
    def gains(self) -> np.ndarray:
        """Label gains in effect (``label_gain`` or LightGBM's default)."""
        return check_label_gain(self.label_gain)

    def lightgbm_params(self) -> dict[str, Any]:
        return {
            "objective": "lambdarank",
            "sigmoid": self.sigmoid,
            "label_gain": self.gains.tolist(),
            "lambdarank_truncation_level": self.truncation_level,
            "lambdarank_norm": self.norm,
        }

    def validate(self, target: Target) -> None:
        self._prepared(target)

    def _prepared(self, target: Target) -> dict[str, Any]:
        """Validated, cached per-target arrays for these gains and this truncation level.

        Cached in ``target.cache``, keyed by gains and truncation level (the sigmoid and
        ``norm`` do not enter), on the understanding that a Target's label, weight and
        group never change after creation.
        """
        gains = self.gains
        key = ("lambdarank", self.truncation_level, gains.tobytes())
        prep = target.cache.get(key)
        if prep is not None:
            return prep
        n = target.num_rows
        sizes = check_group(target.group, n)
        labels = check_ranking_labels(target.label, gains.shape[0])
        if target.weight is None:
            weight32 = np.empty(0, dtype=np.float32)
        else:
            w = np.asarray(target.weight)
            if w.shape != (n,):
                raise ValueError(f"weight must have shape ({n},), got {w.shape}")
            # LightGBM holds weights as float32 and multiplies float32 lambdas by them.
            weight32 = np.ascontiguousarray(w, dtype=np.float32)
        boundaries = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        discount = _discounts(int(sizes.max()))
        prep = {
            "labels": labels,
            "gains": gains,
            "boundaries": boundaries,
            "discount": discount,
            "inv_max_dcg": _k.inverse_max_dcgs(labels, boundaries, gains, discount, self.truncation_level),
            "weight32": weight32,
            "chunks": _cost_chunks(sizes, self.truncation_level),
        }
        target.cache[key] = prep
        return prep

    def _scores(self, raw: np.ndarray, target: Target) -> np.ndarray:
        score = np.ascontiguousarray(raw, dtype=np.float64)
        if score.shape != (target.num_rows,):
            raise ValueError(f"raw must have shape ({target.num_rows},), got {score.shape}")
        if np.isnan(score).any():
            raise ValueError("raw contains NaN scores")
        return score

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        grad = np.empty(target.num_rows, dtype=np.float32)
        hess = np.empty(target.num_rows, dtype=np.float32)
        self.compute_gradients(raw, target, grad, hess)
        return grad.astype(np.float64), hess.astype(np.float64)

    def _gradient_kernel(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        """LightGBM's float32 lambdas and hessians, written straight into ``grad`` and ``hess``."""
        prep = self._prepared(target)
        score = self._scores(raw, target)
        table, min_in, max_in, factor = _sigmoid_table(self.sigmoid)
        kept = _kept_orders(target)
        with numba.parallel_chunksize(1):
            _k.lambdarank_gradients_kept(
                score, prep["labels"], prep["gains"], prep["boundaries"], prep["inv_max_dcg"],
                prep["discount"], table, min_in, max_in, factor, self.sigmoid,
                self.truncation_level, self.norm, prep["weight32"], prep["chunks"],
                kept.orders, kept.filled, grad, hess,
            )
        kept.filled = True

    def loss(self, raw: np.ndarray, target: Target) -> np.ndarray:
        """Per-document share of the pairwise LambdaRank loss, instance weights applied.

        Over the same pairs the gradient uses, pair (hi, lo) costs
        ``|dNDCG| * log(1 + exp(-sigmoid * (s_hi - s_lo)))``, split half to each document,
        with the plain ``|dNDCG|`` (no ``norm`` score-distance division or query scaling).
        Only loss-based sampling uses it; ``gradient_hessian`` is not its derivative.
        """
        return super().loss(raw, target)

    def _loss_kernel(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        prep = self._prepared(target)
        score = self._scores(raw, target)
        with numba.parallel_chunksize(1):
            _k.lambdarank_pair_loss(
                score, prep["labels"], prep["gains"], prep["boundaries"], prep["inv_max_dcg"],
                prep["discount"], self.sigmoid, self.truncation_level, prep["chunks"], out,
            )
        if target.weight is not None:
            out *= target.weight


def warmup() -> float:
    """Compile (or load from numba's on-disk cache) the LambdaRank kernels; return seconds taken.

    Covers the gradient and per-row loss kernels and LightGBM's sigmoid table for
    ``sigmoid=1``. The first call in a fresh environment compiles (tens of seconds); later
    processes load the cache (well under 1 s). The ranking metrics have their own:
    :func:`smart_lgbm.metrics.ranking.warmup`.
    """
    t0 = time.perf_counter()
    target = Target(
        label=np.array([0.0, 2.0, 1.0, 0.0, 1.0]),
        weight=np.array([1.0, 0.5, 2.0, 1.0, 1.0]),
        group=np.array([3, 2]),
    )
    raw = np.array([0.1, -0.2, 0.3, 0.0, 0.0])
    loss = LambdaRank()
    loss.gradient_hessian(raw, target)
    loss.loss(raw, target)
    return time.perf_counter() - t0
