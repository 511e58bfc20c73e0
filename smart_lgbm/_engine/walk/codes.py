"""Compact codes of the raw features for the walk: each value's place among LightGBM's bin bounds.

Walking the trees over the raw float features reads every row whole (row-major data):
on 720,000 x 136 float32 that is 392 MB per tree, and the walk is bound by memory
bandwidth.  Every numerical threshold LightGBM puts in a tree is one of the feature's bin
upper bounds (its ``BinMapper``), so a value only matters through its position among
those bounds.  :class:`CodeBook` reads the bounds of the training Dataset
(:func:`smart_lgbm._lightgbm.bin_mappers`) and :meth:`CodeBook.encode` stores, once per
run, every value as one byte, column-major; the walk then reads a block's byte of each
feature a node tests (:func:`smart_lgbm._engine.walk._kernels.walk_codes`), or, for trees of at most
64 leaves, of each feature the tree splits on (:mod:`smart_lgbm._engine.walk.bitmask`).

Exactness (the walk must add what ``Booster.predict(raw_score=True)`` adds):

* With ``T`` a feature's bin upper bounds in increasing order (``+inf`` included: a split
  at it sends every number left and NaN the default way) and ``t = T[k]`` a threshold,
  ``x <= t`` exactly when ``code(x) = #{j : T[j] < x} <= k``: numerical splits are decided
  exactly.
* NaN: missing type NaN gets its own code (:data:`NAN_CODE`), sent the default way;
  missing types None and Zero read NaN as 0, as LightGBM does, and so get the code of 0.
* Missing type Zero sends ``|x| <= kZeroThreshold`` the default way: those values read 0
  (dense and CSC input, as LightGBM's row functions drop them), and the code of 0 must
  hold nothing else: LightGBM's bins then have ``(-kZeroThreshold, kZeroThreshold]`` as a
  bin of its own.  When they do not (a feature with values of one sign only), or CSR input
  stores tiny non-zero values (LightGBM's CSR row function keeps them), the data is not
  coded and the engine walks the raw features.
* Categorical features, and features with more than 254 bounds below +inf (``max_bin``
  above 255), are not coded either (the raw walk decides them).

Memory: one byte per row and coded feature (LightGBM's own binned rows take the same);
sparse input is coded only while that is no more than the sparse matrix itself, or small
(:data:`MAX_SPARSE_CODE_BYTES`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numba
import numpy as np

from ... import _lightgbm
from . import _encode_kernels as _ek
from . import _kernels as _k
from . import bitmask as _bm
from . import _bitmask_kernels as _bk
from .forest import CHUNKS_PER_THREAD, Forest, _check_output
from .raw import RawFeatures

#: Code of NaN for features whose missing type is NaN.
NAN_CODE = _k.NAN_CODE
#: Largest number of bounds below +inf a coded feature may have (codes 0..254, 255 for NaN).
MAX_BOUNDS = 254
#: Sparse input is coded (as a dense byte matrix) up to this many bytes of codes, and
#: beyond while the codes take no more bytes than the sparse matrix itself; larger sparse
#: data is walked as it is.
MAX_SPARSE_CODE_BYTES = 64 << 20

_MISSING_NONE, _MISSING_ZERO, _MISSING_NAN = 0, 1, 2

#: Codes (one byte per row and feature, column-major): 64 rows read one cache line of
#: each feature a node of the block tests.
CODES_BLOCK_ROWS = 64
#: Rows per block of the bitmask walk (trees of at most 64 leaves): each of a tree's tables
#: is applied to a whole block, so larger blocks spread that loop's set-up over more rows
#: (docs/results/bench_bitmask_walk.md: 1,024 rows as fast as 4,096, 256 slower); the
#: block's masks, 8 KB, stay in L1.
BITMASK_BLOCK_ROWS = 1024


@dataclass(frozen=True, eq=False)
class BinCodes:
    """Every coded feature's code per row: ``codes[column, row]``, uint8."""

    codes: np.ndarray

    @property
    def num_rows(self) -> int:
        return int(self.codes.shape[1])


@dataclass(frozen=True, eq=False)
class CodedForest:
    """A :class:`~smart_lgbm._engine.walk.Forest`'s nodes for :func:`_k.walk_codes`.

    Per node: its test packed in one int64 ``info`` (:func:`_k.code_nodes`: the code column
    of its feature, ``tcode``, its threshold's position among the feature's bounds,
    ``miss``, the code sent the default way, :data:`_k.NO_MISS` for none, and
    ``go_default``, 1 when the default way is right) and its two children at ``child[2 * node]`` (left) and
    ``child[2 * node + 1]``; leaves are their own children.  ``bitmask``: the same trees as
    the bitmask walk's tables (:mod:`smart_lgbm._engine.walk.bitmask`), None when a tree has more
    than 64 leaves (the lockstep walk then walks them).
    """

    info: np.ndarray
    child: np.ndarray
    node_value: np.ndarray
    node_leaf: np.ndarray
    roots: np.ndarray
    depths: np.ndarray
    bitmask: _bm.BitmaskForest | None = None

    def with_leaf_values(self, forest: Forest) -> CodedForest:
        """This coded forest with the leaf values of ``forest``, the same trees with new leaf
        values (:meth:`Forest.with_leaf_values`): the nodes' tests and the bitmask tables
        depend on the splits only, so they are kept, not coded again."""
        bitmask = None if self.bitmask is None else self.bitmask.with_leaf_values(forest.leaf_values)
        return dataclasses.replace(self, node_value=forest.node_value, bitmask=bitmask)


