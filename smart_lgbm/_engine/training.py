"""``lightgbm.train``'s loop around the run: setup, callbacks, evaluation, the final model.

:func:`train` is what :func:`smart_lgbm.train` runs: it reads ``params`` once
(:func:`.config.make_config`), prepares the data (:mod:`.data`), starts the run
(:class:`.run.BoostingRun`), and boosts (:func:`_boost`): ``lightgbm.train``'s callbacks
before and after each iteration, its metrics on the tracked scores (:class:`Evaluation`),
early stopping, and at the end one stock model string loaded into an ordinary
:class:`lightgbm.Booster`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

import lightgbm as lgb
import numba
import numpy as np
from lightgbm import callback as lgb_callback

from .. import _lightgbm
from .._numba import runtime
from .._numba.notice import compile_notice
from ..distributed import current_worker
from ..exceptions import IterationNotSplitWarning, NoMoreSplitsWarning
from ..samplers import Auto, Sampler, make_sampler
from ..samplers.auto import Choice
from .choice import announce, auto_choice
from .config import RunConfig, make_config
from .continued import InitModel, check_keepable, training_booster
from .data import EngineSet, check_raw_data, prepare_train, prepare_valid
from .params import canonicalize, training_data_params
from .run import BoostingRun, ScoredSet
from .stock import train_stock

__all__ = ["check_training", "numba_threads", "train"]


@contextmanager
def numba_threads(num_threads: int) -> Iterator[None]:
    """numba's thread count for the run's compiled kernels: LightGBM's ``num_threads``
    (0 or less: all of numba's threads, as OpenMP's default), restored afterwards."""
    before = numba.get_num_threads()
    limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set from the environment
    numba.set_num_threads(min(num_threads, limit) if num_threads > 0 else limit)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def train(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int, sampler: Sampler | str | None,
          valid_sets: Sequence[lgb.Dataset] | lgb.Dataset | None, valid_names: Sequence[str] | str | None,
          feval: Callable | list[Callable] | None, callbacks: list[Callable] | None, init_model: Any = None,
          keep_training_booster: bool = False) -> lgb.Booster:
    """:func:`smart_lgbm.train` (its docstring has the parameters)."""
    _lightgbm.check_version()
    worker = current_worker()  # a machine of a distributed run (smart_lgbm.distributed), or None
    sampler = make_sampler(sampler)
    choice: Choice | None = None
    if isinstance(sampler, Auto):
        choice = auto_choice(params, train_set, num_boost_round, worker)
        if choice.stock:
            if worker is None and _asks_for_network(params):
                raise ValueError(_NETWORK_REFUSED)
            if choice.facts.stock_only is None:
                # the parameters' values are checked as when the engine trains (lightgbm.train
                # then says what it says of them itself)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    make_config(params, num_boost_round)
            announce(choice, _verbosity(params))
            return train_stock(params, train_set, num_boost_round, valid_sets, valid_names, feval, callbacks,
                               choice, init_model=init_model, keep_training_booster=keep_training_booster)
    # the first compilation of the package's kernels in a fresh environment says so, once
    with compile_notice():
        runtime.load_cached()  # numba's runtime from its cached object file, before any kernel runs
        config, run_sampler, init = _setup(params, train_set, num_boost_round, sampler, valid_sets, init_model,
                                           keep_training_booster, choice)
        train_data = prepare_train(train_set, config)
        if init is not None:
            init.start(train_data, "train_set")
        evaluation = Evaluation(train_set, feval, dict(config.dataset_params))
        valids = evaluation.add_valid_sets(valid_sets, valid_names, train_data, config, init)
        if worker is not None:
            worker.share_class_counts(config.loss, train_data.target)
        config.evaluator.check(train_data.target)  # as LightGBM, which checks every metric on the training data
        with numba_threads(config.num_threads):
            run = BoostingRun(config, run_sampler, train_data, valids, worker=worker,
                              init_trees=None if init is None else init.trees)
            evaluation.run = run
            try:
                return _boost(run, evaluation, callbacks, choice, 0 if init is None else init.num_iterations,
                              bool(keep_training_booster))
            finally:
                run.fitter.free()  # the C Booster's memory, also on early stopping and Ctrl-C


_NETWORK_REFUSED = (
    "machines / num_machines > 1: smart_lgbm.train does not join LightGBM's network itself; train on several "
    "machines with smart_lgbm.dask (or inside smart_lgbm.distributed.on_network)")


def _asks_for_network(params: dict[str, Any] | None) -> bool:
    """Whether ``params`` name LightGBM's network (``machines``, ``num_machines > 1``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = canonicalize(params)
    try:
        return "machines" in p or int(p.get("num_machines", 1)) > 1
    except (TypeError, ValueError):
        return False


