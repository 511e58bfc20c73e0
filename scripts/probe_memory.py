#!/usr/bin/env python
"""Where the engine's extra peak memory goes: numba's runtime, each kernel's first load, the run.

bench_engine reports each method's whole-process peak RSS (VmHWM) beside stock full
training's, both processes having imported ``smart_lgbm`` (and so numba) before training.
This probe takes the engine's extra apart, on the bundled a9a (32,561 x 123 sparse, binary,
31 leaves, as bench_engine's ``a9a`` case), each part measured as the change of VmRSS
across it, in fresh processes:

* numba's runtime, in the order numba sets it up on the first call of any compiled
  function, even one loaded from the on-disk cache: the runtime's own functions
  (``rtsys.initialize``; loaded from the object file ``smart_lgbm._numba.runtime`` caches,
  compiled by LLVM only where there is none yet, which pages in about 27 MB of LLVM's code
  from libllvmlite, shown as file-backed RSS), the implementation registries (numba imports its ``numba.np`` /
  ``numba.cpython`` / ``numba.typed`` modules), the typing context's refresh, and the
  threading layer;
* then the training run, with every kernel's first call (its load from numba's cache, or
  its compilation when the cache is cold) measured on its own;
* stock full training in its own process, for the baseline;
* the engine's VmRSS and VmHWM after its first and last iteration, around the release of
  the run's training structures and after the final model's load: where the peak is;
* each process's RSS at the end split into anonymous and file-backed pages (the peak is the
  end on a9a: RSS only grows), and the engine's own share once numba's fixed cost is out of
  the way: a second engine process first calls one trivial cached function (numba's runtime,
  registries and typing context set up, no kernel of the package loaded), then trains;
* how many KB of ``libllvmlite.so`` one page fault maps on this machine.  File-backed RSS
  (code of the shared libraries) depends on it: kernels that keep large page-cache folios
  map a whole folio per fault, so merely importing numba maps far more of LLVM's 170 MB
  library (and stock's baseline grows with it) than on a kernel that maps 4 KB pages with a
  64 KB fault-around; numba's setup then pages in less on top (it is mapped already).
  Ratios of peak RSS are only comparable between machines that map alike.

Data as bench_engine's workers read it (its ``make_data`` / ``_load``), so the figures
match its table's.

It reads numba internals (``numba.core.registry.cpu_target``, ``numba.core.runtime.rtsys``,
``Dispatcher._compile_for_args``): a diagnostic for numba 0.6x, not part of the package.
Run it twice after changing a kernel: the first run compiles (and costs far more).

Usage: python scripts/probe_memory.py [--method first_order|uniform|mvs|full] [--rounds 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine  # noqa: E402  (the same data files and loading as its a9a case)


def _status() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon and RssFile of this process, MB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) / 1024
    return out


def _trivial(x: int) -> int:
    """One compiled function of nothing but an addition (numba's fixed cost, measured)."""
    return x + 1


def worker(path: str, method: str, rounds: int) -> dict:
    """One fresh process: imports and data, numba's runtime step by step, then the run."""
    import lightgbm as lgb

    import smart_lgbm as sl

    X, y, _ = bench_engine._load(path)
    params = {"objective": "binary", "num_leaves": 31, "learning_rate": 0.1, "verbosity": -1, "seed": 1,
              "num_threads": 2}
    steps: list[tuple[str, float, float]] = []
    last = _status()
    timeline: list[tuple[str, dict[str, float]]] = []

    def mark(name: str) -> None:
        nonlocal last
        now = _status()
        steps.append((name, now["VmRSS"] - last["VmRSS"], now["RssFile"] - last["RssFile"]))
        last = now

    base = last["VmRSS"]
    if method == "engine_after_numba":
        import numba

        # numba's fixed cost, no kernel of the package: a module-level function, so that it
        # comes from numba's cache (scripts/__pycache__) after the probe's first run
        numba.njit(cache=True)(_trivial)(1)
        mark("numba's fixed cost (one trivial cached function)")
        sl.train(params, lgb.Dataset(X, y, params={"verbosity": -1}), rounds, sampler=sl.FirstOrder(rate=0.3))
        mark("training")
    elif method == "stock_full":
        lgb.train(params, lgb.Dataset(X, y, params={"verbosity": -1}), rounds)
        mark("training")
    else:
        from numba.core import dispatcher
        from numba.core.base import builtin_registry
        from numba.core.registry import cpu_target
        from numba.core.runtime import rtsys
        from numba.np.ufunc import parallel

        from smart_lgbm._numba import runtime

        runtime.load_cached()  # (what smart_lgbm.train does first)
        context = cpu_target.target_context
        rtsys.initialize(context)  # (set up already: nothing left to do)
        mark("numba: runtime functions (NRT), from smart_lgbm's cached object file (compiled at a first run)")
        context.load_additional_registries()
        context.install_registry(builtin_registry)
        mark("numba: implementation registries")
        context.typing_context.refresh()
        mark("numba: typing context refresh")
        parallel._launch_threads()
        mark("numba: threading layer")

        compile_for_args = dispatcher.Dispatcher._compile_for_args
        loads: list[tuple[str, float, float]] = []

        def measured(self, *args, **kwargs):  # each kernel's first call with new argument types
            before = _status()
            try:
                return compile_for_args(self, *args, **kwargs)
            finally:
                after = _status()
                loads.append((f"{self.py_func.__module__}.{self.py_func.__qualname__}",
                              after["VmRSS"] - before["VmRSS"], after["RssFile"] - before["RssFile"]))

        dispatcher.Dispatcher._compile_for_args = measured
        # VmRSS / VmHWM where the run's peak may be: after the first and the last iteration,
        # after the run's release of its training structures (just before the final model's
        # parameters, text and load), and after that load
        from smart_lgbm._engine.run import BoostingRun

        step, release = BoostingRun.step, BoostingRun.release_training

        def timeline_step(self, iteration):
            record = step(self, iteration)
            if iteration == 0 or iteration == rounds - 1:
                timeline.append((f"after iteration {iteration + 1}", _status()))
            return record

        def timeline_release(self):
            timeline.append(("before the release of the run's training structures", _status()))
            release(self)
            timeline.append(("after it (then the final model's parameters, text and load)", _status()))

        BoostingRun.step, BoostingRun.release_training = timeline_step, timeline_release
        sampler = {"uniform": sl.Uniform(0.3), "first_order": sl.FirstOrder(rate=0.3), "mvs": sl.MVS(rate=0.3),
                   "full": sl.Full()}[method]
        sl.train(params, lgb.Dataset(X, y, params={"verbosity": -1}), rounds, sampler=sampler)
        dispatcher.Dispatcher._compile_for_args = compile_for_args
        BoostingRun.step, BoostingRun.release_training = step, release
        mark("training (kernels' first loads included)")
        steps.extend((f"  kernel {name}", rss, file) for name, rss, file in loads)
    end = _status()
    timeline.append(("end of training (the final model loaded)", end))
    return {"before_training": base, "peak": end["VmHWM"], "steps": steps, "end_anon": end["RssAnon"],
            "end_file": end["RssFile"],
            "timeline": [(name, status["VmRSS"], status["VmHWM"]) for name, status in timeline]}


def fault_granularity_kb() -> float:
    """KB of ``libllvmlite.so`` that one read fault maps into this process: one byte read per
    4 MB of a fresh read-only mapping of it (this process's RSS, not the workers')."""
    import mmap

    from llvmlite import binding

    library = Path(binding.__file__).parent / "libllvmlite.so"
    with open(library, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        before = _status()["RssFile"]
        offsets = range(0, len(mapped), 4 << 20)
        for offset in offsets:
            mapped[offset]
        return (_status()["RssFile"] - before) * 1024 / len(offsets)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default="first_order", choices=["first_order", "uniform", "mvs", "full"])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.rounds)))
        return
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        path = str(bench_engine.make_data("a9a", Path(folder), quick=False))
        for method in ("stock_full", args.method, "engine_after_numba"):
            out = subprocess.run([sys.executable, __file__, "--worker", path, method, "--rounds", str(args.rounds)],
                                 check=True, capture_output=True, text=True)
            runs[method] = json.loads(out.stdout.strip().splitlines()[-1])
    stock, engine = runs["stock_full"], runs[args.method]
    print(f"a9a, {args.rounds} rounds. Before training (imports and data): stock {stock['before_training']:.1f} MB, "
          f"engine {engine['before_training']:.1f} MB")
    print(f"peak RSS: stock full {stock['peak']:.1f} MB, engine {args.method} {engine['peak']:.1f} MB "
          f"({engine['peak'] / stock['peak']:.3f}x)")
    print(f"at the end, anonymous / file-backed: stock full {stock['end_anon']:.1f} / {stock['end_file']:.1f} MB, "
          f"engine {engine['end_anon']:.1f} / {engine['end_file']:.1f} MB")
    print(f"one read fault maps {fault_granularity_kb():.0f} KB of libllvmlite.so on this machine "
          "(file-backed RSS depends on it)\n")
    print("| step | VmRSS change MB | of it file-backed MB |\n|---|---:|---:|")
    for name, rss, file in stock["steps"]:
        print(f"| stock full: {name} | {rss:.1f} | {file:.1f} |")
    for name, rss, file in engine["steps"]:
        print(f"| engine: {name} | {rss:.1f} | {file:.1f} |")
    own = runs["engine_after_numba"]
    fixed, training = (rss for _, rss, _ in own["steps"])
    print(f"\nnumba's fixed cost alone (another engine process: one trivial cached function, then "
          f"FirstOrder(rate=0.3)): {fixed:.1f} MB; then the engine's training {training:.1f} MB "
          f"(stock full's peak over its RSS before training: {stock['peak'] - stock['before_training']:.1f} MB)")
    print("\nWhere the engine's peak is:\n\n| point | VmRSS MB | VmHWM MB |\n|---|---:|---:|")
    for name, rss, hwm in engine["timeline"]:
        print(f"| {name} | {rss:.1f} | {hwm:.1f} |")


if __name__ == "__main__":
    main()
