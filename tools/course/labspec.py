"""A lab's manifest, labs/<lab>/lab.json: the one place an exercise is described.

    {
      "title": "FlashAttention-2-style prefill attention",
      "timeout": 60,                                  # one test's limit, seconds (optional)
      "sanitizers": ["memcheck", "racecheck"],        # compute-sanitizer tools graded (optional)
      "exercises": [                                  # in the order a student does them
        {"id": "d12.1",                               # Exercise 1 is TODO(d12.1), TODO(d12.1a), ...
         "title": "Which key tiles a block visits",   # the README's "### Exercise 1 — <title>"
         "lesson": "§4",                              # the lesson sections it follows
         "suites": [{"name": "KvTileRange", "points": 10}],  # the test suites that grade it
         "benchmarks": [],                            # the rows a grader times (name/args, no BM_)
         "note": "..."},                              # why those rows (optional)
        ...
      ],
      "host_suites": ["KvTileRange", ...],            # suites that run without a GPU (optional)
      "serial_suites": [...],                         # suites run one at a time, apart (optional)
      "timing_suites": [...],                         # of those, the ones that time the GPU:
                                                      # their run has the GPU alone (optional)
      "notes": {"serial_suites": "why", ...}          # (optional)
    }

CMake reads it (cmake/course.cmake, course_read_lab_spec) for the build and the course
manifest; the course tool and the grader take the points from it; `python3 tools/labs.py
--check` (ctest tools.labs) checks it and everything that must agree with it: the TODO ids of
the solution and the starter, the README's exercise headings, the hints' sections, the tests'
suites, the lessons' TODO references. No ';' anywhere in the file (CMake lists).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
IDENT = re.compile(r"^[A-Z][A-Za-z0-9]*$")
TODO_ID = re.compile(r"\bTODO\(?\s*(d\d\d)\.(\d+)([a-z]*)\b")


class SpecError(Exception):
    """A lab.json that is not a lab's manifest; the message says where and what."""


@dataclass
class Suite:
    name: str
    points: float


@dataclass
class Exercise:
    id: str  # "d12.3"
    number: int  # 3
    title: str
    lesson: str
    suites: List[Suite]
    benchmarks: List[str]
    note: str = ""


@dataclass
class LabSpec:
    path: str
    day: str
    title: str
    exercises: List[Exercise]
    timeout: Optional[float] = None
    sanitizers: List[str] = field(default_factory=list)
    host_suites: List[str] = field(default_factory=list)
    serial_suites: List[str] = field(default_factory=list)
    timing_suites: List[str] = field(default_factory=list)
    notes: Dict[str, str] = field(default_factory=dict)

    @property
    def suites(self) -> List[str]:
        """Every graded suite, in the order of the exercises."""
        return [s.name for e in self.exercises for s in e.suites]

    @property
    def points(self) -> Dict[str, float]:
        return {s.name: s.points for e in self.exercises for s in e.suites}

    @property
    def grade_benchmarks(self) -> str:
        """One Google Benchmark filter for every exercise's rows (CMake builds the same)."""
        rows = [b for e in self.exercises for b in e.benchmarks]
        return f"^BM_({'|'.join(rows)})/" if rows else ""

    def exercise(self, number: int) -> Optional[Exercise]:
        return self.exercises[number - 1] if 1 <= number <= len(self.exercises) else None


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise SpecError(f"{where}: {what}")


def _strings(v, where: str, pattern: Optional[re.Pattern] = None) -> List[str]:
    _need(isinstance(v, list) and all(isinstance(x, str) and x for x in v), where,
          "must be a list of non-empty strings")
    if pattern:
        for x in v:
            _need(bool(pattern.match(x)), where, f"{x!r} is not a test suite name (CamelCase)")
    return list(v)


