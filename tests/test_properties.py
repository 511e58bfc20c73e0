"""Differential property tests: generated data and parameters against the engine's promises.

Hypothesis draws the data (row counts around the kernels' block edges, NaN, infinities and
zeros, float32 and float64, C and Fortran order, dense and CSR, a categorical column,
weights with zeros, query groups for ranking) and the parameters (objective, ``num_leaves``
up to beyond 64, ``max_bin``, ``min_data_in_leaf``, missing-value handling, monotone
constraints, ``feature_fraction``, seeds, 1-3 threads, the serial or the parallel kernel
twins) and checks:

* ``Full()`` writes stock ``lightgbm.train``'s model byte for byte;
* every sampler's tracked scores are the saved model's predictions;
* the same seed gives the same model at any thread count (and with either kernel twin);
* the fused pass gives the unfused path's model;
* ``refit_leaves`` leaf values are the all-rows Newton step;
* refusals are ``ValueError``/``TypeError`` naming the parameter.

Budgets (profiles registered in ``tests/conftest.py``): CI runs the ``ci`` profile, a fixed
derandomized set of examples per property (the same every run; a few minutes on two
cores).  Before a release run the long random search::

    SMART_LGBM_HYPOTHESIS=release scripts/test tests/test_properties.py

(400 examples per property, new ones every run; about ten minutes on two cores).  Hypothesis
prints the failing example and a ``@reproduce_failure`` blob; every failure found becomes
a plain regression test (``tests/test_property_regressions.py``) and is fixed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis", reason="the test extra is not installed (pip install 'smart-lgbm[test]')")
from hypothesis import assume, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import smart_lgbm as sl  # noqa: E402
from smart_lgbm._lightgbm import leaf_values_of, split_model_string  # noqa: E402
from smart_lgbm._engine import canonicalize, resolve_loss  # noqa: E402
from smart_lgbm._numba.row_kernel import parallel_from  # noqa: E402

#: Row counts at and around the kernels' block edges (the walk's 32-, 64-, 128- and 1024-row
#: blocks), with any small count between them
EDGE_ROWS = (31, 32, 33, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025)
OBJECTIVES = ("binary", "regression", "multiclass", "lambdarank", "huber", "cross_entropy")


@dataclass
class Case:
    """One generated training problem."""

    X: Any
    y: np.ndarray
    params: dict[str, Any]
    weight: np.ndarray | None = None
    group: np.ndarray | None = None
    categorical: list[int] = field(default_factory=list)
    rounds: int = 3

    def dataset(self, **kwargs: Any) -> lgb.Dataset:
        return lgb.Dataset(self.X, self.y, weight=self.weight, group=self.group,
                           categorical_feature=self.categorical or "auto", **kwargs)


def _labels(rng: np.random.Generator, objective: str, signal: np.ndarray) -> np.ndarray:
    if objective == "binary":
        return (signal > np.median(signal)).astype(np.float64)
    if objective == "multiclass":
        return np.digitize(signal, np.quantile(signal, [1 / 3, 2 / 3])).astype(np.float64)
    if objective == "lambdarank":
        return np.digitize(signal, np.quantile(signal, [0.5, 0.8, 0.95])).astype(np.float64)
    if objective == "cross_entropy":
        return 1.0 / (1.0 + np.exp(-signal))
    return signal * 3.0


@st.composite
def cases(draw: Any, objectives: tuple[str, ...] = OBJECTIVES, monotone: bool = True,
          feature_fraction: bool = True) -> Case:
    """A training problem: data and parameters (module docstring)."""
    objective = draw(st.sampled_from(objectives))
    n = draw(st.one_of(st.sampled_from(EDGE_ROWS), st.integers(12, 400)))
    f = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, f))
    signal = X[:, 0] + 0.5 * X[:, -1] + rng.normal(size=n) * draw(st.sampled_from([0.0, 0.3, 1.0]))
    categorical: list[int] = []
    if f > 1 and draw(st.booleans()):
        X[:, 0] = rng.integers(0, draw(st.integers(2, 12)), n)  # a categorical column of small integers
        categorical = [0]
    for value, share in ((np.nan, draw(st.sampled_from([0.0, 0.05, 0.3]))), (0.0, draw(st.sampled_from([0.0, 0.2, 0.6]))),
                         (np.inf, draw(st.sampled_from([0.0, 0.0, 0.02]))), (-np.inf, draw(st.sampled_from([0.0, 0.02])))):
        if share:
            columns = range(1 if categorical else 0, f)
            for j in columns:
                X[rng.random(n) < share, j] = value
    X = X.astype(draw(st.sampled_from([np.float32, np.float64])))
    layout = draw(st.sampled_from(["C", "F", "csr"]))
    data: Any = sp.csr_matrix(X) if layout == "csr" else (
        np.asfortranarray(X) if layout == "F" else np.ascontiguousarray(X))
    weights = draw(st.sampled_from(["none", "uniform", "zeros"]))
    weight = None if weights == "none" else rng.uniform(0.2, 3.0, n)
    if weights == "zeros":
        assert weight is not None
        weight[rng.random(n) < 0.3] = 0.0
        weight[0] = 1.0  # (never every row: LightGBM's objectives need some weight)
    group = None
    if objective == "lambdarank":
        sizes = []
        left = n
        while left > 0:
            size = min(left, int(rng.integers(1, 40)))
            sizes.append(size)
            left -= size
        group = np.array(sizes)
    params: dict[str, Any] = {
        "objective": objective, "verbosity": -1, "force_col_wise": True,
        "num_leaves": draw(st.sampled_from([2, 3, 7, 31, 63, 64, 65, 100])),
        "max_bin": draw(st.sampled_from([3, 7, 15, 63, 255])),
        "min_data_in_leaf": draw(st.integers(1, 30)),
        "learning_rate": draw(st.sampled_from([0.05, 0.3, 1.0])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }
    if objective == "multiclass":
        params["num_class"] = 3
    missing = draw(st.sampled_from(["default", "no_missing", "zero_as_missing"]))
    if missing == "no_missing":
        params["use_missing"] = False
    elif missing == "zero_as_missing":
        params["zero_as_missing"] = True
    if monotone and not categorical and objective != "multiclass" and draw(st.booleans()):
        params["monotone_constraints"] = [int(v) for v in rng.integers(-1, 2, f)]
    if feature_fraction and draw(st.booleans()):
        params["feature_fraction"] = draw(st.sampled_from([0.5, 0.8]))
    return Case(data, _labels(rng, objective, signal), params, weight, group, categorical,
                draw(st.integers(1, 5)))


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _samplers() -> st.SearchStrategy:
    rates = st.sampled_from([0.1, 0.3, 0.7, 1.0])
    refit = st.booleans()
    return st.one_of(
        st.builds(sl.Uniform, rates, refit), st.builds(sl.WeightTrimming, st.sampled_from([0.0, 0.1, 0.5]), refit),
        st.builds(lambda r, f: sl.FirstOrder(rate=r, refit_leaves=f), rates, refit),
        st.builds(lambda r, f: sl.MVS(rate=r, refit_leaves=f), rates, refit),
        st.builds(lambda r, f: sl.SecondOrder(rate=r, refit_leaves=f), rates, refit),
        st.builds(lambda r, f: sl.LossBased(rate=r, refit_leaves=f), rates, refit),
        st.builds(lambda f: sl.FirstOrder(rate=sl.AdaptiveRate(window=2, threshold=1e-3), refit_leaves=f), refit),
        st.builds(lambda f: sl.FirstOrder(rho=2.0, refit_leaves=f), refit),
        st.just(sl.SecondOrder(rate=0.3, anchor_lag=1, eta=0.5)),
    )


def _trees(booster: lgb.Booster) -> list[str]:
    return split_model_string(booster.model_to_string())[1]


# --------------------------------------------------------------------------- the properties


@given(case=cases(feature_fraction=False), threads=st.sampled_from([1, 2, 3]))
def test_full_writes_stock_lightgbm_s_model_byte_for_byte(case, threads):
    # (feature_fraction's draws: the engine re-derives a seed per iteration; and with more than
    # one thread LightGBM's initial score sums in thread order unless deterministic=true)
    params = {**case.params, "num_threads": threads, **({"deterministic": True} if threads > 1 else {})}
    try:
        stock = _quiet(lgb.train, params, case.dataset(), case.rounds)
    except lgb.basic.LightGBMError as exc:
        # what stock refuses the engine refuses too (with its own clear error or LightGBM's)
        with pytest.raises((ValueError, TypeError, lgb.basic.LightGBMError)):
            _quiet(sl.train, params, case.dataset(), case.rounds, sampler=sl.Full())
        assume(False)
        raise AssertionError from exc  # (not reached)
    ours = _quiet(sl.train, params, case.dataset(), case.rounds, sampler=sl.Full())
    assert ours.model_to_string() == stock.model_to_string()


def _feval_keeper() -> tuple[list, Any]:
    seen: list = []

    def feval(preds: np.ndarray, dataset: lgb.Dataset) -> tuple[str, float, bool]:
        seen.append(np.array(preds))
        return "kept", 0.0, False

    return seen, feval


@given(case=cases(monotone=False), sampler=_samplers(), threads=st.sampled_from([1, 3]), parallel=st.booleans())
def test_every_samplers_tracked_scores_are_the_saved_models_predictions(case, sampler, threads, parallel):
    params = {**case.params, "num_threads": threads}
    dtrain = case.dataset(free_raw_data=False)
    seen, feval = _feval_keeper()
    with parallel_from(0 if parallel else 8192):
        booster = _quiet(sl.train, params, dtrain, case.rounds, sampler=sampler, valid_sets=[dtrain], feval=feval)
    predicted = lgb.Booster(model_str=booster.model_to_string()).predict(case.X)
    np.testing.assert_allclose(seen[-1], predicted, rtol=1e-9, atol=1e-12)


@given(case=cases(), sampler=_samplers())
def test_the_same_seed_gives_the_same_model_at_any_thread_count(case, sampler):
    if sampler.refit_leaves:  # (refused together: the refit may break the constraints)
        case.params.pop("monotone_constraints", None)
    runs = []
    for threads, parallel in ((1, False), (2, True), (3, False), (3, True)):
        with parallel_from(0 if parallel else 8192):
            runs.append(_trees(_quiet(sl.train, {**case.params, "num_threads": threads}, case.dataset(), case.rounds,
                                      sampler=sampler)))
    assert all(run == runs[0] for run in runs[1:])


def _unfused(sampler: sl.Sampler) -> sl.Sampler:
    """The same sampler, taking the unfused path (its fused pass's declaration withdrawn)."""
    cls = type(f"Unfused{type(sampler).__name__}", (type(sampler),), {"_fused_statistics": lambda self: None})
    copy = cls.__new__(cls)
    copy.__dict__.update({k: v for k, v in vars(sampler).items() if k != "_workspace"})
    return copy


@given(case=cases(), sampler=_samplers(), threads=st.sampled_from([1, 3]))
def test_the_fused_pass_gives_the_unfused_paths_model(case, sampler, threads):
    if sampler.refit_leaves:  # (refused together: the refit may break the constraints)
        case.params.pop("monotone_constraints", None)
    params = {**case.params, "num_threads": threads}
    fused = _quiet(sl.train, params, case.dataset(), case.rounds, sampler=sampler)
    unfused = _quiet(sl.train, params, case.dataset(), case.rounds, sampler=_unfused(sampler))
    assert _trees(fused) == _trees(unfused)


@given(case=cases(objectives=("binary", "regression", "huber", "cross_entropy"), monotone=False),
       sampler=st.sampled_from(["uniform", "first_order", "mvs", "second_order", "weight_trimming"]),
       lambda_l1=st.sampled_from([0.0, 0.5]), lambda_l2=st.sampled_from([0.0, 1.0, 10.0]),
       max_delta_step=st.sampled_from([0.0, 0.3]))
def test_refit_leaf_values_are_the_all_rows_newton_step(case, sampler, lambda_l1, lambda_l2, max_delta_step):
    params = {**case.params, "num_threads": 1, "lambda_l1": lambda_l1, "lambda_l2": lambda_l2,
              "max_delta_step": max_delta_step}
    options = {"weight_trimming": {"alpha": 0.2}}.get(sampler, {"rate": 0.3})
    booster = _quiet(sl.train, params, case.dataset(), case.rounds + 1,
                     sampler=sl.make_sampler(sampler, refit_leaves=True, **options))
    loss = resolve_loss(canonicalize(params))
    from smart_lgbm.losses import Target

    target = Target(label=case.y.astype(np.float32).astype(np.float64),
                    weight=None if case.weight is None else case.weight.astype(np.float32).astype(np.float64))
    trees = _trees(booster)
    model = lgb.Booster(model_str=booster.model_to_string())
    leaves = model.predict(case.X, pred_leaf=True).reshape(len(case.y), -1)
    for t in range(1, len(trees)):  # (tree 0 carries the initial score folded into its values)
        raw = model.predict(case.X, raw_score=True, num_iteration=t)
        grad, hess = np.empty(len(case.y), np.float32), np.empty(len(case.y), np.float32)
        loss.compute_gradients(np.ascontiguousarray(raw, dtype=np.float64), target, grad, hess)
        values = leaf_values_of(trees[t])
        width = values.shape[0]
        g_sum = np.bincount(leaves[:, t], weights=grad.astype(np.float64), minlength=width)
        h_sum = np.bincount(leaves[:, t], weights=hess.astype(np.float64), minlength=width)
        if width == 1:
            continue  # (a stump: nothing was split)
        g = np.sign(g_sum) * np.maximum(np.abs(g_sum) - lambda_l1, 0.0)
        denominator = h_sum + lambda_l2
        expected = np.divide(-g, denominator, out=np.zeros_like(g), where=denominator > 0)
        if max_delta_step > 0:
            expected = np.clip(expected, -max_delta_step, max_delta_step)
        expected *= params["learning_rate"]
        np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-9, err_msg=f"tree {t}")


