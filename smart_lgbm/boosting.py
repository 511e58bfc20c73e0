"""One engine run: tracked scores, the tree-fitting Booster and the boosting iteration.

An iteration (:meth:`BoostingRun.step`):

1. the loss computes float32 ``g, h`` for every training row at the tracked raw scores
   (compiled kernels for the built-in losses: :meth:`smart_lgbm.losses.Loss.compute_gradients`),
   unless the previous iteration's fused pass left them ready (below);
2. the sampler picks the rows ``S`` and their fitting gradients (importance-reweighted;
   compiled O(n) rate solve and draw for the built-in samplers); steps 1 and 2 are
   :func:`smart_lgbm.iteration.draw_iteration`, shared with :class:`smart_lgbm.SmartObjective`,
   which also checks the sample and keeps the gradient history;
3. LightGBM copies just those binned rows into a subset Dataset (bin mappers shared, so the
   trees are valid for every row) and fits the iteration's tree(s) on it through the run's
   one tree-fitting Booster (:class:`smart_lgbm._lightgbm.OneIterationBooster`): the
   histogram work touches ``S`` only;
4. every training and validation row gets the new trees' outputs added to its tracked
   score by the compiled walk over the caller's raw features (:mod:`smart_lgbm.walk`).
   Exceptions read the outputs from LightGBM instead: any set whose raw features are not
   in memory (LightGBM's binned predictor: slower, said once per run), and then, or on a
   machine of a distributed run, the training set when every row was drawn (LightGBM's
   tree learner already added them from its partition of the rows).
   :mod:`smart_lgbm.update_plan` decides it for every set, once per run and kind of
   iteration.

Iterations that draw every row (``Full()``, ``Uniform(1.0)``, an adaptive rate at 1.0) fit
on the training Dataset itself, with no subset.  When no set needs LightGBM's outputs
(the plan's ``stay_on_train``), the tree-fitting Booster stays on that Dataset across such
iterations and keeps their trees, as stock training does: no reset, no park and no
rollback, so such an iteration costs LightGBM what a stock iteration with the same
histogram layout costs (the engine's default is column-wise: ``docs/engine.md``), plus the
walk (the fused pass) that also gives the next iteration its ``g, h``.  The first sampled
iteration after them parks the Booster on one row and rolls the kept trees back there.

The fused path (:mod:`smart_lgbm.fused`): for a built-in loss and sampler on coded
training rows, step 4's walk of the training rows is one compiled sweep that also computes
the next iteration's ``g, h`` at the new scores and the statistics its rate solve reads, so
step 1 of the next iteration has nothing left to do and step 2 draws at once.  The same
bits either way.
"""

from __future__ import annotations

import ctypes
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lightgbm, fused, refit
from .distributed import current_worker
from .engine_data import EngineSet
from .exceptions import SlowPathWarning
from .iteration import draw_iteration
from .losses.base import Loss, Target
from .params import ENGINE_ONLY, LOSS_AND_METRIC_PARAMS, EngineConfig, canonicalize, check_seed, refuse_unsupported
from .samplers import GradientHistory, Sampler
from .update_plan import SAMPLE, TRAIN, Features, PlanCache, RunFacts, UpdatePlan
from .walk import BinCodes, CodeBook, CodedForest, Forest, RawFeatures, add_coded_outputs, add_outputs

if TYPE_CHECKING:
    from .samplers.compiled import Statistics

#: The sampled rows' outputs are read from LightGBM's tree learner (and skipped by the
#: coded walk) from this share of the rows on.  Below it skipping saves nothing: the walk
#: of large data is bound by reading the codes, and skipping a few scattered rows leaves
#: nearly every cache line to read (development runs: same update time at 10% and 20% of
#: 2M x 28 rows, a quarter less walk time at 30% of a9a's 32,561).
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


