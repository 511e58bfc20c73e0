"""One engine run: tracked scores, the tree-fitting Booster and the boosting iteration.

An iteration (:meth:`BoostingRun.step`) is three steps:

1. **draw**: every training row's float32 ``g, h`` at the tracked raw scores, and the
   sampler's rows ``S`` with their fitting gradients (importance-reweighted; compiled O(n)
   rate solve and draw for the built-in samplers), checked, through
   :func:`~smart_lgbm._engine.draw.draw_iteration`, which :class:`smart_lgbm.SmartObjective`
   shares.  The gradients are the ones the previous iteration's gradient sweep left
   (:mod:`.sweep`: a value the run holds), else the sweep's or the loss's at the scores;
2. **fit**: LightGBM copies just those binned rows into a subset Dataset (bin mappers
   shared, so the trees are valid for every row) and fits the iteration's tree(s) on it
   through the run's one tree-fitting Booster
   (:class:`smart_lgbm._lightgbm.OneIterationBooster`): the histogram work touches ``S``
   only.  Iterations that draw every row fit on the training Dataset itself;
3. **update**: the trees join the model (their leaf values first refitted on every row
   for a sampler with ``refit_leaves``, :mod:`.refit`), and every training and validation
   row gets their outputs added to its tracked score, from the source the iteration's
   update plan (:mod:`.update_plan`, decided once per run and kind of iteration) names for
   the set, by that source's updater (:mod:`.updates`): the compiled walk over the set's
   bin codes or raw features (:mod:`.walk`), or the outputs LightGBM gave.  On the fused
   path the walk of the training codes is followed, in the same pass, by the next
   iteration's gradients and rate-solve statistics (:mod:`.sweep`).
"""

from __future__ import annotations

import ctypes
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _lightgbm
from ..distributed import Worker
from ..exceptions import SlowPathWarning
from ..losses.base import Loss, Target
from ..samplers import GradientHistory, RunContext, Sample, Sampler
from .config import RunConfig
from .data import EngineSet
from .draw import Gradients, draw_iteration
from .refit import LeafRefit
from .sweep import sweep_for
from .update_plan import SAMPLE, TRAIN, PlanCache, RunFacts, UpdatePlan
from .updates import NewTrees, ScoredSet, Update, updater_for
from .walk import CodeBook

__all__ = ["READ_SAMPLE_FRACTION", "BoostingRun", "ScoredSet", "class_major_float32"]

#: The sampled rows' outputs are read from LightGBM's tree learner (and skipped by the
#: coded walk) from this share of the rows on.  Below it skipping saves nothing: the walk
#: of large data is bound by reading the codes, and skipping a few scattered rows leaves
#: nearly every cache line to read (docs/engine.md, "The update plan").
READ_SAMPLE_FRACTION = 0.25

# LightGBM adds an initial score only when it is larger than this (kEpsilon).
_K_EPSILON = 1e-15


def class_major_float32(values: np.ndarray) -> np.ndarray:
    """(m,) or (m, K) float -> contiguous float32 in LightGBM's class-major layout."""
    if values.ndim == 1:
        return np.ascontiguousarray(values, dtype=np.float32)
    return np.ascontiguousarray(values.T, dtype=np.float32).reshape(-1)


def _code_book(handle: ctypes.c_void_p) -> CodeBook | None:
    """The bin codes' book of the training data's bins, or None (the walk then reads the raw
    features): when the data cannot be coded exactly, or LightGBM's bin mappers cannot be
    read (a temporary file that cannot be written)."""
    try:
        return CodeBook.from_mappers(_lightgbm.bin_mappers(handle))
    except OSError:
        return None


