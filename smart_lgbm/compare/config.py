"""TOML configs of ``smart-lgbm run|compare``: schema, validation and defaults.

A config is a TOML file; every error names the table and key at fault, e.g.
``[methods.fo] unknown key 'rat'; accepted: kind, params, rate, rho, rounds, seeds, time_budget``.
Relative paths (``output``, data files) are relative to the config file's folder, so a
config works from any working directory.  ``docs/compare.md`` describes the layout; in short::

    output = "../results/quick"   # folder of tables, records and plots
    rounds = 300                  # boosting rounds of every method (methods, experiments may override)
    seeds = [0, 1, 2]             # seeds of the methods that sample at random
    target = "stock_full"         # method whose quality is the target, or a number
    target_at = "best"            # the target method's best quality, or its "final" one
    tolerance = 0.002             # slack when testing "reaches the target"

    [params]                      # LightGBM parameters shared by all methods and experiments
    learning_rate = 0.1
    num_leaves = 31

    [methods.stock_full]          # label; ``kind`` defaults to the label when it is a kind
    rounds = 1000                 # a long run: its best quality is the target
    [methods.fo]
    kind = "first_order"
    rate = 0.1
    rounds = 2000                 # cheaper iterations: more of them
    time_budget = 1.0             # ... but stop after stock_full's training time

    [[experiments]]
    name = "a9a"
    metric = "binary_logloss"
    data = { source = "bundled", name = "a9a" }
    params = { objective = "binary", sigmoid = 2.0 }
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from .. import _lightgbm
from .._engine import COMPARE_RESERVED, FITTING_METRICS
from .._validation import Boolean, Interval, Param
from .config_values import NUMBER as _NUMBER
from .config_values import ConfigError as ConfigError  # (re-exported: the package's config errors)
from .config_values import ConfigFileError as ConfigFileError
from .config_values import ConfigTypeError as ConfigTypeError
from .config_values import INT_MAX, _check_keys, _fraction, _int, _path, _seeds, _str, _type_name, _typed, check_name
from .config_values import error_text as error_text
from ..metrics import ALIASES as _METRIC_ALIASES
from ..metrics import METRICS as _METRICS
from ..samplers import registry as _samplers
from . import peers as _peers
from .keys import DATA_SOURCES, EXPERIMENT_KEYS, METHOD_KEYS, TOP_KEYS


# --------------------------------------------------------------------------- schema

#: Method kinds of stock LightGBM (``lightgbm.train``); the engine's kinds are the sampler
#: registry's names (:func:`engine_kinds`), so a sampler added there is a kind here.
STOCK_KINDS = ("stock_full", "stock_bagging", "stock_goss", "stock_quantized")
#: Method kinds of other libraries (XGBoost, CatBoost: the ``peers`` extra), :mod:`.peers`.
PEER_KINDS = _peers.PEER_KINDS

_FRACTION = (Interval(Real, 0, 1, closed="neither"),)
#: A stock kind's keys: LightGBM's own sampling parameters, with defaults that make stock
#: sampling comparable with the engine's default rate of 0.1.  An engine kind's keys are
#: its sampler's parameters (:data:`smart_lgbm.samplers.registry.SPECS`) in their TOML form.
_STOCK_OPTIONS: dict[str, tuple[Param, ...]] = {
    "stock_full": (),
    "stock_bagging": (Param("bagging_fraction", _FRACTION, 0.1, "LightGBM's bagging_fraction (bagging_freq = 1)"),),
    "stock_goss": (Param("top_rate", _FRACTION, 0.05, "GOSS's share of rows of largest gradient"),
                   Param("other_rate", _FRACTION, 0.05, "GOSS's share of the other rows, drawn at random")),
    "stock_quantized": (
        Param("num_grad_quant_bins", (Interval(Integral, 2, 64, "both"),), 4,
              "LightGBM's num_grad_quant_bins (use_quantized_grad = true)"),
        Param("quant_train_renew_leaf", (Boolean(),), False, "LightGBM's quant_train_renew_leaf"),
        Param("stochastic_rounding", (Boolean(),), True, "LightGBM's stochastic_rounding")),
}
# Every kind also takes the common keys (keys.METHOD_KEYS).  The table name ([methods.LABEL]) is the method's label.
_METHOD_COMMON = tuple(METHOD_KEYS)


def engine_kinds() -> tuple[str, ...]:
    """Method kinds run by ``smart_lgbm.train``: the sampler registry's names."""
    return _samplers.sampler_names()


