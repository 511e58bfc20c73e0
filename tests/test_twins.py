"""Serial and parallel twins of the row kernels (:mod:`smart_lgbm._numba.row_kernel`): same bits, and
the row count picks the twin.

Every case runs on data spanning several of the kernels' blocks (``BLOCK`` = 16,384 rows,
the histogram kernels' ``HIST_BLOCK`` = 65,536), so a twin that combined its blocks in
another order, or lost a block, would give other bits.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp

import smart_lgbm as sl
import smart_lgbm._engine._sweep_kernels  # noqa: F401  (every kernel module, so that REGISTRY holds them all)
import smart_lgbm._engine._refit_kernels  # noqa: F401
import smart_lgbm.losses._kernels  # noqa: F401
import smart_lgbm._engine.walk._encode_kernels  # noqa: F401
import smart_lgbm._engine.walk._bitmask_kernels  # noqa: F401
import smart_lgbm._engine.walk._kernels  # noqa: F401
import smart_lgbm.samplers._adaptive_kernels  # noqa: F401
import smart_lgbm.samplers._rate_solve_kernels  # noqa: F401
import smart_lgbm.samplers._draw_kernels  # noqa: F401
import smart_lgbm.samplers._trim_kernels  # noqa: F401
from smart_lgbm._numba import row_kernel as _twins
from smart_lgbm._numba.kernel_constants import BUFFER, CONST, FIRST, KIND_MARKERS, MVS, SECOND
from smart_lgbm.samplers.rate_solve import n_blocks, scan_blocks
from smart_lgbm.samplers import _draw_kernels as drk
from smart_lgbm.samplers import _importance_kernels as imk
from smart_lgbm._numba import kernel_constants as kc
from smart_lgbm.samplers import _rate_solve_kernels as rsk
from smart_lgbm.samplers import _trim_kernels as trk

N = 3 * kc.BLOCK + 1234  # four blocks, the last one partial
SERIAL, PARALLEL = 1 << 62, 0  # PARALLEL_MIN_ROWS forcing every call to one twin


@pytest.fixture
def called(monkeypatch):
    """Which twin of which kernel ran: ``{(qualname, "serial" | "parallel")}``."""
    seen: set[tuple[str, str]] = set()
    for name, kernel in _twins.REGISTRY.items():
        for which in ("serial", "parallel"):
            def spy(*args, _f=getattr(kernel, which), _key=(name.rsplit(".", 1)[-1], which)):
                seen.add(_key)
                return _f(*args)
            monkeypatch.setattr(kernel, which, spy)
    return seen


def _bits(value):
    """Every array or number of a kernel's result, as bytes (NaN-safe, bit for bit)."""
    if isinstance(value, tuple):
        return tuple(_bits(v) for v in value)
    return np.asarray(value).tobytes()


def _heavy_tailed(rng, n, k_cols=1):
    """float32 rows whose magnitudes span many octaves: any change of summation order shows."""
    v = rng.standard_cauchy((n, k_cols)) * np.exp2(rng.integers(-40, 40, (n, k_cols)))
    return v.astype(np.float32)


