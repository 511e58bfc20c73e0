"""One line on the ``smart_lgbm`` logger when the package's kernels first compile.

numba compiles a kernel on its first call where its on-disk cache has no entry for the
call's types (a fresh environment, a new Docker image or Dask worker): the first training
then waits while the kernels it uses compile, a minute or more on a small machine.
:func:`compile_notice` watches numba's ``numba:compile`` event (fired only on a cache miss,
never on a cache hit) while the engine trains and, on the first compilation of one of the
package's kernels in the process, logs one WARNING saying what is happening, that it
happens once per environment, and how to do it ahead of time (``smart-lgbm warmup``).  A
user's own numba functions are not watched, and the listener is installed only inside the
block.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from numba.core import event

__all__ = ["NOTICE", "compile_notice", "quiet"]

logger = logging.getLogger("smart_lgbm")

#: The line logged on the first compilation.
NOTICE = ("compiling smart-lgbm's kernels once (numba; they are cached on disk for this environment): the first "
          "training waits while they compile; run `smart-lgbm warmup` (or smart_lgbm.warmup()) once to do it "
          "ahead of time, e.g. in a Docker image or CI")

#: Whether this process has said it (or was told not to: :func:`quiet`).
_SAID = False


class _FirstCompile(event.Listener):
    """Logs :data:`NOTICE` when a kernel of the package starts compiling, once a process."""

    def on_start(self, ev: Any) -> None:
        global _SAID
        if _SAID:
            return
        dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
        if module.startswith("smart_lgbm."):
            _SAID = True
            logger.warning(NOTICE)

    def on_end(self, ev: Any) -> None:
        pass


_LISTENER = _FirstCompile()


@contextmanager
def compile_notice() -> Iterator[None]:
    """Inside the block, the first compilation of a package kernel logs :data:`NOTICE`."""
    if _SAID:
        yield
        return
    with event.install_listener("numba:compile", _LISTENER):
        yield


@contextmanager
def quiet() -> Iterator[None]:
    """Inside the block, no :data:`NOTICE` (:func:`smart_lgbm.warmup` says what it compiles itself)."""
    global _SAID
    said = _SAID
    _SAID = True
    try:
        yield
    finally:
        _SAID = said
