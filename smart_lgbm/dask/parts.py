"""The training data of a distributed fit, per worker: its partitions, gathered where they live.

The partitions of ``X``, ``y`` (and weights, groups, initial scores, evaluation sets) are
gathered into per-partition pieces, each computed where its data lives, as lightgbm.dask
does (:func:`_build_parts`); a worker assembles its pieces into local arrays
(:func:`_assemble`); a short survey counts each worker's rows and classes and runs each
worker's fit checks on its rows (:func:`_survey`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as ss

import dask.array as da
import dask.dataframe as dd
from dask import delayed



# --------------------------------------------------------------------------- input parts


def _is_dask_collection(value: Any) -> bool:
    return isinstance(value, (da.Array, dd.DataFrame, dd.Series))


def _split(name: str, collection: Any, matrix: bool) -> list[Any]:
    """The delayed partitions of a Dask collection (row blocks), checked."""
    if not _is_dask_collection(collection):
        raise TypeError(f"{name} must be a Dask Array, Dask DataFrame or Dask Series, got {type(collection).__name__}")
    parts = collection.to_delayed()
    if isinstance(parts, np.ndarray):  # a Dask Array: a grid of blocks
        if parts.ndim == 2 and parts.shape[1] != 1:
            raise ValueError(f"{name} is chunked along its columns ({parts.shape[1]} column blocks); give it one "
                             f"block across the columns: {name}.rechunk({{1: {name}.shape[1]}})")
        if matrix and collection.ndim != 2:
            raise ValueError(f"{name} must be 2-D (rows x features), got {collection.ndim}-D")
        parts = parts.reshape(-1).tolist()
    return list(parts)


def _aligned(name: str, collection: Any, count: int, matrix: bool = False) -> list[Any]:
    parts = _split(name, collection, matrix)
    if len(parts) != count:
        raise ValueError(f"{name} has {len(parts)} partitions but X has {count}; give it the same partitions as X")
    return parts


def _concat(pieces: list[Any]) -> Any:
    first = pieces[0]
    if len(pieces) == 1:
        return first
    if isinstance(first, np.ndarray):
        return np.concatenate(pieces, axis=0)
    if isinstance(first, (pd.DataFrame, pd.Series)):
        return pd.concat(pieces, axis=0)
    if ss.issparse(first):
        return ss.vstack(pieces, format="csr")
    raise TypeError(f"partitions must hold numpy arrays, pandas objects or scipy sparse matrices, "
                    f"got {type(first).__name__}")


def _num_rows(part: Any) -> int:
    return int(part.shape[0])


#: Marks an evaluation set that is the training data itself (lightgbm.dask's convention:
#: the worker then passes its training X, y, and LightGBM evaluates the training set).
_TRAINING = "__training__"
_EVAL_FIELDS = ("weight", "init_score", "group")


def _build_parts(X: Any, y: Any, sample_weight: Any, init_score: Any, group: Any, eval_set: list | None,
                 eval_fields: dict[str, list | None]) -> list[dict[str, Any]]:
    """One delayed dict per partition of ``X``: its rows and their labels, weights... and
    the evaluation-set partitions assigned to it (eval partition ``j`` goes with training
    partition ``j % n``, as in lightgbm.dask)."""
    data = _split("X", X, matrix=True)
    n = len(data)
    parts: list[dict[str, Any]] = [{"data": x} for x in data]
    for key, name, value in (("label", "y", y), ("weight", "sample_weight", sample_weight),
                             ("init_score", "init_score", init_score), ("group", "group", group)):
        if value is not None:
            for part, piece in zip(parts, _aligned(name, value, n), strict=True):
                part[key] = piece
    for part in parts:
        part["eval"] = [[] for _ in eval_set or []]
    for i, (X_eval, y_eval) in enumerate(eval_set or []):
        if X_eval is X and y_eval is y:
            for part in parts:
                part["eval"][i] = _TRAINING
            continue
        x_parts = _split(f"eval_set[{i}][0]", X_eval, matrix=True)
        pieces = [{"data": x} for x in x_parts]
        for key, name, value in [("label", f"eval_set[{i}][1]", y_eval)] + [
                (f, f"eval_{'sample_weight' if f == 'weight' else f}[{i}]", _entry(eval_fields[f], i))
                for f in _EVAL_FIELDS]:
            if value is not None:
                for piece, p in zip(pieces, _aligned(name, value, len(x_parts)), strict=True):
                    piece[key] = p
        for j, piece in enumerate(pieces):
            parts[j % n]["eval"][i].append(piece)
    return [delayed(dict)(part) for part in parts]


def _entry(values: list | None, i: int) -> Any:
    return values[i] if values is not None and i < len(values) else None


@dataclass
class _Local:
    """A worker's training rows and evaluation sets, as ``fit`` arguments."""

    X: Any
    y: Any
    fit_kwargs: dict[str, Any]
    eval_names: list[str]  # names of the sets evaluated here, in order


