"""Sphinx configuration of smart-lgbm's documentation site.

Build: ``sphinx-build -b html -n -W --keep-going docs docs/_build/html`` (``.ci/docs`` runs it
in the test environment with the ``docs`` extra).  The build needs no network: intersphinx is
off, and references to other projects' objects (numpy, LightGBM, ...) are plain text.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # the checkout's package (an editable install is the same one)

import smart_lgbm  # noqa: E402

project = "smart-lgbm"
author = "the smart-lgbm authors"
copyright = "the smart-lgbm authors, MIT licence"
release = smart_lgbm.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "smart_lgbm_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    # the raw output of `smart-lgbm compare` (tables beside their records); the results page
    # renders them (scripts/render_results.py)
    "results/*/table.md",
    "results/*/*/table.md",
    "results/*/summary.md",
    "results/**/*.json",
]
templates_path = ["_templates"]

# MyST: GitHub-style heading anchors, so that README's and the pages' links such as
# samplers.md#the-adaptive-rate-rateauto work on GitHub and here alike.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# API reference: one page per public name, generated at build time into generated/api/.
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters sections state the types
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Every cross-reference must resolve (-n); other projects' names cannot without intersphinx,
# which would need the network, so they are plain text.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|pandas|pd|lightgbm|lgb|sklearn|dask|distributed|numba|typing|collections|"
               r"pathlib|os|argparse|abc)(\..*)?"),
    (r"py:.*", r"(array-like|ndarray|Booster|Dataset|callable|optional|default|object|sequence|mapping|"
               r"path-like|iterable|dict|list|tuple|str|int|float|bool|None|type)"),
]

# LightGBM's estimator docstrings (fit, predict), shown on the estimators' pages, have a
# "Note" section that numpydoc does not know; it renders them all the same
warnings.filterwarnings("ignore", message="Unknown section Note", category=UserWarning)

html_theme = "furo"
html_title = f"smart-lgbm {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
# the build must not fetch anything; the theme's fonts and scripts are its own files
html_theme_options = {"navigation_with_keys": True}
