"""The training run behind :func:`smart_lgbm.train`: every module of one boosting run.

The public entry points (:mod:`smart_lgbm.engine`, :mod:`smart_lgbm.objective`,
:mod:`smart_lgbm.sklearn`, :mod:`smart_lgbm.dask`, :mod:`smart_lgbm.compare`) use the names
this package exports below and none of its modules directly
(``tests/test_layout.py`` checks it).  What each module holds:

======================  ====================================================================
``training``            ``lightgbm.train``'s loop around the run: setup, callbacks,
                        evaluation, the final stock model
``config``              ``params`` read once into a frozen :class:`RunConfig`
``params``              aliases, the objective's loss, refusals, the Datasets' parameters
``param_roles``         what the engine does with each LightGBM parameter (one table)
``param_values``        LightGBM's spellings of flags, numbers and lists
``metric_params``       the metric parameters, read into the run's ``Evaluator``
``data``                the engine's view of the caller's Datasets
``run``                 :class:`BoostingRun`: tracked scores and the iteration,
                        draw -> fit -> update
``draw``                one iteration's draw (shared with ``SmartObjective``)
``update_plan``         where each set's new scores come from (a pure decision)
``updates``             one updater per source of the update plan
``sweep``               the gradient sweep: the next gradients in the walk's pass
``refit``               leaf values from every training row (``refit_leaves``)
``choice``              ``sampler="auto"``: the facts before the first tree, the choice
``stock``               ``sampler="auto"``'s run handed to ``lightgbm.train``
``continued``           continued training (``init_model``), ``keep_training_booster``
``walk/``               the compiled walks of the trees over codes and raw features
``_*_kernels``          the numba kernels beside each of their fronts
======================  ====================================================================

One iteration's data flow is drawn in ``docs/engine.md`` ("The modules").
"""

from .choice import ALLGATHER_TAG as AUTO_ALLGATHER_TAG
from .choice import auto_choice
from .config import RunConfig, make_config
from .draw import Gradients, check_sample, draw_iteration, draw_key, iteration_rng, stream_rng
from .metric_params import evaluator_for
from .param_roles import COMPARE_RESERVED, FITTING_METRICS, RANDOM_TREE_PARAMS
from .param_values import flag, integer, number, number_list
from .params import canonicalize, resolve_loss
from .training import check_training, numba_threads, train

__all__ = [
    "AUTO_ALLGATHER_TAG",
    "COMPARE_RESERVED",
    "FITTING_METRICS",
    "RANDOM_TREE_PARAMS",
    "Gradients",
    "RunConfig",
    "auto_choice",
    "canonicalize",
    "check_training",
    "check_sample",
    "draw_iteration",
    "draw_key",
    "evaluator_for",
    "flag",
    "integer",
    "iteration_rng",
    "make_config",
    "number",
    "number_list",
    "numba_threads",
    "resolve_loss",
    "stream_rng",
    "train",
]
