"""Train one method of a comparison with one seed and record it per iteration.

Stock methods run ``lightgbm.train`` with LightGBM's own objective; engine methods run
:func:`smart_lgbm.train` with a sampler; peer methods XGBoost or CatBoost
(:mod:`.peer_runs`).  Stock and engine methods are given the same parameters (learning
rate, leaves, objective, metric) and the same fresh Datasets, and both are recorded the
same way: per iteration the validation metric, the sampling rate and the seconds of the
training step, evaluation excluded.

Timing (see ``docs/compare.md``):

* engine: the engine's own per-iteration record (:func:`smart_lgbm.record_sampling`):
  gradients, sampling, subset, tree fitting and score updates of the training and
  validation sets; evaluation is outside it.
* stock: ``lightgbm.train`` runs, per iteration, the before-iteration callbacks,
  ``Booster.update()`` (gradients, sampling, tree, training and validation score updates),
  the evaluation of the validation set, then the after-iteration callbacks.  A
  before-iteration callback starts a clock, the first after-iteration callback stops it and
  then times one more ``eval_valid()`` call on the same model; the iteration's seconds are
  the clock minus that evaluation time (the second evaluation itself runs off the clock).
* peers (XGBoost, CatBoost): :mod:`.peer_runs`, the same record from the library's own
  per-iteration callbacks, trained without validation data, the curve computed afterwards.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import lightgbm as lgb
import numpy as np

from .._engine import RANDOM_TREE_PARAMS, canonicalize
from ..callback import record_sampling
from ..engine import train as engine_train
from ..exceptions import IterationNotSplitWarning
from ..samplers import Sampler, make_sampler
from ..samplers import registry as sampler_registry
from .config import Experiment, MethodSpec, lightgbm_metric_params
from .data import ExperimentData, make_datasets

VALID_NAME = "valid"
#: Stock kinds that draw no random sample (an engine kind's sampler class says it: ``deterministic``).
DETERMINISTIC_STOCK_KINDS = ("stock_full",)

#: Called after each iteration with (iteration starting at 1, metric value, training seconds so far).
IterationHook = Callable[[int, float, float], None]


@dataclass
class RunRecord:
    """Per-iteration results of one method with one seed (lists indexed by iteration - 1)."""

    experiment: str
    method: str
    kind: str
    seed: int
    metric: str
    higher_is_better: bool
    values: list[float] = field(default_factory=list)
    sampling_rate: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0
    #: boosting rounds asked for (0 in records written before it was stored)
    rounds: int = 0
    #: why the run has fewer iterations than ``rounds``, or which iterations added no tree
    note: str = ""

    @property
    def num_iterations(self) -> int:
        return len(self.values)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per iteration, the layout of ``records.csv``."""
        cumulative = np.cumsum(np.asarray(self.seconds, dtype=np.float64))
        return [
            {"experiment": self.experiment, "method": self.method, "kind": self.kind, "seed": self.seed,
             "iteration": i + 1, "metric": self.metric, "value": self.values[i],
             "sampling_rate": self.sampling_rate[i], "seconds": self.seconds[i],
             "cumulative_seconds": float(cumulative[i])}
            for i in range(self.num_iterations)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "method": self.method, "kind": self.kind, "seed": self.seed,
            "metric": self.metric, "higher_is_better": self.higher_is_better, "values": self.values,
            "sampling_rate": self.sampling_rate, "seconds": self.seconds, "wall_seconds": self.wall_seconds,
            "rounds": self.rounds, "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord:
        return cls(**d)


def is_deterministic(method: MethodSpec, experiment: Experiment) -> bool:
    """Whether ``method`` gives the same result for every seed.

    True for the kinds that draw no rows, unless the parameters make the tree learner draw
    random numbers (feature subsampling, extra trees, quantised gradients' stochastic
    rounding: the role table's random tree parameters).  A peer method (XGBoost, CatBoost)
    is deterministic when its library draws nothing (:func:`.peers.is_deterministic`).
    """
    if method.is_peer:
        from .peer_runs import deterministic

        return deterministic(method, experiment)
    if method.is_stock:
        draws_nothing = method.kind in DETERMINISTIC_STOCK_KINDS
    else:
        draws_nothing = bool(sampler_registry.SPECS[method.kind].cls.deterministic)
    params = canonicalize({**experiment.params, **method.lgb_params})
    return draws_nothing and not any(draws(params, key) for key, draws in RANDOM_TREE_PARAMS.items())


def method_seeds(method: MethodSpec, experiment: Experiment) -> tuple[int, ...]:
    """The seeds a method runs with: its own, else all of the experiment's when it is random.

    A deterministic method (see :func:`is_deterministic`) runs once, with the first seed.
    """
    if method.seeds is not None:
        return method.seeds
    if is_deterministic(method, experiment):
        return experiment.seeds[:1]
    return experiment.seeds


def run_params(method: MethodSpec, experiment: Experiment, seed: int) -> dict[str, Any]:
    """The LightGBM parameters of one run: shared, experiment, method, metric and seed."""
    params: dict[str, Any] = {"verbosity": -1}
    params.update(experiment.params)
    params.update(method.lgb_params)
    params.update(lightgbm_metric_params(experiment.metric))
    params["seed"] = seed
    # LightGBM derives data_random_seed (the rows sampled to choose bin boundaries on data
    # over bin_construct_sample_cnt rows) from seed; pinning it gives every method and seed
    # the same bins, so runs differ by their sampling only.
    params.setdefault("data_random_seed", 1)
    if method.kind == "stock_bagging":
        params.update(bagging_fraction=method.options["bagging_fraction"], bagging_freq=1)
    elif method.kind == "stock_goss":
        params.update(data_sample_strategy="goss", top_rate=method.options["top_rate"],
                      other_rate=method.options["other_rate"])
    elif method.kind == "stock_quantized":
        params.update(use_quantized_grad=True, **method.options)
    return params


def rows_per_tree_iteration(booster: lgb.Booster) -> list[int]:
    """Rows each kept iteration's tree was fitted on, read from the model's root counts.

    LightGBM stores in each tree how many (bagged) rows reached the root: exactly the rows
    sampled by bagging or GOSS in that iteration (a single-leaf tree stores them in its
    leaf).  Taken from the first tree of each iteration (all K trees of a multiclass
    iteration share the sample).  Read through the public ``dump_model()``.
    """
    model = booster.dump_model()
    k = int(model["num_tree_per_iteration"])
    counts = []
    for tree in model["tree_info"][::k]:
        root = tree["tree_structure"]
        counts.append(int(root["internal_count"] if "internal_count" in root else root["leaf_count"]))
    return counts


class _Recorder:
    """After-iteration callback: picks the metric from LightGBM's evaluation list.

    With ``count_trees`` (stock runs) it also notes the model's tree count after each
    iteration: ``lightgbm.train`` goes on calling ``update()`` after an iteration whose tree
    could not split, and such an iteration adds no tree.  With ``stop_when_stuck`` (a
    deterministic stock method, whose next iteration would be the same) it ends training at
    the first such iteration instead of repeating it until ``rounds``.
    """

    def __init__(self, metric: str, hook: IterationHook | None, seconds: Callable[[], float],
                 count_trees: bool = False, stop_when_stuck: bool = False, budget: float | None = None) -> None:
        # An instance attribute: lightgbm.train and the engine give callbacks without one an order.
        self.order = 5  # after the stock clock (0), before LightGBM's own callbacks (10+)
        self.metric = metric
        self.hook = hook
        self.seconds = seconds
        self.values: list[float] = []
        self.count_trees = count_trees
        self.stop_when_stuck = stop_when_stuck
        self.trees: list[int] = []
        self.budget = budget
        self.over_budget = False

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        for data_name, eval_name, value, *_ in env.evaluation_result_list or []:
            if data_name == VALID_NAME and eval_name == self.metric:
                self.values.append(float(value))
                break
        else:
            raise RuntimeError(f"metric {self.metric!r} missing from the evaluation results {env.evaluation_result_list}")
        if self.hook is not None:
            self.hook(env.iteration + 1, self.values[-1], self.seconds())
        if self.count_trees:
            self.trees.append(cast(lgb.Booster, env.model).num_trees())  # lightgbm.train's, never lgb.cv's
            stuck = len(self.trees) > 1 and self.trees[-1] == self.trees[-2]
            if stuck and self.stop_when_stuck:
                raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list or [])
        if self.budget is not None and self.seconds() >= self.budget:
            self.over_budget = True  # this iteration is kept: the budget ran out during it
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list or [])

    def kept(self) -> list[bool]:
        """Per iteration: whether it added trees to the model."""
        before = [0, *self.trees[:-1]]
        return [after > b for after, b in zip(self.trees, before, strict=True)]


