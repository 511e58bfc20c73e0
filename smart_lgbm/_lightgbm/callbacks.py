"""What callbacks see: evaluation results in the installed LightGBM's form, the
early-stopping callback's class, and ``CallbackEnv.model`` (:class:`CallbackModel`)."""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict, defaultdict
from typing import Any

import lightgbm as lgb

#: ``lightgbm.EvalResult`` where the installed LightGBM has it (4.7 on): its ``lgb.train`` hands
#: callbacks these named tuples (``result.dataset_name``...), and its stock callbacks read
#: those fields.  None before 4.7, whose ``lgb.train`` hands plain 4-tuples.
_EVAL_RESULT: type | None = getattr(lgb, "EvalResult", None)


def evaluation_result(dataset_name: str, metric_name: str, value: float, maximize: bool) -> tuple:
    """One entry of ``CallbackEnv.evaluation_result_list`` in the installed LightGBM's form.

    The form ``lightgbm.train`` of the same version gives its callbacks: a
    ``lightgbm.EvalResult`` in 4.7, a ``(dataset_name, metric_name, value, maximize)`` tuple in
    4.6.  Both unpack to those four items and index the same way, so code written for either
    form reads the other too.
    """
    if _EVAL_RESULT is None:
        return (dataset_name, metric_name, value, maximize)
    return _EVAL_RESULT(dataset_name, metric_name, value, maximize)


def best_score_of(results: list[tuple] | None) -> dict[str, dict[str, float]]:
    """``Booster.best_score`` from an evaluation result list, as ``lightgbm.train`` builds it.

    ``results`` are entries of either form (an ``EarlyStopException.best_score`` raised by a
    callback written for 4.6 holds tuples; 4.7 converts them to ``EvalResult`` itself).
    """
    best: dict[str, dict[str, float]] = defaultdict(OrderedDict)
    for dataset_name, metric_name, value, *_ in results or []:
        best[dataset_name][metric_name] = value
    return best


def is_early_stopping_callback(callback: Any) -> bool:
    """Whether ``callback`` is one made by ``lightgbm.early_stopping`` (a private class)."""
    return isinstance(callback, lgb.callback._EarlyStoppingCallback)


