"""Leaf values refitted on every training row (``refit_leaves``, :mod:`smart_lgbm._engine.refit`):
each leaf's value is LightGBM's Newton step from the sums of all its rows, the tracked scores
are the saved model's, fused equals unfused, and the run is the same at any thread count."""

from __future__ import annotations

import lightgbm as lgb
import numba
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._engine import refit
from smart_lgbm.samplers import Sampler

N = 40_000  # three of the refit sums' blocks of 16,384 rows, the last one partial
BASE = {"num_leaves": 15, "learning_rate": 0.2, "verbosity": -1, "seed": 5, "min_data_in_leaf": 20}


def _data(objective: str, n: int = N):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    signal = X[:, 0] - 0.6 * X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)
    if objective == "binary":
        return X, (signal > 0.3).astype(float)
    if objective == "multiclass":
        return X, np.digitize(signal, [-0.5, 0.5]).astype(float)
    return X, signal


class Spy(Sampler):
    """Wraps a sampler; keeps the tracked raw scores and the gradients of every iteration."""

    def __init__(self, inner: Sampler) -> None:
        self.inner = inner
        self.history_length = inner.history_length
        self.needs_leaves = inner.needs_leaves
        self.refit_leaves = inner.refit_leaves
        self.raw: list[np.ndarray] = []
        self.grad: list[np.ndarray] = []
        self.hess: list[np.ndarray] = []

    def sample(self, state, rng):
        self.raw.append(state.raw.copy())
        self.grad.append(state.grad.copy())
        self.hess.append(state.hess.copy())
        return self.inner.sample(state, rng)


def _newton_steps_hold(booster, spy, X, params, rule) -> bool:
    """Whether every leaf of iterations 1-5 is the rule's step from its training rows' sums."""
    n = X.shape[0]
    k_trees = booster.num_model_per_iteration()
    leaves = booster.predict(X, pred_leaf=True).reshape(n, -1)
    for it in range(1, 6):  # (iteration 0 has the initial score folded in)
        grad = spy.grad[it].reshape(n, k_trees).astype(np.float64)
        hess = spy.hess[it].reshape(n, k_trees).astype(np.float64)
        for k in range(k_trees):
            tree = it * k_trees + k
            leaf = leaves[:, tree]
            width = leaf.max() + 1
            expected = rule.outputs(np.bincount(leaf, grad[:, k], width), np.bincount(leaf, hess[:, k], width))
            got = np.array([booster.get_leaf_output(tree, j) for j in range(width)])
            if not np.allclose(got, expected * params["learning_rate"], rtol=1e-9, atol=1e-15):
                return False
    return True


@pytest.mark.parametrize("objective,extra", [
    ("binary", {}),
    ("binary", {"lambda_l2": 3.0, "lambda_l1": 0.5}),
    ("regression", {"max_delta_step": 0.05}),
    ("multiclass", {"num_class": 3}),
])
def test_each_leaf_value_is_the_newton_step_of_all_its_rows(objective, extra):
    """The saved model's leaves against the rule recomputed from the iteration's gradients of
    every training row; the sample-fitted values (the same run without refit_leaves) fail it."""
    X, y = _data(objective)
    params = {**BASE, "objective": objective, **extra}
    rule = refit.LeafRule(extra.get("lambda_l1", 0.0), extra.get("lambda_l2", 0.0), extra.get("max_delta_step", 0.0))
    spy = Spy(sl.FirstOrder(rate=0.1, refit_leaves=True))
    assert _newton_steps_hold(sl.train(params, lgb.Dataset(X, y), 6, sampler=spy), spy, X, params, rule)
    plain = Spy(sl.FirstOrder(rate=0.1))
    assert not _newton_steps_hold(sl.train(params, lgb.Dataset(X, y), 6, sampler=plain), plain, X, params, rule)


