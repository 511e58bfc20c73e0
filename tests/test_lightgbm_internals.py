"""Pins every LightGBM internal the engine relies on (the package smart_lgbm/_lightgbm/).

A LightGBM upgrade that changes one of these behaviours fails here first; and no module
outside that package reaches into LightGBM's internals (the last test).
"""

from __future__ import annotations

import re
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from smart_lgbm import _lightgbm as L
from smart_lgbm.losses import BinaryLogloss, MulticlassSoftmax, SquaredError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    y = (X[:, 0] + 0.5 * rng.normal(size=2000) > 0).astype(float)
    return X, y


def test_supported_version():
    L.check_version()  # the installed one
    assert lgb.__version__.startswith(tuple(v + "." for v in L.SUPPORTED_MINOR_VERSIONS))
    assert L.SUPPORTED_LIGHTGBM == ">=4.6,<4.8"
    for ok in ("4.6.0", "4.7.0", "4.7.0.99", "4.6.1rc1"):
        L.check_version(ok)
    for bad in ("4.5.0", "4.8.0", "5.0.0", "3.7", "dev"):
        with pytest.raises(ImportError, match=r"lightgbm>=4\.6,<4\.8 \(versions 4\.6\.x, 4\.7\.x\); found lightgbm "
                           + re.escape(bad)):
            L.check_version(bad)


def test_param_aliases_are_lightgbms():
    aliases = L.param_aliases()
    assert "subsample" in aliases["bagging_fraction"]
    assert "n_estimators" in aliases["num_iterations"]
    assert aliases["objective"][0] == "objective"


@pytest.mark.parametrize("loss, params", [
    (BinaryLogloss(1.0), {"objective": "binary"}),
    (BinaryLogloss(2.0), {"objective": "binary", "sigmoid": 2.0}),
    (BinaryLogloss(0.5), {"objective": "binary", "sigmoid": 0.5}),
    (SquaredError(), {"objective": "regression"}),
    (MulticlassSoftmax(3), {"objective": "multiclass", "num_class": 3}),
])
def test_objective_lines_match_stock_models(data, loss, params):
    X, y = data
    label = y if loss.num_model_per_iteration == 1 else (X[:, 1] > 0).astype(float) + (X[:, 2] > 0)
    model = lgb.train({**params, "verbosity": -1}, lgb.Dataset(X, label), 1).model_to_string()
    line = next(l for l in model.split("\n") if l.startswith("objective="))
    assert line == f"objective={loss.model_objective_line()}"


def _leaves_of(node: dict) -> list[dict]:
    """The leaves of a ``dump_model`` tree in leaf-index order."""
    if "leaf_index" in node:
        return [node]
    found = _leaves_of(node["left_child"]) + _leaves_of(node["right_child"])
    return sorted(found, key=lambda leaf: leaf["leaf_index"])


def test_split_and_assemble_round_trip(data):
    X, y = data
    stock = lgb.train({"objective": "binary", "verbosity": -1}, lgb.Dataset(X, y), 5)
    text = stock.model_to_string()
    header, trees, parameters = L.split_model_string(text)
    assert len(trees) == 5 and "objective=binary sigmoid:1" in header
    assert L.tree_bodies(text) == trees
    for i, body in enumerate(trees):
        values = [v["leaf_value"] for v in _leaves_of(stock.dump_model()["tree_info"][i]["tree_structure"])]
        np.testing.assert_array_equal(L.leaf_values_of(body), values)
    rebuilt = L.assemble_model_string(header, trees, "binary sigmoid:1", parameters, 1, None)
    again = lgb.Booster(model_str=rebuilt)
    np.testing.assert_array_equal(again.predict(X, raw_score=True), stock.predict(X, raw_score=True))
    assert again.model_to_string() == text


def test_assemble_model_string_counts_tree_sizes_in_utf8_bytes(data):
    # LightGBM splits the trees by tree_sizes, in bytes: a body with a non-ASCII character
    # (never written by LightGBM, but a count in characters would be silently wrong) is
    # counted as its UTF-8 encoding, and the pieces are joined in order.
    X, y = data
    header, trees, parameters = L.split_model_string(
        lgb.train({"objective": "binary", "verbosity": -1}, lgb.Dataset(X, y), 2).model_to_string())
    bodies = [trees[0], trees[1] + "\u00e9"]
    text = L.assemble_model_string(header, bodies, None, parameters, 1, None)
    sizes = [int(v) for v in re.search(r"^tree_sizes=(.*)$", text, re.MULTILINE).group(1).split(" ")]
    chunks = [f"Tree={i}\n{body}" for i, body in enumerate(bodies)]
    assert sizes == [len(c.encode("utf-8")) for c in chunks] and sizes[1] == len(chunks[1]) + 1
    assert "".join(chunks) + "end of trees\n\n" + parameters in text


def test_fold_bias_equals_lightgbm_add_bias(data):
    X, y = data
    # stock: the first tree carries the boost-from-average score (Tree::AddBias)
    stock = lgb.train({"objective": "binary", "verbosity": -1}, lgb.Dataset(X, y), 1)
    no_bias = lgb.train({"objective": "binary", "verbosity": -1, "boost_from_average": False},
                        lgb.Dataset(X, y, init_score=np.full(len(y), BinaryLogloss().init_score(
                            _target(y))[0])), 1)
    _, [tree], _ = L.split_model_string(no_bias.model_to_string())
    folded, values = L.fold_bias(tree, float(BinaryLogloss().init_score(_target(y))[0]))
    _, [stock_tree], _ = L.split_model_string(stock.model_to_string())
    np.testing.assert_array_equal(values, L.leaf_values_of(stock_tree))
    assert "shrinkage=1\n" in folded


def test_with_leaf_values_is_what_lightgbm_predicts_and_shrinkage_is_the_learning_rate(data):
    """A tree body whose leaf_value line is rewritten loads and predicts the new values bit for
    bit (LightGBM reads leaf values round-trip exact); ``shrinkage=`` is the learning rate."""
    X, y = data
    stock = lgb.train({"objective": "binary", "verbosity": -1, "learning_rate": 0.3, "num_leaves": 7},
                      lgb.Dataset(X, y), 2)
    header, trees, params = L.split_model_string(stock.model_to_string())
    assert L.tree_shrinkage(trees[1]) == 0.3
    values = np.random.default_rng(1).normal(size=L.leaf_values_of(trees[1]).shape[0]) / 7.0
    model = L.assemble_model_string(header, [trees[0], L.with_leaf_values(trees[1], values)], None, params, 1, None)
    loaded = lgb.Booster(model_str=model)
    leaves = loaded.predict(X, pred_leaf=True)[:, 1]
    first = loaded.predict(X, raw_score=True, num_iteration=1)
    np.testing.assert_array_equal(loaded.predict(X, raw_score=True), first + values[leaves])
    with pytest.raises(ValueError, match="leaves"):
        L.with_leaf_values(trees[1], values[:-1])


