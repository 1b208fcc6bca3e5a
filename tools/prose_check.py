#!/usr/bin/env python3
"""The prose a reader sees states results, not the order in which the course was written.

Checks the lessons, the lab READMEs and hints, the README, docs/ and the measurement folders'
READMEs for words that belong to the course's development, not to its content (docs/style.md,
"Prose"):

  - a commit hash (7 to 40 hex digits with at least one letter and one digit, outside code),
  - "session" (a grading run is a "grading run"), "this run", "the first run", "the fourth ...",
  - "not measured" in a table (a cell is measured or the row is gone),
  - run nicknames of the old measurement folders (step6/final2, tuning/rows32, d14-refresh, ...),
  - "before the fix" / "after the fix" / "the old version" (say what the variant is instead).

Usage: python3 tools/prose_check.py [--list] [FILE ...]   (default: every file it covers)
Exit 0: clean; 1: findings, one per line as path:line: what: the line; 2: bad arguments.
A line that must quote such a word (this checker's own documentation) carries
"prose-check: allow" in an HTML comment.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from typing import Iterator, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COVERED = ["README.md", "lessons/*.md", "labs/*/README.md", "labs/*/hints/*.md", "labs/*/*.md",
           "docs/*.md", "results/*/README.md", "results/*/*/*.md", "python/README.md",
           "tools/plots/README.md"]
ALLOW = "prose-check: allow"

RULES: List[Tuple[str, re.Pattern]] = [
    ("a commit hash", re.compile(r"(?<![\w./#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])"
                                 r"[0-9a-f]{7,40}(?![\w-])|\bcommits? [0-9a-f]{7,40}\b")),
    ("the development's sessions", re.compile(r"\bsessions?\b", re.I)),
    ("a run of the development", re.compile(
        r"\b(this|the (third|fourth|fifth|earlier|previous)|an earlier) (run|measurement)\b",
        re.I)),
    ("an unmeasured cell", re.compile(r"\bnot measured\b", re.I)),
    ("a run nickname", re.compile(r"\b(step6/(head|final2?|review)|tuning/[\w-]+|d14-refresh|"
                                  r"days09-14/[\w-]+|first-run|run[- ]?[2-9]\b)", re.I)),
    ("a fix in the course's history", re.compile(
        r"\b(before|after) the (fix|rewrite|refactor)\b|\bthe old version\b", re.I)),
]


def covered_files() -> List[str]:
    out = set()
    for pattern in COVERED:
        out.update(glob.glob(os.path.join(ROOT, pattern)))
    return sorted(out)


def _prose_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code and link targets cut."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
            continue
        if fenced or ALLOW in line:
            continue
        line = re.sub(r"`[^`]*`", "``", line)          # inline code: identifiers, hex, paths
        line = re.sub(r"\]\([^)]*\)", "]()", line)      # link targets: file names
        line = re.sub(r"https?://\S+", "", line)
        yield n, line


def findings(path: str) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        yield f"{os.path.relpath(path, ROOT)}: cannot read: {e}"
        return
    for n, line in _prose_lines(text):
        for what, rx in RULES:
            m = rx.search(line)
            if m:
                yield (f"{os.path.relpath(path, ROOT)}:{n}: {what} ({m.group(0)!r}): "
                       f"{line.strip()[:160]}")


def main(argv: List[str] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", help="files to check (default: every covered file)")
    p.add_argument("--list", action="store_true", help="print the covered files and exit")
    a = p.parse_args(argv)
    files = [os.path.abspath(f) for f in a.files] or covered_files()
    if a.list:
        print("\n".join(os.path.relpath(f, ROOT) for f in files))
        return 0
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        print(f"prose_check.py: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    bad = [line for f in files for line in findings(f)]
    for line in bad:
        print(line)
    if bad:
        print(f"\n{len(bad)} finding(s): the prose states results and cites the current "
              "measurement folder (results/<card>/), not the course's history (docs/style.md, "
              "\"Prose\")", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