def kinds() -> tuple[str, ...]:
    """Every method kind: the stock ones, the engine's, then the other libraries'."""
    return STOCK_KINDS + engine_kinds() + PEER_KINDS


def kind_options(kind: str) -> tuple[Param, ...]:
    """The keys a method of ``kind`` takes besides the common ones, as :class:`Param` (in
    the form a TOML config writes them, :meth:`Param.toml`)."""
    if kind in _STOCK_OPTIONS:
        return _STOCK_OPTIONS[kind]
    if kind in _peers.PEER_OPTIONS:
        return _peers.PEER_OPTIONS[kind]
    return tuple(p.toml() for p in _samplers.SPECS[kind].params)

_TOP_KEYS = tuple(TOP_KEYS)
_EXPERIMENT_KEYS = tuple(EXPERIMENT_KEYS)
TARGET_AT = ("best", "final")
#: Default shares of the reference method's time-to-target at which the equal-time table
#: compares every method's quality.
EQUAL_TIME = (0.25, 0.5, 1.0)

BUNDLED = ("a9a", "digits", "higgs_sample", "rank_sample")
GENERATORS = ("dense_binary", "dense_multiclass", "dense_regression", "mixed_categorical", "mslr_like", "yahoo_like")
#: generator -> (default n_features, minimum n_features)
_GENERATOR_FEATURES = {"dense_binary": (136, 16), "dense_multiclass": (40, 16), "dense_regression": (40, 16),
                       "mixed_categorical": (36, 16),
                       "mslr_like": (136, 4), "yahoo_like": (700, 20)}
FILE_SOURCES = ("svmlight", "lightgbm", "csv", "parquet")
SOURCES = ("bundled", "synthetic", *FILE_SOURCES)
_DATA_KEYS = DATA_SOURCES

# Shared LightGBM parameters that a method or the experiment sets itself (giving them in
# [params] would silently change what a method means) are refused with the reason: the
# ``compare`` column of smart_lgbm/_engine/param_roles.py, COMPARE_RESERVED.

_NDCG = re.compile(r"^ndcg@([1-9][0-9]*)$")


@dataclass(frozen=True)
class DataSpec:
    """Where an experiment's data come from (validated; paths are absolute)."""

    source: str
    name: str | None = None
    generator: str | None = None
    n_rows: int | None = None
    n_features: int | None = None
    seed: int = 0
    test_size: float = 0.2
    train: Path | None = None
    valid: Path | None = None
    train_query: Path | None = None
    valid_query: Path | None = None
    label: str | None = None
    group: str | None = None
    features: tuple[str, ...] | None = None
    max_rows: int | None = None
    #: classes of the ``dense_multiclass`` generator (None for every other source)
    n_classes: int | None = None
    #: the CSV/Parquet columns declared categorical (text and pandas ``category`` columns
    #: are categorical without it)
    categorical: tuple[str, ...] | None = None

    #: Fields that records written before they existed do not hold: left out of a setup
    #: (:func:`smart_lgbm.compare.store.setup_of`) while unset, so such records still merge.
    LATER_FIELDS = ("n_classes", "categorical")

    def describe(self) -> str:
        """One line for logs and tables, e.g. ``synthetic dense_binary (n_rows=3000000, seed=0)``."""
        if self.source == "bundled":
            return f"bundled {self.name}"
        if self.source == "synthetic":
            classes = f", n_classes={self.n_classes}" if self.n_classes is not None else ""
            return f"synthetic {self.generator} (n_rows={self.n_rows}{classes}, seed={self.seed})"
        return f"{self.source} {self.train}" + (f" + {self.valid}" if self.valid else "")


