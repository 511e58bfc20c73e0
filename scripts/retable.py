#!/usr/bin/env python
"""Re-make a comparison table from saved records at another target, without retraining.

Usage: python scripts/retable.py RESULTS/EXPERIMENT/records.json [--tolerance 0.001]
       [--target 0.45 | --target-method LABEL] [--target-at best|final] [--equal-time 0.25,0.5,1]

By default the target is stock_full's best quality (``--target-at final``: its quality
after its last round); ``--tolerance`` counts a method as reaching the target when it is
within that absolute distance of it.  ``smart-lgbm compare`` uses the config's
``target``, ``target_at``, ``tolerance`` and ``equal_time``; this script recomputes the
table, the equal-time table and the notes from the records alone (also records written by
older versions).
"""

from __future__ import annotations

import argparse
import json

from smart_lgbm.compare.methods import RunRecord
from smart_lgbm.compare.report import build_table, mean_curves, method_notes, to_markdown


def _shares(text: str) -> tuple[float, ...]:
    try:
        shares = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not shares or any(not s > 0 for s in shares):
        raise argparse.ArgumentTypeError(f"shares must be positive, got {text!r}")
    return shares


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", help="records.json written by smart-lgbm compare")
    ap.add_argument("--tolerance", type=float, default=0.0)
    target = ap.add_mutually_exclusive_group()
    target.add_argument("--target", type=float, default=None, help="a target quality (a number)")
    target.add_argument("--target-method", default="stock_full", help="the method whose quality is the target")
    ap.add_argument("--target-at", choices=("best", "final"), default="best",
                    help="that method's best quality over its run, or its final one")
    ap.add_argument("--equal-time", type=_shares, default=(0.25, 0.5, 1.0),
                    help="shares of stock full's time to the target for the equal-time table")
    args = ap.parse_args()
    with open(args.records) as fh:
        saved = json.load(fh)
    records = [RunRecord.from_dict(r) for r in saved["runs"]]
    table = build_table(saved["experiment"], saved["metric"], saved["higher_is_better"], mean_curves(records),
                        target=args.target if args.target is not None else args.target_method,
                        tolerance=args.tolerance, notes=method_notes(records), target_at=args.target_at,
                        equal_time_shares=args.equal_time)
    print(to_markdown(table))


if __name__ == "__main__":
    main()
