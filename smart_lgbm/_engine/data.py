"""The engine's view of the caller's Datasets: targets, binned rows and raw features.

For every set the engine needs the rows' labels, weights, groups and initial scores (a
:class:`~smart_lgbm.losses.Target` plus init scores) and a way to add each new tree's
output to every row's tracked score:

* the **training set** always gets binned rows for LightGBM's tree learner (each sample
  is a subset of them); its scores are updated by the compiled walk over the caller's raw
  features (:mod:`smart_lgbm._engine.walk`) where those are in memory;
* a **validation set** whose raw features are in memory is never binned at all: the walk
  reads them directly.  Only one without raw features (a file, a constructed Dataset whose
  raw data was freed) gets binned rows, read through LightGBM's binned predictor (slower;
  the engine says so once).

The engine never changes a Dataset it is given (BRIEF pitfall: setting init scores on the
caller's objects silently corrupts their next training run), and never constructs one
either (construction frees a Dataset's raw data by default).  Where the caller's Dataset is
not constructed yet, the engine bins its own copy from the same raw data and parameters;
where it is already constructed, its binned rows are only read.  ``Dataset.subset(...)``
works as in ``lightgbm.train``: the parent's bins, the subset's rows.  A ranking Dataset can
only be subset by whole queries, so the engine's training copy carries no groups: query
boundaries live in the loss's :class:`Target`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from .. import _lightgbm
from ..losses.base import Loss, Target, check_finite
from .config import RunConfig
from .params import dataset_params
from .walk import RawFeatures

_UNSET: Any = object()


@dataclass
class EngineSet:
    """One data set as the engine sees it.

    Attributes
    ----------
    name : str
    target : Target
    init_score : ndarray of shape (n, K) or None
        The caller's initial scores (boosting then starts from them, no boost-from-average).
    source : lightgbm.Dataset
        The caller's Dataset (handed to ``feval``).
    handle : C Dataset handle or None
        Binned rows aligned with the training set's bin mappers: always for the training
        set, for a validation set only when its raw features are not in memory.
    native_init_score : ndarray or None
        Init score LightGBM itself holds for ``handle`` (class-major), which its predictor
        starts from.
    keep : list
        Objects the engine built that must stay alive as long as ``handle`` (its own
        Dataset, subsets of it; freed by :meth:`release_binned`).
    reference : lightgbm.Dataset or None
        Training set only: the Dataset that validation sets are binned against.
    pandas_categorical : list or None
        Training set only: the categories of its pandas categorical columns.
    """

    name: str
    target: Target
    init_score: np.ndarray | None
    source: lgb.Dataset
    handle: ctypes.c_void_p | None = None
    native_init_score: np.ndarray | None = None
    keep: list[Any] = field(default_factory=list)
    reference: lgb.Dataset | None = None
    pandas_categorical: list | None = None
    raw_source: Callable[[], RawFeatures | None] | None = field(default=None, repr=False)
    _raw: Any = field(default=_UNSET, repr=False)

    @property
    def num_rows(self) -> int:
        return self.target.num_rows

    @property
    def raw(self) -> RawFeatures | None:
        """The raw features the walk reads (built on first use), or None if not in memory."""
        if self._raw is _UNSET:
            self._raw = None if self.raw_source is None else self.raw_source()
        return self._raw

    def release_raw(self) -> None:
        """Drop the raw features (the engine walks bin codes of them instead)."""
        self._raw = None
        self.raw_source = None

    def release_binned(self) -> None:
        """Free the binned rows the engine built for this set (its own Dataset or subsets of
        it), once training is over; ``handle`` is then None.  Binned rows the caller
        constructed are never freed here (``keep`` holds only the engine's)."""
        for obj in self.keep:
            _lightgbm.free_owned(obj)
        self.keep.clear()
        self.handle = None


# --------------------------------------------------------------------------- fields


def _as_float_array(name: str, values: Any, n: int | None, dtype: type = np.float32) -> np.ndarray | None:
    """LightGBM stores labels and weights as float32: convert the same way, then check."""
    if values is None:
        return None
    try:
        arr = np.asarray(values, dtype=dtype).astype(np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {type(values).__name__}") from None
    check_finite(name, arr)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but the data has {n} rows")
    return arr


def _num_raw_rows(data: Any) -> int | None:
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if isinstance(data, list):
        return len(data)
    return None


def _fields_of(dataset: lgb.Dataset) -> dict[str, Any]:
    """Label, weight, group (query sizes) and init score of an unconstructed Dataset."""
    return {"label": dataset.label, "weight": dataset.weight, "group": dataset.group,
            "init_score": dataset.init_score}


def _fields_from_handle(dataset: lgb.Dataset) -> dict[str, Any]:
    """The same fields, read from a constructed Dataset."""
    fields = {name: dataset.get_field(name) for name in ("label", "weight", "init_score")}
    # A constructed Dataset stores query boundaries; the engine works with query sizes.
    boundaries = dataset.get_field("group")
    fields["group"] = None if boundaries is None else np.diff(boundaries)
    return fields


def _subset_fields(fields: dict[str, Any], rows: np.ndarray, n_parent: int) -> dict[str, Any]:
    """A parent's fields restricted to ``rows`` (sorted), as ``Dataset.subset`` takes them."""
    out: dict[str, Any] = {}
    for name in ("label", "weight"):
        values = fields[name]
        out[name] = None if values is None else np.asarray(values).reshape(-1)[rows]
    init = fields["init_score"]
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        # 1-D class-major (K * n) or 2-D (n, K): take the rows of each class
        out["init_score"] = init[rows] if init.ndim == 2 else init.reshape(-1, n_parent)[:, rows].reshape(-1)
    else:
        out["init_score"] = None
    group = fields["group"]
    if group is not None:
        # LightGBM's Dataset.subset: the subset's queries are the parent's, cut to the rows kept
        sizes = np.asarray(group, dtype=np.int64).reshape(-1)
        query_of_row = np.repeat(np.arange(sizes.shape[0]), sizes)
        out["group"] = np.unique(query_of_row[rows], return_counts=True)[1]
    else:
        out["group"] = None
    return out


def _target_and_scores(name: str, fields: dict[str, Any], n: int, loss: Loss) -> tuple[Target, np.ndarray | None]:
    label = _as_float_array(f"{name} label", fields["label"], n)
    if label is None:
        raise ValueError(f"{name} has no label; give the Dataset a label")
    weight = _as_float_array(f"{name} weight", fields["weight"], n)
    if weight is not None and np.any(weight < 0):
        raise ValueError(f"{name} weight must be non-negative")
    group = fields["group"]
    if group is not None:
        group = np.asarray(group).reshape(-1)
        if group.size == 0:
            group = None
        else:
            if not np.issubdtype(group.dtype, np.number) or np.any(group != np.floor(group)):
                raise ValueError(f"{name} group must hold integer query sizes")
            group = group.astype(np.int64)
            if np.any(group <= 0):
                raise ValueError(f"{name} group has an empty or negative query size; every query needs >= 1 row")
            if int(group.sum()) != n:
                raise ValueError(f"{name} group sizes sum to {int(group.sum())} but the data has {n} rows")
    init = fields["init_score"]
    k = loss.num_model_per_iteration
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        if init.size == 0:
            init = None
        else:
            check_finite(f"{name} init_score", init)
            if init.size != n * k:
                raise ValueError(f"{name} init_score has {init.size} values; expected {n * k} (rows x trees per iteration)")
            # lightgbm.Dataset keeps a 2-D init_score row-major (n, K), a 1-D one class-major.
            init = init.reshape(n, k) if init.ndim == 2 else init.reshape(k, n).T
    if loss.needs_group and group is None:
        raise ValueError(f"{name} needs query groups for {type(loss).__name__}: give the Dataset a group")
    target = Target(label=label, weight=weight, group=group if loss.needs_group or group is not None else None)
    loss.validate(target)
    return target, init


# --------------------------------------------------------------------------- binning


# The engine stores its own binned copy densely up to this many cells (rows x features),
# and beyond it while the dense bins take no more bytes than the raw sparse data itself.
_DENSE_CELLS = 1 << 27


def _raw_bytes(data: Any) -> int:
    """Bytes of a scipy.sparse matrix's stored arrays (0 for anything else)."""
    return sum(getattr(getattr(data, name, None), "nbytes", 0) for name in ("data", "indices", "indptr"))


def _storage_params(data: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Dense bin storage for the engine's own copy of sparse data while it is affordable.

    Sparse feature groups make LightGBM copy rows slowly into each sample's subset and
    rebuild a multi-value bin every time a Booster's training data changes: per iteration
    they cost more than the tree (470,000 x 700 CSR at rate 0.1, docs/results/
    profile_engine_parts.md: subset and reset 139 ms sparse, 11 ms dense; the tree itself
    21 ms sparse, 52 ms dense).
    Dense storage gives the same bins and trees at one byte per cell, so it is used up to
    2^27 cells, and beyond while that is no more than the bytes of the raw sparse matrix.
    An explicit ``is_enable_sparse`` is always respected.

    Iterations that draw every row fit on this dense copy too, column-wise, which costs
    several times stock full on wide sparse data (yahoo-like: docs/engine.md, "Sparse
    storage").  A sparse-binned twin of the copy for them (``reference=`` the copy) gives
    the same trees but no speed: LightGBM's column-wise sparse histograms walk every stored
    value per leaf, and its fast sparse path (the multi-value bin) sums per thread block,
    which the same-model-at-any-thread-count rule cannot take (docs/engine.md).
    """
    shape = getattr(data, "shape", None)
    if "is_enable_sparse" in params or shape is None or len(shape) != 2:
        return params
    cells = int(shape[0]) * int(shape[1])
    if cells <= _DENSE_CELLS or cells <= _raw_bytes(data):
        return {**params, "is_enable_sparse": False}
    return params


def _is_unconstructed_subset(dataset: lgb.Dataset) -> bool:
    return getattr(dataset, "used_indices", None) is not None and _lightgbm.handle_of(dataset) is None


def _subset_rows(dataset: lgb.Dataset) -> np.ndarray:
    parent = dataset.reference
    if not isinstance(parent, lgb.Dataset):
        raise ValueError("a Dataset.subset(...) must keep the Dataset it was taken from as its reference")
    return np.asarray(dataset.used_indices, dtype=np.int32)


def _raw_source(data: Any, pandas_categorical: Any) -> Callable[[], RawFeatures | None] | None:
    if data is None or isinstance(data, (str, Path)):
        return None
    return lambda: RawFeatures.from_data(data, pandas_categorical=pandas_categorical)


@dataclass
class _Binned:
    """Binned rows of a Dataset, the fields that go with them and how to reach its raw features."""

    handle: ctypes.c_void_p
    fields: dict[str, Any]
    keep: list[Any]
    owned: bool  # the engine built these rows itself (it may change their fields)
    pandas_categorical: list | None
    raw_source: Callable[[], RawFeatures | None] | None
    reference: lgb.Dataset


def _bin(dataset: lgb.Dataset, what: str, run_params: Mapping[str, Any],
         reference: lgb.Dataset | None = None) -> _Binned:
    """Binned rows of ``dataset`` with its fields, never constructing or changing it.

    ``run_params``: the run's binning parameters (:attr:`.config.RunConfig.dataset_params`),
    which update the Dataset's own as LightGBM binds them.  ``reference`` (validation sets)
    gives the bin mappers; the training set finds its own.
    """
    if _is_unconstructed_subset(dataset):
        rows = _subset_rows(dataset)
        assert dataset.reference is not None  # LightGBM's subset() sets its parent as reference
        parent = _bin(dataset.reference, what, run_params, reference)
        subset = _lightgbm.SubsetHandle(parent.handle, rows, "")
        n_parent = _lightgbm.num_rows(parent.handle)
        parent_raw = parent.raw_source
        return _Binned(
            subset.handle, _subset_fields(parent.fields, rows, n_parent), [*parent.keep, subset], True,
            parent.pandas_categorical,
            None if parent_raw is None else (lambda: _take(parent_raw(), rows)), parent.reference,
        )
    user_handle = _lightgbm.handle_of(dataset)
    ds_params = dataset_params({**(dataset.params or {}), **run_params})
    if user_handle is not None:
        # As lightgbm.train: binning parameters that differ from the constructed Dataset's
        # are refused once its raw data is gone, and bin the raw data anew while it is kept.
        conflict = _lightgbm.dataset_params_conflict(dataset.params or {}, dict(run_params))
        if conflict is None:
            return _Binned(user_handle, _fields_from_handle(dataset), [], False, dataset.pandas_categorical,
                           _raw_source(dataset.data, dataset.pandas_categorical), dataset)
        if dataset.data is None:
            raise lgb.basic.LightGBMError(f"{what}: {conflict}")
    if dataset.data is None:
        raise ValueError(f"{what} has neither raw data nor a constructed handle")
    keep: list[Any] = []
    if reference is None and isinstance(dataset.reference, lgb.Dataset):
        # A training set built with reference= is binned with the reference's bin mappers, as
        # lightgbm.train constructs it; the reference is binned with its own parameters
        # (the engine's copy of it when it is not constructed yet: never the caller's)
        ref = _bin(dataset.reference, f"{what}'s reference",
                   {k: v for k, v in run_params.items() if k == "verbosity"})
        keep, reference = list(ref.keep), ref.reference
    if isinstance(dataset.data, (str, Path)):
        own = lgb.Dataset(str(dataset.data), reference=reference, params=ds_params, free_raw_data=True).construct()
        fields = _fields_from_handle(own)
        if dataset.label is not None or dataset.weight is not None or dataset.group is not None:
            given = {k: v for k, v in _fields_of(dataset).items() if v is not None}
            fields.update(given)
    else:
        n = _num_raw_rows(dataset.data)
        _as_float_array(f"{what} label", dataset.label, n)  # fail early, before binning
        own = lgb.Dataset(
            dataset.data,
            label=dataset.label,
            reference=reference,
            feature_name=dataset.feature_name,
            categorical_feature=dataset.categorical_feature,
            params=_storage_params(dataset.data, ds_params),
            free_raw_data=True,
        ).construct()
        fields = _fields_of(dataset) if user_handle is None else _fields_from_handle(dataset)
    handle = _lightgbm.handle_of(own)
    assert handle is not None  # constructed just above
    return _Binned(handle, fields, [own, *keep], True, own.pandas_categorical,
                   _raw_source(dataset.data, own.pandas_categorical), own)


def _take(raw: RawFeatures | None, rows: np.ndarray) -> RawFeatures | None:
    return None if raw is None else raw.take(rows)


# --------------------------------------------------------------------------- the sets


def prepare_train(train_set: lgb.Dataset, config: RunConfig) -> EngineSet:
    """The engine's training set: binned rows for the tree learner, target, raw features."""
    if not isinstance(train_set, lgb.Dataset):
        raise TypeError(f"train_set must be a lightgbm.Dataset, got {type(train_set).__name__}")
    binned = _bin(train_set, "train_set", config.dataset_params)
    handle, keep = binned.handle, list(binned.keep)
    n = _lightgbm.num_rows(handle)
    target, init = _target_and_scores("train_set", binned.fields, n, config.loss)
    native_init = None
    if _lightgbm.has_group(handle) or (binned.owned and _lightgbm.has_init_score(handle)):
        if not binned.owned:
            # Read-only rule: copy the caller's binned rows before clearing anything.
            copy = _lightgbm.SubsetHandle(handle, np.arange(n, dtype=np.int32), "")
            keep.append(copy)
            handle = copy.handle
        _lightgbm.clear_field(handle, "group")
        _lightgbm.clear_field(handle, "init_score")
    elif init is not None and _lightgbm.has_init_score(handle):
        native_init = init.T.reshape(-1)
    return EngineSet("training", target, init, train_set, handle, native_init, keep, binned.reference,
                     binned.pandas_categorical, binned.raw_source)


def prepare_valid(valid_set: lgb.Dataset, name: str, train: EngineSet, config: RunConfig) -> EngineSet:
    """A validation set: its raw features for the walk, or else rows binned like the training set's."""
    if not isinstance(valid_set, lgb.Dataset):
        raise TypeError(f"valid_sets must hold lightgbm.Dataset objects, got {type(valid_set).__name__}")
    what = f"validation set {name!r}"
    fields, raw_source = _raw_view(valid_set, what, train.pandas_categorical)
    raw = None if raw_source is None else raw_source()
    assert train.handle is not None  # the training set is binned first
    num_features = _lightgbm.num_features(train.handle)
    if raw is not None:
        if raw.num_features != num_features:
            raise ValueError(f"{what} has {raw.num_features} features but the training data has {num_features}")
        target, init = _target_and_scores(what, fields, raw.num_rows, config.loss)
        out = EngineSet(name, target, init, valid_set)
        out._raw = raw
        return out
    binned = _bin(valid_set, what, config.dataset_params, reference=train.reference)
    n = _lightgbm.num_rows(binned.handle)
    target, init = _target_and_scores(what, binned.fields, n, config.loss)
    native = init.T.reshape(-1) if init is not None and _lightgbm.has_init_score(binned.handle) else None
    return EngineSet(name, target, init, valid_set, binned.handle, native, binned.keep)


def _raw_view(dataset: lgb.Dataset, what: str, pandas_categorical: list | None
              ) -> tuple[dict[str, Any], Callable[[], RawFeatures | None] | None]:
    """Fields and raw features of a Dataset without binning it (None when not in memory)."""
    if _is_unconstructed_subset(dataset):
        rows = _subset_rows(dataset)
        assert dataset.reference is not None  # LightGBM's subset() sets its parent as reference
        fields, parent_raw = _raw_view(dataset.reference, what, pandas_categorical)
        if parent_raw is None:
            return fields, None
        raw = parent_raw()
        if raw is None:
            return fields, None
        return _subset_fields(fields, rows, raw.num_rows), (lambda: raw.take(rows))
    if _lightgbm.handle_of(dataset) is not None:
        fields = _fields_from_handle(dataset)
    else:
        fields = _fields_of(dataset)
    return fields, _raw_source(dataset.data, pandas_categorical)


def check_raw_data(dataset: lgb.Dataset, what: str, loss: Loss, evaluator: Any = None) -> int | None:
    """The checks of a Dataset's labels, weights, groups and initial scores that the engine
    makes after binning (and ``evaluator``'s checks of the data, for the training set), made
    on the raw data without binning it: its number of features, or None (no raw data in
    memory: a file, or freed by construction; then nothing is checked here)."""
    if not isinstance(dataset, lgb.Dataset):
        raise TypeError(f"{what} must be a lightgbm.Dataset, got {type(dataset).__name__}")
    fields, _ = _raw_view(dataset, what, None)
    data = dataset.data
    if _is_unconstructed_subset(dataset):
        rows = _subset_rows(dataset)
        parent = dataset.reference.data if dataset.reference is not None else None
        shape = getattr(parent, "shape", None)
        n, width = int(rows.shape[0]), (None if shape is None or len(shape) != 2 else int(shape[1]))
    else:
        shape = getattr(data, "shape", None)
        if data is None or isinstance(data, (str, Path)) or shape is None or len(shape) != 2:
            return None
        n, width = int(shape[0]), int(shape[1])
    if n == 0:
        raise ValueError(f"{what} has no rows")
    target, _ = _target_and_scores(what, fields, n, loss)
    if evaluator is not None:
        evaluator.check(target)
    return width
