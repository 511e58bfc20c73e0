"""scikit-learn estimators trained by :func:`smart_lgbm.train`.

:class:`SmartClassifier`, :class:`SmartRegressor` and :class:`SmartRanker` are swap-ins for
:class:`lightgbm.LGBMClassifier`, :class:`lightgbm.LGBMRegressor` and
:class:`lightgbm.LGBMRanker`: same constructor parameters, same ``fit``/``predict``
signatures, same fitted attributes, plus

* ``sampler``: a :class:`smart_lgbm.Sampler` or a sampler name (``"first_order"``...);
  None (the default) is ``"auto"``: the method the committed comparisons show fastest for
  the data, stock LightGBM itself on small data (:class:`smart_lgbm.Auto`);
* ``sampler_params``: keyword arguments for a sampler given by name
  (``sampler="first_order", sampler_params={"rate": 0.1}``), so that a grid search can
  vary them;
* ``sampling_record_``: after ``fit``, the per-iteration record of
  :func:`smart_lgbm.record_sampling` (rows sampled, sampling rate, seconds).

Design: where the training call is swapped
------------------------------------------
Each estimator subclasses LightGBM's own, so input validation, label encoding, class
weights, eval-set handling, eval-metric wrappers, tags, ``get_params``/``set_params`` and
all fitted attributes are LightGBM's code, unchanged.  ``LGBMClassifier.fit`` and
``LGBMRanker.fit`` do their task-specific work and then call ``super().fit(...)``, which is
``LGBMModel.fit``; that method builds the Datasets and calls ``train(...)``, a global name
of :mod:`lightgbm.sklearn`.  That call is the one thing replaced:

* A mixin, :class:`_EngineFit`, subclasses ``LGBMModel`` and is listed after the LightGBM
  estimator in each class's bases, so the C3 method order is e.g. ``SmartClassifier ->
  LGBMClassifier -> ClassifierMixin -> _EngineFit -> LGBMModel``: the ``super().fit`` of
  ``LGBMClassifier.fit`` lands in ``_EngineFit.fit``.
* ``_EngineFit.fit`` runs LightGBM's ``LGBMModel.fit`` *code* through a per-call function
  object whose globals map ``train`` to an adapter calling :func:`smart_lgbm.train` with
  the estimator's sampler (:func:`smart_lgbm._lightgbm.sklearn_fit_with_train`).  It hands
  its arguments over unchanged and carries ``LGBMModel.fit``'s signature, so it takes exactly
  what the installed LightGBM takes (4.7 added ``eval_X``/``eval_y``) with no code per version.

Alternatives rejected: assigning ``lightgbm.sklearn.train`` (a global monkeypatch: every
stock LightGBM estimator in the process, in any thread, would train through the engine
while a fit runs); copying the ~150 lines of ``LGBMModel.fit`` (a fork of LightGBM's
validation and eval-set logic that drifts from the installed version).  The seam is
checked: if a LightGBM version stops calling a global ``train``, the first fit raises
ImportError instead of silently training with stock LightGBM, and a fit that finishes
without the engine having run raises RuntimeError.

``_process_params`` (private LightGBM method building the LightGBM parameter dict, called by
``fit`` and ``predict``) is overridden to drop ``sampler`` and ``sampler_params``, which are
not LightGBM parameters (and, at predict, an ``objective`` that is a
:class:`smart_lgbm.losses.Loss`, which LightGBM's C predictor cannot take).  Every use of LightGBM's private names lives in
:mod:`smart_lgbm._lightgbm` ("scikit-learn estimator internals").

What differs from LightGBM's estimators: with a sampler given, parameters the engine cannot honour are refused
with ValueError at ``fit`` (``boosting_type`` other than ``"gbdt"``, ``subsample < 1`` with
``subsample_freq > 0``, ``data_sample_strategy="goss"``, ``linear_tree``), as are objectives
other than binary, multiclass, regression (L2), huber, cross_entropy, lambdarank or a
:class:`smart_lgbm.losses.Loss` instance (meant for the regressor: the classifier's
``predict_proba`` assumes a probability model; docs/engine.md lists every refusal); a
callable ``objective`` is refused with TypeError (wrap it as a
:class:`smart_lgbm.losses.CustomLoss`).  The default ``sampler="auto"`` hands such fits
to stock LightGBM instead, as it hands it small data.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import lightgbm as lgb
import numpy as np

from . import _lightgbm
from .callback import record_sampling
from .losses.base import Loss
from .engine import check_training
from .engine import train as engine_train
from .samplers import Sampler, make_sampler
from .samplers.registry import sampler_names

__all__ = ["SmartClassifier", "SmartRanker", "SmartRegressor"]

#: Constructor parameters of the Smart estimators that are not LightGBM parameters.
_SMART_PARAMS = ("sampler", "sampler_params")


def _check_sampler(sampler: Any, sampler_params: Any) -> Sampler:
    """A fresh sampler for one fit from the ``sampler``/``sampler_params`` parameters.

    A sampler instance is deep-copied: scikit-learn requires ``fit`` to leave parameters
    unchanged, and a sampler may keep state between iterations.  Names and their parameters
    are the sampler registry's (:data:`smart_lgbm.samplers.registry.SPECS`), read at fit.
    """
    if sampler_params is None:
        sampler_params = {}
    elif not isinstance(sampler_params, dict):
        raise TypeError(f"sampler_params must be a dict or None, got {type(sampler_params).__name__}")
    if sampler is not None and not isinstance(sampler, (Sampler, str)):
        raise TypeError(
            f"sampler must be a smart_lgbm Sampler instance, a sampler name ({', '.join(sampler_names())}) or None, "
            f"got {type(sampler).__name__}"
        )
    spec = copy.deepcopy(sampler) if isinstance(sampler, Sampler) else sampler
    try:
        return make_sampler(spec, **sampler_params)
    except (TypeError, ValueError) as exc:
        detail = f" with sampler_params={sampler_params!r}" if sampler_params else ""
        raise type(exc)(f"invalid sampler={sampler!r}{detail}: {exc}") from exc


class _EngineFit(lgb.LGBMModel):
    """Mixin running ``LGBMModel.fit`` with :func:`smart_lgbm.train` as its training call.

    Placed right before ``LGBMModel`` in the method order of each Smart estimator (see the
    module docstring); it defines no constructor parameters of its own.
    """

    def _process_params(self, stage: str) -> dict[str, Any]:
        # Called by LightGBM's fit and predict to build the LightGBM parameter dict from
        # get_params(); the sampler parameters are ours, and a sampler object must not
        # reach the Dataset parameters (LightGBM would stringify it into its C config).
        params = _lightgbm.sklearn_process_params(self, _EngineFit, stage)
        for key in _SMART_PARAMS:
            params.pop(key, None)
        if stage == "predict" and isinstance(params.get("objective"), Loss):
            # predict passes these parameters to LightGBM's C predictor, which cannot take
            # a Loss object; the saved model already says how to transform raw scores.
            params.pop("objective")
        return params

    def fit(self, *args: Any, **kwargs: Any) -> _EngineFit:  # signature: LGBMModel.fit's (set below)
        """``LGBMModel.fit`` with the engine as trainer; arguments as there."""
        check_only = _CHECK_ONLY.get()
        sampler = _check_sampler(getattr(self, "sampler", None), getattr(self, "sampler_params", None))
        record: dict[str, list[Any]] = {}
        engine_runs: list[bool] = []

        def train(
            *,
            params: dict[str, Any],
            train_set: lgb.Dataset,
            num_boost_round: int,
            valid_sets: list[lgb.Dataset],
            valid_names: list[str] | None,
            feval: list[Callable],
            init_model: Any,
            callbacks: list[Callable],
        ) -> lgb.Booster:
            # Keyword-only and without **kwargs on purpose: if LightGBM starts passing a
            # new argument, fitting fails loudly instead of ignoring it.
            engine_runs.append(True)
            _lightgbm.sklearn_check_label(train_set.label)
            if check_only:
                check_training({k: v for k, v in params.items() if v is not None}, train_set, num_boost_round,
                               sampler=sampler, valid_sets=valid_sets or None, valid_names=valid_names,
                               feval=feval or None, init_model=init_model, callbacks=callbacks)
                raise _Checked
            # lightgbm.train drops None-valued parameters when it writes its C config
            # (random_state=None is LGBMModel's default); the engine validates values, so
            # drop them here the same way.
            params = {key: value for key, value in params.items() if value is not None}
            # LightGBM's default verbosity (1), made explicit: the engine's dataset_params
            # currently raises KeyError when no verbosity alias is given at all.
            if not any(alias in params for alias in _lightgbm.param_aliases()["verbosity"]):
                params["verbosity"] = 1
            if isinstance(params.get("objective"), Loss):
                # LGBMModel.fit copies every parameter into the Datasets it creates for
                # this fit; a Loss object cannot enter LightGBM's C config, and binning
                # needs no objective (num_class without a multiclass objective is refused).
                for dataset in [train_set, *valid_sets]:
                    dataset.params = {k: v for k, v in (dataset.params or {}).items()
                                      if k not in ("objective", "num_class")}
            booster = engine_train(
                params,
                train_set,
                num_boost_round,
                sampler=sampler,
                valid_sets=valid_sets or None,
                valid_names=valid_names,
                feval=feval or None,
                init_model=init_model,  # (a Booster, a model file, or an estimator's booster_)
                callbacks=[*callbacks, record_sampling(record)],
            )
            _lightgbm.sklearn_record_feature_names(train_set)
            return booster

        # The installed LightGBM's own fit code, arguments and all: whatever its version
        # accepts (4.7 added eval_X/eval_y) is accepted and checked exactly as there.
        try:
            _lightgbm.sklearn_fit_with_train(train)(self, *args, **kwargs)
        except _Checked:
            return self
        if not engine_runs:
            raise RuntimeError(
                "LightGBM's fit returned without calling smart_lgbm.train; this lightgbm version "
                f"({lgb.__version__}) is not supported by smart_lgbm.sklearn"
            )
        self._sampling_record = record
        return self

    fit.__signature__ = inspect.signature(lgb.LGBMModel.fit)  # type: ignore[attr-defined]

    @property
    def sampling_record_(self) -> dict[str, list[Any]]:
        """dict: Per-iteration sampling record of the last fit.

        Lists under ``num_sampled``, ``sampling_rate``, ``sample_seconds`` and ``seconds``,
        one entry per boosting iteration (see :func:`smart_lgbm.record_sampling`).
        """
        if not self.__sklearn_is_fitted__():
            raise _lightgbm.sklearn_not_fitted_error()("No sampling record found. Need to call fit beforehand.")
        return self._sampling_record


class _Checked(Exception):  # noqa: N818 - a signal, not an error
    """Raised by :func:`check_fit`'s training call once everything is checked."""