@pytest.mark.parametrize("num_class", [1, 3])
def test_sampler_kernels_twins_give_the_same_bits(num_class):
    rng = np.random.default_rng(5)
    n = 2 * kc.HIST_BLOCK + 4321  # three histogram blocks, nine draw blocks
    g = _heavy_tailed(rng, n, num_class)
    h = np.abs(_heavy_tailed(rng, n, num_class))
    buf = np.abs(rng.standard_cauchy(n))
    empty = np.empty((0, 1), np.float32)
    for kind in (FIRST, SECOND, MVS, BUFFER, CONST):
        gg, hh = (empty, empty) if kind in (BUFFER, CONST) else (g, h)
        imp = (KIND_MARKERS[kind], n, gg, hh, buf, 0.7)
        for plain in (False, True):
            args = (*imp, True, plain)
            assert _bits(rsk.scan.serial(*args, *scan_blocks(n))) == _bits(rsk.scan.parallel(*args, *scan_blocks(n)))
        stored = [np.empty(n), np.empty(n)]
        gathered = [(np.empty(n, np.int32), np.empty(n_blocks(n), np.int64), np.empty(n_blocks(n), np.int64),
                     np.empty(n_blocks(n)))
                    for _ in range(2)]
        assert (_bits(rsk.scan_store.serial(*imp, True, *scan_blocks(n), stored[0], 0.5, 2.0, *gathered[0]))
                == _bits(rsk.scan_store.parallel(*imp, True, *scan_blocks(n), stored[1], 0.5, 2.0, *gathered[1])))
        assert stored[0].tobytes() == stored[1].tobytes()
        assert all(a.tobytes() == b.tobytes() for a, b in zip(gathered[0][1:], gathered[1][1:], strict=True))
        for b, c in enumerate(gathered[0][1]):
            rows = slice(b * kc.BLOCK, b * kc.BLOCK + c)
            assert gathered[0][0][rows].tobytes() == gathered[1][0][rows].tobytes()
        _, _, _, exponent, total = rsk.scan(*imp, True, False, *scan_blocks(n))
        c1, c2 = imk.pow2_pair(-exponent)
        rho = 0.05 * n / total
        cases = [
            (rsk.scaled_histogram, (*imp, c1, c2)),
            (rsk.cap_round, (*imp, c1, c2, rho, np.empty(n_blocks(n), np.int64),
                           *[np.empty(n_blocks(n)) for _ in range(3)])),
            (drk.closest_row, (*imp, c1, c2, rho, np.uint64(99))),
        ]
        # every round's count and per-block sums, from the cold start and from a guess above it
        for start, guess in ((0.3 * n / total, 0.0), (0.3 * n / total, 0.45 * n / total)):
            twins = [kernel(*imp, c1, c2, 0.3 * n, start, 0, guess, 64, np.empty(n_blocks(n), np.int64),
                            np.empty(n_blocks(n)))
                     for kernel in (rsk.cap_rounds.serial, rsk.cap_rounds.parallel)]
            assert _bits(twins[0]) == _bits(twins[1])
        for kernel, args in cases:
            assert _bits(kernel.serial(*args)) == _bits(kernel.parallel(*args)), kernel
        outs = [np.empty(n), np.empty(n)]
        rsk.probabilities.serial(*imp, c1, c2, rho, outs[0])
        rsk.probabilities.parallel(*imp, c1, c2, rho, outs[1])
        assert outs[0].tobytes() == outs[1].tobytes()
        scratch = [np.empty(n, np.int32), np.empty(n, np.int32)]
        counts = [np.empty(n_blocks(n), np.int64), np.empty(n_blocks(n), np.int64)]
        offsets = [np.empty(n_blocks(n), np.int64), np.empty(n_blocks(n), np.int64)]
        drawn = [drk.draw.serial(*imp, c1, c2, rho, np.uint64(7), scratch[0], counts[0], offsets[0]),
                 drk.draw.parallel(*imp, c1, c2, rho, np.uint64(7), scratch[1], counts[1], offsets[1])]
        assert counts[0].tobytes() == counts[1].tobytes() and counts[0].sum() > 0
        assert drawn[0] == drawn[1] == counts[0].sum() and offsets[0].tobytes() == offsets[1].tobytes()
        assert offsets[0].tolist() == [0, *np.cumsum(counts[0])[:-1].tolist()]
        for b, c in enumerate(counts[0]):
            lo = b * kc.BLOCK
            assert scratch[0][lo:lo + c].tobytes() == scratch[1][lo:lo + c].tobytes()
        window = [(np.empty(n, np.int32), np.empty(n_blocks(n), np.int64)) for _ in range(2)]
        found = [twin(*imp, c1, c2, 0.5 / rho, 2.0 / rho, *window[i], np.empty(n_blocks(n), np.int64),
                      np.empty(n_blocks(n))) for i, twin in enumerate((rsk.window_rows.serial, rsk.window_rows.parallel))]
        assert _bits(found[0]) == _bits(found[1]) and window[0][1].tobytes() == window[1][1].tobytes()
        for b, c in enumerate(window[0][1]):
            lo = b * kc.BLOCK
            assert window[0][0][lo:lo + c].tobytes() == window[1][0][lo:lo + c].tobytes()
    assert _bits(imk.norm_sums.serial(n, g, h)) == _bits(imk.norm_sums.parallel(n, g, h))
    values = rng.standard_cauchy((n, num_class))
    leaves = rng.integers(0, 31, (n, num_class)).astype(np.int32)
    assert _bits(drk.leaf_means.serial(values, leaves, 31)) == _bits(drk.leaf_means.parallel(values, leaves, 31))
    w = np.ascontiguousarray(h.astype(np.float64))
    for args in [(n, w, 52, 0, 40), (n, w, 64, 0, 52)]:
        assert _bits(trk.trim_histogram.serial(*args)) == _bits(trk.trim_histogram.parallel(*args))
    tau = np.int64(np.float64(np.median(w.sum(axis=1))).view(np.int64))
    assert _bits(trk.trim_counts.serial(n, w, tau)) == _bits(trk.trim_counts.parallel(n, w, tau))


