"""Every relative link of the Markdown pages resolves: the file, and the heading an anchor names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_links", ROOT / "scripts" / "check_links.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _git_checkout() -> bool:
    try:
        return subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _git_checkout(), reason="not a git checkout: no list of tracked files")
def test_every_relative_link_of_the_markdown_pages_resolves(checker):
    files = checker.markdown_files(ROOT)
    assert ROOT / "README.md" in files and ROOT / "docs" / "samplers.md" in files
    problems = [p for f in files for p in checker.broken_links(f, ROOT)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_slugs_are_githubs(checker):
    assert checker.slug('The adaptive rate (`rate="auto"`)') == "the-adaptive-rate-rateauto"
    assert checker.slug("Leaf values from every row (`refit_leaves`)") == "leaf-values-from-every-row-refit_leaves"
    assert checker.slug("SecondOrder's regulariser (paper Alg. 3)") == "secondorders-regulariser-paper-alg-3"
    assert checker.anchors("# A\n\n## Notes\n\n```\n# not a heading\n```\n## Notes\n") == {"a", "notes", "notes-1"}


def test_broken_links_are_found_and_good_ones_pass(checker, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## The `rate` key\n")
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## Here\n\n"
        "[fine](other.md#the-rate-key) [self](#here) [web](https://example.org/x.md) [folder](../docs)\n"
        "`[in code](missing.md)`\n\n```\n[in a block](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](other.md#no-such) ![pic](img/none.png) [self bad](#nowhere)\n"
        "[outside](../../elsewhere.md)\n")
    problems = checker.broken_links(tmp_path / "docs" / "page.md", tmp_path)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "missing.md (no such file)",
        "other.md#no-such (no heading #no-such in docs/other.md)",
        "img/none.png (no such file)",
        "#nowhere (no heading #nowhere in docs/page.md)",
        "../../elsewhere.md (points outside the repository)",
    ]
    assert all(p.startswith("docs/page.md:") for p in problems)
