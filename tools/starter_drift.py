#!/usr/bin/env python3
"""Check that every starter (labs/dNN_*/kernel.cu) is its solution with TODO blocks cut out.

A starter and its solution share most of their lines: the launchers, the helpers, the
constants, the signatures and the comments on them. When one file changes and the other does
not, the student works against an interface the tests no longer expect, or reads a comment that
is no longer true. This tool reports every such difference.

The rule (docs/style.md, "Starters and solutions"). The two files are aligned line by line,
ignoring whitespace and `[[maybe_unused]]` (a starter needs the attribute on constants that only
its TODOs use, and may say so in a comment line that mentions it). Each file's leading comment
block (every line before the first that is neither a `//` comment nor blank) is its own. The
starter is cut into paragraphs, runs of non-blank lines, and every place where the files differ
must lie in one of these:
  1. A TODO block: a paragraph of the starter holding a `TODO(dNN.` comment of its own day.
     There the solution may have code the starter lacks (what the student writes) and the
     comments may differ (the starter says what to write, the solution why it works). The
     starter's own code (placeholders such as `return 0.0f;`) must lie below a TODO comment:
     among the lines that differ with it or, for a TODO comment in column 0 (one above a
     declaration), anywhere below it in the paragraph. Above a TODO comment only a line that
     begins a line of the solution may differ (a signature the solution writes on one line
     with its body).
  2. An exercise heading: a paragraph that opens a section (its first line is a `// ----` or
     `// ====` rule) right above a TODO block. Only its comments may differ.
  3. A given block: a paragraph whose leading comment says `Given` or `(given)`, code the
     student is handed. Its comments may differ and it may hold code only the starter needs,
     but the solution may not have code there that the starter lacks.
Everything else (a launcher, a helper, a signature, a constant or a comment changed in one file
only) is drift. Lines only the solution has belong to the paragraphs just above and below them,
and pass when either of those would accept them.

Usage: python3 tools/starter_drift.py [--day dNN ...] [--root DIR]
Exit 0 when every day agrees, 1 when a region drifted, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import bisect
import difflib
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parent.parent
DAY_PATTERN = re.compile(r"^d\d\d$")
GIVEN_PATTERN = re.compile(r"^//\s*Given\b|\(given\)")
RULE_PATTERN = re.compile(r"^//\s*(-{8,}|={8,})\s*$")
MAYBE_UNUSED = "[[maybe_unused]]"
SHOWN_LINES = 6  # lines of each side printed per drifted region


def is_blank(line: str) -> bool:
    return not line.strip()


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("//")


def is_code(line: str) -> bool:
    return not is_blank(line) and not is_comment(line)


def comparison_key(line: str) -> str:
    """The line as it is compared: whitespace runs as one space, no [[maybe_unused]] in code."""
    text = " ".join(line.split())
    if not text.startswith("//"):
        text = " ".join(text.replace(MAYBE_UNUSED, " ").split())
    return text


def header_length(lines: Sequence[str]) -> int:
    """How many lines the leading comment block has (comments and blank lines)."""
    for i, line in enumerate(lines):
        if is_code(line):
            return i
    return len(lines)


# ------------------------------------------------------------------------------- alignment


def matching_lines(a: Sequence[str], b: Sequence[str]) -> List[Tuple[int, int]]:
    """Pairs (i, j) of equal lines a[i] == b[j], increasing in both: the alignment.

    Patience-style: within a range, equal first and last lines are paired; then the lines that
    occur exactly once on each side anchor the alignment (the longest run of them in the same
    order) and the gaps between anchors are aligned the same way; a range without such lines
    is left to difflib.SequenceMatcher. Anchoring on unique lines keeps a `}` or a blank line
    from pairing the end of one function with the end of another, which would shift a whole
    signature into a region that differs.
    """
    pairs: List[Tuple[int, int]] = []
    ranges = [(0, len(a), 0, len(b))]
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        count_a, count_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
        where_b = {b[j]: j for j in range(blo, bhi) if count_b[b[j]] == 1}
        anchors = longest_increasing([(i, where_b[a[i]]) for i in range(alo, ahi)
                                      if count_a[a[i]] == 1 and a[i] in where_b])
        if not anchors:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            for block in matcher.get_matching_blocks():
                pairs += [(alo + block.a + k, blo + block.b + k) for k in range(block.size)]
            continue
        pairs += anchors
        starts = [(alo, blo)] + [(i + 1, j + 1) for i, j in anchors]
        ends = anchors + [(ahi, bhi)]
        ranges += [(i0, i1, j0, j1) for (i0, j0), (i1, j1) in zip(starts, ends)]
    return sorted(pairs)


def longest_increasing(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of `pairs` (in increasing first items) whose second items also
    increase, by patience sorting."""
    tails: List[int] = []  # tails[k]: the smallest second item that ends a run of length k + 1
    ends: List[int] = []  # ... and the index in pairs of that run's last pair
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        back[n] = ends[k - 1] if k > 0 else -1
        if k == len(tails):
            tails.append(j)
            ends.append(n)
        else:
            tails[k], ends[k] = j, n
    run: List[Tuple[int, int]] = []
    n = ends[-1] if ends else -1
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