@dataclass(frozen=True)
class MethodSpec:
    """One method of a comparison: a stock LightGBM variant or an engine sampler."""

    label: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    #: this method's boosting rounds (None: the experiment's)
    rounds: int | None = None
    #: stop once training took this multiple of the target method's training time
    time_budget: float | None = None

    @property
    def is_stock(self) -> bool:
        """Whether ``lightgbm.train`` runs it."""
        return self.kind in STOCK_KINDS

    @property
    def is_peer(self) -> bool:
        """Whether another library (XGBoost, CatBoost) runs it; then ``params`` are that library's."""
        return self.kind in PEER_KINDS

    @property
    def lgb_params(self) -> dict[str, Any]:
        """This method's own LightGBM parameters (a peer method has none: its ``params`` are its library's)."""
        return {} if self.is_peer else self.params


@dataclass(frozen=True)
class Experiment:
    """One data set with everything needed to compare the methods on it.

    ``rounds`` is the default of every method; a method's own ``rounds`` and the
    experiment's ``method_rounds`` override it (see :meth:`rounds_of`).  The target is
    ``target`` (a method label, or a number), by default the first ``stock_full`` method;
    ``target_at`` says which of that method's qualities: its ``"best"`` or its ``"final"``.
    """

    name: str
    data: DataSpec
    metric: str
    rounds: int
    seeds: tuple[int, ...]
    target: float | str | None
    params: dict[str, Any]
    methods: tuple[MethodSpec, ...]
    tolerance: float = 0.0
    target_at: str = "best"
    method_rounds: dict[str, int] = field(default_factory=dict)
    time_budget: float | None = None
    equal_time: tuple[float, ...] = EQUAL_TIME

    @property
    def higher_is_better(self) -> bool:
        return metric_higher_is_better(self.metric)

    def method(self, label: str) -> MethodSpec:
        for m in self.methods:
            if m.label == label:
                return m
        raise ConfigError(f"[experiments.{self.name}] no method {label!r}; methods: {', '.join(self.labels)}")

    @property
    def labels(self) -> list[str]:
        return [m.label for m in self.methods]

    @property
    def target_method(self) -> str | None:
        """Label of the method whose quality is the target (None for a number or no stock_full)."""
        if isinstance(self.target, str):
            return self.target
        if self.target is None:
            return next((m.label for m in self.methods if m.kind == "stock_full"), None)
        return None

    def rounds_of(self, method: MethodSpec) -> int:
        """Boosting rounds of ``method``: ``method_rounds``, else its own ``rounds``, else the experiment's."""
        return self.method_rounds.get(method.label, method.rounds or self.rounds)

    def budget_of(self, method: MethodSpec) -> float | None:
        """``method``'s time budget as a multiple of the target method's training time, or None.

        Its own ``time_budget``, else the experiment's; the target method has none (its
        training time is what budgets are multiples of).
        """
        if method.label == self.target_method:
            return None
        return method.time_budget if method.time_budget is not None else self.time_budget


@dataclass(frozen=True)
class CompareConfig:
    """A whole validated config file."""

    path: Path | None
    output: Path
    experiments: tuple[Experiment, ...]
    progress_seconds: float = 10.0
    warmup: bool = True

    def experiment(self, name: str) -> Experiment:
        for e in self.experiments:
            if e.name == name:
                return e
        names = ", ".join(e.name for e in self.experiments)
        raise ConfigError(f"no experiment {name!r}; experiments: {names}")


def metric_higher_is_better(metric: str) -> bool:
    """Whether larger values of ``metric`` (``auc``, ``ndcg@10``, ``binary_logloss``...) are better."""
    if _NDCG.match(metric):
        return True
    return _METRICS[_METRIC_ALIASES.get(metric, metric)][1]