def _verbosity(params: dict[str, Any] | None) -> int:
    """LightGBM's ``verbosity`` of ``params`` (1 when not given or not a number)."""
    aliases = _lightgbm.param_aliases().get("verbosity", ("verbosity",))
    for key in aliases:
        if params and key in params:
            try:
                return int(params[key])
            except (TypeError, ValueError):
                return 1
    return 1


def _setup(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int, sampler: Any, valid_sets: Any,
           init_model: Any, keep_training_booster: Any,
           choice: Choice | None = None) -> tuple[RunConfig, Sampler, InitModel | None]:
    """The checks :func:`train` makes before it reads any data, and what they give: the
    configuration, the sampler (``choice``'s, for ``sampler="auto"``) and the init model."""
    _lightgbm.check_version()
    config = make_config(params, num_boost_round)
    if not isinstance(keep_training_booster, (bool, np.bool_)):
        raise TypeError(f"keep_training_booster must be True or False, got {keep_training_booster!r}")
    init = None if init_model is None else InitModel(init_model, config.loss.num_model_per_iteration)
    if current_worker() is None and config.asks_for_network:
        raise ValueError(_NETWORK_REFUSED)
    run_sampler = make_sampler(sampler)
    if choice is not None:
        announce(choice, config.verbosity)
        chosen = choice.sampler()
        assert chosen is not None  # (stock was handed to lightgbm.train before)
        run_sampler = chosen
    if not isinstance(run_sampler, Auto):  # (checking a run's facts alone: its choice comes in train)
        config.check_sampler(run_sampler)
    if isinstance(train_set, lgb.Dataset) and _lightgbm.has_positions(train_set):
        # LightGBM >= 4.1 learns a bias per position (rank_objective.hpp's
        # UpdatePositionBiasFactors) and fits the gradients of the debiased scores; the
        # engine's lambdarank does not, so it would silently train the plain model.
        raise ValueError(
            "train_set has position= (position-debiased lambdarank) which smart_lgbm.train does not implement; "
            "train it with stock lightgbm.train, or build the Dataset without position")
    if keep_training_booster:  # (before any work: the copies need the raw data)
        valid_list = [valid_sets] if isinstance(valid_sets, lgb.Dataset) else list(valid_sets or [])
        check_keepable(train_set, [v for v in valid_list if v is not train_set])
    return config, run_sampler, init


def check_training(params: dict[str, Any], train_set: lgb.Dataset, num_boost_round: int = 100, *,
                   sampler: Sampler | str | None = None, valid_sets: Any = None, valid_names: Any = None,
                   feval: Any = None, init_model: Any = None, keep_training_booster: bool = False,
                   callbacks: Any = None) -> None:
    """Make the checks :func:`train` makes, train nothing (:func:`smart_lgbm.engine.check_training`)."""
    config, _, init = _setup(params, train_set, num_boost_round, sampler, valid_sets, init_model,
                             keep_training_booster)
    valid_list = [valid_sets] if isinstance(valid_sets, lgb.Dataset) else list(valid_sets or [])
    names = [valid_names] if isinstance(valid_names, str) else None if valid_names is None else list(valid_names)
    width = check_raw_data(train_set, "train_set", config.loss, config.evaluator)
    if init is not None and width is not None and width != init.num_features:
        raise ValueError(f"init_model was trained on {init.num_features} features but train_set has {width}")
    for i, valid in enumerate(valid_list):
        if valid is train_set:
            continue
        name = names[i] if names is not None and len(names) > i else f"valid_{i}"
        valid_width = check_raw_data(valid, f"validation set {name!r}", config.loss, None)
        if width is not None and valid_width is not None and valid_width != width:
            raise ValueError(f"validation set {name!r} has {valid_width} features but the training data has {width}")


