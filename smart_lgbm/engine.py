"""``smart_lgbm.train``: LightGBM's training loop with a row sampler in front of the tree learner.

The loop is :func:`lightgbm.train`'s (parameters, validation sets, metrics, callbacks,
early stopping); each iteration is :meth:`smart_lgbm._engine.run.BoostingRun.step`: gradients
of all rows, the sampler's sample, LightGBM's tree learner on the sampled rows only, and
every row's score updated by a compiled walk over the raw features.  At the end the trees
become one stock model string (the initial score folded into the first tree, the stock
``objective=`` line and parameters) loaded into an ordinary :class:`lightgbm.Booster`.
The default, ``sampler="auto"``, chooses the method before the first tree and hands the run
to :func:`lightgbm.train` itself where sampling does not pay
(:mod:`smart_lgbm.samplers.auto`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import lightgbm as lgb

from . import _engine
from .samplers import Sampler

__all__ = ["check_training", "train"]


def train(
    params: dict[str, Any],
    train_set: lgb.Dataset,
    num_boost_round: int = 100,
    *,
    sampler: Sampler | str | None = None,
    valid_sets: Sequence[lgb.Dataset] | lgb.Dataset | None = None,
    valid_names: Sequence[str] | str | None = None,
    feval: Callable | list[Callable] | None = None,
    init_model: lgb.Booster | str | os.PathLike | None = None,
    keep_training_booster: bool = False,
    callbacks: list[Callable] | None = None,
) -> lgb.Booster:
    """Train a LightGBM model, each tree fitted on a sample of the rows where that pays.

    Same conventions as :func:`lightgbm.train`; the added ``sampler`` chooses the rows of
    each iteration.  With a sampler object or name every tree is fitted on the rows that
    sampler draws.  The default, ``sampler="auto"``, chooses before the first tree from the
    task, the data's size and storage and the parameters (the rule table of
    :mod:`smart_lgbm.samplers.auto`, docs/choosing.md): on large data
    ``FirstOrder(rate="auto", refit_leaves=True)`` (trees fitted on sampled rows, leaf
    values from every row); on small data, or with parameters only stock LightGBM trains,
    :func:`lightgbm.train` itself, with these arguments: stock LightGBM's model at its
    speed.  The choice and its reason are logged (the ``smart_lgbm`` logger, and LightGBM's
    way at ``verbosity >= 1``), recorded by :func:`smart_lgbm.record_sampling` and written
    into the model's ``parameters:`` section (a ``[smart_lgbm ...]`` line that stock
    LightGBM loads and keeps).

    Parameters
    ----------
    params : dict
        LightGBM parameters (names or aliases).  ``objective`` is a LightGBM name
        (``binary``, ``regression``, ``multiclass``, ``lambdarank``, ``huber``,
        ``cross_entropy``) or a
        :class:`smart_lgbm.losses.Loss`.  ``seed`` (default 0) drives all randomness.
        Refused with the reason: ``boosting`` other than gbdt, ``data_sample_strategy="goss"``,
        bagging (``bagging_fraction < 1`` with ``bagging_freq > 0``), ``linear_tree``.
    train_set : lightgbm.Dataset
        Training data.  Never modified: if it is not constructed yet, the engine bins its
        own copy from the same raw data and parameters.
    num_boost_round : int, default=100
    sampler : Sampler, str or None, default=None
        A sampler object (``FirstOrder(rate=0.1)``, ``Full()`` for every row through the
        engine...), a sampler name (``"first_order"``...), or ``"auto"``; None means
        ``"auto"`` (:class:`smart_lgbm.Auto`).
    valid_sets, valid_names : optional
        As in ``lightgbm.train``; passing ``train_set`` itself evaluates the training set.
    feval : callable or list of callables, optional
        ``feval(preds, eval_data) -> (name, value, is_higher_better)`` as in ``lightgbm.train``.
    init_model : lightgbm.Booster, str or path, optional
        Continue training this model (a Booster, or a model file), as ``lightgbm.train``
        does: every row starts from its raw prediction (a Dataset's own ``init_score`` is
        replaced, with a warning), iterations are numbered on from its own, and the result
        holds its trees, then the new ones.  The Datasets need their raw data for the
        prediction (not freed by construction).
    keep_training_booster : bool, default=False
        As in ``lightgbm.train``: True returns a Booster that keeps a copy of the training
        data and the validation sets (``eval_train``, ``eval_valid`` work; ``update``
        continues with stock LightGBM) and all its trees, also after early stopping; False
        a Booster loaded from the model (up to the best iteration after early stopping).
    callbacks : list of callables, optional
        ``lightgbm.early_stopping``, ``log_evaluation``, ``record_evaluation``,
        ``reset_parameter`` and :func:`smart_lgbm.record_sampling` work unchanged.

    Returns
    -------
    lightgbm.Booster
        A stock model: saves, loads and predicts like one trained by ``lightgbm.train``
        (where ``sampler="auto"`` chose stock LightGBM, ``lightgbm.train``'s own, with the
        choice's line in its parameters).
    """
    return _engine.train(params, train_set, num_boost_round, sampler, valid_sets, valid_names, feval, callbacks,
                         init_model, keep_training_booster)


def check_training(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int = 100, *,
                   sampler: Sampler | str | None = None, valid_sets: Sequence[lgb.Dataset] | lgb.Dataset | None = None,
                   valid_names: Sequence[str] | str | None = None, feval: Callable | list[Callable] | None = None,
                   init_model: lgb.Booster | str | os.PathLike | None = None, keep_training_booster: bool = False,
                   callbacks: list[Callable] | None = None) -> None:
    """Make the checks :func:`train` makes, train nothing.

    The parameters, the sampler, the init model, and the data as far as they can be checked
    without binning it: labels, weights, query groups and initial scores of the training
    and validation sets (the loss's and the metrics' checks), the validation sets' widths,
    the init model's.  Arguments as :func:`train`'s.  A distributed fit
    (:mod:`smart_lgbm.dask`) runs it on every machine's rows before any machine joins
    LightGBM's network, where one machine's late refusal would leave the others waiting.

    Raises
    ------
    ValueError, TypeError
        What :func:`train` would raise for these arguments before training.
    """
    _engine.check_training(params, train_set, num_boost_round, sampler=sampler, valid_sets=valid_sets,
                           valid_names=valid_names, feval=feval, init_model=init_model,
                           keep_training_booster=keep_training_booster, callbacks=callbacks)