SAMPLERS = {
    "first": lambda: sl.FirstOrder(rate=0.1, refit_leaves=True),
    "first-large": lambda: sl.FirstOrder(rate=0.4, refit_leaves=True),  # no sampled rows read back
    "mvs-auto": lambda: sl.MVS(rate=sl.AdaptiveRate(window=2, threshold=1e-6), refit_leaves=True),
    "uniform": lambda: sl.Uniform(0.2, refit_leaves=True),
    "second-anchor": lambda: sl.SecondOrder(rate=0.15, anchor_lag=1, eta=0.5, refit_leaves=True),
    "trimming": lambda: sl.WeightTrimming(alpha=0.2, refit_leaves=True),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("objective", ["binary", "multiclass"])
def test_saved_model_predicts_the_tracked_scores(name, objective, tmp_path):
    X, y = _data(objective)
    params = {**BASE, "objective": objective, **({"num_class": 3} if objective == "multiclass" else {})}
    spy = Spy(SAMPLERS[name]())
    valid = (X[:5000] + 0.1, y[:5000])
    evals: dict = {}
    booster = sl.train(params, lgb.Dataset(X, y), 8, sampler=spy,
                       valid_sets=[lgb.Dataset(*valid, reference=lgb.Dataset(X, y))],
                       callbacks=[lgb.record_evaluation(evals)])
    path = tmp_path / "model.txt"
    booster.save_model(path)
    loaded = lgb.Booster(model_file=path)
    for t in (1, 4, 7):
        raw = loaded.predict(X, raw_score=True, num_iteration=t)
        np.testing.assert_array_equal(raw.reshape(spy.raw[t].shape), spy.raw[t])
    assert booster.model_to_string() == loaded.model_to_string()


def test_sets_without_features_in_memory_get_the_refitted_outputs():
    """Training and validation sets LightGBM reads (no raw features kept): their outputs come
    through the leaves ``fit`` reports, mapped to the refitted values."""
    X, y = _data("binary")
    params = {**BASE, "objective": "binary"}
    train = lgb.Dataset(X, y, params={"verbosity": -1}).construct()  # free_raw_data: no features kept
    valid = lgb.Dataset(X[:3000], y[:3000], reference=train).construct()
    spy = Spy(sl.FirstOrder(rate=0.2, refit_leaves=True))
    evals: dict = {}
    with pytest.warns(sl.SlowPathWarning):
        booster = sl.train(params, train, 6, sampler=spy, valid_sets=[valid], callbacks=[lgb.record_evaluation(evals)])
    np.testing.assert_array_equal(booster.predict(X, raw_score=True, num_iteration=5), spy.raw[5])
    p = booster.predict(X[:3000])
    logloss = -np.mean(y[:3000] * np.log(p) + (1 - y[:3000]) * np.log(1 - p))
    assert evals["valid_0"]["binary_logloss"][-1] == pytest.approx(logloss, rel=1e-12)


def _unfused(sampler: Sampler) -> Sampler:
    cls = type(f"Unfused{type(sampler).__name__}", (type(sampler),), {"_fused_statistics": lambda self: None})
    copy = cls.__new__(cls)
    copy.__dict__.update({k: v for k, v in vars(sampler).items() if k != "_workspace"})
    return copy


@pytest.mark.parametrize("name", ["first", "mvs-auto", "uniform"])
def test_fused_equals_unfused(name):
    X, y = _data("binary")
    params = {**BASE, "objective": "binary"}
    fused = sl.train(params, lgb.Dataset(X, y), 6, sampler=SAMPLERS[name]()).model_to_string()
    assert fused == sl.train(params, lgb.Dataset(X, y), 6, sampler=_unfused(SAMPLERS[name]())).model_to_string()


def test_same_model_at_any_thread_count():
    X, y = _data("binary")
    models = set()
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            model = sl.train({**BASE, "objective": "binary", "num_threads": threads}, lgb.Dataset(X, y), 6,
                             sampler=sl.FirstOrder(rate=0.1, refit_leaves=True)).model_to_string()
            models.add(model.split("\nparameters:\n")[0])  # (the parameters name the thread count)
    finally:
        numba.set_num_threads(before)
    assert len(models) == 1


def test_an_iteration_that_draws_every_row_is_stock_lightgbms():
    """Nothing is refitted when every row is drawn: Uniform(1.0) stays stock LightGBM."""
    X, y = _data("binary", 5000)
    params = {**BASE, "objective": "binary", "num_threads": 1}
    ours = sl.train(params, lgb.Dataset(X, y), 8, sampler=sl.Uniform(1.0, refit_leaves=True))
    stock = lgb.train(params, lgb.Dataset(X, y), 8)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), stock.predict(X, raw_score=True), rtol=0, atol=1e-9)