_CHECK_ONLY: ContextVar[bool] = ContextVar("smart_lgbm_check_only", default=False)


def check_fit(estimator: _EngineFit, *args: Any, **kwargs: Any) -> None:
    """Run ``estimator.fit(*args, **kwargs)``'s checks, and train nothing.

    LightGBM's own estimator code runs as in ``fit`` (input validation, label encoding,
    class and sample weights, the evaluation sets, the Datasets), then, instead of
    training, :func:`smart_lgbm.engine.check_training` checks what ``smart_lgbm.train``
    would.  ``estimator`` is left with the attributes LightGBM's ``fit`` sets before training
    (use a fresh one).  :mod:`smart_lgbm.dask` runs it on every worker's rows before any
    worker joins LightGBM's network.

    Raises
    ------
    ValueError, TypeError
        What ``fit`` would raise before training.
    """
    token = _CHECK_ONLY.set(True)
    try:
        estimator.fit(*args, **kwargs)
    finally:
        _CHECK_ONLY.reset(token)


def _smart_init(
    self: Any,
    *,
    boosting_type: str = "gbdt",
    num_leaves: int = 31,
    max_depth: int = -1,
    learning_rate: float = 0.1,
    n_estimators: int = 100,
    subsample_for_bin: int = 200000,
    objective: str | Callable | None = None,
    class_weight: dict | str | None = None,
    min_split_gain: float = 0.0,
    min_child_weight: float = 1e-3,
    min_child_samples: int = 20,
    subsample: float = 1.0,
    subsample_freq: int = 0,
    colsample_bytree: float = 1.0,
    reg_alpha: float = 0.0,
    reg_lambda: float = 0.0,
    random_state: int | np.random.RandomState | np.random.Generator | None = None,
    n_jobs: int | None = None,
    importance_type: str = "split",
    sampler: Sampler | str | None = None,
    sampler_params: dict[str, Any] | None = None,
    **kwargs: Any,
) -> None:
    # Only stores parameters (scikit-learn's rule): the sampler is validated and built at fit.
    self.sampler = sampler
    self.sampler_params = sampler_params
    lgb.LGBMModel.__init__(
        self,
        boosting_type=boosting_type,
        num_leaves=num_leaves,
        max_depth=max_depth,
        learning_rate=learning_rate,
        n_estimators=n_estimators,
        subsample_for_bin=subsample_for_bin,
        objective=objective,
        class_weight=class_weight,
        min_split_gain=min_split_gain,
        min_child_weight=min_child_weight,
        min_child_samples=min_child_samples,
        subsample=subsample,
        subsample_freq=subsample_freq,
        colsample_bytree=colsample_bytree,
        reg_alpha=reg_alpha,
        reg_lambda=reg_lambda,
        random_state=random_state,
        n_jobs=n_jobs,
        importance_type=importance_type,
        **kwargs,
    )


