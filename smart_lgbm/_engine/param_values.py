"""Reading single LightGBM parameter values: flags, numbers and lists of numbers.

LightGBM accepts each of these in several spellings (``True``/``"true"``/``"+"``,
``"0,1,3"`` or ``[0, 1, 3]``); the engine's parameter handling and its metrics read them
through these functions, so a value is read, and refused, the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def flag(value: Any) -> bool:
    """A boolean LightGBM parameter: ``True``, ``"true"``/``"+"`` (any case, as LightGBM reads
    it) or ``1`` count as set."""
    return str(value).strip().lower() in ("true", "1", "+")


def number(params: Mapping[str, Any], key: str, default: float) -> float:
    """``params[key]`` (or ``default``) as a float; ``TypeError`` naming ``key`` otherwise."""
    value = params.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"parameter {key} must be a number, got {value!r}") from None


def integer(params: Mapping[str, Any], key: str, default: int) -> int:
    """``params[key]`` (or ``default``) as an int; ``TypeError`` naming ``key`` for anything
    that is not a whole number."""
    value = number(params, key, default)
    if isinstance(params.get(key), bool) or not (np.isfinite(value) and value == int(value)):
        raise TypeError(f"parameter {key} must be an integer, got {params.get(key, default)!r}")
    return int(value)


def number_list(value: Any, key: str) -> list[float]:
    """A LightGBM multi-value parameter (``"0,1,3"``, a sequence, or one number) as floats."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    elif np.ndim(value) == 0:
        value = [value]
    out = []
    for item in value:
        if isinstance(item, bool):
            raise TypeError(f"parameter {key} must be a list of numbers, got {value!r}")
        try:
            out.append(float(item))
        except (TypeError, ValueError):
            raise TypeError(f"parameter {key} must be a list of numbers, got {value!r}") from None
    return out
