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
from .data import EngineSet, prepare_train, prepare_valid
from .params import canonicalize, training_data_params
from .run import BoostingRun, ScoredSet
from .stock import train_stock

__all__ = ["numba_threads", "train"]


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
          feval: Callable | list[Callable] | None, callbacks: list[Callable] | None) -> lgb.Booster:
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
                               choice)
    # the first compilation of the package's kernels in a fresh environment says so, once
    with compile_notice():
        runtime.load_cached()  # numba's runtime from its cached object file, before any kernel runs
        config = make_config(params, num_boost_round)
        if worker is None and config.asks_for_network:
            raise ValueError(_NETWORK_REFUSED)
        if choice is not None:
            announce(choice, config.verbosity)
            chosen = choice.sampler()
            assert chosen is not None  # (stock was handed to lightgbm.train above)
            sampler = chosen
        config.check_sampler(sampler)
        if isinstance(train_set, lgb.Dataset) and _lightgbm.has_positions(train_set):
            # LightGBM >= 4.1 learns a bias per position (rank_objective.hpp's
            # UpdatePositionBiasFactors) and fits the gradients of the debiased scores; the
            # engine's lambdarank does not, so it would silently train the plain model.
            raise ValueError(
                "train_set has position= (position-debiased lambdarank) which smart_lgbm.train does not implement; "
                "train it with stock lightgbm.train, or build the Dataset without position")
        train_data = prepare_train(train_set, config)
        evaluation = Evaluation(train_set, feval, dict(config.dataset_params))
        valids = evaluation.add_valid_sets(valid_sets, valid_names, train_data, config)
        config.evaluator.check(train_data.target)  # as LightGBM, which checks every metric on the training data
        with numba_threads(config.num_threads):
            run = BoostingRun(config, sampler, train_data, valids, worker=worker)
            evaluation.run = run
            try:
                return _boost(run, evaluation, callbacks, choice)
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


def _feval_results(feval: Any, preds: np.ndarray, dataset: lgb.Dataset) -> list[tuple[str, float, bool]]:
    out = []
    for fn in feval if isinstance(feval, (list, tuple)) else [feval]:
        res = fn(preds, dataset)
        for name, value, higher in res if isinstance(res, list) else [res]:
            out.append((name, float(value), bool(higher)))
    return out


class Evaluation:
    """The sets a run evaluates, and its metrics and ``feval`` on their tracked scores.

    ``sets``: (name, position in the run's validation sets) in ``valid_sets`` order; None
    stands for the training set (given among ``valid_sets`` itself).
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
                       config: RunConfig) -> list[EngineSet]:
        """The validation sets' engine view (:func:`.data.prepare_valid`), named as ``lightgbm.train`` names them."""
        if isinstance(valid_sets, lgb.Dataset):
            valid_sets = [valid_sets]
        if isinstance(valid_names, str):
            valid_names = [valid_names]
        valids = []
        for i, valid in enumerate(valid_sets or []):
            name = valid_names[i] if valid_names is not None and len(valid_names) > i else None
            if valid is self.train_set:
                self.train_name = name or "training"
                self.sets.append((self.train_name, None))
                continue
            valids.append(prepare_valid(valid, name or f"valid_{i}", train_data, config))
            if valids[-1].num_rows == 0:
                # LightGBM refuses an empty Dataset (dataset.cpp: num_data > 0); every metric
                # of it would be NaN or fail, and early stopping would act on that
                raise ValueError(f"validation set {valids[-1].name!r} has no rows; give each of valid_sets at least "
                                 "one row")
            self.sets.append((valids[-1].name, len(valids) - 1))
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
        """Every evaluated set's results, in ``valid_sets`` order."""
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


def _boost(run: BoostingRun, evaluation: Evaluation, callbacks: list[Callable] | None,
           choice: Choice | None) -> lgb.Booster:
    """``lightgbm.train``'s loop around :meth:`BoostingRun.step`; returns the stock model
    (with ``sampler="auto"``'s ``choice`` written into its parameters)."""
    metric_names = run.config.evaluator.names
    # what callbacks see as env.params (lightgbm's reset_parameter updates it), and model.params
    env_params = dict(run.config.params)

    def reset_parameter(params: dict[str, Any]) -> None:
        run.reset_parameter(params)
        env_params.update(run.config.params)

    model = _lightgbm.CallbackModel(lambda: (len(run.trees), run.model_string(metric=metric_names)),
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
        env_args: dict[str, Any] = dict(model=model, params=env_params, iteration=it, begin_iteration=0,
                                        end_iteration=num_rounds)
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
            best_iteration = exc.best_iteration + 1
            results = exc.best_score
            break
    return _final_model(run, evaluation, trees_after[best_iteration - 1] if best_iteration else None,
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
