"""Train an XGBoost or CatBoost method of a comparison and record it as the LightGBM methods are.

Timing (``docs/compare.md``, "How time is measured"): the training data are binned before
the clock starts (``xgboost.QuantileDMatrix``, ``catboost.Pool.quantize``), as LightGBM's
Dataset is; training runs without validation data, so no evaluation happens during it, and
each iteration's seconds are taken by the library's own per-iteration callback:

* XGBoost: a ``TrainingCallback`` starts a clock in ``before_iteration`` and stops it in
  ``after_iteration``; between the two ``xgboost.train`` runs ``Booster.update()`` only.
* CatBoost: a callback's ``after_iteration`` notes the time; an iteration's seconds are the
  time since the previous one (the first: since ``fit`` was called, so it also holds
  CatBoost's setup of the run).

The validation curve is computed afterwards from the model, iteration by iteration
(XGBoost: each iteration's trees alone through ``iteration_range``, added up; CatBoost:
``staged_predict``), and measured by the project's own metric code
(:class:`smart_lgbm.metrics.Evaluator`, equal to LightGBM's metrics), so every method's
numbers are computed the same way.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..losses.base import Target
from .._engine import canonicalize, evaluator_for, resolve_loss
from .config import Experiment, MethodSpec, lightgbm_metric_params
from .data import ExperimentData
from .peers import LIBRARIES, is_deterministic, library_params, sampling_share, scores_for_metric

IterationHook = Callable[[int, float, float], None]


def run_params(method: MethodSpec, experiment: Experiment, seed: int) -> dict[str, Any]:
    """The library's parameters of one run (see :func:`smart_lgbm.compare.peers.library_params`)."""
    return library_params(method.kind, canonicalize(dict(experiment.params)), method.options, method.params, seed)


def deterministic(method: MethodSpec, experiment: Experiment) -> bool:
    """Whether the peer method gives the same model for every seed."""
    return is_deterministic(method.kind, run_params(method, experiment, 0))


class _Clock:
    """Per-iteration training seconds, with an optional budget that stops training."""

    def __init__(self, hook: IterationHook | None, budget: float | None) -> None:
        self.seconds: list[float] = []
        self.hook = hook
        self.budget = budget
        self.over_budget = False

    def add(self, seconds: float) -> bool:
        """Record one iteration; whether training must stop (the budget is used up)."""
        self.seconds.append(seconds)
        total = float(sum(self.seconds))
        if self.hook is not None:
            # the metric comes after training, from the model
            self.hook(len(self.seconds), float("nan"), total)
        if self.budget is not None and total >= self.budget:
            self.over_budget = True  # this iteration is kept: the budget ran out during it
        return self.over_budget


def _label32(y: np.ndarray) -> np.ndarray:
    # labels as LightGBM stores (and its metrics read) them: float32
    return np.asarray(y, dtype=np.float32).astype(np.float64)


def _xgboost(params: dict[str, Any], data: ExperimentData, rounds: int, clock: _Clock) -> tuple[Any, Iterator]:
    import xgboost as xgb

    train = data.train
    # the categorical columns (integer codes, NaN for missing) as XGBoost's categorical features
    categorical = {"feature_types": ["c" if j in data.categorical else "q" for j in range(train.X.shape[1])],
                   "enable_categorical": True} if data.categorical else {}
    dtrain = xgb.QuantileDMatrix(train.X, label=train.y, group=train.group, max_bin=params["max_bin"],
                                 nthread=params.get("nthread", -1), **categorical)

    class Timer(xgb.callback.TrainingCallback):
        def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            self.start = time.perf_counter()
            return False

        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            return clock.add(time.perf_counter() - self.start)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        booster = xgb.train(params, dtrain, rounds, callbacks=[Timer()])
    for w in caught:
        text = str(w.message)
        if "are not used" in text:  # XGBoost only warns about parameters it does not know
            names = text[text.find("{"):text.rfind("}") + 1]
            raise ValueError(f"XGBoost does not know the parameter(s) {names} (misspelt?)")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    del dtrain

    def raw_scores() -> Iterator[np.ndarray]:
        X = data.valid.X
        k = int(params.get("num_class", 1))
        zeros = np.zeros((X.shape[0], k) if k > 1 else X.shape[0])
        dvalid = xgb.DMatrix(X, base_margin=zeros, nthread=params.get("nthread", -1), **categorical)
        # the intercept (base_score as a raw score): one row predicted with and without it
        one = xgb.DMatrix(X[:1], nthread=1, **categorical)
        one_zero = xgb.DMatrix(X[:1], base_margin=zeros[:1], nthread=1, **categorical)
        intercept = (booster.predict(one, output_margin=True, iteration_range=(0, 1))
                     - booster.predict(one_zero, output_margin=True, iteration_range=(0, 1)))
        total = np.zeros(zeros.shape, dtype=np.float64) + intercept
        for i in range(booster.num_boosted_rounds()):
            total += booster.predict(dvalid, output_margin=True, iteration_range=(i, i + 1))
            yield total

    return booster, raw_scores()


