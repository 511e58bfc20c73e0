"""The bitmask walk over bin codes (smart_lgbm._engine.walk.bitmask) against the lockstep walk.

Both walks decide each node by the same packed test (``code_nodes``' ``info`` word), so on
any forest, random node tests included (missing codes, either default direction, codes
equal to the threshold code or the missing code), they must add the same doubles and give
the same leaves, bit for bit, with skipped rows and several trees per iteration; trees of
more than 64 leaves must keep the lockstep walk.  A training run must give the same model
byte for byte with either walk.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm import _lightgbm as L
from smart_lgbm._numba import row_kernel as _twins
from smart_lgbm._engine.walk import BinCodes, CodeBook, CodedForest, Forest, RawFeatures, add_coded_outputs
from smart_lgbm._engine.walk import _bitmask_kernels as _bk
from smart_lgbm._engine.walk import bitmask as _bm
from smart_lgbm._engine.walk._kernels import DEFAULT_SHIFT, MISS_SHIFT, NAN_CODE, NO_MISS, TCODE_SHIFT

NUM_COLUMNS = 7


def _random_tree(rng, num_leaves, base):
    """One tree in the forest layout (internal nodes, then leaves, from ``base``), grown by
    splitting a random leaf until it has ``num_leaves``; leaf indices shuffled, so they are
    not left to right."""
    m = num_leaves - 1
    n = 2 * m + 1
    info = np.empty(n, np.int64)
    child = np.empty(2 * n, np.int32)
    kids = []  # internal node i's two children, ("node", index) or ("leaf", index)
    slots = [None]  # where each current leaf hangs: (parent internal node, side); None: the root
    for i in range(m):
        parent = slots.pop(int(rng.integers(len(slots))))
        kids.append([None, None])
        if parent is not None:
            kids[parent[0]][parent[1]] = ("node", i)
        slots += [(i, 0), (i, 1)]
    if m:
        for leaf, (parent, side) in zip(rng.permutation(num_leaves), slots):
            kids[parent][side] = ("leaf", int(leaf))
    node_value = np.zeros(n)
    node_leaf = np.zeros(n, np.int32)
    for j in range(num_leaves):
        nd = m + j
        child[2 * nd] = child[2 * nd + 1] = base + nd
        node_value[nd] = rng.normal() * 2.0 ** rng.integers(-30, 30)
        node_leaf[nd] = j
        info[nd] = (np.int64(NO_MISS) << MISS_SHIFT) | (np.int64(rng.integers(2)) << DEFAULT_SHIFT)
    for i in range(m):
        for side in range(2):
            kind, idx = kids[i][side]
            child[2 * i + side] = base + (idx if kind == "node" else m + idx)
        col = int(rng.integers(NUM_COLUMNS))
        tcode = int(rng.integers(0, 6))  # few distinct codes: ties with the codes are common
        miss = int(rng.choice([NO_MISS, NAN_CODE, int(rng.integers(0, 6))]))
        info[i] = col | (tcode << TCODE_SHIFT) | (miss << MISS_SHIFT) | (int(rng.integers(2)) << DEFAULT_SHIFT)
    # depth: internal nodes on the longest path from the root
    depth, stack = 0, [(0, 1)] if m else []
    while stack:
        nd, d = stack.pop()
        depth = max(depth, d)
        for side in range(2):
            c = child[2 * nd + side] - base
            if c < m:
                stack.append((c, d + 1))
    return info, child, node_value, node_leaf, depth


def _random_forest(rng, leaves_per_tree):
    parts, roots, depths, base = [], [], [], 0
    for num_leaves in leaves_per_tree:
        parts.append(_random_tree(rng, num_leaves, base))
        roots.append(base)
        depths.append(parts[-1][4])
        base += 2 * num_leaves - 1
    info, child, node_value, node_leaf = (np.concatenate([p[i] for p in parts]) for i in range(4))
    roots, depths = np.array(roots, np.int32), np.array(depths, np.int32)
    lockstep = CodedForest(info, child, node_value, node_leaf, roots, depths)
    bitmask = CodedForest(info, child, node_value, node_leaf, roots, depths,
                          _bm.bitmask_forest(info, child, node_value, node_leaf, roots, NUM_COLUMNS))
    return lockstep, bitmask


def _random_codes(rng, n):
    codes = rng.integers(0, 7, size=(NUM_COLUMNS, n)).astype(np.uint8)
    codes[rng.random((NUM_COLUMNS, n)) < 0.1] = NAN_CODE
    codes[rng.random((NUM_COLUMNS, n)) < 0.05] = 254
    return BinCodes(codes)


def _walk(codes, forest, known, want_leaves):
    n, k = codes.num_rows, forest.roots.shape[0]
    rng = np.random.default_rng(5)
    out = rng.normal(size=(n, k))  # outputs are added to what is there
    leaves = np.full((n, k), -7, np.int32) if want_leaves else None
    add_coded_outputs(codes, forest, out, leaves, known)
    return out.tobytes(), None if leaves is None else leaves.tobytes()


@pytest.mark.parametrize("leaves_per_tree", [[2], [31], [63], [64], [1], [64, 2, 31], [17, 63, 1]],
                         ids=lambda v: "-".join(map(str, v)))
@pytest.mark.parametrize("n", [1000, 20_000], ids=["serial", "parallel"])
def test_bitmask_walk_equals_lockstep_walk(leaves_per_tree, n):
    rng = np.random.default_rng(sum(leaves_per_tree) + n)
    lockstep, bitmask = _random_forest(rng, leaves_per_tree)
    assert bitmask.bitmask is not None
    codes = _random_codes(rng, n)
    k = len(leaves_per_tree)
    rows = np.sort(rng.choice(n, n // 7, replace=False)).astype(np.int32)
    rows[:3] = [0, 1, 2]  # skipped runs at a block's start and end too
    rows = np.unique(np.concatenate([rows, [n - 1]])).astype(np.int32)
    known = (rows, rng.normal(size=(rows.shape[0], k)))
    for skip in (None, known):
        for want_leaves in (True, False):
            with _twins.parallel_from(8192):
                a = _walk(codes, lockstep, skip, want_leaves)
                b = _walk(codes, bitmask, skip, want_leaves)
            assert a == b, (skip is not None, want_leaves)


@pytest.mark.parametrize("tables", list(range(1, 11)))
def test_every_number_of_tables_a_tree_reads(tables):
    """``tree_masks`` sets the masks from the 1 to 4 tables left over, then ANDs four tables
    a pass: a tree reading each number of code columns from 1 to 10 (every first-pass arity,
    one to three passes) walks as the lockstep walk, with and without skipped rows."""
    rng = np.random.default_rng(100 + tables)
    num_leaves = 2 * tables + 1
    info, child, node_value, node_leaf, depth = _random_tree(rng, num_leaves, 0)
    m = num_leaves - 1
    columns = rng.permutation(12)[:tables]
    for i in range(m):  # internal node i tests column columns[i % tables]: exactly ``tables`` distinct columns
        info[i] = (info[i] & ~np.int64(0xFFFFFFFF)) | int(columns[i % tables])
    roots, depths = np.zeros(1, np.int32), np.array([depth], np.int32)
    lockstep = CodedForest(info, child, node_value, node_leaf, roots, depths)
    bm = _bm.bitmask_forest(info, child, node_value, node_leaf, roots, 12)
    assert bm is not None and int(bm.tstart[-1]) == tables
    bitmask = CodedForest(info, child, node_value, node_leaf, roots, depths, bm)
    n = 3000
    codes = rng.integers(0, 7, size=(12, n)).astype(np.uint8)
    codes[rng.random((12, n)) < 0.1] = NAN_CODE
    codes = BinCodes(codes)
    rows = np.sort(rng.choice(1500, 200, replace=False)).astype(np.int32)  # the last block has none
    known = (rows, rng.normal(size=(rows.shape[0], 1)))
    for skip in (None, known):
        for want_leaves in (True, False):
            assert _walk(codes, lockstep, skip, want_leaves) == _walk(codes, bitmask, skip, want_leaves)


def test_bitmask_walk_twins_and_block_sizes_agree():
    """Serial and parallel twins and any block size give the same bits (rows are independent)."""
    rng = np.random.default_rng(3)
    _, forest = _random_forest(rng, [63, 40])
    codes = _random_codes(rng, 5000)
    bm = forest.bitmask
    rows = np.sort(rng.choice(5000, 400, replace=False)).astype(np.int32)
    skip_out = rng.normal(size=(400, 2))
    results = set()
    for twin in (_bk.walk_bitmask.serial, _bk.walk_bitmask.parallel):
        for block in (1, 64, 1000, 1024, 8192):
            out = np.zeros((5000, 2))
            leaves = np.full((5000, 2), -1, np.int32)
            twin(codes.codes, block, 3, bm.tstart, bm.tcol, bm.table, bm.leaf_value, bm.leaf_index, rows, skip_out,
                 out, leaves, True)
            results.add((out.tobytes(), leaves.tobytes()))
    assert len(results) == 1


def test_trees_of_more_than_64_leaves_keep_the_lockstep_walk():
    rng = np.random.default_rng(4)
    for leaves_per_tree in ([65], [2, 65], [100, 3]):
        lockstep, bitmask = _random_forest(rng, leaves_per_tree)
        assert bitmask.bitmask is None
        codes = _random_codes(rng, 3000)
        assert _walk(codes, lockstep, None, True) == _walk(codes, bitmask, None, True)


def _stock(num_leaves, X, y, **params):
    ds = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    booster = lgb.train({"verbosity": -1, "num_leaves": num_leaves, "seed": 1, **params}, ds, 3)
    return booster, ds


@pytest.mark.parametrize("num_leaves", [64, 65])
def test_stock_trees_walked_as_predict_with_either_walk(num_leaves):
    """Real trees at the limit (64 leaves: bitmask) and past it (65: lockstep) add what
    ``predict(raw_score=True)`` adds and reach its leaves."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(4000, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.isnan(X[:, 2]) + 0.1 * rng.normal(size=4000)
    booster, ds = _stock(num_leaves, X, y, objective="regression")
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    codes = book.encode(RawFeatures.from_data(X))
    texts = L.tree_bodies(booster.model_to_string())
    assert all(L.parse_tree(text).num_leaves == num_leaves for text in texts)
    out = np.zeros((4000, 1))
    for it, text in enumerate(texts):
        forest = book.coded_forest(Forest.from_tree_texts([text]))
        assert (forest.bitmask is None) == (num_leaves > 64)
        leaves = np.full((4000, 1), -1, np.int32)
        add_coded_outputs(codes, forest, out, leaves)
        assert np.array_equal(out[:, 0], booster.predict(X, raw_score=True, num_iteration=it + 1))
        assert np.array_equal(leaves[:, 0], booster.predict(X, pred_leaf=True)[:, it])


