"""LambdaRank gradients: against a plain-Python reference and against stock LightGBM."""

from __future__ import annotations

import math

import lightgbm as lgb
import numpy as np
import pytest

from smart_lgbm.losses._ranking import DEFAULT_LABEL_GAIN
from smart_lgbm.datasets.ranking import load_rank_sample
from smart_lgbm.losses.base import Target
from smart_lgbm.losses.lambdarank import NO_TRUNCATION, LambdaRank, warmup

F32 = np.float32


def _ref_sigmoid_table_lookup(delta: float, sigmoid: float) -> float:
    """LightGBM's table sigmoid, one entry evaluated on demand (2**20 bins)."""
    bins = 1024 * 1024
    lo = -50.0 / sigmoid / 2.0
    hi = -lo
    factor = bins / (hi - lo)
    if delta <= lo:
        k = 0
    elif delta >= hi:
        k = bins - 1
    else:
        k = int((delta - lo) * factor)
    x = k / factor + lo
    return 1.0 / (1.0 + math.exp(x * sigmoid))


def _ref_max_dcg(labels, gains, k):
    ordered = sorted(labels, reverse=True)[: min(k, len(labels))]
    return sum(gains[lab] / math.log2(2.0 + r) for r, lab in enumerate(ordered))


def reference_lambdarank(raw, label, group, weight=None, sigmoid=1.0, gains=DEFAULT_LABEL_GAIN,
                         truncation=30, norm=True, exact_sigmoid=False):
    """LightGBM's LambdarankNDCG written out with plain loops.

    Per-document sums are float32, as LightGBM's ``score_t``; with ``exact_sigmoid`` the
    sigmoid is ``1/(1+exp(.))`` in float64 and sums are float64 (the pure math).
    """
    acc_type = float if exact_sigmoid else F32
    grad = np.zeros(len(raw))
    hess = np.zeros(len(raw))
    start = 0
    for size in group:
        idx = list(range(start, start + size))
        s = [float(raw[i]) for i in idx]
        lab = [int(label[i]) for i in idx]
        # Stable sort, descending by score: Python's sort is stable.
        order = sorted(range(size), key=lambda a: -s[a])
        max_dcg = _ref_max_dcg(lab, gains, truncation)
        inv = 1.0 / max_dcg if max_dcg > 0 else 0.0
        lam = [acc_type(0.0)] * size
        hes = [acc_type(0.0)] * size
        spread = s[order[0]] != s[order[-1]]
        total = 0.0
        for i in range(min(size - 1, truncation)):
            for j in range(i + 1, size):
                a, b = order[i], order[j]
                if lab[a] == lab[b]:
                    continue
                (h, rh), (l, rl) = ((a, i), (b, j)) if lab[a] > lab[b] else ((b, j), (a, i))
                delta = s[h] - s[l]
                d = (gains[lab[h]] - gains[lab[l]]) * abs(1 / math.log2(2 + rh) - 1 / math.log2(2 + rl)) * inv
                if norm and spread:
                    d /= float(F32(0.01)) + abs(delta)
                if exact_sigmoid:
                    rho = 1.0 / (1.0 + math.exp(sigmoid * delta))
                else:
                    rho = _ref_sigmoid_table_lookup(delta, sigmoid)
                # LightGBM's association order: rho * (-sigmoid * d), rho (1 - rho) * (sigmoid^2 d).
                g_pair = rho * (-sigmoid * d)
                h_pair = (rho * (1.0 - rho)) * (sigmoid * sigmoid * d)
                lam[l] = lam[l] - acc_type(g_pair)
                lam[h] = lam[h] + acc_type(g_pair)
                hes[l] = hes[l] + acc_type(h_pair)
                hes[h] = hes[h] + acc_type(h_pair)
                total -= 2 * g_pair
        if norm and total > 0:
            factor = math.log2(1 + total) / total
            lam = [acc_type(float(v) * factor) for v in lam]
            hes = [acc_type(float(v) * factor) for v in hes]
        for k, i in enumerate(idx):
            wi = 1.0 if weight is None else (weight[i] if exact_sigmoid else F32(weight[i]))
            grad[i] = float(acc_type(lam[k] * wi))
            hess[i] = float(acc_type(hes[k] * wi))
        start += size
    return grad, hess


