"""Every private piece of :mod:`lightgbm.sklearn` that :mod:`smart_lgbm.sklearn` touches.

smart_lgbm.sklearn reuses LightGBM's own estimator code and swaps only its training call.
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm import basic as _basic


def sklearn_fit_with_train(train_fn: Any) -> Any:
    """A private copy of ``lightgbm.LGBMModel.fit`` whose ``train(...)`` call is ``train_fn``.

    ``LGBMModel.fit`` does all of the scikit-learn work (input validation, class and sample
    weights, eval-set Datasets, eval-metric wrappers, fitted attributes) and then calls
    ``train(params=..., train_set=..., ...)``, a global name of :mod:`lightgbm.sklearn`.
    The copy shares the original's code object but resolves globals in a snapshot of that
    module's namespace with ``train`` replaced, so LightGBM's module and classes are never
    modified: concurrent stock LightGBM fits (other threads) are unaffected, and each call
    gets its own function object.

    Raises
    ------
    ImportError
        If this LightGBM's ``LGBMModel.fit`` no longer calls a global ``train`` (the seam
        is gone; fitting would silently train with stock LightGBM).
    """
    import types

    from lightgbm import sklearn as lgb_sklearn

    fit = lgb_sklearn.LGBMModel.fit
    if "train" not in fit.__code__.co_names or lgb_sklearn.__dict__.get("train") is not lgb.train:
        raise ImportError(
            f"lightgbm {lgb.__version__}: LGBMModel.fit no longer calls lightgbm.train through the module "
            "global 'train'; smart_lgbm's scikit-learn estimators need updating for this version"
        )
    namespace = dict(lgb_sklearn.__dict__)
    namespace["train"] = train_fn
    copy = types.FunctionType(fit.__code__, namespace, fit.__name__, fit.__defaults__, fit.__closure__)
    copy.__kwdefaults__ = fit.__kwdefaults__
    return copy


def sklearn_process_params(estimator: Any, cls: type, stage: str) -> dict[str, Any]:
    """``LGBMModel._process_params`` as resolved after ``cls`` in ``estimator``'s MRO.

    The estimators override that private method to keep their own constructor parameters
    (``sampler``, ``sampler_params``) out of the LightGBM parameters.
    """
    return super(cls, estimator)._process_params(stage)  # type: ignore[arg-type]  # cls is in estimator's MRO


def sklearn_not_fitted_error() -> type:
    """LightGBM's not-fitted exception (a ValueError and AttributeError subclass)."""
    from lightgbm.compat import LGBMNotFittedError

    return LGBMNotFittedError


def _label_passed_through(label: Any) -> bool:
    """Whether ``lightgbm.Dataset.set_label`` hands ``label`` to the C API unconverted.

    4.6 does so for Arrow arrays; 4.7 for every data frame or series narwhals knows except
    pandas Series (Arrow, polars...), which it reads through the Arrow C interface.
    """
    nwd = getattr(_basic, "nwd", None)  # narwhals.dependencies, imported by lightgbm 4.7 on
    if nwd is None:
        return _basic._is_pyarrow_array(label)  # type: ignore[attr-defined]  # lightgbm 4.6 only
    return (nwd.is_into_dataframe(label) or nwd.is_into_series(label)) and not isinstance(label, _basic.pd_Series)


def sklearn_check_label(label: Any) -> None:
    """Convert ``label`` as ``lightgbm.Dataset.set_label`` does, raising its exceptions.

    Stock LightGBM refuses a bad training label (strings for a regressor...) while
    constructing the Dataset inside ``lightgbm.train``; the engine checks labels itself
    with its own exception types, so the estimators run LightGBM's conversion first to
    refuse bad labels exactly as LightGBM's estimators do.
    """
    if label is None:
        return
    if isinstance(label, np.ndarray) and (np.issubdtype(label.dtype, np.number) or label.dtype == np.bool_):
        return  # converts; skipping also avoids a second "column-vector" warning
    if isinstance(label, _basic.pd_DataFrame):
        if len(label.columns) > 1:
            raise ValueError("DataFrame for label cannot have multiple columns")
        _basic._pandas_to_numpy(label, target_dtype=np.float32)
    elif not _label_passed_through(label):
        # by keyword: 4.7 made these parameters keyword-only (4.6 has the same names)
        _basic._list_to_1d_numpy(data=label, dtype=np.float32, name="label")


def sklearn_record_feature_names(train_set: lgb.Dataset) -> None:
    """Mark ``train_set`` as having feature names or not, as constructing it would (4.7 on).

    ``LGBMModel.fit`` of 4.7 reads ``train_set._has_non_default_feature_names`` after its
    ``train(...)`` call to decide whether ``feature_names_in_`` exists; LightGBM sets it
    while constructing the Dataset.  The engine never constructs the caller's Dataset (it
    bins its own copy), so the estimators set the flag the same way: names come from a
    ``feature_name`` list or from the columns of a data frame (pandas, or any narwhals
    knows).  LightGBM 4.6 has no such flag, and this does nothing there.
    """
    if not hasattr(train_set, "_has_non_default_feature_names"):
        return
    data = train_set.data
    train_set._has_non_default_feature_names = (
        train_set.feature_name != "auto"
        or isinstance(data, _basic.pd_DataFrame)
        or bool(_basic.nwd.is_into_dataframe(data))
    )
