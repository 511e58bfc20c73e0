"""numba's runtime functions (NRT) loaded from a cached object file instead of compiled by LLVM.

numba sets its runtime up on the first call of any compiled function, even one loaded from
the on-disk cache: it compiles a small LLVM module of reference-counting functions
(``numba.core.runtime.nrtdynmod.compile_nrt_functions``) through LLVM's optimizer and code
generator.  Those run nowhere else in a process whose kernels all come from the cache, yet
the compile pages in about 27 MB of LLVM's code (file-backed RSS, measured by
``scripts/probe_memory.py``), most of the engine's extra peak memory over stock LightGBM on
small data.  Loading a kernel from the cache only needs LLVM's bitcode reader and object
loader.

:func:`load_cached` sets numba's runtime up when the engine first needs its kernels (the
start of :func:`smart_lgbm.train`, a :class:`smart_lgbm.SmartObjective`'s first call),
before any of them runs: the first process compiles the module as numba does, with numba's
object caching on, and writes numba's own serialized form of the library (object code plus
the bitcode numba links later compilations against) beside the package's kernel cache;
later processes load it the way numba loads any cached function
(``Codegen.unserialize_library``).  numba's own compile function is routed through the file
only while :func:`load_cached` runs and is restored before it returns: importing
``smart_lgbm`` changes nothing in numba, and code that sets numba's runtime up first (a
user's own ``@njit`` function called before any training) keeps numba's own compile.  The
file's name carries everything the object code depends on (numba's and llvmlite's versions,
the target triple, host CPU name and features, numba's optimisation level): another machine
or version compiles anew.  An unreadable file, or a numba without these internals, falls
back to numba's own compile.  The runtime functions are the same machine code either way
(reference counts and memory information, no arithmetic of the models), so the models are
unchanged.

This reaches into numba internals (numba 0.6x), as does :mod:`.kernel_cache`.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

#: whether :func:`load_cached` has run in this process
_LOADED = False


def cache_folder() -> Path:
    """Where the package keeps its own compiled-code cache files, the folder numba picks for
    the package's kernels: ``NUMBA_CACHE_DIR`` when set; else the package's ``__pycache__``
    when it can be written; else (a read-only install) numba's user-wide cache folder."""
    import numba

    configured = getattr(numba.config, "CACHE_DIR", None)
    if configured:
        return Path(configured)
    in_tree = Path(__file__).resolve().parent / "__pycache__"
    if _writable(in_tree):
        return in_tree
    try:
        from numba.misc.appdirs import AppDirs
    except ImportError:  # (a numba without it: read-only, every process compiles)
        return in_tree
    return Path(AppDirs(appname="numba", appauthor=False).user_cache_dir) / "smart_lgbm"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def cache_path(context: Any) -> Path:
    """The cached runtime library's file for this process's numba, llvmlite and CPU, in
    :func:`cache_folder`."""
    import llvmlite
    import numba

    codegen = context.codegen()
    tag = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple(), getattr(numba.config, "OPT", None)))
    return cache_folder() / f"numba_runtime-{hashlib.sha256(tag.encode()).hexdigest()[:20]}.nrt"


def write_shared(path: Path, write: Callable[[IO[bytes]], object]) -> bool:
    """Write a cache file through ``write(binary file)``: whole under another name, then
    renamed, so a concurrent reader never sees half of it.  Whether it was written (False
    where the folder cannot be written, e.g. a read-only install).

    The temporary file is opened with ``"x"`` rather than made by ``mkstemp``, whose files
    are private: these files are shared like numba's own cache files, which follow the umask.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "xb") as fh:
                write(fh)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def _compile_or_load(context: Any) -> Any:
    """``compile_nrt_functions(context)``, through the cached object file when there is one."""
    from numba.core.runtime import nrtdynmod

    path = cache_path(context)
    codegen = context.codegen()
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                return codegen.unserialize_library(pickle.load(fh))
        except Exception:  # noqa: BLE001  (a damaged or foreign file: compile as numba does)
            pass
    ir_module, library = nrtdynmod.create_nrt_module(context)
    library.enable_object_caching()  # keeps the object code for serialize_using_object_code
    library.add_ir_module(ir_module)
    library.finalize()
    # (not written on a read-only install: every process compiles, as without this module)
    write_shared(path, lambda fh: pickle.dump(library.serialize_using_object_code(), fh))
    return library


def load_cached() -> bool:
    """Set numba's runtime up from the cached object file, once per process.

    numba's ``compile_nrt_functions`` is replaced by :func:`_compile_or_load` only while
    numba's runtime is initialised here, and restored at once; when something else set the
    runtime up first, nothing changes.

    Returns
    -------
    bool
        Whether this call set the runtime up through the file (False when it was set up
        already, on a later call, or on a numba without the internals it wraps).
    """
    global _LOADED
    if _LOADED:
        return False
    _LOADED = True
    try:
        from numba.core.codegen import CPUCodegen, CPUCodeLibrary
        from numba.core.registry import cpu_target
        from numba.core.runtime import nrt, nrtdynmod
    except ImportError:
        return False
    needed = (hasattr(nrtdynmod, "compile_nrt_functions") and hasattr(nrtdynmod, "create_nrt_module")
              and hasattr(CPUCodegen, "magic_tuple") and hasattr(CPUCodegen, "unserialize_library")
              and hasattr(CPUCodeLibrary, "serialize_using_object_code") and hasattr(nrt, "rtsys"))
    if not needed or getattr(nrt.rtsys, "_init", False):
        return False
    original = nrtdynmod.compile_nrt_functions
    nrtdynmod.compile_nrt_functions = _compile_or_load
    try:
        # (the target context's set-up initialises the runtime, numba's own call; safe to repeat)
        nrt.rtsys.initialize(cpu_target.target_context)
    finally:
        nrtdynmod.compile_nrt_functions = original
    return True