class CallbackModel(lgb.Booster):
    """What ``CallbackEnv.model`` is during an engine run: a Booster of the trees so far.

    LightGBM's callbacks test ``isinstance(env.model, Booster)`` (early stopping uses it to
    ignore the training set; ``reset_parameter`` calls ``env.model.reset_parameter``), so
    this is a Booster subclass.  The engine keeps its trees as text and assembles the real
    model only at the end, so this object builds a stock Booster from the trees so far the
    first time a method needs LightGBM's handle in an iteration (``num_trees``, ``predict``,
    ``save_model``, ``model_to_string``, ``feature_importance``, ``dump_model``...): they
    agree with the final model's first iterations.  ``eval_train``/``eval_valid``/``eval``
    answer from the engine's own evaluation of its tracked scores; ``reset_parameter``
    forwards to the running engine.  Methods that would change the model behind the engine's
    back (``update``, ``rollback_one_iter``, ``add_valid``...) raise a clear error.

    Parameters
    ----------
    model_string : callable
        ``model_string() -> (version, text)``: the model of the trees so far and a number
        that changes whenever the trees change.
    reset : callable
        Called with the new parameters by :meth:`reset_parameter`.
    evaluate : callable
        ``evaluate(dataset_or_None_or_"valid", feval) -> list of (data name, metric, value,
        higher is better)``: None is the training set, "valid" every validation set.
    train_data_name : str
    pandas_categorical : list or None
    """

    _snapshot: lgb.Booster | None  # the assembled Booster of the current trees (set in __dict__)
    _snapshot_version: Any

    def __init__(self, model_string: Any, reset: Any, evaluate: Any, train_data_name: str,
                 pandas_categorical: list | None = None) -> None:  # no super().__init__: handle built lazily
        self.__dict__["_snapshot"] = None
        self._snapshot_version = None
        self._model_string = model_string
        self._reset = reset
        self._evaluate = evaluate
        self._network = False
        self._train_data_name = train_data_name
        self.best_iteration = 0
        self.best_score: dict = {}
        self.params: dict = {}
        self.pandas_categorical = pandas_categorical
        #: the engine's record of the last iteration (rows sampled, rate, seconds)
        self.last_record: dict[str, Any] = {}

    def _materialize(self) -> lgb.Booster:
        version, text = self._model_string()
        snapshot = self._snapshot
        if snapshot is None or version != self._snapshot_version:
            snapshot = lgb.Booster(model_str=text)
            # Attributes LightGBM's own methods read besides the handle (name-mangled ones too).
            for key, value in snapshot.__dict__.items():
                if key not in ("_handle", "best_iteration", "best_score", "params", "_train_data_name",
                               "pandas_categorical", "_network"):
                    self.__dict__[key] = value
            self.__dict__["_snapshot"] = snapshot
            self._snapshot_version = version
        return snapshot

    @property
    def _handle(self) -> ctypes.c_void_p:
        return self._materialize()._handle

    @_handle.setter
    def _handle(self, value: Any) -> None:
        raise AttributeError("env.model is the engine's view of the trees so far; its handle cannot be replaced")

    def reset_parameter(self, params: dict[str, Any]) -> CallbackModel:
        self._reset(params)
        return self

    def eval_train(self, feval: Any = None) -> list:
        return self._evaluate(None, feval)

    def eval_valid(self, feval: Any = None) -> list:
        return self._evaluate("valid", feval)

    def eval(self, data: lgb.Dataset, name: str, feval: Any = None) -> list:
        results = self._evaluate(data, feval)
        return [(name, metric, value, higher) for _, metric, value, higher in results]

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise lgb.basic.LightGBMError(
            "env.model is a read-only view of the model during a smart_lgbm.train run: it cannot be "
            "updated, rolled back, refitted or given new data; use its read methods (predict, "
            "num_trees, save_model, eval_valid, ...) or reset_parameter"
        )

    update = rollback_one_iter = add_valid = set_network = free_network = _refuse
    model_from_string = set_train_data_name = free_dataset = shuffle_models = _refuse
    set_leaf_output = refit = _refuse

    def __copy__(self) -> lgb.Booster:
        return lgb.Booster(model_str=self._model_string()[1])

    def __deepcopy__(self, *args: Any, **kwargs: Any) -> lgb.Booster:
        return self.__copy__()

    def __reduce__(self) -> tuple:
        # Pickles as the plain Booster of the trees so far.
        return (_booster_from_string, (self._model_string()[1],))

    def __del__(self) -> None:  # the snapshot frees its own handle
        pass


def _booster_from_string(text: str) -> lgb.Booster:
    return lgb.Booster(model_str=text)


def has_validation_sets(booster: lgb.Booster) -> bool:
    """Whether ``lightgbm.train``/``cv`` evaluates metrics on data sets for this Booster:
    validation sets added to it, or the training set named in ``valid_sets``/``valid_names``."""
    return bool(getattr(booster, "name_valid_sets", None)) or getattr(booster, "_train_data_name", "training") != "training"


def _refuse_training_evaluation(message: str, *args: Any, **kwargs: Any) -> list:
    raise ValueError(message)


def refuse_training_evaluation(booster: lgb.Booster, message: str) -> None:
    """Make ``booster.eval_train`` raise ``ValueError(message)``.

    ``lightgbm.train`` evaluates the training set through ``Booster.eval_train`` when
    ``valid_sets`` holds the training Dataset (under any name, the default "training"
    included), and so do the scikit-learn estimators given ``eval_set=[(X, y)]``: nothing in
    the callback environment says it will.  The instance attribute shadows the method (a
    ``functools.partial`` of a module function and a string: the Booster still pickles).
    """
    booster.eval_train = functools.partial(_refuse_training_evaluation, message)  # type: ignore[method-assign]