def _case():
    """Ties, equal labels, a one-document query, a query without relevant documents."""
    raw = np.array([
        0.5, 0.5, -1.0, 2.0, 0.5, 0.0,        # q0: ties at 0.5, mixed labels
        1.0,                                  # q1: single document
        0.3, -0.2, 0.3, 0.1,                  # q2: all labels 0 (max DCG 0)
        0.0, 0.0, 0.0, 0.0, 0.0,              # q3: every score tied
        1.5, -0.5, 0.25, 0.25, 3.0, -2.0, 0.7,  # q4: labels 1,1,3,0,2,2,4
        0.2, 0.4, 0.6,                        # q5: all labels equal (2)
    ])
    label = np.array([
        2, 0, 1, 1, 3, 0,
        4,
        0, 0, 0, 0,
        1, 0, 2, 0, 1,
        1, 1, 3, 0, 2, 2, 4,
        2, 2, 2,
    ], dtype=np.float64)
    group = np.array([6, 1, 4, 5, 7, 3])
    return raw, label, group


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"norm": False},
        {"truncation_level": 2},
        {"sigmoid": 2.0, "truncation_level": 3},
        {"sigmoid": 0.5, "norm": False, "truncation_level": NO_TRUNCATION},
        {"label_gain": [0.0, 1.0, 3.0, 4.0, 10.0]},
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_plain_reference_exactly(kwargs, weighted):
    raw, label, group = _case()
    weight = np.linspace(0.5, 2.0, raw.size) if weighted else None
    loss = LambdaRank(**kwargs)
    grad, hess = loss.gradient_hessian(raw, Target(label=label, weight=weight, group=group))
    ref_g, ref_h = reference_lambdarank(
        raw, label, group, weight=weight, sigmoid=loss.sigmoid, gains=list(loss.gains),
        truncation=loss.truncation_level, norm=loss.norm,
    )
    assert grad.dtype == np.float64 and hess.dtype == np.float64
    np.testing.assert_array_equal(grad, ref_g)
    np.testing.assert_array_equal(hess, ref_h)
    # The exact-sigmoid float64 math agrees up to the table's resolution.
    exact_g, exact_h = reference_lambdarank(
        raw, label, group, weight=weight, sigmoid=loss.sigmoid, gains=list(loss.gains),
        truncation=loss.truncation_level, norm=loss.norm, exact_sigmoid=True,
    )
    np.testing.assert_allclose(grad, exact_g, atol=2e-4 * max(1.0, np.abs(exact_g).max()))
    np.testing.assert_allclose(hess, exact_h, atol=2e-4 * max(1.0, np.abs(exact_h).max()))


def test_special_queries_get_zero_and_pairs_balance():
    raw, label, group = _case()
    grad, hess = LambdaRank().gradient_hessian(raw, Target(label=label, group=group))
    bounds = np.concatenate(([0], np.cumsum(group)))
    for q in (1, 2, 5):  # single document, no relevant document, one label only
        assert np.all(grad[bounds[q]:bounds[q + 1]] == 0) and np.all(hess[bounds[q]:bounds[q + 1]] == 0)
    for q in (0, 3, 4):
        g = grad[bounds[q]:bounds[q + 1]]
        assert np.any(g != 0) and np.all(hess[bounds[q]:bounds[q + 1]] >= 0)
        assert abs(g.sum()) < 1e-6 * np.abs(g).sum()  # each pair adds +l and -l
    # The most relevant document of q4 (label 4) is pushed up: negative gradient.
    assert grad[bounds[4] + 6] < 0


def test_tie_order_is_stable():
    # Two tied documents: LightGBM ranks the first row higher; swapping rows changes which
    # one is at position 0, so the gradients must follow the rows, not the labels.
    loss = LambdaRank(norm=False)
    g1, _ = loss.gradient_hessian(np.array([0.0, 0.0, -1.0]), Target(label=np.array([0.0, 2.0, 1.0]), group=np.array([3])))
    g2, _ = loss.gradient_hessian(np.array([0.0, 0.0, -1.0]), Target(label=np.array([2.0, 0.0, 1.0]), group=np.array([3])))
    assert not np.allclose(g1[[1, 0, 2]], g2)
    ref = reference_lambdarank(np.array([0.0, 0.0, -1.0]), [0, 2, 1], [3], norm=False)[0]
    np.testing.assert_array_equal(g1, ref)


def test_minus_infinity_scores_are_skipped_like_lightgbm():
    raw = np.array([1.0, -np.inf, 0.0, 0.5])
    label = np.array([0.0, 3.0, 1.0, 2.0])
    grad, hess = LambdaRank().gradient_hessian(raw, Target(label=label, group=np.array([4])))
    assert grad[1] == 0 and hess[1] == 0
    assert np.all(np.isfinite(grad)) and np.any(grad != 0)