_smart_init.__doc__ = (lgb.LGBMModel.__init__.__doc__ or "").replace(
    "    **kwargs",
    """    sampler : Sampler, str or None, optional (default=None)
        Row sampler of every boosting iteration: a :class:`smart_lgbm.Sampler` instance
        (``FirstOrder(rate=0.1)``...), a sampler name (NAMES)
        or None for ``"auto"`` (the engine's choice for the data: :class:`smart_lgbm.Auto`).
    sampler_params : dict or None, optional (default=None)
        Keyword arguments for a sampler given by name, e.g. ``{"rate": 0.1}``.
    **kwargs""".replace("NAMES", ", ".join(f'``"{name}"``' for name in sampler_names())),
    1,
)


class SmartRegressor(lgb.LGBMRegressor, _EngineFit):
    """LightGBM regressor trained by :func:`smart_lgbm.train` with a row ``sampler``.

    Swap-in for :class:`lightgbm.LGBMRegressor`; see :mod:`smart_lgbm.sklearn`.

    Parameters
    ----------
    sampler : Sampler, str or None, default=None
        The row sampler: an instance (``FirstOrder(rate=0.1)``, ``Full()`` for every row),
        a name (``"first_order"``, ``"mvs"``, ...; see :func:`smart_lgbm.make_sampler`), or
        ``"auto"``; None means ``"auto"``: the method the committed comparisons show fastest
        for the data (stock LightGBM on small data; :class:`smart_lgbm.Auto`).  Each fit uses
        a deep copy of an instance, so fitting never changes this parameter.
    sampler_params : dict or None, default=None
        Keyword arguments of a sampler given by name, e.g. ``{"rate": 0.1}``.
    **kwargs
        LightGBM's own parameters (``n_estimators``, ``learning_rate``, ``num_leaves``, ...),
        as the LightGBM estimator takes them; those the engine cannot honour (``boosting_type``
        other than ``"gbdt"``, bagging through ``subsample`` with ``subsample_freq``, ...) are
        refused at ``fit`` with a ``ValueError`` naming them when a sampler is given
        (``"auto"`` trains them with stock LightGBM).
    """

    __init__ = _smart_init