def _stopped_note(done: int, rounds: int, unsplittable: bool, engine: bool, budget: float | None = None) -> str:
    """Why a run has ``done`` of ``rounds`` iterations."""
    if budget is not None:
        return f"stopped after {done} of {rounds} iterations: its time budget ({budget:.3g} s of training) was used up"
    if not unsplittable:
        return f"stopped after {done} of {rounds} iterations"
    why = "no split met LightGBM's requirements (min_data_in_leaf, min_gain_to_split, ...)"
    if engine:
        why += " and the sampler draws no differently next time; the engine ends training there"
    if done == 0:
        return f"no iterations: the first iteration's tree could not split: {why}"
    return f"stopped after {done} of {rounds} iterations: {why}"


def _keep_tree_iterations(record: RunRecord, recorder: _Recorder, seconds: list[float], kept: list[bool],
                          rates: list[float], stopped_when_stuck: bool, engine: bool) -> None:
    """Fill ``record`` with the iterations of a run that added trees.

    An iteration whose trees could not split changes nothing but costs time (stock
    ``lightgbm.train`` goes on calling ``update()``, LightGBM's bagging and the engine's
    random samplers go on with the next sample): its seconds are charged to the next
    iteration that adds a tree, so cumulative seconds stay the time spent to reach each model
    (those after the last tree are charged to none).  ``rates`` holds the sampling rate of
    each kept iteration.
    """
    if len(rates) != sum(kept):
        raise RuntimeError(f"the model holds {len(rates)} iterations' trees, but {sum(kept)} iterations added trees")
    carried = 0.0
    for i, added in enumerate(kept):
        carried += seconds[i]
        if added:
            record.values.append(recorder.values[i])
            record.seconds.append(carried)
            carried = 0.0
    record.sampling_rate = list(rates)
    skipped = len(kept) - sum(kept)
    notes = []
    if (stopped_when_stuck and skipped) or (engine and len(kept) < record.rounds and not recorder.over_budget):
        notes.append(_stopped_note(record.num_iterations, record.rounds, True, engine=engine))
    elif skipped:
        trailing = len(kept) - 1 - max((i for i, added in enumerate(kept) if added), default=-1)
        notes.append(f"{skipped} of {len(kept)} iterations added no tree (no split met LightGBM's requirements on "
                     "that iteration's rows); their seconds are counted in the next tree's"
                     + (f", those of the last {trailing} in none" if trailing else ""))
    if recorder.over_budget:
        notes.append(_stopped_note(record.num_iterations, record.rounds, False, engine=False, budget=recorder.budget))
    record.note = "; ".join(notes)


