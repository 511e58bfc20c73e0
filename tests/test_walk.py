"""The raw-feature walk (smart_lgbm._engine.walk.forest, smart_lgbm._engine.walk.raw) against LightGBM's own predict.

Every check is exact: summing ``add_outputs`` over a stock model's iterations, in order and
from zeros, must give ``Booster.predict(raw_score=True)`` bit for bit after every
iteration, and the leaves must be ``predict(pred_leaf=True)``.
"""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from smart_lgbm import _lightgbm as L
from smart_lgbm._engine.walk import Forest, RawFeatures, add_outputs
from smart_lgbm._engine.walk._kernels import K_ZERO_THRESHOLD

K = K_ZERO_THRESHOLD
#: Values around LightGBM's zero threshold, which stock thresholds often sit on (±K).
TINY = np.array([K, -K, np.nextafter(K, 1.0), -np.nextafter(K, 1.0), 1e-35, -1e-35, 1e-36, -1e-300,
                 0.0, -0.0])


def _train(X, y, params, rounds, **dataset_kwargs):
    params = {"verbosity": -1, "num_threads": 1, "seed": 1, **params}
    return lgb.train(params, lgb.Dataset(X, y, params={"verbosity": -1}, **dataset_kwargs), rounds)


def _walk_all(booster: lgb.Booster, data, *, check=True) -> tuple[np.ndarray, np.ndarray]:
    """Walk every iteration of ``booster`` over ``data``; compare with predict as we go."""
    features = RawFeatures.from_data(data, pandas_categorical=booster.pandas_categorical)
    assert features is not None
    texts = L.tree_bodies(booster.model_to_string())
    k = booster.num_model_per_iteration()
    iterations = len(texts) // k
    n = features.num_rows
    out = np.zeros((n, k))
    leaves = np.zeros((n, len(texts)), dtype=np.int32)
    stock_leaves = booster.predict(data, pred_leaf=True).reshape(n, -1)
    for it in range(iterations):
        forest = Forest.from_tree_texts(texts[it * k:(it + 1) * k])
        leaves_it = np.full((n, k), -1, dtype=np.int32)
        add_outputs(features, forest, out, leaves_it)
        leaves[:, it * k:(it + 1) * k] = leaves_it
        if check:
            stock = booster.predict(data, raw_score=True, num_iteration=it + 1).reshape(n, k)
            assert np.array_equal(out, stock), f"iteration {it}: {np.abs(out - stock).max()}"
            assert np.array_equal(leaves_it, stock_leaves[:, it * k:(it + 1) * k]), f"iteration {it}"
    return out, leaves


# --------------------------------------------------------------------------- numerical


def _special_values(rng, n, d):
    """Normal data with NaN, exact zeros, tiny values around ±K and negatives mixed in."""
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.15] = 0.0
    X[rng.random((n, d)) < 0.1] = np.nan
    mask = rng.random((n, d)) < 0.1
    X[mask] = rng.choice(TINY, size=mask.sum())
    return X


@pytest.fixture(scope="module")
def numeric():
    rng = np.random.default_rng(0)
    X = _special_values(rng, 1500, 6)
    y = np.nan_to_num(X[:, 0]) + (X[:, 1] == 0) - 2 * np.isnan(X[:, 2]) + 0.3 * rng.normal(size=1500)
    Xv = _special_values(rng, 800, 6)
    return X, y, Xv


@pytest.mark.parametrize("params", [
    {},
    {"zero_as_missing": True},
    {"use_missing": False},
], ids=["missing-nan", "zero-as-missing", "no-missing"])
def test_numeric_special_values_in_all_dense_layouts(numeric, params):
    X, y, Xv = numeric
    booster = _train(X, y, {"objective": "regression", "num_leaves": 15, **params}, 12)
    missing = {n["missing_type"] for t in booster.dump_model()["tree_info"] for n in _nodes(t)}
    assert missing == ({"Zero"} if params.get("zero_as_missing") else
                       {"None"} if params.get("use_missing") is False else {"NaN"})
    for data in (Xv, np.asfortranarray(Xv), Xv.astype(np.float32), np.asfortranarray(Xv.astype(np.float32)),
                 X, sp.csr_matrix(Xv), sp.csc_matrix(Xv)):
        _walk_all(booster, data)