class SmartClassifier(lgb.LGBMClassifier, _EngineFit):
    """LightGBM classifier trained by :func:`smart_lgbm.train` with a row ``sampler``.

    Swap-in for :class:`lightgbm.LGBMClassifier` (binary and multiclass; one row sample per
    iteration is shared by the K trees of a multiclass iteration); see
    :mod:`smart_lgbm.sklearn`.

    Parameters
    ----------
    sampler : Sampler, str or None, default=None
        The row sampler: an instance (``FirstOrder(rate=0.1)``, ``Full()`` for every row),
        a name (``"first_order"``, ``"mvs"``, ...; see :func:`smart_lgbm.make_sampler`), or
        ``"auto"``; None means ``"auto"``: the method the committed comparisons show fastest
        for the data (stock LightGBM on small data; :class:`smart_lgbm.Auto`).  Each fit uses
        a deep copy of an instance, so fitting never changes this parameter.
    sampler_params : dict or None, default=None
        Keyword arguments of a sampler given by name, e.g. ``{"rate": 0.1}``.
    **kwargs
        LightGBM's own parameters (``n_estimators``, ``learning_rate``, ``num_leaves``, ...),
        as the LightGBM estimator takes them; those the engine cannot honour (``boosting_type``
        other than ``"gbdt"``, bagging through ``subsample`` with ``subsample_freq``, ...) are
        refused at ``fit`` with a ``ValueError`` naming them when a sampler is given
        (``"auto"`` trains them with stock LightGBM).
    """

    __init__ = _smart_init


class SmartRanker(lgb.LGBMRanker, _EngineFit):
    """LightGBM ranker trained by :func:`smart_lgbm.train` with a row ``sampler``.

    Swap-in for :class:`lightgbm.LGBMRanker` (objective ``lambdarank``); see
    :mod:`smart_lgbm.sklearn`.

    Parameters
    ----------
    sampler : Sampler, str or None, default=None
        The row sampler: an instance (``FirstOrder(rate=0.1)``, ``Full()`` for every row),
        a name (``"first_order"``, ``"mvs"``, ...; see :func:`smart_lgbm.make_sampler`), or
        ``"auto"``; None means ``"auto"``: the method the committed comparisons show fastest
        for the data (stock LightGBM on small data; :class:`smart_lgbm.Auto`).  Each fit uses
        a deep copy of an instance, so fitting never changes this parameter.
    sampler_params : dict or None, default=None
        Keyword arguments of a sampler given by name, e.g. ``{"rate": 0.1}``.
    **kwargs
        LightGBM's own parameters (``n_estimators``, ``learning_rate``, ``num_leaves``, ...),
        as the LightGBM estimator takes them; those the engine cannot honour (``boosting_type``
        other than ``"gbdt"``, bagging through ``subsample`` with ``subsample_freq``, ...) are
        refused at ``fit`` with a ``ValueError`` naming them when a sampler is given
        (``"auto"`` trains them with stock LightGBM).
    """

    __init__ = _smart_init
