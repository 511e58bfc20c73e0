#!/usr/bin/env python
"""The first ``sl.train`` in a fresh process: what numba's compilation costs a new user.

Every entry point runs in its own fresh subprocess with an **empty** ``NUMBA_CACHE_DIR``
(a new temporary folder; numba then neither reads nor writes the ``__pycache__`` folders
of the checkout), as on a new machine, CI runner, Dask worker container or notebook:

* ``import smart_lgbm`` (seconds);
* the first ``sl.train`` (5 rounds; this is where the kernels it uses compile), wall and
  CPU time (the process's, all threads: less sensitive to other work on the machine);
* a second, identical ``sl.train`` in the same process (nothing left to compile: the
  training itself);
* the numba functions compiled during the first call, with the seconds each took (a
  kernel's time includes the functions it calls, compiled first; the list shows the largest);
* the first ``sl.train`` of another fresh process that finds the cache the first one left
  (``cached``): the cost once a machine has run the package once.

Entry points, the recommended methods first: the ones ``sampler="auto"`` chooses on large
data (``FirstOrder(rate="auto", refit_leaves=True)`` for binary, multiclass and regression,
``FirstOrder(rate=0.1, refit_leaves=True)`` for LambdaRank), ``sampler="auto"`` itself
(stock ``lightgbm.train`` below 100,000 rows), then binary log-loss with each sampler
(``Full``, ``Uniform``, ``WeightTrimming``, ``FirstOrder``, ``SecondOrder``, ``MVS``,
``LossBased``, all at rate 0.1 where they take one), multiclass softmax (3 classes) and
LambdaRank with ``FirstOrder``.  Data: synthetic,
seeded, made in the child (``--rows``, by default 5,000, x 20 dense float64; LambdaRank: queries of 20
documents). Data below 8,192 rows (``smart_lgbm._numba.row_kernel.PARALLEL_MIN_ROWS``) compile only the serial
twins of the row kernels; a larger ``--rows`` shows the first call that compiles the parallel ones.

With ``--warmup`` each repeat's empty cache is first filled once by ``smart-lgbm warmup``
(timed, in its own process), and every entry point runs in a copy of it: ``first`` is then
the first call after the warm-up.

Usage: python scripts/bench_first_call.py [--entry binary-first_order ...] [--repeats 1] [--rows 5000 ...]
       [--warmup] [--out docs/results/bench_first_call.md]
Times are wall-clock on whatever else the machine is doing: run it alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine_line

ROOT = Path(__file__).resolve().parent.parent

SAMPLERS = {
    "full": "sl.Full()",
    "uniform": "sl.Uniform(rate=0.1)",
    "weight_trimming": "sl.WeightTrimming(alpha=0.1)",
    "first_order": "sl.FirstOrder(rate=0.1)",
    "second_order": "sl.SecondOrder(rate=0.1)",
    "mvs": "sl.MVS(rate=0.1)",
    "loss_based": "sl.LossBased(rate=0.1)",
}
#: The recommended methods first: the ones sampler="auto" chooses on large data
#: (smart_lgbm.samplers.auto.RULES), then sampler="auto" itself (stock lightgbm.train below
#: 100,000 rows), then every sampler at a fixed rate.
AUTO_REFIT = 'sl.FirstOrder(rate="auto", refit_leaves=True)'
ENTRIES = {f"{task}-first_order_auto_refit": (task, AUTO_REFIT) for task in ("binary", "multiclass", "regression")}
ENTRIES["lambdarank-mvs_auto"] = ("lambdarank", 'sl.MVS(rate="auto")')
ENTRIES["lambdarank-first_order_refit"] = ("lambdarank", "sl.FirstOrder(rate=0.1, refit_leaves=True)")
ENTRIES["binary-auto"] = ("binary", '"auto"')
ENTRIES.update({f"binary-{name}": ("binary", expr) for name, expr in SAMPLERS.items()})
ENTRIES["multiclass-first_order"] = ("multiclass", SAMPLERS["first_order"])
ENTRIES["lambdarank-first_order"] = ("lambdarank", SAMPLERS["first_order"])

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import lightgbm as lgb
import smart_lgbm as sl
t_import = time.perf_counter() - t0
from numba.core import event

objective, sampler_expr, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.normal(size=(n, 20))
score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(size=n)
params = {"objective": objective, "verbose": -1, "seed": 1, "num_leaves": 15}
group = None
if objective == "binary":
    y = (score > 0).astype(float)
elif objective == "multiclass":
    y = np.digitize(score, [-0.7, 0.7]).astype(float)
    params["num_class"] = 3
elif objective == "regression":
    y = score
else:
    y = np.clip(np.round(score + 1.5), 0, 4)
    group = [20] * (n // 20)

compiled = {}
starts = {}

class Listener(event.Listener):
    def on_start(self, ev):
        starts[id(ev.data["dispatcher"])] = time.perf_counter()

    def on_end(self, ev):
        d = ev.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        compiled[name] = compiled.get(name, 0.0) + time.perf_counter() - starts.pop(id(d), time.perf_counter())

event.register("numba:compile", Listener())

def train():
    data = lgb.Dataset(X, y, group=group)
    t, c = time.perf_counter(), time.process_time()
    sl.train(params, data, 5, sampler=eval(sampler_expr, {"sl": sl}))
    return time.perf_counter() - t, time.process_time() - c

(first, first_cpu) = train()
(second, _) = train()
print(json.dumps({"import": t_import, "first": first, "first_cpu": first_cpu, "second": second,
                  "compiled": sorted(compiled.items(), key=lambda kv: -kv[1])}))
'''


def run_child(entry: str, cache_dir: str, rows: int) -> dict:
    objective, sampler = ENTRIES[entry]
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", CHILD, objective, sampler, str(rows)], env=env, capture_output=True,
                          text=True, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"{entry} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_warmup(cache_dir: str) -> float:
    """Seconds of ``smart-lgbm warmup`` in a fresh process with ``cache_dir`` as numba's cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "smart_lgbm", "warmup"], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"smart-lgbm warmup failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def measure(entry: str, repeats: int, rows: int, warmed: list[str] | None = None) -> dict:
    """Medians over ``repeats`` fresh caches: empty ones, or copies of ``warmed[i]`` (a cache
    ``smart-lgbm warmup`` filled), one copy per entry so no entry finds another's kernels."""
    cold, cached = [], []
    for i in range(repeats):
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            if warmed is not None:  # the first call then finds the cache smart-lgbm warmup left
                shutil.copytree(warmed[i], cache, dirs_exist_ok=True)
            cold.append(run_child(entry, cache, rows))
            cached.append(run_child(entry, cache, rows))  # a second fresh process finds the first one's cache
    med = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {"entry": entry, "rows": rows, "import": med(cold, "import"), "first": med(cold, "first"),
            "first_cpu": med(cold, "first_cpu"),
            "second": med(cold, "second"), "cached": med(cached, "first"), "compiled": cold[0]["compiled"]}