def parse(doc, path: str, day: str) -> LabSpec:
    """A LabSpec from lab.json's parsed JSON; SpecError says what is wrong and where."""
    _need(isinstance(doc, dict), path, "must be a JSON object")
    known = {"title", "timeout", "sanitizers", "exercises", "host_suites", "serial_suites",
             "timing_suites", "notes"}
    unknown = sorted(set(doc) - known)
    _need(not unknown, path, f"unknown keys {unknown} (known: {sorted(known)})")
    title = doc.get("title")
    _need(isinstance(title, str) and title.strip() != "", path, '"title" must be a string')
    timeout = doc.get("timeout")
    _need(timeout is None or (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                              and timeout > 0), path, '"timeout" must be a positive number')
    sanitizers = _strings(doc.get("sanitizers", []), f"{path}: sanitizers")
    for t in sanitizers:
        _need(t in SANITIZER_TOOLS, f"{path}: sanitizers", f"{t!r} is not one of {SANITIZER_TOOLS}")
    exercises_doc = doc.get("exercises")
    _need(isinstance(exercises_doc, list) and exercises_doc, path,
          '"exercises" must be a non-empty list')
    exercises: List[Exercise] = []
    seen: Dict[str, str] = {}
    for i, e in enumerate(exercises_doc, 1):
        where = f"{path}: exercise {i}"
        _need(isinstance(e, dict), where, "must be an object")
        extra = sorted(set(e) - {"id", "title", "lesson", "suites", "benchmarks", "note"})
        _need(not extra, where, f"unknown keys {extra}")
        _need(e.get("id") == f"{day}.{i}", where,
              f'"id" must be "{day}.{i}" (Exercise k is TODO({day}.k)), not {e.get("id")!r}')
        for k in ("title", "lesson"):
            _need(isinstance(e.get(k), str) and e[k].strip() != "", where, f'"{k}" must be a string')
        _need(e["lesson"].startswith("§"), where, '"lesson" names sections: "§4", "§3, §5-§7"')
        suites_doc = e.get("suites")
        _need(isinstance(suites_doc, list) and suites_doc, where, '"suites" must be a non-empty list')
        suites = []
        for s in suites_doc:
            _need(isinstance(s, dict) and set(s) == {"name", "points"}, where,
                  'each suite is {"name": "Suite", "points": N}')
            _need(isinstance(s["name"], str) and bool(IDENT.match(s["name"])), where,
                  f"{s['name']!r} is not a test suite name (CamelCase)")
            p = s["points"]
            _need(isinstance(p, (int, float)) and not isinstance(p, bool) and p > 0, where,
                  f"{s['name']}: points must be a positive number")
            _need(s["name"] not in seen, where,
                  f"suite {s['name']} is graded twice (also in {seen.get(s['name'])})")
            seen[s["name"]] = e["id"]
            suites.append(Suite(s["name"], float(p)))
        rows = _strings(e.get("benchmarks", []), f"{where}: benchmarks")
        for r in rows:
            _need(not r.startswith(("^", "BM_")) and not r.endswith("/"), f"{where}: benchmarks",
                  f"{r!r}: a row is written as name/args, without ^BM_ or a final /")
            try:
                re.compile(r)
            except re.error as err:
                raise SpecError(f"{where}: benchmarks: {r!r} is not a regular expression ({err})")
        note = e.get("note", "")
        _need(isinstance(note, str), where, '"note" must be a string')
        exercises.append(Exercise(e["id"], i, e["title"], e["lesson"], suites, rows, note))
    notes = doc.get("notes", {})
    _need(isinstance(notes, dict) and all(isinstance(v, str) for v in notes.values()), path,
          '"notes" must map names to strings')
    serial = _strings(doc.get("serial_suites", []), f"{path}: serial_suites", IDENT)
    timing = _strings(doc.get("timing_suites", []), f"{path}: timing_suites", IDENT)
    for t in timing:
        _need(t in serial, f"{path}: timing_suites",
              f"{t} is not in serial_suites (a timing suite is a serial suite whose run has the "
              "GPU to itself)")
    return LabSpec(path=path, day=day, title=title, exercises=exercises,
                   timeout=float(timeout) if timeout is not None else None,
                   sanitizers=sanitizers,
                   host_suites=_strings(doc.get("host_suites", []), f"{path}: host_suites", IDENT),
                   serial_suites=serial, timing_suites=timing,
                   notes=dict(notes))


def load(path: str) -> LabSpec:
    """labs/<lab>/lab.json, parsed and checked."""
    lab = os.path.basename(os.path.dirname(os.path.abspath(path)))
    m = re.match(r"^(d\d\d)_", lab)
    if not m:
        raise SpecError(f"{path}: the lab folder must be named dNN_topic, not {lab!r}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e}") from None
    if ";" in text:
        raise SpecError(f"{path}: line {text[:text.index(';')].count(chr(10)) + 1}: no ';' "
                        "in lab.json (CMake reads it as lists)")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SpecError(f"{path}: not JSON: {e}") from None
    return parse(doc, path, m.group(1))


def load_lab(root: str, lab: str) -> LabSpec:
    return load(os.path.join(root, "labs", lab, "lab.json"))
