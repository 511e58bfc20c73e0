"""Compiled loss kernels: LightGBM's float32 gradients bit for bit, per-row losses, user-loss checks."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from smart_lgbm.losses import BinaryLogloss, CustomLoss, LambdaRank, MulticlassSoftmax, SquaredError, Target
from smart_lgbm.losses import _lambdarank_kernels as lambdarank_kernels
from smart_lgbm.losses.lambdarank import _sigmoid_table

N = 20_000


def _weight(rng, n, weighted):
    # LightGBM holds weights as float32: the Target carries those values as float64
    return rng.uniform(0.1, 3.0, n).astype(np.float32).astype(np.float64) if weighted else None


def _raw(rng, shape):
    raw = rng.normal(scale=3.0, size=shape)
    raw.reshape(-1)[:50] = np.linspace(-60.0, 60.0, 50)  # saturated sigmoids / softmaxes
    return raw


def _kernel_outputs(loss, raw, target):
    g = np.full(raw.shape, np.nan, dtype=np.float32)
    h = np.full(raw.shape, np.nan, dtype=np.float32)
    loss.compute_gradients(raw, target, g, h)
    return g, h


def _assert_float32_of_reference(loss, raw, target):
    g, h = _kernel_outputs(loss, raw, target)
    ref_g, ref_h = loss.gradient_hessian(raw, target)
    np.testing.assert_array_equal(g, ref_g.astype(np.float32))
    np.testing.assert_array_equal(h, ref_h.astype(np.float32))
    return g, h


@pytest.mark.parametrize("sigmoid", [1.0, 2.0, 0.7])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_kernel_is_float32_of_lightgbm_expression(rng, sigmoid, weighted):
    label = (rng.random(N) < 0.4).astype(np.float64)
    target = Target(label=label, weight=_weight(rng, N, weighted))
    g, h = _assert_float32_of_reference(BinaryLogloss(sigmoid=sigmoid), _raw(rng, N), target)
    # and the expression itself, written out for a few rows
    raw = np.array([0.3, -2.0, 0.0])
    lab = np.array([1.0, 0.0, 1.0])
    g, h = _kernel_outputs(BinaryLogloss(sigmoid=sigmoid), raw, Target(label=lab))
    sign = 2 * lab - 1
    response = -sign * sigmoid / (1.0 + np.exp(sign * sigmoid * raw))
    np.testing.assert_array_equal(g, response.astype(np.float32))
    np.testing.assert_array_equal(h, (np.abs(response) * (sigmoid - np.abs(response))).astype(np.float32))


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_kernel_is_float32_of_lightgbm_expression(rng, weighted):
    label = rng.normal(size=N).astype(np.float32).astype(np.float64)
    weight = _weight(rng, N, weighted)
    raw = _raw(rng, N)
    g, h = _assert_float32_of_reference(SquaredError(), raw, Target(label=label, weight=weight))
    if weighted:
        # LightGBM: float32(float32(score - label) * float32 weight), in float arithmetic;
        # one rounding of the double product differs on a good share of rows
        expected = (raw - label).astype(np.float32) * weight.astype(np.float32)
        np.testing.assert_array_equal(g, expected)
        assert np.any(((raw - label) * weight).astype(np.float32) != expected)
        np.testing.assert_array_equal(h, weight.astype(np.float32))
    else:
        np.testing.assert_array_equal(h, np.ones(N, dtype=np.float32))


@pytest.mark.parametrize("num_class", [3, 10])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_kernel_is_float32_of_lightgbm_expression(rng, num_class, weighted):
    label = rng.integers(0, num_class, N).astype(np.float64)
    target = Target(label=label, weight=_weight(rng, N, weighted))
    g, h = _assert_float32_of_reference(MulticlassSoftmax(num_class), _raw(rng, (N, num_class)), target)
    assert g.shape == (N, num_class)


def test_multiclass_reference_sums_classes_in_lightgbm_order():
    # LightGBM sums exp(x - max) class by class; numpy's pairwise sum (8 accumulators from
    # K = 8 on) rounds differently for some rows: the reference must not use it
    rng = np.random.default_rng(0)
    raw = rng.normal(scale=2.0, size=(4000, 12))
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    sequential = e[:, 0].copy()
    for k in range(1, 12):
        sequential += e[:, k]
    target = Target(label=np.zeros(4000))
    g, _ = MulticlassSoftmax(12).gradient_hessian(raw, target)
    np.testing.assert_array_equal(g[:, 1:], e[:, 1:] / sequential[:, None])
    assert np.any(e.sum(axis=1) != sequential)  # the orders do differ


def test_lambdarank_writes_its_float32_kernel_output_unchanged(rng):
    sizes = rng.integers(1, 40, 300)
    n = int(sizes.sum())
    label = rng.integers(0, 5, n).astype(np.float64)
    weight = _weight(rng, n, True)
    raw = rng.normal(size=n)
    loss = LambdaRank()
    target = Target(label=label, weight=weight, group=sizes)
    g, h = _kernel_outputs(loss, raw, target)
    # the kernel called as before this change (fresh outputs converted to float64)
    prep = loss._prepared(target)
    table, lo, hi, factor = _sigmoid_table(1.0)
    ref_g = np.empty(n, dtype=np.float32)
    ref_h = np.empty(n, dtype=np.float32)
    lambdarank_kernels.lambdarank_gradients(
        raw, prep["labels"], prep["gains"], prep["boundaries"], prep["inv_max_dcg"], prep["discount"],
        table, lo, hi, factor, 1.0, loss.truncation_level, loss.norm, prep["weight32"], prep["chunks"],
        ref_g, ref_h)
    np.testing.assert_array_equal(g, ref_g)
    np.testing.assert_array_equal(h, ref_h)
    np.testing.assert_array_equal(loss.gradient_hessian(raw, target)[0], ref_g.astype(np.float64))


# ------------------------------------------------------------------ against LightGBM itself


def _trees(booster):
    text = booster.model_to_string()
    return text[text.index("Tree=0"):text.index("end of trees")]


@pytest.mark.parametrize("objective", ["binary2", "regression", "multiclass"])
def test_kernel_gradients_grow_stock_lightgbms_trees(higgs, objective):
    """Custom objective fed by the kernels == LightGBM's built-in objective, tree text for text."""
    (X, y), _ = higgs
    X, y = X[:3000], y[:3000]
    w = np.random.default_rng(1).uniform(0.2, 2.0, y.size)
    params = {"verbose": -1, "num_leaves": 15, "num_threads": 1, "deterministic": True,
              "force_row_wise": True, "boost_from_average": False}
    if objective == "binary2":
        loss, stock_params, label = BinaryLogloss(sigmoid=2.0), {"objective": "binary", "sigmoid": 2.0}, y
    elif objective == "regression":
        label = y + X[:, 0]
        loss, stock_params = SquaredError(), {"objective": "regression"}
    else:
        label = np.digitize(X[:, 1], np.quantile(X[:, 1], [0.3, 0.7])).astype(float)
        loss, stock_params = MulticlassSoftmax(3), {"objective": "multiclass", "num_class": 3}
    target = Target(label=label.astype(np.float32).astype(np.float64), weight=w.astype(np.float32).astype(np.float64))
    k = loss.num_model_per_iteration

    def fobj(preds, _):
        raw = preds if k == 1 else np.ascontiguousarray(preds)
        g = np.empty(raw.shape, np.float32)
        h = np.empty(raw.shape, np.float32)
        loss.compute_gradients(raw, target, g, h)
        return g, h

    stock = lgb.train({**params, **stock_params}, lgb.Dataset(X, label, weight=w), 4)
    ours = lgb.train({**params, "objective": fobj, **({"num_class": 3} if k > 1 else {})},
                     lgb.Dataset(X, label, weight=w), 4)
    assert _trees(stock) == _trees(ours)