@pytest.mark.parametrize("bad,match", [
    ({"path_smooth": 1.0}, "path_smooth"),
    ({"monotone_constraints": [1, 0, 0, 0, 0, 0]}, "monotone_constraints"),
])
def test_refused_parameters(bad, match):
    X, y = _data("binary", 2000)
    with pytest.raises(ValueError, match=match):
        sl.train({**BASE, "objective": "binary", **bad}, lgb.Dataset(X, y), 2,
                 sampler=sl.FirstOrder(rate=0.2, refit_leaves=True))
    # the same through a reset_parameter callback midway
    with pytest.raises(ValueError, match=match):
        sl.train({**BASE, "objective": "binary"}, lgb.Dataset(X, y), 3, sampler=sl.FirstOrder(rate=0.2, refit_leaves=True),
                 callbacks=[lgb.reset_parameter(**{key: [value] * 3 for key, value in bad.items()})])


def test_bad_values_and_the_custom_objective_are_refused():
    with pytest.raises(TypeError, match="refit_leaves must be True or False"):
        sl.FirstOrder(rate=0.1, refit_leaves=1)
    with pytest.raises(ValueError, match="SmartObjective cannot take .*refit_leaves=True"):
        sl.SmartObjective("binary", sl.MVS(rate=0.1, refit_leaves=True))
    assert repr(sl.Uniform(0.2, refit_leaves=True)) == "Uniform(rate=0.2, refit_leaves=True)"
    assert repr(sl.Uniform(0.2)) == "Uniform(rate=0.2)"


def _iteration_trees(num_leaves: int):
    """The last iteration's 3 trees of a multiclass booster, its data's codes and book."""
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures

    X, y = _data("multiclass")
    ds = lgb.Dataset(X, y, params={"verbosity": -1, "min_data_in_leaf": 5}).construct()
    booster = lgb.train({**BASE, "objective": "multiclass", "num_class": 3, "num_leaves": num_leaves,
                         "min_data_in_leaf": 5, "num_threads": 1}, ds, 3)
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    texts = L.tree_bodies(booster.model_to_string())[-3:]
    return texts, Forest.from_tree_texts(texts), book, book.encode(RawFeatures.from_data(X))