def _metric(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ConfigTypeError(f"{where} key 'metric' must be a string, got {_type_name(value)} {value!r}")
    name = value.strip().lower()
    if _NDCG.match(name) or _METRIC_ALIASES.get(name, name) in _METRICS:
        return _METRIC_ALIASES.get(name, name)
    accepted = ", ".join([*sorted(_METRICS), "ndcg@K"])
    raise ConfigError(f"{where} key 'metric' is {value!r}; accepted: {accepted}")


def check_metric_fits(metric: str, objective: str, family: str, where: str) -> None:
    """Refuse a metric that does not measure what ``objective`` (of ``family``) fits
    (the fitting metrics of each objective family: smart_lgbm/_engine/param_roles.py, OBJECTIVES)."""
    accepted = FITTING_METRICS.get(family)
    if accepted is None:
        return
    name = "ndcg@K" if _NDCG.match(metric) else metric
    if name not in accepted:
        raise ConfigError(f"{where} metric {metric!r} does not fit objective {objective!r}; "
                          f"metrics that fit it: {', '.join(accepted)}")


def _check_objective(exp_name: str, metric: str, params: dict[str, Any], methods: list[MethodSpec],
                     rounds: int) -> None:
    """The engine's own parameter checks and the metric/objective fit, at load time.

    Each engine method's parameters go through :func:`smart_lgbm._engine.config.make_config`, the
    check ``smart_lgbm.train`` runs first, so a refused objective or parameter names the
    method before anything trains.  Stock-only objectives (no engine method) are left to
    LightGBM, which the pre-flight run asks before training.
    """
    from .._engine import canonicalize, make_config, resolve_loss

    where = f"[experiments.{exp_name}]"
    # The comparison's own rule first (stricter than LightGBM's: the metric must measure what
    # the objective fits), for every method in config order; then the engine's checks.
    for method in methods:
        merged = canonicalize({**params, **method.lgb_params})
        objective = str(merged.get("objective", "regression"))
        try:
            loss = resolve_loss(merged)
        except (TypeError, ValueError):
            continue  # an objective only stock LightGBM knows: LightGBM judges the metric
        check_metric_fits(metric, objective, loss.lightgbm_objective or "", f"{where} method {method.label!r}:")
    for method in methods:
        try:
            if method.is_peer:
                # every LightGBM parameter mappable, the objective one whose loss the engine has
                _peers.library_params(method.kind, canonicalize({**params, **lightgbm_metric_params(metric)}),
                                      method.options, method.params)
            elif not method.is_stock:
                make_config({**params, **method.params, **lightgbm_metric_params(metric)}, rounds)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where} method {method.label!r}: {exc}") from None


def lightgbm_metric_params(metric: str) -> dict[str, Any]:
    """LightGBM ``metric``/``eval_at`` parameters that evaluate exactly ``metric``."""
    match = _NDCG.match(metric)
    if match:
        return {"metric": "ndcg", "eval_at": [int(match.group(1))]}
    return {"metric": metric}


# --------------------------------------------------------------------------- sections


