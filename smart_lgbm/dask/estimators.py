"""The Dask estimators: ``DaskSmartClassifier``, ``DaskSmartRegressor``, ``DaskSmartRanker``.

They mirror :mod:`lightgbm.dask`'s estimators (same constructor parameters plus ``sampler``,
``sampler_params`` and ``client``; ``fit`` on Dask arrays and DataFrames; ``predict`` on Dask
collections; ``to_local()``); ``fit`` runs :func:`.training._fit_distributed`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as ss

import dask.array as da
import dask.dataframe as dd
from distributed import Client, default_client

from .. import _lightgbm
from ..sklearn import SmartClassifier, SmartRanker, SmartRegressor, _smart_init

from .training import DaskTrainingError, _fit_distributed
from .worker import _WorkerResult


# --------------------------------------------------------------------------- prediction


def _predict_part(part: Any, model: Any, method: str, kwargs: dict[str, Any]) -> Any:
    if part.shape[0] == 0:
        result = np.zeros((0,))
    else:
        result = getattr(model, method)(part, **kwargs)
    if isinstance(part, pd.DataFrame):
        if result.ndim == 2:
            return pd.DataFrame(result, index=part.index)
        return pd.Series(result, index=part.index, name="predictions")
    return result


def _predict(model: Any, X: Any, method: str, dtype: Any, kwargs: dict[str, Any]) -> da.Array:
    """``model.method(X_partition)`` for every partition, as one Dask Array."""
    if isinstance(X, dd.DataFrame):
        sample = _predict_part(X._meta_nonempty, model, method, kwargs)
        meta = sample.iloc[:0]
        return X.map_partitions(_predict_part, model, method, kwargs, meta=meta).values
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features), got {X.ndim}-D")
        if len(X.chunks[1]) != 1:
            X = X.rechunk({1: X.shape[1]})
        meta_row = X._meta if ss.issparse(X._meta) else np.zeros((1, X.shape[1]), dtype=X.dtype)
        if ss.issparse(meta_row):
            meta_row = ss.csr_matrix((1, X.shape[1]), dtype=X.dtype)
        sample = _predict_part(meta_row, model, method, kwargs)
        if sample.ndim == 1:
            return X.map_blocks(_predict_part, model, method, kwargs, drop_axis=1, dtype=dtype,
                                meta=np.zeros((0,), dtype=dtype))
        return X.map_blocks(_predict_part, model, method, kwargs, chunks=(X.chunks[0], (sample.shape[1],)),
                            dtype=dtype, meta=np.zeros((0, 0), dtype=dtype))
    raise TypeError(f"X must be a Dask Array or Dask DataFrame, got {type(X).__name__}")


# --------------------------------------------------------------------------- estimators


class _DaskSmartModel:
    """What the three Dask estimators share: the fit on the workers, ``to_local``, pickling."""

    # (The estimators' fit/predict take and give Dask collections, so their signatures
    # differ from the local estimators' ("type: ignore[override]"), as in lightgbm.dask.)
    _local_class: type
    # from the LGBMModel subclass each estimator also derives from
    client: Client | None
    get_params: Callable[..., dict[str, Any]]

    @property
    def client_(self) -> Client:
        """The Dask client used by ``fit`` and ``predict`` (``client`` or the default one)."""
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("Cannot access property client_ before calling fit().")
        return self._dask_client()

    def _dask_client(self) -> Client:
        return self.client if self.client is not None else default_client()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["client"] = None  # a Client cannot be pickled (lightgbm.dask drops it too)
        return state

    def _dask_fit(self, X: Any, y: Any, **kwargs: Any) -> Any:
        params = self.get_params()
        params.pop("client", None)
        known = {k: kwargs.pop(k) for k in ("sample_weight", "init_score", "group", "eval_set", "eval_names",
                                            "eval_sample_weight", "eval_class_weight", "eval_init_score",
                                            "eval_group") if k in kwargs}
        for key in ("eval_metric", "eval_at"):
            if kwargs.get(key) is None:
                kwargs.pop(key, None)
        client = self._dask_client()
        try:
            outcome = _fit_distributed(client, self._local_class, params, X, y, **known, fit_kwargs=kwargs)
        except DaskTrainingError:
            raise
        except Exception as exc:
            if client.status in ("running", "connecting"):
                raise
            # closed at any step of the fit (survey, port search, training): whatever the
            # step's own error (a cancelled future, a KeyError from an empty scheduler reply)
            raise DaskTrainingError(
                f"the Dask client was closed (status {client.status!r}) while the fit was running "
                f"({type(exc).__name__} in the meantime); keep the client open until fit returns") from exc
        # Only now, after success, does the estimator change.
        own = set(self.get_params())
        for key, value in outcome.model.__dict__.items():
            if key not in own and key not in ("_other_params", "client"):
                self.__dict__[key] = value
        self._worker_records = [r.records for r in outcome.results]
        self._worker_rows = [r.num_rows for r in outcome.results]
        self._sampling_record = _combine_records(outcome.results)
        return self

    @property
    def worker_records_(self) -> list[dict[str, list]]:
        """list of dict: Each worker's engine record per iteration, in rank order: rows drawn
        (``num_sampled``), ``sampling_rate``, and the seconds of the sample, the tree (including
        LightGBM's network exchange) and the score update."""
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("No worker record found. Need to call fit beforehand.")
        return self._worker_records

    def to_local(self) -> Any:
        """The fitted model as the matching local estimator (``SmartClassifier``...), holding
        a stock :class:`lightgbm.Booster`."""
        params = self.get_params()
        params.pop("client", None)
        local = self._local_class(**params)
        own = set(params) | {"client"}
        for key, value in self.__dict__.items():
            if key not in own and key != "_other_params":
                local.__dict__[key] = value
        return local

    def _dask_predict(self, X: Any, method: str, dtype: Any, **kwargs: Any) -> da.Array:
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("Estimator not fitted, call fit before exploiting the model.")
        return _predict(self.to_local(), X, method, dtype, kwargs)


def _combine_records(results: list[_WorkerResult]) -> dict[str, list]:
    """The run's sampling record from the workers': rows drawn added up, the rate over all
    rows, and the seconds of the slowest worker (every iteration waits for it)."""
    total_rows = sum(r.num_rows for r in results)
    sampled = [sum(values) for values in zip(*(r.records.get("num_sampled", []) for r in results), strict=False)]
    out: dict[str, list] = {"num_sampled": sampled, "sampling_rate": [s / total_rows for s in sampled]}
    for key in ("sample_seconds", "seconds"):
        out[key] = [max(values) for values in zip(*(r.records.get(key, []) for r in results), strict=False)]
    return out


def _dask_init(self: Any, *, client: Client | None = None, **kwargs: Any) -> None:
    # Only stores parameters (scikit-learn's rule), as the local estimators.
    self.client = client
    _smart_init(self, **kwargs)


_params = list(inspect.signature(_smart_init).parameters.values())
_dask_init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    _params[:-1] + [inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)] + _params[-1:])
_dask_init.__doc__ = (_smart_init.__doc__ or "").replace(
    "    **kwargs",
    """    client : dask.distributed.Client or None, optional (default=None)
        Dask client; None uses ``distributed.default_client()`` when fitting and predicting.
        Not kept when the estimator is pickled.
    **kwargs""", 1)

