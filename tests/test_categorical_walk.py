"""Categorical features on the coded walks (smart_lgbm._engine.walk.codes) against LightGBM.

Every check is exact, as for numerical codes (tests/test_bincodes.py): the coded walk summed
over a stock model's iterations must equal ``Booster.predict(raw_score=True)`` bit for bit
after every iteration, and its leaves ``predict(pred_leaf=True)``, on the training data and
on validation data with categories the training data never had, NaN, negative and
fractional values and values beyond ``int`` range; by the bitmask walk (trees of at most 64
leaves) and the lockstep walk (more), on dense and sparse input, for categorical features of
a few levels (one-hot splits), more than 64, more than 256 (two-byte codes) and more than
``max_bin`` levels.  In training runs, ``Full()`` grows stock LightGBM's model byte for byte,
and the saved model predicts the scores the engine tracked.
"""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import smart_lgbm as sl
from smart_lgbm import _lightgbm as L
from smart_lgbm._engine.walk import BinCodes, CodeBook, Forest, RawFeatures, add_coded_outputs

BASE = {"verbosity": -1, "num_threads": 1, "seed": 1}


def _zipf_levels(rng, n, levels, a=1.1):
    """Integer categories 0..levels-1 with a skewed (Zipf-like) frequency, in a shuffled order."""
    weights = 1.0 / np.arange(1, levels + 1) ** a
    return rng.permutation(levels)[rng.choice(levels, size=n, p=weights / weights.sum())]


def _table(rng, n):
    """Two numerical columns and categorical ones: 3 levels (one-hot splits), 100 levels with
    NaN and negative values, 700 skewed levels (more than 256 bins), and sparse category values
    far apart (looked up by binary search)."""
    x0 = rng.normal(size=n)
    x1 = np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))
    small = rng.integers(0, 3, n).astype(float)
    mid = rng.integers(0, 100, n).astype(float)
    mid[rng.random(n) < 0.05] = np.nan
    mid[rng.random(n) < 0.03] = -3.0
    mid[rng.random(n) < 0.02] = 7.6  # static_cast<int>: category 7
    wide = _zipf_levels(rng, n, 700).astype(float)
    far = (rng.integers(0, 40, n) * 7_919 + 3_000_000).astype(float)
    X = np.column_stack([x0, x1, small, mid, wide, far])
    effect = rng.normal(size=700)
    score = (x0 + np.nan_to_num(x1) + (small == 1) + 0.8 * np.sin(np.nan_to_num(mid)) + effect[wide.astype(int)]
             + 0.5 * ((far - 3_000_000) / 7_919 % 3 == 0) + 0.5 * rng.normal(size=n))
    return X, (score > np.median(score)).astype(float)


CATEGORICAL = [2, 3, 4, 5]


def _validation_values(rng, X):
    """``X`` with categories the training data never had and every special value."""
    Xv = X.copy()
    n = Xv.shape[0]
    for j in CATEGORICAL:
        Xv[rng.random(n) < 0.05, j] = np.nan
        Xv[rng.random(n) < 0.05, j] = -1.0  # negative: bin 0
        Xv[rng.random(n) < 0.03, j] = -0.5  # truncates to category 0
        Xv[rng.random(n) < 0.05, j] = 100_000 + j  # unseen
        Xv[rng.random(n) < 0.02, j] = 3e9  # beyond int range
        Xv[rng.random(n) < 0.02, j] = -3e9
        Xv[rng.random(n) < 0.02, j] = 2.999  # truncates to category 2
    Xv[rng.random(n) < 0.02, 5] = 3_007_919.5  # a seen far category, truncated
    return Xv


def _model_and_book(X, y, params, rounds=12, dataset_params=None, categorical=CATEGORICAL):
    ds = lgb.Dataset(X, y, categorical_feature=categorical,
                     params={"verbosity": -1, **(dataset_params or {})}).construct()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        booster = lgb.train({**BASE, "objective": "binary", **params}, ds, rounds)
    return booster, CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds))), ds


