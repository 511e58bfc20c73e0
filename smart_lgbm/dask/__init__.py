"""Distributed SMART on Dask: ``DaskSmartClassifier``, ``DaskSmartRegressor``, ``DaskSmartRanker``.

The estimators mirror :mod:`lightgbm.dask` (same constructor parameters plus ``sampler``,
``sampler_params`` and ``client``; ``fit`` on Dask arrays and DataFrames; ``predict`` on
Dask collections; ``to_local()``).  Training runs :func:`smart_lgbm.train` on every Dask
worker that holds training rows, over the partitions already there (no reshuffle):

1. the partitions of ``X``, ``y`` (and weights, groups, initial scores, evaluation sets) are
   gathered into per-partition pieces, each computed where its data lives, as lightgbm.dask
   does; the workers holding them, ordered by their first partition, get ranks 0, 1, ...;
2. a short survey counts each worker's rows (a worker with only empty partitions takes no
   part), for a classifier checks that every worker sees every class (LightGBM's
   classifier encodes labels on each worker from its own rows), and runs on every worker
   all the checks its fit makes before training (:func:`smart_lgbm.sklearn.check_fit`: at
   least two rows, labels, weights, groups, evaluation sets...), so that no refusal comes
   after a worker joined LightGBM's network;
3. LightGBM's network parameters are set as lightgbm.dask sets them (``machines``,
   ``local_listen_port``, ``time_out``; free ports found on the workers by default);
4. each worker joins LightGBM's network *before* binning its rows (bin boundaries are found
   jointly, as in lightgbm.dask) and runs the engine: its own rows' gradients, its own
   sample (sampling stream = its rank), LightGBM's data-parallel learner building each tree
   from all workers' samples, its own rows' scores updated (:mod:`smart_lgbm.distributed`);
5. the client watches the run: a worker's error, a worker leaving the cluster, or no
   progress from a worker for ``time_out`` minutes fails the fit at once with a message
   naming the worker; the estimator is only changed by a fit that succeeded.  Every worker
   returns a digest of its model, and the fit fails unless all are identical.

What is refused, and why: early stopping (each worker evaluates only its own rows and would
stop at its own iteration; the others would then wait on the network forever),
``tree_learner="feature"`` (needs all rows on every machine, and LightGBM's C API refuses
it), and everything :func:`smart_lgbm.train` refuses.  See ``docs/dask.md``.
"""

from __future__ import annotations

try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "smart_lgbm.dask needs dask and distributed: pip install 'smart-lgbm[dask]' "
        f"(import failed: {exc})"
    ) from exc

from .estimators import DaskSmartClassifier, DaskSmartRanker, DaskSmartRegressor  # noqa: E402
from .training import DaskTrainingError  # noqa: E402

__all__ = ["DaskSmartClassifier", "DaskSmartRanker", "DaskSmartRegressor", "DaskTrainingError"]

# The public classes under the package's name (how they pickle and print): smart_lgbm.dask.X
for _public in (DaskSmartClassifier, DaskSmartRanker, DaskSmartRegressor, DaskTrainingError):
    _public.__module__ = __name__
del _public