class ScoredSet:
    """A data set whose raw scores the run tracks, and how they get each tree's outputs.

    ``walk`` is what the compiled walk reads: the set's bin codes when its raw features
    could be coded (:mod:`smart_lgbm.walk.codes`), else its raw features, else None (its
    outputs then come from LightGBM's binned predictor).
    """

    def __init__(self, data: EngineSet, k: int, book: CodeBook | None) -> None:
        self.data = data
        self.scores = np.zeros((data.num_rows, k)) if data.init_score is None else data.init_score.copy()
        raw = data.raw
        codes = None if raw is None or book is None else book.encode(raw)
        self.walk: BinCodes | RawFeatures | None = raw if codes is None else codes
        if codes is not None:
            data.release_raw()  # the codes replace it (a converted DataFrame's copy is freed)

    @property
    def features(self) -> Features:
        """What of the set's features the walk reads (:mod:`smart_lgbm.update_plan`)."""
        if self.walk is None:
            return Features.NONE
        return Features.CODES if isinstance(self.walk, BinCodes) else Features.RAW

    @property
    def lightgbm_read(self) -> tuple[Any, int, np.ndarray | None]:
        """What :meth:`OneIterationBooster.fit` needs to read the outputs through LightGBM."""
        return self.data.handle, self.data.num_rows, self.data.native_init_score


