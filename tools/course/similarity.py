"""Submissions that are copies: of the reference solution, or of another student's.

A kernel.cu is compared by its tokens, not its text: comments and spacing are dropped, every
name becomes one token and every number another, so that renaming variables, reformatting or
rewording comments changes nothing. What the starter gives every student (its code is in every
submission) is taken out first, so only the student's own code is compared. The comparison is
winnowing (Schleimer, Wilkerson and Aiken, 2003, the algorithm of MOSS): hashes of every run of
K tokens, of which each window of W hashes keeps its smallest; two files share code where they
share those fingerprints.

A day is flagged when at least SHARE of the student's own fingerprints (and at least MIN_OWN of
them: a one-line exercise is the same in every correct submission) are found in the reference
solution or in another student's file of the same day. A flag is for the instructor to review:
the report and the gradebook say with what the file matches and how much, and the day is not
ranked on the leaderboards; its points stand until the instructor decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Dict, List, Optional, Set, Tuple

K = 12  # tokens per hashed run
W = 8  # hashes per window: any run of W + K - 1 shared tokens is found
SHARE = 0.8
MIN_OWN = 20

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<number>\.?\d(?:[\w.']|[eEpP][+-])*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<punct>::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~=<>?:;,.(){}\[\]#])
  | (?P<space>\s+)
""", re.S | re.X)

# Names that carry the structure of the code: kept as themselves, not made anonymous.
KEYWORDS = set("""
alignas alignof asm auto bool break case catch char class const constexpr const_cast continue
decltype default delete do double dynamic_cast else enum explicit extern false float for friend
goto if inline int long mutable namespace new noexcept nullptr operator private protected public
register reinterpret_cast return short signed sizeof static static_assert static_cast struct
switch template this throw true try typedef typeid typename union unsigned using virtual void
volatile while __global__ __device__ __host__ __shared__ __constant__ __restrict__
__syncthreads __syncwarp threadIdx blockIdx blockDim gridDim warpSize include define pragma
""".split())


def tokens(text: str) -> List[str]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("comment", "space"):
            continue
        value = m.group()
        if kind == "name":
            out.append(value if value in KEYWORDS else "N")
        elif kind == "number":
            out.append("0")
        elif kind == "string":
            out.append('"')
        else:
            out.append(value)
    return out


def fingerprints(text: str) -> Set[int]:
    toks = tokens(text)
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(toks[i:i + K]).encode(),
                                             digest_size=8).digest(), "big")
              for i in range(max(0, len(toks) - K + 1))]
    if len(hashes) <= W:
        return set(hashes)
    return {min(hashes[i:i + W]) for i in range(len(hashes) - W + 1)}


def own(text: str, starter: Set[int]) -> Set[int]:
    """The fingerprints of a submission that the starter does not have: the student's code."""
    return fingerprints(text) - starter


def compare(mine: Set[int], other: Set[int]) -> float:
    """The share of `mine` found in `other`."""
    return len(mine & other) / len(mine) if mine else 0.0


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def flag_class(out: str, grades: List[dict], m=None) -> None:
    """Sets day["similar"] (sentences) on every graded day that matches the reference solution
    or another student's file, marks its benchmark rows not ranked, and writes the grade back.
    The files compared are the grader's copies (students/<dir>/build/<day>/kernel.cu)."""
    labs = {lab.day: lab for lab in (m.labs if m is not None else [])}
    files: Dict[str, List[Tuple[dict, dict, Set[int]]]] = {}
    starters: Dict[str, Set[int]] = {}
    solutions: Dict[str, Set[int]] = {}
    for g in grades:
        for d in g.get("days", []):
            d.pop("similar", None)
            if d.get("status") in (None, "not_submitted"):
                continue
            text = _read(os.path.join(out, "students", g.get("folder") or g["student"], "build",
                                      d["day"], "kernel.cu"))
            if text is None:
                continue
            day = d["day"]
            if day not in starters:
                lab = labs.get(day)
                starter = _read(os.path.join(m.source_dir, "labs", lab.name, "kernel.cu")) \
                    if lab else None
                solution = _read(os.path.join(m.source_dir, "solutions", lab.name, "kernel.cu")) \
                    if lab else None
                starters[day] = fingerprints(starter) if starter else set()
                solutions[day] = own(solution, starters[day]) if solution else set()
            files.setdefault(day, []).append((g, d, own(text, starters[day])))
    changed = set()
    for day, entries in files.items():
        for i, (g, d, mine) in enumerate(entries):
            if len(mine) < MIN_OWN:
                continue
            notes = []
            share = compare(mine, solutions.get(day, set()))
            if share >= SHARE:
                notes.append(f"{share:.0%} of this day's own code (the starter's left out, "
                             "names and comments ignored) is in the reference solution")
            for j, (g2, _, theirs) in enumerate(entries):
                if j == i:
                    continue
                share = compare(mine, theirs)
                if share >= SHARE:
                    notes.append(f"{share:.0%} of this day's own code is in {g2['student']}'s "
                                 "submission")
            if notes:
                d["similar"] = notes
                changed.add(id(g))
                _unrank(out, g, day, "flagged for review: " + "; ".join(notes))
    for g in grades:
        path = os.path.join(out, "students", g.get("folder") or g["student"], "grade.json")
        if g.get("status", "graded") == "graded" and os.path.exists(path):
            tmp = f"{path}.tmp.{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps(g, indent=1, ensure_ascii=False) + "\n")
            os.replace(tmp, path)


def _unrank(out: str, g: dict, day: str, why: str) -> None:
    path = os.path.join(out, "students", g.get("folder") or g["student"], f"bench-{day}.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    for row in doc.get("benchmarks", []):
        if isinstance(row, dict):
            row["error_occurred"] = True
            row["error_message"] = why
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
