"""What a run handed to ``lightgbm.train`` needs of LightGBM's internals: its per-iteration
record, the ``[smart_lgbm ...]`` note of the model's ``parameters:`` section, LightGBM's
logger.

:class:`StockIterations` gives a ``lightgbm.train`` run the engine's per-iteration record
(what :func:`smart_lgbm.record_sampling` reads as ``env.model.last_record``).  It relies on
``lightgbm.train`` calling ``booster.update()`` once per iteration between the
before-iteration and the after-iteration callbacks, on the Booster those callbacks get as
``env.model``: the first before-iteration call wraps that Booster's ``update`` (an
attribute of the instance, removed by :meth:`StockIterations.detach`) to time it and count
the trees it adds.  ``tests/test_lightgbm_internals.py`` pins it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
from lightgbm.basic import _log_info

__all__ = ["StockIterations", "log_info"]


def log_info(message: str) -> None:
    """Say ``message`` as LightGBM says its ``[Info]`` lines from Python: through LightGBM's
    logger (``print`` unless ``lightgbm.register_logger`` gave another)."""
    _log_info(message)


class StockIterations:
    """Callbacks that record each iteration of a ``lightgbm.train`` run as the engine does.

    Parameters
    ----------
    extra : dict
        Entries every iteration's record carries besides the counts and seconds (the
        sampler's name and the reason it ran).
    samples_rows : bool
        Whether the parameters make LightGBM draw rows (bagging, GOSS): each iteration's
        rows are then read from its tree (the root's count), else they are the training set's.

    Attributes
    ----------
    callbacks : list
        The before-iteration and the after-iteration callback to pass to ``lightgbm.train``;
        the after-iteration one runs before any other (``order`` -inf), so that
        ``record_sampling`` and the user's callbacks see the iteration's record.
    """

    def __init__(self, extra: dict[str, Any], samples_rows: bool) -> None:
        self.extra = dict(extra)
        self.samples_rows = samples_rows
        self._booster: lgb.Booster | None = None
        self._seconds = 0.0
        self._trees = 0

        def before(env: Any) -> None:
            if self._booster is None:
                self._wrap(env.model)

        def after(env: Any) -> None:
            booster = env.model
            rows = booster.train_set.num_data()
            sampled = self._rows_of_newest(booster) if self.samples_rows else rows
            booster.last_record = {
                "iteration": env.iteration, "num_sampled": sampled, "sampling_rate": sampled / rows,
                "num_trees": self._trees, "sample_seconds": 0.0, "tree_seconds": self._seconds,
                "update_seconds": 0.0, "seconds": self._seconds, **self.extra,
            }

        before.before_iteration = True  # type: ignore[attr-defined]
        before.order = float("-inf")  # type: ignore[attr-defined]
        after.order = float("-inf")  # type: ignore[attr-defined]
        self.callbacks: list[Callable[[Any], None]] = [before, after]

    def _wrap(self, booster: lgb.Booster) -> None:
        self._booster = booster
        update = booster.update

        def timed_update(*args: Any, **kwargs: Any) -> Any:
            trees = booster.num_trees()
            start = time.perf_counter()
            try:
                return update(*args, **kwargs)
            finally:
                self._seconds = time.perf_counter() - start
                self._trees = booster.num_trees() - trees

        booster.update = timed_update  # type: ignore[method-assign]

    @staticmethod
    def _rows_of_newest(booster: lgb.Booster) -> int:
        """Rows the newest iteration's first tree was grown on (its root's count)."""
        trees = booster.dump_model(start_iteration=booster.current_iteration() - 1, num_iteration=1)["tree_info"]
        if not trees:
            return 0
        root = trees[0]["tree_structure"]
        return int(root["internal_count"] if "internal_count" in root else root["leaf_count"])

    def detach(self, booster: lgb.Booster) -> None:
        """Remove what the callbacks put on ``booster`` (the wrapped ``update``, the record)."""
        for name in ("update", "last_record"):
            booster.__dict__.pop(name, None)
