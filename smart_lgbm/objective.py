"""The drop-in for existing LightGBM jobs: one custom objective that samples, for every interface.

``SmartObjective`` goes where a custom objective goes: ``params["objective"]`` of
``lightgbm.train`` and ``lightgbm.cv``, or ``objective=`` of ``LGBMClassifier``,
``LGBMRegressor`` and ``LGBMRanker``.  It tells the two calling conventions apart by its
arguments: ``lightgbm.train``/``cv`` call ``objective(preds, train_data)``, the
scikit-learn estimators ``objective(y_true, y_pred, weight, group)``.  Each iteration it
computes the loss's gradients for all rows, draws the sampler's sample (with the engine's
per-iteration random generator, so the same seed and the same scores give the same sample
as :func:`smart_lgbm.train`) and returns the importance-reweighted, regularised
``g~``/``h~`` with zeros for the rows not drawn.  Its ``callback`` (a ``before_iteration``
callback for ``callbacks=[...]``) numbers the iterations, starts each run afresh and, for
``SecondOrder`` with ``eta > 0``, hands over the leaves of the newest tree.

State per training set: the objective keeps one small record per training set it is
called with (keyed by the label array LightGBM hands over, which is the same object every
iteration), so the folds of ``lightgbm.cv`` each keep their own gradient history.

This gives SMART's estimator but **not its speed-up**: LightGBM still builds histograms
over every row (zero-gradient rows cost full price and still count towards
``min_data_in_leaf``).  For the speed-up use :func:`smart_lgbm.train` or the estimators
in :mod:`smart_lgbm.sklearn`, which hand the tree learner only the sampled rows.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.callback import CallbackEnv

from . import _lightgbm
from . import objective_metrics as om
from ._numba import runtime
from ._numba.notice import compile_notice
from .distributed import network_rank
from .losses.base import Loss, Target
from ._engine import Gradients, canonicalize, draw_iteration, resolve_loss
from .samplers import Auto, GradientHistory, RunContext, Sample, Sampler, make_sampler


def _non_negative_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


@dataclass
class _Run:
    """What the objective keeps about one training set between iterations."""

    label_ref: weakref.ref
    weight: Any
    group: Any
    target: Target
    history: GradientHistory
    context: RunContext  # the sampler's per-run state (SmartObjective passes no validation scores)
    calls: int = 0
    pending_iteration: int | None = None  # set by the callback before each iteration
    has_callback: bool = False
    network_stream: int | None = None  # this machine's rank on a LightGBM network (set by the callback)


def _forget(runs: dict, key: int, ref: weakref.ref) -> None:
    """Drop the record of a training set whose label array has been freed."""
    run = runs.get(key)
    if run is not None and run.label_ref is ref:
        del runs[key]


class _IterationCallback:
    """``obj.callback``: a picklable ``before_iteration`` callback bound to its objective."""

    def __init__(self, objective: SmartObjective) -> None:
        self.objective = objective
        # instance attributes: lightgbm.train sets a default ``order`` in the instance dict
        self.before_iteration = True
        self.order = 0

    def __call__(self, env: CallbackEnv) -> None:
        self.objective._before_iteration(env)


class SmartObjective:
    """Custom objective that samples rows, for ``lightgbm.train``, ``lightgbm.cv`` and the
    scikit-learn estimators, as one picklable object.

    Parameters
    ----------
    objective : str or Loss, default="binary"
        A LightGBM objective name (``binary``, ``regression``, ``multiclass``,
        ``lambdarank``) or a :class:`smart_lgbm.losses.Loss`.
    sampler : Sampler or str, optional
        Default ``FirstOrder(rate=0.1)``.
    seed : int, default=0
        Seeds the per-iteration random generator exactly as the engine's ``seed``.
    stream : int or None, default=None
        Sampling stream: None draws the engine's samples, except on a LightGBM network
        (``lightgbm.dask``, or ``machines`` in the parameters), where each machine draws
        with its own stream, its rank (found by ``callback`` from the network parameters,
        as LightGBM finds it); an integer gives that independent stream of the same seed
        everywhere.  May be set later (``obj.stream = rank``).
    **objective_params
        LightGBM parameters of the objective (``sigmoid``, ``num_class``, ``label_gain``...).

    Attributes
    ----------
    callback : callable
        ``before_iteration`` callback for ``callbacks=[obj.callback]``: numbers the
        iterations (``env.iteration``), starts each run afresh and, for
        ``SecondOrder(anchor_lag=..., eta > 0)``, gives the objective the leaves of the
        newest tree (which only it can get: an objective sees no model).  Without it the
        objective counts its calls per training set; ``SecondOrder`` with ``eta > 0`` then
        refuses to run.
    record : dict of lists
        ``num_sampled`` and ``sampling_rate`` per objective call (per iteration; under
        ``lightgbm.cv`` per fold and iteration).  Cleared when a run starts (with the callback).
    last_sample : Sample or None
        The most recent sample (indices and fitting gradients).

    Notes
    -----
    * LightGBM does not boost from the average with a custom objective; as with any custom
      objective, give the data the ``init_score`` the stock objective would start from
      (:meth:`init_score`).
    * LightGBM computes its metrics on raw scores with any custom objective: set
      ``"metric": "None"`` and pass ``feval=obj.feval`` (``eval_metric=obj.feval`` in the
      estimators), which reports the loss's metric on transformed scores under LightGBM's
      name; with validation sets, ``callback`` refuses a metric LightGBM would get wrong.
    * With a custom objective, a model predicts raw scores (LightGBM's estimators too);
      ``obj.finalize(booster, init_score)`` gives the stock objective's model, whose
      ``predict`` returns probabilities.  :class:`smart_lgbm.SmartClassifier` has none of this.
    * SecondOrder with ``eta > 0`` needs each row's leaf in the newest tree, which the
      callback gets by predicting on the raw training data: build the Dataset with
      ``free_raw_data=False`` (the scikit-learn estimators free it, so there use the
      ``smart_lgbm`` estimators or ``eta=0``).
    * Pickling keeps the configuration and ``record``; per-run state (gradient history,
      cached labels, ``last_sample``) starts afresh after unpickling.  ``copy.deepcopy``
      returns the object itself, because ``lightgbm.train`` deep-copies its parameters and
      the objective must stay the one ``callback`` and ``record`` belong to.

    Examples
    --------
    >>> obj = SmartObjective("binary", FirstOrder(rate=0.2), seed=1)          # doctest: +SKIP
    >>> booster = lgb.train({"objective": obj}, dtrain, 100, callbacks=[obj.callback])  # doctest: +SKIP
    >>> clf = lgb.LGBMClassifier(objective=obj).fit(X, y, callbacks=[obj.callback])    # doctest: +SKIP
    """

    def __init__(self, objective: str | Loss = "binary", sampler: Sampler | str | None = None, *, seed: int = 0,
                 stream: int | None = None, **objective_params: Any) -> None:
        self.loss = resolve_loss(canonicalize({"objective": objective, **objective_params}))
        self.sampler = make_sampler(sampler if sampler is not None else "first_order")
        if isinstance(self.sampler, Auto):
            raise ValueError('SmartObjective cannot take sampler="auto": smart_lgbm.train chooses it before the first '
                             'tree (stock LightGBM, or a sampler with the leaf refit); give SmartObjective a sampler '
                             'such as FirstOrder(rate="auto")')
        if self.sampler.refit_leaves:
            raise ValueError(f"SmartObjective cannot take {self.sampler!r}: refit_leaves=True rewrites the leaf values "
                             "after each tree, and stock LightGBM keeps its own; train with smart_lgbm.train (or the "
                             "smart_lgbm estimators), or set refit_leaves=False")
        self.seed = _non_negative_int(seed, "seed")
        self.stream = stream
        self.record: dict[str, list] = {"num_sampled": [], "sampling_rate": []}
        self.last_sample: Sample | None = None
        self.callback = _IterationCallback(self)
        self._runs: dict[int, _Run] = {}
        # metric parameters given with the objective (label_gain...), used by feval/metrics
        self._metric_options = {k: v for k, v in canonicalize(objective_params).items() if k in om._METRIC_PARAMS}
        self._feval: om.SmartMetric | None = None

    @property
    def stream(self) -> int | None:
        return self._stream

    @stream.setter
    def stream(self, value: int | None) -> None:
        self._stream = None if value is None else _non_negative_int(value, "stream")

    # ------------------------------------------------------------------ protocol

    def __call__(self, preds_or_y_true: Any, dataset_or_y_pred: Any, weight: Any = None,
                 group: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Sampled, reweighted gradients and hessians (zeros for the rows not drawn).

        Called as ``objective(preds, train_data)`` by ``lightgbm.train``/``cv`` and as
        ``objective(y_true, y_pred, weight, group)`` by LightGBM's scikit-learn estimators.
        """
        if isinstance(dataset_or_y_pred, lgb.Dataset):
            data = dataset_or_y_pred
            return self._sampled_gradients(preds_or_y_true, data.get_label(), data.get_weight(), data.get_group())
        return self._sampled_gradients(dataset_or_y_pred, preds_or_y_true, weight, group)

    @property
    def sklearn(self) -> SmartObjective:
        """Deprecated: the objective itself now works in LightGBM's scikit-learn API."""
        warnings.warn("SmartObjective.sklearn is deprecated: pass the objective itself, "
                      "LGBMClassifier(objective=obj)", DeprecationWarning, stacklevel=2)
        return self

    def __deepcopy__(self, memo: dict) -> SmartObjective:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_runs"] = {}  # per-run state: weak references and arrays of a finished run
        state["last_sample"] = None
        return state

    def __repr__(self) -> str:
        return f"SmartObjective({self.loss!r}, {self.sampler!r}, seed={self.seed}, stream={self.stream})"

    # ------------------------------------------------------------------ metrics and the final model

    @property
    def feval(self) -> om.SmartMetric:
        """The loss's default metric (``binary_logloss``, ``multi_logloss``, ``l2``, ``ndcg@1..5``)
        on transformed scores, for ``feval=`` (``lightgbm.train``/``cv``) or ``eval_metric=``
        (LightGBM's estimators); other metrics: :meth:`metrics`."""
        if self._feval is None:
            if not self.loss.default_metric:
                raise ValueError(f"{self.loss.describe()} has no default metric: name one with obj.metrics(...)")
            self._feval = om.SmartMetric(self.loss, self._metric_options)
        return self._feval

    def metrics(self, metric: str | list[str] | None = None, **metric_params: Any) -> om.SmartMetric:
        """LightGBM metrics on the loss's transformed scores, as ``feval``/``eval_metric``.

        Parameters
        ----------
        metric : str or list of str, optional
            LightGBM metric names or aliases (default: the loss's default metric).
        **metric_params
            ``eval_at``, ``label_gain``, ``multi_error_top_k``, ``auc_mu_weights``, ``alpha``,
            ``fair_c``, ``tweedie_variance_power``, as LightGBM reads them.

        Returns
        -------
        SmartMetric
            Callable returning ``[(name, value, higher_is_better), ...]`` under LightGBM's names.
        """
        return om.SmartMetric(self.loss, om.metric_params(metric, {**self._metric_options, **metric_params}))

    def finalize(self, booster: lgb.Booster, init_score: Any = None) -> lgb.Booster:
        """The trained model as the stock objective's: ``predict`` gives probabilities.

        A custom-objective model predicts raw scores and leaves out the initial score the
        data carried.  The returned Booster (a new one; ``booster`` is unchanged) has the
        stock objective's ``objective=`` line and ``init_score`` folded into its first
        iteration's trees, as stock LightGBM folds its ``boost_from_average`` score, so it
        predicts what the stock objective's model would.

        Parameters
        ----------
        booster : lightgbm.Booster
            From ``lightgbm.train``, or an estimator's ``booster_``.
        init_score : float, array or None
            The constant initial score of the training data (what :meth:`init_score` gave:
            its per-row array, one row of it, or a number); None adds nothing.
        """
        return om.finalize(booster, self.loss, init_score)

    # ------------------------------------------------------------------ initial score

    def init_score(self, train_data: lgb.Dataset) -> np.ndarray:
        """Initial scores the stock objective would start from (``boost_from_average``).

        Works on a constructed Dataset and on one not constructed yet (whose label, weight
        and group are read as given, without constructing it).
        """
        if not isinstance(train_data, lgb.Dataset):
            raise TypeError(f"train_data must be a lightgbm.Dataset, got {type(train_data).__name__}")
        if _lightgbm.handle_of(train_data) is not None:
            label, weight, group = train_data.get_label(), train_data.get_weight(), train_data.get_group()
        else:
            label, weight, group = train_data.label, train_data.weight, train_data.group
            if label is None:
                raise ValueError("init_score needs the Dataset's labels, which this Dataset only has once "
                                 "constructed (it was built from a file or by Dataset.subset): call "
                                 "train_data.construct() first")
        target = self._target(label, weight, group)
        scores = np.tile(self.loss.init_score(target), (target.num_rows, 1))
        return scores[:, 0] if self.loss.num_model_per_iteration == 1 else scores

    # ------------------------------------------------------------------ per training set

    def _target(self, label: Any, weight: Any, group: Any) -> Target:
        target = Target(
            label=np.asarray(label, dtype=np.float32).astype(np.float64).reshape(-1),
            weight=None if weight is None else np.asarray(weight, dtype=np.float32).astype(np.float64).reshape(-1),
            group=None if group is None else np.asarray(group, dtype=np.int64).reshape(-1),
        )
        n = target.num_rows
        if target.weight is not None and target.weight.shape[0] != n:
            raise ValueError(f"weight has {target.weight.shape[0]} entries but there are {n} labels")
        self.loss.validate(target)
        return target

    def _run_for(self, label: Any, weight: Any, group: Any) -> _Run:
        """The record of the training set whose labels are ``label`` (made on first sight).

        LightGBM hands the same label array every iteration, so the array itself identifies
        the training set; it is held by a weak reference and compared by identity (an
        ``id`` alone could be reused by a new array once the old one is freed).
        """
        if not isinstance(label, np.ndarray):
            raise TypeError(f"SmartObjective expects the labels as a numpy array (as LightGBM passes them), "
                            f"got {type(label).__name__}")
        key = id(label)
        run = self._runs.get(key)
        if run is None or run.label_ref() is not label or run.weight is not weight or run.group is not group:
            run = _Run(
                label_ref=weakref.ref(label, functools.partial(_forget, self._runs, key)),
                weight=weight,
                group=group,
                target=self._target(label, weight, group),
                history=GradientHistory(maxlen=self.sampler.history_length),
                context=RunContext.start(self.sampler),
            )
            self._runs[key] = run
        return run

    def _before_iteration(self, env: CallbackEnv) -> None:
        model = env.model
        boosters = model.boosters if isinstance(model, lgb.CVBooster) else [model]
        fresh = env.iteration == env.begin_iteration
        if fresh:  # a new run: nothing carries over from an earlier one
            error = om.raw_score_metric_error(env.params, self.loss)
            if error is not None:
                if any(_lightgbm.has_validation_sets(b) for b in boosters):
                    raise ValueError(error)
                for booster in boosters:  # the training set may still be evaluated (valid_sets=[dtrain])
                    _lightgbm.refuse_training_evaluation(booster, error)
            self._runs.clear()
            for values in self.record.values():
                values.clear()
        if fresh and network_rank(canonicalize(env.params)) is not None and getattr(self.loss, "is_unbalance", False):
            raise ValueError("is_unbalance=True: on a LightGBM network SmartObjective sees only this machine's rows, "
                             "and the class weights come from the counts of all machines' rows; train with "
                             "smart_lgbm.dask, or give scale_pos_weight (the ratio of the counts) instead")
        for booster in boosters:
            train_set = getattr(booster, "train_set", None)
            if not isinstance(train_set, lgb.Dataset):
                raise TypeError("SmartObjective.callback works with lightgbm.train, lightgbm.cv and LightGBM's "
                                "scikit-learn estimators (smart_lgbm.train samples by itself: pass sampler=...)")
            run = self._run_for(train_set.get_label(), train_set.get_weight(), train_set.get_group())
            run.has_callback = True
            run.pending_iteration = env.iteration
            # On a LightGBM network (lightgbm.dask), every machine holds its own rows and
            # draws with its own stream: its rank, unless a stream was set.
            run.network_stream = network_rank(canonicalize(env.params))
            if self.sampler.needs_leaves:
                data = self._raw_training_data(train_set)
                if not fresh:
                    run.history.leaves = self._newest_leaves(booster, data, env.iteration)

    def _raw_training_data(self, train_set: lgb.Dataset) -> Any:
        try:
            data = train_set.get_data()
        except lgb.basic.LightGBMError:
            data = None
        if data is None or isinstance(data, str) or hasattr(data, "__fspath__"):
            raise ValueError(
                f"{self.sampler!r} needs each row's leaf in the newest tree, which SmartObjective gets by "
                "predicting on the raw training data, and this Dataset has freed it (or holds a file name): "
                "build it with lgb.Dataset(..., free_raw_data=False); LightGBM's scikit-learn estimators always "
                "free it, so there use smart_lgbm.SmartClassifier/SmartRegressor/SmartRanker or eta=0"
            )
        return data

    def _newest_leaves(self, booster: lgb.Booster, data: Any, iteration: int) -> np.ndarray:
        leaves = booster.predict(data, pred_leaf=True, start_iteration=iteration - 1, num_iteration=1)
        leaves = np.asarray(leaves, dtype=np.int64)
        return leaves[:, 0] if self.loss.num_model_per_iteration == 1 else leaves

    # ------------------------------------------------------------------ one iteration

    def _sampled_gradients(self, preds: Any, label: Any, weight: Any, group: Any) -> tuple[np.ndarray, np.ndarray]:
        run = self._run_for(label, weight, group)
        if self.sampler.needs_leaves and not run.has_callback:
            raise ValueError(
                f"{self.sampler!r} needs the leaves of the newest tree, which only the objective's callback can "
                "give it: pass callbacks=[obj.callback] (or use eta=0, or anchor_lag=None)"
            )
        if run.pending_iteration is not None:
            iteration, run.pending_iteration = run.pending_iteration, None
        else:
            iteration = run.calls
        run.calls += 1
        target = run.target
        raw = np.asarray(preds, dtype=np.float64)
        # the engine's float32 gradients (LightGBM's own), so that both draw the same sample
        grad = np.empty(raw.shape, dtype=np.float32)
        hess = np.empty(raw.shape, dtype=np.float32)
        runtime.load_cached()  # numba's runtime from its cached object file, before the first kernel runs
        with compile_notice():  # the first compilation of the package's kernels says so, once
            self.loss.compute_gradients(raw, target, grad, hess)
            stream = self.stream if self.stream is not None else run.network_stream
            # the engine's draw and checks (smart_lgbm._engine.draw): the zeros below are filled
            # from a sample whose indices are sorted, unique and in range
            sample = draw_iteration(self.sampler, Gradients(grad, hess), loss=self.loss, target=target,
                                    history=run.history, raw=raw, iteration=iteration, seed=self.seed,
                                    stream=stream, run=run.context)
        self.last_sample = sample
        self.record["num_sampled"].append(sample.size)
        self.record["sampling_rate"].append(sample.size / target.num_rows)
        out_g = np.zeros_like(grad)
        out_h = np.zeros_like(hess)
        out_g[sample.indices] = sample.grad
        out_h[sample.indices] = sample.hess
        return out_g, out_h
