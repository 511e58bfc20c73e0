"""Categorical columns of CSV and Parquet tables in comparisons: read as LightGBM reads pandas
categoricals, declared in the data table or recognised by their type, and given to the peers."""

from __future__ import annotations

import importlib.util

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from test_walk import _nodes  # a tree's split nodes

from smart_lgbm.compare.config import ConfigError, ConfigTypeError, DataSpec, parse_config
from smart_lgbm.compare.data import load_data, make_datasets
from smart_lgbm.compare.methods import run_method

PARAMS = {"objective": "binary", "num_leaves": 7, "min_data_in_leaf": 5, "min_data_per_group": 5,
          "cat_smooth": 1.0, "num_threads": 1, "verbosity": -1, "seed": 0, "deterministic": True}


def _frames(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A training and a validation table: a text column (the validation one has levels the
    training one lacks, and missing values), an integer code column, two numeric ones."""
    n, m = 600, 300
    city = np.array([f"c{i}" for i in range(12)])
    effect = dict(zip(city, rng.normal(scale=1.5, size=len(city)), strict=True))

    def frame(rows: int, levels: np.ndarray) -> pd.DataFrame:
        c = rng.choice(levels, rows)
        store = rng.integers(0, 40, rows) * 3  # integer codes, not 0..k-1
        x = rng.normal(size=rows)
        score = np.array([effect.get(v, 0.0) for v in c]) + 0.8 * x + (store % 2) + rng.normal(size=rows)
        out = pd.DataFrame({"x": x, "city": c, "store": store, "z": rng.normal(size=rows),
                            "y": (score > 0.5).astype(int)})
        return out

    train = frame(n, city[:10])
    valid = frame(m, city)  # c10 and c11 are unseen in training
    valid.loc[valid.index[:7], "city"] = np.nan
    return train, valid


def test_text_columns_are_categorical_and_match_lightgbms_pandas_categoricals(tmp_path):
    train, valid = _frames(np.random.default_rng(0))
    train.to_csv(tmp_path / "train.csv", index=False)
    valid.to_csv(tmp_path / "valid.csv", index=False)
    spec = DataSpec("csv", train=tmp_path / "train.csv", valid=tmp_path / "valid.csv", label="y",
                    categorical=("store",))
    data = load_data(spec)
    assert data.categorical == (1, 2)  # city (text) and store (declared), in feature order
    assert "(2 of them categorical)" in data.description
    # codes: the training table's sorted categories; unseen and missing values are NaN
    city = data.valid.X[:, 1]
    unseen = valid["city"].isin(["c10", "c11"]).to_numpy() | valid["city"].isna().to_numpy()
    assert np.isnan(city[unseen]).all() and not np.isnan(city[~unseen]).any()
    assert np.array_equal(data.train.X[:, 1], pd.Categorical(train["city"]).codes.astype(float))

    ours_train, ours_valid = make_datasets(data)
    ours = lgb.train(PARAMS, ours_train, 20)
    # LightGBM on the same tables as pandas categoricals (its own mapping of the validation
    # table onto the training table's categories) gives the same trees and predictions
    features = ["x", "city", "store", "z"]

    def as_pandas(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame[features].copy()
        for column in ("city", "store"):
            categories = pd.Index(sorted(train[column].unique()))
            out[column] = pd.Categorical.from_codes(categories.get_indexer(out[column]), categories)
        return out

    theirs = lgb.train(PARAMS, lgb.Dataset(as_pandas(train), train["y"]), 20)
    assert theirs.dump_model()["tree_info"] == ours.dump_model()["tree_info"]
    np.testing.assert_array_equal(ours.predict(data.valid.X, raw_score=True),
                                  theirs.predict(as_pandas(valid), raw_score=True))
    assert any(node.get("decision_type") == "=="
               for tree in ours.dump_model()["tree_info"] for node in _nodes(tree))  # categorical splits were made


@pytest.mark.skipif(not (importlib.util.find_spec("pyarrow") or importlib.util.find_spec("fastparquet")),
                    reason="no Parquet engine (the compare extra installs pyarrow)")
def test_parquet_category_columns_in_different_orders_read_as_one_mapping(tmp_path):
    train, valid = _frames(np.random.default_rng(1))
    train["city"] = pd.Categorical(train["city"], categories=sorted(train["city"].dropna().unique()))
    # the validation table's categories in another order: values, not codes, must match
    valid["city"] = pd.Categorical(valid["city"], categories=sorted(valid["city"].dropna().unique(), reverse=True))
    train.to_parquet(tmp_path / "train.parquet")
    valid.to_parquet(tmp_path / "valid.parquet")
    data = load_data(DataSpec("parquet", train=tmp_path / "train.parquet", valid=tmp_path / "valid.parquet",
                              label="y"))
    assert data.categorical == (1,)  # the category column; store stays numeric undeclared
    codes = sorted(train["city"].cat.categories)
    expect = [codes.index(v) if v in codes else np.nan for v in valid["city"].astype(object)]
    np.testing.assert_array_equal(data.valid.X[:, 1], np.array(expect, dtype=float))


def test_split_without_a_validation_file_shares_the_codes(tmp_path):
    train, _ = _frames(np.random.default_rng(2))
    train.to_csv(tmp_path / "t.csv", index=False)
    data = load_data(DataSpec("csv", train=tmp_path / "t.csv", label="y", test_size=0.25, seed=3))
    assert data.categorical == (1,)
    levels = sorted(train["city"].unique())
    both = np.concatenate([data.train.X[:, 1], data.valid.X[:, 1]])
    assert set(both.tolist()) == set(range(len(levels)))


def test_categorical_key_is_checked(tmp_path):
    (tmp_path / "t.csv").write_text("a,b,y\n1,2,0\n")

    def parse(data: dict) -> None:
        raw = {"methods": {"stock_full": {}},
               "experiments": [{"name": "e", "metric": "auc",
                                "data": {"source": "csv", "train": "t.csv", "label": "y", **data}}]}
        parse_config(raw, tmp_path)

    with pytest.raises(ConfigTypeError, match="key 'categorical' must be a non-empty list of column names"):
        parse({"categorical": "city"})
    with pytest.raises(ConfigError, match="key 'categorical' lists 'y', which is not a feature column"):
        parse({"categorical": ["y"]})
    with pytest.raises(ConfigError, match="key 'categorical' lists 'b', which is not a feature column"):
        parse({"features": ["a"], "categorical": ["b"]})
    with pytest.raises(ConfigError, match="key 'categorical' repeats 'a'"):
        parse({"categorical": ["a", "a"]})
    with pytest.raises(ConfigError, match="key 'categorical'"):  # a key of table sources only
        raw = {"methods": {"stock_full": {}},
               "experiments": [{"name": "e", "metric": "auc",
                                "data": {"source": "bundled", "name": "a9a", "categorical": ["a"]}}]}
        parse_config(raw, tmp_path)


def test_missing_declared_column_and_text_in_a_numeric_column_name_the_key(tmp_path):
    train, _ = _frames(np.random.default_rng(4))
    train.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ConfigError, match="key 'categorical' names missing columns \\['shop'\\]"):
        load_data(DataSpec("csv", train=tmp_path / "t.csv", label="y", categorical=("shop",)))
    train.drop(columns=["z"]).to_csv(tmp_path / "v.csv", index=False)
    with pytest.raises(ConfigError, match="the validation file lacks the training file's feature columns \\['z'\\]"):
        load_data(DataSpec("csv", train=tmp_path / "t.csv", valid=tmp_path / "v.csv", label="y"))
    train["y"] = np.where(train["y"] > 0, "yes", "no")
    train.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ConfigError, match="label column 'y' holds values that are not numbers"):
        load_data(DataSpec("csv", train=tmp_path / "t.csv", label="y"))


@pytest.mark.parametrize("fault", ["text_in_numeric", "text_label", "scattered_query"])
def test_a_fault_of_the_validation_file_names_that_file(tmp_path, fault):
    train, valid = _frames(np.random.default_rng(6))
    train["q"] = np.arange(len(train)) // 20
    valid["q"] = np.arange(len(valid)) // 20
    if fault == "text_in_numeric":
        valid["z"] = valid["z"].astype(object)
        valid.loc[valid.index[3], "z"] = "unknown"
        message = "a numeric feature column holds values that are not numbers"
    elif fault == "text_label":
        valid["y"] = np.where(valid["y"] > 0, "yes", "no")
        message = "label column 'y' holds values that are not numbers"
    else:
        valid.loc[valid.index[0], "q"] = valid["q"].iloc[-1]  # query rows no longer contiguous
        message = "group column 'q'"
    train.to_csv(tmp_path / "train.csv", index=False)
    valid.to_csv(tmp_path / "valid.csv", index=False)
    spec = DataSpec("csv", train=tmp_path / "train.csv", valid=tmp_path / "valid.csv", label="y",
                    group="q", categorical=("store",))
    with pytest.raises(ConfigError) as raised:
        load_data(spec)
    assert str(raised.value).startswith(f"[data] key 'valid' ({tmp_path / 'valid.csv'}): {message}"), raised.value


def test_compare_trains_the_engine_on_a_csv_with_text_categories(tmp_path, compare_config):
    train, valid = _frames(np.random.default_rng(5))
    train.to_csv(tmp_path / "train.csv", index=False)
    valid.to_csv(tmp_path / "valid.csv", index=False)
    exp = compare_config("""
        rounds = 6
        [params]
        num_leaves = 7
        min_data_in_leaf = 5
        num_threads = 1
        [methods.stock_full]
        [methods.full]
        [methods.first_order]
        rate = 0.5
        [[experiments]]
        name = "t"
        metric = "binary_logloss"
        data = { source = "csv", train = "train.csv", valid = "valid.csv", label = "y", categorical = ["store"] }
        params = { objective = "binary" }
    """).experiments[0]
    data = load_data(exp.data)
    stock = run_method(exp.method("stock_full"), exp, data, seed=0)
    full = run_method(exp.method("full"), exp, data, seed=0)
    sampled = run_method(exp.method("first_order"), exp, data, seed=0)
    # Full() is stock LightGBM's algorithm on the same categorical Datasets
    np.testing.assert_allclose(full.values, stock.values, rtol=0, atol=1e-12)
    assert len(sampled.values) == 6 and np.all(np.isfinite(sampled.values))


@pytest.mark.parametrize("kind", ["xgboost_hist", "catboost"])
def test_peers_get_the_categorical_columns(tmp_path, kind, compare_config):
    pytest.importorskip("xgboost" if kind == "xgboost_hist" else "catboost")
    from smart_lgbm.compare.data import ExperimentData, Split
    from smart_lgbm.compare.peer_runs import run_peer

    rng = np.random.default_rng(6)
    n = 4000
    # the label depends on the category alone, through an effect that no order of the codes
    # makes monotone: a numeric split on the codes needs many cuts, a categorical one one
    cat = rng.integers(0, 30, n).astype(float)
    cat[rng.random(n) < 0.05] = np.nan
    effect = rng.permutation(np.r_[np.full(15, -2.0), np.full(15, 2.0)])
    score = np.where(np.isnan(cat), 0.0, effect[np.nan_to_num(cat, nan=0).astype(int)])
    y = (score + rng.normal(scale=0.5, size=n) > 0).astype(float)
    X = np.column_stack([cat, rng.normal(size=n)])
    data = ExperimentData(Split(X[:3000], y[:3000]), Split(X[3000:], y[3000:]), "test", categorical=(0,))
    exp = compare_config(f"""
        rounds = 3
        [params]
        num_leaves = 3
        num_threads = 1
        learning_rate = 0.5
        [methods.{kind}]
        [[experiments]]
        name = "t"
        metric = "binary_logloss"
        data = {{ source = "bundled", name = "a9a" }}
        params = {{ objective = "binary" }}
    """).experiments[0]
    (values, _, seconds, _), _ = run_peer(exp.method(kind), exp, data, seed=0, rounds=3)
    numeric = ExperimentData(data.train, data.valid, "test")
    (plain, _, _, _), _ = run_peer(exp.method(kind), exp, numeric, seed=0, rounds=3)
    assert len(values) == len(seconds) == 3
    # three 3-leaf trees on the categories fit the label far better than on codes as numbers
    assert values[-1] < plain[-1] - 0.05
