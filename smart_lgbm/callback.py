"""Callbacks in LightGBM's convention (``callback(env)``, with ``order``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightgbm.callback import CallbackEnv

_FIELDS = ("num_sampled", "sampling_rate", "num_trees", "sample_seconds", "tree_seconds", "update_seconds",
           "seconds", "sampler", "sampler_reason")


def record_sampling(out: dict[str, list[Any]]) -> Callable[[CallbackEnv], None]:
    """Record, per iteration, the rows sampled, the sampling rate and the seconds spent.

    Works with :func:`smart_lgbm.train` (and the scikit-learn estimators).  ``out`` is
    cleared, then gets one entry per iteration under:

    * ``num_sampled``: rows the tree learner saw; ``sampling_rate``: that over all rows;
    * ``num_trees``: trees the iteration added (0 when its sample could not split);
    * ``sample_seconds``: gradients of all rows and the draw; ``tree_seconds``: LightGBM
      fitting the tree(s) on the sample (subset copy included); ``update_seconds``: every
      training and validation row's score update; ``seconds``: the whole training step of
      the iteration (their sum; evaluation excluded);
    * ``sampler``: the method that ran the iteration (the sampler's repr, or with
      ``sampler="auto"`` what it chose, e.g. ``stock LightGBM (lightgbm.train)``);
      ``sampler_reason``: why (``"given"`` for a sampler passed in; ``sampler="auto"``'s
      rule, the facts it read and the results it rests on).

    Where ``sampler="auto"`` hands the run to ``lightgbm.train`` (small data...), every
    iteration draws every row (``sampling_rate`` 1.0, unless the parameters ask LightGBM to
    bag), ``tree_seconds`` and ``seconds`` are LightGBM's ``update()`` (its tree and its
    own score update) and ``sample_seconds``, ``update_seconds`` are 0.

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
