"""Bin mappers, read from the binary Dataset file LightGBM writes (the C API has no other way to them)."""

from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._capi import _LIB, _c_str, _check
from .datasets import SubsetHandle


@dataclass(frozen=True)
class BinMapper:
    """How LightGBM bins one feature (its ``BinMapper``), as far as the engine needs it.

    Attributes
    ----------
    categorical : bool
    missing_type : int
        0 None, 1 Zero, 2 NaN (LightGBM's ``MissingType``).
    upper_bounds : ndarray of float64
        Numerical features: each bin's upper bound, in order (LightGBM's
        ``bin_upper_bound_``; every numerical threshold of a tree is one of them).
        Categorical features: empty.
    categories : ndarray of int32
        Categorical features: each bin's category (LightGBM's ``bin_2_categorical_``): bin 0
        holds -1 (NaN, negative values and every category without a bin of its own), bins
        1, 2, ... one category each, most frequent first.  Numerical features: empty.
    """

    categorical: bool
    missing_type: int
    upper_bounds: np.ndarray
    categories: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, dtype=np.int32))


class _Reader:
    """Sequential reads of LightGBM's binary Dataset file (``VirtualFileWriter``'s layout:
    ``AlignedWrite`` pads every field to 8 bytes, ``Write`` does not)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def skip(self, size: int, aligned: bool = True) -> None:
        self.pos += (size + 7) // 8 * 8 if aligned else size

    def array(self, dtype: str, count: int, aligned: bool = True) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.skip(out.nbytes, aligned)
        return out

    def scalar(self, dtype: str, aligned: bool = True) -> Any:
        return self.array(dtype, 1, aligned)[0]


_BINARY_TOKEN = b"______LightGBM_Binary_File_Token______\n"


def bin_mappers(handle: ctypes.c_void_p) -> list[BinMapper | None]:
    """LightGBM's bin mapper of every feature of a C Dataset (None for the features it
    does not use), read from the binary file LightGBM writes for it.

    LightGBM's C API has no call that returns bin boundaries; ``LGBM_DatasetSaveBinary``
    writes them (``Dataset::SaveBinaryFile``: a header, the metadata, then every feature
    group with its ``BinMapper``s and bins).  It is written for a one-row subset (same bin
    mappers), so the file holds little more than the mappers, in a temporary folder for the
    time of the call.

    Raises
    ------
    OSError
        The temporary file cannot be written or read.
    RuntimeError
        The file is not laid out as this LightGBM version was tested to write it.
    """
    import os
    import tempfile

    one_row = SubsetHandle(handle, np.zeros(1, dtype=np.int32), "verbosity=-1")
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "mappers.bin")
            _check(_LIB.LGBM_DatasetSaveBinary(one_row.handle, _c_str(path)))
            with open(path, "rb") as fh:
                data = fh.read()
    finally:
        one_row.free()
    if not data.startswith(_BINARY_TOKEN):
        raise RuntimeError("LightGBM's binary Dataset file does not start with the expected token")
    r = _Reader(data)
    r.skip(len(_BINARY_TOKEN))
    r.skip(8, aligned=False)  # size of the header
    _num_data, num_features, num_total = (int(r.scalar("<i4")) for _ in range(3))
    for _ in range(4):  # label_idx, max_bin, bin_construct_sample_cnt, min_data_in_bin
        r.skip(4)
    for _ in range(3):  # use_missing, zero_as_missing, has_raw
        r.skip(1)
    used_feature_map = r.array("<i4", num_total)
    num_groups = int(r.scalar("<i4"))
    r.skip(4 * num_features)  # real_feature_idx
    feature2group = r.array("<i4", num_features)
    feature2subfeature = r.array("<i4", num_features)
    r.skip(8 * (num_groups + 1), aligned=False)  # group_bin_boundaries
    r.skip(4 * num_groups)  # group_feature_start
    r.skip(4 * num_groups)  # group_feature_cnt
    r.skip(4 * num_total)  # max_bin_by_feature
    for _ in range(num_total):  # feature names
        r.skip(int(r.scalar("<i4")))
    for _ in range(num_total):  # forced bin bounds
        r.skip(8 * int(r.scalar("<i4")), aligned=False)
    r.skip(int(r.scalar("<u8", aligned=False)), aligned=False)  # metadata
    groups: list[list[BinMapper]] = []
    for _ in range(num_groups):
        size = int(r.scalar("<u8", aligned=False))
        end = r.pos + size
        for _ in range(3):  # is_multi_val, is_dense_multi_val, is_sparse
            r.skip(1)
        mappers = []
        for _ in range(int(r.scalar("<i4"))):
            num_bin = int(r.scalar("<i4"))
            missing_type = int(r.scalar("<i4"))
            r.skip(1)  # is_trivial
            r.skip(8, aligned=False)  # sparse_rate
            categorical = int(r.scalar("<i4")) == 1
            r.skip(16, aligned=False)  # min_val, max_val
            r.skip(4)  # default_bin
            r.skip(4)  # most_freq_bin
            if categorical:
                categories = r.array("<i4", num_bin, aligned=False).astype(np.int32)
                bounds = np.empty(0)
            else:
                categories = np.empty(0, dtype=np.int32)
                bounds = r.array("<f8", num_bin, aligned=False).copy()
            mappers.append(BinMapper(categorical, missing_type, bounds, categories))
        groups.append(mappers)
        r.pos = end
    out: list[BinMapper | None] = []
    for feature in range(num_total):
        inner = int(used_feature_map[feature])
        out.append(None if inner < 0 else groups[feature2group[inner]][feature2subfeature[inner]])
    return out