class CodeBook:
    """How each feature's raw values become codes: LightGBM's bin bounds of the training data.

    Build it with :meth:`from_mappers`; None there means the data cannot be coded exactly.
    """

    def __init__(self, features: np.ndarray, bounds: list[np.ndarray], nan_codes: np.ndarray,
                 zero_codes: np.ndarray, num_features: int) -> None:
        self.features = features  # the coded features, in column order
        self.column_of_feature = np.full(num_features, -1, dtype=np.int32)
        self.column_of_feature[features] = np.arange(features.shape[0], dtype=np.int32)
        self.bounds = bounds
        self.flat_bounds = np.concatenate(bounds) if bounds else np.empty(0)
        self.lengths = np.array([b.shape[0] for b in bounds], dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.nan_codes = nan_codes  # NAN_CODE, or -1: NaN reads 0
        self.zero_codes = zero_codes  # code of 0.0 for missing type Zero, else NO_MISS
        self._padded: tuple[np.ndarray, np.ndarray] | None = None  # for the dense encoder, made on first use

    @classmethod
    def from_mappers(cls, mappers: list[_lightgbm.BinMapper | None]) -> CodeBook | None:
        """The code book of a Dataset's bin mappers, or None when some used feature cannot
        be coded exactly (categorical, too many bins, a Zero-missing feature whose 0 does
        not have a bin of its own)."""
        features, bounds, nan_codes, zero_codes = [], [], [], []
        k_zero = _k.K_ZERO_THRESHOLD
        for feature, mapper in enumerate(mappers):
            if mapper is None:
                continue  # a feature LightGBM does not use: no tree splits on it
            if mapper.categorical:
                return None
            upper = mapper.upper_bounds
            if mapper.missing_type == _MISSING_NAN:
                upper = upper[:-1]  # the last bin holds NaN; its bound means nothing
            finite = upper[~np.isnan(upper)]  # +inf stays: a split at it sends NaN alone the default way
            # codes run up to len(finite), or len(finite) - 1 when the last bound is +inf
            if finite.shape[0] - (finite.shape[0] > 0 and finite[-1] == np.inf) > MAX_BOUNDS or np.any(
                    np.diff(finite) <= 0):
                return None
            zero_code = _k.NO_MISS
            if mapper.missing_type == _MISSING_ZERO:
                below = np.searchsorted(finite, 0.0)
                # 0's code must hold 0 alone: the bin (-kZeroThreshold, kZeroThreshold]
                if not (0 < below < finite.shape[0] and finite[below - 1] == -k_zero and finite[below] == k_zero):
                    return None
                zero_code = int(below)
            features.append(feature)
            bounds.append(finite.astype(np.float64))
            nan_codes.append(NAN_CODE if mapper.missing_type == _MISSING_NAN else -1)
            zero_codes.append(zero_code)
        return cls(np.array(features, dtype=np.int32), bounds, np.array(nan_codes, dtype=np.int64),
                   np.array(zero_codes, dtype=np.int64), len(mappers))

    def encode(self, raw: RawFeatures) -> BinCodes | None:
        """The codes of ``raw``'s rows, or None when they cannot be coded exactly or cheaply
        (sparse data above :data:`MAX_SPARSE_CODE_BYTES`, CSR input storing tiny non-zero
        values, a CSC matrix that is not canonical)."""
        if raw.num_features < self.column_of_feature.shape[0]:
            return None
        n = raw.num_rows
        if raw.layout == "dense":
            if self._padded is None:
                self._padded = _ek.padded_bounds(self.bounds)
            codes = np.empty((self.features.shape[0], n), dtype=np.uint8)
            _ek.encode_dense(raw.dense, self.features, *self._padded, self.nan_codes, _k.K_ZERO_THRESHOLD, codes)
            return BinCodes(codes)
        indptr, indices, values = raw.sparse_parts()
        raw_bytes = indptr.nbytes + indices.nbytes + values.nbytes
        if self.features.shape[0] * n > max(MAX_SPARSE_CODE_BYTES, raw_bytes):
            return None
        codes = np.empty((self.features.shape[0], n), dtype=np.uint8)
        is_csc = raw.layout == "csc"
        if is_csc and not _strictly_sorted_segments(indptr, indices):
            return None  # duplicates or unsorted columns: LightGBM's column reader is not a plain scatter
        column_of_feature = np.full(raw.num_features, -1, dtype=np.int32)
        column_of_feature[: self.column_of_feature.shape[0]] = self.column_of_feature
        ok = _k.encode_sparse(is_csc, n, raw.indptr, raw.indices, raw.values, column_of_feature, self.flat_bounds,
                              self.starts, self.lengths, self.nan_codes, codes)
        return BinCodes(codes) if ok else None

    def coded_forest(self, forest: Forest) -> CodedForest:
        """``forest``'s nodes in codes.

        Raises
        ------
        RuntimeError
            A numerical threshold that is not one of its feature's bin bounds, or a split
            on a feature the book does not code (neither happens with trees LightGBM grew
            on the Dataset the book was read from).
        """
        n = forest.threshold.shape[0]
        info, child = np.empty(n, np.int64), np.empty(2 * n, np.int32)
        bad, reason = _k.code_nodes(
            forest.feature, forest.threshold, forest.flags, forest.left, forest.right, self.column_of_feature,
            self.flat_bounds, self.starts, self.lengths, self.nan_codes, self.zero_codes, info, child)
        if bad >= 0:
            feature, threshold = int(forest.feature[bad]), float(forest.threshold[bad])
            raise RuntimeError({
                _k.NOT_A_BOUND: f"a split of feature {feature} at {threshold!r} is not on one of LightGBM's bin "
                                "bounds that the bin codes hold",
                _k.NAN_WITHOUT_NAN_BIN: f"feature {feature}: a NaN-missing split on a feature binned without NaN",
                _k.ZERO_WITHOUT_ZERO_BIN: f"feature {feature}: a zero-missing split on a feature binned without it",
                _k.PLAIN_ON_NAN_BIN: f"feature {feature}: a split without missing values on a NaN-binned feature",
            }[reason])
        bitmask = _bm.bitmask_forest(info, child, forest.node_value, forest.node_leaf, forest.roots,
                                     self.features.shape[0])
        return CodedForest(info, child, forest.node_value, forest.node_leaf, forest.roots, forest.depths, bitmask)


def _strictly_sorted_segments(indptr: np.ndarray, indices: np.ndarray) -> bool:
    """Whether the indices of every segment ``indptr[j]:indptr[j + 1]`` strictly increase."""
    if indices.shape[0] < 2:
        return True
    increasing = np.diff(indices.astype(np.int64)) > 0
    starts = np.asarray(indptr[1:-1], dtype=np.int64) - 1  # a diff across a segment boundary
    starts = starts[(starts >= 0) & (starts < increasing.shape[0])]
    increasing[starts] = True
    return bool(increasing.all())


def add_coded_outputs(codes: BinCodes, forest: CodedForest, out: np.ndarray, leaves: np.ndarray | None = None,
                      known: tuple[np.ndarray, np.ndarray] | None = None, *, rows_checked: bool = False) -> None:
    """:func:`add_outputs` over bin codes (:mod:`smart_lgbm._engine.walk.codes`): the same doubles
    added, from one byte per row and feature instead of the raw values.

    ``known``: ``(rows, outputs)``, rows (sorted, unique int32) whose outputs (shape
    ``(len(rows), K)``) are known already (the engine reads the sampled rows' from
    LightGBM's tree learner): they are added to ``out`` as they are, and those rows are
    not walked (their ``leaves`` are left alone).  ``rows_checked``: the caller has already
    checked that those rows are sorted, unique and in range (the engine's sample, checked
    once per iteration by :func:`smart_lgbm._engine.draw.check_sample`); that O(rows) check is
    then not repeated.
    """
    shape = (codes.num_rows, forest.roots.shape[0])
    _check_output("out", out, np.float64, shape)
    if leaves is not None:
        _check_output("leaves", leaves, np.int32, shape)
    rows, outputs = (_NO_ROWS, np.empty((0, shape[1]))) if known is None else known
    if not (isinstance(rows, np.ndarray) and rows.dtype == np.int32 and rows.ndim == 1):
        raise TypeError("known rows must be a 1-D int32 numpy array of sorted row indices")
    if not (isinstance(outputs, np.ndarray) and outputs.dtype == np.float64
            and outputs.shape == (rows.shape[0], shape[1])):
        raise TypeError(f"known outputs must be a float64 array of shape ({rows.shape[0]}, {shape[1]})")
    if not rows_checked and rows.shape[0] and (rows[0] < 0 or rows[-1] >= shape[0] or np.any(rows[1:] <= rows[:-1])):
        # (the kernel would walk such rows too and add their known outputs to none)
        raise ValueError(f"known rows must be sorted, unique and in [0, {shape[0]})")
    if codes.num_rows == 0:
        return
    want_leaves = leaves is not None
    if leaves is None:
        leaves = np.empty((0, shape[1]), dtype=np.int32)
    chunks = CHUNKS_PER_THREAD * numba.get_num_threads()
    bm = forest.bitmask
    if bm is not None:
        _bk.walk_bitmask(codes.codes, BITMASK_BLOCK_ROWS, chunks, bm.tstart, bm.tcol, bm.table, bm.leaf_value,
                         bm.leaf_index, rows, outputs, out, leaves, want_leaves)
        return
    _k.walk_codes(codes.codes, CODES_BLOCK_ROWS, chunks, forest.info, forest.child, forest.node_value,
                  forest.node_leaf, forest.roots, forest.depths, rows, outputs, out, leaves, want_leaves)


_NO_ROWS = np.empty(0, dtype=np.int32)