def _target(y):
    from smart_lgbm.losses import Target

    return Target(label=y)


_FIT_PARAMS = "objective=custom metric=None verbosity=-1 num_class=1"


def _fitter(X, y, params: str = _FIT_PARAMS):
    """(Dataset, its handle, a OneIterationBooster on it); keep the Dataset: it owns the handle."""
    ds = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    handle = L.handle_of(ds)
    return ds, handle, L.OneIterationBooster(params, 1, handle, "")


def test_one_iteration_outputs_and_leaves_equal_stock_prediction(data):
    X, y = data
    params = _FIT_PARAMS + " num_leaves=7"
    ds, handle, fitter = _fitter(X, y, params)
    n = len(y)
    # a set on which LightGBM starts from init scores: outputs are then read through leaves
    init = np.linspace(-3.0, 3.0, n)
    init_ds = lgb.Dataset(X, y, init_score=init, reference=ds, params={"verbosity": -1}).construct()
    with_init = L.handle_of(init_ds)  # the Dataset object owns the handle: keep it alive
    texts = []
    # one Booster for several iterations: subsets, then all rows (the training set itself,
    # whose outputs come from the tree learner's partition and whose leaves from a walk),
    # then the first subset once more
    for idx in (np.arange(0, n, 2), np.arange(1, n, 3), np.arange(n), np.arange(0, n, 2)):
        idx = idx.astype(np.int32)
        sub = L.SubsetHandle(handle, idx, "") if idx.size < n else None
        g = (0.5 - y[idx]).astype(np.float32)
        h = np.ones(idx.size, dtype=np.float32)
        fitter.set_params(params + f" seed={len(texts)}")
        same_tree = set()
        for want_leaves, sets in ((False, {"all": (handle, n, None)}), (True, {"all": (handle, n, None)}),
                                  (False, {"all": (handle, n, None), "init": (with_init, n, init)})):
            fitted = fitter.fit(sub.handle if sub else handle, g, h, sets, want_leaves=want_leaves)
            assert not fitted.finished and len(fitted.texts) == 1
            same_tree.add(fitted.texts[0])
            booster = lgb.Booster(model_str=L.assemble_model_string(fitted.header, fitted.texts, None,
                                                                    fitted.parameters, 1, None))
            # the tree was fitted on the sample only: its root counts the sample's rows
            assert booster.dump_model()["tree_info"][0]["tree_structure"]["internal_count"] == idx.size
            assert list(fitted.outputs) == list(sets)  # keyed by set, as asked
            for outputs in fitted.outputs.values():  # exactly what the stock model adds per row
                np.testing.assert_array_equal(outputs[:, 0], booster.predict(X, raw_score=True))
            if want_leaves:
                assert list(fitted.leaves) == ["all"]
                np.testing.assert_array_equal(fitted.leaves["all"][:, 0], booster.predict(X, pred_leaf=True).reshape(-1))
            else:
                assert fitted.leaves is None
        if sub:
            sub.free()
        assert len(same_tree) == 1
        texts.append(fitted.texts[0])
    # nothing carries over between iterations (the trees are rolled back): same input, same tree
    assert texts[3] == texts[0]
    fitter.free()


def test_one_iteration_bias_is_folded_into_trees_and_outputs(data):
    X, y = data
    ds, handle, fitter = _fitter(X, y, _FIT_PARAMS + " num_leaves=7")
    g = (0.5 - y).astype(np.float32)
    fitted = fitter.fit(handle, g, np.ones(len(y), dtype=np.float32), {0: (handle, len(y), None)}, bias=np.array([0.75]))
    booster = lgb.Booster(model_str=L.assemble_model_string(fitted.header, fitted.texts, None, fitted.parameters, 1, None))
    np.testing.assert_array_equal(fitted.outputs[0][:, 0], booster.predict(X, raw_score=True))
    with pytest.raises(TypeError, match="sets must be a dict"):  # by key, never by position
        fitter.fit(handle, g, np.ones(len(y), dtype=np.float32), [(handle, len(y), None)])
    assert "shrinkage=1\n" in fitted.texts[0] and np.all(fitted.leaf_values[0] > 0.75 - 0.2)
    fitter.free()


def test_one_iteration_booster_starts_clean_after_a_finished_iteration(data):
    # LightGBM keeps the constant trees of an iteration that cannot split and does not count
    # it, so RollbackOneIter cannot remove them: the fitter must replace its C Booster.
    X, y = data
    ds, handle, fitter = _fitter(X, y)
    zeros = np.zeros(len(y), dtype=np.float32)
    fitted = fitter.fit(handle, zeros, zeros, {0: (handle, len(y), None)})  # zero hessians: no split
    assert fitted.finished and fitted.outputs == {} and len(fitted.texts) == 1
    g = (0.5 - y).astype(np.float32)
    h = np.ones(len(y), dtype=np.float32)
    after = fitter.fit(handle, g, h, {0: (handle, len(y), None)})
    ds2, handle2, fresh_fitter = _fitter(X, y)
    fresh = fresh_fitter.fit(handle2, g, h, {0: (handle2, len(y), None)})
    assert not after.finished and after.texts == fresh.texts
    # the model text of the next iteration holds that one tree only, no constant tree before it
    assert L.split_model_string(after.model)[1] == after.texts
    fitter.free()
    fresh_fitter.free()