def test_categorical_data_never_reach_the_coded_walks():
    """A categorical feature: no code book, so the raw walk (with its categorical decisions)
    walks such data and neither coded walk sees a categorical split."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 3))
    X[:, 1] = rng.integers(0, 6, 2000)
    ds = lgb.Dataset(X, X[:, 0] + (X[:, 1] == 2), categorical_feature=[1], params={"verbosity": -1}).construct()
    assert CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds))) is None


def _train(objective, sampler, num_leaves, **extra):
    rng = np.random.default_rng(9)
    n = 12_000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + rng.normal(size=n)
    y = np.digitize(score, [-0.7, 0.7]).astype(float) if objective == "multiclass" else (score > 0).astype(float)
    params = {"objective": objective, "verbose": -1, "seed": 3, "num_leaves": num_leaves, **extra}
    valid = lgb.Dataset(X[:3000], y[:3000])
    booster = sl.train(params, lgb.Dataset(X, y), 5, sampler=sampler, valid_sets=[valid])
    return booster.model_to_string()


@pytest.mark.parametrize("case", [
    ("binary", lambda: sl.FirstOrder(rate=0.2), 63, {}),  # the fused pass
    ("binary", lambda: sl.SecondOrder(rate=0.3), 31, {}),  # reads every row's leaf
    ("binary", lambda: sl.Uniform(rate=0.5), 15, {}),  # the sample's outputs read back, its rows skipped
    ("multiclass", lambda: sl.FirstOrder(rate=0.3), 31, {"num_class": 3}),  # K = 3 trees per iteration
], ids=["first_order", "second_order", "uniform_read_back", "multiclass"])
def test_training_gives_the_same_model_with_either_walk(case, monkeypatch):
    objective, sampler, num_leaves, extra = case
    calls = []
    kernel = _bk.walk_bitmask
    for which in ("serial", "parallel"):
        monkeypatch.setattr(kernel, which, lambda *a, _f=getattr(kernel, which): calls.append(1) or _f(*a))
    new = _train(objective, sampler(), num_leaves, **extra)
    assert calls, "the bitmask walk did not run"
    monkeypatch.setattr(_bm, "bitmask_forest", lambda *args: None)  # every forest on the lockstep walk
    calls.clear()
    old = _train(objective, sampler(), num_leaves, **extra)
    assert not calls
    assert new == old