def test_adaptive_leaf_sums_twins_give_the_same_bits():
    """The adaptive rate's per-leaf sums over several blocks of drawn rows, at a width guess
    below the leaves (the caller's second call) and at it."""
    from smart_lgbm.samplers import _adaptive_kernels as ak

    rng = np.random.default_rng(6)
    n, m = 5 * kc.BLOCK, 3 * kc.BLOCK + 1234
    idx = np.sort(rng.choice(n, m, replace=False)).astype(np.int32)
    hess = np.abs(_heavy_tailed(rng, n))[:, 0]
    fit_grad = _heavy_tailed(rng, m)[:, 0]
    fit_hess = (hess[idx] / rng.uniform(0.05, 1.0, m)).astype(np.float32)
    leaves = rng.integers(0, 40, n).astype(np.int32)
    nb = n_blocks(m)
    for width in (8, 40):
        for constant in ((0.0, False), (0.3, True)):
            args = (idx, fit_grad, fit_hess, hess, leaves, *constant)
            serial = ak.leaf_sums_one_column.serial(*args, np.zeros((nb, 5, width)), np.empty(nb, np.int64))
            parallel = ak.leaf_sums_one_column.parallel(*args, np.zeros((nb, 5, width)), np.empty(nb, np.int64))
            assert _bits(serial) == _bits(parallel)


def test_refit_leaf_sums_twins_give_the_same_bits():
    """The refit's sums from known leaves (trees of more than 64 leaves, or leaves read
    through LightGBM), three trees over several blocks, the last one partial."""
    from smart_lgbm._engine import _refit_kernels as rk

    rng = np.random.default_rng(9)
    n = N
    grad, hess = _heavy_tailed(rng, n, 3), np.abs(_heavy_tailed(rng, n, 3))
    leaves = rng.integers(0, 90, (n, 3)).astype(np.int32)
    nb = n_blocks(n)
    serial, parallel = np.zeros((nb, 3, 2, 90)), np.zeros((nb, 3, 2, 90))
    rk.leaf_sums.serial(leaves, grad, hess, serial)
    rk.leaf_sums.parallel(leaves, grad, hess, parallel)
    assert serial.tobytes() == parallel.tobytes()


def _train(X, y, params, sampler, valid=None, rounds=3):
    train = lgb.Dataset(X, y, params={"max_bin": 63})
    sets = [] if valid is None else [lgb.Dataset(valid[0], valid[1], reference=train)]
    booster = sl.train({"verbose": -1, "seed": 3, "num_leaves": 15, **params}, train, rounds, sampler=sampler,
                       valid_sets=sets)
    return booster.model_to_string()


def _dense(objective, n=N):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(n, 8))
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(size=n)
    if objective == "binary":
        return X, (score > 0).astype(float)
    if objective == "multiclass":
        return X, np.digitize(score, [-0.7, 0.7]).astype(float)
    if objective == "cross_entropy":
        return X, 1.0 / (1.0 + np.exp(-score))
    return X, score