def _lgb_params(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigTypeError(f"{where} must be a table of LightGBM parameters, got {_type_name(value)}")
    known = {alias: main for main, names in _lightgbm.param_aliases().items() for alias in names}
    out: dict[str, Any] = {}
    for key, val in value.items():
        if key not in known:
            raise ConfigError(f"{where} unknown LightGBM parameter {key!r} (see LightGBM's Parameters page)")
        main = known[key]
        if main in COMPARE_RESERVED:
            raise ConfigError(f"{where} key {key!r} cannot be set here: {COMPARE_RESERVED[main]}")
        scalar = (str, int, float, bool)
        # lightgbm.train takes a value, a list of values, or a list of lists of values
        # (interaction_constraints = [[0, 1], [2, 3]]); anything deeper it cannot write.
        items = val if isinstance(val, list) else [val]
        flat = [v for item in items for v in (item if isinstance(item, list) else [item])]
        if not all(isinstance(v, scalar) for v in flat):
            raise ConfigTypeError(f"{where} key {key!r} must be a string, number, boolean, list of those or list "
                                  f"of lists of those (as lightgbm.train takes it), got {val!r}")
        if any(isinstance(v, float) and not math.isfinite(v) for v in flat):
            raise ConfigError(f"{where} key {key!r} must be finite, got {val!r}")
        if any(isinstance(v, int) and not isinstance(v, bool) and not -INT_MAX - 1 <= v <= INT_MAX for v in flat):
            raise ConfigError(f"{where} key {key!r} must hold integers in LightGBM's range [{-INT_MAX - 1}, "
                              f"{INT_MAX}], got {val!r}")
        out[key] = val
    return out


def _method(label: str, value: Any) -> MethodSpec:
    where = f"[methods.{label}]"
    if not isinstance(value, dict):
        raise ConfigTypeError(f"{where} must be a table, got {_type_name(value)}")
    all_kinds = kinds()
    if "kind" in value:
        kind = _str(value, "kind", where, all_kinds)
    elif label in all_kinds:
        kind = label
    else:
        raise ConfigError(f"{where} missing key 'kind' (the label is not a kind); accepted values: {', '.join(all_kinds)}")
    keys = kind_options(kind)
    _check_keys(value, [*_METHOD_COMMON, *(p.name for p in keys)], where)
    stock, peer = kind in STOCK_KINDS, kind in PEER_KINDS
    # a stock or peer method records its defaults; a sampler's are its constructor's
    options: dict[str, Any] = {p.name: p.default for p in keys} if stock or peer else {}
    for param in keys:
        if param.name in value:
            try:
                param.check(value[param.name], label=f"key {param.name!r}")
            except TypeError as exc:
                raise ConfigTypeError(f"{where} {exc}") from None
            except ValueError as exc:
                raise ConfigError(f"{where} {exc}") from None
            options[param.name] = param.from_toml(value[param.name])  # as written ("off": None)
    if kind == "stock_goss" and options["top_rate"] + options["other_rate"] > 1.0:
        raise ConfigError(f"{where} keys 'top_rate' + 'other_rate' must be <= 1")
    if peer:
        try:
            _peers.check_options(kind, options)
            params = _peers.peer_params(kind, value.get("params", {}))
        except TypeError as exc:
            raise ConfigTypeError(f"{where} {exc}") from None
        except ValueError as exc:
            raise ConfigError(f"{where} {exc}") from None
    else:
        if not stock:
            _check_sampler(kind, options, where)
        params = _lgb_params(value.get("params", {}), f"{where} params")
    return MethodSpec(label=label, kind=kind, options=options, params=params, seeds=_seeds(value, where),
                      rounds=_rounds(value, where, default=None), time_budget=_budget(value, where, None))


def _check_sampler(kind: str, options: dict[str, Any], where: str) -> None:
    """Build the sampler once so that what its keys cannot say alone (``rate`` and ``rho``
    both given) fails at load time, not mid-run."""
    try:
        _samplers.make_sampler(kind, **options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} {exc}") from None


def _data(value: Any, where: str, base: Path) -> DataSpec:
    if not isinstance(value, dict):
        raise ConfigTypeError(f"{where} must be a table, got {_type_name(value)}")
    source = _str(value, "source", where, SOURCES)
    _check_keys(value, _DATA_KEYS[source], where)
    max_rows = _int(value, "max_rows", where, 2)
    if source == "bundled":
        return DataSpec(source, name=_str(value, "name", where, BUNDLED), max_rows=max_rows)
    test_size = _fraction(value, "test_size", where, 0.2)
    seed = _int(value, "seed", where, 0, default=0)
    if source == "synthetic":
        generator = _str(value, "generator", where, GENERATORS)
        if "n_rows" not in value:
            raise ConfigError(f"{where} missing key 'n_rows' (the number of rows to generate)")
        default_features, min_features = _GENERATOR_FEATURES[generator]
        n_classes = None
        if generator == "dense_multiclass":
            n_classes = _int(value, "n_classes", where, 2, default=5)
        elif "n_classes" in value:
            raise ConfigError(f"{where} key 'n_classes' is for generator 'dense_multiclass' only, not {generator!r}")
        return DataSpec(source, generator=generator, n_rows=_int(value, "n_rows", where, 10),
                        n_features=_int(value, "n_features", where, min_features, default=default_features),
                        seed=seed, test_size=test_size, max_rows=max_rows, n_classes=n_classes)
    if "train" not in value:
        raise ConfigError(f"{where} missing key 'train' (path of the training file)")
    if source == "parquet" and not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
        raise ConfigError(f"{where} key 'source': reading Parquet needs pyarrow or fastparquet, and neither is installed")
    spec: dict[str, Any] = dict(train=_path(value, "train", where, base), valid=_path(value, "valid", where, base),
                                test_size=test_size, seed=seed, max_rows=max_rows)
    if source == "lightgbm":
        spec.update(train_query=_path(value, "train_query", where, base),
                    valid_query=_path(value, "valid_query", where, base))
    if source in ("csv", "parquet"):
        if "label" not in value:
            raise ConfigError(f"{where} missing key 'label' (the label column)")
        spec.update(label=_str(value, "label", where), group=_str(value, "group", where))
        if "features" in value:
            feats = value["features"]
            if not isinstance(feats, list) or not feats or not all(isinstance(f, str) for f in feats):
                raise ConfigTypeError(f"{where} key 'features' must be a non-empty list of column names, got {feats!r}")
            for column_key, what in (("label", "labels"), ("group", "query ids")):
                if spec[column_key] is not None and spec[column_key] in feats:
                    raise ConfigError(f"{where} key 'features' lists the {column_key} column {spec[column_key]!r}: "
                                      f"the model would train on its own {what}; drop it from 'features'")
            repeated = sorted({f for f in feats if feats.count(f) > 1})
            if repeated:
                raise ConfigError(f"{where} key 'features' repeats {', '.join(map(repr, repeated))}")
            spec["features"] = tuple(feats)
        if "categorical" in value:
            cats = value["categorical"]
            if not isinstance(cats, list) or not cats or not all(isinstance(c, str) for c in cats):
                raise ConfigTypeError(f"{where} key 'categorical' must be a non-empty list of column names, "
                                      f"got {cats!r}")
            not_features = [c for c in cats if c in (spec["label"], spec["group"])
                            or ("features" in spec and c not in spec["features"])]
            if not_features:
                raise ConfigError(f"{where} key 'categorical' lists {', '.join(map(repr, not_features))}, which "
                                  "is not a feature column (the label, the group, or a column 'features' leaves out)")
            repeated = sorted({c for c in cats if cats.count(c) > 1})
            if repeated:
                raise ConfigError(f"{where} key 'categorical' repeats {', '.join(map(repr, repeated))}")
            spec["categorical"] = tuple(cats)
    return DataSpec(source, **spec)


def _target(value: Any, where: str) -> float | str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigTypeError(f"{where} key 'target' must be a number or a method label, got {_type_name(value)} {value!r}")
    if isinstance(value, (int, float)) and not math.isfinite(value):
        # nan compares false with every quality: each method would be "not reached"
        raise ConfigError(f"{where} key 'target' must be a finite number or a method label, got {value!r}")
    return float(value) if isinstance(value, (int, float)) else value


def _tolerance(table: Mapping[str, Any], where: str, default: float) -> float:
    if "tolerance" not in table:
        return default
    value = float(_typed(table, "tolerance", _NUMBER, where, "a number >= 0"))
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{where} key 'tolerance' must be a finite number >= 0, got {value!r}")
    return value


def _rounds(table: Mapping[str, Any], where: str, default: Any) -> Any:
    return _int(table, "rounds", where, 1, default=default, maximum=INT_MAX)


def _budget(table: Mapping[str, Any], where: str, default: float | None) -> float | None:
    if "time_budget" not in table:
        return default
    value = float(_typed(table, "time_budget", _NUMBER, where, "a number > 0 (a multiple of the target's time)"))
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{where} key 'time_budget' must be a finite number > 0 (a multiple of the target method's "
                          f"training time), got {value!r}")
    return value


def _target_at(table: Mapping[str, Any], where: str, default: str) -> str:
    return _str(table, "target_at", where, TARGET_AT, default=default)


def _equal_time(table: Mapping[str, Any], where: str, default: tuple[float, ...]) -> tuple[float, ...]:
    if "equal_time" not in table:
        return default
    value = table["equal_time"]
    ok = isinstance(value, list) and value and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v <= 100 for v in value)
    if not ok:
        raise ConfigError(f"{where} key 'equal_time' must be a non-empty list of numbers in (0, 100] (shares of the "
                          f"reference method's time to the target, e.g. [0.25, 0.5, 1.0]), got {value!r}")
    return tuple(sorted({float(v) for v in value}))


