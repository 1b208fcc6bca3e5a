#!/usr/bin/env python3
"""Planted bugs in copies of the solutions, kept for measuring how strong the tests are.

    python3 tools/mutants.py check [--jobs N] [--build-dir build/default] [--only ID ...]
    python3 tools/mutants.py make-class OUT_DIR [--only ID ...]
    python3 tools/mutants.py score GRADEBOOK.json [--json]

tests/mutants/dNN.json (one file per day) list the mutants: each is ONE exact text replacement ("find", which
must occur exactly once, by "replace") in one solution's kernel.cu, with its kind (correctness:
a test should fail; performance: the timed benchmarks should get slower) and its class (what kind
of mistake it plants: index-overflow, rounding, race, bank-conflicts, ...).

check       applies each mutant to a copy of its solution and compiles that copy with the exact
            nvcc command of the build (ninja -t commands dNN_solution_kernel); reports every
            mutant whose text is not found exactly once or that does not compile. Exit 1 if any.
make-class  writes a synthetic class for `course grade`: OUT_DIR/<mutant id>/labs/<lab>/kernel.cu
            (the mutated solution, one day per student) and, for each day that has a mutant,
            OUT_DIR/reference-<day>/labs/<lab>/kernel.cu (the untouched solution, the student
            that day's mutants are compared with). One reference student per day lets the
            grader take the days in parallel: one student's days are graded one after another.
score       reads the grader's gradebook.json and says, per mutant, whether it was caught: a
            correctness mutant when its day lost correctness points against the reference
            student, a performance mutant when it lost performance points; then the totals per
            kind and per class.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
MUTANTS_DIR = ROOT / "tests" / "mutants"  # dNN.json: one day's mutants
REFERENCE_STUDENT = "reference"  # every day's solution (older classes), or ...


def reference_student(day: str) -> str:
    """... the student that holds one day's solution (what make-class writes)."""
    return f"{REFERENCE_STUDENT}-{day}"


def is_reference(student: str) -> bool:
    return student == REFERENCE_STUDENT or student.startswith(REFERENCE_STUDENT + "-")

KINDS = ("correctness", "performance")
CLASSES = ("index-overflow", "tail", "bounds-read", "bounds-write", "race", "rounding",
           "fused-precision", "timing", "nan", "reduction", "other-correctness",
           "lost-vectorization", "bank-conflicts", "uncoalesced", "redundant-traffic",
           "slow-math", "lost-overlap", "indexing")
FIELDS = ("id", "day", "file", "find", "replace", "kind", "class", "description")

# Points within this of the reference's count as the same (the grader rounds to 0.1 or finer).
POINTS_EPSILON = 1e-6


class MutantError(Exception):
    """A mutant that cannot be applied or a mutants file that is malformed."""


# ------------------------------------------------------------------------------ the mutants


def load_mutants(path: Optional[Path] = None, root: Optional[Path] = None) -> List[dict]:
    """The mutants of `path` (a JSON list, or a folder of them: tests/mutants/, one dNN.json per
    day), checked for shape: every field present, ids unique, kind and class known, the file a
    solution's kernel.cu that exists under `root` (the repository), its day the file's."""
    path = Path(path or MUTANTS_DIR)
    root = root or ROOT
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    mutants = []
    for file in files:
        try:
            with open(file, encoding="utf-8") as f:
                part = json.load(f)
        except ValueError as e:
            raise MutantError(f"{file}: not JSON ({e})") from e
        if not isinstance(part, list):
            raise MutantError(f"{file}: expected a JSON list of mutants")
        mutants += part
    seen = set()
    for k, m in enumerate(mutants):
        where = f"{path}: mutant {k} ({m.get('id', '?') if isinstance(m, dict) else '?'})"
        if not isinstance(m, dict):
            raise MutantError(f"{where}: not an object")
        missing = [f for f in FIELDS if f not in m]
        if missing:
            raise MutantError(f"{where}: missing {', '.join(missing)}")
        if m["id"] in seen:
            raise MutantError(f"{where}: the id is used twice")
        seen.add(m["id"])
        if m["kind"] not in KINDS:
            raise MutantError(f"{where}: kind must be one of {', '.join(KINDS)}")
        if m["class"] not in CLASSES:
            raise MutantError(f"{where}: class must be one of {', '.join(CLASSES)}")
        lab = lab_of(m)
        if not lab.startswith(m["day"] + "_"):
            raise MutantError(f"{where}: {m['file']} is not a file of day {m['day']}")
        if not (root / m["file"]).is_file():
            raise MutantError(f"{where}: {m['file']} does not exist")
        if not m["find"]:
            raise MutantError(f"{where}: find is empty")
        if "equivalent" in m and not (isinstance(m["equivalent"], str) and m["equivalent"]):
            raise MutantError(f"{where}: equivalent must say why the compiled code is the "
                              f"solution's (a non-empty string)")
    return mutants