#: Training runs and the kernels each must run (both twins are checked for each).
CASES = {
    # (a run with a gradient sweep takes its first iteration's statistics from it too: no scan pass)
    "binary-first_order": ("binary", lambda: sl.FirstOrder(rate=0.2),
                           {"one_column", "draw", "gather", "walk_bitmask", "encode_dense"}),
    "binary-first_order-refit": ("binary", lambda: sl.FirstOrder(rate=0.2, refit_leaves=True),
                                 {"walk_leaf_sums", "one_column_by_leaf"}),
    "binary-loss_based-refit": ("binary", lambda: sl.LossBased(rate=0.2, refit_leaves=True), {"add_by_leaf"}),
    "multiclass-first_order-refit": ("multiclass", lambda: sl.FirstOrder(rate=0.2, refit_leaves=True),
                                     {"gradients_statistics_by_leaf"}),
    "binary-mvs": ("binary", lambda: sl.MVS(rate=0.2), {"one_column", "scan_store", "draw", "gather"}),
    "binary-second_order": ("binary", lambda: sl.SecondOrder(rate=0.2, anchor_lag=1), {"leaf_means", "gather"}),
    "binary-weight_trimming": ("binary", lambda: sl.WeightTrimming(alpha=0.1),
                               {"trim_histogram", "trim_counts", "trim_gather"}),
    "binary-loss_based": ("binary", lambda: sl.LossBased(rate=0.2), {"binary_loss", "binary_gradients", "scan",
                                                                       "draw"}),
    "multiclass-first_order": ("multiclass", lambda: sl.FirstOrder(rate=0.2), {"gradients_statistics"}),
    "binary-unbalance-first_order": (("binary", {"is_unbalance": True}), lambda: sl.FirstOrder(rate=0.2),
                                     {"binary_class_weighted_gradients"}),
    "huber-loss_based": ("huber", lambda: sl.LossBased(rate=0.2), {"huber_gradients", "huber_loss"}),
    "cross_entropy-loss_based": ("cross_entropy", lambda: sl.LossBased(rate=0.2),
                                 {"xentropy_gradients", "xentropy_loss"}),
    "multiclass-loss_based": ("multiclass", lambda: sl.LossBased(rate=0.2), {"softmax_gradients", "softmax_loss"}),
    "regression-loss_based": ("regression", lambda: sl.LossBased(rate=0.2), {"l2_gradients", "l2_loss"}),
}
#: Kernels whose twins the direct and walk tests below compare.
DIRECT = {"scan", "scan_store", "scaled_histogram", "cap_round", "cap_rounds", "closest_row", "probabilities", "draw", "norm_sums", "leaf_means",
          "window_rows", "leaf_sums_one_column", "leaf_sums",
          "trim_histogram", "trim_counts", "encode_sparse", "walk_dense", "walk_sparse", "walk_codes",
          "encode_dense_categories", "encode_sparse_categories"}


def test_every_row_kernel_has_its_twins_compared():
    """A new kernel decorated with row_kernel must join one of this file's comparisons."""
    covered = DIRECT.union(*(kernels for _, _, kernels in CASES.values()))
    assert {name.rsplit(".", 1)[-1] for name in _twins.REGISTRY} == covered