def _nodes(tree_info):
    stack, found = [tree_info["tree_structure"]], []
    while stack:
        node = stack.pop()
        if "split_index" in node:
            found.append(node)
            stack += [node["left_child"], node["right_child"]]
    return found


def test_thresholds_at_the_zero_threshold_and_values_around_it():
    # Features taking -1, 0, 1: LightGBM puts thresholds at exactly ±K, so the values
    # around K decide which side a row takes.
    rng = np.random.default_rng(1)
    X = rng.choice([-1.0, 0.0, 1.0], size=(2000, 3))
    y = (X[:, 0] == 0) + 0.5 * (X[:, 1] < 0) + 0.1 * rng.normal(size=2000)
    booster = _train(X, y, {"objective": "regression", "num_leaves": 6, "min_data_in_leaf": 5}, 8)
    thresholds = {n["threshold"] for t in booster.dump_model()["tree_info"] for n in _nodes(t)}
    assert thresholds <= {K, -K}
    grid = np.array(np.meshgrid(TINY, TINY, TINY)).reshape(3, -1).T
    for data in (grid, grid.astype(np.float32), np.asfortranarray(grid)):
        _walk_all(booster, data)


def test_missing_values_only_in_validation_data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1200, 4))
    booster = _train(X, X[:, 0] - X[:, 1] ** 2, {"objective": "regression", "num_leaves": 12}, 10)
    assert {n["missing_type"] for t in booster.dump_model()["tree_info"] for n in _nodes(t)} == {"None"}
    Xv = rng.normal(size=(600, 4))
    Xv[rng.random(Xv.shape) < 0.3] = np.nan
    Xv[rng.random(Xv.shape) < 0.1] = np.inf
    Xv[rng.random(Xv.shape) < 0.1] = -np.inf
    _walk_all(booster, Xv)


def test_other_numpy_dtypes_are_converted_as_lightgbm_converts_them():
    rng = np.random.default_rng(3)
    X = rng.integers(-(2**40), 2**40, size=(1000, 3))  # int64 beyond float32's exact range
    y = (X[:, 0] > 0).astype(float) + X[:, 1] / 2**40
    booster = _train(X.astype(np.float32), y, {"objective": "regression", "num_leaves": 8}, 6)
    features = RawFeatures.from_data(X)
    assert features.dense.dtype == np.float32 and features.is_copy
    assert features.copy_nbytes == X.shape[0] * X.shape[1] * 4
    _walk_all(booster, X)
    _walk_all(booster, (X > 0))  # bool
    _walk_all(booster, X.astype(np.int8))
    _walk_all(booster, X.astype(np.float16))


