"""The engine's own binned copies of the caller's Datasets, and their targets.

The engine never changes a Dataset it is given (BRIEF pitfall: setting init scores on the
caller's objects silently corrupts their next training run).  Where the caller's Dataset
is not constructed yet, the engine builds its own from the same raw data and parameters
(the caller's object stays untouched, not even constructed); where it is already
constructed, its binned rows are only read.  A ranking Dataset can only be subset by whole
queries, so the engine's training copy carries no groups: query boundaries live in the
loss's :class:`Target`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from . import _lightgbm
from .losses.base import Loss, Target, check_finite
from .params import dataset_params


@dataclass
class BinnedSet:
    """One data set as the engine sees it.

    Attributes
    ----------
    name : str
    handle : C Dataset handle of binned rows aligned with the training bin mappers.
    target : Target
    init_score : ndarray of shape (n, K) or None
        The caller's initial scores (boosting then starts from them, no boost-from-average).
    native_init_score : ndarray or None
        Init score LightGBM itself holds for ``handle`` (class-major), subtracted when
        reading leaves.
    source : lightgbm.Dataset
        The caller's Dataset (for ``feval``).
    keep : list
        Objects that must stay alive as long as ``handle``.
    """

    name: str
    handle: ctypes.c_void_p
    target: Target
    init_score: np.ndarray | None
    native_init_score: np.ndarray | None
    source: lgb.Dataset
    keep: list[Any]
    reference: lgb.Dataset | None = None
    pandas_categorical: list | None = None

    @property
    def num_rows(self) -> int:
        return self.target.num_rows


def _as_float_array(name: str, values: Any, n: int | None, dtype: type = np.float32) -> np.ndarray | None:
    """LightGBM stores labels and weights as float32: convert the same way, then check."""
    if values is None:
        return None
    try:
        arr = np.asarray(values, dtype=dtype).astype(np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {type(values).__name__}") from None
    check_finite(name, arr)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but the data has {n} rows")
    return arr


def _num_raw_rows(data: Any) -> int | None:
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if isinstance(data, list):
        return len(data)
    return None


# Up to this many cells (rows x features) the engine stores its own binned copy densely.
_DENSE_CELLS = 1 << 27


def _storage_params(data: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Dense bin storage for the engine's own copy of moderately sized sparse data.

    Sparse feature groups make LightGBM build a multi-value bin every time a Booster is
    created on a subset, a large share of a small data set's iteration.  Dense
    storage gives the same bins and histograms; below 2^27 cells it costs at most 128 MB
    of one-byte bins.  An explicit ``is_enable_sparse`` is always respected.
    """
    shape = getattr(data, "shape", None)
    if "is_enable_sparse" in params or shape is None or len(shape) != 2:
        return params
    if int(shape[0]) * int(shape[1]) <= _DENSE_CELLS:
        return {**params, "is_enable_sparse": False}
    return params


def _fields_from_handle(handle: ctypes.c_void_p, dataset: lgb.Dataset) -> dict[str, Any]:
    fields = {name: dataset.get_field(name) for name in ("label", "weight", "init_score")}
    # A constructed Dataset stores query boundaries; the engine works with query sizes.
    boundaries = dataset.get_field("group")
    fields["group"] = None if boundaries is None else np.diff(boundaries)
    return fields


def _target_and_scores(name: str, fields: dict[str, Any], n: int, loss: Loss) -> tuple[Target, np.ndarray | None]:
    label = _as_float_array(f"{name} label", fields["label"], n)
    if label is None:
        raise ValueError(f"{name} has no label; give the Dataset a label")
    weight = _as_float_array(f"{name} weight", fields["weight"], n)
    if weight is not None and np.any(weight < 0):
        raise ValueError(f"{name} weight must be non-negative")
    group = fields["group"]
    if group is not None:
        group = np.asarray(group).reshape(-1)
        if group.size == 0:
            group = None
        else:
            if not np.issubdtype(group.dtype, np.number) or np.any(group != np.floor(group)):
                raise ValueError(f"{name} group must hold integer query sizes")
            group = group.astype(np.int64)
            if np.any(group <= 0):
                raise ValueError(f"{name} group has an empty or negative query size; every query needs >= 1 row")
            if int(group.sum()) != n:
                raise ValueError(f"{name} group sizes sum to {int(group.sum())} but the data has {n} rows")
    init = fields["init_score"]
    k = loss.num_model_per_iteration
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        if init.size == 0:
            init = None
        else:
            check_finite(f"{name} init_score", init)
            if init.size != n * k:
                raise ValueError(f"{name} init_score has {init.size} values; expected {n * k} (rows x trees per iteration)")
            # lightgbm.Dataset keeps a 2-D init_score row-major (n, K), a 1-D one class-major.
            init = init.reshape(n, k) if init.ndim == 2 else init.reshape(k, n).T
    if loss.needs_group and group is None:
        raise ValueError(f"{name} needs query groups for {type(loss).__name__}: give the Dataset a group")
    target = Target(label=label, weight=weight, group=group if loss.needs_group or group is not None else None)
    loss.validate(target)
    return target, init


