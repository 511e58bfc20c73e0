"""``smart_lgbm.train``: LightGBM's training loop with a row sampler in front of the tree learner.

The loop is :func:`lightgbm.train`'s (parameters, validation sets, metrics, callbacks,
early stopping); each iteration is :meth:`smart_lgbm.boosting.BoostingRun.step`: gradients
of all rows, the sampler's sample, LightGBM's tree learner on the sampled rows only, and
every row's score updated by a compiled walk over the raw features.  At the end the trees
become one stock model string (the initial score folded into the first tree, the stock
``objective=`` line and parameters) loaded into an ordinary :class:`lightgbm.Booster`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

import lightgbm as lgb
import numba
import numpy as np
from lightgbm import callback as lgb_callback

from . import _lightgbm
from .boosting import BoostingRun, ScoredSet
from .continued import InitModel, check_keepable, training_booster
from .distributed import current_worker
from .engine_data import check_raw_data, prepare_train, prepare_valid
from .exceptions import IterationNotSplitWarning, NoMoreSplitsWarning
from .metrics import Evaluator
from .params import EngineConfig, dataset_params, make_config, refuse_for_sampler, training_data_params
from .samplers import Sampler, make_sampler

__all__ = ["check_training", "train"]


@contextmanager
def _numba_threads(num_threads: int) -> Iterator[None]:
    """numba's thread count for the run's compiled kernels: LightGBM's ``num_threads``
    (0 or less: all of numba's threads, as OpenMP's default), restored afterwards."""
    before = numba.get_num_threads()
    limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set from the environment
    numba.set_num_threads(min(num_threads, limit) if num_threads > 0 else limit)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _feval_results(feval: Any, preds: np.ndarray, dataset: lgb.Dataset) -> list[tuple[str, float, bool]]:
    out = []
    for fn in feval if isinstance(feval, (list, tuple)) else [feval]:
        res = fn(preds, dataset)
        for name, value, higher in res if isinstance(res, list) else [res]:
            out.append((name, float(value), bool(higher)))
    return out


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
    """Train a LightGBM model whose trees are fitted on sampled rows only.

    Same conventions as :func:`lightgbm.train`; the added ``sampler`` chooses the rows of
    each iteration.

    Parameters
    ----------
    params : dict
        LightGBM parameters (names or aliases).  ``objective`` is a LightGBM name
        (``binary``, ``regression``, ``multiclass``, ``lambdarank``) or a
        :class:`smart_lgbm.losses.Loss`.  ``seed`` (default 0) drives all randomness.
        Refused with the reason: ``boosting`` other than gbdt, ``data_sample_strategy="goss"``,
        bagging (``bagging_fraction < 1`` with ``bagging_freq > 0``), ``linear_tree``.
    train_set : lightgbm.Dataset
        Training data.  Never modified: if it is not constructed yet, the engine bins its
        own copy from the same raw data and parameters.
    num_boost_round : int, default=100
    sampler : Sampler, str or None, default=None
        A sampler object (``FirstOrder(rate=0.1)``...), a sampler name, or None for
        ``Full()`` (every row: ordinary gradient boosting).
    valid_sets, valid_names : optional
        As in ``lightgbm.train``; passing ``train_set`` itself evaluates the training set.
    feval : callable or list of callables, optional
        ``feval(preds, eval_data) -> (name, value, is_higher_better)`` as in ``lightgbm.train``.
    init_model : lightgbm.Booster, str or path, optional
        Continue training this model (a Booster, or a model file), as ``lightgbm.train``
        does: every row starts from its raw prediction (a Dataset's own ``init_score`` is
        replaced, with a warning), iterations are numbered on from its own, and the result
        holds its trees, then the new ones (:mod:`smart_lgbm.continued`).  The Datasets need
        their raw data for the prediction (not freed by construction).
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
        A stock model: saves, loads and predicts like one trained by ``lightgbm.train``.
    """
    cfg, run_sampler, init, valid_list, names = _setup(params, train_set, num_boost_round, sampler, valid_sets,
                                                       valid_names, init_model, keep_training_booster)
    worker = current_worker()  # a machine of a distributed run (smart_lgbm.distributed), or None
    ds_params = dataset_params(params)
    train_data = prepare_train(train_set, cfg.loss, ds_params)
    if init is not None:
        init.start(train_data, "train_set")
    # (name, position in the run's validation sets); None stands for the training set
    eval_sets: list[tuple[str, int | None]] = []
    train_name = "training"
    evaluates_train = False
    valids = []
    for i, valid in enumerate(valid_list):
        name = names[i] if names is not None and len(names) > i else None
        if valid is train_set:
            # as lightgbm.train: evaluated once, under the name of its last place in the list
            evaluates_train = True
            train_name = name or "training"
            continue
        valids.append(prepare_valid(valid, name or f"valid_{i}", train_data, cfg.loss, ds_params))
        if valids[-1].num_rows == 0:
            # LightGBM refuses an empty Dataset (dataset.cpp: num_data > 0); every metric
            # of it would be NaN or fail, and early stopping would act on that
            raise ValueError(f"validation set {valids[-1].name!r} has no rows; give each of valid_sets at least one row")
        if init is not None:
            init.start(valids[-1], f"validation set {valids[-1].name!r}")
        eval_sets.append((valids[-1].name, len(valids) - 1))
    if evaluates_train:
        # lightgbm.train evaluates the training set first (Booster.eval_train, then
        # eval_valid), wherever it stands in valid_sets
        eval_sets.insert(0, (train_name, None))
    if worker is not None:
        worker.share_class_counts(cfg.loss, train_data.target)
    evaluator = cfg.evaluator
    evaluator.check(train_data.target)  # as LightGBM, which checks every metric on the training data
    metric_names = evaluator.names

    with _numba_threads(int(cfg.tree_params.get("num_threads", 0))):
        run = BoostingRun(cfg, run_sampler, train_data, valids, stream=None if worker is None else worker.rank,
                          initial_score=None if worker is None else worker.initial_score,
                          init_trees=None if init is None else init.trees)
        try:
            return _train_loop(run, cfg, evaluator, eval_sets, train_set, train_name, metric_names, feval, callbacks,
                               ds_params, 0 if init is None else init.num_iterations, bool(keep_training_booster))
        finally:
            run.fitter.free()  # the C Booster's memory, also on early stopping and Ctrl-C


def _setup(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int, sampler: Any, valid_sets: Any,
           valid_names: Any, init_model: Any, keep_training_booster: Any
           ) -> tuple[EngineConfig, Sampler, InitModel | None, list[lgb.Dataset], list[str] | None]:
    """The checks :func:`train` makes before it reads any data, and what they give: the
    configuration, the sampler, the init model, ``valid_sets`` and ``valid_names`` as lists."""
    _lightgbm.check_version()
    cfg = make_config(params, num_boost_round)
    if not isinstance(keep_training_booster, (bool, np.bool_)):
        raise TypeError(f"keep_training_booster must be True or False, got {keep_training_booster!r}")
    init = None if init_model is None else InitModel(init_model, cfg.loss.num_model_per_iteration)
    if current_worker() is None and ("machines" in cfg.params or int(cfg.params.get("num_machines", 1)) > 1):
        raise ValueError(
            "machines / num_machines > 1: smart_lgbm.train does not join LightGBM's network itself; train on "
            "several machines with smart_lgbm.dask (or inside smart_lgbm.distributed.on_network)")
    sampler_object = make_sampler(sampler)
    refuse_for_sampler(cfg.params, sampler_object)
    if isinstance(train_set, lgb.Dataset) and _lightgbm.has_positions(train_set):
        # LightGBM >= 4.1 learns a bias per position (rank_objective.hpp's
        # UpdatePositionBiasFactors) and fits the gradients of the debiased scores; the
        # engine's lambdarank does not, so it would silently train the plain model.
        raise ValueError(
            "train_set has position= (position-debiased lambdarank) which smart_lgbm.train does not implement; "
            "train it with stock lightgbm.train, or build the Dataset without position")
    valid_list = [valid_sets] if isinstance(valid_sets, lgb.Dataset) else list(valid_sets or [])
    names = [valid_names] if isinstance(valid_names, str) else None if valid_names is None else list(valid_names)
    if keep_training_booster:  # (before any work: the copies need the raw data)
        check_keepable(train_set, [v for v in valid_list if v is not train_set])
    return cfg, sampler_object, init, valid_list, names


def check_training(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int = 100, *,
                   sampler: Sampler | str | None = None, valid_sets: Any = None, valid_names: Any = None,
                   feval: Any = None, init_model: Any = None, keep_training_booster: bool = False,
                   callbacks: Any = None) -> None:
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
    cfg, _, init, valid_list, names = _setup(params, train_set, num_boost_round, sampler, valid_sets, valid_names,
                                             init_model, keep_training_booster)
    width = check_raw_data(train_set, "train_set", cfg.loss, cfg.evaluator)
    if init is not None and width is not None and width != init.num_features:
        raise ValueError(f"init_model was trained on {init.num_features} features but train_set has {width}")
    for i, valid in enumerate(valid_list):
        if valid is train_set:
            continue
        name = names[i] if names is not None and len(names) > i else f"valid_{i}"
        valid_width = check_raw_data(valid, f"validation set {name!r}", cfg.loss, None)
        if width is not None and valid_width is not None and valid_width != width:
            raise ValueError(f"validation set {name!r} has {valid_width} features but the training data has {width}")


def _train_loop(run: BoostingRun, cfg: Any, evaluator: Evaluator, eval_sets: list[tuple[str, int | None]],
                train_set: lgb.Dataset, train_name: str, metric_names: list[str], feval: Any,
                callbacks: list[Callable] | None, ds_params: dict[str, Any], begin: int = 0,
                keep_training_booster: bool = False) -> lgb.Booster:
    """``lightgbm.train``'s loop around :meth:`BoostingRun.step`; returns the stock model.

    ``begin``: the first iteration's number (an init model's iterations come before it)."""

    def scored(position: int | None) -> ScoredSet:
        return run.train if position is None else run.valids[position]

    def evaluate_set(name: str, position: int | None, fevals: Any) -> list:
        data = scored(position)
        raw = run.view(data.scores)
        scores = [_lightgbm.evaluation_result(name, m, v, h) for m, v, h in evaluator.evaluate(raw, data.data.target)]
        if fevals is not None:
            scores += [_lightgbm.evaluation_result(name, m, v, h)
                       for m, v, h in _feval_results(fevals, cfg.loss.transform(raw), feval_dataset(position))]
        return scores

    feval_datasets: dict[int | None, lgb.Dataset] = {}

    def feval_dataset(position: int | None) -> lgb.Dataset:
        """What lightgbm.train hands feval: a constructed Dataset (built once, only if asked)."""
        if position not in feval_datasets:
            source = train_set if position is None else run.valids[position].data.source
            reference = None if position is None else feval_dataset(None)
            feval_datasets[position] = _lightgbm.constructed_like(source, ds_params, reference)
        return feval_datasets[position]

    def evaluate_for_model(which: Any, fevals: Any) -> list:
        """``env.model.eval_train / eval_valid / eval`` on the engine's current scores."""
        if which is None or which is train_set:
            return evaluate_set(train_name, None, fevals)
        chosen = [(name, pos) for name, pos in eval_sets
                  if pos is not None and (which == "valid" or run.valids[pos].data.source is which)]
        if which != "valid" and not chosen:
            raise ValueError("env.model.eval during smart_lgbm.train evaluates only the training set and the "
                             "validation sets given to smart_lgbm.train")
        return [score for name, pos in chosen for score in evaluate_set(name, pos, fevals)]

    model = _lightgbm.CallbackModel(lambda: (run.num_trees, run.model_string(metric=metric_names)),
                                    run.reset_parameter, evaluate_for_model, train_name,
                                    run.train.data.pandas_categorical)
    model.params = cfg.params

    callbacks_set = set()
    callback_list = list(callbacks or [])
    for i, cb in enumerate(callback_list):
        cb.__dict__.setdefault("order", i - len(callback_list))
        callbacks_set.add(cb)
    if cfg.early_stopping_round is not None:
        callbacks_set.add(lgb.early_stopping(cfg.early_stopping_round, first_metric_only=cfg.first_metric_only,
                                             min_delta=cfg.early_stopping_min_delta, verbose=cfg.verbosity > 0))
    before = sorted((cb for cb in callbacks_set if getattr(cb, "before_iteration", False)), key=attrgetter("order"))
    after = sorted((cb for cb in callbacks_set if not getattr(cb, "before_iteration", False)), key=attrgetter("order"))

    results: list = []
    best_iteration = 0
    trees_after: list[int] = []  # number of trees in the model after each iteration
    for it in range(cfg.num_rounds):
        env_args = dict(model=model, params=cfg.params, iteration=begin + it, begin_iteration=begin,
                        end_iteration=begin + cfg.num_rounds)
        for cb in before:
            cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=None))
        record = run.step(it)
        if record["num_trees"] == 0 and run.trees and it > 0:
            if run.will_repeat():
                # Nothing random would change: every later iteration would be this one again.
                warnings.warn("Stopped training because there are no more leaves that meet the split "
                              "requirements", NoMoreSplitsWarning, stacklevel=3)
                break
            warnings.warn("an iteration's sample could not be split (no leaf meets the split requirements); "
                          "no tree was added and training goes on with the next sample, as LightGBM's "
                          "bagging does", IterationNotSplitWarning, stacklevel=3)
        trees_after.append(len(run.trees))
        model.last_record = record
        results = [score for name, position in eval_sets for score in evaluate_set(name, position, feval)]
        # what an adaptive rate's plateau rule judges by (samplers/adaptive.py): the validation sets' scores
        run.history.validation = [score for score in results if score[0] != train_name]
        try:
            for cb in after:
                cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=results))
        except lgb_callback.EarlyStopException as exc:
            best_iteration = exc.best_iteration + 1  # (counted from the init model's first, as stock)
            results = exc.best_score
            break
    data_params = training_data_params(train_set, run.train.data.reference)

    def parameters() -> str:
        return _lightgbm.set_parameter_line(run.fitter.parameters_section(cfg.model_params(data_params)),
                                            "verbosity", str(cfg.verbosity))

    if keep_training_booster:  # every tree, and the training data kept (smart_lgbm.continued)
        booster = training_booster(
            lgb.Booster(model_str=run.model_string(None, parameters(), metric_names)), _booster_params(cfg),
            run.train.data, run.train.scores, [(v.data, v.scores, v.data.name) for v in run.valids], train_name,
            run.k)
        run.release_training()
    else:
        # The run's training structures go before the final model's parameters, text and
        # load: the process's peak on small data comes there (docs/engine.md, "Memory")
        run.release_training()
        kept = trees_after[best_iteration - begin - 1] if best_iteration else None
        booster = lgb.Booster(model_str=run.model_string(kept, parameters(), metric_names))
        booster.set_train_data_name(train_name)
    booster.best_iteration = best_iteration
    booster.best_score = _lightgbm.best_score_of(results)
    return booster


def _booster_params(cfg: Any) -> dict[str, Any]:
    """LightGBM parameters of a Booster that continues the run with stock LightGBM."""
    objective = cfg.loss.lightgbm_objective or "none"  # (a custom loss: update() then takes fobj)
    return {**{k: v for k, v in cfg.params.items() if k != "objective"}, **cfg.loss.lightgbm_params(),
            "objective": objective, "verbosity": cfg.verbosity}