@pytest.mark.parametrize("extra", ["", " feature_fraction=0.5", " feature_fraction=0.5 force_row_wise=true"])
def test_kept_iterations_grow_the_trees_of_reset_and_rolled_back_ones(data, extra):
    # fit(keep=True): no reset, no rollback, the trees stay in the C Booster; the trees are
    # those of the reset-and-roll-back path byte for byte.  With column sampling this pins
    # that a reset draws one column subset and a parameter reset draws one too
    # (ColSampler::ResetByTree), which the kept path replays.
    X, y = data
    params = _FIT_PARAMS + " num_leaves=7" + extra
    n = len(y)
    ds, handle, kept = _fitter(X, y, params)
    ds2, handle2, reset = _fitter(X, y, params)
    rng = np.random.default_rng(1)
    h = np.ones(n, dtype=np.float32)
    texts = []
    for it in range(5):
        g = (0.5 - y + 0.3 * rng.normal(size=n)).astype(np.float32)
        p = params + f" seed={it}"  # re-seeded every iteration, as the engine does
        a = kept.fit(handle, g, h, {}, params=p, keep=True)
        b = reset.fit(handle2, g, h, {0: (handle2, n, None)}, params=p)
        assert not a.finished and a.texts == b.texts and a.outputs == {} and a.leaves is None
        assert kept.kept == it + 1 and reset.kept == 0
        # the newest iteration's text (SaveModelToString from start_iteration) holds its trees only
        assert L.split_model_string(a.model)[1] == a.texts
        texts += a.texts
    # the C Booster holds every kept tree, in order
    assert L.tree_bodies(kept._buffer.model_string(kept.handle)) == texts
    # a sampled iteration after kept ones parks, rolls them back and fits as the reset path
    idx = np.arange(0, n, 2, dtype=np.int32)
    sub, sub2 = L.SubsetHandle(handle, idx, ""), L.SubsetHandle(handle2, idx, "")
    g = (0.5 - y).astype(np.float32)
    a = kept.fit(sub.handle, g[idx], h[idx], {0: (handle, n, None)}, params=params + " seed=9")
    b = reset.fit(sub2.handle, g[idx], h[idx], {0: (handle2, n, None)}, params=params + " seed=9")
    assert kept.kept == 0 and a.texts == b.texts
    np.testing.assert_array_equal(a.outputs[0], b.outputs[0])
    assert L.split_model_string(kept._buffer.model_string(kept.handle))[1] == []
    with pytest.raises(ValueError, match="keep=True"):  # no outputs read through LightGBM
        kept.fit(handle, g, h, {0: (handle, n, None)}, keep=True)
    for s in (sub, sub2):
        s.free()
    reset.free()


def test_kept_iteration_with_a_bias_folds_it_like_the_reset_path(data):
    X, y = data
    n = len(y)
    g = (0.5 - y).astype(np.float32)
    h = np.ones(n, dtype=np.float32)
    ds, handle, kept = _fitter(X, y, _FIT_PARAMS + " num_leaves=7")
    ds2, handle2, reset = _fitter(X, y, _FIT_PARAMS + " num_leaves=7")
    kept.fit(handle, g, h, {}, keep=True)  # one kept iteration before: the bias goes to the newest trees
    reset.fit(handle2, g, h, {0: (handle2, n, None)})
    a = kept.fit(handle, g * 0.5, h, {}, keep=True, bias=np.array([0.75]))
    b = reset.fit(handle2, g * 0.5, h, {0: (handle2, n, None)}, bias=np.array([0.75]))
    assert a.texts == b.texts and "shrinkage=1\n" in a.texts[0]
    kept.free()
    reset.free()


def test_subset_keeps_bin_mappers_and_clear_field(data):
    X, y = data
    ds = lgb.Dataset(X, y, group=[1000, 1000], params={"verbosity": -1}).construct()
    handle = L.handle_of(ds)
    assert L.has_group(handle)
    copy = L.SubsetHandle(handle, np.arange(2000, dtype=np.int32), "")
    L.clear_field(copy.handle, "group")
    assert not L.has_group(copy.handle) and L.has_group(handle)  # the source is untouched
    assert L.num_rows(copy.handle) == 2000
    copy.free()


def test_free_owned_frees_the_engines_datasets_once(data):
    X, y = data
    ds = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    sub = L.SubsetHandle(L.handle_of(ds), np.arange(10, dtype=np.int32), "")
    for obj in (sub, ds, sub, ds):  # idempotent
        L.free_owned(obj)
    assert not sub.handle and L.handle_of(ds) is None
    with pytest.raises(TypeError, match="SubsetHandle or a lightgbm.Dataset"):
        L.free_owned(object())


def test_callback_model_is_a_booster_of_the_trees_so_far(data):
    X, y = data
    stock = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 7}, lgb.Dataset(X, y), 3)
    text = stock.model_to_string()
    calls, evaluated = [], []
    model = L.CallbackModel(lambda: (3, text), calls.append, lambda which, feval: evaluated.append(which) or [],
                            "train")
    assert isinstance(model, lgb.Booster)
    model.reset_parameter({"learning_rate": 0.05})
    assert calls == [{"learning_rate": 0.05}]
    # read methods work on a Booster built from the trees so far (they crashed on a handle-less one)
    assert model.num_trees() == 3 and model.current_iteration() == 3 and model.num_feature() == X.shape[1]
    np.testing.assert_array_equal(model.predict(X, raw_score=True), stock.predict(X, raw_score=True))
    assert model.model_to_string() == text
    np.testing.assert_array_equal(model.feature_importance(), stock.feature_importance())
    model.eval_valid()
    model.eval_train()
    assert evaluated == ["valid", None]
    with pytest.raises(lgb.basic.LightGBMError, match="read-only view"):
        model.update()
    import pickle

    restored = pickle.loads(pickle.dumps(model))
    assert type(restored) is lgb.Booster and restored.model_to_string() == text
    del model  # must not free a handle it does not own


# ---- the raw-feature walk: tree text and LightGBM's input conversions


def _parsed_and_dumped(booster: lgb.Booster):
    return zip((L.parse_tree(b) for b in L.tree_bodies(booster.model_to_string())),
               booster.dump_model()["tree_info"])


