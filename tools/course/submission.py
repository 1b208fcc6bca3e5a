"""What a student handed in: which kernel.cu is each day's, what is misplaced, what was not used.

A class is a folder of submission folders; each folder's name is its student's id, exactly as
written (Unicode included): `roster()` lists them, and every entry that is not graded (a hidden
folder, a file, a symbolic link) with the reason. No two folders ever become one id.

A submission is a folder. Day <lab> is graded from `labs/<lab>/kernel.cu` or `<lab>/kernel.cu`
(the lab's full name, e.g. d05_warp_programming). Anything else that looks like a day's kernel
(`d05/kernel.cu`, `d05_warp_programming/Kernel.cu`, a flat `d05.cu`) is reported as found in the
wrong place, with what was expected, and not graded: the grade never guesses which file a
student meant. Every file that was not used is listed. A symbolic link anywhere in the folder
is refused with a message and never followed: a student's file is one that is in their folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

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
            try:
                h.update(hashlib.sha1(read_kernel(self.kernels[day], self.folder)).digest())
            except OSError as e:
                h.update(str(e).encode())
        return h.hexdigest()[:16]

    def to_json(self) -> dict:
        return {"student": self.student, "folder": self.folder,
                "kernels": {d: os.path.relpath(p, self.folder) for d, p in self.kernels.items()},
                "misplaced": self.misplaced, "unused": self.unused, "problems": self.problems}


def student_id(name: str) -> str:
    """A folder's name as the student's id: the name itself, Unicode included. Formats that
    need escaping (CSV, XML, JSON, CMake) escape it where they write it."""
    return name


@dataclass
class Student:
    id: str  # the folder's name, exactly
    folder: str  # its absolute path
    dirname: str  # the student's folder in the grader's out folder (students/<dirname>)


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _dirname(name: str) -> str:
    """The student's folder in the grader's output: the id itself when it is plain ASCII that
    every tool takes in a path (nvcc's fatbinary does not take a comma, for one), else the id's
    plain characters and a hash of the whole id, which no other id shares."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]*", name):
        return name
    plain = re.sub(r"[^A-Za-z0-9._@+-]+", "_", name).strip("._")[:40]
    return f"{plain or 'student'}~{hashlib.sha1(name.encode('utf-8')).hexdigest()[:10]}"


def roster(submissions: str) -> Tuple[List[Student], List[Tuple[str, str]]]:
    """The students of a submissions folder, sorted by id, and the entries that are not graded
    with the reason. Two ids that a case-insensitive or Unicode-normalising file system would
    store as one name both keep their own folder in the grader's output: each gets a suffix."""
    students: List[Student] = []
    skipped: List[Tuple[str, str]] = []
    for name in sorted(os.listdir(submissions)):
        path = os.path.join(submissions, name)
        if os.path.islink(path):
            skipped.append((name, "a symbolic link, not a folder: a submission is a folder of "
                                  "its own (links are never followed)"))
        elif not os.path.isdir(path):
            skipped.append((name, "a file, not a folder: each student hands in a folder"))
        elif name.startswith("."):
            skipped.append((name, "a hidden folder (its name starts with '.'): rename it to "
                                  "grade it"))
        else:
            students.append(Student(student_id(name), os.path.abspath(path), _dirname(name)))
    folds: Dict[str, List[Student]] = {}
    for st in students:
        folds.setdefault(_fold(st.id), []).append(st)
    for group in folds.values():
        if len(group) > 1:  # "Ana" and "ana": one folder on a case-insensitive file system
            for st in group:
                if "~" not in st.dirname:
                    st.dirname = f"{st.dirname}~{hashlib.sha1(st.id.encode('utf-8')).hexdigest()[:10]}"
    return students, skipped


def _files(folder: str) -> Tuple[List[str], List[str]]:
    """The regular files of a submission (relative paths) and its symbolic links."""
    out, links = [], []
    for root, dirs, files in os.walk(folder, followlinks=False):
        for d in list(dirs):
            if os.path.islink(os.path.join(root, d)):
                links.append(os.path.relpath(os.path.join(root, d), folder))
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith(".")
                         and not os.path.islink(os.path.join(root, d)))
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(root, f), folder)
            if os.path.islink(os.path.join(root, f)):
                links.append(rel)
                continue
            if f.startswith(".") or f.endswith("~"):
                continue
            out.append(rel)
    return out, links


def read_kernel(path: str, folder: str) -> bytes:
    """A kernel.cu's bytes, refusing anything that is not a regular file inside `folder` (a
    link, a device, a path that resolves elsewhere): OSError with the reason."""
    real = os.path.realpath(path)
    base = os.path.realpath(folder)
    if not real.startswith(base + os.sep):
        raise OSError(f"{path} resolves outside the submission folder")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > MAX_KERNEL_BYTES:
                raise OSError(f"{path} is larger than {MAX_KERNEL_BYTES >> 20} MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


MAX_KERNEL_BYTES = 4 << 20


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
    files, links = _files(folder)
    for rel in links:
        sub.problems.append(f"{rel} is a symbolic link: refused (never followed; a submission "
                            "holds its own files)")
    for lab in labs:  # a link where a day's kernel is expected: that day is refused, in words
        for rel in (f"labs/{lab.name}/kernel.cu", f"{lab.name}/kernel.cu"):
            if rel in links or any(rel.startswith(l + "/") for l in links):
                sub.misplaced.setdefault(lab.day, []).append(
                    f"{rel} is a symbolic link: refused, not graded (hand in the file itself)")
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
            sub.misplaced.setdefault(lab.day, []).extend(
                f"found {rel} — expected labs/{lab.name}/kernel.cu or {lab.name}/kernel.cu "
                "(the file is not graded where it is)" for rel in near)
            used.update(near)  # reported once, as misplaced, not again as unused
    sub.unused = [rel for rel in files if rel not in used
                  and not any(rel in s for msgs in sub.misplaced.values() for s in msgs)]
    return sub
