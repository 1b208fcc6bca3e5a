#!/usr/bin/env python3
"""The starters are generated from the solutions: one source for every kernel.

A lab's kernel lives in its solution, solutions/<lab>/kernel.cu. Where the student's file must
differ (a TODO instead of the code, a comment that says what to write instead of why it works),
the solution holds a marked region:

    // >>> STARTER d01.1
    //|  // TODO(d01.1): compute this thread's index i ...
    // === SOLUTION
      const std::int64_t i = ...;
      if (i < n) c[i] = a[i] + b[i];
    // <<< d01.1

The `//|` lines are what the student's file has instead of the solution's lines below them
(each verbatim after the `//|`, its indentation included; `//|` alone is an empty line); the id
says which exercise the region belongs to (none for a region that only words a comment for the
student). Everything outside the regions is the same in both files. To the compiler the markers
and the `//|` lines are comments: the solution compiles as written.

    python3 tools/starters.py                # write every labs/<lab>/kernel.cu
    python3 tools/starters.py --check        # exit 1 if a committed starter differs (ctest;
                                             # 77, skipped, without clang-format 14, which lays
                                             # the generated file out)
    python3 tools/starters.py --day d02 ...  # only these days

`course reset <day>` writes the starter the same way (tools/course/starter.py).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path
from typing import List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent

OPEN = re.compile(r"^\s*// >>> STARTER(?: (d\d\d\.[0-9a-z]+))?\s*$")
SPLIT = re.compile(r"^\s*// === SOLUTION\s*$")
CLOSE = re.compile(r"^\s*// <<<(?: (d\d\d\.[0-9a-z]+))?\s*$")
STARTER_LINE = re.compile(r"^\s*//\|(.*)$")


class MarkerError(Exception):
    """A solution whose regions are not well formed; the message names the line."""


def generate(solution: str, where: str = "kernel.cu") -> str:
    """The starter a marked solution describes."""
    out: List[str] = []
    state = "code"  # code | starter | solution
    opened = 0
    region_id: Optional[str] = None
    for number, line in enumerate(solution.splitlines(keepends=True), 1):
        text = line.rstrip("\n")
        if state == "code":
            m = OPEN.match(text)
            if m:
                state, opened, region_id = "starter", number, m.group(1)
            elif SPLIT.match(text) or CLOSE.match(text) or STARTER_LINE.match(text):
                raise MarkerError(f"{where}:{number}: {text.strip()} outside a STARTER region")
            else:
                out.append(line)
        elif state == "starter":
            m = STARTER_LINE.match(text)
            if m:
                out.append(m.group(1) + ("\n" if line.endswith("\n") else ""))
            elif SPLIT.match(text):
                state = "solution"
            else:
                raise MarkerError(f"{where}:{number}: the STARTER region opened at line {opened} "
                                  "holds a line that is not `//|...` before `// === SOLUTION`")
        else:
            m = CLOSE.match(text)
            if m:
                if m.group(1) != region_id:
                    raise MarkerError(f"{where}:{number}: `// <<<` closes {m.group(1)!r}, the "
                                      f"region at line {opened} opened {region_id!r}")
                state = "code"
            elif OPEN.match(text) or SPLIT.match(text) or STARTER_LINE.match(text):
                raise MarkerError(f"{where}:{number}: a marker inside the solution part of the "
                                  f"region opened at line {opened}")
    if state != "code":
        raise MarkerError(f"{where}: the STARTER region opened at line {opened} is not closed")
    return "".join(out)


def strip(solution: str) -> str:
    """The solution without its markers and starter lines (what the code is to a reader of
    the solution alone; what the compiler sees, less comments)."""
    return "".join(l for l in solution.splitlines(keepends=True)
                   if not (OPEN.match(l.rstrip("\n")) or SPLIT.match(l.rstrip("\n"))
                           or CLOSE.match(l.rstrip("\n")) or STARTER_LINE.match(l.rstrip("\n"))))


def mark(solution: str, starter: str, day: str) -> str:
    """A marked solution from a solution and its starter (used once, to convert the course; kept
    for a lab added with both files written by hand): every place where they differ becomes a
    region, its id the first TODO(dNN.k) of the starter's lines there, or, for a region of code
    without one, the id of a region at most three lines away (the same exercise's code)."""
    a = solution.splitlines(keepends=True)
    b = starter.splitlines(keepends=True)
    pieces: List[Tuple[str, object]] = []  # ("equal", lines) | ("region", [id, ours, theirs])
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            pieces.append(("equal", a[i1:i2]))
            continue
        ours, theirs = a[i1:i2], b[j1:j2]
        ids = re.findall(rf"TODO\(({re.escape(day)}\.[0-9a-z]+)\)", "".join(theirs))
        pieces.append(("region", [ids[0] if ids else "", ours, theirs]))

    def is_code(lines: List[str]) -> bool:
        return any(l.strip() and not l.strip().startswith("//") for l in lines)

    for k, (kind, value) in enumerate(pieces):
        if kind != "region" or value[0] or not (is_code(value[1]) or is_code(value[2])):
            continue
        for step in (-2, 2):  # the region before or after, across at most three equal lines
            n = k + step
            if 0 <= n < len(pieces) and pieces[n][0] == "region" and pieces[n][1][0] \
                    and len(pieces[k + step // 2][1]) <= 3:
                value[0] = pieces[n][1][0]
                break
    out: List[str] = []
    for kind, value in pieces:
        if kind == "equal":
            out += value
            continue
        rid, ours, theirs = value
        rid = f" {rid}" if rid else ""
        sample = next((l for l in ours + theirs if l.strip()), "")
        indent = sample[:len(sample) - len(sample.lstrip())] if not sample.startswith("//") else ""
        out.append(f"{indent}// >>> STARTER{rid}\n")
        for l in theirs:
            out.append(f"{indent}//|{l.rstrip(chr(10))}\n")
        out.append(f"{indent}// === SOLUTION\n")
        out += ours
        out.append(f"{indent}// <<<{rid}\n")
    return "".join(out)


def labs(root: Path, days: List[str]) -> List[str]:
    names = sorted(p.name for p in (root / "solutions").iterdir()
                   if p.is_dir() and re.match(r"^d\d\d_", p.name))
    return [n for n in names if not days or n[:3] in days]


def clang_format() -> str:
    """clang-format 14 (the tree's version: docs/style.md), or ""."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    for name in ("clang-format-14", "clang-format"):
        tool = shutil.which(name)
        if tool:
            p = subprocess.run([tool, "--version"], capture_output=True, text=True)
            if "version 14." in p.stdout:
                return tool
    return ""


def formatted(text: str, root: Path, lab: str) -> str:
    """The starter as clang-format lays it out (its comments are aligned without the solution's
    markers between them), when clang-format 14 is installed; else as generated."""
    import subprocess  # noqa: PLC0415

    tool = clang_format()
    if not tool:
        return text
    p = subprocess.run([tool, f"--assume-filename={root / 'labs' / lab / 'kernel.cu'}",
                        f"--style=file:{root / '.clang-format'}"], input=text,
                       capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else text


def starter_of(root: Path, lab: str) -> str:
    path = root / "solutions" / lab / "kernel.cu"
    text = generate(path.read_text(encoding="utf-8"), f"solutions/{lab}/kernel.cu")
    return formatted(text, root, lab)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a committed starter is not what the solution "
                   "generates")
    p.add_argument("--day", nargs="*", default=[])
    p.add_argument("--root", default=str(ROOT))
    args = p.parse_args(argv)
    root = Path(args.root)
    if args.check and not clang_format():
        print("starters: skipped: clang-format 14 lays the generated starters out, and it is not "
              "installed here (scripts/setup.sh; CI installs it)")
        return 77
    bad = 0
    for lab in labs(root, args.day):
        target = root / "labs" / lab / "kernel.cu"
        try:
            text = starter_of(root, lab)
        except MarkerError as e:
            print(f"starters: {e}")
            bad += 1
            continue
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current == text:
            continue
        if args.check:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                             f"labs/{lab}/kernel.cu (committed)",
                                             f"labs/{lab}/kernel.cu (generated)", lineterm="",
                                             n=1))
            print(f"starters: labs/{lab}/kernel.cu is not what solutions/{lab}/kernel.cu "
                  "generates; run tools/starters.py and commit the starter:")
            print("\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else ""))
            bad += 1
        else:
            target.write_text(text, encoding="utf-8")
            print(f"starters: wrote labs/{lab}/kernel.cu")
    if args.check and not bad:
        print(f"starters: every starter is what its solution generates ({len(labs(root, args.day))} labs)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