def _coded_walk_equals_predict(booster, book, data, *, raw=None, lockstep=None):
    raw = RawFeatures.from_data(data) if raw is None else raw
    codes = book.encode(raw)
    assert codes is not None
    texts = L.tree_bodies(booster.model_to_string())
    k = booster.num_model_per_iteration()
    n = raw.num_rows
    out = np.zeros((n, k))
    stock_leaves = booster.predict(data, pred_leaf=True).reshape(n, -1)
    categorical_nodes = 0
    for it in range(len(texts) // k):
        forest = Forest.from_tree_texts(texts[it * k:(it + 1) * k])
        coded = book.coded_forest(forest)
        categorical_nodes += int(np.count_nonzero(coded.info < 0))
        if lockstep is not None:
            assert (coded.bitmask is None) == lockstep
        leaves = np.full((n, k), -1, dtype=np.int32)
        add_coded_outputs(codes, coded, out, leaves)
        stock = booster.predict(data, raw_score=True, num_iteration=it + 1).reshape(n, k)
        assert np.array_equal(out, stock), f"iteration {it}: {np.abs(out - stock).max()}"
        assert np.array_equal(leaves, stock_leaves[:, it * k:(it + 1) * k]), f"iteration {it}"
    assert categorical_nodes > 0  # the trees split on categories
    return codes


def _value_to_bin(mapper, x):
    """LightGBM's ``BinMapper::ValueToBin`` of a categorical feature, in Python."""
    if np.isnan(x) or not (-1.0 < x < 2**31):
        return 0
    bins = {int(c): b for b, c in enumerate(mapper.categories) if b > 0}
    return bins.get(int(x), 0)


def test_categorical_codes_are_lightgbms_bins_and_wide_features_take_two_bytes():
    rng = np.random.default_rng(0)
    X, y = _table(rng, 6000)
    _, book, ds = _model_and_book(X, y, {}, rounds=1)
    mappers = L.bin_mappers(L.handle_of(ds))
    assert [m.categorical for m in mappers] == [False, False, True, True, True, True]
    assert mappers[4].categories.shape[0] > 256 and mappers[2].categories.shape[0] == 4
    assert mappers[3].categories[0] == -1 and sorted(mappers[3].categories[1:]) == list(range(100))
    Xv = _validation_values(rng, X[:2000])
    codes = book.encode(RawFeatures.from_data(Xv))
    assert codes.codes.dtype == np.uint8 and codes.codes.shape == (5, 2000)  # 2 numerical, 3 categorical
    assert codes.wide.dtype == np.uint16 and codes.wide.shape == (1, 2000)  # the 700-level feature
    for f in CATEGORICAL:
        col = int(book.column_of_feature[f])
        got = codes.codes[col] if col < book.narrow else codes.wide[col - book.narrow]
        expected = [_value_to_bin(mappers[f], x) for x in Xv[:, f]]
        np.testing.assert_array_equal(got, expected, err_msg=f"feature {f}")
    assert book.encode(RawFeatures.from_data(Xv.astype(np.float32))).codes.tobytes() == \
        book.encode(RawFeatures.from_data(Xv.astype(np.float32).copy(order="F"))).codes.tobytes()


@pytest.mark.parametrize("num_leaves", [15, 100], ids=["bitmask", "lockstep"])
@pytest.mark.parametrize("layout", ["float64", "float32", "fortran", "csr", "csc"])
def test_coded_walk_is_predict_on_categorical_data(num_leaves, layout):
    rng = np.random.default_rng(1)
    X, y = _table(rng, 8000)
    Xv = _validation_values(rng, _table(rng, 3000)[0])
    if layout in ("csr", "csc"):  # mostly zeros, as sparse data are
        for M in (X, Xv):
            M[rng.random(M.shape) < 0.5] = 0.0
    convert = {"float64": np.asarray, "float32": lambda a: a.astype(np.float32), "fortran": np.asfortranarray,
               "csr": sp.csr_matrix, "csc": sp.csc_matrix}[layout]
    booster, book, _ = _model_and_book(convert(X), y, {"num_leaves": num_leaves, "min_data_per_group": 20,
                                                       "cat_smooth": 5, "max_cat_threshold": 48})
    for data in (convert(X), convert(Xv)):
        _coded_walk_equals_predict(booster, book, data, lockstep=num_leaves > 64)


def test_one_hot_splits_and_more_levels_than_max_bin():
    """``max_cat_to_onehot`` large enough for every feature (one-hot splits: one category
    left), and ``max_bin`` below the number of levels (a category gets its own bin while the
    bins hold less than 99% of the rows, so more bins than ``max_bin``)."""
    rng = np.random.default_rng(2)
    X, y = _table(rng, 6000)
    booster, book, ds = _model_and_book(X, y, {"max_cat_to_onehot": 1000, "num_leaves": 31},
                                        dataset_params={"max_bin": 31})
    mappers = L.bin_mappers(L.handle_of(ds))
    assert mappers[3].categories.shape[0] > 31 and mappers[4].categories.shape[0] > 256
    trees = booster.dump_model()["tree_info"]

    def categorical_thresholds(node):
        if "split_index" not in node:
            return []
        here = [node["threshold"]] if node["decision_type"] == "==" else []
        return here + categorical_thresholds(node["left_child"]) + categorical_thresholds(node["right_child"])

    thresholds = [t for tree in trees for t in categorical_thresholds(tree["tree_structure"])]
    assert thresholds and all("||" not in str(t) for t in thresholds)  # one category per split
    _coded_walk_equals_predict(booster, book, X)
    _coded_walk_equals_predict(booster, book, _validation_values(rng, X))


def _frames(rng, n, order=None, unseen=False):
    X, y = _table(rng, n)
    names = [f"level_{i:03d}" for i in range(700)]
    frame = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1]})
    for j, name in ((2, "small"), (3, "mid"), (4, "wide")):
        values = pd.Series(X[:, j])
        labels = [f"{name}_{int(v)}" if v == v and v >= 0 else None for v in values]
        if name == "wide":
            labels = [names[int(v)] for v in values]
        levels = sorted({v for v in labels if v is not None})
        if order == "reversed":
            levels = levels[::-1]
        if unseen:
            levels = [*levels, f"{name}_unseen"]
            labels = [f"{name}_unseen" if i % 37 == 0 else v for i, v in enumerate(labels)]
        frame[name] = pd.Categorical(labels, categories=levels)
    return frame, y