#: (parameters, the name the error must say): values the engine refuses
_REFUSED = st.one_of(
    st.builds(lambda v: ({"boosting": v}, "boosting"), st.sampled_from(["dart", "rf", "goss"])),
    st.builds(lambda v: ({"data_sample_strategy": "goss", "top_rate": v}, "goss"), st.floats(0.1, 0.5)),
    st.builds(lambda f, q: ({"bagging_fraction": f, "bagging_freq": q}, "bagging_fraction"),
              st.floats(0.01, 0.99), st.integers(1, 5)),
    st.builds(lambda v: ({"objective": v}, "objective"),
              st.sampled_from(["quantile", "mae", "poisson", "tweedie", "gamma", "fair", "mape", "multiclassova",
                               "xentlambda", "rank_xendcg", "none", "nonsense"])),
    st.builds(lambda k, v: ({k: v}, k), st.sampled_from(["learning_rate", "lambda_l2", "max_delta_step", "sigmoid"]),
              st.sampled_from([float("nan"), float("inf"), -float("inf")])),
    st.builds(lambda k, v: ({k: v}, k), st.sampled_from(["num_leaves", "max_bin", "min_data_in_leaf", "max_depth"]),
              st.one_of(st.integers(2**31, 2**40), st.integers(-(2**40), -(2**31) - 1))),
    st.builds(lambda s: ({"seed": s}, "seed"), st.one_of(st.integers(-(2**20), -1), st.sampled_from([1.5, "x", True]))),
    st.builds(lambda v: ({"scale_pos_weight": v}, "scale_pos_weight"), st.sampled_from([0.0, -1.0, float("nan")])),
    st.just(({"objective": "binary", "is_unbalance": True, "scale_pos_weight": 2.0}, "scale_pos_weight")),
    st.builds(lambda k, v: ({k: v}, k), st.sampled_from(["num_leaves", "max_bin"]), st.integers(-5, 1)),
    st.just(({"linear_tree": True}, "linear_tree")),
    st.just(({"objective": "regression", "reg_sqrt": True}, "reg_sqrt")),
    st.builds(lambda v: ({"metric": v}, "metric"), st.sampled_from(["nonsense", "ndcg@", " auc", "cross_entropy_lambda"])),
)