def test_parse_tree_reads_what_lightgbm_dumps():
    rng = np.random.default_rng(1)
    n = 3000
    X = np.column_stack([rng.integers(0, 30, n), rng.normal(size=n), rng.normal(size=n)])
    X[rng.random(n) < 0.2, 1] = np.nan
    X[rng.random(n) < 0.3, 2] = 0.0
    y = rng.normal(size=30)[X[:, 0].astype(int)] + np.nan_to_num(X[:, 1], nan=3.0) + (X[:, 2] == 0)
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 12, "max_cat_to_onehot": 4,
                         "min_data_per_group": 5, "cat_smooth": 1.0},
                        lgb.Dataset(X, y, categorical_feature=[0], params={"verbosity": -1}), 6)
    seen = set()
    for tree, dumped in _parsed_and_dumped(booster):
        assert tree.num_leaves == dumped["num_leaves"]
        stack = [dumped["tree_structure"]]
        while stack:
            node = stack.pop()
            if "leaf_index" in node:
                assert tree.leaf_value[node["leaf_index"]] == node["leaf_value"]
                continue
            i = node["split_index"]
            assert tree.split_feature[i] == node["split_feature"]
            dt = int(tree.decision_type[i])
            assert bool(dt & 2) == node["default_left"]
            assert ["None", "Zero", "NaN"][(dt >> 2) & 3] == node["missing_type"]
            if node["decision_type"] == "==":
                assert dt & 1 and tree.num_cat > 0
                lo, hi = tree.cat_boundaries[int(tree.threshold[i]):int(tree.threshold[i]) + 2]
                bits = tree.cat_threshold[lo:hi]
                left = [c for c in range(32 * bits.size) if bits[c // 32] >> (c % 32) & 1]
                assert left == [int(c) for c in str(node["threshold"]).split("||")]
            else:
                assert not dt & 1 and tree.threshold[i] == node["threshold"]
            for side, key in ((tree.left_child, "left_child"), (tree.right_child, "right_child")):
                child = node[key]
                assert side[i] == (child["split_index"] if "split_index" in child else ~child["leaf_index"])
            seen.add((node["decision_type"], node["missing_type"]))
            stack += [node["left_child"], node["right_child"]]
    assert {("==", "None"), ("<=", "NaN"), ("<=", "None")} <= seen
    assert tree.leaf_value.dtype == np.float64 and tree.threshold.dtype == np.float64
    assert tree.cat_threshold.dtype == np.uint32 and tree.decision_type.dtype == np.int8


def test_parse_tree_one_leaf_defaults_and_refusals(data):
    X, y = data
    one = lgb.train({"objective": "regression", "verbosity": -1, "min_gain_to_split": 1e9}, lgb.Dataset(X, y), 1)
    [body] = L.tree_bodies(one.model_to_string())
    tree = L.parse_tree(body)
    assert tree.num_leaves == 1 and tree.split_feature.size == 0 and tree.left_child.size == 0
    assert tree.leaf_value.tolist() == [one.dump_model()["tree_info"][0]["tree_structure"]["leaf_value"]]
    # no decision_type line: LightGBM reads all zeros (numerical, default right, missing None)
    two = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 3}, lgb.Dataset(X, y), 1)
    [body] = L.tree_bodies(two.model_to_string())
    lines = [line for line in body.split("\n") if not line.startswith("decision_type=")]
    assert L.parse_tree("\n".join(lines)).decision_type.tolist() == [0, 0]
    with pytest.raises(ValueError, match="tree text has no leaf_value= line"):
        L.parse_tree("\n".join(line for line in body.split("\n") if not line.startswith("leaf_value=")))
    linear = lgb.train({"objective": "regression", "verbosity": -1, "linear_tree": True, "num_leaves": 3},
                       lgb.Dataset(X, X[:, 0] * 2.0), 1)
    [body] = L.tree_bodies(linear.model_to_string())
    assert "is_linear=1" in body
    with pytest.raises(ValueError, match=r"linear trees \(is_linear=1"):
        L.parse_tree(body)


def _same_tree(a: L.TreeArrays, b: L.TreeArrays) -> None:
    for key, value in a.__dict__.items():
        other = getattr(b, key)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, key
            # bit for bit (a float array compared as its bytes: -0.0 and NaN included)
            assert value.tobytes() == other.tobytes(), key
        else:
            assert value == other, key


def _trees_of_many_kinds() -> list[str]:
    """Tree bodies LightGBM writes for numerical trees of many shapes: NaN and zero missing
    values, default left and right, tiny and huge thresholds and outputs, multiclass."""
    rng = np.random.default_rng(21)
    n = 4000
    X = rng.normal(size=(n, 8)) * np.array([1, 1e-30, 1e30, 1, 1, 1, 1, 1])
    X[rng.random(n) < 0.15, 3] = np.nan
    X[rng.random(n) < 0.4, 4] = 0.0
    X[:, 5] = np.abs(X[:, 5])  # one sign only
    bodies = []
    for params, label in (
        ({"objective": "regression", "num_leaves": 31}, X[:, 0] * 1e12 + np.nan_to_num(X[:, 3])),
        ({"objective": "binary", "num_leaves": 63, "min_data_in_leaf": 5},
         ((X[:, 1] > 0) ^ (X[:, 4] == 0)).astype(float)),
        ({"objective": "multiclass", "num_class": 3, "num_leaves": 7},
         np.digitize(X[:, 2], [-1e30, 1e30]).astype(float)),
        ({"objective": "regression", "num_leaves": 15, "zero_as_missing": True}, X[:, 4] - X[:, 5] * 1e-9),
    ):
        booster = lgb.train({**params, "verbosity": -1, "learning_rate": 0.37}, lgb.Dataset(X, label), 4)
        bodies += L.tree_bodies(booster.model_to_string())
    return bodies


def test_parse_tree_fast_path_reads_what_the_general_reading_reads():
    from smart_lgbm._lightgbm import tree_text

    bodies = _trees_of_many_kinds()
    assert len(bodies) > 20
    for body in bodies:
        fast = tree_text._parse_plain(body)
        assert fast is not None  # every numerical tree LightGBM writes takes the fast path
        _same_tree(fast, tree_text._parse_general(body))
        _same_tree(L.parse_tree(body), fast)


