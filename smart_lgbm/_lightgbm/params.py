"""LightGBM's parameter aliases and its ``key=value`` parameter string."""

from __future__ import annotations

import ctypes
import json
from functools import lru_cache
from typing import Any

import numpy as np

from ._capi import _LIB, _check


@lru_cache(maxsize=1)
def param_aliases() -> dict[str, tuple[str, ...]]:
    """LightGBM's parameter aliases: canonical name -> (name, alias, alias, ...)."""
    size = 1 << 20
    out_len = ctypes.c_int64(0)
    buf = ctypes.create_string_buffer(size)
    _check(_LIB.LGBM_DumpParamAliases(ctypes.c_int64(size), ctypes.byref(out_len), buf))
    raw = json.loads(buf.value.decode("utf-8"))
    return {name: tuple(dict.fromkeys([name, *aliases])) for name, aliases in raw.items()}


def _param_value_str(value: Any) -> str:
    # as lightgbm.basic._param_dict_to_str: bools lower-case, a list inside a list in
    # brackets (interaction_constraints=[0,1],[2,3]), never a space, which would end the
    # value: LightGBM's parser splits the whole string at whitespace.
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return "[" + ",".join(_param_value_str(v) for v in value) + "]"
    return str(value)


def params_to_str(params: dict[str, Any]) -> str:
    """LightGBM's ``key=value`` parameter string, written as ``lightgbm.train`` writes it.

    Lists are comma-joined, lists of lists as ``[a,b],[c,d]``, None dropped; a value whose
    text would hold whitespace is refused (LightGBM would split it into other parameters).
    """
    pairs = []
    for key, val in params.items():
        if val is None:
            continue
        if isinstance(val, (list, tuple, set, np.ndarray)):
            text = ",".join(_param_value_str(v) for v in val)
        else:
            text = _param_value_str(val)
        if any(c.isspace() for c in text):
            raise ValueError(f"parameter {key}={val!r} cannot be passed to LightGBM: its text {text!r} "
                             "holds whitespace, which LightGBM's parameter parser splits at")
        pairs.append(f"{key}={text}")
    return " ".join(pairs)
