"""A run's configuration: ``params`` read once into one frozen value.

:func:`make_config` reads the ``params`` dict of :func:`smart_lgbm.train` once (aliases
resolved, refusals made, the loss and the metrics built, seeds checked) into a
:class:`RunConfig`; the run and the training loop read its fields and never the dict.  A
``reset_parameter`` callback's change is a new configuration (:meth:`RunConfig.reset`),
applied from the next iteration.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import lightgbm as lgb
import numpy as np

from .. import _lightgbm
from ..losses.base import Loss
from ..metrics import Evaluator
from ..samplers import Sampler
from .metric_params import evaluator_for
from .param_roles import ENGINE_ONLY, LOSS_AND_METRIC_PARAMS, NOT_IN_MODEL, RANDOM_TREE_PARAMS, TREE_SEEDS, USER_SEEDS
from .param_values import flag, integer, number
from .params import (
    INT32_MAX,
    canonicalize,
    check_seed,
    dataset_params,
    refuse_for_sampler,
    refuse_unsupported,
    resolve_loss,
)
from .refit import LeafRule

__all__ = ["RunConfig", "make_config", "refit_refusal"]


@dataclass(frozen=True)
class RunConfig:
    """Everything a run derives from ``params``, read once (:func:`make_config`).

    Attributes
    ----------
    params : mapping
        The parameters under LightGBM's main names (read-only): what callbacks see as
        ``env.params`` and what the saved model's ``parameters:`` section starts from.
    loss : Loss
    evaluator : Evaluator
        The run's metrics, every metric parameter checked.
    num_rounds : int
    seed : int
        The run's seed: the sampling and each iteration's tree seed.
    early_stopping_round : int or None
    early_stopping_min_delta : float
    first_metric_only : bool
    verbosity : int
    tree_params : mapping
        The tree-fitting Booster's parameters (read-only).
    dataset_params : mapping
        The parameters of the engine's own Datasets (read-only; :func:`.params.dataset_params`).
    leaf_rule : LeafRule
        A leaf refit's output rule (``lambda_l1``, ``lambda_l2``, ``max_delta_step``).
    trees_draw_random_numbers : bool
        Whether LightGBM's tree learner uses its seed with these ``tree_params``: column
        subsampling, extremely randomised thresholds and the stochastic rounding of quantised
        gradients draw random numbers; nothing else in growing a tree does.
    asks_for_network : bool
        ``machines`` or ``num_machines > 1`` is given (LightGBM's network).
    """

    params: Mapping[str, Any]
    loss: Loss
    evaluator: Evaluator
    num_rounds: int
    seed: int
    early_stopping_round: int | None
    early_stopping_min_delta: float
    first_metric_only: bool
    verbosity: int
    tree_params: Mapping[str, Any]
    dataset_params: Mapping[str, Any]
    leaf_rule: LeafRule
    trees_draw_random_numbers: bool
    asks_for_network: bool

    @property
    def num_threads(self) -> int:
        """LightGBM's ``num_threads`` (0 or less: all threads)."""
        return int(self.tree_params.get("num_threads", 0))

    @property
    def subset_params(self) -> str:
        """The parameter string of the engine's subset Datasets (threads and verbosity only)."""
        return _lightgbm.params_to_str({k: v for k, v in self.tree_params.items() if k in ("num_threads", "verbosity")})

    def booster_params(self, iteration: int) -> str:
        """Parameter string of the tree-fitting Booster for one iteration.

        Every iteration gets its own seed derived from ``seed`` and the iteration, so that
        an iteration's random draws (``feature_fraction`` subsets, ``extra_trees``
        thresholds) depend only on (seed, iteration); a fixed seed would re-seed every
        tree's draws identically.
        """
        if not self.trees_draw_random_numbers:
            iteration = 0  # the seed changes nothing: keep one string, spare LightGBM a reset
        seeds = {"seed": _derived_seed(self.seed, iteration, 0)}
        # An explicit feature_fraction_seed / extra_seed overrides what LightGBM derives from
        # ``seed`` (as in stock): each gets its own per-iteration stream from the user's value.
        for key, tag in TREE_SEEDS.items():
            if key in self.params:
                seeds[key] = _derived_seed(self.params[key], iteration, tag)
        return _lightgbm.params_to_str({**self.tree_params, **seeds})

    def model_params(self, data_params: Mapping[str, Any] | None = None) -> str:
        """Parameter string whose LightGBM configuration the saved model's ``parameters:``
        section shows: the run's parameters as ``lightgbm.train`` would have been given them
        (the user's seed, not the per-iteration ones; ``num_iterations``; the objective's
        parameters), except ``objective`` (still ``custom``) and ``metric``, which the
        tree-fitting Booster cannot change (:func:`smart_lgbm._lightgbm.assemble_model_string`
        writes them).  ``data_params``: the training Dataset's parameters, which
        ``lightgbm.train`` adds to the Booster's (:func:`.params.training_data_params`)."""
        params = {k: v for k, v in self.tree_params.items() if k != "metric"}  # verbosity stays -1: quiet
        if "force_col_wise" not in self.params:  # the engine's own choice, not the user's
            params["force_col_wise"] = False
        # every parameter the engine handles itself, as given (loss, metric, early stopping,
        # explicit seeds), except those the tree-fitting Booster cannot take
        params.update({k: v for k, v in self.params.items() if k in ENGINE_ONLY and k not in NOT_IN_MODEL})
        if "seed" in self.params:
            params["seed"] = self.seed
        params["num_iterations"] = self.num_rounds
        # lightgbm.train updates the Booster's parameters with the training Dataset's own
        # (its params and the categorical columns it was constructed with); an explicit
        # categorical_feature parameter still wins, LightGBM's main name over its alias.
        for key, value in (data_params or {}).items():
            if key not in ENGINE_ONLY and not (key == "categorical_feature" and key in self.params):
                params[key] = value
        return _lightgbm.params_to_str(params)

    def check_sampler(self, sampler: Sampler) -> None:
        """Refuse parameters that do not work with ``sampler`` (ValueError naming them)."""
        refuse_for_sampler(self.params, sampler)
        if sampler.refit_leaves:
            _refuse_for_refit(self.tree_params)

    def reset(self, params: dict[str, Any], sampler: Sampler) -> tuple[RunConfig, bool]:
        """The configuration after a ``reset_parameter`` callback's change, and whether the
        tree-fitting Booster must take it (tree parameters or ``seed`` changed).

        Tree parameters go to the tree-fitting Booster (LightGBM itself refuses the binning
        parameters a constructed Dataset fixed); ``seed`` re-seeds the sampling and the trees
        from the next iteration on; the parameters that define the loss or the metrics are
        refused, as LightGBM refuses ``metric`` or ``num_class``; the rest (``num_iterations``,
        ``early_stopping_round``...) are read once at the start, as in ``lightgbm.train``.
        """
        new = canonicalize(params)
        refuse_unsupported({**self.params, **new})
        changing = sorted(k for k in LOSS_AND_METRIC_PARAMS if k in new and new[k] != self.params.get(k))
        if changing:
            raise ValueError(
                f"reset_parameter cannot change {', '.join(changing)} during training: they define the loss "
                "and the metrics of the run; start a new smart_lgbm.train instead"
            )
        changes: dict[str, Any] = {"params": MappingProxyType({**self.params, **new})}
        tree = {k: v for k, v in new.items() if k not in ENGINE_ONLY}
        if tree:
            tree_params = {**self.tree_params, **tree}
            if sampler.refit_leaves:
                _refuse_for_refit(tree_params)
            changes.update(tree_params=MappingProxyType(tree_params), leaf_rule=_leaf_rule(tree_params),
                           trees_draw_random_numbers=_trees_draw_random_numbers(tree_params))
        if "seed" in new:
            changes["seed"] = check_seed(new["seed"])
        return dataclasses.replace(self, **changes), bool(tree) or "seed" in new


def make_config(params: dict[str, Any] | None, num_boost_round: int) -> RunConfig:
    """Read and check ``params`` once: the run's :class:`RunConfig`."""
    p = canonicalize(params)
    refuse_unsupported(p)
    binning = dataset_params(p)
    if "num_iterations" in p:
        warnings.warn(f"Found num_iterations={p['num_iterations']} in params; it overrides num_boost_round", stacklevel=4)
        num_boost_round = p["num_iterations"]
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) or num_boost_round < 1:
        raise ValueError(f"num_boost_round must be a positive integer, got {num_boost_round!r}")
    if num_boost_round > INT32_MAX:
        raise ValueError(f"num_boost_round={num_boost_round!r} is more than LightGBM can count ({INT32_MAX})")
    loss = resolve_loss(p)
    evaluator = evaluator_for(p, loss)  # every metric parameter checked before any data is read
    seed = check_seed(p.get("seed", 0))
    for key in USER_SEEDS:
        if key in p:
            p[key] = integer(p, key, 0)  # LightGBM's seeds are any int, negative too
    es = p.get("early_stopping_round")
    tree_params = {k: v for k, v in p.items() if k not in ENGINE_ONLY}
    tree_params.update(objective="custom", metric="None", verbosity=-1, num_class=loss.num_model_per_iteration)
    if not any(flag(p.get(k, False)) for k in ("force_col_wise", "force_row_wise")):
        # Column-wise histograms sum each bin over the rows in row order, whatever the number
        # of threads, so the same seed gives the same model at any thread count; row-wise
        # ones add per-thread partial histograms, whose rounding depends on the thread count.
        # (Stock LightGBM picks one by timing both when a Booster is created, and keeps it
        # through later resets to other data: a timed choice would also make the model
        # depend on the machine's load.)  Row-wise is often faster on dense data with many
        # columns; a user who prefers it passes force_row_wise=true.
        tree_params["force_col_wise"] = True
    config = RunConfig(
        params=MappingProxyType(p),
        loss=loss,
        evaluator=evaluator,
        num_rounds=int(num_boost_round),
        seed=int(seed),
        early_stopping_round=int(es) if es is not None and int(es) > 0 else None,
        early_stopping_min_delta=number(p, "early_stopping_min_delta", 0.0),
        first_metric_only=flag(p.get("first_metric_only", False)),
        verbosity=int(number(p, "verbosity", 1)),
        tree_params=MappingProxyType(tree_params),
        dataset_params=MappingProxyType(binning),
        leaf_rule=_leaf_rule(tree_params),
        trees_draw_random_numbers=_trees_draw_random_numbers(tree_params),
        asks_for_network="machines" in p or int(p.get("num_machines", 1)) > 1,
    )
    # LightGBM's own checks of every parameter the model will show before any data is read:
    # those the engine handles itself (the loss's, the metrics', the run's) would otherwise
    # reach a LightGBM Booster only when the final model is written, after training, and
    # the tree learner's only when the data are binned
    try:
        _lightgbm.check_booster_params(config.model_params())
    except lgb.basic.LightGBMError as exc:
        raise ValueError(f"LightGBM refuses the parameters: {exc}".rstrip(" .")) from None
    return config


