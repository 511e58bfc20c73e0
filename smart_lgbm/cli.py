"""The ``smart-lgbm`` command: ``run`` one method or ``compare`` all methods of a TOML config;
``warmup`` compiles the recommended methods' kernels once (:func:`smart_lgbm.warmup`).

Exit codes: 0 success, 2 bad command line, config, data, parameters or output folder, or
``compare`` without matplotlib (the ``compare`` extra) (one line naming the problem, before
anything trains), 130 interrupted (finished methods' or seeds' results are kept, and the
command says which).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # imported lazily at run time (see main)
    from .compare.report import Table


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smart-lgbm",
        description="Config-driven runs and side-by-side comparisons of SMART sampling against stock LightGBM.",
    )
    parser.add_argument("--version", action="version", version=f"smart-lgbm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,compare,warmup}")
    overwrite_help = ("replace results in the output folder that new runs cannot be merged into "
                      "(another setup, an older format); without it such a folder is refused")

    run = sub.add_parser("run", help="train one method of a config and write its records and models")
    run.add_argument("config", help="TOML config file (see docs/compare.md)")
    run.add_argument("--method", help="method label ([methods.LABEL]); needed when the config has several")
    run.add_argument("--experiment", action="append", help="only this experiment (repeatable)")
    run.add_argument("--seed", type=int, action="append", help="only this seed (repeatable)")
    run.add_argument("--output", help="output folder (overrides the config's 'output')")
    run.add_argument("--overwrite", action="store_true", help=overwrite_help)

    cmp_ = sub.add_parser("compare", help="train every method and write records, the table and plots")
    cmp_.add_argument("config", help="TOML config file (see docs/compare.md)")
    cmp_.add_argument("--method", action="append", help="only this method label (repeatable); the other "
                      "methods' results already in the output folder are kept")
    cmp_.add_argument("--experiment", action="append", help="only this experiment (repeatable)")
    cmp_.add_argument("--output", help="output folder (overrides the config's 'output')")
    cmp_.add_argument("--overwrite", action="store_true", help=overwrite_help)

    sub.add_parser("warmup", help="compile the recommended methods' numba kernels once, into numba's on-disk cache "
                   "(for Docker images, CI, Dask workers), so that the first training starts at once")
    return parser


def _warmup() -> int:
    """``smart-lgbm warmup``: :func:`smart_lgbm.warmup`, each step on stderr."""
    import time

    from ._warmup import warmup

    start = time.perf_counter()
    done = warmup(progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"smart-lgbm warmup: {len(done)} trainings in {time.perf_counter() - start:.1f} s; their kernels are in "
          "numba's cache for this environment", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``smart-lgbm`` and ``python -m smart_lgbm``; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "warmup":
        try:
            return _warmup()
        except KeyboardInterrupt:
            return 130  # what compiled so far stays in the cache
    # Imported here so that --help and --version answer without loading LightGBM and numba.
    from .compare import ConfigError, load_config, run_compare, run_single
    from .compare.config import error_text
    from .compare.io import ResultWriteError
    from .compare.plots import MissingExtraError, matplotlib_agg

    try:
        if args.command == "compare":
            matplotlib_agg()  # the missing extra first: no use fixing the config and failing again
        config = load_config(args.config)
        if args.command == "run":
            labels = list(dict.fromkeys(m.label for e in config.experiments for m in e.methods))
            method = args.method
            if method is None:
                if len(labels) != 1:
                    raise ConfigError(f"--method is needed: the config has methods {', '.join(labels)}")
                method = labels[0]
            run_single(config, method, experiments=args.experiment, seeds=args.seed, output=args.output,
                       overwrite=args.overwrite)
            results = []
        else:
            results = run_compare(config, methods=args.method, experiments=args.experiment, output=args.output,
                                  overwrite=args.overwrite)
    except ConfigError as exc:
        print(f"smart-lgbm: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except MissingExtraError as exc:  # compare without matplotlib: said before anything trains
        print(f"smart-lgbm: error: {exc}", file=sys.stderr)
        return 2
    except ResultWriteError as exc:  # after training: the earlier result files are kept
        print(f"smart-lgbm: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130  # the runner has said what it kept
    from .compare.report import to_markdown

    for result in results:
        if result.table is not None:
            print(to_markdown(result.table))
            _warn_incomplete(result.table)
    out = args.output or config.output
    print(f"results in {out}", file=sys.stderr)
    return 0


def _warn_incomplete(table: Table) -> None:
    """Say on stderr what a finished comparison's table lacks (also in its notes)."""
    if table.target is None:
        print(f"smart-lgbm: note: {table.experiment}: no target quality ({table.target_source})", file=sys.stderr)
    missing = [row.method for row in table.upper if row.runs == 0]
    if missing:
        print(f"smart-lgbm: note: {table.experiment}: no iterations for {', '.join(missing)} (see the notes under "
              "the table)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