def _method_rounds(exp: Mapping[str, Any], where: str, labels: list[str]) -> dict[str, int]:
    value = exp.get("method_rounds", {})
    if not isinstance(value, dict):
        raise ConfigTypeError(f"{where} key 'method_rounds' must be a table of method label = rounds, "
                              f"got {_type_name(value)}")
    for label in value:
        if label not in labels:
            raise ConfigError(f"{where} key 'method_rounds' names {label!r}, which is not one of its methods: "
                              f"{', '.join(labels)}")
        _int(value, label, f"{where} method_rounds", 1, maximum=INT_MAX)
    return dict(value)


def _check_budgets(exp: Experiment, where: str) -> None:
    """A time budget is a multiple of the target method's time: there must be one."""
    budgeted = [m.label for m in exp.methods if exp.budget_of(m) is not None]
    target = exp.target_method
    if budgeted and target is None:
        raise ConfigError(f"{where} methods {', '.join(budgeted)} have a 'time_budget', a multiple of the target "
                          "method's training time, but the target is not a method: set 'target' to a method label")
    own = [m.label for m in exp.methods if m.label == target and m.time_budget is not None]
    if own:
        raise ConfigError(f"[methods.{own[0]}] key 'time_budget' cannot be set on the target method: budgets are "
                          "multiples of its training time")


