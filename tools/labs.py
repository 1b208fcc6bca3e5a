#!/usr/bin/env python3
"""Every lab's manifest (labs/<lab>/lab.json) and what must agree with it.

For each lab: lab.json parses (tools/course/labspec.py), and
  - Exercise k is TODO(dNN.k): every TODO id in the solution and the starter names an exercise
    of the manifest, and every exercise has at least one;
  - the README has "### Exercise k — <title> (lesson <sections>)" for every exercise, in order;
  - the hints (hints.md) have one "## <Suite>" section per graded suite, in order;
  - every suite the manifest names (graded, host, serial) has tests in test_dNN.cu, and the
    tests declare no points of their own (COURSE_POINTS is for an instructor's hidden tests);
  - every TODO id the lesson, the README or the hints cite exists.

Usage: python3 tools/labs.py [--check] [--list] [LAB ...]
  --check (default) prints each problem as path: what, exits 1 if there is any;
  --list prints each lab's exercises (id, title, suites and points, graded rows).
Exit 0: all agree; 1: problems (listed); 2: bad arguments.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from course import hints as course_hints  # noqa: E402
from course import labspec  # noqa: E402

HEADING = re.compile(r"^### Exercise (\d+) — (.+) \(lesson (.+)\)\s*$", re.M)


def labs() -> List[str]:
    return sorted(os.path.basename(os.path.dirname(p))
                  for p in glob.glob(os.path.join(ROOT, "labs", "d[0-9][0-9]_*", "kernel.cu")))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


def check(lab: str) -> List[str]:
    """The problems of one lab, each as 'path: what'."""
    lab_dir = os.path.join(ROOT, "labs", lab)
    spec_path = os.path.join(lab_dir, "lab.json")
    try:
        spec = labspec.load(spec_path)
    except labspec.SpecError as e:
        return [str(e).replace(ROOT + os.sep, "")]
    day, n = spec.day, len(spec.exercises)
    problems = []

    # TODO ids: the solution's marked regions and the generated starter.
    for path in (os.path.join(ROOT, "solutions", lab, "kernel.cu"), os.path.join(lab_dir, "kernel.cu")):
        text = _read(path)
        found = set()
        for m in labspec.TODO_ID.finditer(text):
            if m.group(1) != day:
                continue
            k = int(m.group(2))
            found.add(k)
            if not 1 <= k <= n:
                problems.append(f"{_rel(path)}: TODO({day}.{k}{m.group(3)}) names no exercise "
                                f"(lab.json has {n}: {day}.1 .. {day}.{n})")
        for e in spec.exercises:
            if e.number not in found:
                problems.append(f"{_rel(path)}: no TODO({e.id}) for Exercise {e.number} "
                                f"({e.title})")

    # The README's exercise headings.
    readme = os.path.join(lab_dir, "README.md")
    heads = HEADING.findall(_read(readme))
    want = [(str(e.number), e.title, e.lesson) for e in spec.exercises]
    if heads != want:
        missing = [w for w in want if w not in heads]
        extra = [h for h in heads if h not in want]
        what = []
        if missing:
            what.append("missing " + "; ".join(f"'### Exercise {k} — {t} (lesson {l})'"
                                              for k, t, l in missing))
        if extra:
            what.append("not in lab.json " + "; ".join(f"'### Exercise {k} — {t} (lesson {l})'"
                                                     for k, t, l in extra))
        if not what:
            what.append("the exercise headings are out of order")
        problems.append(f"{_rel(readme)}: " + ", ".join(what))

    # The hints: one section per graded suite, in order.
    hints = os.path.join(lab_dir, "hints.md")
    try:
        sections = list(course_hints.load(hints))  # the parser `course hint` reads them with
    except course_hints.HintsError as e:
        problems.append(f"{_rel(hints)}: {e}")
        sections = spec.suites
    if sections != spec.suites:
        problems.append(f"{_rel(hints)}: sections {sections}, lab.json's suites are "
                        f"{spec.suites} (one '## Suite' each, in order)")

    # The tests: every named suite has tests; no points declared next to them.
    tests = "\n".join(_read(p) for p in sorted(glob.glob(os.path.join(lab_dir, "test_*.cu"))))
    for suite in spec.suites + spec.host_suites + spec.serial_suites:
        if not re.search(r"\b" + re.escape(suite), tests):
            problems.append(f"labs/{lab}/test_{day}.cu: no tests of suite {suite}, which "
                            "lab.json names")
    for m in re.finditer(r"\bCOURSE_POINTS\((\w+)", tests):
        problems.append(f"labs/{lab}/test_{day}.cu: COURSE_POINTS({m.group(1)}, ...): the "
                        "points are in lab.json")

    # Every exercise is timed by a graded row, or says which rows time its code (or why none can).
    for e in spec.exercises:
        if not e.benchmarks and not e.note.strip():
            problems.append(f"labs/{lab}/lab.json: Exercise {e.number} ({e.id}) has no graded "
                            "benchmark rows and no note saying which rows time its code or why "
                            "none can")

    # TODO ids cited anywhere a student reads.
    lesson = glob.glob(os.path.join(ROOT, "lessons", f"{day}_*.md"))
    for path in [readme, hints] + lesson:
        for m in labspec.TODO_ID.finditer(_read(path)):
            if m.group(1) == day and not 1 <= int(m.group(2)) <= n:
                problems.append(f"{_rel(path)}: cites TODO({day}.{m.group(2)}{m.group(3)}), "
                                f"but lab.json has exercises {day}.1 .. {day}.{n}")
    return problems


def describe(lab: str) -> str:
    spec = labspec.load_lab(ROOT, lab)
    lines = [f"{lab}: {spec.title}"]
    for e in spec.exercises:
        suites = ", ".join(f"{s.name} ({s.points:g})" for s in e.suites)
        lines.append(f"  {e.id}  {e.title} (lesson {e.lesson}): {suites}")
        for b in e.benchmarks:
            lines.append(f"         graded row BM_{b}/")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("labs", nargs="*", help="labs to check (default: all), e.g. d12_prefill_attention or d12")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="check (the default)")
    g.add_argument("--list", action="store_true", help="print each lab's exercises")
    a = p.parse_args(argv)
    every = labs()
    chosen = []
    for name in a.labs or every:
        match = [lab for lab in every if lab == name or lab.startswith(name + "_")]
        if not match:
            print(f"labs.py: no lab {name!r} (there are: {', '.join(every)})", file=sys.stderr)
            return 2
        chosen += match
    if a.list:
        try:
            print("\n\n".join(describe(lab) for lab in chosen))
        except labspec.SpecError as e:
            print(f"labs.py: {e}", file=sys.stderr)
            return 1
        return 0
    problems = [line for lab in chosen for line in check(lab)]
    for line in problems:
        print(line)
    if problems:
        print(f"\n{len(problems)} problem(s): labs/<lab>/lab.json is the one description of a "
              "lab's exercises (docs/adding-a-lab.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