def test_numpys_decimal_reader_gives_pythons_doubles():
    """The fast path converts decimals with np.fromstring: the double float() gives, for the
    forms LightGBM writes (17 significant digits) and the shortest round-trip form."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**63, size=20000, dtype=np.int64)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)]
    values = np.concatenate([values, rng.normal(size=5000), rng.normal(size=5000) * 1e-310, [0.0, -0.0, 5e-324]])
    for text in (" ".join(f"{v:.17g}" for v in values), " ".join(repr(float(v)) for v in values)):
        parsed = np.fromstring(text, dtype=np.float64, sep=" ")
        assert parsed.tobytes() == np.array([float(t) for t in text.split(" ")]).tobytes()


def test_parse_tree_fast_path_leaves_other_bodies_to_the_general_reading(data):
    from smart_lgbm._lightgbm import tree_text

    X, y = data
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 4}, lgb.Dataset(X, y), 1)
    [body] = L.tree_bodies(booster.model_to_string())
    assert tree_text._parse_plain(body) is not None
    lines = body.split("\n")
    threshold = next(line for line in lines if line.startswith("threshold="))
    others = {
        "crlf": body.replace("\n", "\r\n"),
        "repeated key": body.replace(threshold, threshold + "\n" + threshold),
        "no decision_type": "\n".join(line for line in lines if not line.startswith("decision_type=")),
        "inf": body.replace(threshold, threshold.rsplit(" ", 1)[0] + " inf"),
        "plus sign": body.replace("num_leaves=4", "num_leaves=+4"),
        "not ascii": body.replace("num_cat=0", "num_cat=0\nnote=\u00e9"),
        "two spaces": body.replace("left_child=", "left_child= "),
    }
    for name, text in others.items():
        assert tree_text._parse_plain(text) is None, name
        try:
            expected = tree_text._parse_general(text)
        except ValueError as exc:
            with pytest.raises(ValueError, match=re.escape(str(exc))):
                L.parse_tree(text)
        else:
            _same_tree(L.parse_tree(text), expected)
    # the general reading took the last of a repeated line; a value past an int's range is refused
    _same_tree(L.parse_tree(others["repeated key"]), tree_text._parse_general(others["repeated key"]))
    with pytest.raises(ValueError, match="left_child has values outside the range of int32"):
        L.parse_tree(body.replace("left_child=", "left_child=99999999999999999999", 1))


def test_dense_conversion_is_lightgbms():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 8},
                        lgb.Dataset(X * 1e6, X[:, 0], params={"verbosity": -1}), 3)
    for floats in (X, X.astype(np.float32), np.asfortranarray(X)):
        assert L.dense_as_predicted(floats) is floats  # LightGBM reads them unchanged
    big = rng.integers(-(2**40), 2**40, size=(400, 3))
    for array in (big, np.asfortranarray(big), big.astype(np.uint8), big > 0, big.astype(np.float16)):
        converted = L.dense_as_predicted(array)
        assert converted.dtype == np.float32 and converted.shape == array.shape
        np.testing.assert_array_equal(converted, array.astype(np.float32))
        np.testing.assert_array_equal(booster.predict(array), booster.predict(converted))


def test_pandas_conversion_is_lightgbms():
    rng = np.random.default_rng(3)
    train = pd.DataFrame({"c": pd.Categorical(rng.choice(["a", "b", "c"], 500)), "x": rng.normal(size=500)})
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 4, "min_data_per_group": 5},
                        lgb.Dataset(train, (train["c"] == "b") + train["x"], params={"verbosity": -1}), 3)
    array, categories = L.pandas_to_numpy(train, None)  # the training frame: its own categories
    assert categories == [["a", "b", "c"]] == booster.pandas_categorical and array.dtype == np.float64
    valid = pd.DataFrame({"c": pd.Categorical(["c", "zz", None, "a"]), "x": np.float32([0.5, 1, 2, 3])})
    array, categories = L.pandas_to_numpy(valid, booster.pandas_categorical)
    assert categories == booster.pandas_categorical
    np.testing.assert_array_equal(array[:, 0], [2.0, np.nan, np.nan, 0.0])  # codes in training order
    # codes with NaN (unseen or missing) are float64 after LightGBM's replace(-1 -> NaN) ...
    assert array.dtype == np.float64
    np.testing.assert_array_equal(booster.predict(valid, raw_score=True), booster.predict(array, raw_score=True))
    # ... and stay int8 without: with a float32 column the frame becomes float32
    seen = valid.iloc[[0, 3]]
    array, _ = L.pandas_to_numpy(seen, booster.pandas_categorical)
    assert array.dtype == np.float32
    np.testing.assert_array_equal(booster.predict(seen, raw_score=True), booster.predict(array, raw_score=True))


def test_pyarrow_table_test_is_lightgbms():
    try:
        import pyarrow as pa

        table = pa.table({"a": [1.0]})
    except ImportError:  # without pyarrow LightGBM 4.6 tests against this placeholder class
        from lightgbm.compat import pa_Table

        table = pa_Table()
    assert L.is_pyarrow_table(table) and not L.is_pyarrow_table(np.zeros((1, 1)))


# --------------------------------------------------------------------------- callbacks' evaluation results


def _stock_results(data):
    """What stock lightgbm.train hands its callbacks, and the exception early stopping raises."""
    X, y = data
    seen, stopped = [], []
    stopper = lgb.early_stopping(1, verbose=False, min_delta=1.0)  # stops at the second iteration

    def spy(env):
        seen.append(list(env.evaluation_result_list))
        try:
            stopper(env)
        except lgb.callback.EarlyStopException as exc:
            stopped.append(exc)
            raise

    train = lgb.Dataset(X, y)
    booster = lgb.train({"objective": "binary", "metric": ["auc", "binary_logloss"], "verbosity": -1}, train, 5,
                        valid_sets=[lgb.Dataset(X[:500], y[:500], reference=train)], valid_names=["v"],
                        callbacks=[spy])
    return seen, stopped, booster


def test_evaluation_results_have_the_form_stock_train_gives_callbacks(data):
    seen, stopped, booster = _stock_results(data)
    stock = seen[0][0]
    ours = L.evaluation_result(stock[0], stock[1], stock[2], stock[3])
    # same type (EvalResult in 4.7, tuple in 4.6), same items in the same order
    assert type(ours) is type(stock) and ours == stock and len(ours) == len(stock) == 4
    assert tuple(ours) == ("v", "auc", stock[2], True)
    if hasattr(lgb, "EvalResult"):  # 4.7 on: the stock callbacks read the named fields
        assert (ours.dataset_name, ours.metric_name, ours.metric_value, ours.maximize) == tuple(stock)
        assert not ours.is_cv_result()
    # EarlyStopException.best_score: what the engine reads back after early stopping
    [exc] = stopped
    assert [type(r) for r in exc.best_score] == [type(ours)] * 2
    assert L.best_score_of(exc.best_score) == booster.best_score
    assert L.best_score_of(exc.best_score)["v"]["binary_logloss"] == exc.best_score[1][2]
    # and the same from an exception a callback written for 4.6 raises with plain tuples
    legacy = lgb.callback.EarlyStopException(0, [tuple(r) for r in exc.best_score])
    assert L.best_score_of(legacy.best_score) == booster.best_score
    assert L.best_score_of(None) == {}


# --------------------------------------------------------------------------- scikit-learn internals


def _set_label_error(label, n):
    """The exception LightGBM's own Dataset.set_label raises for ``label`` (None if it converts)."""
    ds = lgb.Dataset(np.zeros((n, 1)), params={"verbosity": -1}).construct()
    try:
        ds.set_label(label)
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc
    return None


