#!/usr/bin/env python
"""Re-make a comparison table from saved records at another target, without retraining.

Usage: python scripts/retable.py RESULTS/EXPERIMENT/records.json [--tolerance 0.001] [--target 0.45]

``--tolerance`` counts a method as reaching the target when it is within that absolute
distance of it (``smart-lgbm compare`` uses the config's ``tolerance``, 0 by default).
"""

from __future__ import annotations

import argparse
import json

from smart_lgbm.compare.methods import RunRecord
from smart_lgbm.compare.report import build_table, mean_curves, method_notes, to_markdown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", help="records.json written by smart-lgbm compare")
    ap.add_argument("--tolerance", type=float, default=0.0)
    ap.add_argument("--target", type=float, default=None, help="default: stock_full at the last round")
    args = ap.parse_args()
    with open(args.records) as fh:
        saved = json.load(fh)
    records = [RunRecord.from_dict(r) for r in saved["runs"]]
    table = build_table(saved["experiment"], saved["metric"], saved["higher_is_better"], mean_curves(records),
                        target=args.target if args.target is not None else "stock_full", tolerance=args.tolerance,
                        notes=method_notes(records))
    print(to_markdown(table))


if __name__ == "__main__":
    main()
