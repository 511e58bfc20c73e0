"""What the samplers' compiled passes read and reuse: ``(n, K)`` arrays and per-sampler buffers."""

from __future__ import annotations

import threading

import numpy as np


class Workspace:
    """Buffers a sampler reuses across iterations.

    Per thread (one sampler object may serve concurrent runs), and never copied or
    pickled with the sampler.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def value(self, name: str) -> object:
        """A small value kept under ``name`` (None if none)."""
        return self._local.__dict__.setdefault("values", {}).get(name)

    def keep(self, name: str, value: object) -> None:
        self._local.__dict__.setdefault("values", {})[name] = value

    def array(self, name: str, n: int, dtype: type) -> np.ndarray:
        arrays = self._local.__dict__.setdefault("arrays", {})
        arr = arrays.get(name)
        if arr is None or arr.shape != (n,) or arr.dtype != dtype:
            arr = np.empty(n, dtype=dtype)
            arrays[name] = arr
        return arr

    def __deepcopy__(self, memo: dict) -> Workspace:
        return Workspace()

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self._local = threading.local()


def workspace_of(owner: object) -> Workspace:
    """The :class:`Workspace` stored on ``owner`` (created on first use)."""
    ws = owner.__dict__.get("_workspace")
    if ws is None:
        ws = Workspace()
        owner.__dict__["_workspace"] = ws
    return ws


def as_rows(values: np.ndarray) -> np.ndarray:
    """``(n,)`` or ``(n, K)`` -> C-contiguous ``(n, K)`` in float32 or float64 (no copy when possible)."""
    arr = np.asarray(values)
    dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    return arr.reshape(arr.shape[0], -1) if arr.ndim == 1 else arr