def parse_config(raw: Mapping[str, Any], base_dir: str | os.PathLike = ".", path: Path | None = None) -> CompareConfig:
    """Validate a config already read from TOML.

    Parameters
    ----------
    raw : mapping
        The TOML document as a dict.
    base_dir : path-like, default="."
        Folder that relative paths are relative to (the config file's folder).
    path : Path, optional
        The config file, kept for the records.

    Returns
    -------
    CompareConfig

    Raises
    ------
    ConfigError, ConfigTypeError, ConfigFileError
        Subclasses of ValueError, TypeError and FileNotFoundError whose messages name the
        table and key, and list the accepted keys or values.
    """
    base = Path(base_dir).resolve()
    where = "[config]"
    _check_keys(raw, _TOP_KEYS, where)
    output_value = _str(raw, "output", where, default="results")
    output = Path(os.path.expanduser(output_value))
    output = Path(os.path.normpath(output if output.is_absolute() else base / output))
    rounds = _rounds(raw, where, default=100)
    seeds = _seeds(raw, where) or (0,)
    target = _target(raw["target"], where) if "target" in raw else None
    metric = _metric(raw["metric"], where) if "metric" in raw else None
    tolerance = _tolerance(raw, where, 0.0)
    target_at = _target_at(raw, where, "best")
    time_budget = _budget(raw, where, None)
    equal_time = _equal_time(raw, where, EQUAL_TIME)
    warmup = _typed(raw, "warmup", (bool,), where, "true or false") if "warmup" in raw else True
    progress = 10.0
    if "progress_seconds" in raw:
        progress = float(_typed(raw, "progress_seconds", _NUMBER, where, "a number of seconds"))
    shared = _lgb_params(raw.get("params", {}), "[params]")

    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, dict) or not methods_raw:
        raise ConfigError(f"{where} needs at least one [methods.LABEL] table; kinds: {', '.join(kinds())}")
    for i, label in enumerate(methods_raw):
        check_name(label, f"[methods.{label}] label", "the files of 'smart-lgbm run'", list(methods_raw)[:i])
    methods = {label: _method(label, value) for label, value in methods_raw.items()}

    exps_raw = raw.get("experiments")
    if not isinstance(exps_raw, list) or not exps_raw or not all(isinstance(e, dict) for e in exps_raw):
        raise ConfigError(f"{where} needs at least one [[experiments]] table (name, data, metric, ...)")
    experiments: list[Experiment] = []
    for i, exp in enumerate(exps_raw):
        name = exp.get("name", f"#{i + 1}")
        ewhere = f"[experiments.{name}]"
        _check_keys(exp, _EXPERIMENT_KEYS, ewhere)
        name = _str(exp, "name", ewhere, default=None)
        if name is None:
            raise ConfigError(f"{ewhere} missing key 'name'")
        check_name(name, f"{ewhere} key 'name'", "the experiment's folder", [e.name for e in experiments])
        if "data" not in exp:
            raise ConfigError(f"{ewhere} missing key 'data'; accepted sources: {', '.join(SOURCES)}")
        data = _data(exp["data"], f"{ewhere} data", base)
        exp_metric = _metric(exp["metric"], ewhere) if "metric" in exp else metric
        if exp_metric is None:
            raise ConfigError(f"{ewhere} missing key 'metric' (e.g. \"auc\", \"binary_logloss\", \"ndcg@10\")")
        labels = list(methods)
        if "methods" in exp:
            chosen = exp["methods"]
            if not isinstance(chosen, list) or not chosen or not all(isinstance(m, str) for m in chosen):
                raise ConfigTypeError(f"{ewhere} key 'methods' must be a non-empty list of method labels, got {chosen!r}")
            for m in chosen:
                if m not in methods:
                    raise ConfigError(f"{ewhere} key 'methods' names {m!r}; defined methods: {', '.join(methods)}")
            labels = chosen
        exp_target = _target(exp["target"], ewhere) if "target" in exp else target
        if isinstance(exp_target, str) and exp_target not in labels:
            raise ConfigError(f"{ewhere} key 'target' names {exp_target!r}, which is not one of its methods: {', '.join(labels)}")
        params = {**shared, **_lgb_params(exp.get("params", {}), f"{ewhere} params")}
        exp_rounds = _rounds(exp, ewhere, default=rounds)
        _check_objective(name, exp_metric, params, [methods[m] for m in labels], exp_rounds)
        experiment = Experiment(
            name=name, data=data, metric=exp_metric, rounds=exp_rounds,
            seeds=_seeds(exp, ewhere) or seeds, target=exp_target, params=params,
            methods=tuple(methods[m] for m in labels), tolerance=_tolerance(exp, ewhere, tolerance),
            target_at=_target_at(exp, ewhere, target_at), method_rounds=_method_rounds(exp, ewhere, labels),
            time_budget=_budget(exp, ewhere, time_budget), equal_time=_equal_time(exp, ewhere, equal_time),
        )
        _check_budgets(experiment, ewhere)
        experiments.append(experiment)
    return CompareConfig(path=path, output=output, experiments=tuple(experiments), progress_seconds=progress,
                         warmup=warmup)


def load_config(path: str | os.PathLike) -> CompareConfig:
    """Read and validate a TOML config file.

    Raises
    ------
    ConfigFileError
        If the file does not exist.
    ConfigError
        If it is not valid TOML or fails validation (the message names the key).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigFileError(f"config file not found: {path}")
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(raw, base_dir=path.resolve().parent, path=path.resolve())