def _catboost(params: dict[str, Any], data: ExperimentData, rounds: int, clock: _Clock) -> tuple[Any, Iterator]:
    import catboost as cb

    def pool(split: Any) -> Any:
        group = None if split.group is None else np.repeat(np.arange(len(split.group)), split.group)
        X = split.X
        if sp.issparse(X):  # CatBoost reads CSR with 32-bit indices only
            X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
        if data.categorical:
            # CatBoost's categorical features take integers or text, not NaN: the codes as
            # integers, a missing value as its own category -1
            import pandas as pd

            frame = pd.DataFrame(X)
            for j in data.categorical:
                codes = frame[j].to_numpy()
                frame[j] = np.where(np.isnan(codes), -1, codes).astype(np.int64)
            return cb.Pool(frame, label=split.y, group_id=group, cat_features=list(data.categorical))
        return cb.Pool(X, label=split.y, group_id=group)

    train = pool(data.train)
    # binned before the clock starts, as LightGBM's Dataset; with the run's binning parameters,
    # and one binning sample for every seed (as LightGBM's pinned data_random_seed)
    binning = {key: params[key] for key in ("border_count", "feature_border_type", "nan_mode",
                                            "per_float_feature_quantization") if key in params}
    train.quantize(random_seed=0, **binning)
    params = {**params, "iterations": rounds, "logging_level": "Silent", "allow_writing_files": False,
              # the training loss is computed every metric_period iterations: once is enough
              "metric_period": rounds}

    class Timer:
        last = 0.0

        def after_iteration(self, info: Any) -> bool:
            now = time.perf_counter()
            stop = clock.add(now - self.last)
            self.last = now
            return not stop  # CatBoost goes on while this is True

    model = cb.CatBoost(params)
    timer = Timer()
    try:
        timer.last = time.perf_counter()
        model.fit(train, callbacks=[timer])
    except cb.CatBoostError as exc:
        raise ValueError(f"CatBoost: {exc}") from None
    del train

    def raw_scores() -> Iterator[np.ndarray]:
        valid = pool(data.valid)
        for raw in model.staged_predict(valid, prediction_type="RawFormulaVal", eval_period=1,
                                        thread_count=params["thread_count"]):
            yield np.asarray(raw, dtype=np.float64)

    return model, raw_scores()


def run_peer(method: MethodSpec, experiment: Experiment, data: ExperimentData, seed: int, rounds: int,
             on_iteration: IterationHook | None = None, budget_seconds: float | None = None) -> tuple[Any, Any]:
    """Train a peer method; return its record's fields and the trained model.

    Returns
    -------
    (values, rates, seconds, note), model
        Per iteration the validation metric, the expected sampling share and the training
        seconds; a note when the time budget stopped it.
    """
    params = run_params(method, experiment, seed)
    clock = _Clock(on_iteration, budget_seconds)
    train = _xgboost if method.kind == "xgboost_hist" else _catboost
    model, scores = train(params, data, rounds, clock)
    lgb_params = canonicalize({**experiment.params, **lightgbm_metric_params(experiment.metric)})
    evaluator = evaluator_for(lgb_params, resolve_loss(dict(lgb_params)))
    target = Target(label=_label32(data.valid.y), group=data.valid.group)
    values = []
    for raw in scores:
        results = evaluator.evaluate(scores_for_metric(method.kind, lgb_params, raw), target)
        values.append(next(v for name, v, _ in results if name == experiment.metric))
    if len(values) != len(clock.seconds):
        raise RuntimeError(f"{LIBRARIES[method.kind]}'s model has {len(values)} iterations, but "
                           f"{len(clock.seconds)} were timed")
    note = ""
    if clock.over_budget:
        note = (f"stopped after {len(values)} of {rounds} iterations: its time budget ({budget_seconds:.3g} s of "
                "training) was used up")
    rates = [sampling_share(method.kind, params)] * len(values)
    return (values, rates, clock.seconds, note), model


def model_text(model: Any) -> str:
    """A trained model as text: LightGBM's model string, or XGBoost's and CatBoost's JSON model."""
    if hasattr(model, "model_to_string"):
        return str(model.model_to_string())
    if hasattr(model, "save_raw"):  # xgboost.Booster
        return bytes(model.save_raw(raw_format="json")).decode("utf-8")
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    finally:
        os.unlink(path)
