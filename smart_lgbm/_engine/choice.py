"""``sampler="auto"`` resolved: what a run knows before its first tree, and the choice.

:func:`auto_choice` reads the parameters and the training Dataset without binning,
constructing or changing it (the attributes ``lightgbm.Dataset`` keeps: its raw data, rows
of a subset, categorical columns, a constructed Dataset's size) into
:class:`~smart_lgbm.samplers.auto.DataFacts`, and returns the rule table's choice
(:func:`smart_lgbm.samplers.auto.choose`).  On a machine of a distributed run the rows are
every machine's (one exchange through the run's ``allgather``), so that every machine
makes the same choice.  :func:`announce` logs it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from .. import _lightgbm
from ..distributed import Worker
from ..losses.base import Loss
from ..samplers.auto import Choice, DataFacts, choose
from .param_roles import OBJECTIVE_FAMILIES
from .param_values import flag, number_list
from .config import refit_refusal
from .params import canonicalize, stock_only_reason

__all__ = ["ALLGATHER_TAG", "announce", "auto_choice", "data_facts"]

#: The tag under which the machines of a distributed run exchange their training rows.
ALLGATHER_TAG = "auto_rows"

logger = logging.getLogger("smart_lgbm")


def auto_choice(params: dict[str, Any] | None, train_set: Any, num_boost_round: int,
                worker: Worker | None = None) -> Choice:
    """The choice of ``sampler="auto"`` for this run (:func:`smart_lgbm.samplers.auto.choose`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # alias clashes are said once, by the run's own reading
        p = canonicalize(params)
    stock_only = _objective_stock_only(p) or stock_only_reason(p)
    if stock_only is None and isinstance(train_set, lgb.Dataset) and _lightgbm.has_positions(train_set):
        stock_only = "train_set has position= (position-debiased lambdarank), which the engine does not implement"
    facts = data_facts(train_set, p)
    rows = facts["rows"]
    if worker is not None:
        counts = worker.allgather(ALLGATHER_TAG, -1 if rows is None else int(rows))
        rows = None if any(c < 0 for c in counts) else int(sum(counts))
    objective = p.get("objective", "regression")
    if isinstance(objective, Loss):
        task = "loss"
    else:
        task = OBJECTIVE_FAMILIES.get(str(objective).lower(), "other") if isinstance(objective, str) else "other"
    return choose(DataFacts(
        task=task, rows=rows, features=facts["features"], sparse=facts["sparse"], density=facts["density"],
        categorical=facts["categorical"], in_memory=facts["in_memory"],
        rounds=_int(p.get("num_iterations", num_boost_round), 100),
        learning_rate=_float(p.get("learning_rate", 0.1), 0.1), num_threads=_int(p.get("num_threads", 0), 0),
        stock_only=stock_only, refit_refused=_refit_refused(p), distributed=worker is not None,
    ))


def _refit_refused(p: Mapping[str, Any]) -> str | None:
    try:
        return refit_refusal(p)
    except (TypeError, ValueError):
        return None  # (a bad value: the run's own reading says so)


def _objective_stock_only(p: Mapping[str, Any]) -> str | None:
    """Why the objective's parameters only stock LightGBM trains (an objective the engine does
    not implement, a callable objective, ``reg_sqrt``, a lazy CEGB penalty), or None."""
    objective = p.get("objective", "regression")
    if isinstance(objective, Loss):
        return None
    if callable(objective):
        return "objective is a callable (preds, dataset) -> (grad, hess)"
    if isinstance(objective, str) and objective.lower() not in OBJECTIVE_FAMILIES:
        return f"objective={objective!r}, which the engine does not implement"
    if flag(p.get("reg_sqrt", False)):
        return "reg_sqrt=True, which the engine does not implement"
    lazy = p.get("cegb_penalty_feature_lazy")
    if lazy is not None:
        try:
            if any(v != 0 for v in number_list(lazy, "cegb_penalty_feature_lazy")):
                return "cegb_penalty_feature_lazy, which needs every row in every iteration"
        except (TypeError, ValueError):
            return None  # (a bad value: the run's own reading says so)
    return None


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default  # (a bad value: the run's own reading, or LightGBM's, refuses it)


def _float(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def data_facts(dataset: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """Rows, features, storage, categorical columns and whether the raw features are in memory,
    read from a ``lightgbm.Dataset`` as it is (never binned, constructed or changed).

    ``params``: the run's canonical parameters (their ``categorical_feature``)."""
    facts: dict[str, Any] = {"rows": None, "features": None, "sparse": False, "density": None,
                             "categorical": 0, "in_memory": False}
    if not isinstance(dataset, lgb.Dataset):
        return facts  # (the run refuses it with the reason)
    used = getattr(dataset, "used_indices", None)
    if used is not None and _lightgbm.handle_of(dataset) is None and isinstance(dataset.reference, lgb.Dataset):
        # an unconstructed Dataset.subset(...): the parent's features, the subset's rows
        facts = data_facts(dataset.reference, params)
        facts["rows"] = len(used)
        return facts
    data = dataset.data
    if _lightgbm.handle_of(dataset) is not None:
        facts["rows"], facts["features"] = int(dataset.num_data()), int(dataset.num_feature())
    if data is not None and not isinstance(data, (str, Path)):
        shape = _shape(data)
        if shape is not None:
            facts["rows"], facts["features"] = shape
            facts["in_memory"] = True
        if hasattr(data, "nnz") and shape is not None:  # scipy.sparse
            facts["sparse"] = True
            facts["density"] = float(data.nnz) / max(shape[0] * shape[1], 1)
    facts["categorical"] = _categorical_columns(dataset, data, params)
    return facts


def _shape(data: Any) -> tuple[int, int] | None:
    """(rows, columns) of a numpy array, scipy matrix, pandas DataFrame or Arrow table."""
    if _lightgbm.is_pyarrow_table(data):
        return int(data.num_rows), int(data.num_columns)
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[0]), int(shape[1])
    if isinstance(data, list) and data and isinstance(data[0], (list, tuple, np.ndarray)):
        return len(data), len(data[0])
    return None


def _categorical_columns(dataset: lgb.Dataset, data: Any, params: Mapping[str, Any]) -> int:
    """How many columns LightGBM will bin as categorical: the Dataset's or the parameters'
    ``categorical_feature``, else (``"auto"``) a DataFrame's category columns."""
    given = params.get("categorical_feature")
    if given is None:
        given = canonicalize(dict(getattr(dataset, "params", None) or {})).get("categorical_feature")
    if given is None:
        given = getattr(dataset, "categorical_feature", "auto")
    if isinstance(given, str) and given != "auto":
        given = [c for c in given.removeprefix("name:").split(",") if c.strip()]
    if isinstance(given, (list, tuple, np.ndarray)):
        return len(given)
    dtypes = getattr(data, "dtypes", None)
    if dtypes is None or not hasattr(dtypes, "__iter__"):
        return 0
    return sum(1 for dtype in dtypes if str(dtype) == "category")


def announce(choice: Choice, verbosity: int) -> None:
    """Log the choice on the ``smart_lgbm`` logger (INFO) and, at ``verbosity >= 1``, say it the
    way LightGBM says its own ``[Info]`` lines (through LightGBM's logger, which
    ``lightgbm.register_logger`` redirects)."""
    text = choice.describe()
    logger.info(text)
    if verbosity >= 1:
        _lightgbm.log_info(f"[smart_lgbm] [Info] {text}")