def markdown(rows: list[dict], repeats: int, warmups: list[float] | None = None) -> str:
    if warmups:
        title = "# First `sl.train` after `smart-lgbm warmup` (numba's cache filled ahead of time)"
        how = (f"each repeat's empty `NUMBA_CACHE_DIR` is first filled once by `smart-lgbm warmup` in its own process "
               f"({_seconds(warmups)} s, median {statistics.median(warmups):.1f} s); each entry point then runs in a "
               "fresh process with its own copy of that cache (`first`), the same call again in that process "
               "(`second`: the training alone), and a new process that finds the cache the first left (`cached`).")
    else:
        title = "# First `sl.train` in a fresh process (numba compilation)"
        how = ("each entry point in a fresh process with an empty `NUMBA_CACHE_DIR` (`first`), the same call again in "
               "that process (`second`: the training alone), and a new process that finds the cache the first left "
               "(`cached`).")
    lines = [
        title,
        "",
        f"`python scripts/bench_first_call.py {' '.join(sys.argv[1:])}`: {how} Seconds, medians of "
        f"{repeats} repeat(s). Data: synthetic, the rows stated x 20 (LambdaRank: queries of 20 documents), "
        "5 rounds; below 8,192 rows only the serial twins of the row kernels compile.",
        "",
        machine_line(),
        "",
        "| entry point | rows | import smart_lgbm | first sl.train | its CPU time | second sl.train | "
        "first sl.train, cached | largest compilations (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        top = ", ".join(f"{name.rsplit('.', 1)[-1]} {sec:.2f}" for name, sec in r["compiled"][:4]
                        if name.startswith("smart_lgbm"))
        lines.append(f"| {r['entry']} | {r['rows']:,} | {r['import']:.2f} | {r['first']:.2f} | {r['first_cpu']:.2f} | "
                     f"{r['second']:.2f} | "
                     f"{r['cached']:.2f} | {top or '(none)'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entry", nargs="+", choices=list(ENTRIES), default=list(ENTRIES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--rows", type=int, nargs="+", default=[5000],
                        help="data sizes (each entry runs at each; multiples of 20 for LambdaRank)")
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--warmup", action="store_true",
                        help="run `smart-lgbm warmup` into each empty cache first: the first call after it")
    args = parser.parse_args()
    rows = []
    if min(args.rows) < 20:
        parser.error(f"--rows must be >= 20, got {min(args.rows)}")
    warmed: list[str] | None = None
    warmups: list[float] = []
    with contextlib.ExitStack() as stack:
        if args.warmup:
            warmed = [stack.enter_context(tempfile.TemporaryDirectory(prefix="numba-warm-")) for _ in range(args.repeats)]
            for cache in warmed:
                warmups.append(run_warmup(cache))
                print(f"smart-lgbm warmup: {warmups[-1]:.1f} s", file=sys.stderr, flush=True)
        rows = _measure_all(args, warmed)
    text = markdown(rows, args.repeats, warmups or None)
    print(text)
    if args.out:
        from smart_lgbm.compare.io import write_text

        write_text(args.out, text)  # atomic: an interrupted run leaves the previous table
    return 0


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def _measure_all(args: argparse.Namespace, warmed: list[str] | None) -> list[dict]:
    rows = []
    for entry, n in ((e, n) for n in args.rows for e in args.entry):
        row = measure(entry, args.repeats, n, warmed)
        print(f"{entry} ({n:,} rows): first {row['first']:.2f} s (CPU {row['first_cpu']:.2f} s), second {row['second']:.2f} s, "
              f"cached {row['cached']:.2f} s",
              file=sys.stderr, flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    sys.exit(main())