def test_deep_trees():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 8))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + np.cos(X[:, 2] * X[:, 3]) + 0.1 * rng.normal(size=3000)
    booster = _train(X, y, {"objective": "regression", "num_leaves": 255, "max_depth": -1,
                            "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0}, 6)
    depths = [_depth(t["tree_structure"]) for t in booster.dump_model()["tree_info"]]
    assert max(depths) >= 15 and max(t["num_leaves"] for t in booster.dump_model()["tree_info"]) == 255
    _walk_all(booster, rng.normal(size=(1000, 8)))


def _depth(node):
    return 0 if "leaf_index" in node else 1 + max(_depth(node["left_child"]), _depth(node["right_child"]))


# --------------------------------------------------------------------------- categorical


def test_categorical_features_by_index_on_numpy():
    rng = np.random.default_rng(5)
    n = 3000
    X = np.column_stack([rng.integers(0, 40, n), rng.normal(size=n), rng.integers(0, 6, n)]).astype(float)
    effect = rng.normal(size=40)
    y = effect[X[:, 0].astype(int)] + X[:, 1] + (X[:, 2] == 3) + 0.2 * rng.normal(size=n)
    booster = _train(X, y, {"objective": "regression", "num_leaves": 15, "max_cat_to_onehot": 4,
                            "min_data_per_group": 5, "cat_smooth": 1.0}, 15, categorical_feature=[0, 2])
    cat_nodes = [node for t in booster.dump_model()["tree_info"] for node in _nodes(t)
                 if node["decision_type"] == "=="]
    assert any("||" in str(node["threshold"]) for node in cat_nodes)  # many-vs-many bitsets
    odd = np.array([-1.0, -0.5, -0.9999, 0.3, 2.7, 3.0, 3.99, np.nan, 1e10, 2.0**31, 2.0**31 - 1,
                    2.0**31 - 0.5, -(2.0**31), -(2.0**31) - 1, np.inf, -np.inf, 31.9, 39.0, 40.0, 63.0,
                    64.0, 100.0, 1000.0, K, -K, 1e-40, -1e-40])
    Xv = np.column_stack([rng.choice(odd, 2000), rng.normal(size=2000), rng.choice(odd, 2000)])
    for data in (Xv, Xv.astype(np.float32), np.asfortranarray(Xv), sp.csr_matrix(np.nan_to_num(Xv, nan=7.0)),
                 sp.csc_matrix(np.nan_to_num(Xv, nan=7.0))):
        _walk_all(booster, data)


def test_pandas_categoricals_with_unseen_levels_and_nan():
    rng = np.random.default_rng(6)
    n = 2500
    levels = [f"c{i}" for i in range(25)]
    frame = pd.DataFrame({
        "cat": pd.Categorical(rng.choice(levels, n), categories=levels),
        "x": rng.normal(size=n),
        "small": pd.Categorical(rng.choice(["a", "b", "c"], n)),
        "count": rng.integers(0, 100, n).astype(np.int64),
    })
    effect = dict(zip(levels, rng.normal(size=25)))
    y = frame["cat"].map(effect).astype(float) + frame["x"] + (frame["small"] == "b") + frame["count"] / 50
    booster = _train(frame, y.to_numpy(), {"objective": "regression", "num_leaves": 15, "max_cat_to_onehot": 4,
                                          "min_data_per_group": 5, "cat_smooth": 1.0}, 15)
    assert booster.pandas_categorical == [levels, ["a", "b", "c"]]
    m = 1500
    valid = pd.DataFrame({
        # other category order, unseen levels and NaN
        "cat": pd.Categorical(rng.choice(levels[::-1] + ["new1", "new2", None], m),
                              categories=levels[::-1] + ["new1", "new2"]),
        "x": rng.normal(size=m),
        "small": pd.Categorical(rng.choice(["c", "a", "zz", None], m)),
        "count": rng.integers(-5, 120, m).astype(np.int64),
    })
    _walk_all(booster, valid)
    _walk_all(booster, frame)


def test_pandas_mixed_numeric_dtypes():
    rng = np.random.default_rng(7)
    n = 1500
    frame = pd.DataFrame({
        "i8": rng.integers(-100, 100, n).astype(np.int8),
        "u16": rng.integers(0, 60000, n).astype(np.uint16),
        "f32": rng.normal(size=n).astype(np.float32),
        "b": rng.random(n) < 0.5,
        "i64": rng.integers(-(2**40), 2**40, n),
        "f64": rng.normal(size=n),
        "nullable": pd.array(rng.integers(0, 10, n), dtype="Int64"),
    })
    frame.loc[frame.index[::7], "nullable"] = pd.NA
    y = frame["i8"] / 100 + frame["f32"] + frame["b"] + frame["i64"] / 2**40
    booster = _train(frame, y.to_numpy(dtype=float), {"objective": "regression", "num_leaves": 12}, 10)
    features = RawFeatures.from_data(frame)
    assert features.dense.dtype == np.float64 and features.is_copy  # int64 makes it float64
    _walk_all(booster, frame)
    narrow = frame[["i8", "u16", "f32", "b"]]
    features = RawFeatures.from_data(narrow)
    assert features.dense.dtype == np.float32  # no int64/float64 column: float32
    booster = _train(narrow, y.to_numpy(dtype=float), {"objective": "regression", "num_leaves": 12}, 10)
    _walk_all(booster, narrow)


def test_pandas_frame_of_one_float_dtype_is_read_by_reference():
    X = np.random.default_rng(8).normal(size=(300, 4))
    frame = pd.DataFrame(X)
    features = RawFeatures.from_data(frame)
    assert not features.is_copy and np.shares_memory(features.dense, frame.iloc[:, 0].to_numpy())
    booster = _train(frame, X[:, 0] * X[:, 1], {"objective": "regression", "num_leaves": 8}, 4)
    _walk_all(booster, frame)
    read_only = X.copy()
    read_only.flags.writeable = False
    _walk_all(booster, read_only)


# --------------------------------------------------------------------------- multiclass, one leaf


def test_multiclass_with_one_leaf_trees():
    rng = np.random.default_rng(9)
    X = _special_values(rng, 1500, 5)
    # class 2 never occurs: its trees cannot split (gain below min_gain_to_split)
    y = (np.nan_to_num(X[:, 0]) + 0.3 * rng.normal(size=1500) > 0).astype(float)
    booster = _train(X, y, {"objective": "multiclass", "num_class": 3, "num_leaves": 10,
                            "min_gain_to_split": 1.0}, 15)
    info = booster.dump_model()["tree_info"]
    assert {t["num_leaves"] for t in info[2::3]} == {1} and min(t["num_leaves"] for t in info[0::3]) > 1
    out, leaves = _walk_all(booster, _special_values(rng, 700, 5))
    assert np.all(leaves[:, 2::3] == 0)


def test_one_leaf_model():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(500, 3))
    booster = _train(X, rng.normal(size=500), {"objective": "regression", "min_gain_to_split": 1e9}, 5)
    assert booster.num_trees() == 1 and booster.dump_model()["tree_info"][0]["num_leaves"] == 1
    out, leaves = _walk_all(booster, X)
    assert np.all(out == out[0, 0]) and out[0, 0] != 0.0 and np.all(leaves == 0)
    # a 1-leaf forest reads no feature: it works on data without columns too
    out = np.zeros((4, 1))
    add_outputs(RawFeatures.from_data(np.zeros((4, 0))),
                Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())), out)
    assert np.all(out == booster.predict(X[:4], raw_score=True)[:, None])


