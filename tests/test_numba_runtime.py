"""numba's runtime functions from a cached object file (smart_lgbm._numba.runtime): the first
process compiles and writes it, later ones load it, a damaged file falls back, the models do
not change, and numba behaves for other code exactly as without smart_lgbm."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One fresh process: the runtime file redirected to FILE; with FORBID, numba's own compile
# path (create_nrt_module) raises, so the run succeeds only by loading the file.
_CHILD = """
import json, sys
from pathlib import Path
import numpy as np
import lightgbm as lgb
import smart_lgbm as sl
from smart_lgbm._numba import runtime as _numba_runtime
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


# A user's own compiled function, before and after importing smart_lgbm and training: numba's
# runtime compile is numba's own at every point (smart_lgbm routes it through its file only
# while it sets the runtime up, and only when nothing else did first), and the function gives
# the same results.  FIRST: the user's function runs before smart_lgbm is even imported.
_USER = """
import json, sys
import numpy as np
import numba
from numba.core.runtime import nrt, nrtdynmod

original = nrtdynmod.compile_nrt_functions
first = sys.argv[1] == "1"

@numba.njit
def user(n):  # allocates: needs numba's runtime
    return np.arange(n).sum() + np.ones(3).sum()

seen = {}
if first:
    seen["before import"] = int(user(10))
import smart_lgbm as sl
import lightgbm as lgb
same_after_import = nrtdynmod.compile_nrt_functions is original
initialised_by_import = nrt.rtsys._init and not first
seen["after import"] = int(user(11))
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 5))
y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
sl.train({"objective": "binary", "num_leaves": 7, "verbosity": -1, "num_threads": 1}, lgb.Dataset(X, y), 3,
         sampler=sl.FirstOrder(rate=0.5))
seen["after training"] = int(user(12))

@numba.njit
def later(n):  # compiled after the training
    return np.arange(n).sum()

print(json.dumps({"seen": seen, "later": int(later(5)), "same_after_import": same_after_import,
                  "same_after_training": nrtdynmod.compile_nrt_functions is original,
                  "initialised_by_import": bool(initialised_by_import)}))
"""


@pytest.mark.parametrize("user_first", [False, True])
def test_a_users_own_njit_function_behaves_the_same_before_and_after_import_and_training(user_first):
    out = subprocess.run([sys.executable, "-c", _USER, "1" if user_first else "0"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expected = {"after import": 58, "after training": 69, **({"before import": 48} if user_first else {})}
    assert result["seen"] == expected and result["later"] == 10
    assert result["same_after_import"] and result["same_after_training"]
    assert not result["initialised_by_import"]  # importing smart_lgbm sets nothing of numba's up


def test_load_cached_routes_the_compile_only_while_it_runs(monkeypatch):
    from numba.core.runtime import nrt, nrtdynmod

    from smart_lgbm._numba import runtime

    original = nrtdynmod.compile_nrt_functions
    monkeypatch.setattr(runtime, "_LOADED", False)
    seen = []
    monkeypatch.setattr(nrt.rtsys, "initialize", lambda context: seen.append(nrtdynmod.compile_nrt_functions))
    monkeypatch.setattr(nrt.rtsys, "_init", False, raising=False)
    assert runtime.load_cached()
    assert seen == [runtime._compile_or_load]  # the file's loader while numba sets its runtime up
    assert nrtdynmod.compile_nrt_functions is original  # numba's own again afterwards
    assert not runtime.load_cached()  # once per process


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
