"""ndcg_at and map_at: equal to LightGBM's ``ndcg`` and ``map`` metrics and to plain references."""

from __future__ import annotations

import math

import lightgbm as lgb
import numpy as np
import pytest

from smart_lgbm.datasets.ranking import load_rank_sample
from smart_lgbm.metrics.ranking import map_at, ndcg_at, warmup


def queries(raw, label, group, weight):
    """Per query: (labels, row order by score descending with ties in row order, query
    weight as LightGBM computes it: the float32 mean of the documents' weights)."""
    start = 0
    for size in group:
        s = list(raw[start:start + size])
        qw = 1.0 if weight is None else float(np.float32(np.float32(sum(np.float32(weight[start:start + size]))) / np.float32(size)))
        yield list(label[start:start + size]), sorted(range(size), key=lambda a: -s[a]), qw
        start += size


def reference_ndcg(raw, label, group, ks, gains=None, weight=None):
    """LightGBM's NDCG semantics with plain loops (stable sort; no relevant docs -> 1)."""
    gains = gains or [2.0**i - 1 for i in range(31)]
    totals = [0.0] * len(ks)
    wsum = 0.0
    for labels, order, qw in queries(raw, label, group, weight):
        lab = [int(v) for v in labels]
        wsum += qw
        ideal_labels = sorted(lab, reverse=True)

        def dcg(labels_in_order, k):
            return sum(gains[v] / math.log2(2 + r) for r, v in enumerate(labels_in_order[:k]))

        if dcg(ideal_labels, min(ks)) <= 0:
            totals = [t + 1.0 for t in totals]
        else:
            for n, k in enumerate(ks):
                totals[n] += dcg([lab[o] for o in order], k) / dcg(ideal_labels, k) * qw
    return [t / wsum for t in totals]


def test_small_case_with_ties_and_empty_relevance():
    raw = np.array([0.5, 0.5, 0.1, 2.0,   0.3, 0.3,   1.0,   0.0, 0.0, 0.0])
    label = np.array([0, 2, 1, 0,         0, 0,       3,     1, 0, 2], dtype=float)
    group = np.array([4, 2, 1, 3])
    ks = [1, 2, 3, 5, 20]
    got = ndcg_at(raw, label, group, ks)
    np.testing.assert_allclose(got, reference_ndcg(raw, label, group, ks), rtol=1e-14)
    # Query 1 has no relevant document and counts 1.0; query 2 is perfect; query 3 ties
    # everything, so the first row (label 1) is ranked first -> DCG@1 = 1 vs ideal 3.
    per_query_at1 = [0.0, 1.0, 1.0, 1.0 / 3.0]
    assert got[0] == pytest.approx(np.mean(per_query_at1), rel=1e-14)


def test_ties_follow_row_order():
    group = np.array([2])
    assert ndcg_at(np.zeros(2), np.array([1.0, 0.0]), group, 1) == [1.0]
    assert ndcg_at(np.zeros(2), np.array([0.0, 1.0]), group, 1) == [0.0]