# --------------------------------------------------------------------------- sparse


@pytest.fixture(scope="module")
def sparse_model():
    """A model on data with many zeros and thresholds at ±K, and sparse validation data."""
    rng = np.random.default_rng(11)
    n, d = 2000, 8
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.4)
    X[rng.random((n, d)) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) - (X[:, 1] == 0) + np.nan_to_num(X[:, 2]) ** 2 + 0.2 * rng.normal(size=n)
    booster = _train(X, y, {"objective": "regression", "num_leaves": 20}, 15)
    Xv = rng.normal(size=(900, d)) * (rng.random((900, d)) < 0.4)
    Xv[rng.random(Xv.shape) < 0.05] = np.nan
    mask = rng.random(Xv.shape) < 0.05
    Xv[mask] = rng.choice(TINY[:8], size=mask.sum())
    return booster, Xv


def _scramble(matrix, rng, fmt, shuffle=True):
    """The same matrix with shuffled indices, explicit zeros and duplicate entries added.

    Each duplicate gets a random value (so which entry the reader takes matters); each
    explicit zero is a new entry with value 0 at a position that holds no entry.  With
    ``shuffle=False`` the indices stay sorted, each duplicate right after its original.
    """
    matrix = matrix.tocoo()
    rows, cols, vals = matrix.row, matrix.col, matrix.data
    dup = rng.random(rows.size) < 0.3
    extra_rows, extra_cols = rows[dup], cols[dup]
    extra_vals = rng.normal(size=dup.sum())
    free = np.argwhere(matrix.toarray() == 0)[: 300]
    rows = np.concatenate([rows, extra_rows, free[:, 0]])
    cols = np.concatenate([cols, extra_cols, free[:, 1]])
    vals = np.concatenate([vals, extra_vals, np.zeros(len(free))])
    order = rng.permutation(rows.size) if shuffle else np.arange(rows.size)
    rows, cols, vals = rows[order], cols[order], vals[order]
    major, minor = (rows, cols) if fmt == "csr" else (cols, rows)
    # grouped by row (column), shuffled or sorted within
    by_major = np.argsort(major, kind="stable") if shuffle else np.lexsort((minor, major))
    nmajor = matrix.shape[0] if fmt == "csr" else matrix.shape[1]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=nmajor))])
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    out = cls((vals[by_major], minor[by_major], indptr), shape=matrix.shape)
    assert not out.has_canonical_format and out.has_sorted_indices == (not shuffle)
    return out


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_canonical_and_not(sparse_model, fmt):
    booster, Xv = sparse_model
    rng = np.random.default_rng(12)
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    canonical = cls(Xv)
    scrambled = _scramble(canonical, rng, fmt)
    sorted_duplicates = _scramble(canonical, rng, fmt, shuffle=False)
    # which duplicate wins matters: the first one (CSC) reads like the canonical matrix, the
    # last one (CSR) does not
    assert not np.array_equal(booster.predict(scrambled, raw_score=True), booster.predict(canonical, raw_score=True))
    assert np.array_equal(booster.predict(sorted_duplicates, raw_score=True),
                          booster.predict(canonical, raw_score=True)) == (fmt == "csc")
    for matrix in (canonical, scrambled, sorted_duplicates, canonical.astype(np.float32)):
        _walk_all(booster, matrix)
    for index_dtype in (np.int64, np.int16):
        wide = cls((scrambled.data, scrambled.indices.astype(index_dtype), scrambled.indptr.astype(np.int64)),
                   shape=scrambled.shape)
        wide.indices = scrambled.indices.astype(index_dtype)  # scipy would upcast int16
        wide.indptr = scrambled.indptr.astype(np.int64)
        _walk_all(booster, wide)