@pytest.mark.parametrize("case", list(CASES))
def test_models_are_the_same_with_serial_or_parallel_twins(case, called, monkeypatch):
    objective, sampler, kernels = CASES[case]
    objective, extra = objective if isinstance(objective, tuple) else (objective, {})
    X, y = _dense(objective)
    params = {"objective": objective, **extra, **({"num_class": 3} if objective == "multiclass" else {})}
    models = []
    for threshold in (SERIAL, PARALLEL):
        monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", threshold)
        models.append(_train(X, y, params, sampler(), valid=(X[:N // 2], y[:N // 2]), rounds=4))
    assert models[0] == models[1]
    for name in kernels:
        assert {(name, "serial"), (name, "parallel")} <= called, name


def test_sparse_and_raw_walks_are_the_same_with_either_twin(called, monkeypatch):
    X, y = _dense("binary")
    X[np.abs(X) < 0.8] = 0.0
    csr, csc = sp.csr_matrix(X), sp.csc_matrix(X)
    models = []
    for threshold in (SERIAL, PARALLEL):
        monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", threshold)
        models.append(_train(csr, y, {"objective": "binary"}, sl.FirstOrder(rate=0.2), valid=(csc, y)))
    assert models[0] == models[1]
    assert {("encode_sparse", "serial"), ("encode_sparse", "parallel")} <= called


def test_raw_walks_are_the_same_with_either_twin(called, monkeypatch):
    """The walks over raw features (dense, CSR, CSC), with a categorical feature."""
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine.walk import Forest, RawFeatures, add_outputs

    X, y = _dense("binary")
    X[:, 3] = np.floor(np.abs(X[:, 3]) * 3)
    X[np.abs(X) < 0.3] = 0.0
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 15, "seed": 1},
                        lgb.Dataset(X, y, categorical_feature=[3]), 3)
    forest = Forest.from_tree_texts(L.tree_bodies(booster.model_to_string()))
    for data in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        features = RawFeatures.from_data(data)
        results = []
        for threshold in (SERIAL, PARALLEL):
            monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", threshold)
            out = np.zeros((N, 3))
            leaves = np.full((N, 3), -1, dtype=np.int32)
            add_outputs(features, forest, out, leaves)
            results.append((out.tobytes(), leaves.tobytes()))
        assert results[0] == results[1]
    for name in ("walk_dense", "walk_sparse"):
        assert {(name, "serial"), (name, "parallel")} <= called, name


def test_lockstep_coded_walk_is_the_same_with_either_twin(called, monkeypatch):
    """The lockstep walk over codes (trees of more than 64 leaves), skipped rows and leaves."""
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures, add_coded_outputs

    X, y = _dense("binary")
    ds = lgb.Dataset(X, y, params={"verbose": -1}).construct()
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 80, "seed": 1}, ds, 2)
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    codes = book.encode(RawFeatures.from_data(X))
    forest = book.coded_forest(Forest.from_tree_texts(L.tree_bodies(booster.model_to_string())[-1:]))
    assert forest.bitmask is None  # more than 64 leaves: the lockstep walk
    rows = np.arange(0, N, 7, dtype=np.int32)
    known = (rows, np.random.default_rng(2).normal(size=(rows.shape[0], 1)))
    results = []
    for threshold in (SERIAL, PARALLEL):
        monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", threshold)
        out = np.zeros((N, 1))
        leaves = np.full((N, 1), -1, dtype=np.int32)
        add_coded_outputs(codes, forest, out, leaves, known)
        results.append((out.tobytes(), leaves.tobytes()))
    assert results[0] == results[1]
    assert {("walk_codes", "serial"), ("walk_codes", "parallel")} <= called


def test_categorical_codes_and_walks_are_the_same_with_either_twin(called, monkeypatch):
    """The categorical coders (dense, CSR, CSC) and the walks' categorical tests (two-byte
    codes included: a feature of 600 levels)."""
    from smart_lgbm import _lightgbm as L
    from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures, add_coded_outputs

    X, y = _dense("binary")
    rng = np.random.default_rng(4)
    X[:, 3] = rng.integers(0, 600, N)
    X[:, 5] = np.where(rng.random(N) < 0.1, np.nan, rng.integers(0, 30, N))
    y = (y + (X[:, 3] % 3 == 0) > 0.5).astype(float)
    X[np.abs(X) < 0.3] = 0.0
    ds = lgb.Dataset(X, y, categorical_feature=[3, 5], params={"verbose": -1}).construct()
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 80, "seed": 1}, ds, 2)
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    texts = L.tree_bodies(booster.model_to_string())
    for data in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        results = []
        for threshold in (SERIAL, PARALLEL):
            monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", threshold)
            codes = book.encode(RawFeatures.from_data(data))
            assert codes.wide.shape == (1, N)
            out = np.zeros((N, 1))
            for text in texts:
                add_coded_outputs(codes, book.coded_forest(Forest.from_tree_texts([text])), out)
            results.append((codes.codes.tobytes(), codes.wide.tobytes(), out.tobytes()))
        assert results[0] == results[1]
    for name in ("encode_dense_categories", "encode_sparse_categories", "walk_codes"):
        assert {(name, "serial"), (name, "parallel")} <= called, name


