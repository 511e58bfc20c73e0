"""matplotlib is the ``compare`` extra, not a core dependency (issue #20 item 6).

``import smart_lgbm`` and every way of training work without it; the comparison commands
say which extra to install, before anything trains.  Checked in a fresh interpreter whose
import system refuses matplotlib, as an environment without it would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from test_compare import TINY

ROOT = Path(__file__).resolve().parents[1]

#: Makes ``import matplotlib`` (and its submodules) fail as if it were not installed.
BLOCK_MATPLOTLIB = textwrap.dedent("""
    import sys

    class NoMatplotlib:
        def find_spec(self, name, path=None, target=None):
            if name == "matplotlib" or name.startswith("matplotlib."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoMatplotlib())
""")


def _run_without_matplotlib(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK_MATPLOTLIB + textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_import_and_training_never_need_matplotlib(tmp_path):
    result = _run_without_matplotlib("""
        try:
            import matplotlib
        except ImportError:
            pass
        else:
            raise AssertionError("the block did not work")

        import lightgbm as lgb
        import numpy as np

        import smart_lgbm as sl
        import smart_lgbm.compare  # the harness's modules import too; only drawing needs matplotlib
        import smart_lgbm.sklearn

        rng = np.random.default_rng(0)
        X = rng.normal(size=(500, 4))
        y = (X[:, 0] > 0).astype(float)
        params = {"objective": "binary", "verbosity": -1, "num_leaves": 7}
        assert sl.train(params, lgb.Dataset(X, y), 5, sampler=sl.FirstOrder(rate=0.3)).num_trees() == 5
        obj = sl.SmartObjective("binary", sl.Uniform(0.5))
        assert lgb.train({**params, "objective": obj}, lgb.Dataset(X, y), 5,
                         callbacks=[obj.callback]).num_trees() == 5
        assert sl.SmartClassifier(n_estimators=5, verbose=-1).fit(X, y).booster_.num_trees() == 5
        assert not [m for m in sys.modules if m.split(".")[0] == "matplotlib"]
        print("trained without matplotlib")
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "trained without matplotlib" in result.stdout


def test_compare_without_matplotlib_names_the_extra_before_training(tmp_path):
    (tmp_path / "c.toml").write_text("warmup = false\n" + TINY)
    result = _run_without_matplotlib("""
        import sys
        from smart_lgbm.cli import main
        from smart_lgbm.compare import quick

        assert main(["compare", "c.toml", "--output", "compared"]) == 2
        assert quick.main(["c.toml", "--output", "quick"]) == 2
        # the missing extra is named before the config is read (a user fixes one thing at a time)
        assert main(["compare", "no_such_config.toml"]) == 2
        # smart-lgbm run draws no plots: it works without the extra
        assert main(["run", "c.toml", "--method", "full", "--experiment", "a9a", "--output", "ran"]) == 0
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 3 and "Traceback" not in result.stderr, result.stderr
    for prefix, line in zip(("smart-lgbm: error:", "scripts/run: error:", "smart-lgbm: error:"), errors):
        assert line.startswith(prefix)
        assert "matplotlib" in line and "pip install 'smart-lgbm[compare]'" in line
    # refused before anything trained or was written
    assert not (tmp_path / "compared").exists() and not (tmp_path / "quick").exists()
    assert (tmp_path / "ran" / "a9a" / "model_full_seed0.txt").exists()


def test_matplotlib_is_the_compare_extra_that_the_scripts_install():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("matplotlib")]
    assert [d for d in project["optional-dependencies"]["compare"] if d.startswith("matplotlib")]
    # scripts/test, scripts/run and .ci/run create their environments with scripts/venv.sh
    installs = re.findall(r'-e "\.\[([a-z,]+)\]"', (ROOT / "scripts" / "venv.sh").read_text())
    assert len(installs) == 1 and {"test", "dask", "compare", "docs"} <= set(installs[0].split(",")), installs
