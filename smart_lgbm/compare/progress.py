"""Progress lines while a comparison runs: one per finished run, periodic ones in between."""

from __future__ import annotations

import time
from typing import TextIO

from .methods import IterationHook, RunRecord
from .report import asri, best_index


class Progress:
    """Writes progress to ``stream`` (stderr by default in the CLI).

    Parameters
    ----------
    stream : text stream
    every_seconds : float
        Minimum wall time between two iteration lines of one run (0 prints every iteration;
        a negative value prints none).
    """

    def __init__(self, stream: TextIO, every_seconds: float = 10.0) -> None:
        self.stream = stream
        self.every = every_seconds
        self.t0 = time.perf_counter()

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def elapsed(self) -> str:
        s = time.perf_counter() - self.t0
        return f"{int(s // 60):d}:{s % 60:04.1f}"

    def note(self, text: str) -> None:
        """A line with the elapsed time in front."""
        self._print(f"[{self.elapsed()}] {text}")

    def run_hook(self, label: str, rounds: int, metric: str) -> IterationHook:
        """A per-iteration hook printing at most every ``every_seconds``."""
        last = [time.perf_counter()]

        def hook(iteration: int, value: float, seconds: float) -> None:
            now = time.perf_counter()
            if self.every >= 0 and now - last[0] >= self.every:
                last[0] = now
                # a peer's metric comes from its model after training: nan until then
                quality = f"{metric} {value:.5g}" if value == value else f"{metric} after training"
                self._print(f"[{self.elapsed()}]     {label}: iteration {iteration}/{rounds}, "
                            f"{quality}, {seconds:.2f} s training")

        return hook

    def run_done(self, label: str, record: RunRecord) -> None:
        """The one line of a finished run."""
        if not record.values:
            self.note(f"{label}: {record.note or 'no iterations'}")
            return
        b = best_index(record.values, record.higher_is_better)
        self.note(
            f"{label}: {record.num_iterations} iterations, {record.metric} {record.values[-1]:.5g} "
            f"(best {record.values[b]:.5g} at {b + 1}), ASRI {asri(record.sampling_rate, record.num_iterations - 1):.4f}, "
            f"{sum(record.seconds):.2f} s training, {record.wall_seconds:.2f} s wall"
            + (f"; {record.note}" if record.note else "")
        )