def test_the_one_pass_walk_and_sums_equal_the_walk_then_the_sums():
    """``walk_leaf_sums`` (the bitmask walk with the sums in the same pass) writes the walk's
    leaves and the doubles ``leaf_sums`` gives from them, over several blocks, at either twin."""
    from smart_lgbm._engine import _refit_kernels
    from smart_lgbm._engine.walk import add_coded_outputs

    texts, forest, book, codes = _iteration_trees(31)
    coded = book.coded_forest(forest)
    assert coded.bitmask is not None
    rng = np.random.default_rng(2)
    grad = rng.standard_cauchy((N, 3)).astype(np.float32)
    hess = np.abs(rng.standard_cauchy((N, 3))).astype(np.float32)
    widths = [v.shape[0] for v in forest.leaf_values]
    walked = np.full((N, 3), -1, dtype=np.int32)
    add_coded_outputs(codes, coded, np.zeros((N, 3)), walked)
    expected = refit.leaf_sums(walked, grad, hess, widths)
    for twin in ("serial", "parallel"):
        leaves = np.full((N, 3), -1, dtype=np.int32)
        kernel = _refit_kernels.walk_leaf_sums
        tables = np.zeros((-(-N // 16_384), 3, 2, max(widths)))
        getattr(kernel, twin)(codes.codes, coded.bitmask.tstart, coded.bitmask.tcol, coded.bitmask.table,
                              coded.bitmask.leaf_index, grad, hess, leaves, tables)
        np.testing.assert_array_equal(leaves, walked)
        got = refit.walk_leaf_sums(codes, coded.bitmask, grad, hess, leaves, widths)
        for (g, h), (eg, eh) in zip(got, expected, strict=True):
            assert g.tobytes() == eg.tobytes() and h.tobytes() == eh.tobytes()
    # arrays the kernels would overrun are refused before they run
    with pytest.raises(ValueError, match="leaves must be a int32 array of shape"):
        refit.leaf_sums(walked[:, :2], grad, hess, widths)
    with pytest.raises(ValueError, match="grad must be a float32"):
        refit.walk_leaf_sums(codes, coded.bitmask, grad.astype(np.float64), hess, walked, widths)
    # and the sums are each leaf's sums (the same doubles as adding the rows in row order)
    for k in range(3):
        g = np.zeros(widths[k])
        for i in np.flatnonzero(walked[:, k] == 5):
            g[5] += np.float64(grad[i, k])
        assert expected[k][0][5] != 0.0 and np.isclose(expected[k][0][5], g[5], rtol=1e-12)


@pytest.mark.parametrize("num_leaves", [31, 90])  # the bitmask walk's forest and the lockstep walk's
def test_patched_forests_equal_the_rewritten_texts_parsed(num_leaves):
    """The refit's trees are patched with their new values, not parsed and coded again: the
    patched forest and coded forest equal those of the rewritten texts, array for array."""
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine.walk import Forest

    texts, forest, book, _ = _iteration_trees(num_leaves)
    rng = np.random.default_rng(4)
    values = [rng.normal(size=v.shape[0]) * 10.0 ** rng.integers(-20, 3, v.shape[0]) for v in forest.leaf_values]
    parsed = Forest.from_tree_texts([L.with_leaf_values(t, v) for t, v in zip(texts, values, strict=True)])
    patched = forest.with_leaf_values(values)
    for name in ("node_value", "threshold", "left", "right", "node_leaf", "roots", "depths"):
        assert getattr(patched, name).tobytes() == getattr(parsed, name).tobytes(), name
    assert all(a.tobytes() == b.tobytes() for a, b in zip(patched.leaf_values, parsed.leaf_values, strict=True))
    coded_patched = book.coded_forest(forest).with_leaf_values(patched)
    coded_parsed = book.coded_forest(parsed)
    assert (coded_parsed.bitmask is None) == (num_leaves > 64) == (coded_patched.bitmask is None)
    assert coded_patched.node_value.tobytes() == coded_parsed.node_value.tobytes()
    if coded_parsed.bitmask is not None:
        a, b = coded_patched.bitmask, coded_parsed.bitmask
        used = int(b.tstart[-1])  # (the tables' arrays are allocated for more entries than the trees use)
        assert a.tstart.tobytes() == b.tstart.tobytes() and a.tcol[:used].tobytes() == b.tcol[:used].tobytes()
        assert a.table[:256 * used].tobytes() == b.table[:256 * used].tobytes()
        assert a.leaf_value.tobytes() == b.leaf_value.tobytes() and a.leaf_index.tobytes() == b.leaf_index.tobytes()
    with pytest.raises(ValueError, match="leaves"):
        forest.with_leaf_values([values[0][:-1], *values[1:]])
