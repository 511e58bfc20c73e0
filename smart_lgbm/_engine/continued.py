"""Continued training (``init_model``) and a Booster that keeps its training data
(``keep_training_booster``), as :func:`lightgbm.train` gives them.

``init_model`` (a Booster or a model file): every training and validation row starts from
the init model's raw prediction (replacing a Dataset's own ``init_score``, as LightGBM's
predictor does, which warns about it), no initial score is boosted from the average, the
iterations are numbered on from the init model's (``env.iteration``, ``begin_iteration``,
``best_iteration``), and the final model holds the init model's trees first, then the new
ones (LightGBM's ``LGBM_BoosterMerge``).

``keep_training_booster=True``: the returned Booster holds a copy of the training data (and
of the validation sets), binned as the run binned them, whose initial scores are the model's
raw scores on those rows, with the model's trees merged in, which is the state
``lightgbm.train`` leaves: ``eval_train``, ``eval_valid`` and ``eval`` work, and ``update``
continues training (with stock LightGBM, every row).  The caller's Datasets are never
changed; the copies need the raw data in memory (checked before training).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from .. import _lightgbm
from .data import EngineSet

__all__ = ["InitModel", "check_keepable", "training_booster"]


class InitModel:
    """The model training continues from: its trees and its raw predictions.

    Parameters
    ----------
    init_model : lightgbm.Booster, str or path
        A Booster (read, never changed) or a LightGBM model file.
    num_model_per_iteration : int
        Trees per iteration of the run's loss; the init model must have as many.
    """

    def __init__(self, init_model: Any, num_model_per_iteration: int) -> None:
        if isinstance(init_model, (str, Path)):
            try:
                booster = lgb.Booster(model_file=str(init_model))
            except lgb.basic.LightGBMError as exc:
                raise ValueError(f"init_model={str(init_model)!r} cannot be loaded as a LightGBM model: {exc}") from None
        elif isinstance(init_model, lgb.Booster):
            booster = init_model
        else:
            raise TypeError(f"init_model must be a lightgbm.Booster, a model file path or None, "
                            f"got {type(init_model).__name__}")
        # every tree, as LightGBM's predictor of a Booster holds them (not up to best_iteration)
        text = booster.model_to_string(num_iteration=-1)
        _, self.trees, _ = _lightgbm.split_model_string(text)
        per_iteration = booster.num_model_per_iteration()
        if per_iteration != num_model_per_iteration:
            raise ValueError(f"init_model has {per_iteration} tree(s) per iteration but the objective fits "
                             f"{num_model_per_iteration}: continue it with the objective it was trained with")
        self.booster = booster if isinstance(init_model, lgb.Booster) else lgb.Booster(model_str=text)
        self.num_features = booster.num_feature()
        self.k = num_model_per_iteration
        #: the iterations it holds: the new ones are numbered from here
        self.num_iterations = len(self.trees) // max(self.k, 1)

    def start(self, data: EngineSet, what: str) -> None:
        """Make ``data``'s rows start from the init model's raw predictions."""
        raw = _raw_data(data.source)
        if raw is None:
            raise ValueError(f"init_model: {what} must start from the init model's predictions, which need its raw "
                             "data (LightGBM's predictor does too): build it with lightgbm.Dataset(X, ...) "
                             "unconstructed, or with free_raw_data=False")
        try:
            scores = self.booster.predict(raw, raw_score=True, num_iteration=-1)
        except lgb.basic.LightGBMError as exc:
            raise ValueError(f"init_model cannot predict {what}: {exc}") from None
        scores = np.asarray(scores, dtype=np.float64).reshape(data.num_rows, self.k)
        if data.init_score is not None:
            warnings.warn(f"{what}: its init_score is replaced by the init model's predictions, as in "
                          "lightgbm.train", UserWarning, stacklevel=4)
        data.init_score = scores


def _raw_data(dataset: lgb.Dataset) -> Any:
    """The raw data LightGBM's predictor would read for ``dataset`` (a file name too), or None."""
    if getattr(dataset, "used_indices", None) is not None:  # a Dataset.subset(...): the parent's rows
        parent = dataset.reference
        data: Any = None if parent is None else parent.data
        if data is None or isinstance(data, (str, Path)):
            return None
        rows = np.asarray(dataset.used_indices, dtype=np.int64)
        return data.iloc[rows] if hasattr(data, "iloc") else data[rows]
    return dataset.data


# --------------------------------------------------------------------------- keep_training_booster


def check_keepable(train_set: lgb.Dataset, valid_sets: list[lgb.Dataset]) -> None:
    """Refuse ``keep_training_booster=True`` before training when a copy cannot be made."""
    for what, dataset in [("train_set", train_set), *((f"valid_sets[{i}]", v) for i, v in enumerate(valid_sets))]:
        data = _raw_data(dataset)
        if data is None or isinstance(data, (str, Path)):
            raise ValueError(f"keep_training_booster=True: {what} has no raw data in memory (a file, or freed "
                             "by construction) for the returned Booster's copy of it; build it with "
                             "lightgbm.Dataset(X, ...) unconstructed or with free_raw_data=False, or leave "
                             "keep_training_booster=False (continue training with init_model=booster)")


def _copy(data: EngineSet, reference: lgb.Dataset, params: dict[str, Any], k: int, raw_scores: np.ndarray
          ) -> lgb.Dataset:
    """A Dataset of ``data``'s rows binned with ``reference``'s bins, starting from ``raw_scores``."""
    target = data.target
    copy = lgb.Dataset(_raw_data(data.source), label=target.label, weight=target.weight, group=target.group,
                       init_score=raw_scores.T.reshape(-1) if k > 1 else raw_scores.reshape(-1),
                       reference=reference, params=params, free_raw_data=False)
    with warnings.catch_warnings():  # (the reference's binning parameters win, as they should)
        warnings.filterwarnings("ignore", message="Overriding the parameters from Reference Dataset")
        return copy.construct()


def training_booster(model: lgb.Booster, params: dict[str, Any], train: EngineSet, train_scores: np.ndarray,
                     valids: list[tuple[EngineSet, np.ndarray, str]], train_name: str, k: int) -> lgb.Booster:
    """The Booster ``lightgbm.train(..., keep_training_booster=True)`` returns for ``model``.

    Parameters
    ----------
    model : lightgbm.Booster
        The run's final model (every tree).
    params : dict
        The Booster's parameters (the run's, with a LightGBM objective).
    train : EngineSet
        The run's training set, whose ``reference`` holds the bins the copies take.
    train_scores : ndarray of shape (n, K)
        The model's raw scores on the training rows (the run's tracked scores).
    valids : list of (EngineSet, scores, name)
        The validation sets to add, with their raw scores.
    train_name : str
    k : int
        Trees per iteration.
    """
    assert train.reference is not None  # the run's binned training copy
    train_copy = _copy(train, train.reference, params, k, train_scores)
    booster = lgb.Booster(params=params, train_set=train_copy)
    _lightgbm.merge_models(booster, model)
    booster.set_train_data_name(train_name)
    for data, scores, name in valids:
        booster.add_valid(_copy(data, train_copy, params, k, scores), name)
    return booster
