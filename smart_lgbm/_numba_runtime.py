"""numba's runtime functions (NRT) loaded from a cached object file instead of compiled by LLVM.

numba sets its runtime up on the first call of any compiled function, even one loaded from
the on-disk cache: it compiles a small LLVM module of reference-counting helpers
(``numba.core.runtime.nrtdynmod.compile_nrt_functions``) through LLVM's optimizer and code
generator.  Those run nowhere else in a process whose kernels all come from the cache, yet
the compile pages in about 27 MB of LLVM's code (file-backed RSS, measured by
``scripts/probe_memory.py``), most of the engine's extra peak memory over stock LightGBM on
small data.  Loading a kernel from the cache only needs LLVM's bitcode reader and object
loader.

:func:`install` wraps that compile: the first process compiles the module as numba does,
with numba's object caching on, and writes numba's own serialized form of the library
(object code plus the bitcode numba links later compilations against) beside the package's
kernel cache; later processes load it the way numba loads any cached function
(``Codegen.unserialize_library``).  The file's name carries everything the object code
depends on (numba's and llvmlite's versions, the target triple, host CPU name and features,
numba's optimisation level): another machine or version compiles anew.  An unreadable
file, or a numba without these internals, falls back to numba's own compile.  The runtime
functions are the same machine code either way (reference counts and memory information,
no arithmetic of the models), so the models are unchanged.

This reaches into numba internals (numba 0.6x); it is the package's only such use and
changes nothing once numba's runtime is already set up in the process.

:func:`install` also lets the package's kernels compile where numba can keep no on-disk
cache for them (a read-only install whose user cache folder cannot be written either, e.g.
``HOME=/`` as a non-root user): numba would refuse every ``cache=True`` function there
("no locator available"), so ``import smart_lgbm`` itself would fail.  Such a kernel is
compiled without the cache instead (in every process), and a :class:`NoCacheWarning` says
so once, naming ``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
import secrets
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

#: set by :func:`install`: numba's own compile, wrapped
_COMPILE: Any = None
#: set by :func:`install`: numba's own ``Dispatcher.enable_caching``, wrapped
_ENABLE_CACHING: Any = None
_PACKAGE = str(Path(__file__).resolve().parent)
_warned = False


@functools.cache
def _cacheable_folder(folder: str, source: str) -> bool:
    """Whether one of numba's cache locators can keep the kernels of the module ``source``
    (in ``folder``) on disk: the test numba makes when a ``cache=True`` function is defined."""
    try:
        from numba.core import caching
    except ImportError:
        return True
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if classes is None:
        return True  # (a numba without the list: let it decide)
    for cls in classes:
        try:
            if cls.from_function(can_cache, source) is not None:  # (any plain function of the package)
                return True
        except Exception:  # noqa: BLE001 - a locator that cannot judge this file: the next one
            continue
    return False


def can_cache(source: str) -> bool:
    """Whether numba can keep the compiled kernels of the module file ``source`` on disk."""
    path = os.path.abspath(source)
    return _cacheable_folder(os.path.dirname(path), path)


def _enable_caching_where_possible(dispatcher: Any) -> None:
    """``Dispatcher.enable_caching`` for numba's ``cache=True``, except for the package's
    kernels where no cache can be written: those compile without it (module notes)."""
    global _warned
    try:
        source = inspect.getfile(dispatcher.py_func)
    except (TypeError, AttributeError):
        source = ""
    if source and os.path.abspath(source).startswith(_PACKAGE + os.sep) and not can_cache(source):
        if not _warned:
            _warned = True
            from .exceptions import NoCacheWarning

            import numba

            where = (f"NUMBA_CACHE_DIR={numba.config.CACHE_DIR!r} cannot be written"  # type: ignore[attr-defined]
                     if getattr(numba.config, "CACHE_DIR", None) else
                     "the package folder and numba's user cache folder are read-only")
            warnings.warn(f"numba can write no cache for smart_lgbm's compiled kernels here ({where}): they "
                          "compile in every process; set NUMBA_CACHE_DIR to a writable folder to keep them",
                          NoCacheWarning, stacklevel=2)
        return
    _ENABLE_CACHING(dispatcher)


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


def install() -> bool:
    """Route numba's runtime compile through the cached object file (once per process).

    Also routes numba's ``Dispatcher.enable_caching`` through
    :func:`_enable_caching_where_possible` (a read-only cache: module notes).

    Returns
    -------
    bool
        Whether it is installed (False on a numba without the internals it wraps).
    """
    global _COMPILE, _ENABLE_CACHING
    try:
        from numba.core import dispatcher
    except ImportError:  # (a numba without it: numba's own caching rules)
        pass
    else:
        if hasattr(dispatcher.Dispatcher, "enable_caching") and _ENABLE_CACHING is None:
            _ENABLE_CACHING = dispatcher.Dispatcher.enable_caching
            setattr(dispatcher.Dispatcher, "enable_caching", _enable_caching_where_possible)  # noqa: B010
    try:
        from numba.core.codegen import CPUCodegen, CPUCodeLibrary
        from numba.core.runtime import nrtdynmod
    except ImportError:
        return False
    needed = (hasattr(nrtdynmod, "compile_nrt_functions") and hasattr(nrtdynmod, "create_nrt_module")
              and hasattr(CPUCodegen, "magic_tuple") and hasattr(CPUCodegen, "unserialize_library")
              and hasattr(CPUCodeLibrary, "serialize_using_object_code"))
    if not needed:
        return False
    if _COMPILE is None:
        _COMPILE = nrtdynmod.compile_nrt_functions
        nrtdynmod.compile_nrt_functions = _compile_or_load
    return True
