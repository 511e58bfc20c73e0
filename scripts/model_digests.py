#!/usr/bin/env python
"""MD5 of the model string every built-in sampler trains, for refactors that must not change a byte.

Trains each built-in sampler (and ``SmartObjective`` with FirstOrder) on the bundled real a9a
(binary, 30 rounds) and on a seeded synthetic dense set (20,000 x 20 float32, binary, 30
rounds), at ``num_threads=1`` and ``num_threads=2``, and prints one line per run:
``<data> <sampler> threads=<n> <md5 of model_to_string()>``.  Compare the output of two commits
with ``diff``; a refactor that changes no behaviour leaves it identical.

``--more`` prints instead the digests of the engine's other paths, each at 1 and 2 threads
(public API only, so that any two commits compare): leaf refits (coded, raw, multiclass,
trees of over 64 leaves), multiclass, regression and LambdaRank losses, SecondOrder's
regulariser, adaptive rates with validation rules, validation sets (coded, raw, binned),
early stopping, random tree parameters, init scores, Datasets without raw features, the
Booster staying on the training set, sampled rows read back, reset_parameter, a custom loss
and an estimator.

Usage: python scripts/model_digests.py [--more] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import warnings
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd

import smart_lgbm as sl
from smart_lgbm.datasets.bundled import load_a9a
from smart_lgbm.datasets.ranking import load_rank_sample
from smart_lgbm.losses import CustomLoss

SAMPLERS = {
    "full": lambda: sl.Full(),
    "uniform": lambda: sl.Uniform(rate=0.2),
    "weight_trimming": lambda: sl.WeightTrimming(alpha=0.1),
    "first_order": lambda: sl.FirstOrder(rate=0.2),
    "second_order": lambda: sl.SecondOrder(rate=0.2),
    "mvs": lambda: sl.MVS(rate=0.2),
    "loss_based": lambda: sl.LossBased(rate=0.2),
    "first_order_auto": lambda: sl.FirstOrder(rate="auto"),
}


def datasets() -> dict[str, tuple]:
    (X, y), _ = load_a9a()
    rng = np.random.default_rng(7)
    Xs = rng.normal(size=(20_000, 20)).astype(np.float32)
    ys = (Xs[:, 0] + 0.5 * Xs[:, 1] * Xs[:, 2] + rng.normal(size=20_000) > 0).astype(float)
    return {"a9a": (X, y), "synthetic": (Xs, ys)}


def digest(booster: lgb.Booster) -> str:
    return hashlib.md5(booster.model_to_string().encode()).hexdigest()


def more_digests() -> list[str]:
    """The ``--more`` digests (module docstring), one line per case and thread count."""
    rng = np.random.default_rng(11)
    n = 12_000
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    yb = (X[:, 0] + 0.5 * Z[:, 1] + rng.normal(size=n) > 0).astype(float)
    yr = Z[:, 0] * 2 + rng.normal(size=n)
    ym = (Z[:, 0] > 0).astype(int) + (Z[:, 2] > 0.5).astype(int)
    w = rng.uniform(0.5, 2.0, size=n)
    Xv = rng.normal(size=(3000, 8)).astype(np.float32)
    yvb = (Xv[:, 0] + rng.normal(size=3000) > 0).astype(float)
    frame = pd.DataFrame(X[:, :4], columns=list("abcd"))
    frame["cat"] = pd.Categorical(rng.integers(0, 6, size=n))  # walked as raw features
    base = {"verbose": -1, "seed": 5, "num_leaves": 15}
    (Xa, ya), (Xat, yat) = load_a9a()
    (Xq, yq, gq), _ = load_rank_sample()
    lines: list[str] = []

    def run(name: str, params: dict[str, Any], data: Callable[[], lgb.Dataset], rounds: int, sampler: Any,
            **kwargs: Any) -> None:
        for threads in (1, 2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                booster = sl.train({**base, **params, "num_threads": threads}, data(), rounds, sampler=sampler,
                                   **kwargs)
            lines.append(f"{name} threads={threads} {digest(booster)} best={booster.best_iteration}")
            print(lines[-1], flush=True)

    def binary() -> lgb.Dataset:
        return lgb.Dataset(X, yb)

    def constructed() -> lgb.Dataset:  # no raw features in memory: LightGBM's binned predictor
        return lgb.Dataset(X, yb, params={"verbose": -1}, free_raw_data=True).construct()

    run("refit_fo", {"objective": "binary"}, binary, 25, sl.FirstOrder(rate=0.3, refit_leaves=True))
    run("refit_mvs_multi", {"objective": "multiclass", "num_class": 3}, lambda: lgb.Dataset(X, ym), 15,
        sl.MVS(rate=0.3, refit_leaves=True))
    run("refit_uniform_raw", {"objective": "binary"}, lambda: lgb.Dataset(frame, yb), 20,
        sl.Uniform(rate=0.3, refit_leaves=True))
    run("refit_wt", {"objective": "regression"}, lambda: lgb.Dataset(X, yr), 15, sl.WeightTrimming(refit_leaves=True))
    run("refit_big_leaves", {"objective": "binary", "num_leaves": 100}, binary, 10,
        sl.FirstOrder(rate=0.3, refit_leaves=True))
    run("multi_fo", {"objective": "multiclass", "num_class": 3}, lambda: lgb.Dataset(X, ym, weight=w), 15,
        sl.FirstOrder(rate=0.2))
    run("multi_so_anchor", {"objective": "multiclass", "num_class": 3}, lambda: lgb.Dataset(X, ym), 15,
        sl.SecondOrder(rate=0.3, anchor_lag=2))
    run("l2_mvs", {"objective": "regression"}, lambda: lgb.Dataset(X, yr, weight=w), 20, sl.MVS(rate=0.2, reg=0.5))
    run("l2_auto_valid", {"objective": "regression", "metric": "l2"}, lambda: lgb.Dataset(X, yr), 40,
        sl.FirstOrder(rate=sl.AdaptiveRate(window=5, patience=1, slowdown=0.01)),
        valid_sets=[lgb.Dataset(Xv, Xv[:, 0] * 2)])
    run("bin_so_anchor_raw", {"objective": "binary"}, lambda: lgb.Dataset(frame, yb), 20,
        sl.SecondOrder(rate=0.3, anchor_lag=2, eta=0.5))
    run("bin_valid_es", {"objective": "binary", "metric": ["binary_logloss", "auc"], "early_stopping_round": 5},
        binary, 60, sl.FirstOrder(rate=0.3), valid_sets=[lgb.Dataset(Xv, yvb)])
    run("bin_valid_raw_sets", {"objective": "binary"}, binary, 15, sl.Uniform(rate=0.5),
        valid_sets=[lgb.Dataset(Xv, yvb), lgb.Dataset(X, yb)])
    run("bin_ff_seed", {"objective": "binary", "feature_fraction": 0.7, "extra_trees": True}, binary, 15,
        sl.FirstOrder(rate=0.2))
    run("bin_init_score", {"objective": "binary"}, lambda: lgb.Dataset(X, yb, init_score=np.full(n, 0.3)), 15,
        sl.FirstOrder(rate=0.4))
    run("bin_no_raw_full", {"objective": "binary"}, constructed, 10, sl.Full())
    run("bin_no_raw_fo", {"objective": "binary"}, constructed, 10, sl.FirstOrder(rate=0.3))
    for threads in (1, 2):  # a validation set without raw features: the training outputs from the partition
        train = lgb.Dataset(X, yb, params={"verbose": -1})
        valid = lgb.Dataset(Xv, yvb, reference=train, free_raw_data=True).construct()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            booster = sl.train({**base, "objective": "binary", "num_threads": threads}, train, 10, sampler=sl.Full(),
                               valid_sets=[valid])
        lines.append(f"full_partition threads={threads} {digest(booster)}")
        print(lines[-1], flush=True)
    run("a9a_full_stay", {"objective": "binary"}, lambda: lgb.Dataset(Xa, ya), 15, sl.Uniform(rate=1.0))
    run("a9a_read_back", {"objective": "binary"}, lambda: lgb.Dataset(Xa, ya), 15, sl.FirstOrder(rate=0.5))
    run("a9a_auto_grow", {"objective": "binary", "metric": "binary_logloss"}, lambda: lgb.Dataset(Xa, ya), 60,
        sl.MVS(rate=sl.AdaptiveRate(start=0.05, window=5, threshold=0.01)), valid_sets=[lgb.Dataset(Xat, yat)])
    run("a9a_loss_based", {"objective": "binary"}, lambda: lgb.Dataset(Xa, ya), 10, sl.LossBased(rate=0.3))
    run("rank_fo", {"objective": "lambdarank"}, lambda: lgb.Dataset(Xq, yq, group=gq), 10, sl.FirstOrder(rate=0.3))
    run("rank_refit", {"objective": "lambdarank"}, lambda: lgb.Dataset(Xq, yq, group=gq), 10,
        sl.Uniform(rate=0.3, refit_leaves=True))
    run("reset_param", {"objective": "binary"}, binary, 12, sl.FirstOrder(rate=0.3),
        callbacks=[lgb.reset_parameter(learning_rate=lambda i: 0.1 * (0.9 ** i), seed=lambda i: 3 + (i // 4))])
    run("custom_loss", {"objective": CustomLoss(lambda y, raw: (raw - y, np.ones_like(raw)))},
        lambda: lgb.Dataset(X, yr), 10, sl.FirstOrder(rate=0.3))
    for threads in (1, 2):
        clf = sl.SmartClassifier(sampler="mvs", n_estimators=10, num_leaves=7, random_state=2, n_jobs=threads,
                                 verbose=-1).fit(X, ym)
        lines.append(f"sklearn_multi threads={threads} {digest(clf.booster_)}")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the lines to this file")
    parser.add_argument("--more", action="store_true", help="the engine's other paths instead (module docstring)")
    args = parser.parse_args()
    lines = more_digests() if args.more else []
    for name, (X, y) in datasets().items() if not args.more else []:
        for threads in (1, 2):
            params = {"objective": "binary", "verbose": -1, "seed": 3, "num_leaves": 15,
                      "num_threads": threads}
            for kind, make in SAMPLERS.items():
                booster = sl.train(params, lgb.Dataset(X, y), 30, sampler=make())
                lines.append(f"{name} {kind} threads={threads} {digest(booster)}")
                print(lines[-1], flush=True)
            obj = sl.SmartObjective("binary", sampler=sl.FirstOrder(rate=0.2), seed=3)
            booster = lgb.train({**{k: v for k, v in params.items() if k != "objective"}, "objective": obj},
                                lgb.Dataset(X, y), 30, callbacks=[obj.callback])
            lines.append(f"{name} smart_objective threads={threads} {digest(booster)}")
            print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
