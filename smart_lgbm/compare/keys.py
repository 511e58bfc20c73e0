"""The keys of a comparison config's tables, each with what it sets.

:mod:`smart_lgbm.compare.config` accepts exactly these keys (an unknown one is refused
naming the accepted ones), and the documentation's config reference is generated from
them, the method kinds (:func:`smart_lgbm.compare.config.kinds`) and the sampler specs
(:data:`smart_lgbm.samplers.registry.SPECS`): one source for what is accepted and what is
documented.  Each value is one line: what the key sets, then its default in brackets.
"""

from __future__ import annotations

__all__ = ["DATA_KEYS", "DATA_SOURCES", "EXPERIMENT_KEYS", "METHOD_KEYS", "PEER_KIND_DOCS", "STOCK_KIND_DOCS",
           "TOP_KEYS"]

#: Top-level keys of a config file.
TOP_KEYS: dict[str, str] = {
    "output": "folder of the tables, records and plots, relative to the config file's folder (\"results\")",
    "rounds": "boosting rounds of every method; experiments and methods may set their own (100)",
    "seeds": "seeds of the methods that sample at random, an integer or a list ([0])",
    "target": "a method label or a finite number: the quality every method is timed to "
              "(the first stock_full method)",
    "target_at": "\"best\": the target method's best quality; \"final\": its quality after its last round (\"best\")",
    "tolerance": "absolute slack of \"reaches the target\", in the metric's units (0)",
    "time_budget": "stop each method but the target after this multiple of the target method's training time "
                   "(no budget)",
    "equal_time": "shares of the reference's time to the target at which the equal-time table compares the "
                  "methods ([0.25, 0.5, 1.0])",
    "metric": "default metric of the experiments, e.g. \"auc\", \"binary_logloss\", \"ndcg@10\" (none)",
    "warmup": "run each method once briefly before timing it, so that compilation is not timed (true)",
    "progress_seconds": "at most one progress line per run this often; -1: none (10)",
    "params": "table of LightGBM parameters shared by every method and experiment ({})",
    "methods": "the [methods.LABEL] tables: one per method to compare (required)",
    "experiments": "the [[experiments]] tables: one per data set (required)",
}

#: Keys of an ``[[experiments]]`` table; unset ones take the top-level value.
EXPERIMENT_KEYS: dict[str, str] = {
    "name": "the experiment's name and its folder in the output folder: letters, digits, _ . - (required)",
    "data": "where the data come from: an inline table with a 'source' key (required)",
    "metric": "the metric every method is measured with on the validation data (the top-level metric)",
    "rounds": "boosting rounds of this experiment's methods (the top-level rounds)",
    "method_rounds": "table of method label = rounds, for this experiment only ({})",
    "seeds": "seeds of this experiment (the top-level seeds)",
    "target": "as the top-level key, for this experiment",
    "target_at": "as the top-level key, for this experiment",
    "tolerance": "as the top-level key, for this experiment",
    "time_budget": "as the top-level key, for this experiment",
    "equal_time": "as the top-level key, for this experiment",
    "params": "LightGBM parameters of this experiment, merged over the top-level [params] ({})",
    "methods": "labels of the methods this experiment runs (all methods)",
}

#: Keys every ``[methods.LABEL]`` table takes, whatever its kind; the kind adds its own.
METHOD_KEYS: dict[str, str] = {
    "kind": "what the method runs: one of the kinds below (the label, when the label is a kind)",
    "params": "extra LightGBM parameters of this method only; for XGBoost and CatBoost methods, that library's "
              "parameters ({})",
    "seeds": "this method's own seeds (the experiment's)",
    "rounds": "this method's own boosting rounds (the experiment's)",
    "time_budget": "this method's own time budget (the experiment's)",
}

#: What the stock LightGBM kinds run (the engine kinds are described by their samplers).
STOCK_KIND_DOCS: dict[str, str] = {
    "stock_full": "lightgbm.train on every row: the reference",
    "stock_bagging": "lightgbm.train with bagging (bagging_freq = 1)",
    "stock_goss": "lightgbm.train with GOSS (data_sample_strategy = \"goss\")",
    "stock_quantized": "lightgbm.train with quantised gradients (use_quantized_grad = true)",
}

#: What the other libraries' kinds run (the ``peers`` extra; docs/compare.md maps the
#: experiment's LightGBM parameters onto theirs).
PEER_KIND_DOCS: dict[str, str] = {
    "xgboost_hist": "xgboost.train with tree_method = \"hist\" and leaf-wise trees; its params are XGBoost's",
    "catboost": "catboost.CatBoost with plain boosting and symmetric trees; its params are CatBoost's",
}

#: Every key of a ``data`` table; which keys a source takes is :data:`DATA_SOURCES`.
DATA_KEYS: dict[str, str] = {
    "source": "where the data come from: \"bundled\", \"synthetic\", \"svmlight\", \"lightgbm\", \"csv\" or "
              "\"parquet\" (required)",
    "name": "the bundled data set: \"a9a\", \"digits\", \"higgs_sample\" or \"rank_sample\" (required)",
    "generator": "the generator: \"dense_binary\", \"dense_multiclass\", \"dense_regression\", "
                 "\"mixed_categorical\", \"mslr_like\" or \"yahoo_like\" (required)",
    "n_rows": "rows to generate, before the train/validation split (required)",
    "n_features": "features to generate (136; dense_multiclass, dense_regression: 40; yahoo_like: 700; "
                  "mixed_categorical: 36 numerical ones, plus its 4 categorical columns)",
    "n_classes": "classes of the dense_multiclass generator, at least 2 (5)",
    "train": "the training file, relative to the config file's folder (required)",
    "valid": "the validation file; without it the training file is split (none)",
    "train_query": "the training file's query sizes, LightGBM's .query format (<train>.query)",
    "valid_query": "the validation file's query sizes (<valid>.query)",
    "label": "the label column (required)",
    "group": "the query-id column, for ranking data (none)",
    "features": "the feature columns (every column but label and group)",
    "categorical": "the categorical feature columns, split on by category as LightGBM's categorical_feature "
                   "does; text and pandas category columns are categorical without it (none)",
    "test_size": "share of the rows (whole queries for ranking) split off for validation without 'valid' (0.2)",
    "seed": "seed of the split, and of a generator (0)",
    "max_rows": "keep only the first rows (whole queries) of each split, for a quick look (all rows)",
}

#: The keys each data source takes.
DATA_SOURCES: dict[str, tuple[str, ...]] = {
    "bundled": ("source", "name", "max_rows"),
    "synthetic": ("source", "generator", "n_rows", "n_features", "n_classes", "seed", "test_size", "max_rows"),
    "svmlight": ("source", "train", "valid", "test_size", "seed", "max_rows"),
    "lightgbm": ("source", "train", "valid", "train_query", "valid_query", "test_size", "seed", "max_rows"),
    "csv": ("source", "train", "valid", "label", "group", "features", "categorical", "test_size", "seed",
            "max_rows"),
    "parquet": ("source", "train", "valid", "label", "group", "features", "categorical", "test_size", "seed",
                "max_rows"),
}
