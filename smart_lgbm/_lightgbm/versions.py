"""The LightGBM versions whose internals this package is tested against, and the check at import."""

from __future__ import annotations

import re

import lightgbm as lgb

#: LightGBM minor versions whose internals this package is tested against, oldest first
#: (CI runs the whole suite under each: scripts/venv.sh lists the same versions).
SUPPORTED_MINOR_VERSIONS = ("4.6", "4.7")


def _version_range(minors: tuple[str, ...]) -> str:
    """The pip specifier covering exactly the given minor versions (``">=4.6,<4.8"``)."""
    major, last = (int(part) for part in minors[-1].split("."))
    return f">={minors[0]},<{major}.{last + 1}"


#: The supported range as pyproject.toml pins it.
SUPPORTED_LIGHTGBM = _version_range(SUPPORTED_MINOR_VERSIONS)


def check_version(version: str | None = None) -> None:
    """Raise ImportError for a LightGBM outside :data:`SUPPORTED_LIGHTGBM`.

    Parameters
    ----------
    version : str, optional
        A LightGBM version string; the installed ``lightgbm.__version__`` by default.
        Development and pre-releases count as their minor version (``4.7.0.99`` is 4.7).
    """
    version = lgb.__version__ if version is None else version
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None or f"{match[1]}.{match[2]}" not in SUPPORTED_MINOR_VERSIONS:
        raise ImportError(
            f"smart_lgbm supports lightgbm{SUPPORTED_LIGHTGBM} (versions "
            f"{', '.join(v + '.x' for v in SUPPORTED_MINOR_VERSIONS)}); found lightgbm {version}. "
            f"Install a supported one: pip install 'lightgbm{SUPPORTED_LIGHTGBM}'"
        )
