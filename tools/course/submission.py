"""What a student handed in: which kernel.cu is each day's, what is misplaced, what was not used.

A submission is a folder. Day <lab> is graded from `labs/<lab>/kernel.cu` or `<lab>/kernel.cu`
(the lab's full name, e.g. d05_warp_programming). Anything else that looks like a day's kernel
(`d05/kernel.cu`, `d05_warp_programming/Kernel.cu`, a flat `d05.cu`) is reported as found in the
wrong place, with what was expected, and not graded: the grade never guesses which file a
student meant. Every file that was not used is listed.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List

from .manifest import Lab

IGNORED_DIRS = {".git", "__MACOSX", ".svn", ".hg", "build", "__pycache__"}


@dataclass
class Submission:
    student: str
    folder: str
    kernels: Dict[str, str] = field(default_factory=dict)  # day -> the kernel.cu to grade
    misplaced: Dict[str, List[str]] = field(default_factory=dict)  # day -> sentences
    unused: List[str] = field(default_factory=list)  # relative paths
    problems: List[str] = field(default_factory=list)

    def fingerprint(self) -> str:
        h = hashlib.sha1()
        for day in sorted(self.kernels):
            h.update(day.encode())
            with open(self.kernels[day], "rb") as f:
                h.update(hashlib.sha1(f.read()).digest())
        return h.hexdigest()[:16]

    def to_json(self) -> dict:
        return {"student": self.student, "folder": self.folder,
                "kernels": {d: os.path.relpath(p, self.folder) for d, p in self.kernels.items()},
                "misplaced": self.misplaced, "unused": self.unused, "problems": self.problems}


def student_id(name: str) -> str:
    """A folder name as an id safe in file names, CSV cells and benchmark contexts."""
    safe = re.sub(r"[^A-Za-z0-9._@+-]", "_", name).strip("._")
    return safe or "student"


def _files(folder: str) -> List[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.startswith(".") or f.endswith("~"):
                continue
            out.append(os.path.relpath(os.path.join(root, f), folder))
    return out


def _looks_like(rel: str, lab: Lab) -> bool:
    """Whether a file that is not at an expected place was probably meant as `lab`'s kernel."""
    low = rel.lower().replace("\\", "/")
    parts = low.split("/")
    name = parts[-1]
    if not (name.endswith(".cu") or name.endswith(".cuh") or name == "kernel.cu.txt"):
        return False
    day_words = {lab.day, lab.name.lower(), f"day{lab.number}", f"day{lab.number:02d}",
                 f"day_{lab.number}", f"day-{lab.number}"}
    if any(p in day_words or p.startswith(lab.day + "_") or p.startswith(lab.day + "-")
           for p in parts[:-1]):
        return True
    stem = name.rsplit(".", 1)[0]
    return stem in day_words or stem.startswith(lab.day + "_") or stem.startswith(lab.day + "-")


def find(folder: str, labs: List[Lab], student: str = "") -> Submission:
    sub = Submission(student or student_id(os.path.basename(os.path.abspath(folder))),
                     os.path.abspath(folder))
    if not os.path.isdir(folder):
        sub.problems.append(f"{folder} is not a folder")
        return sub
    files = _files(folder)
    used = set()
    for lab in labs:
        for rel in (f"labs/{lab.name}/kernel.cu", f"{lab.name}/kernel.cu"):
            if rel in files:
                if lab.day in sub.kernels:
                    sub.problems.append(f"{lab.day}: both {os.path.relpath(sub.kernels[lab.day], folder)} "
                                        f"and {rel} exist; graded the first")
                    continue
                sub.kernels[lab.day] = os.path.join(sub.folder, rel)
                used.add(rel)
    for lab in labs:
        if lab.day in sub.kernels:
            continue
        near = [rel for rel in files if rel not in used and _looks_like(rel, lab)]
        if near:
            sub.misplaced[lab.day] = [
                f"found {rel} — expected labs/{lab.name}/kernel.cu or {lab.name}/kernel.cu "
                "(the file is not graded where it is)" for rel in near]
            used.update(near)  # reported once, as misplaced, not again as unused
    sub.unused = [rel for rel in files if rel not in used
                  and not any(rel in s for msgs in sub.misplaced.values() for s in msgs)]
    return sub