def test_ks_order_and_custom_gain():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=40)
    label = rng.integers(0, 3, 40).astype(float)
    group = np.array([10, 15, 5, 10])
    gains = [0.0, 1.0, 5.0]
    got = ndcg_at(raw, label, group, [10, 1, 3], label_gain=gains)
    np.testing.assert_allclose(got, reference_ndcg(raw, label, group, [10, 1, 3], gains=gains), rtol=1e-14)
    w = rng.uniform(0.1, 3.0, 40)
    np.testing.assert_allclose(ndcg_at(raw, label, group, [1, 3], weight=w),
                               reference_ndcg(raw, label, group, [1, 3], weight=w), rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("metric, fn", [("ndcg", ndcg_at), ("map", map_at)])
def test_equals_lightgbm_on_rank_sample(metric, fn, weighted):
    (X, y, group), (Xt, yt, gt) = load_rank_sample()
    weight = np.random.default_rng(1).uniform(0.1, 3.0, yt.size) if weighted else None
    train = lgb.Dataset(X, y, group=group)
    valid = lgb.Dataset(Xt, yt, group=gt, weight=weight, reference=train)
    ks = [1, 3, 5, 10]
    record: dict = {}
    booster = lgb.train(
        {"objective": "lambdarank", "metric": metric, "eval_at": ks, "verbose": -1,
         "num_leaves": 7, "min_data_in_leaf": 50, "num_threads": 1},
        train, num_boost_round=3, valid_sets=[valid], valid_names=["v"],
        callbacks=[lgb.record_evaluation(record)], keep_training_booster=True,
    )
    raw = booster.predict(Xt, raw_score=True)
    assert np.unique(raw).size < raw.size  # a small model ties many documents
    expected = [record["v"][f"{metric}@{k}"][-1] for k in ks]
    # LightGBM sums per-thread partial sums, so the last bit may differ.
    np.testing.assert_allclose(fn(raw, yt, gt, ks, weight=weight), expected, rtol=1e-13)
    assert [v for _, _, v, _ in booster.eval_valid()] == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize(
    "label, group, ks, match",
    [
        (np.array([0.0, 1.0]), None, [1], "group"),
        (np.array([0.0, 1.0]), np.array([3]), [1], "group"),
        (np.array([0.0, 1.0]), np.array([2, 0]), [1], "group"),
        (np.array([0.0, -1.0]), np.array([2]), [1], "label"),
        (np.array([0.0, 0.5]), np.array([2]), [1], "label"),
        (np.array([0.0, 40.0]), np.array([2]), [1], "label_gain"),
        (np.array([0.0, 1.0]), np.array([2]), [0], "ks"),
        (np.array([0.0, 1.0]), np.array([2]), [1.5], "ks"),
        (np.array([0.0, 1.0, 1.0]), np.array([2]), [1], "label"),
    ],
)
def test_bad_input(label, group, ks, match):
    with pytest.raises(ValueError, match=match):
        ndcg_at(np.zeros(2), label, group, ks)


def test_bad_raw_and_weight():
    with pytest.raises(ValueError, match="raw"):
        ndcg_at(np.array([0.0, np.nan]), np.array([0.0, 1.0]), np.array([2]), [1])
    with pytest.raises(ValueError, match="weight"):
        ndcg_at(np.zeros(2), np.array([0.0, 1.0]), np.array([2]), [1], weight=np.ones(3))


def reference_map(raw, label, group, ks, weight=None):
    """LightGBM's MAP@k with plain loops: relevant = label > 0.5, stable ranking, a query
    without relevant documents counts 1, queries weighted by their float32 mean weight."""
    totals = [0.0] * len(ks)
    wsum = 0.0
    for labels, order, qw in queries(raw, label, group, weight):
        rel = [float(v) > 0.5 for v in labels]
        wsum += qw
        npos = sum(rel)
        for n, k in enumerate(ks):
            hits, ap = 0, 0.0
            for j in range(min(k, len(rel))):
                if rel[order[j]]:
                    hits += 1
                    ap += hits / (j + 1.0)
            totals[n] += (ap / min(npos, min(k, len(rel))) if npos else 1.0) * qw
    return [t / wsum for t in totals]


def test_map_small_case_and_reference():
    raw = np.array([0.5, 0.5, 0.1, 2.0,   0.3, 0.3,   1.0,   0.0, 0.0, 0.0])
    label = np.array([0, 2, 1, 0,         0, 0,       3,     1, 0, 2], dtype=float)
    group = np.array([4, 2, 1, 3])
    ks = [5, 1, 2, 3, 20, 2]
    got = map_at(raw, label, group, ks)
    np.testing.assert_allclose(got, reference_map(raw, label, group, ks), rtol=1e-14)
    # k=1: query 0 ranks row 3 (label 0) first -> 0; query 1 has no relevant -> 1;
    # query 2 -> 1; query 3 ties, so row 7 (label 1) comes first -> 1.
    assert got[1] == pytest.approx(3 / 4, rel=1e-14)
    rng = np.random.default_rng(3)
    raw = np.round(rng.normal(size=60), 1)
    label = rng.integers(0, 3, 60).astype(float) * 0.5  # 0, 0.5 (not relevant), 1
    group = np.array([10, 25, 5, 20])
    w = rng.uniform(0.1, 3.0, 60)
    np.testing.assert_allclose(map_at(raw, label, group, [1, 4, 30], weight=w),
                               reference_map(raw, label, group, [1, 4, 30], weight=w), rtol=1e-12)


def test_map_bad_input():
    with pytest.raises(ValueError, match="group"):
        map_at(np.zeros(2), np.array([0.0, 1.0]), None, [1])
    with pytest.raises(ValueError, match="ks"):
        map_at(np.zeros(2), np.array([0.0, 1.0]), np.array([2]), [0])
    with pytest.raises(ValueError, match="weight"):
        map_at(np.zeros(2), np.array([0.0, 1.0]), np.array([2]), [1], weight=np.ones(3))


def test_warmup_reports_seconds():
    seconds = warmup()
    assert isinstance(seconds, float) and seconds > 0
