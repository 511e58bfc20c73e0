"""The walk over bin codes (smart_lgbm._engine.walk.codes) against LightGBM's own predict.

As for the raw walk (tests/test_walk.py) every check is exact: the coded walk summed over a
stock model's iterations, from zeros, must equal ``Booster.predict(raw_score=True)`` bit for
bit after every iteration, leaves ``predict(pred_leaf=True)``, on the training data and on
validation data with values the training data never had.  Where exactness cannot be had
the data must not be coded at all (the engine then walks the raw features).
"""

from __future__ import annotations

import lightgbm as lgb
import numba
import numpy as np
import pytest
import scipy.sparse as sp

from test_walk import _special_values  # NaN, zeros and values around ±kZeroThreshold

from smart_lgbm import _lightgbm as L
from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures, add_coded_outputs
from smart_lgbm._engine.walk._kernels import K_ZERO_THRESHOLD
from smart_lgbm._engine.walk.codes import NAN_CODE


def _model_and_book(X, y, params, rounds=25, dataset_params=None):
    ds = lgb.Dataset(X, y, params={"verbosity": -1, **(dataset_params or {})}).construct()
    booster = lgb.train({"verbosity": -1, "num_threads": 1, "seed": 1, "num_leaves": 15, **params}, ds, rounds)
    return booster, CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))


def _coded_walk_equals_predict(booster, book, data):
    raw = RawFeatures.from_data(data)
    codes = book.encode(raw)
    assert codes is not None
    texts = L.tree_bodies(booster.model_to_string())
    k = booster.num_model_per_iteration()
    n = raw.num_rows
    out = np.zeros((n, k))
    stock_leaves = booster.predict(data, pred_leaf=True).reshape(n, -1)
    for it in range(len(texts) // k):
        leaves = np.full((n, k), -1, dtype=np.int32)
        add_coded_outputs(codes, book.coded_forest(Forest.from_tree_texts(texts[it * k:(it + 1) * k])), out, leaves)
        stock = booster.predict(data, raw_score=True, num_iteration=it + 1).reshape(n, k)
        assert np.array_equal(out, stock), f"iteration {it}: {np.abs(out - stock).max()}"
        assert np.array_equal(leaves, stock_leaves[:, it * k:(it + 1) * k]), f"iteration {it}"


@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}],
                         ids=["default", "zero_as_missing", "no_missing"])
@pytest.mark.parametrize("layout", ["float64", "float32", "fortran"])
def test_coded_walk_is_predict_on_dense_data(params, layout):
    rng = np.random.default_rng(0)
    X, Xv = _special_values(rng, 2000, 6), _special_values(rng, 800, 6)
    Xv[:40, 3] = rng.normal(size=40) * 50  # values outside the training range
    y = np.nan_to_num(X[:, 0]) + (X[:, 1] == 0) - 2 * np.isnan(X[:, 2]) + 0.3 * rng.normal(size=2000)
    convert = {"float64": np.asarray, "float32": lambda a: a.astype(np.float32),
               "fortran": np.asfortranarray}[layout]
    booster, book = _model_and_book(convert(X), y, {"objective": "regression", **params}, dataset_params=params)
    assert book is not None
    for data in (convert(X), convert(Xv)):
        _coded_walk_equals_predict(booster, book, data)


def test_coded_walk_is_predict_on_sparse_data_and_multiclass():
    rng = np.random.default_rng(1)
    dense = np.where(rng.random((3000, 12)) < 0.25, rng.normal(size=(3000, 12)), 0.0)
    y = np.digitize(dense[:, 0] + dense[:, 1], [-0.3, 0.3]).astype(float)
    csr = sp.csr_matrix(dense)
    booster, book = _model_and_book(csr, y, {"objective": "multiclass", "num_class": 3}, rounds=15)
    _coded_walk_equals_predict(booster, book, csr)
    _coded_walk_equals_predict(booster, book, sp.csc_matrix(dense))
    _coded_walk_equals_predict(booster, book, dense)
    # CSR as LightGBM reads it: unsorted columns, duplicates (the last one wins), explicit zeros
    indptr, indices, data = [0], [], []
    for i in range(3000):
        idx, val = csr.indices[csr.indptr[i]:csr.indptr[i + 1]][::-1], csr.data[csr.indptr[i]:csr.indptr[i + 1]][::-1]
        if i % 7 == 0:
            idx, val = np.r_[idx, 1, 1, 2], np.r_[val, 3.0, -2.5, 0.0]
        indices.extend(idx)
        data.extend(val)
        indptr.append(len(indices))
    messy = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(3000, 12))
    assert not messy.has_canonical_format
    _coded_walk_equals_predict(booster, book, messy)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("pattern", ["random_30", "runs", "first_and_last", "all", "none"])