def _feval_results(feval: Any, preds: np.ndarray, dataset: lgb.Dataset) -> list[tuple[str, float, bool]]:
    out = []
    for fn in feval if isinstance(feval, (list, tuple)) else [feval]:
        res = fn(preds, dataset)
        for name, value, higher in res if isinstance(res, list) else [res]:
            out.append((name, float(value), bool(higher)))
    return out


class Evaluation:
    """The sets a run evaluates, and its metrics and ``feval`` on their tracked scores.

    ``sets``: (name, position in the run's validation sets) in ``lightgbm.train``'s order: the
    training set first (None; given among ``valid_sets`` itself), then ``valid_sets``' order.
    """

    def __init__(self, train_set: lgb.Dataset, feval: Any, dataset_params: dict[str, Any]) -> None:
        self.train_set = train_set
        self.feval = feval
        self.dataset_params = dataset_params
        self.train_name = "training"
        self.sets: list[tuple[str, int | None]] = []
        self.run: BoostingRun | None = None
        self._feval_datasets: dict[int | None, lgb.Dataset] = {}

    def add_valid_sets(self, valid_sets: Sequence[lgb.Dataset] | lgb.Dataset | None,
                       valid_names: Sequence[str] | str | None, train_data: EngineSet,
                       config: RunConfig, init: InitModel | None = None) -> list[EngineSet]:
        """The validation sets' engine view (:func:`.data.prepare_valid`), named as ``lightgbm.train``
        names them, starting from ``init``'s predictions when given."""
        if isinstance(valid_sets, lgb.Dataset):
            valid_sets = [valid_sets]
        if isinstance(valid_names, str):
            valid_names = [valid_names]
        valids = []
        evaluates_train = False
        for i, valid in enumerate(valid_sets or []):
            name = valid_names[i] if valid_names is not None and len(valid_names) > i else None
            if valid is self.train_set:
                # as lightgbm.train: evaluated once, under the name of its last place in the list
                evaluates_train = True
                self.train_name = name or "training"
                continue
            valids.append(prepare_valid(valid, name or f"valid_{i}", train_data, config))
            if valids[-1].num_rows == 0:
                # LightGBM refuses an empty Dataset (dataset.cpp: num_data > 0); every metric
                # of it would be NaN or fail, and early stopping would act on that
                raise ValueError(f"validation set {valids[-1].name!r} has no rows; give each of valid_sets at least "
                                 "one row")
            if init is not None:
                init.start(valids[-1], f"validation set {valids[-1].name!r}")
            self.sets.append((valids[-1].name, len(valids) - 1))
        if evaluates_train:
            # lightgbm.train evaluates the training set first (Booster.eval_train, then
            # eval_valid), wherever it stands in valid_sets
            self.sets.insert(0, (self.train_name, None))
        return valids

    def _scored(self, position: int | None) -> ScoredSet:
        assert self.run is not None  # set once the run starts
        return self.run.train if position is None else self.run.valids[position]

    def evaluate_set(self, name: str, position: int | None, fevals: Any) -> list:
        """``lightgbm.train``'s evaluation results of one set."""
        assert self.run is not None  # set once the run starts
        data = self._scored(position)
        raw = self.run.view(data.scores)
        evaluator = self.run.config.evaluator
        scores = [_lightgbm.evaluation_result(name, m, v, h) for m, v, h in evaluator.evaluate(raw, data.data.target)]
        if fevals is not None:
            scores += [_lightgbm.evaluation_result(name, m, v, h) for m, v, h in
                       _feval_results(fevals, self.run.loss.transform(raw), self._feval_dataset(position))]
        return scores

    def results(self) -> list:
        """Every evaluated set's results, in ``lightgbm.train``'s order (:attr:`sets`)."""
        return [score for name, position in self.sets for score in self.evaluate_set(name, position, self.feval)]

    def validation_scores(self, results: list) -> tuple:
        """The validation sets' scores among ``results`` (the training set's left out)."""
        return tuple(score for score in results if score[0] != self.train_name)

    def _feval_dataset(self, position: int | None) -> lgb.Dataset:
        """What lightgbm.train hands feval: a constructed Dataset (built once, only if asked)."""
        if position not in self._feval_datasets:
            source = self.train_set if position is None else self._scored(position).data.source
            reference = None if position is None else self._feval_dataset(None)
            self._feval_datasets[position] = _lightgbm.constructed_like(source, self.dataset_params, reference)
        return self._feval_datasets[position]

    def for_model(self, which: Any, fevals: Any) -> list:
        """``env.model.eval_train / eval_valid / eval`` on the engine's current scores."""
        if which is None or which is self.train_set:
            return self.evaluate_set(self.train_name, None, fevals)
        chosen = [(name, pos) for name, pos in self.sets
                  if pos is not None and (which == "valid" or self._scored(pos).data.source is which)]
        if which != "valid" and not chosen:
            raise ValueError("env.model.eval during smart_lgbm.train evaluates only the training set and the "
                             "validation sets given to smart_lgbm.train")
        return [score for name, pos in chosen for score in self.evaluate_set(name, pos, fevals)]


