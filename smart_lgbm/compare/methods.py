"""Train one method of a comparison with one seed and record it per iteration.

Stock methods run ``lightgbm.train`` with LightGBM's own objective; engine methods run
:func:`smart_lgbm.train` with a sampler.  Both are given the same parameters (learning
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
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np

from ..callback import record_sampling
from ..engine import train as engine_train
from ..params import canonicalize
from ..samplers import make_sampler
from .config import Experiment, MethodSpec, lightgbm_metric_params
from .data import ExperimentData, make_datasets

VALID_NAME = "valid"
#: Kinds that draw no random sample: one seed is enough unless the parameters add randomness.
DETERMINISTIC_KINDS = ("stock_full", "full", "weight_trimming")

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

    @property
    def num_iterations(self) -> int:
        return len(self.values)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per iteration, the layout of ``records.csv``."""
        cumulative = np.cumsum(self.seconds) if self.seconds else []
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
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord:
        return cls(**d)


def method_seeds(method: MethodSpec, experiment: Experiment) -> tuple[int, ...]:
    """The seeds a method runs with: its own, else all of the experiment's when it is random.

    A deterministic method (no row sampling, and no feature subsampling or extra trees in
    its parameters) gives the same result for every seed, so it runs once, with the first.
    """
    if method.seeds is not None:
        return method.seeds
    params = canonicalize({**experiment.params, **method.params})
    random_params = (
        float(params.get("feature_fraction", 1.0)) < 1.0
        or float(params.get("feature_fraction_bynode", 1.0)) < 1.0
        or str(params.get("extra_trees", False)).lower() in ("true", "1")
    )
    if method.kind in DETERMINISTIC_KINDS and not random_params:
        return experiment.seeds[:1]
    return experiment.seeds


def run_params(method: MethodSpec, experiment: Experiment, seed: int) -> dict[str, Any]:
    """The LightGBM parameters of one run: shared, experiment, method, metric and seed."""
    params: dict[str, Any] = {"verbosity": -1}
    params.update(experiment.params)
    params.update(method.params)
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
    return params


def rows_per_iteration(booster: lgb.Booster) -> list[int]:
    """Rows each iteration's tree was fitted on, read from the model's root counts.

    LightGBM stores in each tree how many (bagged) rows reached the root: exactly the rows
    sampled by bagging or GOSS in that iteration.  Taken from the first tree of each
    iteration (all K trees of a multiclass iteration share the sample).
    """
    text = booster.model_to_string()
    k = int(text.split("num_tree_per_iteration=", 1)[1].split("\n", 1)[0])
    counts = []
    for block in text.split("\nTree=")[1:]:
        fields = dict(line.split("=", 1) for line in block.split("\nend of tree", 1)[0].splitlines()[1:] if "=" in line)
        if "internal_count" in fields:
            counts.append(int(fields["internal_count"].split()[0]))
        else:  # a single-leaf tree: its leaf holds every sampled row
            counts.append(int(fields["leaf_count"].split()[0]))
    return counts[::k]


class _Recorder:
    """After-iteration callback: picks the metric from LightGBM's evaluation list."""

    def __init__(self, metric: str, hook: IterationHook | None, seconds: Callable[[], float]) -> None:
        # An instance attribute: lightgbm.train and the engine give callbacks without one an order.
        self.order = 5  # after the stock clock (0), before LightGBM's own callbacks (10+)
        self.metric = metric
        self.hook = hook
        self.seconds = seconds
        self.values: list[float] = []

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        for data_name, eval_name, value, _ in env.evaluation_result_list or []:
            if data_name == VALID_NAME and eval_name == self.metric:
                self.values.append(float(value))
                break
        else:
            raise RuntimeError(f"metric {self.metric!r} missing from the evaluation results {env.evaluation_result_list}")
        if self.hook is not None:
            self.hook(env.iteration + 1, self.values[-1], self.seconds())


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
            env.model.eval_valid()
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
) -> RunRecord:
    """Train ``method`` on ``data`` with ``seed`` for ``experiment.rounds`` rounds.

    Parameters
    ----------
    method : MethodSpec
    experiment : Experiment
        Shared parameters, metric and rounds.
    data : ExperimentData
    seed : int
        LightGBM's ``seed`` (bagging/GOSS draws) and the engine's sampling seed.
    on_iteration : callable, optional
        Progress hook, ``on_iteration(iteration, value, training_seconds_so_far)``.
    on_model : callable, optional
        Called with the trained ``lightgbm.Booster`` (stock or engine) before it is dropped.

    Returns
    -------
    RunRecord
    """
    params = run_params(method, experiment, seed)
    train_set, valid_set = make_datasets(data)
    record = RunRecord(experiment.name, method.label, method.kind, seed, experiment.metric,
                       experiment.higher_is_better)
    wall = time.perf_counter()
    if method.is_stock:
        clock = _StockClock()
        recorder = _Recorder(experiment.metric, on_iteration, clock.total)
        booster = lgb.train(params, train_set, experiment.rounds, valid_sets=[valid_set],
                            valid_names=[VALID_NAME], callbacks=[*clock.callbacks, recorder])
        # LightGBM keeps running update() after a tree cannot split but adds no trees: keep
        # the iterations that produced a tree.
        rows = rows_per_iteration(booster)
        n = len(rows)
        record.values, record.seconds = recorder.values[:n], clock.seconds[:n]
        record.sampling_rate = [r / data.train.num_rows for r in rows]
    else:
        sampling: dict[str, list[Any]] = {}
        recorder = _Recorder(experiment.metric, on_iteration, lambda: float(sum(sampling["seconds"])))
        recorder.order = 30  # after record_sampling (25), so the hook sees this iteration's seconds
        sampler = make_sampler(method.kind, **method.options)
        booster = engine_train(params, train_set, experiment.rounds, sampler=sampler, valid_sets=[valid_set],
                               valid_names=[VALID_NAME], callbacks=[record_sampling(sampling), recorder])
        record.values = recorder.values
        record.sampling_rate = [float(r) for r in sampling["sampling_rate"]]
        record.seconds = [float(s) for s in sampling["seconds"]]
    record.wall_seconds = time.perf_counter() - wall
    if on_model is not None:
        on_model(booster)
    return record