# ------------------------------------------------------------------------------- the rule


@dataclass
class Paragraph:
    """A run of non-blank lines of the starter, lines first..last (indices)."""

    first: int
    last: int
    markers: List[int] = field(default_factory=list)  # the lines that hold TODO(dNN.
    given: bool = False  # its leading comment says Given / (given)
    heading: bool = False  # it opens a section, right above a TODO block

    @property
    def todo(self) -> bool:
        return bool(self.markers)


def paragraphs_of(lines: Sequence[str], marker: str) -> List[Optional[Paragraph]]:
    """For every line of the starter, its Paragraph (None for a blank line and the header)."""
    owner: List[Optional[Paragraph]] = [None] * len(lines)
    ordered: List[Paragraph] = []
    for i in range(header_length(lines), len(lines)):
        line = lines[i]
        if is_blank(line):
            continue
        if i == 0 or owner[i - 1] is None:
            ordered.append(Paragraph(first=i, last=i))
        para = ordered[-1]
        para.last = i
        owner[i] = para
        if marker in line:
            para.markers.append(i)
        if is_comment(line) and all(not is_code(lines[k]) for k in range(para.first, i)):
            para.given = para.given or bool(GIVEN_PATTERN.search(line.strip()))
    # An exercise's heading opens a section (its first line is a rule) right above a TODO block.
    for above, below in zip(ordered, ordered[1:]):
        above.heading = bool(RULE_PATTERN.match(lines[above.first])) and below.todo
    return owner


@dataclass
class Region:
    """Starter lines [s_lo, s_hi) differ from solution lines [r_lo, r_hi) (indices)."""

    s_lo: int
    s_hi: int
    r_lo: int
    r_hi: int


class DayCheck:
    """One day's starter against its solution."""

    def __init__(self, day: str, starter: List[str], solution: List[str]) -> None:
        self.marker = f"TODO({day}."
        self.starter = starter
        self.solution = solution
        self.paragraph = paragraphs_of(starter, self.marker)

    def regions(self) -> List[Region]:
        """Every place where the two files differ, headers left out."""
        # The starter's lines that take part: its body, less the comments on [[maybe_unused]].
        s_index = [i for i in range(header_length(self.starter), len(self.starter))
                   if not (is_comment(self.starter[i]) and MAYBE_UNUSED in self.starter[i])]
        r_index = list(range(header_length(self.solution), len(self.solution)))
        a = [comparison_key(self.starter[i]) for i in s_index]
        b = [comparison_key(self.solution[j]) for j in r_index]
        s_index.append(len(self.starter))
        r_index.append(len(self.solution))
        found = []
        i = j = 0
        for mi, mj in matching_lines(a, b) + [(len(a), len(b))]:
            if mi > i or mj > j:
                if mi > i:
                    s_lo, s_hi = s_index[i], s_index[mi - 1] + 1
                else:  # only the solution has lines here: they follow starter line s_index[i - 1]
                    s_lo = s_hi = s_index[i - 1] + 1 if i > 0 else s_index[0]
                found.append(Region(s_lo, s_hi, r_index[j], r_index[mj]))
            i, j = mi + 1, mj + 1
        return found

    def drifted(self) -> List[Region]:
        return [region for region in self.regions() if not self.allowed(region)]

    def allowed(self, region: Region) -> bool:
        touched: List[Paragraph] = []
        for i in range(region.s_lo, region.s_hi):
            para = self.paragraph[i]
            if para is not None and all(para is not p for p in touched):
                touched.append(para)
        if touched:
            return self.accepts(touched, region)
        # Only the solution has lines here (or the starter only blank ones): they belong to
        # the paragraph just above them or the one just below.
        neighbours = [self.paragraph_near(region.s_lo - 1, -1),
                      self.paragraph_near(region.s_hi, 1)]
        return any(p is not None and self.accepts([p], region) for p in neighbours)

    def paragraph_near(self, i: int, step: int) -> Optional[Paragraph]:
        while 0 <= i < len(self.starter):
            if self.paragraph[i] is not None:
                return self.paragraph[i]
            i += step
        return None

    def accepts(self, paras: List[Paragraph], region: Region) -> bool:
        starter_code = [i for i in range(region.s_lo, region.s_hi) if is_code(self.starter[i])]
        solution_code = any(is_code(line) for line in self.solution[region.r_lo:region.r_hi])
        if all(p.todo for p in paras) and all(self.placeholder(i, region) for i in starter_code):
            return True
        if all(p.todo or p.heading or p.given for p in paras):
            if not starter_code and not solution_code:
                return True
        return all(p.given for p in paras) and not solution_code

    def placeholder(self, i: int, region: Region) -> bool:
        """Whether starter code line i, in a TODO block, may differ from the solution."""
        para = self.paragraph[i]
        assert para is not None
        for m in para.markers:
            if m < i and (region.s_lo <= m or not self.starter[m][:1].isspace()):
                return True  # below a TODO comment of this region, or one in column 0
        key = comparison_key(self.starter[i])
        return any(comparison_key(line).startswith(key)
                   for line in self.solution[region.r_lo:region.r_hi])


