"""``smart_lgbm.train``: LightGBM's training loop with a row sampler in front of the tree learner.

Each boosting iteration:

1. the loss computes ``g, h`` for every training row at the current raw scores;
2. the sampler picks the rows ``S`` and their fitting gradients (importance-reweighted);
3. LightGBM builds a Dataset of just those binned rows (bin mappers shared, so trees are
   compatible) and fits the iteration's tree(s) on it: the histogram work touches ``S`` only;
4. LightGBM's binned-data predictor maps every training and validation row to its leaf and
   the engine adds the leaf outputs to the tracked scores (see :mod:`smart_lgbm._lightgbm`);
5. metrics and callbacks run as in ``lightgbm.train``.

At the end the trees become one stock model string (the initial score folded into the first
tree, the stock ``objective=`` line) loaded into an ordinary :class:`lightgbm.Booster`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm import callback as lgb_callback

from . import _lightgbm
from .binned import BinnedSet, prepare_train, prepare_valid
from .losses.base import check_finite
from .metrics import ALIASES, Evaluator
from .params import (
    ENGINE_ONLY,
    LOSS_AND_METRIC_PARAMS,
    EngineConfig,
    canonicalize,
    check_seed,
    dataset_params,
    make_config,
    refuse_unsupported,
)
from .samplers import GradientHistory, Sample, Sampler, SamplingState, make_sampler

# LightGBM adds an initial score only when it is larger than this (kEpsilon).
_K_EPSILON = 1e-15


def iteration_rng(seed: int, iteration: int) -> np.random.Generator:
    """The random generator of one iteration: same seed and iteration, same draws.

    Both the engine and :class:`smart_lgbm.SmartObjective` use it, so they draw the same
    samples for the same seed.
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, iteration])))


def class_major_float32(values: np.ndarray) -> np.ndarray:
    """(m,) or (m, K) float64 -> contiguous float32 in LightGBM's class-major layout."""
    if values.ndim == 1:
        return np.ascontiguousarray(values, dtype=np.float32)
    return np.ascontiguousarray(values.T, dtype=np.float32).reshape(-1)


def check_sample(sample: Any, n: int, k: int, sampler: Sampler) -> None:
    """Refuse a malformed sample early, naming the sampler (user samplers included)."""
    if not isinstance(sample, Sample):
        raise TypeError(f"{sampler!r}.sample() returned {type(sample).__name__}; expected a smart_lgbm.Sample")
    idx = sample.indices
    if not isinstance(idx, np.ndarray):
        raise TypeError(f"{sampler!r} returned indices of type {type(idx).__name__}; expected a 1-D numpy array of "
                        "int32 row indices")
    if idx.ndim != 1:
        raise ValueError(f"{sampler!r} returned indices of shape {idx.shape}; expected a 1-D array of row indices")
    m = idx.shape[0]
    if m < 1:
        raise ValueError(f"{sampler!r} returned no rows; a sample needs at least one row")
    if idx.dtype != np.int32:
        raise TypeError(f"{sampler!r} returned indices of dtype {idx.dtype}; expected int32")
    if idx[0] < 0 or idx[-1] >= n or (m > 1 and np.any(idx[1:] <= idx[:-1])):
        raise ValueError(f"{sampler!r} returned indices that are not sorted, unique and in [0, {n})")
    shape = (m,) if k == 1 else (m, k)
    for name in ("grad", "hess"):
        values = getattr(sample, name)
        if not isinstance(values, np.ndarray) or not np.issubdtype(values.dtype, np.floating):
            raise TypeError(f"{sampler!r} returned {name} of type {type(values).__name__}"
                            f"{'' if not isinstance(values, np.ndarray) else ' ' + str(values.dtype)}; "
                            f"expected a float numpy array of shape {shape}")
        if values.shape != shape:
            raise ValueError(f"{sampler!r} returned {name} of shape {values.shape}; expected {shape}")
        check_finite(f"{'gradients' if name == 'grad' else 'hessians'} from {sampler!r}", values)