def _derived_seed(seed: int, iteration: int, tag: int) -> int:
    """A seed for one iteration's tree from a user's seed (``tag`` keeps streams apart)."""
    state = np.random.SeedSequence([seed % 2**32, iteration, 0x5EED, *([tag] if tag else [])]).generate_state(1)[0]
    return int(state % (2**31 - 1))


def _trees_draw_random_numbers(tree_params: Mapping[str, Any]) -> bool:
    """:attr:`RunConfig.trees_draw_random_numbers` of ``tree_params`` (a parameter left at
    its default never draws, so only those given are tested)."""
    return any(draws(tree_params, key) for key, draws in RANDOM_TREE_PARAMS.items() if key in tree_params)


def _leaf_rule(tree_params: Mapping[str, Any]) -> LeafRule:
    """The leaf refit's rule of ``tree_params`` (LightGBM's defaults)."""
    return LeafRule(float(tree_params.get("lambda_l1", 0.0)), float(tree_params.get("lambda_l2", 0.0)),
                    float(tree_params.get("max_delta_step", 0.0)))


def _refuse_for_refit(tree_params: Mapping[str, Any]) -> None:
    """Refuse the tree parameters a leaf refit cannot honour, naming them.

    Raises
    ------
    ValueError
        For ``path_smooth > 0`` or any non-zero ``monotone_constraints``.
    """
    reason = refit_refusal(tree_params)
    if reason is not None:
        raise ValueError(reason)


def refit_refusal(tree_params: Mapping[str, Any]) -> str | None:
    """Why a leaf refit cannot honour these (canonical) tree parameters, or None:
    ``path_smooth > 0`` or any non-zero ``monotone_constraints``."""
    if float(tree_params.get("path_smooth", 0.0) or 0.0) > 0.0:
        return ("refit_leaves=True cannot be combined with path_smooth > 0: a smoothed leaf value depends "
                "on its parent's output fitted on the sample; set path_smooth=0 or refit_leaves=False")
    constraints = tree_params.get("monotone_constraints")
    if constraints is not None:
        values = constraints.split(",") if isinstance(constraints, str) else np.ravel(constraints)
        if any(float(v) != 0.0 for v in values if str(v).strip()):
            return ("refit_leaves=True cannot be combined with monotone_constraints: leaf values refitted "
                    "on all rows may break the constraints; drop them or set refit_leaves=False")
    return None