def _assemble(parts: list[dict[str, Any]], eval_names: list[str] | None, eval_class_weight: list | None,
              is_ranker: bool) -> _Local:
    """Concatenate a worker's partitions into ``fit`` arguments."""
    X = _concat([p["data"] for p in parts])
    y = _concat([p["label"] for p in parts])
    kwargs: dict[str, Any] = {}
    for key, arg in (("weight", "sample_weight"), ("init_score", "init_score"), ("group", "group")):
        if key in parts[0]:
            kwargs[arg] = _concat([p[key] for p in parts])
    n_evals = len(parts[0]["eval"])
    if not n_evals:
        return _Local(X, y, kwargs, [])
    sets, names, present = [], [], []
    fields: dict[str, list] = {f: [] for f in _EVAL_FIELDS}
    for i in range(n_evals):
        name = eval_names[i] if eval_names else f"valid_{i}"
        if parts[0]["eval"][i] == _TRAINING:
            sets.append((X, y))
            for f in _EVAL_FIELDS:
                fields[f].append(kwargs.get("sample_weight" if f == "weight" else f))
        else:
            pieces = [piece for p in parts for piece in p["eval"][i]]
            if not pieces:
                continue  # no partition of this evaluation set lives here
            sets.append((_concat([q["data"] for q in pieces]), _concat([q["label"] for q in pieces])))
            for f in _EVAL_FIELDS:
                fields[f].append(_concat([q[f] for q in pieces]) if f in pieces[0] else None)
        names.append(name)
        present.append(i)
    kwargs["eval_set"] = sets
    kwargs["eval_names"] = names
    for f, arg in (("weight", "eval_sample_weight"), ("init_score", "eval_init_score"), ("group", "eval_group")):
        if f == "group" and not is_ranker:
            continue
        if any(v is not None for v in fields[f]):
            kwargs[arg] = fields[f]
    if eval_class_weight:
        kwargs["eval_class_weight"] = [eval_class_weight[i] for i in present]
    return _Local(X, y, kwargs, names)


# --------------------------------------------------------------------------- worker side


def _check_lengths(parts: list[dict[str, Any]]) -> None:
    """Refuse partitions whose X, labels, weights, init scores and groups do not line up.

    Run in the survey, before any worker joins LightGBM's network: found later, inside
    training, one worker fails while the others wait in the network for it.
    """
    def check(piece: dict[str, Any], names: dict[str, str], what: str) -> None:
        n = _num_rows(piece["data"])
        for key, name in names.items():
            if key not in piece:
                continue
            if key == "group":
                count = int(np.sum(np.asarray(piece[key])))
                if count != n:
                    raise ValueError(f"a partition of {what} has {n} rows but its partition of {name} sums to "
                                     f"{count}: each partition's query sizes must add up to its rows")
            elif _num_rows(piece[key]) != n:
                raise ValueError(f"a partition of {what} has {n} rows but its partition of {name} has "
                                 f"{_num_rows(piece[key])}: give {name} the same row blocks (chunks) as {what}")

    for part in parts:
        check(part, {"label": "y", "weight": "sample_weight", "init_score": "init_score", "group": "group"}, "X")
        for i, pieces in enumerate(part["eval"]):
            if pieces == _TRAINING:
                continue
            for piece in pieces:
                check(piece, {"label": f"eval_set[{i}][1]", "weight": f"eval_sample_weight[{i}]",
                              "init_score": f"eval_init_score[{i}]", "group": f"eval_group[{i}]"},
                      f"eval_set[{i}][0]")


@dataclass
class _FitCheck:
    """What :func:`_survey` needs to run a worker's fit checks (:func:`smart_lgbm.sklearn.check_fit`)."""

    model_factory: type
    params: dict[str, Any]
    eval_names: list[str] | None
    eval_class_weight: list | None
    fit_kwargs: dict[str, Any]
    is_ranker: bool


def _survey(parts: list[dict[str, Any]], classifier: bool, check: _FitCheck | None = None) -> tuple[int, list | None]:
    """A worker's number of training rows and, for a classifier, its sorted classes (after
    :func:`_check_lengths`).

    With ``check``, a worker with rows also runs every check its fit makes before training
    (scikit-learn's, LightGBM's estimator's, smart_lgbm.train's: at least two rows, labels,
    weights, groups, initial scores, evaluation sets), on its own rows, before any worker
    joins LightGBM's network: found there, inside training, one worker's refusal would leave
    the others waiting in the network for it.  A refusal names the worker.
    """
    _check_lengths(parts)
    rows = sum(_num_rows(p["data"]) for p in parts)
    if rows and check is not None:
        from distributed import get_worker

        from ..sklearn import check_fit

        local = _assemble(parts, check.eval_names, check.eval_class_weight, check.is_ranker)
        try:
            check_fit(check.model_factory(**check.params), local.X, local.y, **{**check.fit_kwargs, **local.fit_kwargs})
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"Dask worker {get_worker().address} ({rows} rows): {exc}") from None
    if not classifier or rows == 0:
        return rows, None
    labels = _concat([p["label"] for p in parts])
    return rows, np.unique(np.asarray(labels).reshape(-1)).tolist()