_BAD_SAMPLERS = st.one_of(
    st.builds(lambda v: (lambda: sl.FirstOrder(rate=v), "rate"),
              st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0001), st.just("half"), st.just(True))),
    st.builds(lambda v: (lambda: sl.MVS(rho=v), "rho"), st.one_of(st.floats(max_value=0.0), st.just("x"))),
    st.builds(lambda v: (lambda: sl.WeightTrimming(alpha=v), "alpha"),
              st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0), st.just(None))),
    st.builds(lambda v: (lambda: sl.Uniform(rate=v, refit_leaves="yes"), "refit_leaves"), st.just(0.5)),
    st.builds(lambda v: (lambda: sl.AdaptiveRate(window=v), "window"), st.one_of(st.integers(max_value=0), st.just(1.5))),
    st.builds(lambda v: (lambda: sl.AdaptiveRate(start=0.5, maximum=v), "maximum"), st.floats(0.01, 0.49)),
)


@given(refused=_REFUSED, objective=st.sampled_from(["binary", "regression"]))
def test_refusals_are_value_or_type_errors_naming_the_parameter(refused, objective):
    params, name = refused
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    # the engine's refusals (sampler="auto", the default, hands parameters only stock LightGBM
    # trains, and these 60 rows, to lightgbm.train)
    with pytest.raises((ValueError, TypeError)) as info:
        _quiet(sl.train, {"objective": objective, "verbosity": -1, **params}, lgb.Dataset(X, y), 2, sampler=sl.Full())
    assert name in str(info.value), str(info.value)


@given(bad=_BAD_SAMPLERS)
def test_sampler_refusals_are_value_or_type_errors_naming_the_parameter(bad):
    make, name = bad
    with pytest.raises((ValueError, TypeError)) as info:
        make()
    assert name in str(info.value), str(info.value)
