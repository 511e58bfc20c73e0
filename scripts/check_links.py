#!/usr/bin/env python
"""Check every relative link of the project's Markdown files: the file exists, and so does
the heading an ``#anchor`` names.

Usage: python scripts/check_links.py [FILE.md ...]   (default: every tracked *.md file)

Links are ``[text](target)`` and ``![alt](target)`` outside code; web links (``http:``,
``https:``, ``mailto:``) are not followed, so the check needs no network.  An anchor must be
a heading's slug as GitHub (and the documentation site, ``myst_heading_anchors``) makes it:
lower case, punctuation but ``-`` and ``_`` dropped, spaces as ``-``, a repeated slug
suffixed ``-1``, ``-2``...  Exits 1 and lists each broken link as ``file:line: target (why)``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _prose_lines(text: str, keep_code: bool = False) -> Iterable[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, inline code removed
    unless ``keep_code``."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line.lstrip())
        if match:
            if fence is None:
                fence = match.group(1)
                continue
            if line.lstrip().startswith(fence):
                fence = None
                continue
        if fence is None:
            yield number, line if keep_code else _INLINE_CODE.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text (repeats numbered as GitHub numbers them)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(text, keep_code=True):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    for name in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
        out.add(name)
    return out


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: target (why)`` for every relative link of ``path`` that does not resolve."""
    text = path.read_text(encoding="utf-8")
    problems = []
    cache: dict[Path, set[str]] = {}
    for number, line in _prose_lines(text):
        for target in _LINK.findall(line):
            if _EXTERNAL.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = path if not file_part else (path.parent / file_part).resolve()
            where = f"{path.relative_to(root)}:{number}: {target}"
            if file_part and root not in (dest, *dest.parents):
                problems.append(f"{where} (points outside the repository)")
            elif not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.is_file() and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest.read_text(encoding="utf-8"))
                if anchor not in cache[dest]:
                    problems.append(f"{where} (no heading #{anchor} in {dest.relative_to(root)})")
            elif anchor and dest.is_dir():
                problems.append(f"{where} (an anchor in a folder)")
    return problems


def markdown_files(root: Path = ROOT) -> list[Path]:
    """The tracked Markdown files under ``root``."""
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], cwd=root, capture_output=True, check=True).stdout
    return [root / name for name in listed.decode().split("\0") if name and (root / name).is_file()]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    files = [Path(a).resolve() for a in args] or markdown_files()
    problems = [p for f in files for p in broken_links(f)]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"check_links: {len(files)} files, {len(problems)} broken link(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
