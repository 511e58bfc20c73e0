"""Callbacks in LightGBM's convention (``callback(env)``, with ``order``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightgbm.callback import CallbackEnv

_FIELDS = ("num_sampled", "sampling_rate", "sample_seconds", "seconds")


def record_sampling(out: dict[str, list[Any]]) -> Callable[[CallbackEnv], None]:
    """Record, per iteration, the rows sampled, the sampling rate and the seconds spent.

    Works with :func:`smart_lgbm.train` (and the scikit-learn estimators).  ``out`` is
    cleared, then gets lists under ``num_sampled``, ``sampling_rate`` (sampled rows / all
    rows), ``sample_seconds`` (gradients and sampling) and ``seconds`` (the whole training
    step of the iteration, evaluation excluded), one entry per iteration.

    Parameters
    ----------
    out : dict
        Filled in place, like ``lightgbm.record_evaluation``'s ``eval_result``.
    """
    if not isinstance(out, dict):
        raise TypeError(f"out must be a dict, got {type(out).__name__}")
    out.clear()
    for key in _FIELDS:
        out[key] = []

    def _callback(env: CallbackEnv) -> None:
        record = getattr(env.model, "last_record", None)
        if not record:
            raise TypeError("record_sampling works with smart_lgbm.train; this model has no sampling record")
        for key in _FIELDS:
            out[key].append(record[key])

    _callback.order = 25  # type: ignore[attr-defined]
    return _callback