def prepare_train(train_set: lgb.Dataset, loss: Loss, params: dict[str, Any]) -> BinnedSet:
    """The engine's binned training set (never the caller's object when it could change)."""
    if not isinstance(train_set, lgb.Dataset):
        raise TypeError(f"train_set must be a lightgbm.Dataset, got {type(train_set).__name__}")
    keep: list[Any] = []
    user_handle = _lightgbm.handle_of(train_set)
    if user_handle is None:
        if train_set.data is None:
            raise ValueError("train_set has neither raw data nor a constructed handle")
        ds_params = dataset_params({**(train_set.params or {}), **params})
        if isinstance(train_set.data, (str, Path)):
            own = lgb.Dataset(str(train_set.data), params=ds_params, free_raw_data=True).construct()
            fields = _fields_from_handle(_lightgbm.handle_of(own), own)
        else:
            n = _num_raw_rows(train_set.data)
            _as_float_array("train_set label", train_set.label, n)  # fail early, before binning
            own = lgb.Dataset(
                train_set.data,
                label=train_set.label,
                feature_name=train_set.feature_name,
                categorical_feature=train_set.categorical_feature,
                params=_storage_params(train_set.data, ds_params),
                free_raw_data=True,
            ).construct()
            fields = {"label": train_set.label, "weight": train_set.weight, "group": train_set.group,
                      "init_score": train_set.init_score}
        handle = _lightgbm.handle_of(own)
        keep.append(own)
        pandas_categorical = own.pandas_categorical
    else:
        fields = _fields_from_handle(user_handle, train_set)
        handle = user_handle
        pandas_categorical = train_set.pandas_categorical
    n = _lightgbm.num_rows(handle)
    target, init = _target_and_scores("train_set", fields, n, loss)
    native_init = None
    if _lightgbm.has_group(handle) or (user_handle is None and fields["init_score"] is not None and
                                       isinstance(train_set.data, (str, Path))):
        if user_handle is not None:
            # Read-only rule: copy the caller's binned rows before clearing anything.
            copy = _lightgbm.SubsetHandle(handle, np.arange(n, dtype=np.int32), "")
            keep.append(copy)
            handle = copy.handle
        _lightgbm.clear_field(handle, "group")
        _lightgbm.clear_field(handle, "init_score")
    elif user_handle is not None and init is not None:
        native_init = init.T.reshape(-1)
    reference = keep[0] if user_handle is None else train_set
    return BinnedSet("training", handle, target, init, native_init, train_set, keep, reference, pandas_categorical)


def prepare_valid(valid_set: lgb.Dataset, name: str, train: BinnedSet, loss: Loss, params: dict[str, Any]) -> BinnedSet:
    """A validation set binned with the training set's bin mappers."""
    if not isinstance(valid_set, lgb.Dataset):
        raise TypeError(f"valid_sets must hold lightgbm.Dataset objects, got {type(valid_set).__name__}")
    keep: list[Any] = []
    handle = _lightgbm.handle_of(valid_set)
    native_init = None
    if handle is None:
        if valid_set.data is None:
            raise ValueError(f"validation set {name!r} has neither raw data nor a constructed handle")
        ds_params = dataset_params({**(valid_set.params or {}), **params})
        if isinstance(valid_set.data, (str, Path)):
            own = lgb.Dataset(str(valid_set.data), reference=train.reference, params=ds_params).construct()
            fields = _fields_from_handle(_lightgbm.handle_of(own), own)
        else:
            own = lgb.Dataset(valid_set.data, label=valid_set.label, reference=train.reference,
                              params=_storage_params(valid_set.data, ds_params), free_raw_data=True).construct()
            fields = {"label": valid_set.label, "weight": valid_set.weight, "group": valid_set.group,
                      "init_score": valid_set.init_score}
        handle = _lightgbm.handle_of(own)
        keep.append(own)
        n = _lightgbm.num_rows(handle)
        target, init = _target_and_scores(f"validation set {name!r}", fields, n, loss)
        if isinstance(valid_set.data, (str, Path)) and init is not None:
            native_init = init.T.reshape(-1)
    else:
        fields = _fields_from_handle(handle, valid_set)
        n = _lightgbm.num_rows(handle)
        target, init = _target_and_scores(f"validation set {name!r}", fields, n, loss)
        if init is not None:
            native_init = init.T.reshape(-1)
    return BinnedSet(name, handle, target, init, native_init, valid_set, keep)
