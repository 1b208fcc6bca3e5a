"""Building a day, and saying in words why it did not build.

A compiler error names the file and line to fix first (later errors often follow from the
first); a link error ("undefined reference to `d01::spin(long, float*)'") says which function
lab.h declares that kernel.cu does not define, and where lab.h declares it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import List, Optional

from .manifest import Lab, Manifest

# nvcc's front end:  /path/kernel.cu(24): error: expected a ";"
# gcc / clang:       /path/kernel.cu:24:5: error: ...
COMPILER_ERROR = re.compile(r"^(?P<file>[^\s:(][^:(\n]*?)(?:\((?P<l1>\d+)\)|:(?P<l2>\d+)(?::\d+)?):"
                            r"\s*(?:fatal )?error\b", re.M)
PTXAS_ERROR = re.compile(r"^ptxas (?:fatal|error)\s*:.*$", re.M)
UNDEFINED = re.compile(r"undefined reference to [`'](?P<symbol>[^'`]+)'")
MULTIPLE = re.compile(r"multiple definition of [`'](?P<symbol>[^'`]+)'")


@dataclass
class BuildFailure:
    kind: str  # compile | link | other
    file: str = ""
    line: int = 0
    excerpt: List[str] = field(default_factory=list)  # the first errors, as the compiler said
    undefined: List[str] = field(default_factory=list)  # symbols the link missed
    duplicated: List[str] = field(default_factory=list)


def parse_failure(log: str) -> BuildFailure:
    lines = log.splitlines()
    m = COMPILER_ERROR.search(log)
    if m:
        start = log.count("\n", 0, m.start())
        excerpt, errors = [], 0
        for line in lines[start:]:
            if COMPILER_ERROR.match(line):
                errors += 1
                if errors > 3:
                    break
            if line.startswith(("ninja:", "FAILED:", "[")) and excerpt:
                break
            excerpt.append(line)
            if len(excerpt) >= 24:
                break
        return BuildFailure("compile", m.group("file"), int(m.group("l1") or m.group("l2")),
                            excerpt)
    undefined = sorted(set(UNDEFINED.findall(log)))
    duplicated = sorted(set(MULTIPLE.findall(log)))
    if undefined or duplicated:
        return BuildFailure("link", undefined=undefined, duplicated=duplicated,
                            excerpt=[l for l in lines if "undefined reference" in l
                                     or "multiple definition" in l][:6])
    m = PTXAS_ERROR.search(log)
    if m:
        return BuildFailure("compile", excerpt=[m.group(0)])
    interesting = [l for l in lines if re.search(r"error|Error|FAILED", l)]
    return BuildFailure("other", excerpt=(interesting or lines)[-12:])


def _short_name(symbol: str) -> str:
    """'d01::spin(long, float*)' -> 'spin'"""
    return symbol.split("(", 1)[0].split("::")[-1].strip()


def declaration_in(header: str, symbol: str) -> str:
    """'lab.h:42: void spin(int64_t n, float* out);' for a symbol lab.h declares, or ""."""
    name = _short_name(symbol)
    try:
        with open(header, encoding="utf-8", errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        return ""
    for i, line in enumerate(text):
        if re.search(rf"\b{re.escape(name)}\s*\(", line) and not line.lstrip().startswith("//"):
            decl = line.strip()
            j = i
            while not decl.rstrip().endswith((";", "{", ")")) and j + 1 < len(text) and j < i + 4:
                j += 1
                decl += " " + text[j].strip()
            return f"{os.path.basename(header)}:{i + 1}: {decl}"
    return ""


def explain_failure(log: str, m: Manifest, lab: Lab, variant: str,
                    student_file: str = "") -> str:
    """Why (lab, variant) did not build, in words, with the first errors. `student_file`: the
    name the log gives the student's file (the grader writes the path in their submission)."""
    f = parse_failure(log)
    source = lab.programs(variant).source
    shown = student_file or _display(m, source)
    out: List[str] = []
    if f.kind == "compile" and f.file:
        if os.path.abspath(os.path.join(m.binary_dir, f.file)) == os.path.abspath(source) \
                or os.path.abspath(f.file) == os.path.abspath(source) \
                or (student_file and f.file == student_file):
            out.append(f"Your code does not compile: fix {shown}, line {f.line} first.")
        else:
            out.append(f"The build stops in {_display(m, f.file)}, line {f.line} (not your "
                       f"kernel.cu: it may be something your code declares or includes wrong, "
                       f"or the build itself).")
        out.append("The first errors (later ones often follow from the first):")
        out += ["    " + l for l in f.excerpt]
    elif f.kind == "link":
        header = os.path.join(m.source_dir, "labs", lab.name, "lab.h")
        if f.undefined:
            out.append(f"Your code compiles, but the tests cannot be linked with it: lab.h "
                       f"declares these functions and {shown} does not define them (keep each "
                       f"one's namespace, name and parameter types exactly as lab.h has them):")
            for sym in f.undefined:
                decl = declaration_in(header, sym)
                out.append(f"    {sym}" + (f"\n        declared at {decl}" if decl else ""))
        if f.duplicated:
            out.append(f"These functions are defined twice (in {shown} and elsewhere: define "
                       "each once, and mark helpers in a header `inline` or `static`):")
            out += [f"    {sym}" for sym in f.duplicated]
    else:
        out.append("The build failed; the end of its output:")
        out += ["    " + l for l in f.excerpt]
    return "\n".join(out)


def _display(m: Manifest, path: str) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), m.source_dir)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def cmake_build(m: Manifest, targets: List[str], verbose: bool = False,
                jobs: Optional[int] = None) -> subprocess.CompletedProcess:
    cmd = ["cmake", "--build", m.binary_dir, "--target", *targets]
    if jobs:
        cmd += ["-j", str(jobs)]
    if verbose:
        proc = subprocess.run(cmd, text=True, errors="replace", stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        sys.stdout.write(proc.stdout)
        return proc
    return subprocess.run(cmd, text=True, errors="replace", stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