def test_csr_keeps_tiny_values_that_dense_and_csc_drop():
    # LightGBM's CSR row function does not drop |x| <= K, its dense and CSC ones do: with a
    # threshold at -K, a stored -K goes left from CSR and right from the other layouts.
    rng = np.random.default_rng(13)
    X = rng.choice([-1.0, 0.0, 1.0], size=(2000, 2))
    booster = _train(X, (X[:, 0] < 0) + 0.1 * rng.normal(size=2000),
                     {"objective": "regression", "num_leaves": 4, "min_data_in_leaf": 5}, 3)
    rows = np.array([[-K, 0.5], [K, 0.5], [-1e-36, -1.0], [0.0, 1.0]])
    csr, _ = _walk_all(booster, sp.csr_matrix(rows))
    dense, _ = _walk_all(booster, rows)
    csc, _ = _walk_all(booster, sp.csc_matrix(rows))
    assert csr[0, 0] != dense[0, 0] and np.array_equal(dense, csc)


def test_other_sparse_inputs_are_converted_as_predict_converts_them(sparse_model):
    booster, Xv = sparse_model
    rng = np.random.default_rng(14)
    scrambled = _scramble(sp.csr_matrix(Xv), rng, "csr")
    for data in (sp.csr_array(scrambled), sp.csc_array(_scramble(sp.csc_matrix(Xv), rng, "csc")),
                 scrambled.tocoo(), sp.lil_matrix(Xv)):
        _walk_all(booster, data)
    shared = RawFeatures.from_data(sp.csr_array(scrambled))
    assert shared.layout == "csr" and not shared.is_copy