def _callbacks(run: BoostingRun, callbacks: list[Callable] | None) -> tuple[list[Callable], list[Callable]]:
    """The callbacks before and after each iteration, in ``lightgbm.train``'s order (with the
    early stopping the parameters ask for)."""
    config = run.config
    callbacks_set = set()
    callback_list = list(callbacks or [])
    for i, cb in enumerate(callback_list):
        cb.__dict__.setdefault("order", i - len(callback_list))
        callbacks_set.add(cb)
    if config.early_stopping_round is not None:
        callbacks_set.add(lgb.early_stopping(config.early_stopping_round, first_metric_only=config.first_metric_only,
                                             min_delta=config.early_stopping_min_delta, verbose=config.verbosity > 0))
    before = sorted((cb for cb in callbacks_set if getattr(cb, "before_iteration", False)), key=attrgetter("order"))
    after = sorted((cb for cb in callbacks_set if not getattr(cb, "before_iteration", False)), key=attrgetter("order"))
    return before, after


def _boost(run: BoostingRun, evaluation: Evaluation, callbacks: list[Callable] | None, choice: Choice | None,
           begin: int = 0, keep_training_booster: bool = False) -> lgb.Booster:
    """``lightgbm.train``'s loop around :meth:`BoostingRun.step`; returns the stock model
    (with ``sampler="auto"``'s ``choice`` written into its parameters).

    ``begin``: the first iteration's number (an init model's iterations come before it)."""
    metric_names = run.config.evaluator.names
    # what callbacks see as env.params (lightgbm's reset_parameter updates it), and model.params
    env_params = dict(run.config.params)

    def reset_parameter(params: dict[str, Any]) -> None:
        run.reset_parameter(params)
        env_params.update(run.config.params)

    model = _lightgbm.CallbackModel(lambda: (run.num_trees, run.model_string(metric=metric_names)),
                                    reset_parameter, evaluation.for_model, evaluation.train_name,
                                    run.train.data.pandas_categorical)
    model.params = env_params
    before, after = _callbacks(run, callbacks)
    num_rounds = run.config.num_rounds
    # what record_sampling reads besides the counts: the sampler that ran, and why
    named = ({"sampler": choice.label, "sampler_reason": choice.reason} if choice is not None
             else {"sampler": repr(run.sampler), "sampler_reason": "given"})
    results: list = []
    best_iteration = 0
    trees_after: list[int] = []  # number of trees in the model after each iteration
    for it in range(num_rounds):
        env_args: dict[str, Any] = dict(model=model, params=env_params, iteration=begin + it, begin_iteration=begin,
                                        end_iteration=begin + num_rounds)
        for cb in before:
            cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=None))
        record = run.step(it)
        if record["num_trees"] == 0 and run.trees and it > 0:
            if run.will_repeat():
                # Nothing random would change: every later iteration would be this one again.
                warnings.warn("Stopped training because there are no more leaves that meet the split "
                              "requirements", NoMoreSplitsWarning, stacklevel=4)
                break
            warnings.warn("an iteration's sample could not be split (no leaf meets the split requirements); "
                          "no tree was added and training goes on with the next sample, as LightGBM's "
                          "bagging does", IterationNotSplitWarning, stacklevel=4)
        trees_after.append(len(run.trees))
        model.last_record = {**record, **named}
        results = evaluation.results()
        # what an adaptive rate's validation rules judge by (samplers/adaptive.py)
        run.context.validation = evaluation.validation_scores(results)
        try:
            for cb in after:
                cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=results))
        except lgb_callback.EarlyStopException as exc:
            best_iteration = exc.best_iteration + 1  # (counted from the init model's first, as stock)
            results = exc.best_score
            break
    if keep_training_booster:  # every tree, and the training data kept (.continued)
        return _training_booster(run, evaluation, best_iteration, results)
    return _final_model(run, evaluation, trees_after[best_iteration - begin - 1] if best_iteration else None,
                        best_iteration, results, choice)


