"""No development history in the project's tracked text files.

Code, docs and results speak to users in the present tense: what the code does and why, and
where a constant comes from, by the committed file that measured it.  How the project got
there belongs in commit messages and, for what users see, in CHANGELOG.md.  This test fails
on the phrases that mark a lab notebook: a numbered work session ("session 12", "sessions
20 and 21"), a "development run" or "dev run", a "contended" machine, a "helper" (the
word: identifiers such as ``_helper`` or ``helper_x`` are not words), and ideas "tried and
dropped" or "tried and rejected".

Checked: every file ``git ls-files`` lists that reads as UTF-8 text, but CHANGELOG.md (whose
subject is history) and this file (which names the phrases).  A phrase may run across a line
break (a wrapped comment): each line is checked together with the next, comment markers
between them dropped.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: name -> pattern (case-insensitive), each as narrow as the phrase it stands for
PATTERNS = {
    "session N": r"\bsessions?\s+\d+",
    "development run": r"\bdevelopment\s+runs?\b",
    "dev run": r"\bdev\s+runs?\b",
    "contended": r"\bcontended\b",
    "helper": r"\bhelpers?\b",
    "tried and dropped/rejected": r"\btried,?\s+(?:and\s+)?(?:then\s+)?(?:dropped|rejected)\b",
}
_COMPILED = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in PATTERNS.items()}
#: files whose subject is history, or that name the phrases to find them
EXEMPT = {"CHANGELOG.md", "tests/test_no_history.py"}
#: what may stand between two lines of one wrapped comment or quote
_CONTINUATION = re.compile(r"^\s*(?:#+|//+|\*|>|--)?\s*")


#: a quick look for the phrases' first words: a file without any needs no line-by-line check
_ANY = re.compile(r"session|development|\bdev\b|contended|helper|tried", re.IGNORECASE)


def findings(text: str) -> list[tuple[int, str, str]]:
    """(line number, phrase name, the line) of every history phrase in ``text``."""
    if not _ANY.search(text):
        return []
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        following = _CONTINUATION.sub("", lines[i + 1]) if i + 1 < len(lines) else ""
        joined = f"{line.rstrip()} {following}"
        for name, pattern in _COMPILED.items():
            match = pattern.search(joined)
            # a match that lies wholly on the next line is that line's finding
            if match and match.start() <= len(line.rstrip()):
                out.append((i + 1, name, line.strip()))
    return out


def tracked_text_files(root: Path) -> list[Path]:
    """Files ``git ls-files`` lists under ``root`` that read as UTF-8 text, but the exempt ones."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    paths = []
    for name in listed.decode().split("\0"):
        if not name or name in EXEMPT:
            continue
        path = root / name
        try:
            data = path.read_bytes()
            if b"\0" in data:
                continue
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # binary (pictures, compressed data) or gone from the work tree
        paths.append(path)
    return paths


def scan(root: Path) -> list[str]:
    """``path:line: [phrase] text`` for every history phrase in the tracked text files."""
    out = []
    for path in tracked_text_files(root):
        for line, name, text in findings(path.read_text(encoding="utf-8")):
            out.append(f"{path.relative_to(root)}:{line}: [{name}] {text[:160]}")
    return out


def _git_checkout(root: Path) -> bool:
    try:
        return subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _git_checkout(ROOT), reason="not a git checkout: no list of tracked files")
def test_tracked_files_carry_no_development_history():
    found = scan(ROOT)
    files = sorted({f.split(":")[0] for f in found})
    assert not found, (f"{len(found)} history phrase(s) in {len(files)} file(s) ({', '.join(files)}); say what "
                       "the code does and why, cite committed result files, and keep history in commit messages "
                       "and CHANGELOG.md:\n" + "\n".join(found))


@pytest.mark.parametrize("text, name", [
    ("measured in session 25's run", "session N"),
    ("Sessions 20 and 21 reran it", "session N"),
    ("(a development run on a9a, not committed)", "development run"),
    ("in contended dev runs (old and new code", "dev run"),
    ("the machine was contended", "contended"),
    ("another Helper moves these files", "helper"),
    ("the kernel compiles the helpers it calls", "helper"),
    ("a test of the structure itself was tried and rejected", "tried and dropped/rejected"),
    ("Alternatives tried, then dropped", "tried and dropped/rejected"),
    ("# was tried and\n# dropped because it was slower", "tried and dropped/rejected"),
])
def test_each_phrase_is_found(text, name):
    assert name in {n for _, n, _ in findings(text)}


@pytest.mark.parametrize("text", [
    "a Dask session runs the workers",          # no number after it
    "sessions of the scheduler",
    "the _helper function and helper_x",      # identifiers, not the word
    "helpful, unhelpful",
    "tried every spectrum; none dropped a row",  # the words, not the phrase
    "the development of the model over 300 iterations runs fast",
    "a lock that is uncontended",
])
def test_legitimate_text_is_not_flagged(text):
    assert findings(text) == []


def test_a_planted_phrase_in_a_tracked_file_fails_the_scan(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\nThe rate grows when the noise dominates.\n")
    (tmp_path / "CHANGELOG.md").write_text("Session 3 added the rate.\n")  # exempt: history is its subject
    (tmp_path / "untracked.md").write_text("session 4\n")                   # not tracked: not checked
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\0session 5")           # binary: not checked
    git("add", "docs/page.md", "CHANGELOG.md", "picture.png")
    assert scan(tmp_path) == []
    (tmp_path / "docs" / "page.md").write_text("# Page\n\nThe rate grows (session 12's dev run).\n")
    found = scan(tmp_path)
    assert [f.split(": [")[0] for f in found] == ["docs/page.md:3", "docs/page.md:3"]
    assert {f.split("[")[1].split("]")[0] for f in found} == {"session N", "dev run"}
