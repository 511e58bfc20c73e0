"""LightGBM's C library as the package calls it: the ``_LIB`` handle, error checks, C strings."""

from __future__ import annotations

import ctypes

import lightgbm as lgb
from lightgbm import basic as _basic

_LIB = _basic._LIB
_DTYPE_FLOAT32 = 0
_DTYPE_FLOAT64 = 1
_DTYPE_INT32 = 2


def _check(ret: int) -> None:
    if ret != 0:
        raise lgb.basic.LightGBMError(_LIB.LGBM_GetLastError().decode("utf-8"))


def _c_str(value: str) -> ctypes.c_char_p:
    return ctypes.c_char_p(value.encode("utf-8"))
