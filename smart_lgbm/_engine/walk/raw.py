"""The caller's raw features, held as :mod:`smart_lgbm._engine.walk` reads them.

:meth:`RawFeatures.from_data` accepts what ``lightgbm.Booster.predict`` accepts in memory
and keeps it **by reference** wherever LightGBM would read the values unchanged:

* 2-D numpy arrays of float32 or float64, in any memory layout (C order, Fortran order,
  strided views): by reference.  Other numeric dtypes (bool, integers, float16...) are
  converted as LightGBM converts them (to float32: a copy).
* ``scipy.sparse`` CSR and CSC matrices with float32/float64 values: by reference
  (int32 or int64 indices; other integer index dtypes are converted to int32, as
  LightGBM does).  Non-canonical input (duplicate entries, unsorted indices, explicit
  zeros) is kept as it is; the walk reads it exactly as LightGBM's predictor does (see
  :mod:`smart_lgbm._engine.walk._kernels`).  A CSC matrix with a column whose row indices are not
  sorted also gets the running maximum of its row indices per column (one index array,
  a copy of ``indices``' size) that the walk searches.  Other sparse formats and sparse
  arrays are converted with ``scipy.sparse.csr_matrix(data)``, exactly as
  ``Booster.predict`` converts them (by reference when that conversion shares memory).
* pandas DataFrames: converted by LightGBM's own ``_data_from_pandas`` (categorical codes
  in the training set's categories, unseen categories and NaN as NaN), necessarily a
  copy unless every column already has the target dtype.

Anything else (``None``, a file path, a pyarrow Table, lists, numpy dtypes LightGBM does
not convert as numbers) gives ``None``: the caller falls back to LightGBM's own
predictor.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ... import _lightgbm

Layout = Literal["dense", "csr", "csc"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _owned_bytes(arrays: list[np.ndarray], originals: list[np.ndarray]) -> int:
    """Bytes of the ``arrays`` that do not live in the caller's ``originals``."""
    return sum(a.nbytes for a in arrays if not any(np.may_share_memory(a, o) for o in originals))


