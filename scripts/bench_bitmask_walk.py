#!/usr/bin/env python
"""The coded walk of all rows: lockstep (``walk_codes``) against the bitmask walk.

One process, the two walks interleaved within each repeat, medians; real LightGBM trees
(stock boosting on the data, the last trees of a short run) over the engine's bin codes,
by default with a tenth of the rows skipped (a sample whose outputs are read back, as the
engine walks the training rows for a large sample).  Both walks' outputs are checked equal bit for bit before timing.

``--cold``: before every timed call, stream a 96 MB buffer (every cache line written), so
the codes, the scores and the tables come from memory, as in the engine's loop, where
LightGBM's subset copy and tree learner run between two walks; without it each call finds
what the previous one left in cache.

``--skip 0``: no skipped rows, as the engine walks the training rows when the sample is
small (rate 0.1 here: ``smart_lgbm._engine.update_plan``, the sample's outputs are then not read back).

Usage: python scripts/bench_bitmask_walk.py [--repeats 9] [--threads 2] [--blocks 256,1024,4096] [--cold]
       [--skip 0.1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from smart_lgbm import _lightgbm as L  # noqa: E402
from smart_lgbm.datasets.synthetic import make_dense_binary  # noqa: E402
from smart_lgbm._engine.walk import CodeBook, Forest, RawFeatures  # noqa: E402
from smart_lgbm._engine.walk import _bitmask_kernels as _bk  # noqa: E402
from smart_lgbm._engine.walk import _kernels as _k  # noqa: E402
from smart_lgbm._engine.walk import codes as _codes  # noqa: E402
from smart_lgbm._engine.walk import forest as _forest  # noqa: E402

CASES = {"higgs-like": (2_000_000, 28, 63), "400k-60": (400_000, 60, 31)}

#: What ``--cold`` streams before each timed call: three times the largest L3 of the
#: machines these benchmarks ran on (32 MB).
EVICT_BYTES = 96 << 20


def _evicter(cold: bool):
    """A function run before each timed call: with ``cold``, one that writes a byte of every
    cache line of an ``EVICT_BYTES`` buffer (dirty lines leave the caches on their own);
    otherwise nothing."""
    if not cold:
        return lambda: None
    buf = np.zeros(EVICT_BYTES, np.uint8)

    def evict() -> None:
        buf[::64] += 1

    return evict


def _setup(n: int, f: int, leaves: int, threads: int, skipped: float):
    X, y = make_dense_binary(n, f, seed=0)
    ds = lgb.Dataset(X, y, params={"verbosity": -1, "is_enable_sparse": False}).construct()
    book = CodeBook.from_mappers(L.bin_mappers(L.handle_of(ds)))
    codes = book.encode(RawFeatures.from_data(X))
    booster = lgb.train({"objective": "binary", "num_leaves": leaves, "verbosity": -1, "num_threads": threads,
                         "min_data_in_leaf": 100}, ds, 12)
    bodies = L.tree_bodies(booster.model_to_string())
    forests = [book.coded_forest(Forest.from_tree_texts([b])) for b in bodies[-4:]]
    rng = np.random.default_rng(0)
    skip = np.sort(rng.choice(n, int(n * skipped), replace=False)).astype(np.int32)
    return codes, forests, skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--blocks", default="256,1024,4096")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--cold", action="store_true", help="evict the caches before every timed call")
    ap.add_argument("--skip", type=float, default=0.1, help="fraction of the rows skipped (outputs known)")
    args = ap.parse_args()
    evict = _evicter(args.cold)
    numba.set_num_threads(args.threads)
    chunks = _forest.CHUNKS_PER_THREAD * args.threads
    blocks = [int(b) for b in args.blocks.split(",")]
    for name in args.cases.split(","):
        n, f, leaves = CASES[name]
        codes, forests, skip = _setup(n, f, leaves, args.threads, args.skip)
        c = codes.codes
        skip_out = np.random.default_rng(1).normal(size=(skip.shape[0], 1))
        noleaves = np.empty((0, 1), np.int32)
        bms = [cf.bitmask for cf in forests]
        assert all(bm is not None for bm in bms)

        def old(i, out, lv, want):
            cf = forests[i]
            _k.walk_codes(c, _codes.CODES_BLOCK_ROWS, chunks, cf.info, cf.child, cf.node_value, cf.node_leaf,
                          cf.roots, cf.depths, skip, skip_out, out, lv, want)


        def new(i, out, lv, want, block):
            bm = bms[i]
            _bk.walk_bitmask(c, block, chunks, bm.tstart, bm.tcol, bm.table, bm.leaf_value, bm.leaf_index, skip,
                             skip_out, out, lv, want)

        # equality first (also compiles)
        for i in range(len(forests)):
            a, b = np.zeros((n, 1)), np.zeros((n, 1))
            la, lb = np.full((n, 1), -7, np.int32), np.full((n, 1), -7, np.int32)
            old(i, a, la, True)
            for block in blocks:
                b[:] = 0
                lb[:] = -7
                new(i, b, lb, True, block)
                assert np.array_equal(a.view(np.int64), b.view(np.int64)) and np.array_equal(la, lb), (name, i, block)
        out = np.zeros((n, 1))
        times: dict[str, list[float]] = {}
        for rep in range(args.repeats):
            i = rep % len(forests)
            evict()
            t0 = time.perf_counter()
            old(i, out, noleaves, False)
            times.setdefault("lockstep walk_codes", []).append(time.perf_counter() - t0)
            for block in blocks:
                evict()
                t0 = time.perf_counter()
                new(i, out, noleaves, False, block)
                times.setdefault(f"bitmask block {block}", []).append(time.perf_counter() - t0)
        base = statistics.median(times["lockstep walk_codes"])
        print(f"## {name}: {n} x {f}, {leaves} leaves, {args.threads} threads{', cold caches' if args.cold else ''}, "
              f"{skip.shape[0]} rows skipped")
        for key, v in times.items():
            med = statistics.median(v)
            print(f"  {key:24s} {1000 * med:7.2f} ms   speed-up {base / med:5.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