class _StockClock:
    """A before-iteration and an after-iteration callback that time ``Booster.update()``."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._start = 0.0

        def start(env: lgb.callback.CallbackEnv) -> None:
            self._start = time.perf_counter()

        def stop(env: lgb.callback.CallbackEnv) -> None:
            elapsed = time.perf_counter() - self._start
            # lightgbm.train evaluated the validation set between update() and now; time the
            # same evaluation again on the same model and take it off.
            t0 = time.perf_counter()
            cast(lgb.Booster, env.model).eval_valid()
            evaluation = time.perf_counter() - t0
            self.seconds.append(max(elapsed - evaluation, 0.0))

        start.before_iteration = True  # type: ignore[attr-defined]
        start.order = 0  # type: ignore[attr-defined]
        stop.order = 0  # type: ignore[attr-defined]
        self.callbacks = [start, stop]

    def total(self) -> float:
        return float(sum(self.seconds))


def run_method(
    method: MethodSpec,
    experiment: Experiment,
    data: ExperimentData,
    seed: int,
    on_iteration: IterationHook | None = None,
    on_model: Callable[[lgb.Booster], None] | None = None,
    rounds: int | None = None,
    budget_seconds: float | None = None,
    sampler: Sampler | None = None,
) -> RunRecord:
    """Train ``method`` on ``data`` with ``seed`` for its rounds (or until its time budget is used).

    Parameters
    ----------
    method : MethodSpec
    experiment : Experiment
        Shared parameters, metric and rounds (:meth:`Experiment.rounds_of`).
    data : ExperimentData
    seed : int
        LightGBM's ``seed`` (bagging/GOSS draws) and the engine's sampling seed.
    on_iteration : callable, optional
        Progress hook, ``on_iteration(iteration, value, training_seconds_so_far)``.
    on_model : callable, optional
        Called with the trained model before it is dropped: a ``lightgbm.Booster`` (stock or
        engine), an ``xgboost.Booster`` or a ``catboost.CatBoost`` (peers).
    rounds : int, optional
        Overrides the method's rounds (the pre-flight run uses a few).
    budget_seconds : float, optional
        Stop after the first iteration at which the training seconds reach this (the
        iteration is kept); the record's note says so.
    sampler : Sampler, optional
        Trains this sampler instead of the method's (an engine method only): the pre-flight
        runs an ``auto`` method as the sampler ``auto`` chooses on the whole data.

    Returns
    -------
    RunRecord
    """
    rounds = experiment.rounds_of(method) if rounds is None else rounds
    record = RunRecord(experiment.name, method.label, method.kind, seed, experiment.metric,
                       experiment.higher_is_better, rounds=rounds)
    wall = time.perf_counter()
    if method.is_peer:
        from .peer_runs import run_peer  # XGBoost and CatBoost load only when a peer trains

        (record.values, record.sampling_rate, record.seconds, record.note), model = run_peer(
            method, experiment, data, seed, rounds, on_iteration, budget_seconds)
        record.wall_seconds = time.perf_counter() - wall
        if on_model is not None:
            on_model(model)
        return record
    params = run_params(method, experiment, seed)
    train_set, valid_set = make_datasets(data)
    if method.is_stock:
        clock = _StockClock()
        recorder = _Recorder(experiment.metric, on_iteration, clock.total, count_trees=True,
                             stop_when_stuck=is_deterministic(method, experiment), budget=budget_seconds)
        booster = lgb.train(params, train_set, rounds, valid_sets=[valid_set],
                            valid_names=[VALID_NAME], callbacks=[*clock.callbacks, recorder])
        _keep_tree_iterations(record, recorder, clock.seconds, recorder.kept(),
                              [r / data.train.num_rows for r in rows_per_tree_iteration(booster)],
                              recorder.stop_when_stuck, engine=False)
    else:
        sampling: dict[str, list[Any]] = {}
        recorder = _Recorder(experiment.metric, on_iteration, lambda: float(sum(sampling["seconds"])),
                             budget=budget_seconds)
        recorder.order = 30  # after record_sampling (25), so the hook sees this iteration's seconds
        if sampler is None:
            sampler = make_sampler(method.kind, **method.options)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            booster = engine_train(params, train_set, rounds, sampler=sampler, valid_sets=[valid_set],
                                   valid_names=[VALID_NAME], callbacks=[record_sampling(sampling), recorder])
        for w in caught:  # the engine's split warnings become the record's note; pass the others on
            if not issubclass(w.category, IterationNotSplitWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        kept = [trees > 0 for trees in sampling["num_trees"]]
        _keep_tree_iterations(record, recorder, [float(s) for s in sampling["seconds"]], kept,
                              [float(r) for r, k in zip(sampling["sampling_rate"], kept, strict=False) if k],
                              stopped_when_stuck=False, engine=True)
    record.wall_seconds = time.perf_counter() - wall
    if on_model is not None:
        on_model(booster)
    return record