class BoostingRun:
    """State of one engine run: scores, history, the tree-fitting Booster and the trees.

    Parameters
    ----------
    cfg : EngineConfig
    sampler : Sampler
    train : EngineSet
    valids : list of EngineSet
    stream : int or None, default=None
        Sampling stream (:func:`smart_lgbm.iteration.stream_rng`): None on one machine; each machine of a
        distributed run draws from its own (its rank), since its rows are its own.  Given,
        the run is one machine of a distributed run (update plans with ``network``).
    initial_score : callable, optional
        ``initial_score(loss, target) -> (K,) array``, the score boosting starts from when
        the data has no init scores; default ``loss.init_score(target)``.  A distributed
        run gives the score of all machines' rows, as LightGBM's ``boost_from_average`` on
        a network (:meth:`smart_lgbm.distributed.Worker.initial_score`).
    init_trees : list of str, optional
        The tree bodies of the model this run continues (``init_model``): they come first in
        the model, and the run's data start from their predictions (their init scores).
    """

    def __init__(self, cfg: EngineConfig, sampler: Sampler, train: EngineSet, valids: list[EngineSet], *,
                 stream: int | None = None,
                 initial_score: Callable[[Loss, Target], np.ndarray] | None = None,
                 init_trees: list[str] | None = None) -> None:
        if train.handle is None:  # engine_data gives the training set its binned Dataset
            raise ValueError("the training set has no constructed LightGBM Dataset")
        self._train_handle: ctypes.c_void_p = train.handle
        self.cfg = cfg
        self.stream = stream
        self.sampler = sampler
        self.loss = cfg.loss
        self.k = self.loss.num_model_per_iteration
        self.history = GradientHistory(maxlen=sampler.history_length)
        self.trees: list[str] = []
        #: an init model's trees (continued training): the model's first trees
        self.init_trees: list[str] = list(init_trees or [])
        self.subset_params = _lightgbm.params_to_str(
            {k: v for k, v in cfg.tree_params.items() if k in ("num_threads", "verbosity")}
        )
        self.fitter = _lightgbm.OneIterationBooster(cfg.booster_params(0), self.k, self._train_handle,
                                                    self.subset_params)
        self.book = _code_book(self._train_handle)
        self.train = ScoredSet(train, self.k, self.book)
        self.valids = [ScoredSet(v, self.k, self.book) for v in valids]
        self._scored = [self.train, *self.valids]  # by the update plan's keys: TRAIN, then valid_key(i)
        self.params_changed = False  # by a reset_parameter callback since the last iteration
        self._leaves: np.ndarray | None = None  # each training row's leaf, when the sampler needs it
        # float32 g, h of every training row (LightGBM's own precision), reused every iteration
        shape = (train.num_rows,) if self.k == 1 else (train.num_rows, self.k)
        self._grad = np.empty(shape, dtype=np.float32)
        self._hess = np.empty(shape, dtype=np.float32)
        # the fused pass (None: unfused path), and whether it left the next iteration's g, h
        # in the buffers above (with the sampler's statistics)
        self.fused = fused.plan(self.loss, sampler, train.target, self.train.walk, train.num_rows, self.k)
        # where each set's outputs come from, decided once per run for each kind of iteration
        self.plans = PlanCache(RunFacts(
            train=self.train.features, valids=tuple(v.features for v in self.valids),
            needs_leaves=sampler.needs_leaves, train_init_score=train.native_init_score is not None,
            fused=self.fused is not None, network=stream is not None, refit=sampler.refit_leaves,
        ))
        if sampler.refit_leaves:
            refit.check_refit_params(cfg.tree_params)
        self._leaf_rule = refit.LeafRule.from_params(cfg.tree_params)
        self._walk_scratch: np.ndarray | None = None  # the refit's walk to the leaves adds its outputs here
        self._ready = False
        self._statistics: Statistics | None = None
        # boost_from_average: folded into the first trees (LightGBM skips it given init
        # scores); None once it is in the model
        if train.init_score is not None:
            bias = np.zeros(self.k)
        else:
            bias = self.loss.init_score(train.target) if initial_score is None else initial_score(self.loss, train.target)
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
        """A ``reset_parameter`` callback's change, applied from the next iteration.

        Tree parameters go to the tree-fitting Booster (LightGBM itself refuses the binning
        parameters a constructed Dataset fixed); ``seed`` re-seeds the sampling and the trees
        from the next iteration on; the parameters that define the loss or the metrics are
        refused, as LightGBM refuses ``metric`` or ``num_class``; the rest (``num_iterations``,
        ``early_stopping_round``...) are read once at the start, as in ``lightgbm.train``.
        """
        new = canonicalize(params)
        refuse_unsupported({**self.cfg.params, **new})
        changing = sorted(k for k in LOSS_AND_METRIC_PARAMS if k in new and new[k] != self.cfg.params.get(k))
        if changing:
            raise ValueError(
                f"reset_parameter cannot change {', '.join(changing)} during training: they define the loss "
                "and the metrics of the run; start a new smart_lgbm.train instead"
            )
        tree = {k: v for k, v in new.items() if k not in ENGINE_ONLY}
        if tree:
            if self.sampler.refit_leaves:
                refit.check_refit_params({**self.cfg.tree_params, **tree})
            self.cfg.tree_params.update(tree)
            self._leaf_rule = refit.LeafRule.from_params(self.cfg.tree_params)
            self.params_changed = True
        if "seed" in new:
            self.cfg.seed = check_seed(new["seed"])
            self.params_changed = True
        self.cfg.params.update(new)

    def step(self, iteration: int) -> dict[str, Any]:
        """One boosting iteration; returns its record (``num_trees`` = trees added).

        An iteration whose trees cannot split adds no tree and changes no score, as in
        LightGBM (where bagging then simply goes on with the next bag); only when the
        very first iteration cannot split does the model get LightGBM's K constant trees
        holding the initial score, so that it always loads and predicts.
        """
        t0 = time.perf_counter()
        train = self.train.data
        n = train.num_rows
        raw = self.view(self.raw + self.bias if self.bias is not None else self.raw)
        grad, hess = self._grad, self._hess
        # ready: the last iteration's fused pass computed g, h at these scores (and its
        # sampler's statistics)
        ready, self._ready = self._ready, False
        if not ready:
            self._statistics = None
        sample = draw_iteration(self.loss, self.sampler, train.target, self.history, raw, grad, hess,
                                iteration=iteration, seed=self.cfg.seed, stream=self.stream,
                                gradients_ready=ready, statistics=self._statistics)
        t_sample = time.perf_counter()

        # Where each set's outputs come from (smart_lgbm.update_plan): LightGBM's tree learner
        # (every row drawn), its binned predictor (no features in memory), or the walk, which
        # skips the sampled rows when a large sample's outputs are read back.
        plan = self.plans(sample.size == n, sample.size >= READ_SAMPLE_FRACTION * n)  # (indices sorted, unique)
        if plan.slow:
            self._warn_slow(plan.slow)
        subset = None if sample.size == n else _lightgbm.SubsetHandle(
            self._train_handle, sample.indices, self.subset_params)
        params = None
        if self.params_changed or self.cfg.trees_draw_random_numbers():
            params = self.cfg.booster_params(iteration)  # (the fitter applies them in its order)
            self.params_changed = False
        try:
            by_key = self._scored
            reads: dict[int, tuple[ctypes.c_void_p, int, np.ndarray | None]] = {}
            for key in plan.read:  # (in the plan's order)
                if key == SAMPLE:
                    assert subset is not None  # the plan reads the sample back only from a subset
                    reads[key] = (subset.handle, sample.size, None)
                else:
                    reads[key] = by_key[key].lightgbm_read
            fitted = self.fitter.fit(
                self._train_handle if subset is None else subset.handle, class_major_float32(sample.grad),
                class_major_float32(sample.hess), reads, want_leaves=plan.want_leaves, bias=self.bias,
                params=params, keep=plan.stay_on_train,
            )
        finally:
            if subset is not None:
                subset.free()
        t_tree = time.perf_counter()
        num_trees = 0
        self.history.unsplit = fitted.finished  # (an adaptive rate grows on it)
        if fitted.finished:
            # LightGBM's constant first trees (every row gets the initial score), unless the
            # model continues an init model's, which LightGBM then leaves as they are
            if not self.trees and not self.init_trees:
                num_trees = len(fitted.texts)
                self.trees.extend(fitted.texts)
                constant = np.array([values[0] for values in fitted.leaf_values])
                for scored in [self.train, *self.valids]:
                    scored.scores += constant
                self.bias = None
        else:
            texts, outputs = fitted.texts, fitted.outputs
            if len(outputs) != len(plan.read):
                raise RuntimeError(f"LightGBM gave outputs of sets {sorted(outputs)}; the update plan reads {plan.read}")
            values: list[np.ndarray] = []
            forest: Forest | None = None
            coded: CodedForest | None = None
            if plan.refit:  # (the trees with their new values, when _refit walked them)
                texts, values, outputs, forest, coded = self._refit(fitted, plan, grad, hess)
            num_trees = len(texts)
            self.trees.extend(texts)
            for key in plan.added:
                by_key[key].scores += outputs[key]
            # the sampled rows' outputs, added by the walk (which skips those rows)
            known = (sample.indices, np.ascontiguousarray(outputs[SAMPLE])) if plan.read_sample else None
            if plan.walked:
                for key in plan.walked:
                    scored = by_key[key]
                    if key == TRAIN and plan.refit:  # (its leaves are known: _refit walked them)
                        if plan.fused:  # the new outputs added by the sweep, block by block before the gradients
                            assert self.fused is not None  # plan.fused says there is one
                            self._statistics = self.fused.sweep(scored.scores, grad, hess,
                                                                (self._leaf_buffer(), refit.value_table(values)))
                            self._ready = True
                        else:
                            refit.add_by_leaf(scored.scores, self._leaf_buffer(), values)
                        continue
                    if forest is None:
                        forest = Forest.from_tree_texts(texts)
                    leaves = self._leaf_buffer() if key == TRAIN and plan.walk_leaves else None
                    if isinstance(scored.walk, BinCodes):
                        assert self.book is not None  # sets are coded only with the training data's book
                        if coded is None:
                            coded = self.book.coded_forest(forest)
                        if key == TRAIN and plan.fused:
                            assert self.fused is not None  # plan.fused says there is one
                            # the walk, the next iteration's g, h and its sampler's statistics
                            self._statistics = self.fused.run(scored.walk, coded, scored.scores, known, grad, hess,
                                                              leaves)
                            self._ready = True
                            continue
                        add_coded_outputs(scored.walk, coded, scored.scores, leaves,
                                          known if key == TRAIN else None, rows_checked=True)
                    else:
                        assert isinstance(scored.walk, RawFeatures)  # the plan walks only sets with features
                        add_outputs(scored.walk, forest, scored.scores, leaves)
            if plan.want_leaves or plan.walk_leaves:
                leaves = self._leaves if plan.walk_leaves else (fitted.leaves or {}).get(TRAIN)
                assert leaves is not None  # walked, or read through LightGBM as the plan asked
                self.history.leaves = leaves[:, 0] if self.k == 1 else leaves
            self.bias = None
        t_end = time.perf_counter()
        return {
            "iteration": iteration,
            "num_sampled": sample.size,
            "sampling_rate": sample.size / n,
            "num_trees": num_trees,
            "sample_seconds": t_sample - t0,
            "tree_seconds": t_tree - t_sample,
            "update_seconds": t_end - t_tree,
            "seconds": t_end - t0,
        }

    def _warn_slow(self, keys: tuple[int, ...]) -> None:
        """Say once per run when scores go through LightGBM's binned predictor."""
        if keys and not self._warned_slow:
            self._warned_slow = True
            names = ", ".join(repr(self._scored[key].data.name) for key in keys)
            warnings.warn(
                f"no raw features in memory for {names} (built from a file, or constructed with free_raw_data=True): "
                "their scores are updated through LightGBM's binned predictor, which is slower than the engine's "
                "walk over raw features; keep the raw data (lightgbm.Dataset(X, y) unconstructed, or "
                "free_raw_data=False) for the fast path", SlowPathWarning, stacklevel=4)

    def _refit(self, fitted: _lightgbm.IterationTrees, plan: UpdatePlan, grad: np.ndarray, hess: np.ndarray,
               ) -> tuple[list[str], list[np.ndarray], dict[int, np.ndarray], Forest | None, CodedForest | None]:
        """The iteration's trees with leaf values refitted on every training row
        (:mod:`smart_lgbm.refit`): their texts, their leaf values, the outputs of the sets
        read from LightGBM mapped to the new values through their leaves, and, when the
        training rows were walked, the new trees' forest and (for coded validation sets to
        walk) coded forest, their leaf values patched in, not parsed and coded again.

        ``grad``, ``hess``: the iteration's gradients of every training row (the trees were
        fitted to a sample of them).
        """
        n = self.train.data.num_rows
        grad2, hess2 = grad.reshape(n, self.k), hess.reshape(n, self.k)
        forest: Forest | None = None
        coded: CodedForest | None = None
        if TRAIN in plan.walked:  # every row's leaf in the trees as fitted
            leaves = self._leaf_buffer()
            forest = Forest.from_tree_texts(fitted.texts)
            fitted_values = list(forest.leaf_values)
            widths = [v.shape[0] for v in fitted_values]
            walk = self.train.walk
            sums = None
            if isinstance(walk, BinCodes):
                assert self.book is not None  # coded only with the training data's book
                coded = self.book.coded_forest(forest)
                if coded.bitmask is not None:  # the walk and the sums in one pass
                    sums = refit.walk_leaf_sums(walk, coded.bitmask, grad2, hess2, leaves, widths)
                else:  # the lockstep walk (its outputs go to a scratch), then the sums
                    add_coded_outputs(walk, coded, self._scratch(), leaves, None)
            else:
                assert isinstance(walk, RawFeatures)  # the plan walks only sets with features
                add_outputs(walk, forest, self._scratch(), leaves)
            if sums is None:
                sums = refit.leaf_sums(leaves, grad2, hess2, widths)
        else:
            assert fitted.leaves is not None  # the plan asks fit for them (want_leaves)
            leaves = fitted.leaves[TRAIN]
            fitted_values = fitted.leaf_values
            widths = [v.shape[0] for v in fitted_values]
            sums = refit.leaf_sums(leaves, grad2, hess2, widths)
        worker = current_worker()
        if worker is not None:  # a distributed run: every machine's rows, the same values on every machine
            sums = refit.sum_machines(worker.allgather(f"refit_leaves:{len(self.trees)}", sums))
        # the shrinkage LightGBM wrote (a folded bias sets the texts' to 1)
        written = fitted.texts if self.bias is None else _lightgbm.tree_bodies(fitted.model)
        texts, values = [], []
        for k, text in enumerate(fitted.texts):
            bias = None if self.bias is None else float(self.bias[k])
            v = refit.refit_values(fitted_values[k], _lightgbm.tree_shrinkage(written[k]), sums[k][0], sums[k][1],
                                   self._leaf_rule, bias)
            values.append(v)
            texts.append(_lightgbm.with_leaf_values(text, v))
        outputs = {}
        for key in plan.added:
            assert fitted.leaves is not None  # want_leaves whenever a refit reads a set
            set_leaves = fitted.leaves[key]
            out = np.empty(set_leaves.shape)
            for k, v in enumerate(values):
                out[:, k] = v[set_leaves[:, k]]
            outputs[key] = out
        if forest is not None:
            forest = forest.with_leaf_values(values)
            # (a coded validation set walks the new trees; the training rows need no walk)
            coded = coded.with_leaf_values(forest) if coded is not None and len(plan.walked) > 1 else None
        return texts, values, outputs, forest, coded

    def _scratch(self) -> np.ndarray:
        """The refit walk's outputs of the trees as fitted, thrown away (the walks write them)."""
        if self._walk_scratch is None:
            self._walk_scratch = np.zeros((self.train.data.num_rows, self.k))
        return self._walk_scratch

    def _leaf_buffer(self) -> np.ndarray:
        if self._leaves is None:
            self._leaves = np.empty((self.train.data.num_rows, self.k), dtype=np.int32)
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
        self.fused = None
        self._leaves = self._walk_scratch = None
        self.history.leaves = None
        self._grad = self._hess = np.empty(0, dtype=np.float32)
        self._statistics = None
        self._ready = False

    def will_repeat(self) -> bool:
        """Whether the next iteration would repeat one that could not split exactly: no
        random draw in the sampler or the trees, no parameter change since."""
        return (getattr(self.sampler, "deterministic", False) and not self.params_changed
                and not self.cfg.trees_draw_random_numbers())

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