def test_pandas_categoricals_with_another_category_order_and_unseen_levels():
    rng = np.random.default_rng(3)
    frame, y = _frames(rng, 6000)
    valid, _ = _frames(rng, 2500, order="reversed", unseen=True)
    booster, book, _ = _model_and_book(frame, y, {"num_leaves": 31}, categorical="auto")
    assert book is not None and book.has_categories
    _coded_walk_equals_predict(booster, book, frame, raw=RawFeatures.from_data(frame))
    _coded_walk_equals_predict(booster, book, valid,
                               raw=RawFeatures.from_data(valid, pandas_categorical=booster.pandas_categorical))


def test_a_categorical_split_on_a_category_without_a_bin_is_refused():
    """The bitset of a node must hold categories of the book's bins only: a tree grown on
    other bins is refused rather than walked wrong."""
    rng = np.random.default_rng(4)
    X, y = _table(rng, 4000)
    booster, _, _ = _model_and_book(X, y, {"num_leaves": 15})
    X2 = X.copy()
    X2[:, 3] = np.where(X2[:, 3] >= 0, X2[:, 3] + 500, X2[:, 3])  # other categories
    _, other_book, _ = _model_and_book(X2, y, {}, rounds=1)
    texts = L.tree_bodies(booster.model_to_string())
    forests = [Forest.from_tree_texts([t]) for t in texts]
    splits_mid = [f for f in forests if np.any((f.feature == 3) & (f.flags & 1).astype(bool)
                                               & (f.left != np.arange(f.left.shape[0])))]
    assert splits_mid
    with pytest.raises(RuntimeError, match="categorical split on a category without a bin"):
        other_book.coded_forest(splits_mid[0])
    # a numerical book for a categorical split, and the other way round
    numeric = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    numeric_book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(numeric)))
    with pytest.raises(RuntimeError, match="other kind"):
        numeric_book.coded_forest(splits_mid[0])


def test_categorical_features_past_65536_bins_are_left_to_the_raw_walk():
    mapper = L.BinMapper(True, 2, np.empty(0), np.arange(-1, 70_000, dtype=np.int32))
    assert CodeBook.from_mappers([mapper]) is None
    assert "categorical feature 0 has 70001 bins" in CodeBook.refusal([mapper])


# --------------------------------------------------------------------------- training runs