class RawFeatures:
    """Raw feature values of ``num_rows`` rows in one of three layouts.

    Build it with :meth:`from_data`; the walk reads the attributes below.

    Attributes
    ----------
    layout : {"dense", "csr", "csc"}
    dense : ndarray of shape (num_rows, num_features), float32 or float64, or None
    indptr, indices, values : ndarray or None
        The sparse layouts' arrays (``values`` is scipy's ``data``).
    search : ndarray or None
        CSC only: per column, the running maximum of the row indices (``indices``
        itself when every column is sorted).
    """

    __slots__ = ("_layout", "_shape", "dense", "indptr", "indices", "values", "search", "_copy_nbytes")

    def __init__(self, layout: Layout, shape: tuple[int, int], *, dense: np.ndarray | None = None,
                 indptr: np.ndarray | None = None, indices: np.ndarray | None = None,
                 values: np.ndarray | None = None, search: np.ndarray | None = None,
                 copy_nbytes: int = 0) -> None:
        self._layout = layout
        self._shape = (int(shape[0]), int(shape[1]))
        self.dense = dense
        self.indptr = indptr
        self.indices = indices
        self.values = values
        self.search = search
        self._copy_nbytes = int(copy_nbytes)

    def sparse_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, indices, values)`` of a CSR or CSC layout."""
        if self.indptr is None or self.indices is None or self.values is None:
            raise ValueError(f"a {self._layout} RawFeatures has no sparse parts")
        return self.indptr, self.indices, self.values

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_data(cls, data: Any, *, pandas_categorical: list | None = None) -> RawFeatures | None:
        """The features of ``data`` as the walk reads them, or None if it cannot.

        Parameters
        ----------
        data : numpy array, scipy.sparse matrix or array, pandas DataFrame, or anything else
            What was (or would be) given to ``lightgbm.Dataset(data)`` or ``predict``.
        pandas_categorical : list of lists, optional
            The training Dataset's ``pandas_categorical`` (the categories of its pandas
            categorical columns), used to map a DataFrame's categorical columns exactly as
            ``Booster.predict`` does.  None: ``data`` is the training frame itself and its
            own categories are used.

        Returns
        -------
        RawFeatures or None
            None for input the walk does not read (None, a file path, a pyarrow Table,
            a list, a numpy array of a non-numeric dtype...).

        Raises
        ------
        ValueError
            ``data`` is a numpy array that is not 2-D, a malformed sparse matrix, or a
            DataFrame that LightGBM refuses (non-numeric columns, empty, categories that
            do not match ``pandas_categorical``).
        TypeError
            ``data`` is a sparse matrix whose values are not float32/float64 or whose
            ``indptr`` is not int32/int64 (LightGBM refuses those too).
        """
        if data is None or isinstance(data, (str, os.PathLike)) or _lightgbm.is_pyarrow_table(data):
            return None
        if isinstance(data, pd.DataFrame):
            return cls._from_pandas(data, pandas_categorical)
        if isinstance(data, np.ndarray):
            return cls._from_numpy(np.asarray(data), original=data)
        if isinstance(data, sp.csc_matrix):
            return cls._from_csc(data)
        if isinstance(data, sp.csr_matrix):
            return cls._from_csr(data, originals=[data.indptr, data.indices, data.data])
        if sp.issparse(data):
            # Booster.predict's own fallback for every other sparse input.
            originals = [getattr(data, name) for name in ("indptr", "indices", "data", "row", "col")
                         if isinstance(getattr(data, name, None), np.ndarray)]
            return cls._from_csr(sp.csr_matrix(data), originals=originals)
        return None

    @classmethod
    def _from_numpy(cls, array: np.ndarray, original: np.ndarray) -> RawFeatures | None:
        if array.ndim != 2:
            raise ValueError(f"data must be a 2-D array (rows x features), got {array.ndim}-D shape {array.shape}")
        if array.dtype.kind not in "biuf":
            return None  # object, complex, strings, dates: left to LightGBM
        dense = _lightgbm.dense_as_predicted(array)
        return cls("dense", dense.shape, dense=dense, copy_nbytes=_owned_bytes([dense], [original]))

    @classmethod
    def _from_pandas(cls, frame: pd.DataFrame, pandas_categorical: list | None) -> RawFeatures:
        try:
            array, _ = _lightgbm.pandas_to_numpy(frame, pandas_categorical)
        except ValueError as err:
            raise ValueError(f"data (pandas DataFrame): {err}") from err
        dense = _lightgbm.dense_as_predicted(array)
        # to_numpy(copy=False) returns a view of the frame when its columns share one dtype
        plain = [j for j, dtype in enumerate(frame.dtypes) if isinstance(dtype, np.dtype)]
        originals = [frame.iloc[:, plain[0]].to_numpy()] if plain else []
        return cls("dense", dense.shape, dense=dense, copy_nbytes=_owned_bytes([dense], originals))

    @staticmethod
    def _sparse_arrays(matrix: Any, minor: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validated (indptr, indices, values) of a compressed sparse matrix."""
        indptr, indices, values = matrix.indptr, matrix.indices, matrix.data
        if values.dtype not in _FLOATS:
            raise TypeError(f"data: {what} values must be float32 or float64 (LightGBM refuses other "
                            f"dtypes), got {values.dtype}")
        if indptr.dtype not in _INDEX_DTYPES:
            raise TypeError(f"data: {what} indptr must be int32 or int64, got {indptr.dtype}")
        if indices.dtype not in _INDEX_DTYPES:
            if indices.dtype.kind not in "iu":
                raise TypeError(f"data: {what} indices must be integers, got {indices.dtype}")
            indices = indices.astype(np.int32)  # what LightGBM passes to its C API
        if indptr.ndim != 1 or indices.ndim != 1 or values.ndim != 1:
            raise ValueError(f"data: malformed {what} matrix (indptr, indices, data must be 1-D)")
        nnz = int(indptr[-1]) if indptr.size else 0
        if (indptr.size == 0 or indptr[0] != 0 or np.any(np.diff(indptr) < 0)
                or nnz > indices.size or nnz > values.size):
            raise ValueError(f"data: malformed {what} matrix (indptr must start at 0, never decrease "
                             "and end at most at the number of stored entries)")
        if nnz and (indices[:nnz].min() < 0 or indices[:nnz].max() >= minor):
            raise ValueError(f"data: malformed {what} matrix (an index is outside 0..{minor - 1})")
        return indptr, np.ascontiguousarray(indices), np.ascontiguousarray(values)

    @classmethod
    def _from_csr(cls, matrix: sp.csr_matrix, originals: list[np.ndarray]) -> RawFeatures:
        indptr, indices, values = cls._sparse_arrays(matrix, matrix.shape[1], "CSR")
        if indptr.shape[0] != matrix.shape[0] + 1:
            raise ValueError("data: malformed CSR matrix (indptr must have one entry per row, plus one)")
        indptr = np.ascontiguousarray(indptr)
        return cls("csr", matrix.shape, indptr=indptr, indices=indices, values=values,
                   copy_nbytes=_owned_bytes([indptr, indices, values], originals))

    @classmethod
    def _from_csc(cls, matrix: sp.csc_matrix) -> RawFeatures:
        n, num_features = matrix.shape
        indptr, indices, values = cls._sparse_arrays(matrix, n, "CSC")
        if indptr.shape[0] != num_features + 1:
            raise ValueError("data: malformed CSC matrix (indptr must have one entry per column, plus one)")
        indptr = np.ascontiguousarray(indptr)
        search = _running_max(indptr, indices)
        return cls("csc", matrix.shape, indptr=indptr, indices=indices, values=values, search=search,
                   copy_nbytes=_owned_bytes([indptr, indices, values, search],
                                            [matrix.indptr, matrix.indices, matrix.data]))

    # ------------------------------------------------------------------ properties

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def num_rows(self) -> int:
        return self._shape[0]

    @property
    def num_features(self) -> int:
        return self._shape[1]

    @property
    def copy_nbytes(self) -> int:
        """Bytes held here that are not the caller's memory (0 when all by reference)."""
        return self._copy_nbytes

    @property
    def is_copy(self) -> bool:
        """Whether any of the arrays held is a copy rather than the caller's own memory."""
        return self._copy_nbytes > 0

    def __repr__(self) -> str:
        how = f"copy of {self._copy_nbytes} bytes" if self.is_copy else "by reference"
        return f"RawFeatures({self._layout}, {self.num_rows} x {self.num_features}, {how})"

    # ------------------------------------------------------------------ rows

    def take(self, rows: Any) -> RawFeatures:
        """The features of ``rows`` (in that order, repeats allowed), as a new copy.

        Walking the result gives row ``r`` exactly what walking this object gives row
        ``rows[r]`` (the rows of ``lightgbm.Dataset.subset(rows)``).

        Raises
        ------
        TypeError
            ``rows`` is not a 1-D array of integers.
        ValueError
            A row is outside ``0 .. num_rows - 1``.
        """
        rows = np.asarray(rows)
        if rows.ndim != 1 or not (rows.dtype.kind in "iu" or rows.size == 0):
            raise TypeError(f"rows must be a 1-D array of integer row indices, got dtype {rows.dtype} "
                            f"and shape {rows.shape}")
        rows = rows.astype(np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.num_rows):
            raise ValueError(f"rows must be in 0..{self.num_rows - 1}, got values from {rows.min()} to {rows.max()}")
        shape = (rows.size, self.num_features)
        if self._layout == "dense":
            assert self.dense is not None  # the dense layout holds it
            dense = np.take(self.dense, rows, axis=0)
            return RawFeatures("dense", shape, dense=dense, copy_nbytes=dense.nbytes)
        if self._layout == "csr":
            all_indptr, all_indices, all_values = self.sparse_parts()
            indptr, positions = _gather_segments(all_indptr, rows)
            indices, values = all_indices[positions], all_values[positions]
            return RawFeatures("csr", shape, indptr=indptr, indices=indices, values=values,
                               copy_nbytes=indptr.nbytes + indices.nbytes + values.nbytes)
        return self._take_csc(rows, shape)

    def _take_csc(self, rows: np.ndarray, shape: tuple[int, int]) -> RawFeatures:
        # The entries a row reads (see walk_csc): in each column, those whose row index
        # exceeds every earlier one's.  Kept for the wanted rows, in new row order: a
        # sorted, duplicate-free CSC matrix that reads the same.
        indptr, indices, all_values = self.sparse_parts()
        search = self.search
        assert search is not None  # the CSC layout holds it
        nnz = int(indptr[-1])
        column = np.repeat(np.arange(self.num_features), np.diff(indptr))
        first = np.zeros(nnz, dtype=bool)
        first[indptr[:-1][np.diff(indptr) > 0]] = True
        read = first.copy()
        read[1:] |= indices[1:nnz] > search[: nnz - 1]
        entries = np.flatnonzero(read)
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        lo = np.searchsorted(sorted_rows, indices[entries], side="left")
        count = np.searchsorted(sorted_rows, indices[entries], side="right") - lo
        source = np.repeat(entries, count)  # each kept entry once per wanted copy of its row
        offsets = np.arange(source.size) - np.repeat(np.cumsum(count) - count, count)
        new_row = order[np.repeat(lo, count) + offsets]
        by_column = np.lexsort((new_row, column[source]))
        source, new_row = source[by_column], new_row[by_column]
        new_indptr = np.zeros(self.num_features + 1, dtype=np.int64)
        np.cumsum(np.bincount(column[source], minlength=self.num_features), out=new_indptr[1:])
        new_indices = new_row.astype(np.int64)
        values = all_values[source]
        return RawFeatures("csc", shape, indptr=new_indptr, indices=new_indices, values=values,
                           search=new_indices,
                           copy_nbytes=new_indptr.nbytes + new_indices.nbytes + values.nbytes)