def _rank_sample_trees(loss, rounds, weight=None, params=None):
    (X, y, group), _ = load_rank_sample()
    base = {"verbose": -1, "num_leaves": 15, "min_data_in_leaf": 20, "num_threads": 1,
            "deterministic": True, "force_row_wise": True, **(params or {})}
    stock = lgb.train({**base, **loss.lightgbm_params()},
                      lgb.Dataset(X, y, group=group, weight=weight), num_boost_round=rounds)
    target = Target(label=y.astype(np.float32).astype(np.float64), group=group,
                    weight=None if weight is None else weight.astype(np.float32).astype(np.float64))
    ours = lgb.train({**base, "objective": lambda preds, _: loss.gradient_hessian(preds, target)},
                     lgb.Dataset(X, y, group=group, weight=weight), num_boost_round=rounds)

    def trees(booster):
        text = booster.model_to_string()
        return text[text.index("Tree=0"):text.index("end of trees")]

    return trees(stock), trees(ours), stock, ours


def test_first_tree_equals_stock_lightgbm():
    stock_trees, our_trees, stock, ours = _rank_sample_trees(LambdaRank(), 1)
    s, o = stock.dump_model()["tree_info"][0], ours.dump_model()["tree_info"][0]

    def splits(node):
        if "split_feature" not in node:
            return [("leaf", node["leaf_value"])]
        return [(node["split_feature"], node["threshold"])] + splits(node["left_child"]) + splits(node["right_child"])

    assert len(splits(s["tree_structure"])) > 3
    assert splits(s["tree_structure"]) == splits(o["tree_structure"])
    # Bit-identical gradients make the whole tree text (gains, leaf values, counts) equal.
    assert stock_trees == our_trees


@pytest.mark.parametrize(
    "loss, weighted",
    [(LambdaRank(), True), (LambdaRank.plain(), False), (LambdaRank(sigmoid=2.0, truncation_level=5), False)],
)
def test_several_rounds_equal_stock_lightgbm(loss, weighted):
    weight = np.random.default_rng(3).uniform(0.2, 2.0, 3005) if weighted else None
    stock_trees, our_trees, _, _ = _rank_sample_trees(loss, 4, weight=weight)
    assert stock_trees == our_trees


def test_lightgbm_params_and_plain():
    loss = LambdaRank(sigmoid=1.5, truncation_level=10, norm=False, label_gain=[0, 1, 3])
    assert loss.lightgbm_params() == {
        "objective": "lambdarank", "sigmoid": 1.5, "label_gain": [0.0, 1.0, 3.0],
        "lambdarank_truncation_level": 10, "lambdarank_norm": False,
    }
    assert LambdaRank().lightgbm_params()["label_gain"] == [float(2**i - 1) for i in range(31)]
    plain = LambdaRank.plain(sigmoid=2.0)
    assert not plain.norm and plain.truncation_level == NO_TRUNCATION and plain.sigmoid == 2.0
    assert (LambdaRank.lightgbm_objective, LambdaRank.default_metric, LambdaRank.needs_group) == ("lambdarank", "ndcg", True)
    assert LambdaRank().model_objective_line() == "lambdarank"


def test_per_row_loss_matches_reference():
    raw, label, group = _case()
    weight = np.linspace(0.5, 2.0, raw.size)
    loss = LambdaRank(truncation_level=3)
    per_row = loss.loss(raw, Target(label=label, weight=weight, group=group))
    expected = np.zeros(raw.size)
    start = 0
    gains = DEFAULT_LABEL_GAIN
    for size in group:
        s, lab = raw[start:start + size], label[start:start + size].astype(int)
        order = sorted(range(size), key=lambda a: -s[a])
        max_dcg = _ref_max_dcg(list(lab), gains, 3)
        inv = 1.0 / max_dcg if max_dcg > 0 else 0.0
        for i in range(min(size - 1, 3)):
            for j in range(i + 1, size):
                a, b = order[i], order[j]
                if lab[a] == lab[b]:
                    continue
                h, l_ = (a, b) if lab[a] > lab[b] else (b, a)
                d = abs(gains[lab[a]] - gains[lab[b]]) * abs(1 / math.log2(2 + i) - 1 / math.log2(2 + j)) * inv
                pair = d * math.log1p(math.exp(-(s[h] - s[l_])))
                expected[start + a] += pair / 2
                expected[start + b] += pair / 2
        start += size
    np.testing.assert_allclose(per_row, expected * weight, rtol=1e-12, atol=1e-15)
    assert np.all(per_row >= 0) and per_row.sum() > 0


