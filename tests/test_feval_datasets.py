"""feval and callbacks get what lightgbm.train gives them: a constructed Dataset whose
num_data, labels (float32), weights and groups read as stock's (issue 19, class 3)."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl

BASE = {"objective": "binary", "verbosity": -1, "num_leaves": 7}


def _seen_by_feval(train_fn, make_sets, **kw):
    seen = []

    def feval(preds, data):
        group = data.get_group()
        seen.append((data.num_data(), data.get_label().dtype, data.get_label().copy(),
                     None if data.get_weight() is None else data.get_weight().copy(),
                     None if group is None else np.asarray(group).copy(), data.num_feature()))
        return "n", float(data.num_data()), False

    train, valids, params = make_sets()
    train_fn(params, train, 2, valid_sets=valids, feval=feval, **kw)
    return seen


def _binary(weights=False, subset=False, constructed=False, with_train=False):
    def make():
        rng = np.random.default_rng(0)
        X = rng.normal(size=(700, 4))
        y = (X[:, 0] + rng.normal(size=700) > 0).astype(float) + 0.0
        w = rng.uniform(0.5, 2.0, 700) if weights else None
        train = lgb.Dataset(X[:500], y[:500], weight=None if w is None else w[:500], free_raw_data=False)
        valid = lgb.Dataset(X[500:], y[500:], weight=None if w is None else w[500:], reference=train)
        if subset:
            train = lgb.Dataset(X, y, weight=w, free_raw_data=False).subset(list(range(0, 700, 2)))
            valid = train.reference.subset(list(range(1, 700, 2)))
        if constructed:
            train.construct()
        return train, ([train] if with_train else []) + [valid], BASE
    return make


def _ranking():
    def make():
        rng = np.random.default_rng(1)
        X = rng.normal(size=(400, 4))
        y = rng.integers(0, 3, 400).astype(float)
        train = lgb.Dataset(X[:300], y[:300], group=[30] * 10)
        valid = lgb.Dataset(X[300:], y[300:], group=[25] * 4, reference=train)
        return train, [valid], {"objective": "lambdarank", "verbosity": -1, "num_leaves": 7}
    return make


@pytest.mark.parametrize("make", [_binary(), _binary(weights=True), _binary(subset=True), _binary(constructed=True),
                                  _binary(weights=True, with_train=True), _ranking()],
                         ids=["plain", "weights", "subsets", "constructed", "with_train", "ranking"])
def test_feval_sees_the_dataset_stock_gives_it(make):
    ours = _seen_by_feval(sl.train, make, sampler=sl.Full())
    stock = _seen_by_feval(lgb.train, make)
    assert len(ours) == len(stock)
    for a, b in zip(ours, stock):
        assert a[0] == b[0] and a[1] == b[1] == np.float32 and a[5] == b[5]
        for x, y in zip(a[2:5], b[2:5]):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y)


def test_feval_leaves_the_callers_datasets_unconstructed():
    train, valids, params = _binary()()
    sl.train(params, train, 2, valid_sets=valids, feval=lambda p, d: ("n", float(d.num_data()), False),
             sampler=sl.Full())
    assert train._handle is None and valids[0]._handle is None


def test_callback_model_eval_passes_the_constructed_dataset_to_feval():
    train, valids, params = _binary()()
    sizes = []

    def callback(env):
        results = env.model.eval_valid(lambda p, d: ("n", float(d.num_data()), False))
        sizes.extend(value for _, metric, value, _ in results if metric == "n")

    sl.train(params, train, 2, valid_sets=valids, callbacks=[callback], sampler=sl.Full())
    assert sizes == [200.0, 200.0]
