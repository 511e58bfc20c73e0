"""Row kernels compiled twice, serial and parallel, dispatched by the number of rows.

The project calls the two compiled functions of one kernel its *twins*.

Why: numba's ``parallel=True`` compilation is the largest part of a fresh environment's
first ``sl.train`` (a parallel kernel costs about twice its serial compile), while on a
few thousand rows the parallel loop buys little.  A kernel decorated with
:func:`row_kernel` is one Python function compiled as two numba functions from the same
body: a serial one (``prange`` is ``range`` there) and a parallel one.  A call with fewer
than :data:`PARALLEL_MIN_ROWS` rows runs the serial one, a larger call the parallel one;
each is compiled on its first call only, so a run on small data (tests, notebooks, quick
examples) never pays for a parallel compilation, and a run on more data runs the parallel
code (LightGBM's OpenMP threads and numba's share one libgomp pool, which Python threads
over serial kernels would fight).

Both twins give the same bits: every kernel handed to :func:`row_kernel` reduces over a
fixed partition of its rows (blocks combined in block order) or writes each row from that
row alone, so its results do not depend on how many threads run the loop, one included
(``tests/test_twins.py`` checks each twin pair bit for bit).

The two are distinct Python function objects (the serial one a copy of the function with
``__serial`` appended to its qualified name), so numba's on-disk cache keeps one file per
twin instead of the second overwriting the first's entry.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from numba import njit

#: Calls with at least this many rows run the parallel twin: where it starts to pay at two
#: threads (docs/results/bench_twins.md, made by ``scripts/bench_twins.py``, which times each
#: step of an iteration with either twin by data size): the walk over the codes gains from a
#: few thousand rows on (it splits rows into small chunks), the block kernels (``BLOCK`` =
#: 16,384 rows a block) from their second block.  Below it a run compiles no parallel kernel.
PARALLEL_MIN_ROWS = 8192

@contextmanager
def parallel_from(rows: int) -> Iterator[None]:
    """Inside the block, calls of at least ``rows`` rows run the parallel twin.

    ``parallel_from(0)``: every call runs (and so compiles) its parallel twin, e.g. in a
    warm-up on a few rows before timed runs on many (``compare``'s pre-flight), in tests and
    in benchmarks.  Not thread-safe: it sets the module's threshold.
    """
    global PARALLEL_MIN_ROWS
    if not isinstance(rows, int) or rows < 0:
        raise ValueError(f"rows must be an int >= 0, got {rows!r}")
    old = PARALLEL_MIN_ROWS
    PARALLEL_MIN_ROWS = rows
    try:
        yield
    finally:
        PARALLEL_MIN_ROWS = old


#: Every kernel :func:`row_kernel` made, by qualified name (for tests and benchmarks).
REGISTRY: dict[str, RowKernel] = {}


def _copy(func: Callable[..., Any], suffix: str) -> types.FunctionType:
    """A second function object with ``func``'s code and globals, named apart."""
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"row_kernel needs a plain Python function, got {func!r}")
    twin = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    twin.__qualname__ = func.__qualname__ + suffix
    twin.__module__ = func.__module__
    twin.__doc__ = func.__doc__
    return twin


class RowKernel:
    """A numba kernel over rows with a serial and a parallel twin (see the module notes).

    ``rows`` is the position of the argument that gives the number of rows, ``axis`` the
    axis of that argument's shape to read (``None``: the argument is the count itself).
    """

    def __init__(self, func: Callable[..., Any], rows: int, axis: int | None,
                 error_model: Literal["python", "numpy"] = "python") -> None:
        self.py_func = func
        self.rows = rows
        self.axis = axis
        self.serial = njit(cache=True, error_model=error_model)(_copy(func, "__serial"))
        self.parallel = njit(parallel=True, cache=True, error_model=error_model)(func)
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__

    def twin(self, n: int) -> Any:
        """The twin that runs a call over ``n`` rows."""
        return self.parallel if n >= PARALLEL_MIN_ROWS else self.serial

    def __call__(self, *args: Any) -> Any:
        arg = args[self.rows]
        n = arg if self.axis is None else arg.shape[self.axis]
        return (self.parallel if n >= PARALLEL_MIN_ROWS else self.serial)(*args)

    def __repr__(self) -> str:
        return f"<row kernel {self.__module__}.{self.__qualname__}>"


def row_kernel(rows: int = 0, axis: int | None = None,
               error_model: Literal["python", "numpy"] = "python") -> Callable[[Callable[..., Any]], RowKernel]:
    """Decorator: compile the kernel as serial and parallel twins (module notes).

    ``rows``/``axis``: where the call's number of rows is (:class:`RowKernel`);
    ``error_model``: numba's (``"numpy"``: a float division by zero gives inf or NaN instead of
    raising, and the division's check no longer keeps a row loop from vectorising).
    """
    def wrap(func: Callable[..., Any]) -> RowKernel:
        kernel = RowKernel(func, rows, axis, error_model)
        REGISTRY[f"{func.__module__}.{func.__qualname__}"] = kernel
        return kernel
    return wrap