@pytest.mark.parametrize("label", [
    np.array(["a", "b", "a", "b"]),
    ["a", "b", "a", "b"],
    [1.0, 0.0, 1.0, 0.0],
    np.array([[1.0], [0.0], [1.0], [0.0]]),
    np.array([True, False, True, False]),
    np.array([1, 0, 1, 0], dtype=object),
    np.array([{}, {}, {}, {}]),
], ids=["str-array", "str-list", "float-list", "column", "bool", "object-ints", "dicts"])
def test_sklearn_check_label_refuses_what_set_label_refuses(label):
    import pandas as pd

    for value in (label, pd.Series(label) if np.ndim(label) == 1 else pd.DataFrame(label),
                  pd.DataFrame({"a": [1, 0, 1, 0], "b": [0, 1, 0, 1]})):
        stock = _set_label_error(value, 4)
        if stock is None:
            L.sklearn_check_label(value)
            continue
        with pytest.raises(type(stock)) as ours:
            L.sklearn_check_label(value)
        assert str(ours.value) == str(stock)


def test_sklearn_record_feature_names_as_construction_does():
    import pandas as pd
    import scipy.sparse as sp

    X = np.random.default_rng(0).normal(size=(50, 3))
    cases = [(X, "auto"), (X, ["a", "b", "c"]), (sp.csr_matrix(X), "auto"),
             (pd.DataFrame(X, columns=["a", "b", "c"]), "auto")]
    for data, names in cases:
        constructed = lgb.Dataset(data, label=X[:, 0] > 0, feature_name=names, params={"verbosity": -1}).construct()
        fresh = lgb.Dataset(data, label=X[:, 0] > 0, feature_name=names)
        L.sklearn_record_feature_names(fresh)
        assert fresh._handle is None  # still not constructed
        if hasattr(lgb, "EvalResult"):  # 4.7 on: LGBMModel.fit reads the flag construction sets
            assert fresh._has_non_default_feature_names == constructed._has_non_default_feature_names
            assert constructed._has_non_default_feature_names == (names != "auto" or isinstance(data, pd.DataFrame))
        else:  # 4.6 has no such flag, and nothing is added
            assert not hasattr(constructed, "_has_non_default_feature_names")
            assert not hasattr(fresh, "_has_non_default_feature_names")


# --------------------------------------------------------------------------- LightGBM's network

# One machine of a 2-machine network, run as its own process (LightGBM's network is global,
# thread-local state).  Its rows lie in another range than the other machine's, its samples
# have other sizes; it prints what the test compares.
_NETWORK_MACHINE = r"""
import json, sys
import lightgbm as lgb, numpy as np
from smart_lgbm import _lightgbm as L
rank, machines, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
L.network_init(machines, port, 1, 2)
rng = np.random.default_rng(rank)
n = 1500 + 700 * rank
X = rng.uniform(size=(n, 3)) + 10.0 * rank  # this machine's rows: [0, 1) or [10, 11)
# Binned with the network up, as the engine bins a worker's rows.
train = lgb.Dataset(X, params={"verbosity": -1, "max_bin": 15}, free_raw_data=False).construct()
params = ("objective=custom metric=None verbosity=-1 num_leaves=5 min_data_in_leaf=3 force_col_wise=true "
          f"tree_learner=data num_machines=2 machines={machines} local_listen_port={port} num_threads=1")
fitter = L.OneIterationBooster(params, 1, L.handle_of(train), "num_threads=1")
out = {"trees": [], "sizes": [], "header": fitter.header}
for it in range(4):
    # Iteration 2 fits every row: the park-and-reset path (the Booster already holds them).
    rows = np.arange(n, dtype=np.int32) if it == 2 else np.sort(
        rng.choice(n, 100 + 50 * it + 300 * rank, replace=False)).astype(np.int32)
    subset = None if it == 2 else L.SubsetHandle(L.handle_of(train), rows, "num_threads=1")
    target = (X[rows, 0] % 1.0 > 0.5).astype(np.float32)  # a split on feature 0 pays
    grad = (0.5 - target).astype(np.float32)
    fitted = fitter.fit(L.handle_of(train) if subset is None else subset.handle, grad,
                        np.ones(len(rows), dtype=np.float32), {0: (L.handle_of(train), n, None)})
    if subset is not None:
        subset.free()
    out["trees"].append(fitted.texts[0])
    out["sizes"].append(len(rows))
out["parameters"] = fitter.parameters_section(params)  # the throw-away Booster, on the network
fitter.free()
L.network_free()
print("RESULT" + json.dumps(out))
"""


def _free_ports(count):
    import socket

    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_engine_iteration_sequence_on_a_two_machine_network():
    """The engine's C-API sequence on LightGBM's socket network (what smart_lgbm.dask runs on
    every worker): bins found jointly, then per iteration reset to this machine's sample (other
    sizes on each machine), UpdateOneIterCustom, read outputs, park on the one-row set, roll
    back, and at the end the throw-away Booster of ``parameters_section``.  Both machines must
    get the same trees, grown from both machines' rows."""
    import json
    import subprocess
    import sys

    ports = _free_ports(2)
    machines = ",".join(f"127.0.0.1:{p}" for p in ports)
    procs = [subprocess.Popen([sys.executable, "-c", _NETWORK_MACHINE, str(rank), machines, str(ports[rank])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in range(2)]
    outs = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr[-2000:]
            outs.append(json.loads(stdout[stdout.index("RESULT") + len("RESULT"):]))
    finally:
        for proc in procs:
            proc.kill()
    first, second = outs
    assert first["trees"] == second["trees"]
    assert first["sizes"] != second["sizes"]
    for i, tree in enumerate(first["trees"]):
        # the root counts the rows of both machines' samples
        root_count = int(re.search(r"^internal_count=(\d+)", tree, re.MULTILINE).group(1))
        assert root_count == first["sizes"][i] + second["sizes"][i]
    # One set of bin boundaries for both, found jointly: LightGBM divides the features among
    # the machines (3 features: the first two to rank 0, the last to rank 1), each finds its
    # features' bins from its own rows, and all are shared.  So rank 0, whose rows lie in
    # [0, 1), bins the last feature over rank 1's range [10, 11).
    infos = re.search(r"^feature_infos=(.*)$", first["header"], re.MULTILINE).group(1)
    assert infos == re.search(r"^feature_infos=(.*)$", second["header"], re.MULTILINE).group(1)
    ranges = [tuple(float(v) for v in info.strip("[]").split(":")) for info in infos.split(" ")]
    assert all(0.0 <= low < high < 1.0 for low, high in ranges[:2])
    assert 10.0 <= ranges[2][0] < ranges[2][1] < 11.0
    for out in outs:
        assert "[tree_learner: data]" in out["parameters"] and "[num_machines: 2]" in out["parameters"]


def test_network_free_without_a_network_does_nothing():
    L.network_free()
    L.network_free()


def test_reset_links_sets_only_the_networks_links_to_reset_and_opens_no_files():
    # A worker calls reset_links after each failed fit: a descriptor left open per call
    # (the duplicate of every file that is not a socket) doubles the process's open files,
    # and after a few failures LightGBM dies of "Too many open files".
    import os
    import socket
    import struct

    listener = socket.create_server(("127.0.0.1", 0))
    peer_port = listener.getsockname()[1]
    ours = socket.create_connection(("127.0.0.1", peer_port))  # a link to a machine of the network
    theirs, _ = listener.accept()
    other = socket.create_server(("127.0.0.1", 0))
    unrelated = socket.create_connection(other.getsockname()[:2])  # not a link of the network
    accepted, _ = other.accept()
    open_files = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        before = len(os.listdir(open_files))
        for _ in range(4):
            assert L.reset_links(f"127.0.0.1:{peer_port}", 1) >= 1
        assert len(os.listdir(open_files)) == before
        linger = struct.unpack("ii", ours.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8))
        assert linger == (1, 0)
        assert struct.unpack("ii", unrelated.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8))[0] == 0
    finally:
        for sock in (ours, theirs, listener, unrelated, accepted, other):
            sock.close()


