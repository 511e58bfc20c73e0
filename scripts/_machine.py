"""The machine line of a benchmark's Markdown output (shared by the bench_* scripts)."""

from __future__ import annotations

import os
import platform


def machine_line() -> str:
    """``Machine: <arch>, <cores> cores, Python <version>; load average at the end <load>``,
    flagged when the load exceeds the core count (other work then skewed the times)."""
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    return (f"Machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}; "
            f"load average at the end {load:.1f}"
            + (" (above the core count: other work skewed these times)." if load > cores else "."))
