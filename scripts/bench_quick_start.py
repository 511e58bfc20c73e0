#!/usr/bin/env python
"""README's first command on a fresh clone: how long ``scripts/run`` takes, and where.

Clones the repository's committed ``HEAD`` into a temporary folder (no ``.venv``, an empty
numba cache: the clone's ``__pycache__`` folders do not exist yet), runs its ``scripts/run``
and stamps each line of its output as it arrives, which splits the wall time into:

* **set-up**: creating ``.venv`` and installing the package with the ``compare`` extra, up
  to the comparison's first line (pip's own download cache is whatever this machine has);
* **compiling**: loading each experiment's data and the pre-flights that compile the
  methods' kernels, up to the first timed run's line (``(1/N) ...``);
* **runs**: the timed runs, tables and plots, to the end.

The output also keeps the verdicts ``scripts/run`` printed (the last run's): for each of the
quick comparison's experiments, which method reached stock full's best quality first.

Usage: python scripts/bench_quick_start.py [--repeats 1] [--out docs/results/bench_quick_start.md]
Times are wall-clock on whatever else the machine is doing: run it alone.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine_line

ROOT = Path(__file__).resolve().parent.parent
#: a comparison progress line: ``[m:ss.s] ...``
_STAMPED = re.compile(r"^\[\d+:\d\d\.\d\]")
#: a timed run's progress line: ``[m:ss.s] (i/N) ...``
_RUN = re.compile(r"^\[\d+:\d\d\.\d\] \(\d+/\d+\)")


def one_run() -> tuple[dict[str, float], list[str]]:
    """Clone, run ``scripts/run``, and split its wall time (module notes); also its verdict lines."""
    with tempfile.TemporaryDirectory(prefix="quick-start-") as folder:
        clone = Path(folder) / "smart-lgbm"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH")}
        env["PYTHONUNBUFFERED"] = "1"  # each line as it is printed: the stamps need it
        start = time.monotonic()
        first = first_run = None
        printed: list[str] = []
        with subprocess.Popen(["bash", "scripts/run"], cwd=clone, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                now = time.monotonic() - start
                printed.append(line.rstrip("\n"))
                if first is None and _STAMPED.match(line):
                    first = now
                if first_run is None and _RUN.match(line):
                    first_run = now
        total = time.monotonic() - start
        if proc.returncode != 0 or first is None or first_run is None:
            raise SystemExit(f"scripts/run failed (exit {proc.returncode}) or printed no progress lines")
    return ({"total": total, "setup": first, "compile": first_run - first, "runs": total - first_run},
            verdict_lines(printed))


def verdict_lines(printed: list[str]) -> list[str]:
    """The block from ``== Verdict`` to the first blank line after it, less the plots' paths
    (in the deleted clone)."""
    if not any(line.startswith("== Verdict") for line in printed):
        return []
    start = next(i for i, line in enumerate(printed) if line.startswith("== Verdict"))
    end = next((i for i in range(start, len(printed)) if not printed[i].strip()), len(printed))
    return [line for line in printed[start:end] if not line.startswith("pictures: ")]


def markdown(runs: list[dict[str, float]], verdicts: list[str]) -> str:
    med = {key: statistics.median(r[key] for r in runs) for key in ("total", "setup", "compile", "runs")}
    lines = [
        "# README's quick start on a fresh clone: `scripts/run`",
        "",
        f"`python scripts/bench_quick_start.py {' '.join(sys.argv[1:])}`: the committed `HEAD` cloned into a "
        "temporary folder, then its `scripts/run` (creates `.venv` with the `compare` extra, compiles the kernels "
        "once, runs `configs/quick.toml`). Seconds of wall time, medians of "
        f"{len(runs)} run(s); pip's download cache as this machine has it.",
        "",
        machine_line(),
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| set-up: `.venv` and the install | {med['setup']:.0f} |",
        f"| loading the data and compiling the kernels (the pre-flights, not timed by the comparison) | {med['compile']:.0f} |",
        f"| the timed runs, tables and plots | {med['runs']:.0f} |",
        f"| **total** | **{med['total']:.0f}** |",
    ]
    if len(runs) > 1:
        lines += ["", "Each run's total: " + ", ".join(f"{r['total']:.0f}" for r in runs) + " s."]
    if verdicts:
        lines += ["", "The verdicts `scripts/run` printed" + (" (the last run)" if len(runs) > 1 else "") + ":", "",
                  "```", *verdicts, "```"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", help="also write the markdown table here")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    runs = []
    verdicts: list[str] = []
    for i in range(args.repeats):
        r, verdicts = one_run()
        runs.append(r)
        print(f"run {i + 1}: total {r['total']:.0f} s (set-up {r['setup']:.0f}, compiling {r['compile']:.0f}, "
              f"runs {r['runs']:.0f})", file=sys.stderr, flush=True)
    text = markdown(runs, verdicts)
    print(text)
    if args.out:
        from smart_lgbm.compare.io import write_text

        write_text(args.out, text)  # atomic: an interrupted run leaves the previous table
    return 0


if __name__ == "__main__":
    sys.exit(main())