def test_cache_is_reused_and_keyed_by_settings():
    raw, label, group = _case()
    target = Target(label=label, group=group)
    LambdaRank().gradient_hessian(raw, target)
    n_entries = len(target.cache)
    LambdaRank(sigmoid=3.0).gradient_hessian(raw, target)  # same gains and truncation
    assert len(target.cache) == n_entries
    LambdaRank(truncation_level=2).gradient_hessian(raw, target)
    assert len(target.cache) == n_entries + 1


@pytest.mark.parametrize(
    "label, group, weight, match",
    [
        (np.array([0.0, 1.0, 2.0]), None, None, "group"),
        (np.array([0.0, 1.0, 2.0]), np.array([1, 1]), None, "group"),
        (np.array([0.0, 1.0, 2.0]), np.array([3, 0]), None, "group"),
        (np.array([0.0, 1.0, 2.0]), np.array([1.5, 1.5]), None, "group"),
        (np.array([0.0, 1.0, 2.0]), np.array([[3]]), None, "group"),
        (np.array([0.0, -1.0, 2.0]), np.array([3]), None, "label"),
        (np.array([0.0, 1.5, 2.0]), np.array([3]), None, "label"),
        (np.array([0.0, np.nan, 2.0]), np.array([3]), None, "label"),
        (np.array([0.0, 31.0, 2.0]), np.array([3]), None, "label_gain"),
        (np.array([0.0, 1.0, 2.0]), np.array([3]), np.ones(2), "weight"),
    ],
)
def test_bad_targets_raise_value_error_naming_the_parameter(label, group, weight, match):
    target = Target(label=label, weight=weight, group=group)
    with pytest.raises(ValueError, match=match):
        LambdaRank().validate(target)
    with pytest.raises(ValueError, match=match):
        LambdaRank().gradient_hessian(np.zeros(3), Target(label=label, weight=weight, group=group))


def test_bad_raw_and_parameters():
    target = Target(label=np.array([0.0, 1.0]), group=np.array([2]))
    with pytest.raises(ValueError, match="raw"):
        LambdaRank().gradient_hessian(np.zeros(3), target)
    with pytest.raises(ValueError, match="raw"):
        LambdaRank().gradient_hessian(np.array([0.0, np.nan]), target)
    with pytest.raises(ValueError, match="label_gain"):
        LambdaRank(label_gain=[0.0, 1.0]).validate(Target(label=np.array([0.0, 2.0]), group=np.array([2])))
    with pytest.raises(ValueError, match="sigmoid"):
        LambdaRank(sigmoid=0.0)
    with pytest.raises(ValueError, match="truncation_level"):
        LambdaRank(truncation_level=0)
    with pytest.raises(TypeError, match="truncation_level"):
        LambdaRank(truncation_level=2.5)
    with pytest.raises(ValueError, match="label_gain"):
        LambdaRank(label_gain=[])


def test_warmup_reports_seconds():
    seconds = warmup()
    assert isinstance(seconds, float) and seconds > 0


def test_engine_full_reproduces_stock_lambdarank():
    """Issue #3: Full() through the engine on the bundled rank sample equals stock
    lgb.train(objective="lambdarank"): same first tree, NDCG@10 after 100 rounds within 0.002."""
    import smart_lgbm as sl
    from smart_lgbm.datasets import load_rank_sample

    (X, y, g), (Xt, yt, gt) = load_rank_sample()
    params = {"objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 10,
              "metric": "ndcg", "eval_at": [10], "verbosity": -1, "num_threads": 1}
    ours_eval, stock_eval = {}, {}
    ours = sl.train(params, lgb.Dataset(X, y, group=g), 100, sampler=sl.Full(),
                    valid_sets=[lgb.Dataset(Xt, yt, group=gt)], callbacks=[lgb.record_evaluation(ours_eval)])
    train = lgb.Dataset(X, y, group=g)
    stock = lgb.train(params, train, 100, valid_sets=[lgb.Dataset(Xt, yt, group=gt, reference=train)],
                      callbacks=[lgb.record_evaluation(stock_eval)])

    def first_tree(booster):
        tree = booster.model_to_string().split("Tree=0\n")[1].split("\n\n")[0]
        return [line for line in tree.split("\n") if line.split("=")[0] in ("split_feature", "threshold")]

    assert first_tree(ours) == first_tree(stock)
    assert "objective=lambdarank" in ours.model_to_string()
    assert abs(ours_eval["valid_0"]["ndcg@10"][-1] - stock_eval["valid_0"]["ndcg@10"][-1]) <= 0.002