def test_is_early_stopping_callback_knows_lightgbms():
    assert L.is_early_stopping_callback(lgb.early_stopping(5, verbose=False))
    assert not L.is_early_stopping_callback(lgb.log_evaluation(5))
    assert not L.is_early_stopping_callback(lambda env: None)


# --------------------------------------------------------------------------- bin mappers


def test_bin_mappers_are_read_from_lightgbms_binary_file():
    # Pins the layout of LGBM_DatasetSaveBinary's file that _lightgbm.bin_mappers parses:
    # every feature's bin count is LightGBM's own, every threshold a trained tree holds is one
    # of its feature's upper bounds, missing types and categorical features as LightGBM binned
    # them, unused features absent.
    import ctypes

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    X[::5, 1] = np.nan  # missing type NaN
    X[:, 2] = 0.0  # constant: unused
    X[:, 4] = rng.integers(0, 8, 3000)  # categorical
    X[:, 5] = np.where(rng.random(3000) < 0.4, 0.0, X[:, 5])
    y = X[:, 0] + np.nan_to_num(X[:, 1]) + (X[:, 4] == 3) + X[:, 5]
    ds = lgb.Dataset(X, y, categorical_feature=[4], params={"verbosity": -1, "zero_as_missing": False}).construct()
    mappers = L.bin_mappers(L.handle_of(ds))
    assert len(mappers) == 6 and mappers[2] is None
    for f, mapper in enumerate(mappers):
        if mapper is None:
            continue
        num_bin = ctypes.c_int(0)
        L._check(L._LIB.LGBM_DatasetGetFeatureNumBin(L.handle_of(ds), ctypes.c_int(f), ctypes.byref(num_bin)))
        assert mapper.categorical == (f == 4)
        if not mapper.categorical:
            assert mapper.upper_bounds.shape == (num_bin.value,) and mapper.categories.shape == (0,)
        else:  # bin 0 for NaN and the categories without a bin, then one category a bin, the most frequent first
            assert mapper.categories.shape == (num_bin.value,) and mapper.upper_bounds.shape == (0,)
            counts = np.bincount(X[:, 4].astype(int), minlength=8)
            assert mapper.categories[0] == -1 and list(mapper.categories[1:]) == list(np.argsort(-counts,
                                                                                                 kind="stable"))
    assert [m.missing_type for m in mappers if m is not None and not m.categorical] == [0, 2, 0, 0]
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 31}, ds, 20)
    seen = 0
    for text in L.tree_bodies(booster.model_to_string()):
        tree = L.parse_tree(text)
        for feature, threshold, decision in zip(tree.split_feature, tree.threshold, tree.decision_type):
            if not decision & 1:  # numerical split
                assert np.any(mappers[feature].upper_bounds == threshold)
                seen += 1
    assert seen > 100
    zero_missing = lgb.Dataset(X[:, [0]], y, params={"verbosity": -1, "zero_as_missing": True}).construct()
    assert L.bin_mappers(L.handle_of(zero_missing))[0].missing_type == 1


def test_model_with_objective_is_the_stock_objectives_model(data):
    """A custom-objective model with the stock objective line and the initial score folded
    in predicts what stock LightGBM's model does (SmartObjective.finalize)."""
    X, y = data
    loss = BinaryLogloss()
    params = {"num_leaves": 7, "verbosity": -1, "seed": 0}
    stock = lgb.train({**params, "objective": "binary"}, lgb.Dataset(X, y), 5)
    init = float(np.log(y.mean() / (1 - y.mean())))
    dtrain = lgb.Dataset(X, y, init_score=np.full(len(y), init))
    custom = lgb.train({**params, "objective": lambda p, d: loss.gradient_hessian(p, _dataset_target(d))}, dtrain, 5)
    text = L.model_with_objective(custom.model_to_string(), "binary sigmoid:1", 1, np.array([init]), None)
    assert "\nobjective=binary sigmoid:1\n" in text and "[objective: binary]" in text
    np.testing.assert_allclose(lgb.Booster(model_str=text).predict(X), stock.predict(X), rtol=0, atol=1e-12)


def _dataset_target(dataset):
    from smart_lgbm.losses import Target

    return Target(label=dataset.get_label().astype(float))


def test_has_validation_sets_sees_what_train_evaluates(data):
    X, y = data
    seen = []
    train = lgb.Dataset(X, y)

    def spy(env):
        seen.append(L.has_validation_sets(env.model))

    params = {"objective": "binary", "verbosity": -1}
    lgb.train(params, train, 1, callbacks=[spy])
    lgb.train(params, train, 1, valid_sets=[lgb.Dataset(X[:100], y[:100], reference=train)], callbacks=[spy])
    lgb.train(params, train, 1, valid_sets=[train], valid_names=["fit"], callbacks=[spy])
    assert seen == [False, True, True]


def test_exact_internal_values_are_the_json_dumps(data):
    # LGBM_BoosterDumpModel writes internal values at 17 digits; the text at 6
    X, y = data
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 7}, lgb.Dataset(X, y), 2)
    exact = L.exact_internal_values(booster._handle, 2)
    _, bodies, _ = L.split_model_string(booster.model_to_string())
    for values, body in zip(exact, bodies):
        line = next(t for t in body.split("\n") if t.startswith("internal_value="))
        text = np.array(line.split("=")[1].split(" "), dtype=np.float64)
        assert values.shape == text.shape
        np.testing.assert_allclose(values, text, rtol=1e-5)
        assert [float(f"{v:g}") for v in values] == list(text)