def test_known_rows_get_their_outputs_and_are_not_walked(pattern, threads):
    """Rows with known outputs (the engine's sampled rows, read from LightGBM) get exactly
    those added and keep their leaves; every other row is walked as always.  Sizes make
    the walk's per-thread chunks end inside runs of known and walked rows."""
    rng = np.random.default_rng(4)
    n = 5003
    X = rng.normal(size=(n, 5))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5]).astype(float)
    booster, book = _model_and_book(X, y, {"objective": "multiclass", "num_class": 3}, rounds=4)
    codes = book.encode(RawFeatures.from_data(X))
    forest = book.coded_forest(Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())[:3]))
    walked, walked_leaves = np.zeros((n, 3)), np.zeros((n, 3), dtype=np.int32)
    add_coded_outputs(codes, forest, walked, walked_leaves)
    rows = {"random_30": np.flatnonzero(rng.random(n) < 0.3), "all": np.arange(n), "none": np.arange(0),
            "runs": np.flatnonzero((np.arange(n) // 37) % 3 == 0),  # runs across block and chunk ends
            "first_and_last": np.array([0, 1, 63, 64, n - 2, n - 1])}[pattern].astype(np.int32)
    outputs = rng.normal(size=(rows.size, 3))
    before = rng.normal(size=(n, 3))
    out, leaves = before.copy(), np.full((n, 3), -1, dtype=np.int32)
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        add_coded_outputs(codes, forest, out, leaves, known=(rows, outputs))
    finally:
        numba.set_num_threads(previous)
    expected, expected_leaves = before + walked, walked_leaves.copy()
    expected[rows] = before[rows] + outputs
    expected_leaves[rows] = -1
    assert np.array_equal(out, expected)
    assert np.array_equal(leaves, expected_leaves)
    with pytest.raises(TypeError, match="known rows"):
        add_coded_outputs(codes, forest, out, known=(rows.astype(np.int64), outputs))
    with pytest.raises(TypeError, match="known outputs"):
        add_coded_outputs(codes, forest, out, known=(rows, outputs[:, :2]))
    for bad in (np.array([3, 2], dtype=np.int32), np.array([1, 1], dtype=np.int32), np.array([-1, 4], dtype=np.int32),
                np.array([0, n], dtype=np.int32)):
        with pytest.raises(ValueError, match="sorted, unique"):
            add_coded_outputs(codes, forest, out, known=(bad, np.zeros((2, 3))))


def test_codes_follow_lightgbms_bins():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 3))
    X[::7, 1] = np.nan
    X[:, 2] = np.abs(X[:, 2]) + 1.0  # one sign only, no zeros
    booster, book = _model_and_book(X, rng.normal(size=1000), {"objective": "regression"})
    codes = book.encode(RawFeatures.from_data(X)).codes
    assert codes.dtype == np.uint8 and codes.shape == (3, 1000)
    assert np.all(codes[1, ::7] == NAN_CODE)  # NaN gets its own code where LightGBM keeps a NaN bin
    for j in range(3):  # the code is the value's position among the feature's finite bounds
        seen = ~np.isnan(X[:, j])
        np.testing.assert_array_equal(codes[j, seen], np.searchsorted(book.bounds[j], X[seen, j], side="left"))


def test_data_that_cannot_be_coded_exactly_is_left_to_the_raw_walk():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 4))
    X[:, 3] = rng.integers(0, 6, 2000)
    y = X[:, 0] + (X[:, 3] == 2)
    # zero as missing on a feature of one sign: 0 has no bin of its own
    Xp = np.abs(X) + 0.5
    ds = lgb.Dataset(Xp, y, params={"verbosity": -1, "zero_as_missing": True}).construct()
    mappers = L.bin_mappers(L.handle_of(ds))
    assert CodeBook.from_mappers(mappers) is None
    assert "feature 0 treats zero as missing" in CodeBook.refusal(mappers)
    # more than 255 bins
    ds = lgb.Dataset(X, y, params={"verbosity": -1, "max_bin": 400}).construct()
    assert "feature 0 has 400 bins (max_bin above 255" in CodeBook.refusal(L.bin_mappers(L.handle_of(ds)))
    # CSR storing tiny non-zero values (LightGBM's CSR predictor keeps them): not coded
    booster, book = _model_and_book(X[:, :3], y, {"objective": "regression"})
    tiny = sp.csr_matrix(X[:, :3])
    tiny.data[::50] = 1e-36
    assert book.encode(RawFeatures.from_data(tiny)) is None
    assert "stores values within ±1e-35 of zero" in book.encode_refusal(RawFeatures.from_data(tiny))
    # a CSC matrix with a duplicate entry (LightGBM's column reader keeps the first)
    csc = sp.csc_matrix(X[:, :3])
    dup = sp.csc_matrix((np.r_[csc.data[:1], csc.data], np.r_[csc.indices[:1], csc.indices],
                         np.r_[0, csc.indptr[1:] + 1]), shape=csc.shape)
    assert book.encode(RawFeatures.from_data(dup)) is None
    assert book.encode(RawFeatures.from_data(csc)) is not None


