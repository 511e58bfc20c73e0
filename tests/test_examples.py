"""Every script in examples/ runs to the end, as a user would run it, and says what it did.

Each example is small by design (bundled data or a few thousand synthetic rows) and checks
its own result (an ``assert`` on its accuracy, AUC or NDCG); this runs each in a fresh
process from a scratch folder and checks the line it prints last.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: what each example's last line says, when it worked
EXPECTED = {
    "binary_classification.py": "stock LightGBM, same number of trees on every row: test log-loss",
    "compare_own_csv.py": "exit status 0; results: ",
    "dask_local_cluster.py": "local model agrees: True",
    "existing_lgb_train_job.py": "mean sampling rate 0.30",
    "ranking_lambdamart.py": "test NDCG@10",
    "sklearn_pipeline_gridsearch.py": "cross-validated AUC",
}


def test_every_example_is_run_here():
    assert sorted(p.name for p in EXAMPLES) == sorted(EXPECTED)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(example, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, str(example)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"{example.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    last = result.stdout.strip().splitlines()[-1]
    assert EXPECTED[example.name] in last, last
    assert not list(tmp_path.iterdir()), f"{example.name} left files in the working folder"