class BoostingRun:
    """State of one engine run: scores, history, the tree-fitting Booster and the trees.

    Parameters
    ----------
    config : RunConfig
    sampler : Sampler
    train : EngineSet
    valids : list of EngineSet
    worker : Worker, optional
        This machine's place in a distributed run (:mod:`smart_lgbm.distributed`), None on
        one machine.  Given, the run draws from its own sampling stream (its rank:
        :func:`~smart_lgbm._engine.draw.stream_rng`), starts from the score of all
        machines' rows (:meth:`Worker.initial_score`, as LightGBM's ``boost_from_average``
        on a network), and its update plans read the training outputs of iterations that
        draw every row from LightGBM's partition.
    initial_score : callable, optional
        ``initial_score(loss, target) -> (K,) array``, the score boosting starts from when the
        data has no init scores; default the worker's, else ``loss.init_score(target)``.
    init_trees : list of str, optional
        The tree bodies of the model this run continues (``init_model``): they come first in
        the model, and the run's data start from their predictions (their init scores).
    """

    def __init__(self, config: RunConfig, sampler: Sampler, train: EngineSet, valids: list[EngineSet], *,
                 worker: Worker | None = None,
                 initial_score: Callable[[Loss, Target], np.ndarray] | None = None,
                 init_trees: list[str] | None = None) -> None:
        if train.handle is None:  # .data gives the training set its binned Dataset
            raise ValueError("the training set has no constructed LightGBM Dataset")
        self._train_handle: ctypes.c_void_p = train.handle
        self.config = config
        self.worker = worker
        self.stream = None if worker is None else worker.rank
        self.sampler = sampler
        self.loss = config.loss
        self.k = self.loss.num_model_per_iteration
        self.num_rows = train.num_rows
        self.history = GradientHistory(maxlen=sampler.history_length)
        # (the machines' exchange for the sampler: only with several machines)
        allgather = worker.allgather if worker is not None and worker.num_machines > 1 else None
        self.context = RunContext.start(sampler, allgather)
        self.trees: list[str] = []
        #: an init model's trees (continued training): the model's first trees
        self.init_trees: list[str] = list(init_trees or [])
        self.fitter = _lightgbm.OneIterationBooster(config.booster_params(0), self.k, self._train_handle,
                                                    config.subset_params)
        self.book = _code_book(self._train_handle)
        self.train = ScoredSet(train, self.k, self.book)
        self.valids = [ScoredSet(v, self.k, self.book) for v in valids]
        self._scored = [self.train, *self.valids]  # by the update plan's keys: TRAIN, then valid_key(i)
        self.params_changed = False  # by a reset_parameter callback since the last iteration
        self._leaves: np.ndarray | None = None  # each training row's leaf, when the sampler or a refit needs it
        # float32 g, h of every training row (LightGBM's own precision), reused every iteration
        shape = (train.num_rows,) if self.k == 1 else (train.num_rows, self.k)
        self._grad = np.empty(shape, dtype=np.float32)
        self._hess = np.empty(shape, dtype=np.float32)
        # the gradient sweep (None: the unfused path), and the next iteration's gradients it left
        self.sweep = sweep_for(self.loss, sampler, train.target, self.train.walk, train.num_rows, self.k)
        self._next_gradients: Gradients | None = None
        self.refit = None if not sampler.refit_leaves else LeafRefit(
            self.train.walk, self.book, self.k, None if worker is None else worker.allgather)
        # where each set's outputs come from, decided once per run for each kind of iteration
        self.plans = PlanCache(RunFacts(
            train=self.train.features, valids=tuple(v.features for v in self.valids),
            needs_leaves=sampler.needs_leaves, train_init_score=train.native_init_score is not None,
            fused=self.sweep is not None, network=worker is not None, refit=sampler.refit_leaves,
        ))
        # boost_from_average: folded into the first trees (LightGBM skips it given init
        # scores); None once it is in the model
        if train.init_score is not None:
            bias = np.zeros(self.k)
        else:
            start = initial_score or (worker.initial_score if worker is not None else None)
            bias = self.loss.init_score(train.target) if start is None else start(self.loss, train.target)
        bias = np.where(np.abs(bias) > _K_EPSILON, bias, 0.0)
        self.bias: np.ndarray | None = bias if np.any(bias) else None
        self._warned_slow = False

    @property
    def raw(self) -> np.ndarray:
        """The training rows' raw scores, shape (n, K)."""
        return self.train.scores

    def view(self, raw: np.ndarray) -> np.ndarray:
        return raw[:, 0] if self.k == 1 else raw

    def reset_parameter(self, params: dict[str, Any]) -> None:
        """A ``reset_parameter`` callback's change, applied from the next iteration
        (:meth:`RunConfig.reset`: a new configuration)."""
        self.config, changed = self.config.reset(params, self.sampler)
        self.params_changed = self.params_changed or changed

    def step(self, iteration: int) -> dict[str, Any]:
        """One boosting iteration: draw, fit, update; returns its record (``num_trees`` = trees added).

        An iteration whose trees cannot split adds no tree and changes no score, as in
        LightGBM (where bagging then simply goes on with the next bag); only when the very
        first iteration cannot split does the model get LightGBM's K constant trees holding
        the initial score, so that it always loads and predicts.
        """
        t0 = time.perf_counter()
        sample = self._draw(iteration)
        t_sample = time.perf_counter()
        # (indices sorted and unique: the size tells whether every row was drawn)
        plan = self.plans(sample.size == self.num_rows, sample.size >= READ_SAMPLE_FRACTION * self.num_rows)
        fitted = self._fit(iteration, sample, plan)
        self.context.unsplit = fitted.finished  # (an adaptive rate grows on it)
        t_tree = time.perf_counter()
        num_trees = self._update(fitted, plan, sample)
        t_end = time.perf_counter()
        return {
            "iteration": iteration,
            "num_sampled": sample.size,
            "sampling_rate": sample.size / self.num_rows,
            "num_trees": num_trees,
            "sample_seconds": t_sample - t0,
            "tree_seconds": t_tree - t_sample,
            "update_seconds": t_end - t_tree,
            "seconds": t_end - t0,
        }

    def _draw(self, iteration: int) -> Sample:
        """The iteration's sample: from the gradients the last iteration's sweep left, or
        from those the sweep or the loss computes now at the tracked scores."""
        raw = self.raw + self.bias if self.bias is not None else self.raw
        gradients, self._next_gradients = self._next_gradients, None
        if gradients is None:
            gradients = self._gradients_at(raw)
        return draw_iteration(self.sampler, gradients, loss=self.loss, target=self.train.data.target,
                              history=self.history, raw=self.view(raw), iteration=iteration, seed=self.config.seed,
                              stream=self.stream, run=self.context)

    def _gradients_at(self, raw: np.ndarray) -> Gradients:
        """Every training row's ``g, h`` at ``raw`` (n, K): by the gradient sweep when the run
        has one (with the statistics its sampler's rate solve reads), else by the loss."""
        if self.sweep is not None:
            return self.sweep.gradients(raw, self._grad, self._hess)
        self.loss.compute_gradients(self.view(raw), self.train.data.target, self._grad, self._hess)
        return Gradients(self._grad, self._hess)

    def _fit(self, iteration: int, sample: Sample, plan: UpdatePlan) -> _lightgbm.IterationTrees:
        """LightGBM's trees of the iteration, fitted on the sampled rows (a subset Dataset, or
        the training set when every row was drawn), with the outputs the plan reads."""
        if plan.slow:
            self._warn_slow(plan.slow)
        subset = None if sample.size == self.num_rows else _lightgbm.SubsetHandle(
            self._train_handle, sample.indices, self.config.subset_params)
        params = None
        if self.params_changed or self.config.trees_draw_random_numbers:
            params = self.config.booster_params(iteration)  # (the fitter applies them in its order)
            self.params_changed = False
        try:
            reads: dict[int, tuple[ctypes.c_void_p, int, np.ndarray | None]] = {}
            for key in plan.read:  # (in the plan's order)
                if key == SAMPLE:
                    assert subset is not None  # the plan reads the sample back only from a subset
                    reads[key] = (subset.handle, sample.size, None)
                else:
                    reads[key] = self._scored[key].lightgbm_read
            return self.fitter.fit(
                self._train_handle if subset is None else subset.handle, class_major_float32(sample.grad),
                class_major_float32(sample.hess), reads, want_leaves=plan.want_leaves, bias=self.bias,
                params=params, keep=plan.stay_on_train,
            )
        finally:
            if subset is not None:
                subset.free()

    def _update(self, fitted: _lightgbm.IterationTrees, plan: UpdatePlan, sample: Sample) -> int:
        """Add the iteration's trees to the model and their outputs to every set's scores,
        each set by the updater of its source; returns the number of trees added."""
        if fitted.finished:
            return self._first_constant_trees(fitted)
        if len(fitted.outputs) != len(plan.read):
            raise RuntimeError(f"LightGBM gave outputs of sets {sorted(fitted.outputs)}; the update plan reads {plan.read}")
        trees, outputs = self._new_trees(fitted, plan)
        self.trees.extend(trees.texts)
        known = (sample.indices, np.ascontiguousarray(outputs[SAMPLE])) if plan.read_sample else None
        update = Update(trees, outputs, known, self._leaf_buffer() if plan.walk_leaves else None,
                        self.sweep if plan.fused else None, self._grad, self._hess)
        for key, scored in enumerate(self._scored):  # (the plan's keys: TRAIN, then valid_key(i))
            next_gradients = updater_for(plan, key)(update, key, scored)
            if next_gradients is not None:
                self._next_gradients = next_gradients
        if plan.want_leaves or plan.walk_leaves:
            leaves = self._leaves if plan.walk_leaves else (fitted.leaves or {}).get(TRAIN)
            assert leaves is not None  # walked, or read through LightGBM as the plan asked
            self.history.leaves = leaves[:, 0] if self.k == 1 else leaves
        self.bias = None
        return len(trees.texts)

    def _new_trees(self, fitted: _lightgbm.IterationTrees, plan: UpdatePlan) -> tuple[NewTrees, dict[int, Any]]:
        """The iteration's trees as fitted, or with leaf values refitted on every training row,
        and the outputs LightGBM gave (through the new values after a refit)."""
        if not plan.refit:
            return NewTrees(fitted.texts, self.book), fitted.outputs
        assert self.refit is not None  # plan.refit says the sampler refits
        refitted = self.refit.refit(fitted, plan, self._leaf_buffer(), self._grad, self._hess,
                                    self.config.leaf_rule, self.bias, f"refit_leaves:{len(self.trees)}")
        return NewTrees(refitted.texts, self.book, refitted.values, refitted.forest, refitted.coded), refitted.outputs

    def _first_constant_trees(self, fitted: _lightgbm.IterationTrees) -> int:
        """An iteration that could not split: LightGBM's constant first trees when the model
        has none yet (every row gets the initial score), else nothing (an init model's trees
        count: LightGBM then leaves the model as it is)."""
        if self.trees or self.init_trees:
            return 0
        self.trees.extend(fitted.texts)
        constant = np.array([values[0] for values in fitted.leaf_values])
        for scored in self._scored:
            scored.scores += constant
        self.bias = None
        return len(fitted.texts)

    def _warn_slow(self, keys: tuple[int, ...]) -> None:
        """Say once per run when scores go through LightGBM's binned predictor."""
        if keys and not self._warned_slow:
            self._warned_slow = True
            names = ", ".join(repr(self._scored[key].data.name) for key in keys)
            warnings.warn(
                f"no raw features in memory for {names} (built from a file, or constructed with free_raw_data=True): "
                "their scores are updated through LightGBM's binned predictor, which is slower than the engine's "
                "walk over raw features; keep the raw data (lightgbm.Dataset(X, y) unconstructed, or "
                "free_raw_data=False) for the fast path", SlowPathWarning, stacklevel=7)

    def _leaf_buffer(self) -> np.ndarray:
        if self._leaves is None:
            self._leaves = np.empty((self.num_rows, self.k), dtype=np.int32)
        return self._leaves

    def release_training(self) -> None:
        """Free what only the iterations need, once the last one is done and before the final
        model is loaded: the tree-fitting Booster, the engine's own binned Datasets, the bin
        codes and the gradient buffers.  On small data they are a few MB of the process's
        peak, which is reached at that load (docs/engine.md, "Memory").

        What the run still answers afterwards: :meth:`model_string` (the trees, LightGBM's
        header and parameters are kept as text), the tracked ``scores`` (a callback's
        ``env.model.eval_*`` after training), :meth:`reset_parameter`.  :meth:`step` then
        raises (the Booster is freed).  The fitter's one-row Dataset stays for
        :meth:`OneIterationBooster.parameters_section` (the engine frees it last).
        """
        self.fitter.free_booster()
        for scored in self._scored:
            scored.walk = None
            scored.data.release_binned()
        self.sweep = self.refit = None
        self._leaves = None
        self.history.leaves = None
        self._grad = self._hess = np.empty(0, dtype=np.float32)
        self._next_gradients = None

    def will_repeat(self) -> bool:
        """Whether the next iteration would repeat one that could not split exactly: no
        random draw in the sampler or the trees, no parameter change since."""
        return (getattr(self.sampler, "deterministic", False) and not self.params_changed
                and not self.config.trees_draw_random_numbers)

    @property
    def num_trees(self) -> int:
        """Trees in the model so far, an init model's included."""
        return len(self.init_trees) + len(self.trees)

    def model_string(self, num_trees: int | None = None, parameters: str | None = None,
                     metric: list[str] | None = None) -> str:
        """The stock model of the trees so far (an init model's, then the first ``num_trees``
        of the run's if given)."""
        return _lightgbm.assemble_model_string(
            self.fitter.header, self.init_trees + self.trees[:num_trees], self.loss.model_objective_line(),
            parameters or self.fitter.parameters, self.k, self.train.data.pandas_categorical, metric=metric,
        )