# ------------------------------------------------------------------------------- report


def span(path: str, lo: int, hi: int) -> str:
    """path:first-last, 1-based; for an empty side, the line it would follow."""
    if hi <= lo:
        return f"{path}:after {lo}"
    if hi - lo == 1:
        return f"{path}:{lo + 1}"
    return f"{path}:{lo + 1}-{hi}"


def show(prefix: str, lines: Sequence[str]) -> List[str]:
    out = [f"  {prefix} {line}".rstrip() for line in lines[:SHOWN_LINES]]
    if len(lines) > SHOWN_LINES:
        out.append(f"  {prefix} ... ({len(lines) - SHOWN_LINES} more lines)")
    return out


def find_days(root: Path) -> Dict[str, str]:
    """{day: lab directory name} for every labs/dNN_* with a solutions/ counterpart."""
    days: Dict[str, str] = {}
    labs = root / "labs"
    if not labs.is_dir():
        return days
    for lab in sorted(labs.iterdir()):
        day = lab.name[:3]
        if not (lab.is_dir() and DAY_PATTERN.match(day) and lab.name[3:4] == "_"):
            continue
        solution = root / "solutions" / lab.name / "kernel.cu"
        if (lab / "kernel.cu").is_file() and solution.is_file():
            days[day] = lab.name
    return days


def read_lines(path: Path) -> List[str]:
    return path.read_text(encoding="utf-8").splitlines()


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Report where a starter (labs/dNN_*/kernel.cu) differs from its solution "
        "outside its TODO blocks.")
    parser.add_argument("--day", action="extend", nargs="+", default=[], metavar="dNN",
                        help="check only these days (default: every lab with a solution)")
    parser.add_argument("--root", type=Path, default=REPO_ROOT,
                        help="the repository root (default: the one this script is in)")
    args = parser.parse_args(argv)

    days = find_days(args.root)
    wanted = list(dict.fromkeys(args.day)) or sorted(days)
    for day in wanted:
        if not DAY_PATTERN.match(day):
            parser.error(f"'{day}' is not a day: write it as dNN, e.g. d05")
        if day not in days:
            parser.error(f"no labs/{day}_*/kernel.cu with a solutions/ counterpart in {args.root}")
    if not wanted:
        parser.error(f"no labs/dNN_*/kernel.cu with a solutions/ counterpart in {args.root}")

    regions_drifted = days_drifted = 0
    for day in wanted:
        starter_path = f"labs/{days[day]}/kernel.cu"
        solution_path = f"solutions/{days[day]}/kernel.cu"
        check = DayCheck(day, read_lines(args.root / starter_path),
                         read_lines(args.root / solution_path))
        drifted = check.drifted()
        regions_drifted += len(drifted)
        days_drifted += bool(drifted)
        for r in drifted:
            print(f"{span(starter_path, r.s_lo, r.s_hi)} differs from "
                  f"{span(solution_path, r.r_lo, r.r_hi)} outside a TODO block:")
            for line in (show("-", check.starter[r.s_lo:r.s_hi]) +
                         show("+", check.solution[r.r_lo:r.r_hi])):
                print(line)
    if regions_drifted:
        print(f"{plural(regions_drifted, 'drifted region')} in {plural(days_drifted, 'day')}")
        return 1
    print(f"starters and solutions agree outside TODO blocks ({plural(len(wanted), 'day')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
