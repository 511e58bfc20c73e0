"""Compact codes of the raw features for the walk: each value's bin under LightGBM's bin mappers.

Walking the trees over the raw float features reads every row whole (row-major data):
on 720,000 x 136 float32 that is 392 MB per tree, and the walk is bound by memory
bandwidth.  Every numerical threshold LightGBM puts in a tree is one of the feature's bin
upper bounds (its ``BinMapper``), so a value only matters through its position among
those bounds; and a categorical split's categories are those of some of the feature's
bins, so a categorical value only matters through its bin.  :class:`CodeBook` reads the
bin mappers of the training Dataset (:func:`smart_lgbm._lightgbm.bin_mappers`) and
:meth:`CodeBook.encode` stores, once per run, every value as one byte (two for a
categorical feature of more than 256 bins), column-major; the walk then reads a block's
code of each feature a node tests (:func:`smart_lgbm._engine.walk._kernels.walk_codes`), or,
for trees of at most 64 leaves, of each feature the tree splits on
(:mod:`smart_lgbm._engine.walk.bitmask`).

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
* Categorical features (LightGBM 4.6-4.7, ``BinMapper::FindBin`` and ``ValueToBin``,
  ``Tree::CategoricalDecision``): bin 0 holds NaN, negative values and every category
  LightGBM gave no bin of its own (rare ones, and any the training data never had); bins 1,
  2, ... one category each.  A value's code is its bin
  (:func:`smart_lgbm._engine.walk._encode_kernels.category_bin`).  The predictor sends NaN,
  negative values and categories outside a node's bitset right; the bitset's categories
  are those of bins the tree learner chose (never bin 0), so a value goes left exactly
  when its bin's category is in the bitset, and a node's test is a bitset over codes
  (:func:`smart_lgbm._engine.walk._kernels.code_nodes`).  Up to 256 bins the codes are
  bytes; a feature of more bins (LightGBM gives a category its own bin while the bins
  hold less than 99% of the rows, past ``max_bin``) is coded in two bytes, up to 65,536
  bins.  One-hot splits (``max_cat_to_onehot``) are bitsets of one category.
* Numerical features with more than 254 bounds below +inf (``max_bin`` above 255) are not
  coded (the raw walk decides them), nor categorical ones of more than 65,536 bins.

Memory: one byte per row and coded feature (LightGBM's own binned rows take the same), two
for a categorical feature of more than 256 bins; sparse input is coded only while that is
no more than the sparse matrix itself, or small (:data:`MAX_SPARSE_CODE_BYTES`).
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
#: Most bins of a categorical feature coded in one byte; up to :data:`MAX_WIDE_BINS` in two.
MAX_NARROW_BINS = 256
MAX_WIDE_BINS = 1 << 16
#: A categorical feature's categories are looked up in a table indexed by the category when
#: the largest is below this (4 bytes a category); past it, by binary search.
MAX_TABLE_CATEGORY = 1 << 20
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

_NO_WIDE = np.empty((0, 0), dtype=np.uint16)


@dataclass(frozen=True, eq=False)
class BinCodes:
    """Every coded feature's code per row: ``codes[column, row]``, uint8, and ``wide[column,
    row]``, uint16, the codes of categorical features of more than 256 bins (code column
    ``codes.shape[0] + c`` is ``wide[c]``; no rows when there are none)."""

    codes: np.ndarray
    wide: np.ndarray = dataclasses.field(default_factory=lambda: _NO_WIDE)

    @property
    def num_rows(self) -> int:
        return int(self.codes.shape[1])

    @property
    def nbytes(self) -> int:
        """The bytes the codes take."""
        return int(self.codes.nbytes + self.wide.nbytes)


@dataclass(frozen=True, eq=False)
class CodedForest:
    """A :class:`~smart_lgbm._engine.walk.Forest`'s nodes for :func:`_k.walk_codes`.

    Per node: its test packed in one int64 ``info`` (:func:`_k.code_nodes`: the code column
    of its feature, ``tcode``, its threshold's position among the feature's bounds,
    ``miss``, the code sent the default way, :data:`_k.NO_MISS` for none, and
    ``go_default``, 1 when the default way is right; a categorical node: its code column
    with the sign bit set, and its bitset over codes at ``cat_words[cat_off[node]:]``) and
    its two children at ``child[2 * node]`` (left) and ``child[2 * node + 1]``; leaves are
    their own children.  ``bitmask``: the same trees as the bitmask walk's tables
    (:mod:`smart_lgbm._engine.walk.bitmask`), None when a tree has more than 64 leaves (the
    lockstep walk then walks them).
    """

    info: np.ndarray
    child: np.ndarray
    node_value: np.ndarray
    node_leaf: np.ndarray
    roots: np.ndarray
    depths: np.ndarray
    bitmask: _bm.BitmaskForest | None = None
    cat_off: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, np.int64))
    cat_words: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, np.uint64))

    def with_leaf_values(self, forest: Forest) -> CodedForest:
        """This coded forest with the leaf values of ``forest``, the same trees with new leaf
        values (:meth:`Forest.with_leaf_values`): the nodes' tests and the bitmask tables
        depend on the splits only, so they are kept, not coded again."""
        bitmask = None if self.bitmask is None else self.bitmask.with_leaf_values(forest.leaf_values)
        return dataclasses.replace(self, node_value=forest.node_value, bitmask=bitmask)


@dataclass(frozen=True)
class _Categories:
    """How the categorical columns' values become bins (:func:`_ek.category_bin`'s arrays
    after ``j``): per column a table by category, or sorted categories and their bins."""

    table: np.ndarray
    tstart: np.ndarray
    tlen: np.ndarray
    values: np.ndarray
    bins: np.ndarray
    vstart: np.ndarray
    vlen: np.ndarray

    @classmethod
    def of(cls, bin_categories: list[np.ndarray]) -> _Categories:
        """The lookups of columns whose bin ``x`` holds category ``bin_categories[j][x]``."""
        tables, tlen, values, bins, vlen = [], [], [], [], []
        for cats in bin_categories:
            order = np.argsort(cats[1:], kind="stable")
            sorted_cats, sorted_bins = cats[1:][order].astype(np.int64), (order + 1).astype(np.int32)
            top = int(sorted_cats[-1]) if sorted_cats.shape[0] else -1
            if top < MAX_TABLE_CATEGORY:
                table = np.zeros(top + 1, dtype=np.int32)
                table[sorted_cats] = sorted_bins
                tables.append(table)
                tlen.append(top + 1)
                values.append(np.empty(0, np.int64))
                bins.append(np.empty(0, np.int32))
            else:
                tables.append(np.empty(0, np.int32))
                tlen.append(-1)
                values.append(sorted_cats)
                bins.append(sorted_bins)
            vlen.append(values[-1].shape[0])
        return cls(_concat(tables, np.int32), _starts([t.shape[0] for t in tables]), np.array(tlen, np.int64),
                   _concat(values, np.int64), _concat(bins, np.int32), _starts(vlen), np.array(vlen, np.int64))

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.table, self.tstart, self.tlen, self.values, self.bins, self.vstart, self.vlen


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.empty(0, dtype)


def _starts(lengths: list[int]) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if lengths else np.empty(0, np.int64)


class CodeBook:
    """How each feature's raw values become codes: LightGBM's bin mappers of the training data.

    Build it with :meth:`from_mappers`; None there means the data cannot be coded exactly
    (:meth:`refusal` says why).  Code columns: the numerical features, then the categorical
    ones of at most 256 bins (all uint8, :attr:`narrow` of them), then those of more bins
    (uint16), each group in feature order.
    """

    def __init__(self, features: np.ndarray, bounds: list[np.ndarray], nan_codes: np.ndarray,
                 zero_codes: np.ndarray, num_features: int, categories: list[np.ndarray] | None = None) -> None:
        categories = [np.empty(0, np.int32)] * len(bounds) if categories is None else categories
        self.features = features  # the coded features, in column order
        self.column_of_feature = np.full(num_features, -1, dtype=np.int32)
        self.column_of_feature[features] = np.arange(features.shape[0], dtype=np.int32)
        self.bounds = bounds  # numerical columns' bounds (empty for categorical ones)
        self.flat_bounds = np.concatenate(bounds) if bounds else np.empty(0)
        self.lengths = np.array([b.shape[0] for b in bounds], dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.nan_codes = nan_codes  # NAN_CODE, or -1: NaN reads 0
        self.zero_codes = zero_codes  # code of 0.0 for missing type Zero, else NO_MISS
        # categorical columns: each bin's category (LightGBM's bin_2_categorical_), empty for numerical ones
        self.categories = categories
        self.cat_count = np.array([c.shape[0] for c in categories], dtype=np.int64)
        self.cat_first = _starts([c.shape[0] for c in categories])
        self.flat_categories = _concat(categories, np.int32)
        self.numerical = int(np.count_nonzero(self.cat_count == 0))  # (the first columns)
        self.narrow = int(np.count_nonzero(self.cat_count <= MAX_NARROW_BINS))
        self.has_categories = self.numerical < features.shape[0]
        self._lookup = [_Categories.of(categories[self.numerical:self.narrow]),
                        _Categories.of(categories[self.narrow:])]
        self._padded: tuple[np.ndarray, np.ndarray] | None = None  # for the dense encoder, made on first use

    @classmethod
    def from_mappers(cls, mappers: list[_lightgbm.BinMapper | None]) -> CodeBook | None:
        """The code book of a Dataset's bin mappers, or None when some used feature cannot
        be coded exactly (too many bins, a Zero-missing feature whose 0 does not have a bin
        of its own: :meth:`refusal`)."""
        book = cls._read(mappers)
        return book if isinstance(book, CodeBook) else None

    @classmethod
    def refusal(cls, mappers: list[_lightgbm.BinMapper | None]) -> str | None:
        """Why :meth:`from_mappers` gives None for these mappers (naming the feature), or None."""
        book = cls._read(mappers)
        return book if isinstance(book, str) else None

    @classmethod
    def _read(cls, mappers: list[_lightgbm.BinMapper | None]) -> CodeBook | str:
        numerical: list[tuple[int, np.ndarray, int, int]] = []
        narrow: list[tuple[int, np.ndarray]] = []
        wide: list[tuple[int, np.ndarray]] = []
        k_zero = _k.K_ZERO_THRESHOLD
        for feature, mapper in enumerate(mappers):
            if mapper is None:
                continue  # a feature LightGBM does not use: no tree splits on it
            if mapper.categorical:
                bins = mapper.categories.shape[0]
                if bins > MAX_WIDE_BINS:
                    return f"categorical feature {feature} has {bins} bins (at most {MAX_WIDE_BINS} are coded)"
                (narrow if bins <= MAX_NARROW_BINS else wide).append((feature, mapper.categories))
                continue
            upper = mapper.upper_bounds
            if mapper.missing_type == _MISSING_NAN:
                upper = upper[:-1]  # the last bin holds NaN; its bound means nothing
            finite = upper[~np.isnan(upper)]  # +inf stays: a split at it sends NaN alone the default way
            # codes run up to len(finite), or len(finite) - 1 when the last bound is +inf
            if finite.shape[0] - (finite.shape[0] > 0 and finite[-1] == np.inf) > MAX_BOUNDS:
                return (f"feature {feature} has {mapper.upper_bounds.shape[0]} bins (max_bin above 255; at most "
                        f"{MAX_BOUNDS + 1} are coded)")
            if np.any(np.diff(finite) <= 0):
                return f"feature {feature}'s bin bounds do not increase"
            zero_code = _k.NO_MISS
            if mapper.missing_type == _MISSING_ZERO:
                below = np.searchsorted(finite, 0.0)
                # 0's code must hold 0 alone: the bin (-kZeroThreshold, kZeroThreshold]
                if not (0 < below < finite.shape[0] and finite[below - 1] == -k_zero and finite[below] == k_zero):
                    return (f"feature {feature} treats zero as missing (zero_as_missing) but LightGBM gave 0 no bin "
                            "of its own (values of one sign)")
                zero_code = int(below)
            numerical.append((feature, finite.astype(np.float64),
                              NAN_CODE if mapper.missing_type == _MISSING_NAN else -1, zero_code))
        no_bounds, no_cats = np.empty(0), np.empty(0, np.int32)
        features = [f for f, *_ in numerical] + [f for f, _ in narrow] + [f for f, _ in wide]
        bounds = [b for _, b, _, _ in numerical] + [no_bounds] * (len(narrow) + len(wide))
        nan_codes = [c for _, _, c, _ in numerical] + [-1] * (len(narrow) + len(wide))
        zero_codes = [z for *_, z in numerical] + [_k.NO_MISS] * (len(narrow) + len(wide))
        categories = [no_cats] * len(numerical) + [c for _, c in narrow] + [c for _, c in wide]
        return cls(np.array(features, dtype=np.int32), bounds, np.array(nan_codes, dtype=np.int64),
                   np.array(zero_codes, dtype=np.int64), len(mappers), categories)

    def encode(self, raw: RawFeatures) -> BinCodes | None:
        """The codes of ``raw``'s rows, or None when they cannot be coded exactly or cheaply
        (:meth:`encode_refusal` says why)."""
        codes = self._encode(raw)
        return codes if isinstance(codes, BinCodes) else None

    def encode_refusal(self, raw: RawFeatures) -> str | None:
        """Why :meth:`encode` gives None for ``raw`` (None when it codes them)."""
        codes = self._encode(raw)
        return codes if isinstance(codes, str) else None

    def _encode(self, raw: RawFeatures) -> BinCodes | str:
        if raw.num_features < self.column_of_feature.shape[0]:
            return f"the data has {raw.num_features} features, the training data {self.column_of_feature.shape[0]}"
        n = raw.num_rows
        num, narrow = self.numerical, self.narrow
        codes = np.empty((narrow, n), dtype=np.uint8)
        wide = np.empty((self.features.shape[0] - narrow, n), dtype=np.uint16) if self.has_categories else _NO_WIDE
        if raw.layout == "dense":
            if self._padded is None:
                self._padded = _ek.padded_bounds(self.bounds[:num])
            _ek.encode_dense(raw.dense, self.features[:num], *self._padded, self.nan_codes[:num],
                             _k.K_ZERO_THRESHOLD, codes[:num])
            if self.has_categories:
                _ek.encode_dense_categories(raw.dense, self.features[num:narrow], *self._lookup[0].arrays,
                                            codes[num:])
                _ek.encode_dense_categories(raw.dense, self.features[narrow:], *self._lookup[1].arrays, wide)
            return BinCodes(codes, wide)
        indptr, indices, values = raw.sparse_parts()
        raw_bytes = indptr.nbytes + indices.nbytes + values.nbytes
        code_bytes = codes.nbytes + wide.nbytes
        if code_bytes > max(MAX_SPARSE_CODE_BYTES, raw_bytes):
            return (f"its codes would take {code_bytes / 2**20:.0f} MB, more than the sparse matrix "
                    f"({raw_bytes / 2**20:.0f} MB)")
        is_csc = raw.layout == "csc"
        if is_csc and not _strictly_sorted_segments(indptr, indices):
            # duplicates or unsorted columns: LightGBM's column reader is not a plain scatter
            return "the CSC matrix has unsorted or duplicate row indices in a column"
        column_of_feature = np.full(raw.num_features, -1, dtype=np.int32)
        column_of_feature[: self.column_of_feature.shape[0]] = self.column_of_feature
        numerical = np.where(column_of_feature < num, column_of_feature, -1).astype(np.int32)
        ok = _k.encode_sparse(is_csc, n, raw.indptr, raw.indices, raw.values, numerical, self.flat_bounds,
                              self.starts, self.lengths, self.nan_codes, codes[:num])
        if not ok:
            return ("the CSR matrix stores values within ±1e-35 of zero, which LightGBM's CSR predictor keeps apart "
                    "from 0")
        if self.has_categories:
            for part, (lo, hi), out in ((0, (num, narrow), codes[num:]), (1, (narrow, self.features.shape[0]), wide)):
                columns = np.where((column_of_feature >= lo) & (column_of_feature < hi), column_of_feature - lo,
                                   -1).astype(np.int32)
                _ek.encode_sparse_categories(is_csc, n, raw.indptr, raw.indices, raw.values, columns,
                                             *self._lookup[part].arrays, out)
        return BinCodes(codes, wide)

    def coded_forest(self, forest: Forest) -> CodedForest:
        """``forest``'s nodes in codes.

        Raises
        ------
        RuntimeError
            A numerical threshold that is not one of its feature's bin bounds, a categorical
            bitset holding a category without a bin, or a split on a feature the book does
            not code or codes as the other kind (none happens with trees LightGBM grew on
            the Dataset the book was read from).
        """
        n = forest.threshold.shape[0]
        info, child, cat_off = np.empty(n, np.int64), np.empty(2 * n, np.int32), np.empty(n, np.int64)
        if self.has_categories:
            cat_nodes = int(np.count_nonzero(forest.flags & _k.CATEGORICAL))
            cat_words = np.empty(cat_nodes * ((int(self.cat_count.max()) + 63) >> 6), np.uint64)
        else:
            cat_words = _NO_WORDS
        bad, reason = _k.code_nodes(
            forest.feature, forest.threshold, forest.flags, forest.left, forest.right, forest.cat_start,
            forest.cat_len, forest.cat_bits, self.column_of_feature, self.flat_bounds, self.starts, self.lengths,
            self.nan_codes, self.zero_codes, self.cat_first, self.cat_count, self.flat_categories, info, child,
            cat_off, cat_words)
        if bad >= 0:
            feature, threshold = int(forest.feature[bad]), float(forest.threshold[bad])
            raise RuntimeError({
                _k.NOT_A_BOUND: f"a split of feature {feature} at {threshold!r} is not on one of LightGBM's bin "
                                "bounds that the bin codes hold",
                _k.NAN_WITHOUT_NAN_BIN: f"feature {feature}: a NaN-missing split on a feature binned without NaN",
                _k.ZERO_WITHOUT_ZERO_BIN: f"feature {feature}: a zero-missing split on a feature binned without it",
                _k.PLAIN_ON_NAN_BIN: f"feature {feature}: a split without missing values on a NaN-binned feature",
                _k.CATEGORY_WITHOUT_BIN: f"feature {feature}: a categorical split on a category without a bin of "
                                         "its own",
                _k.NOT_CATEGORICAL: f"feature {feature}: a split of the other kind (categorical or numerical) than "
                                    "the feature's bins",
            }[reason])
        if not cat_words.shape[0]:
            cat_words = _NO_WORDS  # (a forest without categorical nodes takes the walks' plain loops)
        bitmask = _bm.bitmask_forest(info, child, forest.node_value, forest.node_leaf, forest.roots,
                                     self.features.shape[0], cat_off, cat_words, self.cat_count, self.narrow)
        return CodedForest(info, child, forest.node_value, forest.node_leaf, forest.roots, forest.depths, bitmask,
                           cat_off, cat_words)


_NO_WORDS = np.empty(0, np.uint64)


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
        _bk.walk_bitmask(codes.codes, codes.wide, BITMASK_BLOCK_ROWS, chunks, *bm.kernel_tables, bm.leaf_value,
                         bm.leaf_index, rows, outputs, out, leaves, want_leaves)
        return
    _k.walk_codes(codes.codes, codes.wide, CODES_BLOCK_ROWS, chunks, forest.info, forest.child, forest.cat_off,
                  forest.cat_words, forest.node_value, forest.node_leaf, forest.roots, forest.depths, rows, outputs,
                  out, leaves, want_leaves)


_NO_ROWS = np.empty(0, dtype=np.int32)