# --------------------------------------------------------------------------- rows, copies, fallbacks


def test_take_rows_reads_like_the_original_rows(sparse_model):
    booster, Xv = sparse_model
    rng = np.random.default_rng(15)
    forest = Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())[:5])
    rows = np.concatenate([rng.permutation(Xv.shape[0])[:400], [3, 3, 0, Xv.shape[0] - 1]])
    for data in (Xv, np.asfortranarray(Xv.astype(np.float32)), _scramble(sp.csr_matrix(Xv), rng, "csr"),
                 _scramble(sp.csc_matrix(Xv), rng, "csc"), sp.csc_matrix(Xv)):
        features = RawFeatures.from_data(data)
        full = np.zeros((features.num_rows, forest.num_trees))
        full_leaves = np.zeros((features.num_rows, forest.num_trees), dtype=np.int32)
        add_outputs(features, forest, full, full_leaves)
        taken = features.take(rows)
        assert taken.num_rows == rows.size and taken.num_features == features.num_features
        assert taken.layout == features.layout and taken.is_copy
        part = np.zeros((rows.size, forest.num_trees))
        part_leaves = np.zeros((rows.size, forest.num_trees), dtype=np.int32)
        add_outputs(taken, forest, part, part_leaves)
        assert np.array_equal(part, full[rows]) and np.array_equal(part_leaves, full_leaves[rows])
        if taken.layout == "csc":  # only the entries LightGBM reads are kept: canonical
            assert sp.csc_matrix((taken.values, taken.indices, taken.indptr), shape=taken.shape).has_canonical_format
        assert features.take(np.array([], dtype=np.int64)).num_rows == 0


def test_take_rejects_bad_rows():
    features = RawFeatures.from_data(np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"rows must be in 0\.\.4"):
        features.take([0, 5])
    with pytest.raises(ValueError, match="rows must be in"):
        features.take([-1])
    with pytest.raises(TypeError, match="rows must be a 1-D array of integer"):
        features.take(np.array([True, False, True, False, True]))
    with pytest.raises(TypeError, match="rows must be a 1-D array of integer"):
        features.take([[0, 1]])


def test_arrays_are_kept_by_reference():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(200, 5))
    for array in (X, np.asfortranarray(X), X.astype(np.float32), X[::2, 1:4]):
        features = RawFeatures.from_data(array)
        assert features.layout == "dense" and np.shares_memory(features.dense, array)
        assert not features.is_copy and features.copy_nbytes == 0
    X[X < 0.5] = 0.0
    csr, csc = sp.csr_matrix(X), sp.csc_matrix(X)
    for matrix in (csr, csc, _scramble(csr, rng, "csr")):
        features = RawFeatures.from_data(matrix)
        assert features.layout == matrix.format and not features.is_copy
        for ours, theirs in ((features.indptr, matrix.indptr), (features.indices, matrix.indices),
                             (features.values, matrix.data)):
            assert np.shares_memory(ours, theirs)
    # a CSC matrix with unsorted columns needs the running maximum of its row indices: a copy
    features = RawFeatures.from_data(_scramble(csc, rng, "csc"))
    assert features.is_copy and features.copy_nbytes == features.search.nbytes


def test_strided_view_walks_like_its_copy(numeric):
    X, y, Xv = numeric
    booster = _train(X[:, ::2], y, {"objective": "regression", "num_leaves": 10}, 5)
    view = Xv[::3, ::2]
    assert not view.flags.c_contiguous and not view.flags.f_contiguous
    _walk_all(booster, view)


def test_unsupported_inputs_give_none(tmp_path):
    try:
        import pyarrow as pa

        table = pa.table({"a": [1.0, 2.0]})
    except ImportError:  # LightGBM 4.6's placeholder class is what it tests against then (4.7 has none)
        from lightgbm.compat import pa_Table

        table = pa_Table()
    for data in (None, "train.csv", Path("train.csv"), str(tmp_path), table, [[1.0, 2.0]],
                 np.array([["a", "b"]]), np.zeros((2, 2), dtype=complex), np.zeros((2, 2), dtype=object)):
        assert RawFeatures.from_data(data) is None