def test_a_threshold_outside_the_bounds_is_an_error():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 2))
    booster, book = _model_and_book(X, X[:, 0], {"objective": "regression"}, rounds=1)
    tree = L.parse_tree(L.tree_bodies(booster.model_to_string())[0])
    forest = Forest.from_trees([tree])
    forest.threshold[0] = np.nextafter(forest.threshold[0], np.inf)
    with pytest.raises(RuntimeError, match="bin bounds"):
        book.coded_forest(forest)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_codes_equal_the_scalar_search(dtype):
    """The lockstep dense encoder gives every value the code of the one-value search the
    sparse encoder uses (``_kernels._code``): 255-bound features, 8-bound ones, NaN, +-inf,
    tiny values, a row count that is no multiple of the lanes or the block."""
    rng = np.random.default_rng(5)
    n = 4096 + 37
    X = _special_values(rng, n, 5)
    X[:, 0] = rng.normal(size=n)  # many distinct values: 255 bins
    X[::11, 1] = np.inf
    X[::13, 1] = -np.inf
    X[:, 4] = rng.integers(0, 6, n)  # few bounds
    X = X.astype(dtype)
    _, book = _model_and_book(X, rng.normal(size=n), {"objective": "regression"}, rounds=2)
    assert max(b.shape[0] for b in book.bounds) >= 200 and min(b.shape[0] for b in book.bounds) <= 8
    dense = book.encode(RawFeatures.from_data(X)).codes
    for sparse in (sp.csr_matrix(np.nan_to_num(X, nan=0.0)), sp.csc_matrix(np.nan_to_num(X, nan=0.0))):
        want = book.encode(RawFeatures.from_data(np.nan_to_num(X, nan=0.0))).codes
        got = book.encode(RawFeatures.from_data(sparse))
        if got is not None:  # CSR with tiny non-zeros is refused; CSC is coded
            np.testing.assert_array_equal(got.codes, want)
    for j, feature in enumerate(book.features):
        col = X[:, feature].astype(np.float64)
        col[np.abs(col) <= K_ZERO_THRESHOLD] = 0.0  # the float32 kZeroThreshold, widened
        nan = np.isnan(col)
        expect = np.searchsorted(book.bounds[j], np.where(nan, 0.0, col), side="left")
        if book.nan_codes[j] >= 0:
            expect[nan] = NAN_CODE
        np.testing.assert_array_equal(dense[j], expect)


def test_dense_search_stays_inside_the_padded_bounds():
    """The lockstep search reads only the first ``2**depth`` entries of a feature's padded
    bounds, stale lanes included: run as plain Python (numpy checks every index), with a
    last group of fewer than ``LANES`` rows after a group whose values lie above all of a
    255-bound feature's bounds (a position carried over would read past the row)."""
    from smart_lgbm._engine.walk import _encode_kernels as ek

    bounds = [np.arange(255, dtype=np.float64), np.array([0.5])]
    padded, depth = ek.padded_bounds(bounds)
    X = np.full((ek.LANES + 5, 2), 1000.0)
    X[ek.LANES:] = -1000.0
    codes = np.zeros((2, X.shape[0]), dtype=np.uint8)
    ek.encode_dense.py_func(X, np.array([0, 1], dtype=np.int32), padded, depth, np.array([-1, -1]),
                            K_ZERO_THRESHOLD, codes)
    np.testing.assert_array_equal(codes[0], [255] * ek.LANES + [0] * 5)
    np.testing.assert_array_equal(codes[1], [1] * ek.LANES + [0] * 5)