def test_constructed_like_reads_fields_back_as_stock_and_leaves_the_dataset(data):
    X, y = data
    ds = lgb.Dataset(X, y, weight=np.ones(len(y)), free_raw_data=False)
    copy = L.constructed_like(ds, {"verbosity": -1})
    assert ds._handle is None and copy._handle is not None
    assert copy.get_label().dtype == np.float32 and copy.num_data() == len(y)
    sub = L.constructed_like(ds.subset(list(range(10))), {"verbosity": -1})
    assert sub.num_data() == 10
    built = lgb.Dataset(X, y).construct()
    assert L.constructed_like(built, {}) is built


@pytest.mark.skipif(not hasattr(lgb.Dataset(np.zeros((1, 1))), "position"), reason="LightGBM < 4.1")
def test_has_positions_reads_python_and_c_sides(data):
    X, y = data
    assert not L.has_positions(lgb.Dataset(X, y))
    pos = np.arange(len(y)) % 5
    assert L.has_positions(lgb.Dataset(X, y, position=pos))
    assert L.has_positions(lgb.Dataset(X, y, position=pos).construct())
    assert L.has_positions(lgb.Dataset(X, y, position=pos, free_raw_data=False).subset([0, 1]))
    assert not L.has_positions(lgb.Dataset(X, y).construct())


# --------------------------------------------------------------------------- where internals live

# What counts as a LightGBM internal in source text: its C library handle, its private
# modules' and classes' single-underscore names (``lightgbm.basic._...``, ``lgb.callback._...``), a
# Dataset's or Booster's handle, name-mangled Booster attributes, and the modules whose
# names start with an underscore or are private by convention (``lightgbm.compat``), and
# code-object copies of its functions (``__code__``).
_INTERNAL_USE = re.compile(
    r"\b_LIB\b|\b(?:lgb|lightgbm)(?:\.\w+)*\._[A-Za-z]|\b_basic\b|from lightgbm(?:\.\w+)* import _[A-Za-z]"
    r"|from lightgbm import basic\b|import lightgbm\.basic|\blightgbm\.compat\b|\._handle\b|_Booster__\w"
    r"|\._Dataset__\w|co_names|__code__"
)


def test_internals_are_used_only_inside_the_lightgbm_package():
    package = Path(L.__file__).resolve().parent
    assert package.name == "_lightgbm" and (package / "__init__.py").is_file()
    root = package.parent
    inside = sorted(p.relative_to(root).as_posix() for p in package.rglob("*.py")
                    if _INTERNAL_USE.search(p.read_text()))
    # the pattern finds the package's own uses (so it is not blind) ...
    for module in ("_lightgbm/_capi.py", "_lightgbm/datasets.py", "_lightgbm/callbacks.py", "_lightgbm/sklearn.py",
                   "_lightgbm/raw_data.py", "_lightgbm/model_text.py"):
        assert module in inside
    # ... and none elsewhere in smart_lgbm
    outside = []
    for path in sorted(root.rglob("*.py")):
        if package in path.parents:
            continue
        for number, line in enumerate(path.read_text().split("\n"), 1):
            if path.relative_to(root).as_posix() == "_numba/row_kernel.py":  # copies smart_lgbm's own kernels
                line = line.replace("__code__", "")
            if _INTERNAL_USE.search(line):
                outside.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert outside == [], "LightGBM internals used outside smart_lgbm/_lightgbm/:\n" + "\n".join(outside)


# --------------------------------------------------------------------------- sampler="auto"'s stock branch

def test_stock_iterations_sees_one_update_per_iteration_between_the_callbacks():
    from smart_lgbm._lightgbm import StockIterations

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(float)
    watch = StockIterations({"sampler": "stock"}, samples_rows=False)
    seen = []

    def after(env):
        seen.append(dict(env.model.last_record))

    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_class": 1}, lgb.Dataset(X, y), 4,
                        callbacks=[*watch.callbacks, after])
    assert [r["iteration"] for r in seen] == [0, 1, 2, 3]
    assert all(r["num_trees"] == 1 and r["num_sampled"] == 500 and r["seconds"] > 0 for r in seen)
    assert all(r["sampler"] == "stock" for r in seen)
    assert "update" in booster.__dict__ and "last_record" in booster.__dict__
    watch.detach(booster)
    assert "update" not in booster.__dict__ and "last_record" not in booster.__dict__


def test_bagged_rows_are_read_from_the_newest_tree():
    from smart_lgbm._lightgbm import StockIterations

    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 4))
    y = X[:, 0] + rng.normal(size=1000)
    watch = StockIterations({}, samples_rows=True)
    rows = []
    lgb.train({"objective": "regression", "verbosity": -1, "bagging_freq": 1, "bagging_fraction": 0.3, "seed": 2},
              lgb.Dataset(X, y), 3, callbacks=[*watch.callbacks, lambda env: rows.append(env.model.last_record)])
    assert all(250 <= r["num_sampled"] <= 350 for r in rows)


def test_model_note_loads_without_warning_and_survives_save_and_load(capfd):
    from smart_lgbm._lightgbm import model_note, with_model_note

    X = np.random.default_rng(2).normal(size=(300, 3))
    booster = lgb.train({"objective": "regression", "verbosity": -1}, lgb.Dataset(X, X[:, 0]), 3)
    text = with_model_note(booster.model_to_string(), 'sampler="auto" chose x: [why]\nmore')
    capfd.readouterr()
    loaded = lgb.Booster(model_str=text)
    out = capfd.readouterr()
    assert "Warning" not in out.out + out.err
    assert model_note(loaded.model_to_string()) == 'sampler="auto" chose x; (why) more'
    np.testing.assert_array_equal(loaded.predict(X), booster.predict(X))
    assert not any(key.startswith("smart_lgbm") for key in loaded.params)


def test_log_info_goes_through_lightgbms_registered_logger():
    from smart_lgbm._lightgbm import log_info

    class Catch:
        def __init__(self):
            self.lines = []

        def info(self, msg):
            self.lines.append(msg)

        def warning(self, msg):
            self.lines.append(msg)

    import lightgbm.basic

    catch, before = Catch(), lightgbm.basic._LOGGER
    lgb.register_logger(catch)
    try:
        log_info("[smart_lgbm] [Info] hello")
    finally:
        lgb.register_logger(before)
    assert catch.lines == ["[smart_lgbm] [Info] hello"]