def _stock_and_full(X, y, params, rounds, **dataset_kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = sl.train(params, lgb.Dataset(X, y, **dataset_kw), rounds, sampler=sl.Full())
        stock = lgb.train({**params, "force_col_wise": True}, lgb.Dataset(X, y, **dataset_kw), rounds)
    return ours.model_to_string(), stock.model_to_string()


@pytest.mark.parametrize("by", ["index", "name", "pandas"])
def test_full_on_categorical_data_is_stocks_model(by):
    rng = np.random.default_rng(5)
    X, y = _table(rng, 5000)
    params = {**BASE, "objective": "binary", "num_leaves": 31, "min_data_per_group": 20, "cat_smooth": 5}
    if by == "pandas":
        frame, y = _frames(rng, 5000)
        ours, stock = _stock_and_full(frame, y, params, 15)
    elif by == "name":
        names = ["a", "b", "c", "d", "e", "f"]
        ours, stock = _stock_and_full(X, y, params, 15, feature_name=names, categorical_feature=["c", "d", "e", "f"])
    else:
        ours, stock = _stock_and_full(X, y, params, 15, categorical_feature=CATEGORICAL)
    assert ours.split("\nparameters:\n")[0] == stock.split("\nparameters:\n")[0]
    assert "cat_threshold=" in ours


class _Spy(sl.samplers.Sampler):
    """Wraps a sampler and keeps the raw scores the engine tracked before each iteration."""

    def __init__(self, inner):
        self.inner = inner
        self.history_length = inner.history_length
        self.needs_leaves = inner.needs_leaves
        self.refit_leaves = inner.refit_leaves
        self.raw = []

    def sample(self, state, rng):
        self.raw.append(state.raw.copy())
        return self.inner.sample(state, rng)


@pytest.mark.parametrize("make", [lambda: sl.FirstOrder(rate=0.3), lambda: sl.FirstOrder(rate=0.3, refit_leaves=True),
                                  lambda: sl.Uniform(rate=0.5)], ids=["first_order", "refit", "uniform_read_back"])
def test_tracked_scores_are_the_saved_models_predictions_on_categorical_frames(make):
    rng = np.random.default_rng(6)
    frame, y = _frames(rng, 20_000)
    valid, yv = _frames(rng, 3000, order="reversed", unseen=True)
    spy = _Spy(make())
    res: dict = {}
    booster = sl.train({**BASE, "objective": "binary", "num_leaves": 31}, lgb.Dataset(frame, y), 20, sampler=spy,
                       valid_sets=[lgb.Dataset(valid, yv)], callbacks=[lgb.record_evaluation(res)])
    booster = lgb.Booster(model_str=booster.model_to_string())
    for t in (1, 10, 19):
        np.testing.assert_array_equal(booster.predict(frame, raw_score=True, num_iteration=t), spy.raw[t])
    prob = booster.predict(valid)
    p_true = np.where(yv > 0, prob, 1.0 - prob)
    assert res["valid_0"]["binary_logloss"][-1] == pytest.approx(-np.mean(np.log(p_true)), rel=1e-12)


def test_categorical_training_data_are_coded_and_take_the_fused_path(monkeypatch):
    """The run codes categorical data (no raw walk) and its FirstOrder iterations take the
    gradient sweep."""
    from smart_lgbm._engine import run as run_module
    from smart_lgbm._engine.walk import forest as forest_module

    rng = np.random.default_rng(7)
    frame, y = _frames(rng, 12_000)
    runs = []
    original = run_module.BoostingRun.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        runs.append((self.train.walk, [v.walk for v in self.valids], self.sweep is not None))

    raw_walks = []
    monkeypatch.setattr(run_module.BoostingRun, "__init__", spy)
    monkeypatch.setattr(forest_module._k, "walk_dense", lambda *a: raw_walks.append(a))
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=sl.SlowPathWarning)
        sl.train({**BASE, "objective": "binary"}, lgb.Dataset(frame, y), 5, sampler=sl.FirstOrder(rate=0.2),
                 valid_sets=[lgb.Dataset(frame.iloc[:2000], y[:2000])])
    ((train_walk, valid_walks, fused),) = runs
    assert isinstance(train_walk, BinCodes) and train_walk.wide.shape[0] == 1  # the 700-level column
    assert all(isinstance(w, BinCodes) for w in valid_walks)
    assert fused and raw_walks == []
