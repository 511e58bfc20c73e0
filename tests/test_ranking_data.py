"""Ranking data readers and the MSLR-like and Yahoo-like (sparse) generators."""

from __future__ import annotations

import gzip

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp

from smart_lgbm.datasets import (
    load_lightgbm_ranking,
    load_rank_sample,
    load_svmlight_ranking,
    make_mslr_like,
    make_mslr_like_split,
    make_yahoo_like,
    make_yahoo_like_split,
    train_test_split_by_query,
)
from smart_lgbm.datasets.ranking import group_from_qid

LETOR = (
    "2 qid:10 1:0.5 3:1.5\n"
    "0 qid:10 2:2.0\n"
    "1 qid:10 1:1.0 2:1.0 3:1.0\n"
    "0 qid:7 3:4.0\n"
    "3 qid:9 1:0.25\n"
    "1 qid:9 2:0.75\n"
)


def _write(path, text):
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["train.txt", "train.txt.gz"])
def test_svmlight_ranking_reads_qids_as_groups(tmp_path, name):
    X, y, group = load_svmlight_ranking(_write(tmp_path / name, LETOR))
    assert group.tolist() == [3, 1, 2]
    assert y.tolist() == [2, 0, 1, 0, 3, 1]
    assert X.shape == (6, 4)  # LightGBM's convention: index k -> column k
    assert X[0, 1] == 0.5 and X[0, 3] == 1.5 and X[3, 3] == 4.0 and X[0, 0] == 0
    X1, _, _ = load_svmlight_ranking(tmp_path / name, n_features=10, zero_based=False)
    assert X1.shape == (6, 10) and X1[0, 0] == 0.5


def test_svmlight_ranking_rejects_non_contiguous_queries(tmp_path):
    path = _write(tmp_path / "bad.txt", LETOR + "1 qid:10 1:1.0\n")
    with pytest.raises(ValueError, match="qid 10"):
        load_svmlight_ranking(path)
    with pytest.raises(ValueError, match="qid"):
        group_from_qid(np.array([1, 2, 1]))
    assert group_from_qid(np.array([5, 5, 1, 9, 9, 9])).tolist() == [2, 1, 3]


def test_lightgbm_layout_finds_query_file(tmp_path):
    data = "".join(line.split(" ", 2)[0] + " " + line.split(" ", 2)[2] for line in LETOR.splitlines(True))
    path = _write(tmp_path / "rank.train.gz", data)
    _write(tmp_path / "rank.train.query", "3\n1\n2\n")
    X, y, group = load_lightgbm_ranking(path)
    assert group.tolist() == [3, 1, 2] and X.shape == (6, 4) and y[4] == 3
    # Explicit, compressed query file.
    q = _write(tmp_path / "sizes.gz", "4\n2\n")
    assert load_lightgbm_ranking(path, q)[2].tolist() == [4, 2]
    with pytest.raises(ValueError, match="sums to 5"):
        load_lightgbm_ranking(path, _write(tmp_path / "short.query", "3\n2\n"))
    with pytest.raises(ValueError, match="positive"):
        load_lightgbm_ranking(path, _write(tmp_path / "zero.query", "6\n0\n"))
    with pytest.raises(FileNotFoundError, match="query"):
        load_lightgbm_ranking(_write(tmp_path / "other.txt", data))


def test_rank_sample_matches_lightgbm_example():
    (X, y, group), (Xt, yt, gt) = load_rank_sample()
    assert X.shape[0] == y.shape[0] == group.sum() == 3005 and group.shape == (201,)
    assert Xt.shape[0] == yt.shape[0] == gt.sum() == 768 and gt.shape == (50,)
    assert X.shape[1] == Xt.shape[1]
    assert set(np.unique(y)) <= {0, 1, 2, 3, 4}
    # The first row of rank.train: label 0, feature 10 = 0.89 (index read as LightGBM does).
    assert y[0] == 0 and X[0, 10] == pytest.approx(0.89)


def _ndcg_curve(train_split, test_split, rounds: int = 20) -> list[float]:
    """Validation NDCG@10 per round of stock LambdaMART trained on a generator's split."""
    (X, y, g), (Xt, yt, gt) = train_split, test_split
    record: dict = {}
    train = lgb.Dataset(X, y, group=g)
    lgb.train({"objective": "lambdarank", "eval_at": [10], "verbose": -1, "num_threads": 1},
              train, rounds, valid_sets=[lgb.Dataset(Xt, yt, group=gt, reference=train)],
              valid_names=["v"], callbacks=[lgb.record_evaluation(record)])
    return record["v"]["ndcg@10"]


def test_mslr_like_shape_labels_and_queries():
    X, y, group = make_mslr_like(n_docs=60_000, n_features=40, seed=3)
    assert X.dtype == np.float32 and X.shape == (60_000, 40) and X.flags.c_contiguous
    assert y.dtype.kind == "i" and group.sum() == 60_000 and group.min() >= 1
    shares = np.bincount(y, minlength=5) / y.size
    np.testing.assert_allclose(shares, [0.52, 0.32, 0.13, 0.02, 0.01], atol=2e-3)
    assert 90 < group.mean() < 150 and group.max() > 3 * np.median(group)
    assert np.all(np.isfinite(X))
    # Query-level features are constant within a query.
    first = X[: group[0], -1]
    assert np.all(first == first[0])
    # Some queries have no relevant document, some have many.
    bounds = np.concatenate(([0], np.cumsum(group)))
    relevant = np.add.reduceat((y > 0).astype(int), bounds[:-1]) / group
    assert relevant.min() < 0.2 and relevant.max() > 0.8


