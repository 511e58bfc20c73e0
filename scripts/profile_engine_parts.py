#!/usr/bin/env python
"""Where one engine iteration's time goes, C-API step by step (synthetic dense binary data).

Times the steps of one engine iteration as the engine makes them, with random gradients:
the log-loss gradients of all rows, the Bernoulli draw, the subset copy, the tree on the
sample through the engine's one per-run Booster (with and without then reading every row's
tree output through LightGBM's binned predictor; the difference is that walk), and the score update.

Usage: python scripts/profile_engine_parts.py [--rows 2000000] [--features 28] [--rate 0.1]
       [--leaves 63] [--repeats 10]
"""

from __future__ import annotations

import argparse
import ctypes
import time

import lightgbm as lgb
import numpy as np

from smart_lgbm import _lightgbm as L
from smart_lgbm.datasets import make_dense_binary
from smart_lgbm.losses import BinaryLogloss, Target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rate", type=float, default=0.1)
    ap.add_argument("--leaves", type=int, default=63)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    X, y = make_dense_binary(args.rows, args.features, seed=0)
    ds = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
    handle, n = L.handle_of(ds), X.shape[0]
    rng = np.random.default_rng(0)
    fitter = L.OneIterationBooster(
        f"objective=custom metric=None verbosity=-1 num_leaves={args.leaves} min_data_in_leaf=100 "
        "learning_rate=0.1 num_class=1 force_col_wise=true", 1, handle, "")
    totals: dict[str, float] = {}

    def tick(name: str, since: float) -> float:
        now = time.perf_counter()
        totals[name] = totals.get(name, 0.0) + now - since
        return now

    loss, target, raw = BinaryLogloss(2.0), Target(label=y), np.zeros(n)
    for _ in range(args.repeats):
        t = time.perf_counter()
        loss.gradient_hessian(raw, target)
        t = tick("log-loss gradients (numpy)", t)
        idx = np.flatnonzero(rng.random(n) < args.rate).astype(np.int32)
        g = rng.standard_normal(idx.size).astype(np.float32)
        h = np.ones(idx.size, dtype=np.float32)
        t = tick("draw (numpy)", t)
        sub = L.SubsetHandle(handle, idx, "")
        t = tick("subset copy", t)
        fitter.fit(sub.handle, g, h, [])
        t = tick("tree on the sample", t)
        fitted = fitter.fit(sub.handle, g, h, [(handle, n, None)])
        t = tick("tree + outputs of all rows", t)

        sub.free()
        raw += fitted.outputs[0][:, 0]
        tick("score update (numpy)", t)
    fitter.free()
    print(f"{n:,} x {args.features} synthetic dense, rate {args.rate}, {args.leaves} leaves; ms per iteration:")
    for name, total in totals.items():
        print(f"  {name:40s} {total / args.repeats * 1000:8.2f}")
    walk = totals["tree + outputs of all rows"] - totals["tree on the sample"]
    print(f"  {'=> binned predictor over all rows':40s} {walk / args.repeats * 1000:8.2f}")


if __name__ == "__main__":
    main()