def test_the_row_count_picks_the_twin(monkeypatch):
    kernel = imk.norm_sums
    runs = []
    monkeypatch.setattr(kernel, "serial", lambda *a: runs.append("serial") or (0.0, 0.0))
    monkeypatch.setattr(kernel, "parallel", lambda *a: runs.append("parallel") or (0.0, 0.0))
    monkeypatch.setattr(_twins, "PARALLEL_MIN_ROWS", 1000)
    g = np.zeros((2000, 1))
    kernel(999, g, g)
    kernel(1000, g, g)
    kernel(1001, g, g)
    assert runs == ["serial", "parallel", "parallel"]
    # a kernel that reads its row count from an array's shape (walk_codes: codes' columns)
    from smart_lgbm._engine.walk import _kernels as wk
    runs.clear()
    monkeypatch.setattr(wk.walk_codes, "serial", lambda *a: runs.append("serial"))
    monkeypatch.setattr(wk.walk_codes, "parallel", lambda *a: runs.append("parallel"))
    wk.walk_codes(np.zeros((3, 999), np.uint8), *([None] * 16))
    wk.walk_codes(np.zeros((999, 3), np.uint8), *([None] * 16))
    wk.walk_codes(np.zeros((3, 1000), np.uint8), *([None] * 16))
    assert runs == ["serial", "serial", "parallel"]


def test_default_threshold_runs_small_data_serially(called):
    """Small data (here 4,000 rows) runs serial twins only: no parallel kernel compiles."""
    X, y = _dense("binary", n=4000)
    _train(X, y, {"objective": "binary"}, sl.FirstOrder(rate=0.2))
    assert called and all(which == "serial" for _, which in called)


_CACHE_CHILD = """
import json
import numpy as np
from smart_lgbm.samplers import _importance_kernels as imk
g = np.ones((10, 1), np.float32)
imk.norm_sums.serial(10, g, g)
imk.norm_sums.parallel(10, g, g)
print(json.dumps({which: [sum(getattr(imk.norm_sums, which).stats.cache_misses.values()),
                          sum(getattr(imk.norm_sums, which).stats.cache_hits.values())]
                  for which in ("serial", "parallel")}))
"""


