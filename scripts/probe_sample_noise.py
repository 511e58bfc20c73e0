#!/usr/bin/env python
"""How noisy a sampled tree's leaf sums are, by task and sampler (untimed; synthetic data).

For binary, L2 regression and softmax multiclass (``make_dense_*``, ``--rows`` rows), at the
scores of a stock LightGBM model after ``--iterations`` iterations (31 leaves,
min_data_in_leaf 100), and for Uniform, FirstOrder and MVS at rate 0.1, it computes from the
inclusion probabilities ``p_i`` (no draws) what a sampled tree's leaf sums look like:

* per leaf of the model's last tree, the relative standard deviation of the sampled
  gradient sum ``sum_S g_i / p_i`` (``sqrt(sum g^2 (1 - p) / p) / |sum g|``, per class for
  multiclass) and of the sampled hessian sum ``sum_S h_i / p_i``; the median over leaves
  (and classes);
* the largest fitting hessian ``h_i / p_i``, the weight one drawn row can carry.

Importance sampling by ``|g|`` pays when ``h / p`` stays bounded: on binary log-loss
``h = p(1 - p)`` shrinks with ``|g|``, while under L2 ``h = 1`` for every row, so rows with
small residuals are drawn rarely and weigh ``1 / p`` when they are.  The leaf values and
split gains are ratios of those sums.

Usage: python scripts/probe_sample_noise.py [--rows 100000] [--iterations 150]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import smart_lgbm as sl  # noqa: E402
from smart_lgbm.datasets.synthetic import make_dense_binary, make_dense_multiclass, make_dense_regression  # noqa: E402
from smart_lgbm._engine.params import resolve_loss  # noqa: E402


def leaf_noise(g: np.ndarray, h: np.ndarray, p: np.ndarray, leaf: np.ndarray) -> tuple[float, float]:
    """Median over leaves (and columns) of the sampled gradient and hessian sums' relative std."""
    G, H = (g if g.ndim == 2 else g[:, None]), (h if h.ndim == 2 else h[:, None])
    q = p[:, None]
    rg, rh = [], []
    for j in np.unique(leaf):
        m = leaf == j
        vg = (G[m] ** 2 * (1 - q[m]) / q[m]).sum(axis=0)
        vh = (H[m] ** 2 * (1 - q[m]) / q[m]).sum(axis=0)
        rg.extend(np.sqrt(vg) / np.maximum(np.abs(G[m].sum(axis=0)), 1e-12))
        rh.extend(np.sqrt(vh) / H[m].sum(axis=0))
    return float(np.median(rg)), float(np.median(rh))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--iterations", type=int, default=150)
    args = ap.parse_args(argv)
    n = args.rows
    tasks = [("binary", make_dense_binary(n, 30, 0), {"objective": "binary"}),
             ("L2", make_dense_regression(n, 40, 0), {"objective": "regression"}),
             ("multiclass (5)", make_dense_multiclass(n, 40, 5, 0), {"objective": "multiclass", "num_class": 5})]
    print("| task | sampler | leaf gradient sum: rel. std | leaf hessian sum: rel. std | largest h / p |")
    print("|---|---|---|---|---|")
    for name, (X, y), objective in tasks:
        params = {**objective, "num_leaves": 31, "min_data_in_leaf": 100, "verbosity": -1}
        model = lgb.train(params, lgb.Dataset(X, y), args.iterations)
        raw = model.predict(X, raw_score=True)
        loss = resolve_loss(dict(params))
        g, h = loss.gradient_hessian(raw, sl.losses.Target(label=y.astype(np.float32).astype(np.float64)))
        leaves = model.predict(X, pred_leaf=True)
        leaf = leaves[:, -1] if leaves.ndim == 2 else leaves
        for label, sampler in (("Uniform(0.1)", None), ("FirstOrder(0.1)", sl.FirstOrder(rate=0.1)),
                               ("MVS(0.1)", sl.MVS(rate=0.1))):
            p = np.full(n, 0.1) if sampler is None else sampler.probabilities(g, h)
            rg, rh = leaf_noise(g, h, p, leaf)
            hp = (h if h.ndim == 2 else h[:, None]) / p[:, None]
            print(f"| {name} | {label} | {rg:.3f} | {rh:.3f} | {hp.max():.3g} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