_FIT_DOC = """Fit on Dask collections: every worker trains on the partitions it holds.

        Parameters
        ----------
        X : Dask Array or Dask DataFrame of shape = [n_samples, n_features]
            Row-partitioned; each worker's partitions are its rows.
        y : Dask Array or Dask Series, partitioned like X
        sample_weight, init_score{group} : Dask Array or Dask Series, optional
            Partitioned like X.
        eval_set : list of (X, y) pairs of Dask collections, optional
            Partition ``j`` is evaluated on the worker of training partition ``j % n``; each
            worker evaluates only the rows it holds, and ``evals_result_`` is worker 0's.
        eval_names, eval_sample_weight, eval_init_score{eval_more} : optional
            As in lightgbm.dask.
        eval_metric : str, callable or list, optional
        **kwargs
            Passed to the local estimator's ``fit`` on every worker (``callbacks``,
            ``feature_name``, ``categorical_feature``...).  Early stopping is refused.

        Returns
        -------
        self
        """


class DaskSmartClassifier(SmartClassifier, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartClassifier` on Dask, mirroring
    :class:`lightgbm.DaskLGBMClassifier`; see :mod:`smart_lgbm.dask`."""

    _local_class = SmartClassifier
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, eval_set: list | None = None,  # type: ignore[override]
            eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_class_weight: list | None = None, eval_init_score: list | None = None, eval_metric: Any = None,
            **kwargs: Any) -> DaskSmartClassifier:
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_class_weight=eval_class_weight, eval_init_score=eval_init_score,
                              eval_metric=eval_metric, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group="", eval_more=", eval_class_weight")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Predicted class labels (or raw scores, leaves, contributions, as ``kwargs`` ask)
        of every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", self.classes_.dtype, **kwargs)

    def predict_proba(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Class probabilities of every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict_proba", np.float64, **kwargs)


class DaskSmartRegressor(SmartRegressor, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartRegressor` on Dask, mirroring
    :class:`lightgbm.DaskLGBMRegressor`; see :mod:`smart_lgbm.dask`."""

    _local_class = SmartRegressor
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, eval_set: list | None = None,  # type: ignore[override]
            eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_init_score: list | None = None, eval_metric: Any = None, **kwargs: Any) -> DaskSmartRegressor:
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_init_score=eval_init_score, eval_metric=eval_metric, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group="", eval_more="")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Predictions for every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", np.float64, **kwargs)


class DaskSmartRanker(SmartRanker, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartRanker` on Dask, mirroring
    :class:`lightgbm.DaskLGBMRanker`; see :mod:`smart_lgbm.dask`.  Every query must lie
    within one partition (``group`` gives the query sizes of each partition in order)."""

    _local_class = SmartRanker
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, group: Any = None,  # type: ignore[override]
            eval_set: list | None = None, eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_init_score: list | None = None, eval_group: list | None = None, eval_metric: Any = None,
            eval_at: list[int] | tuple[int, ...] = (1, 2, 3, 4, 5), **kwargs: Any) -> DaskSmartRanker:
        if group is None:
            raise ValueError("group is required for ranking: a Dask Array or Series of query sizes, partitioned "
                             "like X (each partition's queries in order, every query within one partition)")
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, group=group,
                              eval_set=eval_set, eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_init_score=eval_init_score, eval_group=eval_group, eval_metric=eval_metric,
                              eval_at=eval_at, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group=", group", eval_more=", eval_group, eval_at")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Relevance scores for every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", np.float64, **kwargs)
