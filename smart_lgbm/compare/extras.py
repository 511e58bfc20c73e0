"""Optional dependencies of the comparison harness: which extra brings what, and the error
that names it.

``import smart_lgbm`` and training never need them; a comparison that does is refused
before anything trains, naming the extra to install.
"""

from __future__ import annotations

import importlib.util


class MissingExtraError(ImportError):
    """An optional dependency of the comparison harness (one of its extras) is missing."""


def install_hint(extra: str) -> str:
    """How to install pyproject.toml's ``extra``."""
    return f"pip install 'smart-lgbm[{extra}]' (from a checkout: pip install '.[{extra}]')"


#: How to install what the comparison's plots need (pyproject.toml's ``compare`` extra).
INSTALL_EXTRA = install_hint("compare")
#: How to install XGBoost and CatBoost (pyproject.toml's ``peers`` extra).
INSTALL_PEERS = install_hint("peers")


def require_modules(modules: dict[str, str], extra: str) -> None:
    """Refuse when a module of ``modules`` (module -> what needs it) cannot be found.

    Raises
    ------
    MissingExtraError
        Naming the modules, what needs them and the extra that installs them.
    """
    missing = {module: why for module, why in modules.items() if importlib.util.find_spec(module) is None}
    if missing:
        what = "; ".join(f"{why} needs {module}" for module, why in missing.items())
        raise MissingExtraError(f"{what}, which is not installed; install the {extra!r} extra: {install_hint(extra)}")
