"""numba's runtime functions from a cached object file (smart_lgbm._numba_runtime): the first
process compiles and writes it, later ones load it, a damaged file falls back, and the
models do not change."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One fresh process: the runtime file redirected to FILE; with FORBID, numba's own compile
# path (create_nrt_module) raises, so the run succeeds only by loading the file.
_CHILD = """
import json, sys
from pathlib import Path
import numpy as np
import lightgbm as lgb
import smart_lgbm as sl
from smart_lgbm import _numba_runtime
from numba.core.runtime import nrtdynmod

path, forbid = Path(sys.argv[1]), sys.argv[2] == "1"
_numba_runtime.cache_path = lambda context: path
if forbid:
    def refuse(context):
        raise AssertionError("compiled numba's runtime instead of loading it")
    nrtdynmod.create_nrt_module = refuse
import numba

@numba.njit
def allocate(n):  # needs the runtime (an array's memory information)
    return np.arange(n).sum()

rng = np.random.default_rng(0)
X = rng.normal(size=(400, 5))
y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
model = sl.train({"objective": "binary", "num_leaves": 7, "verbosity": -1, "seed": 3, "num_threads": 1},
                 lgb.Dataset(X, y), 5, sampler=sl.FirstOrder(rate=0.5))
print(json.dumps({"sum": int(allocate(10)), "model": model.model_to_string(), "exists": path.is_file()}))
"""


def _child(path: Path, forbid: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), "1" if forbid else "0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_installed_at_import():
    import smart_lgbm  # noqa: F401
    from numba.core.runtime import nrtdynmod

    from smart_lgbm._numba import runtime as _numba_runtime

    assert _numba_runtime.install()
    assert nrtdynmod.compile_nrt_functions is _numba_runtime._compile_or_load


def test_first_process_writes_the_runtime_later_ones_load_it_same_model(tmp_path):
    path = tmp_path / "runtime.nrt"
    first = _child(path, forbid=False)
    assert first["exists"] and first["sum"] == 45
    # a shared cache file like numba's own: the permissions a plain open() gives, not private
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.nrt"]  # no temporary left
    second = _child(path, forbid=True)  # would fail if it compiled
    assert second["sum"] == 45
    assert second["model"] == first["model"]


def test_a_damaged_file_falls_back_to_compiling_and_is_rewritten(tmp_path):
    path = tmp_path / "runtime.nrt"
    path.write_bytes(b"not a pickled library")
    out = _child(path, forbid=False)
    assert out["sum"] == 45
    assert path.read_bytes() != b"not a pickled library"
    assert _child(path, forbid=True)["sum"] == 45


def test_cache_folder_is_numbas_choice(tmp_path, monkeypatch):
    import numba

    from smart_lgbm._numba import runtime as _numba_runtime

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path), raising=False)
    assert _numba_runtime.cache_folder() == tmp_path
    monkeypatch.setattr(numba.config, "CACHE_DIR", "", raising=False)
    package = Path(_numba_runtime.__file__).resolve().parent
    assert _numba_runtime.cache_folder() == package / "__pycache__"
    # a read-only install: numba caches the kernels in its user-wide folder, and so do we
    monkeypatch.setattr(_numba_runtime, "_writable", lambda folder: False)
    from numba.misc.appdirs import AppDirs

    user = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    assert _numba_runtime.cache_folder() == user / "smart_lgbm"