def _final_model(run: BoostingRun, evaluation: Evaluation, num_trees: int | None, best_iteration: int,
                 results: list, choice: Choice | None) -> lgb.Booster:
    """The trees (the first ``num_trees``) as one stock model, loaded into a Booster."""
    data_params = training_data_params(evaluation.train_set, run.train.data.reference)
    # The run's training structures go before the final model's parameters, text and load:
    # the process's peak on small data comes there (docs/engine.md, "Memory")
    run.release_training()
    config = run.config
    parameters = _lightgbm.set_parameter_line(run.fitter.parameters_section(config.model_params(data_params)),
                                              "verbosity", str(config.verbosity))
    if choice is not None:
        parameters = _lightgbm.with_model_note(parameters, choice.describe())
    booster = lgb.Booster(model_str=run.model_string(num_trees, parameters, config.evaluator.names))
    booster.set_train_data_name(evaluation.train_name)
    booster.best_iteration = best_iteration
    booster.best_score = _lightgbm.best_score_of(results)
    return booster


def _training_booster(run: BoostingRun, evaluation: Evaluation, best_iteration: int, results: list) -> lgb.Booster:
    """``keep_training_booster=True``: the model with every tree in a Booster that keeps copies
    of the training and validation data (:func:`.continued.training_booster`)."""
    config = run.config
    data_params = training_data_params(evaluation.train_set, run.train.data.reference)
    parameters = _lightgbm.set_parameter_line(run.fitter.parameters_section(config.model_params(data_params)),
                                              "verbosity", str(config.verbosity))
    model = lgb.Booster(model_str=run.model_string(None, parameters, config.evaluator.names))
    objective = config.loss.lightgbm_objective or "none"  # (a custom loss: update() then takes fobj)
    booster_params = {**{k: v for k, v in config.params.items() if k != "objective"}, **config.loss.lightgbm_params(),
                      "objective": objective, "verbosity": config.verbosity}
    booster = training_booster(model, booster_params, run.train.data, run.train.scores,
                               [(v.data, v.scores, v.data.name) for v in run.valids], evaluation.train_name, run.k)
    run.release_training()
    booster.best_iteration = best_iteration
    booster.best_score = _lightgbm.best_score_of(results)
    return booster
