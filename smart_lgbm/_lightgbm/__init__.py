"""Every use of LightGBM internals lives in this package: private attributes, ``_LIB`` C-API
calls and model-string surgery.

Keeping them in one place makes the supported LightGBM range (see
:data:`SUPPORTED_LIGHTGBM`) a single thing to check and ``tests/test_lightgbm_internals.py``
pins each behaviour relied upon, so that a LightGBM upgrade that changes one fails loudly
there rather than silently in a model.  The rest of smart_lgbm imports what it needs from
this package's top level (``from . import _lightgbm``; ``_lightgbm.params_to_str(...)``).

One module per concern:

========================  =====================================================================
``versions``              the supported minor versions and the check at import
``_capi``                 the C library handle, error checks, C strings
``params``                parameter aliases, the ``key=value`` parameter string
``datasets``              C Dataset handles, owned subsets, fields, constructed copies
``network``               LightGBM's socket network
``binary_file``           bin mappers, parsed from the binary Dataset file LightGBM writes
``booster``               the tree-fitting Booster: reset, update, read outputs, park, roll back
``model_text``            model-string surgery: split, tree bodies, bias folding, assembly
``tree_text``             one tree body read into arrays as ``Tree(const char*)`` reads it
``raw_data``              the values ``predict`` reads from dense, pandas and Arrow input
``callbacks``             evaluation results, early stopping, ``CallbackEnv.model``
``sklearn``               the private pieces of :mod:`lightgbm.sklearn` the estimators reuse
``stock``                 a run handed to ``lightgbm.train``: its per-iteration record, LightGBM's logger
========================  =====================================================================

Versions 4.6 and 4.7 are both supported.  What differs between them is detected by feature,
not by version number, and kept to a few named places: the form of evaluation results
(:func:`evaluation_result`: tuples in 4.6, ``lightgbm.EvalResult`` in 4.7), the labels
LightGBM converts itself (``sklearn._label_passed_through``), Arrow tables
(:func:`is_pyarrow_table`) and the estimators' record of whether the training data had
feature names (:func:`sklearn_record_feature_names`, 4.7).  The scikit-learn ``fit``
signature (4.7 added ``eval_X``/``eval_y``) needs no branch: the estimators forward to the
installed ``LGBMModel.fit`` code (:func:`sklearn_fit_with_train`).

Why C-API calls and not the Python wrapper: every boosting iteration the engine builds a
subset Dataset, points its Booster at three Datasets in turn, reads scores (rewriting
leaf values when it needs leaves) and rolls a tree back.  The Python wrapper can do each
step (``Dataset.subset``, ``Booster.update(train_set=...)``, ``set_leaf_output``,
``rollback_one_iter``), but through Python Dataset objects and their bookkeeping
(parameter dicts, references, predictor set-up) per call, which would weigh on small data.
"""

from ._capi import _LIB as _LIB  # the C library and its error check, for tests and profiling scripts
from ._capi import _check as _check
from .binary_file import BinMapper, bin_mappers
from .booster import IterationTrees, OneIterationBooster, check_booster_params, merge_models
from .callbacks import (
    CallbackModel,
    best_score_of,
    evaluation_result,
    has_validation_sets,
    is_early_stopping_callback,
    refuse_training_evaluation,
)
from .datasets import (
    SubsetHandle,
    clear_field,
    constructed_like,
    dataset_params_conflict,
    free_owned,
    handle_of,
    has_group,
    has_init_score,
    has_positions,
    num_features,
    num_rows,
)
from .model_text import (
    assemble_model_string,
    exact_internal_values,
    fold_bias,
    leaf_values_of,
    model_note,
    model_with_objective,
    set_parameter_line,
    split_model_string,
    tree_bodies,
    tree_shrinkage,
    with_leaf_values,
    with_model_note,
    without_model_note,
)
from .network import network_free, network_init, reset_links
from .params import param_aliases, params_to_str
from .raw_data import dense_as_predicted, is_pyarrow_table, pandas_to_numpy
from .sklearn import (
    sklearn_check_label,
    sklearn_fit_with_train,
    sklearn_not_fitted_error,
    sklearn_process_params,
    sklearn_record_feature_names,
)
from .stock import StockIterations, log_info
from .tree_text import TreeArrays, parse_tree
from .versions import SUPPORTED_LIGHTGBM, SUPPORTED_MINOR_VERSIONS, check_version

__all__ = [
    "SUPPORTED_LIGHTGBM", "SUPPORTED_MINOR_VERSIONS", "check_version",
    "param_aliases", "params_to_str",
    "SubsetHandle", "clear_field", "constructed_like", "dataset_params_conflict", "free_owned", "handle_of", "has_group",
    "has_init_score", "has_positions", "num_features", "num_rows",
    "network_free", "network_init", "reset_links",
    "BinMapper", "bin_mappers",
    "IterationTrees", "OneIterationBooster", "check_booster_params", "merge_models",
    "assemble_model_string", "exact_internal_values", "fold_bias", "leaf_values_of", "model_note",
    "model_with_objective", "set_parameter_line", "split_model_string", "tree_bodies", "tree_shrinkage",
    "with_leaf_values", "with_model_note", "without_model_note",
    "StockIterations", "log_info",
    "TreeArrays", "parse_tree",
    "dense_as_predicted", "is_pyarrow_table", "pandas_to_numpy",
    "CallbackModel", "best_score_of", "evaluation_result", "has_validation_sets", "is_early_stopping_callback",
    "refuse_training_evaluation",
    "sklearn_check_label", "sklearn_fit_with_train", "sklearn_not_fitted_error", "sklearn_process_params",
    "sklearn_record_feature_names",
]