def test_malformed_input_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"data must be a 2-D array .* got 1-D"):
        RawFeatures.from_data(np.zeros(3))
    with pytest.raises(ValueError, match=r"data must be a 2-D array .* got 3-D"):
        RawFeatures.from_data(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="data: CSR values must be float32 or float64"):
        RawFeatures.from_data(sp.csr_matrix(np.eye(3, dtype=np.int64)))
    bad = sp.csr_matrix(np.eye(3))
    bad.indices = np.array([0, 1, 7], dtype=np.int32)
    with pytest.raises(ValueError, match=r"data: malformed CSR matrix \(an index is outside 0\.\.2\)"):
        RawFeatures.from_data(bad)
    bad = sp.csc_matrix(np.eye(3))
    bad.indptr = np.array([0, 2, 1, 3], dtype=np.int32)
    with pytest.raises(ValueError, match="data: malformed CSC matrix"):
        RawFeatures.from_data(bad)
    with pytest.raises(ValueError, match="data \\(pandas DataFrame\\): pandas dtypes must be int, float or bool"):
        RawFeatures.from_data(pd.DataFrame({"s": ["a", "b"]}))
    frame = pd.DataFrame({"c": pd.Categorical(["a", "b"])})
    with pytest.raises(ValueError, match="data \\(pandas DataFrame\\): train and valid dataset categorical"):
        RawFeatures.from_data(frame, pandas_categorical=[["a", "b"], ["x"]])


def test_add_outputs_checks_its_arguments():
    X = np.random.default_rng(17).normal(size=(300, 3))
    booster = _train(X, X[:, 2], {"objective": "regression", "num_leaves": 4}, 1)
    forest = Forest.from_tree_texts(L.tree_bodies(booster.model_to_string()))
    assert forest.max_feature == 2 and forest.num_trees == 1
    features = RawFeatures.from_data(X)
    with pytest.raises(TypeError, match="out must be a numpy array of float64, got float32"):
        add_outputs(features, forest, np.zeros((300, 1), dtype=np.float32))
    with pytest.raises(ValueError, match=r"out must have shape \(300, 1\)"):
        add_outputs(features, forest, np.zeros(300))
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        add_outputs(features, forest, np.zeros((300, 2))[:, :1])
    with pytest.raises(TypeError, match="leaves must be a numpy array of int32, got int64"):
        add_outputs(features, forest, np.zeros((300, 1)), np.zeros((300, 1), dtype=np.int64))
    with pytest.raises(TypeError, match="features must be a RawFeatures"):
        add_outputs(X, forest, np.zeros((300, 1)))
    with pytest.raises(ValueError, match="the trees split on feature 2, but features has only 2 columns"):
        add_outputs(RawFeatures.from_data(X[:, :2]), forest, np.zeros((300, 1)))
    with pytest.raises(TypeError, match="texts must be a sequence of tree bodies"):
        Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())[0])
    with pytest.raises(ValueError, match="texts must hold at least one tree"):
        Forest.from_tree_texts([])


def test_malformed_trees_are_refused():
    X = np.random.default_rng(18).normal(size=(300, 3))
    booster = _train(X, X[:, 2], {"objective": "regression", "num_leaves": 4}, 1)
    [body] = L.tree_bodies(booster.model_to_string())
    with pytest.raises(ValueError, match="left_child has 4 values, expected 3"):
        Forest.from_tree_texts([body.replace("left_child=", "left_child=1 ", 1)])
    tree = L.parse_tree(body)
    assert tree.num_leaves == 4
    for left, right in (([1, 2, 1], [-1, -2, -3]),  # node 1 has two parents
                        ([1, -9, 0], [-1, -2, -3]),  # leaf 8 of 4
                        ([-1, 2, 1], [-2, -3, -4])):  # nodes 1 and 2: a cycle off the root
        bad = L.TreeArrays(**{**tree.__dict__, "left_child": np.array(left, dtype=np.int32),
                              "right_child": np.array(right, dtype=np.int32)})
        with pytest.raises(ValueError, match="tree 0: left_child/right_child do not form a binary tree"):
            Forest.from_trees([bad])


