"""Every ```python block of README.md and docs/*.md runs (issue #21.4).

A page's blocks run in order in one namespace, as a reader following the page would run
them, starting from the small-data PRELUDE below and nothing else.  Each block imports
the modules it uses itself (so it can be copied alone: a missing ``import`` fails here);
data it uses without defining (``X``, ``y``, ``dtrain``...) comes from the prelude or an
earlier block of the page.

A block may be skipped only by an HTML comment right above it that gives the reason,
``<!-- docs-test: skip (needs a Dask cluster) -->``; a skipped block is still compiled and
checked for names used before anything defines them (the usual missing import).
Warnings from smart_lgbm (an example that, say, trains no trees) fail the block.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: The data every block may use, stated here once: LightGBM's bundled HIGGS sample (real,
#: its first 3,000 training rows and its 500 test rows, 28 dense features) and its LambdaRank sample.
PRELUDE = '''
import lightgbm as lgb
import numpy as np
from smart_lgbm.datasets import load_higgs_sample, load_rank_sample

(X, y), (X_val, y_val) = load_higgs_sample()
X, y = X[:3000], y[:3000]
X_test = X_val
w = np.random.default_rng(0).uniform(0.5, 1.5, size=len(y))       # instance weights
dtrain = lgb.Dataset(X, y)
params = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1, "seed": 1}
(X_rank, y_rank, group), _ = load_rank_sample()
'''
PRELUDE_NAMES = {"X", "y", "X_val", "y_val", "X_test", "w", "dtrain", "params", "X_rank", "y_rank", "group"}

_BLOCK = re.compile(r"(?:<!--\s*docs-test:\s*(?P<marker>[^>]*?)\s*-->\s*\n)?^```python\n(?P<code>.*?)^```",
                    re.MULTILINE | re.DOTALL)
_SKIP = re.compile(r"skip\s*\((?P<reason>[^)]+)\)")


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason or None) of every ```python block of a page."""
    text = page.read_text()
    out = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start("code"))
        reason = None
        if match.group("marker") is not None:
            skip = _SKIP.fullmatch(match.group("marker"))
            if skip is None or not skip.group("reason").strip():
                raise AssertionError(f"{page.name}:{line}: a docs-test marker must read 'skip (reason)', "
                                     f"got {match.group('marker')!r}")
            reason = skip.group("reason").strip()
        out.append((line, match.group("code"), reason))
    return out


def _free_names(code: str, defined: set[str]) -> set[str]:
    """Names a block loads that neither it nor ``defined`` defines; adds the block's
    definitions (not its imports) to ``defined``.

    Modules must be imported in the block that uses them, so that each block can be
    copied alone; data and classes may come from the prelude or an earlier block.
    """
    tree = ast.parse(code)
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            own.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.arg):
            own.add(node.arg)
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            and node.id not in defined | own and not hasattr(builtins, node.id)}


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


PAGES_WITH_CODE = [p for p in PAGES if blocks(p)]


def test_the_pages_with_code_are_found():
    names = {_page_id(p) for p in PAGES_WITH_CODE}
    assert {"README.md", "docs/objective.md", "docs/samplers.md", "docs/sklearn.md"} <= names


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=_page_id)
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks save models: keep them out of the checkout
    data: dict = {}
    exec(compile(PRELUDE, "<docs prelude>", "exec"), data)
    namespace = {name: data[name] for name in PRELUDE_NAMES}  # data only: no module
    defined = set(PRELUDE_NAMES)
    skipped = []
    for line, code, reason in blocks(page):
        where = f"{_page_id(page)}:{line}"
        missing = _free_names(code, defined)
        assert not missing, f"{where}: the block uses {sorted(missing)}, which nothing before it defines " \
                            f"(a missing import?); prelude names: {sorted(PRELUDE_NAMES)}"
        if reason is not None:
            skipped.append(f"{where} ({reason})")
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(code, where, "exec"), namespace)
        ours = [w for w in caught if "smart_lgbm" in str(w.filename) or "smart_lgbm" in str(w.message)
                or w.filename == where]
        assert not ours, f"{where}: the block warns: {ours[0].message}"
    if skipped and len(skipped) == len(blocks(page)):
        pytest.skip("; ".join(skipped))  # nothing ran: say so, with the reasons