def lab_of(mutant: dict) -> str:
    """The lab a mutant's file belongs to: solutions/<lab>/kernel.cu -> <lab>."""
    parts = Path(mutant["file"]).parts
    if len(parts) != 3 or parts[0] != "solutions" or parts[2] != "kernel.cu":
        raise MutantError(f"mutant {mutant['id']}: file must be solutions/<lab>/kernel.cu, "
                          f"not {mutant['file']}")
    return parts[1]


def apply_mutant(text: str, mutant: dict) -> str:
    """`text` with the mutant's one replacement made; MutantError unless `find` occurs once."""
    count = text.count(mutant["find"])
    if count != 1:
        raise MutantError(f"the text to replace occurs {count} times in {mutant['file']} "
                          f"(it must occur exactly once)")
    return text.replace(mutant["find"], mutant["replace"])


def select(mutants: List[dict], only: Optional[List[str]]) -> List[dict]:
    if not only:
        return mutants
    unknown = sorted(set(only) - {m["id"] for m in mutants})
    if unknown:
        raise MutantError(f"no mutant with id {', '.join(unknown)}")
    return [m for m in mutants if m["id"] in set(only)]


# ------------------------------------------------------------------------------ check


def compile_command(build_dir: Path, day: str) -> List[str]:
    """The build's own nvcc command for day's solution kernel.cu, as a list of arguments."""
    target = f"{day}_solution_kernel"
    try:
        out = subprocess.run(["ninja", "-C", str(build_dir), "-t", "commands", target],
                             check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise MutantError("ninja is not installed: the compile commands come from the build")
    except subprocess.CalledProcessError as e:
        raise MutantError(f"ninja -t commands {target} failed in {build_dir}: "
                          f"{e.stderr.strip() or e.stdout.strip()}")
    for line in out.splitlines():
        if "solutions/" in line and " -c " in line and "kernel.cu" in line:
            return shlex.split(line)
    raise MutantError(f"no nvcc command for solutions/.../kernel.cu among the commands of {target}")


def retarget(command: List[str], source: str, obj: str, dep: str) -> List[str]:
    """`command` compiling `source` into `obj` (dependencies into `dep`) instead of the
    solution's kernel.cu into the build's object."""
    out = []
    replaced_source = False
    k = 0
    while k < len(command):
        arg = command[k]
        if arg in ("-o", "-MF") and k + 1 < len(command):
            out += [arg, obj if arg == "-o" else dep]
            k += 2
            continue
        if arg.endswith("kernel.cu") and "solutions/" in arg:
            out.append(source)
            replaced_source = True
        else:
            out.append(arg)
        k += 1
    if not replaced_source:
        raise MutantError("the compile command names no solutions/<lab>/kernel.cu to replace")
    return out


def check_one(mutant: dict, command: List[str], build_dir: Path,
              root: Optional[Path] = None) -> Tuple[str, str]:
    """("ok" | "not-found" | "compile-error", details) for one mutant."""
    root = root or ROOT
    text = (root / mutant["file"]).read_text(encoding="utf-8")
    try:
        mutated = apply_mutant(text, mutant)
    except MutantError as e:
        return "not-found", str(e)
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        source = os.path.join(tmp, "kernel.cu")
        with open(source, "w", encoding="utf-8") as f:
            f.write(mutated)
        cmd = retarget(command, source, os.path.join(tmp, "kernel.o"),
                       os.path.join(tmp, "kernel.d"))
        proc = subprocess.run(cmd, cwd=build_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            errors = [ln for ln in lines if "error" in ln] or lines
            return "compile-error", "\n".join(errors[:6])
    return "ok", ""


def cmd_check(args: argparse.Namespace) -> int:
    build_dir = Path(args.build_dir)
    if not (build_dir / "build.ninja").is_file():
        print(f"SKIPPED: {build_dir} is not a configured Ninja build (cmake --preset default "
              f"first, or --build-dir)")
        return 77
    mutants = select(load_mutants(Path(args.mutants)), args.only)
    commands: Dict[str, List[str]] = {}
    for day in sorted({m["day"] for m in mutants}):
        commands[day] = compile_command(build_dir, day)
    results: Dict[str, Tuple[str, str]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(check_one, m, commands[m["day"]], build_dir.resolve()): m
                   for m in mutants}
        for fut in concurrent.futures.as_completed(futures):
            m = futures[fut]
            results[m["id"]] = fut.result()
            status, _ = results[m["id"]]
            print(f"  {status:13} {m['id']}", flush=True)
    bad = [m for m in mutants if results[m["id"]][0] != "ok"]
    print()
    for m in bad:
        status, details = results[m["id"]]
        print(f"{m['id']} ({m['file']}): {status}")
        for line in details.splitlines():
            print(f"    {line}")
    print(f"{len(mutants) - len(bad)} of {len(mutants)} mutants apply and compile"
          + ("" if not bad else f"; {len(bad)} do not"))
    return 1 if bad else 0


# ------------------------------------------------------------------------------ make-class


def make_class(out: Path, mutants: List[dict], root: Optional[Path] = None) -> List[str]:
    """Writes the synthetic class; returns the student folders written."""
    root = root or ROOT
    labs = sorted(p.name for p in (root / "solutions").iterdir()
                  if (p / "kernel.cu").is_file())
    written = []
    days = {m["day"] for m in mutants}
    for lab in labs:
        if lab.split("_")[0] not in days:
            continue
        ref = out / reference_student(lab.split("_")[0])
        dest = ref / "labs" / lab / "kernel.cu"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "solutions" / lab / "kernel.cu", dest)
        written.append(str(ref))
    for m in mutants:
        if is_reference(m["id"]):
            raise MutantError(f"a mutant may not be called '{REFERENCE_STUDENT}' or "
                              f"'{REFERENCE_STUDENT}-...'")
        text = (root / m["file"]).read_text(encoding="utf-8")
        try:
            mutated = apply_mutant(text, m)
        except MutantError as e:
            raise MutantError(f"mutant {m['id']}: {e}")
        dest = out / m["id"] / "labs" / lab_of(m) / "kernel.cu"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(mutated, encoding="utf-8")
        written.append(str(out / m["id"]))
    return written


def cmd_make_class(args: argparse.Namespace) -> int:
    out = Path(args.out_dir)
    mutants = select(load_mutants(Path(args.mutants)), args.only)
    # An equivalent mutant compiles to the solution's machine code: grading it measures nothing.
    for m in [m for m in mutants if m.get("equivalent")]:
        print(f"left out {m['id']}: equivalent ({m['equivalent']})")
    mutants = [m for m in mutants if not m.get("equivalent")]
    if out.exists() and any(out.iterdir()):
        print(f"{out} is not empty: give make-class a new folder", file=sys.stderr)
        return 2
    written = make_class(out, mutants)
    print(f"wrote {len(written)} students to {out}: '{reference_student('dNN')}' (the day's "
          f"solution) for each day with a mutant, and one per mutant (its day only). Grade them "
          f"with: course grade {out}")
    return 0


# ------------------------------------------------------------------------------ score


def day_entry(student: dict, day: str) -> Optional[dict]:
    for d in student.get("days", []) or []:
        if d.get("day") == day:
            return d
    return None


def performance_points(entry: dict) -> Optional[float]:
    perf = entry.get("performance")
    if not isinstance(perf, dict) or perf.get("points") is None:
        return None
    return float(perf["points"])


def score(gradebook: dict, mutants: List[dict]) -> List[dict]:
    """One verdict per mutant: {"id", "kind", "class", "day", "verdict", "detail"} with verdict
    "caught", "missed", "unknown" (not in the gradebook, not graded, no figures to compare) or
    "equivalent" (the mutants file says the compiler turns it back into the solution: no test
    can see it, so it is not counted either way)."""
    students = {s.get("student"): s for s in gradebook.get("students", []) or []}
    verdicts = []
    for m in mutants:
        v = {"id": m["id"], "kind": m["kind"], "class": m["class"], "day": m["day"],
             "verdict": "unknown", "detail": ""}
        verdicts.append(v)
        if m.get("equivalent"):
            v["verdict"], v["detail"] = "equivalent", m["equivalent"]
            continue
        student = students.get(m["id"])
        reference = students.get(reference_student(m["day"])) or students.get(REFERENCE_STUDENT)
        ref_day = day_entry(reference, m["day"]) if reference else None
        if reference is None:
            v["detail"] = (f"no student '{reference_student(m['day'])}' (or "
                           f"'{REFERENCE_STUDENT}') in the gradebook to compare with")
            continue
        if ref_day is None or ref_day.get("status") != "graded":
            v["detail"] = f"the reference's {m['day']} was not graded"
            continue
        if student is None:
            v["detail"] = "not in the gradebook"
            continue
        entry = day_entry(student, m["day"])
        if entry is None:
            v["detail"] = f"no {m['day']} in its grades"
            continue
        if entry.get("status") != "graded":
            v["detail"] = f"{m['day']} was not graded: {entry.get('status')}"
            continue
        if m["kind"] == "correctness":
            got, want = float(entry.get("points", 0.0)), float(ref_day.get("points", 0.0))
            not_run = entry.get("not_run_points") or ref_day.get("not_run_points")
            if not_run and got >= want - POINTS_EPSILON:
                # Part of the day could not run here (no GPU): equal points say nothing.
                v["detail"] = (f"{m['day']}'s tests did not all run here ({not_run:g} points "
                               f"not run: no GPU?); {got:g} points, as the reference")
                continue
            v["verdict"] = "caught" if got < want - POINTS_EPSILON else "missed"
            v["detail"] = f"{got:g} of {entry.get('max_points', '?')} points (reference {want:g})"
        else:
            got_p, want_p = performance_points(entry), performance_points(ref_day)
            if got_p is None or want_p is None:
                v["detail"] = "no performance points to compare (benchmarks not run?)"
                continue
            v["verdict"] = "caught" if got_p < want_p - POINTS_EPSILON else "missed"
            perf_max = (entry.get("performance") or {}).get("max_points", "?")
            v["detail"] = f"{got_p:g} of {perf_max} performance points (reference {want_p:g})"
    return verdicts


def totals(verdicts: List[dict], key: str) -> "OrderedDict[str, Dict[str, int]]":
    """{group: {"caught", "missed", "unknown", "equivalent"}} for key = "kind" or "class", in
    first-seen order of the groups sorted by name."""
    out: "OrderedDict[str, Dict[str, int]]" = OrderedDict()
    for v in sorted(verdicts, key=lambda v: v[key]):
        out.setdefault(v[key], {"caught": 0, "missed": 0, "unknown": 0,
                                "equivalent": 0})[v["verdict"]] += 1
    return out


def rate(t: Dict[str, int]) -> str:
    judged = t["caught"] + t["missed"]
    text = f"{t['caught']} of {judged} caught"
    if judged:
        text += f" ({100.0 * t['caught'] / judged:.0f}%)"
    if t["unknown"]:
        text += f", {t['unknown']} not judged"
    if t.get("equivalent"):
        text += f", {t['equivalent']} equivalent (not counted)"
    return text


def render(verdicts: List[dict]) -> str:
    lines = []
    width = max((len(v["id"]) for v in verdicts), default=10)
    for v in verdicts:
        lines.append(f"{v['verdict']:10} {v['id']:{width}}  {v['kind']}/{v['class']}: {v['detail']}")
    lines.append("")
    lines.append("by kind:")
    for k, t in totals(verdicts, "kind").items():
        lines.append(f"  {k:18} {rate(t)}")
    lines.append("by class:")
    for k, t in totals(verdicts, "class").items():
        lines.append(f"  {k:18} {rate(t)}")
    return "\n".join(lines)


def cmd_score(args: argparse.Namespace) -> int:
    try:
        with open(args.gradebook, encoding="utf-8") as f:
            gradebook = json.load(f)
    except (OSError, ValueError) as e:
        raise MutantError(f"{args.gradebook}: not a gradebook.json that can be read ({e})") from e
    if not isinstance(gradebook, dict):
        raise MutantError(f"{args.gradebook}: not a gradebook (a JSON object with \"students\")")
    verdicts = score(gradebook, select(load_mutants(Path(args.mutants)), args.only))
    if args.json:
        print(json.dumps({"mutants": verdicts,
                          "by_kind": totals(verdicts, "kind"),
                          "by_class": totals(verdicts, "class")}, indent=1))
    else:
        print(render(verdicts))
    has_reference = any(is_reference(str(s.get("student")))
                        for s in gradebook.get("students", []) or [])
    if not has_reference:
        print(f"the gradebook has no reference student ('{reference_student('dNN')}' or "
              f"'{REFERENCE_STUDENT}'): grade the class that make-class wrote (it includes "
              f"them)", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------ main


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mutants", default=str(MUTANTS_DIR),
                   help="the mutants: a JSON file, or a folder of them (default tests/mutants/)")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="apply and compile every mutant")
    c.add_argument("--build-dir", default=str(ROOT / "build" / "default"))
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    c.add_argument("--only", nargs="+", metavar="ID")
    c.set_defaults(run=cmd_check)
    mk = sub.add_parser("make-class", help="write a synthetic class of mutated submissions")
    mk.add_argument("out_dir")
    mk.add_argument("--only", nargs="+", metavar="ID")
    mk.set_defaults(run=cmd_make_class)
    s = sub.add_parser("score", help="which mutants a gradebook caught")
    s.add_argument("gradebook")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--only", nargs="+", metavar="ID",
                   help="score only these mutants (the ones the class was made of); default all")
    s.set_defaults(run=cmd_score)
    args = p.parse_args(argv)
    try:
        return args.run(args)
    except MutantError as e:
        print(f"mutants: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