# ------------------------------------------------------------------ per-row losses


@pytest.mark.parametrize("weighted", [False, True])
def test_per_row_losses_match_numpy(rng, weighted):
    n = 5000
    w = _weight(rng, n, weighted)
    scale = 1.0 if w is None else w
    raw = _raw(rng, n)
    lab = (rng.random(n) < 0.5).astype(float)
    for sigmoid in (1.0, 2.0):
        got = BinaryLogloss(sigmoid=sigmoid).loss(raw, Target(label=lab, weight=w))
        np.testing.assert_allclose(got, np.logaddexp(0.0, -(2 * lab - 1) * sigmoid * raw) * scale, rtol=1e-14)
    y = rng.normal(size=n)
    got = SquaredError().loss(raw, Target(label=y, weight=w))
    np.testing.assert_array_equal(got, 0.5 * (raw - y) ** 2 * scale)
    raw3 = _raw(rng, (n, 3))
    y3 = rng.integers(0, 3, n)
    got = MulticlassSoftmax(3).loss(raw3, Target(label=y3.astype(float), weight=w))
    shifted = raw3 - raw3.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, -log_p[np.arange(n), y3] * scale, rtol=1e-13, atol=1e-300)
    out = np.empty(n)
    MulticlassSoftmax(3).compute_loss(raw3, Target(label=y3.astype(float), weight=w), out)
    np.testing.assert_array_equal(out, got)