# ------------------------------------------------------------------ kept orders between calls


def _fresh_sort(loss, raw, target):
    """The kernel that sorts every query from scratch (no kept order)."""
    from smart_lgbm.losses import _lambdarank_kernels as kernels
    from smart_lgbm.losses.lambdarank import _sigmoid_table

    prep = loss._prepared(target)
    table, lo, hi, factor = _sigmoid_table(loss.sigmoid)
    g = np.empty(target.num_rows, dtype=np.float32)
    h = np.empty(target.num_rows, dtype=np.float32)
    kernels.lambdarank_gradients(
        np.ascontiguousarray(raw, dtype=np.float64), prep["labels"], prep["gains"], prep["boundaries"],
        prep["inv_max_dcg"], prep["discount"], table, lo, hi, factor, loss.sigmoid, loss.truncation_level,
        loss.norm, prep["weight32"], prep["chunks"], g, h)
    return g, h


def _compute(loss, raw, target):
    g = np.empty(target.num_rows, dtype=np.float32)
    h = np.empty(target.num_rows, dtype=np.float32)
    loss.compute_gradients(raw, target, g, h)
    return g, h


def _assert_same_bits(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def _stable_orders(raw, sizes):
    """Each query's stable descending order (local positions), as LightGBM sorts."""
    out, start = [], 0
    for size in sizes:
        out.append(np.argsort(-raw[start:start + size], kind="stable"))
        start += size
    return np.concatenate(out)


@pytest.mark.parametrize("loss", [LambdaRank(), LambdaRank.plain(), LambdaRank(truncation_level=3)])
def test_repaired_order_equals_a_fresh_sort_with_ties(loss):
    """Iterations of small score moves, with many ties (coarse grid), -inf, -0.0 and a reset."""
    rng = np.random.default_rng(7)
    sizes = np.concatenate([rng.integers(1, 60, 200), [300, 1, 2]])
    n = int(sizes.sum())
    target = Target(label=rng.integers(0, 5, n).astype(np.float64), group=sizes,
                    weight=rng.uniform(0.5, 2.0, n))
    raw = np.round(rng.normal(size=n), 1)  # coarse: most queries hold ties
    raw[rng.random(n) < 0.02] = -np.inf
    raw[raw == 0.0] = -0.0
    kept = None
    for it in range(8):
        if it == 5:
            raw = -raw  # unrelated scores: the repair must give up and sort afresh
            raw[raw == np.inf] = -np.inf
        got = _compute(loss, raw, target)
        want = _fresh_sort(loss, raw, target)
        _assert_same_bits(got[0], want[0])
        _assert_same_bits(got[1], want[1])
        kept = target.cache["lambdarank_orders"]
        assert kept.filled
        np.testing.assert_array_equal(kept.orders, _stable_orders(raw, sizes))
        step = np.round(rng.normal(scale=0.05, size=n), 1)  # small moves; many stay put or tie
        raw = np.where(np.isinf(raw), raw, raw + step)


def test_kept_orders_belong_to_their_target():
    """Two runs (two Targets on the same rows) keep separate orders; a foreign or
    scrambled kept order changes nothing but time."""
    raw, label, group = _case()
    loss = LambdaRank()
    a, b = Target(label=label, group=group), Target(label=label, group=group)
    ga = _compute(loss, raw, a)
    gb = _compute(loss, raw[::-1].copy(), b)
    assert a.cache["lambdarank_orders"] is not b.cache["lambdarank_orders"]
    _assert_same_bits(_compute(loss, raw, a)[0], ga[0])
    # scramble a's kept order (still a permutation per query, but far from sorted)
    kept = a.cache["lambdarank_orders"]
    bounds = np.concatenate(([0], np.cumsum(group)))
    for q in range(len(group)):
        kept.orders[bounds[q]:bounds[q + 1]] = kept.orders[bounds[q]:bounds[q + 1]][::-1]
    _assert_same_bits(_compute(loss, raw, a)[0], ga[0])
    _assert_same_bits(gb[0], _fresh_sort(loss, raw[::-1].copy(), b)[0])


# ------------------------------------------------------------------ vectorised pair passes


def test_sigmoid_bin_is_lightgbms_table_index():
    """The branch-free bin (float clamp before the conversion) reads the entry LightGBM's
    branches read, at the table's edges, just inside them and in between."""
    from numba import njit

    from smart_lgbm.losses import _lambdarank_kernels as kernels
    from smart_lgbm.losses.lambdarank import _sigmoid_table

    @njit
    def bins(x, lo, hi, factor, last):
        out = np.empty(x.shape[0], dtype=np.int64)
        for t in range(x.shape[0]):
            out[t] = kernels._sigmoid_bin(x[t], lo, hi, factor, last)
        return out

    for sigmoid in (1.0, 2.0, 0.37):
        table, lo, hi, factor = _sigmoid_table(sigmoid)
        edges = [lo, hi, 0.0, -0.0, np.inf, -np.inf, 1e-300, -1e-300]
        xs = np.array(edges + [np.nextafter(e, d) for e in (lo, hi) for d in (-np.inf, np.inf)]
                      + list(np.random.default_rng(3).uniform(1.2 * lo, 1.2 * hi, 20_000)))
        want = [0 if x <= lo else table.shape[0] - 1 if x >= hi else min(int((x - lo) * factor), table.shape[0] - 1)
                for x in xs]
        np.testing.assert_array_equal(bins(xs, lo, hi, factor, table.shape[0] - 1), want)
    # A NaN difference (two +inf scores) reads entry 0 instead of out of bounds.
    assert bins(np.array([np.nan]), lo, hi, factor, table.shape[0] - 1)[0] == 0


@pytest.mark.parametrize("kwargs", [{}, {"norm": False}, {"truncation_level": NO_TRUNCATION}])
def test_plus_infinity_scores_match_the_reference(kwargs):
    """A +inf score (one per query) falls past the table's top edge and, with ``norm``, has
    its pairs' dNDCG divided by +inf: the reference's LightGBM arithmetic."""
    raw, label, group = _case()
    raw = raw.copy()
    bounds = np.concatenate(([0], np.cumsum(group)))
    raw[bounds[:-1] + 1 - (group == 1)] = np.inf  # second document of each query (first if single)
    loss = LambdaRank(**kwargs)
    grad, hess = loss.gradient_hessian(raw, Target(label=label, group=group))
    ref_g, ref_h = reference_lambdarank(raw, label, group, truncation=loss.truncation_level, norm=loss.norm)
    np.testing.assert_array_equal(grad, ref_g)
    np.testing.assert_array_equal(hess, ref_h)


def _long_and_short_queries(seed):
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([[1500], rng.integers(1, 80, 150), [2, 1, 700]])
    n = int(sizes.sum())
    label = rng.choice(5, n, p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(np.float64)
    raw = np.round(rng.normal(size=n), 2)  # ties in most queries
    raw[rng.random(n) < 0.01] = -np.inf
    return raw, label, sizes, rng


@pytest.mark.parametrize("loss", [LambdaRank(), LambdaRank(norm=False, truncation_level=7)])
def test_gradients_equal_the_reference_at_any_thread_count_and_kept_order(loss):
    """Long and short queries, ties and -inf: the same bits at 1 and 2 threads, fresh or
    repairing a stale kept order, and equal to the plain reference (LightGBM's loops)."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs with one thread here")
    raw, label, sizes, rng = _long_and_short_queries(11)
    finite = np.isfinite(raw)
    stale = np.where(finite, raw + np.round(rng.normal(scale=0.05, size=raw.size), 2), raw)
    before = numba.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            target = Target(label=label, group=sizes)
            got.append(_compute(loss, raw, target))  # fresh sort
            _compute(loss, stale, target)
            got.append(_compute(loss, raw, target))  # repaired from the stale scores' order
            got.append(_fresh_sort(loss, raw, target))
    finally:
        numba.set_num_threads(before)
    for g, h in got:
        _assert_same_bits(g, got[0][0])
        _assert_same_bits(h, got[0][1])
    # The reference has no -inf rule: compare it on the finite scores.
    raw_finite = np.where(finite, raw, -9.0)
    ref_g, ref_h = reference_lambdarank(raw_finite, label, sizes, truncation=loss.truncation_level, norm=loss.norm)
    g, h = _compute(loss, raw_finite, Target(label=label, group=sizes))
    np.testing.assert_array_equal(g.astype(np.float64), ref_g)
    np.testing.assert_array_equal(h.astype(np.float64), ref_h)
