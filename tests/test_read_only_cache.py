"""``import smart_lgbm`` and training where numba can write its cache nowhere (issue 40): a
read-only install whose user cache folder cannot be written either (a container as a
non-root user with HOME=/), or an unwritable NUMBA_CACHE_DIR.  The kernels then compile in
every process, with one NoCacheWarning, and the models are the same.

The folders are made unwritable for root too: a file where a folder would have to be
(``__pycache__`` files in a copy of the package, HOME and NUMBA_CACHE_DIR below a file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, warnings
import numpy as np, lightgbm as lgb
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import smart_lgbm as sl
    if sys.argv[1] == "train":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(400, 4))
        y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
        model = sl.train({"objective": "binary", "num_leaves": 7, "verbosity": -1, "num_threads": 1},
                         lgb.Dataset(X, y), 4, sampler=sl.FirstOrder(rate=0.5)).model_to_string()
    else:  # one kernel only
        from smart_lgbm.losses.base import weighted_sums
        model = str(weighted_sums(np.ones(3), None))
print(json.dumps({"file": sl.__file__, "model": model,
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
"""


@pytest.fixture(scope="module")
def read_only_package(tmp_path_factory):
    """A copy of the package where no ``__pycache__`` folder can be made, and a file to hide
    folders below."""
    top = tmp_path_factory.mktemp("read-only")
    shutil.copytree(ROOT / "smart_lgbm", top / "smart_lgbm", ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _, _ in os.walk(top / "smart_lgbm"):
        (Path(folder) / "__pycache__").write_text("")  # a file: numba's in-tree cache cannot be made
    blocker = top / "a-file"
    blocker.write_text("")
    for folder, _dirs, files in os.walk(top / "smart_lgbm"):  # read-only too, for a non-root run
        for name in files:
            os.chmod(Path(folder) / name, 0o444)
    return top, blocker


def _run(env: dict[str, str], what: str = "train") -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, what], env=env, cwd="/", capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("cache_dir", [None, "below-a-file"], ids=["home", "numba_cache_dir"])
def test_import_and_training_work_without_an_on_disk_cache(read_only_package, cache_dir):
    top, blocker = read_only_package
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(top), "PYTHONDONTWRITEBYTECODE": "1",
           "HOME": str(blocker)}  # numba's user-wide cache folder is below a file
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(blocker / "numba")
    out = _run(env)
    assert out["file"].startswith(str(top))  # the read-only copy was imported
    no_cache = [w for w in out["warnings"] if w.startswith("NoCacheWarning")]
    assert len(no_cache) == 1 and "NUMBA_CACHE_DIR" in no_cache[0]
    # the same model as with the cache
    import lightgbm as lgb
    import numpy as np

    import smart_lgbm as sl

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
    here = sl.train({"objective": "binary", "num_leaves": 7, "verbosity": -1, "num_threads": 1}, lgb.Dataset(X, y), 4,
                    sampler=sl.FirstOrder(rate=0.5))
    assert out["model"] == here.model_to_string()


def test_a_writable_cache_gives_no_warning(read_only_package, tmp_path):
    top, _ = read_only_package
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(top), "PYTHONDONTWRITEBYTECODE": "1",
           "HOME": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    out = _run(env, "one kernel")
    assert not [w for w in out["warnings"] if w.startswith("NoCacheWarning")]
    assert any((tmp_path / "numba").rglob("*.nbi"))  # numba kept the kernels there
