"""What the engine does with each LightGBM parameter it handles: one table, every list derived.

A LightGBM parameter not in :data:`ROLES` goes, as given, to the tree-fitting Booster (and to
the engine's internal Datasets); the rows below say, for the others, who reads them, whether a
run may change them, whether they reach the Datasets and the saved model's ``parameters:``
section, how the tree learner's seeds are re-derived, and why a comparison config refuses them.
The run's configuration (:mod:`.config`, :mod:`.params`, :mod:`.metric_params`) and the
comparison configs (:mod:`smart_lgbm.compare.config`) use the lists derived at the bottom;
none of them writes a parameter name list of its own.

Names are LightGBM's main names: the engine resolves aliases first
(:func:`.params.canonicalize`); ``tests/test_param_coverage.py`` checks that every name here
is one, and walks LightGBM's whole parameter list against the engine.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .param_values import flag, number

__all__ = ["OBJECTIVES", "REFUSED_OBJECTIVES", "ROLES", "Objective", "ParamRole", "Role"]


class Role(enum.Enum):
    """Who reads a parameter."""

    #: the loss (:func:`smart_lgbm._engine.params.resolve_loss`): fixed for a run
    LOSS = "loss"
    #: the metrics (:class:`smart_lgbm.metrics.Evaluator`): fixed for a run
    METRIC = "metric"
    #: the engine's training loop, once at the start (as ``lightgbm.train`` reads them)
    RUN = "run"
    #: a seed: validated as an integer; the tree learner's are re-derived per iteration
    SEED = "seed"
    #: LightGBM's tree-fitting Booster (the role of every parameter not in the table)
    TREE = "tree"


@dataclass(frozen=True)
class ParamRole:
    """One row of :data:`ROLES`.

    Attributes
    ----------
    role : Role
        Who reads it; anything but ``TREE`` never reaches the tree-fitting Booster.
    doc : str
        What it is to the engine, in a line.
    dataset : bool
        Whether it goes with the parameters of the engine's internal Datasets.  False for
        what LightGBM's Config cross-checks against the objective even for a Dataset
        (``num_class > 1`` needs a multiclass objective; binning needs none of them).
    model : bool
        For a parameter the engine handles: whether the saved model's ``parameters:``
        section shows it as given.  False where the model shows the engine's own value
        (``objective`` and ``metric``, written with the model; ``verbosity``, -1: quiet).
    tree_seed : int or None
        For a seed of the tree learner's draws: the tag of its per-iteration stream
        (:meth:`smart_lgbm._engine.config.RunConfig.booster_params`; changing it changes models).
    random : callable or None
        For a tree parameter: ``random(params, name)`` says whether its value in ``params``
        makes the tree learner draw random numbers (then each iteration's Booster gets its
        own seed); its default never does.
    compare : str or None
        Why a comparison config refuses it in ``params`` (what to set instead), or None.
    """

    role: Role
    doc: str
    dataset: bool = True
    model: bool = True
    tree_seed: int | None = None
    random: Callable[[Mapping[str, Any], str], bool] | None = None
    compare: str | None = None


def _below_one(params: Mapping[str, Any], name: str) -> bool:
    return number(params, name, 1.0) < 1.0


def _set(params: Mapping[str, Any], name: str) -> bool:
    return flag(params.get(name, False))


_METRIC_KEY = "set the experiment's 'metric' key instead (e.g. metric = \"ndcg@10\")"

#: LightGBM main parameter name -> what the engine does with it.
ROLES: dict[str, ParamRole] = {
    # the loss
    "objective": ParamRole(Role.LOSS, "the loss (a LightGBM name or a Loss)", dataset=False, model=False),
    "boost_from_average": ParamRole(Role.LOSS, "the loss's initial score"),
    "sigmoid": ParamRole(Role.LOSS, "binary and lambdarank losses' sigmoid"),
    "label_gain": ParamRole(Role.LOSS, "lambdarank's gains"),
    "lambdarank_truncation_level": ParamRole(Role.LOSS, "lambdarank's pairs"),
    "lambdarank_norm": ParamRole(Role.LOSS, "lambdarank's normalisation"),
    "num_class": ParamRole(Role.LOSS, "multiclass's trees per iteration", dataset=False),
    "is_unbalance": ParamRole(Role.LOSS, "binary's class weights (other objectives ignore it, as in LightGBM)",
                              dataset=False),
    "scale_pos_weight": ParamRole(Role.LOSS, "binary's positive class weight (other objectives ignore it)",
                                  dataset=False),
    "alpha": ParamRole(Role.LOSS, "huber's threshold (and the huber/quantile metrics')"),
    # the metrics
    "metric": ParamRole(Role.METRIC, "the metrics, computed by the engine", dataset=False, model=False,
                        compare=_METRIC_KEY),
    "eval_at": ParamRole(Role.METRIC, "ndcg/map cut-offs", compare=_METRIC_KEY),
    "multi_error_top_k": ParamRole(Role.METRIC, "multi_error's k"),
    "auc_mu_weights": ParamRole(Role.METRIC, "auc_mu's weights (num_class**2 of them, so it goes with num_class)",
                                dataset=False),
    # the training loop
    "num_iterations": ParamRole(Role.RUN, "rounds (overrides num_boost_round, as in lightgbm.train)",
                                compare="set 'rounds' instead"),
    "early_stopping_round": ParamRole(Role.RUN, "early stopping", compare="a comparison runs all rounds"),
    "early_stopping_min_delta": ParamRole(Role.RUN, "early stopping"),
    "first_metric_only": ParamRole(Role.RUN, "early stopping"),
    "verbosity": ParamRole(Role.RUN, "the engine's messages (its Booster is quiet)", model=False),
    "metric_freq": ParamRole(Role.RUN, "LightGBM CLI output: nothing to do"),
    "is_provide_training_metric": ParamRole(Role.RUN, "LightGBM CLI output: nothing to do"),
    "output_model": ParamRole(Role.RUN, "LightGBM CLI file: nothing to do"),
    "input_model": ParamRole(Role.RUN, "LightGBM CLI file: nothing to do"),
    "snapshot_freq": ParamRole(Role.RUN, "LightGBM CLI output: nothing to do"),
    # seeds (LightGBM's explicit seeds override those it derives from ``seed``)
    "seed": ParamRole(Role.SEED, "the run's seed: sampling, and each iteration's tree seed",
                      compare="set 'seeds' instead"),
    "feature_fraction_seed": ParamRole(Role.SEED, "column subsampling, re-derived per iteration", tree_seed=1),
    "extra_seed": ParamRole(Role.SEED, "extremely randomised thresholds, re-derived per iteration", tree_seed=2),
    "bagging_seed": ParamRole(Role.SEED, "seeds bagging, which the engine refuses"),
    "drop_seed": ParamRole(Role.SEED, "seeds dart, which the engine refuses"),
    "objective_seed": ParamRole(Role.SEED, "seeds rank_xendcg, which the engine does not offer"),
    "data_random_seed": ParamRole(Role.SEED, "binning's sample (goes with the Dataset parameters)"),
    # tree parameters the engine looks at (they still reach the tree-fitting Booster)
    "feature_fraction": ParamRole(Role.TREE, "column subsampling per tree", random=_below_one),
    "feature_fraction_bynode": ParamRole(Role.TREE, "column subsampling per node", random=_below_one),
    "extra_trees": ParamRole(Role.TREE, "random thresholds", random=_set),
    "use_quantized_grad": ParamRole(Role.TREE, "stochastic rounding of quantised gradients", random=_set),
    "boosting": ParamRole(Role.TREE, "only gbdt is supported", compare="every method is gbdt"),
    "data_sample_strategy": ParamRole(Role.TREE, "goss is refused: the sampler replaces it",
                                      compare="use a method of kind stock_goss"),
    "bagging_fraction": ParamRole(Role.TREE, "refused with bagging_freq > 0: the sampler replaces bagging",
                                  compare="use a method of kind stock_bagging"),
    "bagging_freq": ParamRole(Role.TREE, "bagging: see bagging_fraction", compare="use a method of kind stock_bagging"),
    "top_rate": ParamRole(Role.TREE, "GOSS only", compare="use a method of kind stock_goss"),
    "other_rate": ParamRole(Role.TREE, "GOSS only", compare="use a method of kind stock_goss"),
}


@dataclass(frozen=True)
class Objective:
    """A loss family the engine runs: LightGBM's names for it and the metrics that measure
    what it fits (the comparison refuses others)."""

    names: tuple[str, ...]
    fitting_metrics: tuple[str, ...]


#: Loss family (``Loss.lightgbm_objective``) -> its LightGBM objective names and fitting metrics.
#: Probabilities (binary) may be scored by the regression metrics too; a ranking objective's
#: scores only order the documents of a query, so only NDCG measures them.
OBJECTIVES: dict[str, Objective] = {
    "binary": Objective(("binary",), ("binary_logloss", "binary_error", "auc", "average_precision", "l2", "rmse",
                                      "l1", "ndcg@K")),
    "multiclass": Objective(("multiclass", "softmax"), ("multi_logloss", "multi_error", "auc_mu")),
    "lambdarank": Objective(("lambdarank",), ("ndcg@K",)),
    # "rmse" and its aliases are the L2 objective; lightgbm.train's default metric for all of
    # them is l2 (the objective alias does not carry over to the metric)
    "regression": Objective(("regression", "regression_l2", "l2", "mean_squared_error", "mse", "l2_root",
                             "root_mean_squared_error", "rmse"), ("l2", "rmse", "l1", "auc", "ndcg@K")),
    "huber": Objective(("huber",), ("huber", "l2", "rmse", "l1")),
    "cross_entropy": Objective(("cross_entropy", "xentropy"), ("cross_entropy", "kullback_leibler", "l2", "rmse",
                                                               "l1", "auc")),
}

_PERCENTILE = ("LightGBM renews every leaf's output to a percentile of its rows' residuals (RenewTreeOutput) after "
               "the tree is grown, which the engine's sampled trees would need from every row; train it with stock "
               "lightgbm.train")
_NOT_BUILT = ("the engine has no such loss built in; train it with stock lightgbm.train, or give its gradients as "
              "smart_lgbm.losses.CustomLoss")

#: LightGBM objective names (and aliases) the engine refuses -> the reason (docs/engine.md lists them).
REFUSED_OBJECTIVES: dict[str, str] = {
    **dict.fromkeys(("regression_l1", "l1", "mean_absolute_error", "mae", "quantile", "mape",
                     "mean_absolute_percentage_error"), _PERCENTILE),
    **dict.fromkeys(("fair", "poisson", "gamma", "tweedie"), _NOT_BUILT),
    **dict.fromkeys(("multiclassova", "multiclass_ova", "ova", "ovr"),
                    "one-vs-rest multiclass (a binary objective per class) is not built in; use multiclass (softmax), "
                    "or stock lightgbm.train"),
    **dict.fromkeys(("cross_entropy_lambda", "xentlambda"),
                    "the engine has no cross_entropy_lambda; use cross_entropy, or stock lightgbm.train"),
    **dict.fromkeys(("rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart"),
                    "rank_xendcg draws its own random numbers in every gradient and is not built in; use "
                    "lambdarank, or stock lightgbm.train"),
    **dict.fromkeys(("custom", "none", "null", "na"),
                    "a custom objective is a smart_lgbm.losses.Loss here: pass objective=CustomLoss(grad_hess=...)"),
}


def _where(test: Callable[[ParamRole], bool]) -> tuple[str, ...]:
    return tuple(name for name, row in ROLES.items() if test(row))


# --------------------------------------------------------------------------- derived lists

#: Parameters the engine handles itself; they never reach the tree-fitting Booster.
ENGINE_ONLY = frozenset(_where(lambda r: r.role is not Role.TREE))
#: Parameters that define the loss or the metrics: a run cannot change them midway.
LOSS_AND_METRIC_PARAMS = _where(lambda r: r.role in (Role.LOSS, Role.METRIC))
#: Kept out of the engine's internal Datasets.
NOT_FOR_DATASETS = frozenset(_where(lambda r: not r.dataset))
#: Engine parameters the saved model's ``parameters:`` section does not show as given.
NOT_IN_MODEL = frozenset(_where(lambda r: r.role is not Role.TREE and not r.model))
#: Seeds a user may set apart from ``seed`` (LightGBM's: any integer, negative too).
USER_SEEDS = tuple(name for name in _where(lambda r: r.role is Role.SEED) if name != "seed")
#: The tree learner's seeds -> the tags of their per-iteration streams, in tag order.
TREE_SEEDS: dict[str, int] = dict(sorted(((name, row.tree_seed) for name, row in ROLES.items()
                                          if row.tree_seed is not None), key=lambda item: item[1]))
#: Tree parameters that can make the tree learner draw random numbers -> the test of a value.
RANDOM_TREE_PARAMS: dict[str, Callable[[Mapping[str, Any], str], bool]] = {
    name: row.random for name, row in ROLES.items() if row.random is not None}
#: Parameters a comparison config refuses in ``params`` -> the reason.
COMPARE_RESERVED: dict[str, str] = {name: row.compare for name, row in ROLES.items() if row.compare is not None}
#: LightGBM objective name (lower case) -> the engine's loss family.
OBJECTIVE_FAMILIES: dict[str, str] = {name: family for family, o in OBJECTIVES.items() for name in o.names}
#: Loss family -> the metrics that measure what it fits.
FITTING_METRICS: dict[str, tuple[str, ...]] = {family: o.fitting_metrics for family, o in OBJECTIVES.items()}