def test_twins_are_cached_apart(tmp_path):
    """Each twin has its own entry in numba's cache: a fresh process compiles both (neither
    finds the other's code under its key), the next one loads both."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(root)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", _CACHE_CHILD], env=env, cwd=tmp_path, check=True,
                                      capture_output=True, text=True).stdout) for _ in range(2)]
    assert runs[0] == {"serial": [1, 0], "parallel": [1, 0]}  # [compiled, loaded from the cache]
    assert runs[1] == {"serial": [0, 1], "parallel": [0, 1]}


def test_parallel_from_sets_the_threshold_inside_only():
    before = _twins.PARALLEL_MIN_ROWS
    with _twins.parallel_from(0):
        assert _twins.PARALLEL_MIN_ROWS == 0
    assert _twins.PARALLEL_MIN_ROWS == before
    with pytest.raises(ValueError, match="rows must be an int >= 0"):
        with _twins.parallel_from(-1):
            pass


def test_compare_warm_up_runs_both_twins_of_the_kernels_it_uses(tmp_path, called, compare_config):
    """The pre-flight trains on 2,000 rows, where only serial twins would run; the timed
    runs on the whole data use the parallel ones, which must not compile on the clock."""
    from smart_lgbm.compare.checks import preflight
    from smart_lgbm.compare.data import load_data

    exp = compare_config("""
        rounds = 4
        [params]
        num_leaves = 7
        [methods.first_order]
        rate = 0.3
        [[experiments]]
        name = "h"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample" }
        params = { objective = "binary" }
    """).experiments[0]
    preflight(exp, load_data(exp.data), [exp.method("first_order")], rounds=3)
    for kernel in ("walk_bitmask", "gather", "one_column"):
        assert {(kernel, "serial"), (kernel, "parallel")} <= called, kernel
    called.clear()
    preflight(exp, load_data(exp.data), [exp.method("first_order")], rounds=1)  # no warm-up: checks only
    assert not any(which == "parallel" for _, which in called)


def test_kind_lambda_scope_warning_is_muted_with_or_without_colour():
    # numba prints its pedantic "not in scope" check for the inlined kind lambdas with a colour
    # code in front where colours are on (seen on a server); the filter (its pattern is matched
    # at the message's start) must take both forms, and not the same check about other names
    import re

    from smart_lgbm.samplers._importance_kernels import KIND_LAMBDA_SCOPE_WARNING

    name = "variable '_score_of_kind__locals___lambda__v39__v18call_4_2.1' is not in scope."
    for text, muted in ((name, True), ("\x1b[1m" + name, True), ("variable 'x.1' is not in scope.", False)):
        assert bool(re.match(KIND_LAMBDA_SCOPE_WARNING, text)) is muted, text


def test_compare_warm_up_runs_auto_as_the_sampler_it_chooses_on_the_whole_data(tmp_path, monkeypatch, compare_config):
    """On the pre-flight's first rows sampler="auto" would choose stock LightGBM (small data),
    and the timed run on the whole data would compile the chosen sampler on the clock."""
    import smart_lgbm as sl
    from smart_lgbm.compare import checks
    from smart_lgbm.compare.data import ExperimentData, Split
    from smart_lgbm.samplers.auto import SMALL_ROWS

    exp = compare_config("""
        rounds = 4
        [methods.auto]
        [methods.first_order]
        rate = 0.3
        [[experiments]]
        name = "h"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample" }
        params = { objective = "binary" }
    """).experiments[0]
    seen = []
    monkeypatch.setattr(checks, "run_method", lambda method, *args, sampler=None, **kw: seen.append((method.label,
                                                                                                       repr(sampler))))
    rng = np.random.default_rng(0)

    def data(rows: int) -> ExperimentData:
        X = rng.normal(size=(rows, 3))
        split = Split(X, (X[:, 0] > 0).astype(float))
        return ExperimentData(split, split, "test")

    checks.preflight(exp, data(SMALL_ROWS), [exp.method("auto"), exp.method("first_order")], rounds=1)
    assert seen == [("auto", repr(sl.FirstOrder(rate="auto", refit_leaves=True))), ("first_order", "None")]
    seen.clear()
    checks.preflight(exp, data(SMALL_ROWS - 1), [exp.method("auto")], rounds=1)
    assert seen == [("auto", "None")]  # stock LightGBM on the whole data too


def test_compare_compiles_several_experiments_side_by_side(tmp_path, monkeypatch, compare_config):
    """Two or more experiments (and cores) pre-fly in child processes first, so that their
    kernels compile at once into numba's cache; a child's failure is left to this process's
    own pre-flight, which names the method."""
    from smart_lgbm.compare import checks

    config = compare_config("""
        rounds = 2
        [params]
        num_leaves = 3
        [methods.stock_full]
        [[experiments]]
        name = "a"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample", max_rows = 500 }
        params = { objective = "binary" }
        [[experiments]]
        name = "b"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample", max_rows = 400 }
        params = { objective = "binary", num_leaves = 1 }
    """)
    plan = [(exp, [exp.method("stock_full")]) for exp in config.experiments]
    monkeypatch.setattr(checks.os, "cpu_count", lambda: 2)
    assert not checks.compile_side_by_side(plan[:1], rounds=3)  # one experiment: nothing to share
    assert not checks.compile_side_by_side(plan, rounds=1)  # no warm-up: checks only
    # experiment b cannot train (num_leaves = 1): its child fails quietly
    assert checks.compile_side_by_side(plan, rounds=3)