def test_tree_text_integer_fields_are_read_exactly_and_checked():
    X = np.random.default_rng(18).normal(size=(300, 3))
    booster = _train(X, X[:, 2], {"objective": "regression", "num_leaves": 4}, 1)
    [body] = L.tree_bodies(booster.model_to_string())
    fields = dict(line.split("=", 1) for line in body.split("\n") if "=" in line)
    tree = L.parse_tree(body)
    for key, name in (("split_feature", "split_feature"), ("left_child", "left_child"),
                      ("right_child", "right_child"), ("decision_type", "decision_type")):
        assert getattr(tree, name).tolist() == [int(v) for v in fields[key].split(" ")]

    def with_first(key: str, value: str) -> str:
        rest = fields[key].split(" ", 1)[1]
        return body.replace(f"{key}={fields[key]}", f"{key}={value} {rest}", 1)

    with pytest.raises(ValueError, match="split_feature has a value that is not an integer"):
        L.parse_tree(with_first("split_feature", "1.5"))
    with pytest.raises(ValueError, match="left_child has values outside the range of int32"):
        L.parse_tree(with_first("left_child", str(2**40)))
    with pytest.raises(ValueError, match="decision_type has values outside the range of int8"):
        L.parse_tree(with_first("decision_type", "300"))
    with pytest.raises(ValueError, match="right_child has 4 values, expected 3"):  # an empty value
        L.parse_tree(body.replace("right_child=", "right_child= ", 1))


def test_one_tree_forest_is_the_general_layout():
    """The engine's every iteration takes the one-tree path; it must equal the joined layout
    (the first tree of a two-tree forest), the raw walk's feature slots included."""
    X = np.random.default_rng(19).normal(size=(400, 5))
    booster = _train(X, X[:, 1] - X[:, 3], {"objective": "regression", "num_leaves": 6}, 2)
    first, second = (L.parse_tree(body) for body in L.tree_bodies(booster.model_to_string()))
    one, two = Forest.from_trees([first]), Forest.from_trees([first, second])
    nodes = 2 * first.num_leaves - 1
    for key in ("feature", "threshold", "flags", "left", "right", "cat_start", "cat_len", "node_value", "node_leaf"):
        assert np.array_equal(getattr(one, key), getattr(two, key)[:nodes]), key
        assert getattr(one, key).dtype == getattr(two, key).dtype, key
    assert one.roots.tolist() == [0] and one.depths.tolist() == two.depths[:1].tolist()
    assert one.used_features.tolist() == sorted(set(first.split_feature.tolist()))
    assert np.array_equal(one.used_features[one.slot[:first.num_leaves - 1]], first.split_feature)
    assert np.array_equal(two.used_features[two.slot[:nodes - first.num_leaves]], first.split_feature)


def test_result_does_not_depend_on_the_number_of_threads(sparse_model):
    booster, Xv = sparse_model
    forest = Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())[:3])
    before = numba.get_num_threads()
    counts = sorted({1, 2, numba.config.NUMBA_NUM_THREADS})
    try:
        for data in (Xv, sp.csr_matrix(Xv), sp.csc_matrix(Xv)):
            results = []
            for threads in counts:
                numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                out = np.zeros((Xv.shape[0], 3))  # three trees taken as one iteration: K = 3
                add_outputs(RawFeatures.from_data(data), forest, out)
                results.append(out)
            assert all(np.array_equal(r, results[0]) for r in results)
    finally:
        numba.set_num_threads(before)
