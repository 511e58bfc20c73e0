"""Atomic file writing: a file is either its old content or its complete new content.

Results are written to a temporary file in the target's folder and moved over the target
with ``os.replace`` (atomic on POSIX and Windows within one file system), so an interrupted
or failing run never leaves a half-written table or record behind, nor temporary files.
Files that must agree with each other (records, table, plots, summary) are written inside
:func:`interrupts_deferred`, so a Ctrl-C cannot leave some of them old and some new.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def atomic_write(path: str | os.PathLike, write: Callable[[IO[Any]], None], *, binary: bool = False) -> Path:
    """Write ``path`` atomically through ``write(file_object)``.

    Parameters
    ----------
    path : path-like
        The target; its folder is created if missing.
    write : callable
        Writes the content to the open temporary file it is given.
    binary : bool, default=False
        Open the temporary file in binary mode (else UTF-8 text).

    Returns
    -------
    Path
        The target path.

    Notes
    -----
    If ``write`` raises (including KeyboardInterrupt), the temporary file is removed, the
    target keeps its old content, and the exception propagates.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private (0600); results are ordinary files, so give the
        # permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        # BaseException: a Ctrl-C in the middle must not leave the temporary file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    return atomic_write(path, lambda fh: fh.write(text))


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(data), binary=True)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically."""
    return write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


def write_csv(path: str | os.PathLike, rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Path:
    """Write dict rows as CSV with a header of ``columns``, atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return write_text(path, buffer.getvalue())


_deferring: list[bool] = []  # non-empty while a block of interrupts_deferred runs


@contextmanager
def interrupts_deferred(stream: IO[str] | None = None) -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back until the block is done, then raise KeyboardInterrupt.

    For writing a set of files that must describe the same runs: a Ctrl-C that arrives
    meanwhile (also a second one, while results are being saved after a first) is noted,
    a line on ``stream`` says the files are being finished, and KeyboardInterrupt is raised
    once they are.  Nested blocks belong to the outermost one.  Outside the main thread
    (where Python delivers no signals) it does nothing.
    """
    if _deferring or threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if not pending:
            print("smart-lgbm: finishing the result files before stopping", file=stream or sys.stderr, flush=True)
        pending.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    _deferring.append(True)
    try:
        yield
    finally:
        _deferring.pop()
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt
