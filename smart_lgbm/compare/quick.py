"""``scripts/run``: a comparison that prints its verdicts first, with the warnings timing needs.

``python -m smart_lgbm.compare.quick CONFIG [--method M] [--experiment E] [--output DIR]
[--overwrite]`` runs ``smart-lgbm compare CONFIG`` (same options, same files) and then
prints, on standard output,

1. the machine's load warnings (before and after the runs) and each experiment's timing
   warnings (:mod:`.verdict`);
2. one verdict per experiment: which method reached the target fastest, by how much
   (with the spread over seeds and over stock full's repeated runs), at what best quality;
3. the paper-style tables, as ``smart-lgbm compare`` prints them.

Each experiment's folder also gets ``verdict.png``: quality against training seconds, the
target line, each method's time to the target marked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .plots import VERDICT_PLOT
from .verdict import load_warning, plot_verdict, verdict


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m smart_lgbm.compare.quick", description=__doc__.split("\n")[0])
    parser.add_argument("config", help="TOML config file (see docs/compare.md)")
    parser.add_argument("--method", action="append", help="only this method label (repeatable)")
    parser.add_argument("--experiment", action="append", help="only this experiment (repeatable)")
    parser.add_argument("--output", help="output folder (overrides the config's 'output')")
    parser.add_argument("--overwrite", action="store_true", help="replace records of another setup")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print warnings, verdicts and tables; returns the exit code."""
    args = _parser().parse_args(argv)
    from . import ConfigError, load_config, run_compare
    from .config import error_text
    from .plots import MissingExtraError, matplotlib_agg
    from .report import to_markdown

    warnings = [w for w in [load_warning("before the runs")] if w]
    try:
        matplotlib_agg()  # before the config, as smart-lgbm compare
        config = load_config(args.config)
        results = run_compare(config, methods=args.method, experiments=args.experiment, output=args.output,
                              overwrite=args.overwrite)
    except ConfigError as exc:
        print(f"scripts/run: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except MissingExtraError as exc:
        print(f"scripts/run: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    warnings += [w for w in [load_warning("after the runs")] if w]
    verdicts, pictures = [], []
    for result in results:
        if result.table is None:
            continue
        v = verdict(result.table, result.records)
        verdicts.append(v)
        warnings += v.warnings
        if result.folder is not None:
            path = plot_verdict(result.table, result.records, result.folder / VERDICT_PLOT)
            if path is not None:
                pictures.append(str(path))
    print("== Verdict (training seconds to the target quality; speed-up = stock full's time / the method's)")
    for v in verdicts:
        print("\n".join(v.lines))
    for w in warnings:
        print(f"WARNING: {w}")
    if pictures:
        print("pictures: " + ", ".join(pictures))
    print()
    for result in results:
        if result.table is not None:
            print(to_markdown(result.table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
