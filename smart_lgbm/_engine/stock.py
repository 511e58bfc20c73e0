"""``sampler="auto"``'s stock branch: the run handed to ``lightgbm.train`` as the caller gave it.

Where :mod:`.choice` finds that sampling does not pay (or only stock LightGBM trains the
parameters), :func:`train_stock` calls ``lightgbm.train`` with the caller's parameters,
Datasets, ``feval`` and callbacks: stock LightGBM's model, at its speed, with everything
``lightgbm.train`` does to those objects and nothing more.  What the engine adds: each
iteration's record for :func:`smart_lgbm.record_sampling` (every row, the seconds of
LightGBM's update; :class:`smart_lgbm._lightgbm.StockIterations`), and the choice written
into the model's ``parameters:`` section (:func:`smart_lgbm._lightgbm.with_model_note`),
which stock LightGBM loads as it loads any model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import lightgbm as lgb

from .. import _lightgbm
from ..samplers.auto import Choice
from .param_values import number
from .params import canonicalize

__all__ = ["train_stock"]


def train_stock(params: dict[str, Any] | None, train_set: lgb.Dataset, num_boost_round: int,
                valid_sets: Sequence[lgb.Dataset] | lgb.Dataset | None, valid_names: Sequence[str] | str | None,
                feval: Callable | list[Callable] | None, callbacks: list[Callable] | None,
                choice: Choice, init_model: Any = None, keep_training_booster: bool = False) -> lgb.Booster:
    """``lightgbm.train(params, train_set, num_boost_round, ...)``, recorded and noted as the
    engine records and notes its own runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (lightgbm.train says what it says of the parameters itself)
        p = canonicalize(params)
    watch = _lightgbm.StockIterations({"sampler": choice.label, "sampler_reason": choice.reason},
                                      samples_rows=_samples_rows(p))
    # the caller's valid_sets and valid_names go as given, as lightgbm.train takes them (a
    # single Dataset, a tuple...), so that it says of them what it says itself
    booster = lgb.train(dict(params or {}), train_set, num_boost_round,
                        valid_sets=valid_sets,  # type: ignore[arg-type]
                        valid_names=valid_names,  # type: ignore[arg-type]
                        feval=feval, init_model=init_model, keep_training_booster=keep_training_booster,
                        callbacks=[*(callbacks or []), *watch.callbacks])
    watch.detach(booster)
    # every tree the Booster holds (lightgbm.train kept them up to the best iteration)
    booster.model_from_string(_lightgbm.with_model_note(booster.model_to_string(num_iteration=-1),
                                                        choice.describe()))
    return booster


def _samples_rows(p: dict[str, Any]) -> bool:
    """Whether LightGBM draws rows per iteration with these parameters (bagging, GOSS)."""
    try:
        bagging = number(p, "bagging_freq", 0) > 0 and any(
            number(p, key, 1.0) < 1.0 for key in ("bagging_fraction", "pos_bagging_fraction", "neg_bagging_fraction"))
    except (TypeError, ValueError):
        bagging = False
    goss = str(p.get("data_sample_strategy", "")).lower() == "goss" or str(p.get("boosting", "")).lower() == "goss"
    return bagging or goss