# ------------------------------------------------------------------ user losses


def test_nan_from_a_user_loss_is_caught_for_every_row_naming_the_loss():
    def huber_with_holes(y, f):
        g = f - y
        g[[3, 500, 999]] = [np.nan, np.inf, -np.inf]
        return g, np.ones_like(f)

    loss = CustomLoss(huber_with_holes, name="huber")
    g = np.empty(1000, np.float32)
    h = np.empty(1000, np.float32)
    with pytest.raises(ValueError, match=r"custom loss 'huber' returned 3 NaN or infinite gradient value\(s\)"):
        loss.compute_gradients(np.zeros(1000), Target(label=np.zeros(1000)), g, h)

    def bad_hessian(y, f):
        h = np.ones_like(f)
        h[7] = 1e300  # finite in float64, infinite as the float32 LightGBM stores
        return f - y, h

    with pytest.raises(ValueError, match=r"custom loss 'h' returned 1 NaN or infinite hessian value\(s\)"):
        CustomLoss(bad_hessian, name="h").compute_gradients(np.zeros(1000), Target(label=np.zeros(1000)), g, h)


def test_user_loss_outputs_are_cast_into_the_buffers(rng):
    loss = CustomLoss(lambda y, f: (f - y, np.full_like(f, 2.0)), name="l2")
    raw = rng.normal(size=300)
    y = rng.normal(size=300)
    w = rng.uniform(0.5, 2.0, 300)
    g = np.empty(300, np.float32)
    h = np.empty(300, np.float32)
    loss.compute_gradients(raw, Target(label=y, weight=w), g, h)
    np.testing.assert_array_equal(g, ((raw - y) * w).astype(np.float32))
    np.testing.assert_array_equal(h, (2.0 * w).astype(np.float32))


def test_subclass_overrides_replace_the_kernels(rng):
    class Tempered(BinaryLogloss):  # a user's variant of a built-in loss
        def gradient_hessian(self, raw, target):
            g, h = super().gradient_hessian(raw, target)
            return 0.5 * g, 0.25 * h

        def loss(self, raw, target):
            return np.full(target.num_rows, 7.0)

    raw = rng.normal(size=200)
    target = Target(label=(rng.random(200) < 0.5).astype(float))
    g, h = _kernel_outputs(Tempered(), raw, target)
    ref_g, ref_h = BinaryLogloss().gradient_hessian(raw, target)
    np.testing.assert_array_equal(g, (0.5 * ref_g).astype(np.float32))
    np.testing.assert_array_equal(h, (0.25 * ref_h).astype(np.float32))
    out = np.empty(200)
    Tempered().compute_loss(raw, target, out)
    np.testing.assert_array_equal(out, np.full(200, 7.0))
    # the built-in itself keeps its kernels
    BinaryLogloss().compute_loss(raw, target, out)
    np.testing.assert_allclose(out, np.logaddexp(0.0, -(2 * target.label - 1) * raw), rtol=1e-14)


def test_bad_shapes_and_buffers_are_refused(rng):
    target = Target(label=np.zeros(10))
    loss = CustomLoss(lambda y, f: (f[:5], f[:5]), name="short")
    g = np.empty(10, np.float32)
    h = np.empty(10, np.float32)
    with pytest.raises(ValueError, match=r"grad_hess of 'short' returned shapes"):
        loss.compute_gradients(np.zeros(10), target, g, h)

    class Pair(BinaryLogloss):
        def gradient_hessian(self, raw, target):
            return np.zeros(4), np.zeros(10)

    with pytest.raises(ValueError, match=r"loss Pair returned a gradient of shape \(4,\); expected \(10,\)"):
        Pair().compute_gradients(np.zeros(10), target, g, h)
    with pytest.raises(TypeError, match="grad must be a C-contiguous float32"):
        BinaryLogloss().compute_gradients(np.zeros(10), target, np.empty(10), h)
    with pytest.raises(ValueError, match="hess has shape"):
        SquaredError().compute_gradients(np.zeros(10), target, g, np.empty(9, np.float32))
    with pytest.raises(ValueError, match=r"raw must have shape \(10, 3\)"):
        MulticlassSoftmax(3).compute_gradients(np.zeros((10, 2)), target, np.empty((10, 2), np.float32),
                                               np.empty((10, 2), np.float32))