class _Run:
    """State of one engine run: scores, history, trees and records."""

    def __init__(self, cfg: EngineConfig, sampler: Sampler, train: BinnedSet, valids: list[BinnedSet]) -> None:
        self.cfg = cfg
        self.sampler = sampler
        self.train = train
        self.valids = valids
        self.loss = cfg.loss
        self.k = self.loss.num_model_per_iteration
        self.history = GradientHistory(maxlen=sampler.history_length)
        self.trees: list[str] = []
        self.metric_names = [ALIASES.get(m.lower(), m.lower()) for m in cfg.metrics]
        self.subset_params = _lightgbm.params_to_str(
            {k: v for k, v in cfg.tree_params.items() if k in ("num_threads", "verbosity")}
        )
        self.fitter = _lightgbm.OneIterationBooster(cfg.booster_params(0), self.k, train.handle, self.subset_params)
        self.params_changed = False  # by a reset_parameter callback since the last iteration
        # the sets whose rows get each tree's outputs: training set first, then validation sets
        self.sets = [(s.handle, s.num_rows, s.native_init_score) for s in [train, *valids]]
        n = train.num_rows
        self.raw = np.zeros((n, self.k)) if train.init_score is None else train.init_score.copy()
        self.valid_raw = [np.zeros((v.num_rows, self.k)) if v.init_score is None else v.init_score.copy()
                          for v in valids]
        # boost_from_average: folded into the first trees (LightGBM skips it given init
        # scores); None once it is in the model
        bias = self.loss.init_score(train.target) if train.init_score is None else np.zeros(self.k)
        bias = np.where(np.abs(bias) > _K_EPSILON, bias, 0.0)
        self.bias: np.ndarray | None = bias if np.any(bias) else None

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
            self.cfg.tree_params.update(tree)
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
        n = self.train.num_rows
        raw = self.raw + self.bias if self.bias is not None else self.raw
        grad, hess = self.loss.gradient_hessian(self.view(raw), self.train.target)
        state = SamplingState(iteration, grad, hess, self.view(raw), self.loss, self.train.target, self.history)
        sample = self.sampler.sample(state, iteration_rng(self.cfg.seed, iteration))
        check_sample(sample, n, self.k, self.sampler)
        self.history.push_gradient(grad)
        t_sample = time.perf_counter()

        subset = None
        if sample.size == n:  # all rows (indices are sorted and unique)
            handle = self.train.handle
        else:
            subset = _lightgbm.SubsetHandle(self.train.handle, sample.indices, self.subset_params)
            handle = subset.handle
        if self.params_changed or self.cfg.trees_draw_random_numbers():
            self.fitter.set_params(self.cfg.booster_params(iteration))
            self.params_changed = False
        try:
            fitted = self.fitter.fit(handle, class_major_float32(sample.grad), class_major_float32(sample.hess), self.sets,
                                     want_leaves=self.sampler.needs_leaves, bias=self.bias)
        finally:
            if subset is not None:
                subset.free()
        num_trees = 0
        if fitted.finished:
            if not self.trees:  # LightGBM's constant first trees: every row gets the initial score
                num_trees = len(fitted.texts)
                self.trees.extend(fitted.texts)
                for raw_scores in [self.raw, *self.valid_raw]:
                    raw_scores += np.array([values[0] for values in fitted.leaf_values])
                self.bias = None
        else:
            num_trees = len(fitted.texts)
            self.trees.extend(fitted.texts)
            for raw_scores, outputs in zip([self.raw, *self.valid_raw], fitted.outputs):
                raw_scores += outputs
            if self.sampler.needs_leaves:
                self.history.leaves = fitted.leaves[0][:, 0] if self.k == 1 else fitted.leaves[0]
            self.bias = None
        t_end = time.perf_counter()
        return {
            "iteration": iteration,
            "num_sampled": sample.size,
            "sampling_rate": sample.size / n,
            "num_trees": num_trees,
            "sample_seconds": t_sample - t0,
            "seconds": t_end - t0,
        }

    def will_repeat(self) -> bool:
        """Whether the next iteration would repeat one that could not split exactly: no
        random draw in the sampler or the trees, no parameter change since."""
        return (getattr(self.sampler, "deterministic", False) and not self.params_changed
                and not self.cfg.trees_draw_random_numbers())

    def model_string(self, num_trees: int | None = None, parameters: str | None = None) -> str:
        """The stock model of the trees so far (the first ``num_trees`` of them if given)."""
        return _lightgbm.assemble_model_string(
            self.fitter.header, self.trees[:num_trees], self.loss.model_objective_line(),
            parameters or self.fitter.parameters, self.k, self.train.pandas_categorical, metric=self.metric_names,
        )


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
    callbacks : list of callables, optional
        ``lightgbm.early_stopping``, ``log_evaluation``, ``record_evaluation``,
        ``reset_parameter`` and :func:`smart_lgbm.record_sampling` work unchanged.

    Returns
    -------
    lightgbm.Booster
        A stock model: saves, loads and predicts like one trained by ``lightgbm.train``.
    """
    _lightgbm.check_version()
    cfg = make_config(params, num_boost_round)
    sampler = make_sampler(sampler)
    ds_params = dataset_params(params)
    train_data = prepare_train(train_set, cfg.loss, ds_params)

    if isinstance(valid_sets, lgb.Dataset):
        valid_sets = [valid_sets]
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    # (name, binned set, its position in ``valids``); None, None stands for the training set
    eval_sets: list[tuple[str, BinnedSet | None, int | None]] = []
    train_name = "training"
    valids: list[BinnedSet] = []
    for i, valid in enumerate(valid_sets or []):
        name = valid_names[i] if valid_names is not None and len(valid_names) > i else None
        if valid is train_set:
            train_name = name or "training"
            eval_sets.append((train_name, None, None))
            continue
        binned = prepare_valid(valid, name or f"valid_{i}", train_data, cfg.loss, ds_params)
        valids.append(binned)
        eval_sets.append((binned.name, binned, len(valids) - 1))
    evaluator = Evaluator(cfg.metrics, cfg.loss, cfg.eval_at)

    run = _Run(cfg, sampler, train_data, valids)

    def evaluate_set(name: str, binned: BinnedSet | None, position: int | None,
                     fevals: Any) -> list[tuple[str, str, float, bool]]:
        raw = run.view(run.raw if position is None else run.valid_raw[position])
        target = train_data.target if binned is None else binned.target
        scores = [_lightgbm.evaluation_result(name, m, v, h) for m, v, h in evaluator.evaluate(raw, target)]
        if fevals is not None:
            source = train_set if binned is None else binned.source
            scores += [_lightgbm.evaluation_result(name, m, v, h)
                       for m, v, h in _feval_results(fevals, cfg.loss.transform(raw), source)]
        return scores

    def evaluate_for_model(which: Any, fevals: Any) -> list[tuple[str, str, float, bool]]:
        """``env.model.eval_train / eval_valid / eval`` on the engine's current scores."""
        if which is None or which is train_set:
            return evaluate_set(train_name, None, None, fevals)
        chosen = [e for e in eval_sets if e[1] is not None and (which == "valid" or e[1].source is which)]
        if which != "valid" and not chosen:
            raise ValueError("env.model.eval during smart_lgbm.train evaluates only the training set and the "
                             "validation sets given to smart_lgbm.train")
        return [score for name, binned, position in chosen for score in evaluate_set(name, binned, position, fevals)]

    model = _lightgbm.CallbackModel(lambda: (len(run.trees), run.model_string()), run.reset_parameter,
                                    evaluate_for_model, train_name, train_data.pandas_categorical)
    model.params = cfg.params

    callbacks_set = set()
    for i, cb in enumerate(callbacks or []):
        cb.__dict__.setdefault("order", i - len(callbacks))
        callbacks_set.add(cb)
    if cfg.early_stopping_round is not None:
        callbacks_set.add(lgb.early_stopping(cfg.early_stopping_round, first_metric_only=cfg.first_metric_only,
                                             min_delta=cfg.early_stopping_min_delta, verbose=cfg.verbosity > 0))
    before = sorted((cb for cb in callbacks_set if getattr(cb, "before_iteration", False)), key=attrgetter("order"))
    after = sorted((cb for cb in callbacks_set if not getattr(cb, "before_iteration", False)), key=attrgetter("order"))

    results: list = []
    best_iteration = 0
    trees_after: list[int] = []  # number of trees in the model after each iteration
    try:
        for it in range(cfg.num_rounds):
            env_args = dict(model=model, params=cfg.params, iteration=it, begin_iteration=0,
                            end_iteration=cfg.num_rounds)
            for cb in before:
                cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=None))
            record = run.step(it)
            if record["num_trees"] == 0 and run.trees and it > 0:
                if run.will_repeat():
                    # Nothing random would change: every later iteration would be this one again.
                    warnings.warn("Stopped training because there are no more leaves that meet the split "
                                  "requirements", stacklevel=2)
                    break
                warnings.warn("an iteration's sample could not be split (no leaf meets the split requirements); "
                              "no tree was added and training goes on with the next sample, as LightGBM's "
                              "bagging does", stacklevel=2)
            trees_after.append(len(run.trees))
            model.last_record = record
            results = [score for name, binned, position in eval_sets
                       for score in evaluate_set(name, binned, position, feval)]
            try:
                for cb in after:
                    cb(lgb_callback.CallbackEnv(**env_args, evaluation_result_list=results))
            except lgb_callback.EarlyStopException as exc:
                best_iteration = exc.best_iteration + 1
                results = exc.best_score
                break
        parameters = _lightgbm.set_parameter_line(run.fitter.parameters_section(cfg.model_params()), "verbosity",
                                                  str(cfg.verbosity))
        model_text = run.model_string(trees_after[best_iteration - 1] if best_iteration else None, parameters)
    finally:
        run.fitter.free()  # the C Booster's memory, also on early stopping and Ctrl-C

    booster = lgb.Booster(model_str=model_text)
    booster.set_train_data_name(train_name)
    booster.best_iteration = best_iteration
    booster.best_score = _lightgbm.best_score_of(results)
    return booster
