"""C Datasets: handles, owned subsets, fields, and constructed copies of the caller's Datasets."""

from __future__ import annotations

import ctypes
from typing import Any

import lightgbm as lgb
import numpy as np

from ._capi import _DTYPE_FLOAT32, _DTYPE_FLOAT64, _DTYPE_INT32, _LIB, _c_str, _check
from .params import params_to_str


def handle_of(dataset: lgb.Dataset) -> ctypes.c_void_p | None:
    """The C handle of a constructed ``lightgbm.Dataset`` (None if not constructed)."""
    return dataset._handle


class SubsetHandle:
    """An owned C Dataset holding some rows of a binned Dataset (bin mappers shared)."""

    __slots__ = ("handle",)

    def __init__(self, source: ctypes.c_void_p, indices: np.ndarray, params: str) -> None:
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.handle = ctypes.c_void_p()
        _check(
            _LIB.LGBM_DatasetGetSubset(
                source,
                indices.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                ctypes.c_int32(indices.shape[0]),
                _c_str(params),
                ctypes.byref(self.handle),
            )
        )

    def free(self) -> None:
        if self.handle:
            _check(_LIB.LGBM_DatasetFree(self.handle))
            self.handle = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def free_owned(obj: SubsetHandle | lgb.Dataset) -> None:
    """Free the C Dataset of an object the engine built itself (an owned :class:`SubsetHandle`,
    or a ``lightgbm.Dataset`` it constructed from the caller's raw data); idempotent.

    Never call it on the caller's Dataset: its handle belongs to the caller.
    """
    if isinstance(obj, SubsetHandle):
        obj.free()
    elif isinstance(obj, lgb.Dataset):
        obj._free_handle()  # (also frees nothing twice: the handle is set to None)
    else:
        raise TypeError(f"free_owned frees a SubsetHandle or a lightgbm.Dataset, got {type(obj).__name__}")


def constructed_like(dataset: lgb.Dataset, params: dict[str, Any],
                     reference: lgb.Dataset | None = None) -> lgb.Dataset:
    """The Dataset ``lightgbm.train`` would hand to ``feval`` for ``dataset``: constructed,
    its labels and weights read back from LightGBM (float32), its groups as boundaries.

    A constructed Dataset is that already; an unconstructed one is not touched (the engine
    never changes the caller's objects): a copy with the same data, fields and parameters
    is constructed instead (against ``reference``, the engine's training Dataset, for a
    validation set, as stock bins validation data with the training set's bin mappers).
    """
    if dataset._handle is not None:
        return dataset
    used, parent_data = getattr(dataset, "used_indices", None), dataset.reference
    if used is not None and parent_data is not None:  # an unconstructed subset: of its constructed parent
        parent = constructed_like(parent_data, params, reference)
        return parent.subset(list(used), params=dataset.params).construct()
    copy = lgb.Dataset(
        dataset.data, label=dataset.label, weight=dataset.weight, group=dataset.group,
        init_score=dataset.init_score, reference=reference, feature_name=dataset.feature_name,
        categorical_feature=dataset.categorical_feature, params={**params, **(dataset.params or {})},
        free_raw_data=False,
    )
    if getattr(dataset, "position", None) is not None:
        copy.position = dataset.position
    return copy.construct()


def has_positions(dataset: lgb.Dataset | None) -> bool:
    """Whether a Dataset (or the Dataset it is an unconstructed subset of) carries
    ``position`` (LightGBM >= 4.1: the display positions that lambdarank learns biases of)."""
    while dataset is not None:
        if getattr(dataset, "position", None) is not None:
            return True
        if dataset._handle is not None:  # constructed: the C side holds what was set
            try:
                return dataset.get_field("position") is not None
            except Exception:  # a LightGBM without the field
                return False
        dataset = dataset.reference if getattr(dataset, "used_indices", None) is not None else None
    return False


def clear_field(handle: ctypes.c_void_p, field: str) -> None:
    """Clear ``group``, ``weight`` or ``init_score`` of a C Dataset (empty input clears)."""
    dtype = {"group": _DTYPE_INT32, "weight": _DTYPE_FLOAT32, "init_score": _DTYPE_FLOAT64}[field]
    _check(_LIB.LGBM_DatasetSetField(handle, _c_str(field), None, ctypes.c_int(0), ctypes.c_int(dtype)))


def dataset_params_conflict(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """LightGBM's message when ``new`` changes a binning parameter that a Dataset constructed
    with ``old`` fixed (``max_bin``, ``min_data_in_bin``...), else None.

    The check ``lightgbm.train`` makes (``LGBM_DatasetUpdateParamChecking``); both dicts must
    hold Dataset parameters only (the check validates them as a whole configuration).
    """
    ret = _LIB.LGBM_DatasetUpdateParamChecking(_c_str(params_to_str(old)), _c_str(params_to_str(new)))
    return None if ret == 0 else _LIB.LGBM_GetLastError().decode("utf-8")


def num_features(handle: ctypes.c_void_p) -> int:
    """The number of features of a C Dataset (LightGBM's total, unused ones included)."""
    out = ctypes.c_int(0)
    _check(_LIB.LGBM_DatasetGetNumFeature(handle, ctypes.byref(out)))
    return int(out.value)


def num_rows(handle: ctypes.c_void_p) -> int:
    out = ctypes.c_int32(0)
    _check(_LIB.LGBM_DatasetGetNumData(handle, ctypes.byref(out)))
    return int(out.value)


def _has_field(handle: ctypes.c_void_p, field: str) -> bool:
    out_len = ctypes.c_int(0)
    out_ptr = ctypes.c_void_p()
    out_type = ctypes.c_int(0)
    _check(
        _LIB.LGBM_DatasetGetField(
            handle, _c_str(field), ctypes.byref(out_len), ctypes.byref(out_ptr), ctypes.byref(out_type)
        )
    )
    return out_len.value > 0


def has_group(handle: ctypes.c_void_p) -> bool:
    """Whether a C Dataset holds query boundaries."""
    return _has_field(handle, "group")


def has_init_score(handle: ctypes.c_void_p) -> bool:
    """Whether a C Dataset holds initial scores (LightGBM's predictor then starts from them)."""
    return _has_field(handle, "init_score")