def test_mslr_like_is_seeded_and_learnable():
    a = make_mslr_like(n_docs=20_000, n_features=30, seed=1)
    b = make_mslr_like(n_docs=20_000, n_features=30, seed=1)
    c = make_mslr_like(n_docs=20_000, n_features=30, seed=2)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    (X, y, g), (Xt, yt, gt) = make_mslr_like_split(n_docs=30_000, n_features=30, seed=0, test_size=0.3)
    curve = _ndcg_curve((X, y, g), (Xt, yt, gt))
    assert curve[-1] > curve[0] + 0.02 and curve[-1] > 0.6


def test_split_helpers_keep_whole_queries():
    (X, y, g), (Xt, yt, gt) = make_mslr_like_split(n_docs=20_000, n_features=10, seed=0, test_size=0.25)
    assert g.sum() == X.shape[0] == y.shape[0] and gt.sum() == Xt.shape[0] == yt.shape[0]
    assert X.shape[0] + Xt.shape[0] == 20_000
    assert abs(gt.shape[0] / (g.shape[0] + gt.shape[0]) - 0.25) < 0.02
    full = make_mslr_like(n_docs=20_000, n_features=10, seed=0)
    (X2, y2, g2), (Xt2, yt2, gt2) = train_test_split_by_query(*full, test_size=0.3, seed=5)
    assert g2.sum() == X2.shape[0] and gt2.sum() == Xt2.shape[0]
    assert g2.shape[0] + gt2.shape[0] == full[2].shape[0]
    # Every test query is a contiguous block of the original rows with its labels.
    bounds = np.concatenate(([0], np.cumsum(full[2])))
    starts = {tuple(full[0][b]) : (b, e) for b, e in zip(bounds[:-1], bounds[1:])}
    tb = 0
    for size in gt2:
        b, e = starts[tuple(Xt2[tb])]
        assert e - b == size
        np.testing.assert_array_equal(Xt2[tb:tb + size], full[0][b:e])
        np.testing.assert_array_equal(yt2[tb:tb + size], full[1][b:e])
        tb += size
    with pytest.raises(ValueError, match="test_size"):
        train_test_split_by_query(*full, test_size=1.5)


def test_generator_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_docs"):
        make_mslr_like(n_docs=0)
    with pytest.raises(ValueError, match="n_features"):
        make_mslr_like(n_docs=100, n_features=2)
    with pytest.raises(ValueError, match="max_query_size"):
        make_mslr_like(n_docs=100, max_query_size=20_000)


def test_yahoo_like_is_sparse_csr_shaped_like_set_1():
    X, y, group = make_yahoo_like(n_docs=40_000, seed=3)
    assert isinstance(X, sp.csr_matrix) and X.shape == (40_000, 700)
    assert X.dtype == np.float32 and X.indices.dtype == np.int32 and X.has_sorted_indices
    density = X.nnz / (X.shape[0] * X.shape[1])
    assert 0.10 < density < 0.25  # mostly zero, as Yahoo's features
    assert X.data.min() > 0 and X.data.max() < 1  # present values in (0, 1), absent ones not stored
    used = np.diff(X.tocsc().indptr) > 0
    assert 0.65 < used.mean() < 0.85  # about a quarter of the features never set (Set 1 uses 519 of 700)
    assert y.dtype == np.int32 and set(np.unique(y)) == {0, 1, 2, 3, 4}
    np.testing.assert_allclose(np.bincount(y) / y.size, [0.24, 0.37, 0.26, 0.09, 0.04], atol=2e-3)
    assert group.sum() == 40_000 and 21 < group.mean() < 27 and group.max() <= 140


def test_yahoo_like_is_seeded_and_its_split_is_a_slice_of_the_whole():
    X, y, g = make_yahoo_like(n_docs=20_000, n_features=60, seed=1)
    X2, y2, g2 = make_yahoo_like(n_docs=20_000, n_features=60, seed=1)
    for a, b in ((X.data, X2.data), (X.indices, X2.indices), (X.indptr, X2.indptr), (y, y2), (g, g2)):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(make_yahoo_like(n_docs=20_000, n_features=60, seed=2)[1], y)
    (Xa, ya, ga), (Xb, yb, gb) = make_yahoo_like_split(n_docs=20_000, n_features=60, seed=1, test_size=0.25)
    assert isinstance(Xa, sp.csr_matrix) and isinstance(Xb, sp.csr_matrix)
    cut = Xa.shape[0]
    assert cut == ga.sum() and Xb.shape[0] == gb.sum() and np.array_equal(np.r_[ga, gb], g)
    assert (Xa != X[:cut]).nnz == 0 and (Xb != X[cut:]).nnz == 0
    np.testing.assert_array_equal(np.r_[ya, yb], y)
    assert abs(gb.size / g.size - 0.25) < 0.01


def test_yahoo_like_labels_are_learnable_from_sparse_features():
    (X, y, g), (Xt, yt, gt) = make_yahoo_like_split(n_docs=20_000, seed=0, test_size=0.25)
    curve = _ndcg_curve((X, y, g), (Xt, yt, gt))
    assert curve[-1] > curve[0] + 0.02 and curve[-1] > 0.75


def test_yahoo_like_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_features must be an integer >= 20"):
        make_yahoo_like(n_docs=100, n_features=5)
    with pytest.raises(ValueError, match="n_docs must be an integer >= 1"):
        make_yahoo_like(n_docs=0)
    with pytest.raises(ValueError, match="test_size must be in"):
        make_yahoo_like_split(n_docs=100, test_size=1.0)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        make_yahoo_like_split(n_docs=100, mean_size=3)
