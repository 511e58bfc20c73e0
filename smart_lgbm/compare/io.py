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


def atomic_write(path: str | os.PathLike, write: Callable[[IO[Any]], object], *, binary: bool = False) -> Path:
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
    if target.is_dir():
        raise ResultWriteError(f"cannot write {target}: it is a folder")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private (0600); results are ordinary files, so give the
        # permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        fh: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if _batches:  # inside written_together: replaced with the others at its end
            earlier = _batches[-1].pop(target, None)
            if earlier is not None:
                _unlink(earlier)
            _batches[-1][target] = tmp
        else:
            os.replace(tmp, target)
    except BaseException:
        # BaseException: a Ctrl-C in the middle must not leave the temporary file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


class ResultWriteError(OSError):
    """A result file could not be written; the earlier set of files is kept."""


_batches: list[dict[Path, str]] = []  # target -> staged temporary file, while written_together runs


def _unlink(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@contextmanager
def written_together() -> Iterator[None]:
    """Every :func:`atomic_write` inside the block is staged and the targets are replaced at
    its end, all of them or (if one cannot be) none: the files keep describing one run.

    Each new content is written to a temporary file next to its target first (a full disk
    or an unwritable folder fails there, before any target changes); then each target is
    moved aside and replaced, and if one replacement fails the ones already done are moved
    back.  Raises :class:`ResultWriteError` naming the file and saying the earlier set is kept.
    Nested blocks belong to the outermost one.
    """
    if _batches:
        yield
        return
    batch: dict[Path, str] = {}
    _batches.append(batch)
    try:
        yield
    except BaseException:
        _batches.pop()
        for tmp in batch.values():
            _unlink(tmp)
        raise
    _batches.pop()
    _replace_all(batch)


def staged_text(path: str | os.PathLike) -> str | None:
    """The content staged for ``path`` by the running :func:`written_together`, or None."""
    tmp = _batches[-1].get(Path(path)) if _batches else None
    return None if tmp is None else Path(tmp).read_text(encoding="utf-8")


def _replace_all(batch: dict[Path, str]) -> None:
    done: list[tuple[Path, str | None]] = []  # (target, its moved-aside old file or None)
    try:
        for target, tmp in batch.items():
            if target.is_dir():
                raise IsADirectoryError(21, "it is a folder", str(target))
            backup = None
            if target.exists():
                fd, backup = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old")
                os.close(fd)
                os.replace(target, backup)
            done.append((target, backup))
            os.replace(tmp, target)
    except OSError as exc:
        for target, backup in reversed(done):
            try:
                if backup is not None:
                    os.replace(backup, target)
                else:
                    _unlink(target)
            except OSError:
                pass
        for tmp in batch.values():
            _unlink(tmp)
        failed = exc.filename or "a result file"
        raise ResultWriteError(f"cannot write {failed} ({exc.strerror or exc}); no result file was changed, "
                               "the earlier ones are kept") from None
    for _, backup in done:
        if backup is not None:
            _unlink(backup)


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
