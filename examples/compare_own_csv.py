"""A comparison on your own CSV file: ``smart-lgbm compare`` with a small config.

Writes a CSV (synthetic here: replace it with your file) and a TOML config into a temporary
folder, then runs the comparison: stock LightGBM on every row, LightGBM's GOSS and
``FirstOrder`` sampling, each timed to stock full's best validation log-loss.  The output
folder gets the table, per-iteration records (JSON and CSV) and plots.  Needs the
``compare`` extra (matplotlib): ``pip install 'smart-lgbm[compare]'``.

Run: ``python examples/compare_own_csv.py``
"""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from smart_lgbm.cli import main

CONFIG = """
output = "results"              # relative to this file's folder
rounds = 60
seeds = [0, 1]
tolerance = 0.002               # "reaches the target" within 0.002 of stock full's best log-loss

[params]
learning_rate = 0.1
num_leaves = 15
num_threads = 2

[methods.stock_full]
[methods.stock_goss]
[methods.first_order]
rate = 0.3
rounds = 120                    # cheaper iterations: more of them

[[experiments]]
name = "mine"
metric = "binary_logloss"
data = { source = "csv", train = "mine.csv", label = "target", test_size = 0.25 }
params = { objective = "binary" }
"""

with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 8))
    logit = X[:, 0] - 2 * X[:, 1] * X[:, 2] + np.sin(3 * X[:, 3])
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])
    frame["target"] = (rng.random(6000) < 1 / (1 + np.exp(-logit))).astype(int)
    frame.to_csv(folder / "mine.csv", index=False)
    (folder / "mine.toml").write_text(CONFIG)

    status = main(["compare", str(folder / "mine.toml")])  # the same as: smart-lgbm compare mine.toml
    written = sorted(p.name for p in (folder / "results" / "mine").iterdir())
    print(f"exit status {status}; results: {', '.join(written)}")
    assert status == 0 and "records.json" in written and "table.md" in written
