"""The values LightGBM's ``predict`` reads from the caller's raw features (dense, pandas, Arrow)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from lightgbm import basic as _basic


def dense_as_predicted(mat: np.ndarray) -> np.ndarray:
    """A 2-D array with the values LightGBM's ``predict`` reads from ``mat``.

    ``_np2d_to_np1d`` (used by ``Booster.predict`` and ``Dataset`` construction) keeps
    float32 and float64 and converts every other dtype to float32 (int64 rounds to the
    nearest float32).  float32/float64 arrays are returned as they are (by reference,
    any memory layout: the values do not depend on it); anything else is converted by
    LightGBM's own function.
    """
    if mat.dtype in (np.float32, np.float64):
        return mat
    flat, layout = _basic._np2d_to_np1d(mat)
    return flat.reshape(mat.shape, order="F" if layout == _basic._C_API_IS_COL_MAJOR else "C")


def pandas_to_numpy(data: Any, pandas_categorical: list | None) -> tuple[np.ndarray, list]:
    """A DataFrame as ``Booster.predict`` maps it: LightGBM's ``_data_from_pandas``.

    Categorical columns become their codes in the training set's categories
    (``pandas_categorical``; unseen categories and NaN become NaN), and the frame becomes
    one array of ``np.result_type(*column dtypes, float32)``.  With
    ``pandas_categorical=None`` the frame is taken as the training set and its own
    categories are used (and returned), as LightGBM does when constructing a Dataset.

    Returns
    -------
    (array, pandas_categorical)
    """
    array, _, _, categories = _basic._data_from_pandas(
        data=data, feature_name="auto", categorical_feature="auto", pandas_categorical=pandas_categorical
    )
    return array, categories


def is_pyarrow_table(data: Any) -> bool:
    """Whether ``data`` is a pyarrow Table (False without pyarrow).

    LightGBM 4.6's own test where it has one; 4.7 removed ``_is_pyarrow_table`` (it reads
    Arrow data through narwhals), so there the Table class of an imported pyarrow decides.
    """
    own = getattr(_basic, "_is_pyarrow_table", None)
    if own is not None:
        return bool(own(data))
    pyarrow = sys.modules.get("pyarrow")
    return pyarrow is not None and isinstance(data, pyarrow.Table)
