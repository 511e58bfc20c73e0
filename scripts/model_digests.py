#!/usr/bin/env python
"""MD5 of the model string every built-in sampler trains, for refactors that must not change a byte.

Trains each built-in sampler (and ``SmartObjective`` with FirstOrder) on the bundled real a9a
(binary, 30 rounds) and on a seeded synthetic dense set (20,000 x 20 float32, binary, 30
rounds), at ``num_threads=1`` and ``num_threads=2``, and prints one line per run:
``<data> <sampler> threads=<n> <md5 of model_to_string()>``.  Compare the output of two commits
with ``diff``; a refactor that changes no behaviour leaves it identical.

Usage: python scripts/model_digests.py [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import lightgbm as lgb
import numpy as np

import smart_lgbm as sl
from smart_lgbm.datasets.bundled import load_a9a

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the lines to this file")
    args = parser.parse_args()
    lines = []
    for name, (X, y) in datasets().items():
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