def _gather_segments(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new indptr, positions) of the stored entries of ``rows``, each row's in order."""
    starts = indptr[rows].astype(np.int64)
    lengths = indptr[rows + 1].astype(np.int64) - starts
    new_indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    positions = np.repeat(starts - new_indptr[:-1], lengths) + np.arange(new_indptr[-1])
    return new_indptr, positions


def _running_max(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Per column, the running maximum of the row indices: ``indices`` itself (no copy)
    when every column is sorted, else a new array."""
    nnz = int(indptr[-1])
    within = np.ones(max(nnz - 1, 0), dtype=bool)  # pairs (p, p + 1) in one column
    starts = indptr[1:-1]
    within[starts[(starts > 0) & (starts < nnz)] - 1] = False
    if not np.any(indices[1:nnz][within] < indices[: nnz - 1][within]):
        return indices
    # Offsetting column c by c * (max index + 1) puts every column above all earlier ones,
    # so one running maximum over the whole array restarts at every column.
    span = np.int64(indices[:nnz].max()) + 1
    column = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    shifted = indices[:nnz].astype(np.int64) + column * span
    out = np.empty(indices.size, dtype=indices.dtype)
    out[:nnz] = np.maximum.accumulate(shifted) - column * span
    out[nnz:] = indices[nnz:]
    return out
