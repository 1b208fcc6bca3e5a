"""`course grade <submissions>`: a class's gradebook, through ctest, missing nothing.

For every student (every subfolder of the submissions folder; its name is the student's id):
  1. find each day's kernel.cu (submission.py): misplaced files and links are reported, never
     guessed or followed;
  2. check its #include lines, compile it in the sandbox and link the day's programs against the
     class build (classbuild.py); check the object (objcheck.py: what it defines and calls); a
     day that is refused, does not compile or does not link is a failed day with the message,
     and never hides another day;
  3. run the day's tests through ctest in the student's folder (<out>/students/<id>/): the
     student's program runs in the sandbox (sandbox.py) and records what each test observes;
     every case it reports passed is run again in the reference program with those
     observations (testrun.py): that verdict counts. The SASS checks read the student's compiled
     code; compute-sanitizer's memcheck/racecheck run, in the sandbox too, where the lab asks;
  4. for each day whose tests all passed, time the graded rows (lab.json) (the student's program
     in the sandbox, fresh inputs of its own) and judge them here against the reference
     solution's rows measured in the same grading session: the rows, their physical floors and
     their times are the reference's, the student's program only contributes its times;
  5. write grade.json, report.md (for the student) and junit.xml.
Then the class files: gradebook.json, gradebook.csv, junit.xml, with one row per submission
folder of the roster and the folders not graded with the reason; similar submissions are flagged
(similarity.py). A student already graded with the same files and the same class build is not
graded again (resumable). Students are graded in parallel; benchmarks take the GPU one at a time.

Points (docs/grading.md): each exercise's points are in its lab's manifest
(labs/<lab>/lab.json) and earned in proportion to its test cases that passed (a case that did not
run earns nothing: without a GPU the GPU cases are "not run", 0 points, with the reason); each
sanitizer run graded on a day is worth SANITIZER_POINTS (a run that did not finish fails);
performance points, PERFORMANCE_SHARE of the day's correctness points, come from the benchmarks
(speed against the solution's) and the SASS checks, and only for a day whose tests all passed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import fcntl
import hashlib
import io
import json
import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

from . import bench as B
from . import classbuild, manifest as M, objcheck
from . import results as R
from . import runner, sandbox, sass, similarity, submission, testrun
from .manifest import Lab, Manifest

GRADER_VERSION = "2"
PERFORMANCE_SHARE = 0.25  # performance points of a day, as a share of its correctness points
BENCH_SHARE = 0.6  # of the performance points: the benchmarks (the rest: the SASS checks)
SANITIZER_POINTS = 5.0  # each compute-sanitizer tool a lab grades
DEFAULT_EXERCISE_POINTS = 10.0  # a hidden tests' exercise that declares no COURSE_POINTS
FULL_SPEED = 0.9  # a kernel at >= 90% of the solution's speed gets every benchmark point ...
ZERO_SPEED = 0.5  # ... and at <= 50% none; linear in between
SANITIZE_SECONDS = 300
def usable_cores() -> int:
    """The cores this process may run on: a Slurm task, `taskset` or a container's CPU set
    gives fewer than the machine has (os.cpu_count()), and compiling with more at once only
    makes every compile slower."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


COMPILE_SLOTS = threading.BoundedSemaphore(usable_cores())


def speed_fraction(ratio: float) -> float:
    """Benchmark points earned for running at `ratio` = solution time / student time."""
    return max(0.0, min(1.0, (ratio - ZERO_SPEED) / (FULL_SPEED - ZERO_SPEED)))


def gpu_model(description: str) -> str:
    """'NVIDIA H100 80GB HBM3 (sm_90): 132 SMs, ...' -> 'NVIDIA H100 80GB HBM3'"""
    return description.split(" (sm_", 1)[0].strip()


def class_id(m: Manifest) -> str:
    """Changes when the class build's tests or harness change (so grades are redone)."""
    h = hashlib.sha1(GRADER_VERSION.encode())
    for lab in m.labs:
        for p in (lab.solution.tests, lab.solution.bench):
            try:
                h.update(f"{p}:{os.path.getmtime(p)}".encode())
            except OSError:
                h.update(p.encode())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------- one student


class Options:
    def __init__(self, out: str, jobs: int = 2, bench: bool = True, days: Optional[List[str]] = None,
                 test_timeout: Optional[float] = None, regrade: bool = False,
                 ctest_jobs: int = 4, session: str = "", say=print,
                 sanitize_seconds: int = 0, use_sandbox: bool = True, submissions: str = "",
                 object_check: bool = True, sanitize_only_if_passed: bool = False,
                 replay: bool = True, stop_at_first_failure: bool = False):
        # Absolute: the compile and link commands and ctest run in other folders.
        self.out, self.jobs, self.bench, self.days = os.path.abspath(out), jobs, bench, days
        self.test_timeout, self.regrade, self.ctest_jobs = test_timeout, regrade, ctest_jobs
        self.sanitize_seconds = sanitize_seconds or SANITIZE_SECONDS
        # Planted bugs only (tools/mutants.py): a day that failed a test is caught already.
        self.sanitize_only_if_passed = sanitize_only_if_passed
        self.session = session or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.say = say
        self.use_sandbox = use_sandbox
        self.submissions = os.path.abspath(submissions) if submissions else ""
        # Off only to show that the other defences hold without it (tests/grading/attacks.py).
        self.object_check = object_check
        # Off only to measure what the replay costs (scripts/gpu-check.sh GRADE_OVERHEAD) or to
        # score planted bugs (its mutants step): the students' own programs then decide their
        # verdicts, which they can forge.
        self.replay = replay
        # Planted bugs only: one failed case answers "is it caught?"; the rest would be spent.
        self.stop_at_first_failure = stop_at_first_failure


def student_dir(opts: Options, dirname: str) -> str:
    return os.path.join(opts.out, "students", dirname)


class Jail:
    """The sandbox of one student (sandbox.py): what every program of theirs runs behind. Off
    (`course grade --no-sandbox`) it is nothing, and the reports say the submissions were
    trusted."""

    def __init__(self, m: Manifest, opts: Options, sdir: str, toolkit: str = ""):
        self.on = opts.use_sandbox
        self.hide = [opts.out, opts.submissions, os.path.join(m.source_dir, "solutions"),
                     m.binary_dir]
        # Shown again, read-only, inside the hidden places (/tmp, /root, /home, the out folder):
        # the course's tree may be checked out under any of them.
        self.readable = [os.path.join(m.source_dir, "labs"), os.path.join(m.source_dir, "common"),
                         os.path.join(sdir, "build"), toolkit]
        self.sdir = sdir

    def prefix(self, private: str, readable: Optional[List[str]] = None,
               run: bool = True) -> List[str]:
        """The sandbox of one of the student's processes; `run`: a test or benchmark program
        (it gets compute-sanitizer's variables too, sandbox.sanitizer_decoys), not the
        compiler."""
        if not self.on:
            return []
        os.makedirs(private, exist_ok=True)
        return sandbox.prefix(private=private, hide=[h for h in self.hide if h],
                              readable=self.readable + (readable or []),
                              env=sandbox.sanitizer_decoys() if run else None)


def student_manifest(m: Manifest, sdir: str, labs: List[Lab], builds: Dict[str, classbuild.DayBuild],
                     timeout: Optional[float], grading: Optional[dict] = None) -> Manifest:
    doc = M.to_json(m)
    doc["binary_dir"] = sdir
    doc["results_dir"] = os.path.join(sdir, "test-results")
    doc["grading"] = grading or {}
    kept = []
    for d in doc["labs"]:
        b = builds.get(d["day"])
        if b is None:
            continue
        d["lab"] = {"source": b.source,
                    "tests": b.tests or os.path.join(sdir, "build", d["day"], d["day"] + "_lab_tests"),
                    "bench": b.bench or os.path.join(sdir, "build", d["day"], d["day"] + "_lab_bench"),
                    "kernel_lib": b.object if b.status == "built" else ""}
        if timeout:
            d["timeout"] = timeout
        kept.append(d)
    doc["labs"] = kept
    path = os.path.join(sdir, "course_manifest.json")
    R.write_atomically(path, json.dumps(doc, indent=1) + "\n")
    return M.load(path)


_q = testrun.cmake_quote


def write_ctest_files(sm: Manifest, sdir: str) -> None:
    """The student's CTestTestfile.cmake and CTestCustom.cmake: the same registration a course
    build's lab variant has (testrun.discover: the run fixtures and one test per case, or the
    not-built placeholders; the SASS checks of the student's code; and, the manifest being a
    graded student's, the sanitizer runs), and the same summary after ctest."""
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin",
                        "course")
    lines = ["# The tests of one graded student (tools/course/grade.py)."]
    for lab in sm.labs:
        script = os.path.join(sdir, "ctest", f"{lab.day}.cmake")
        R.write_atomically(script, testrun.discover(sm, lab, "lab", tool))
        lines.append(f"include({_q(script)})")
    R.write_atomically(os.path.join(sdir, "CTestTestfile.cmake"), "\n".join(lines) + "\n")
    R.write_atomically(os.path.join(sdir, "CTestCustom.cmake"),
                       testrun.ctest_custom(sm.python, tool, sdir))


_points_cache: Dict[str, Dict[str, float]] = {}


def points_of(lab: Lab) -> Dict[str, float]:
    """The points of the lab's exercises: lab.json's (through the class build's manifest), and
    for exercises it does not name, those an instructor's hidden tests declare (COURSE_POINTS,
    read from the class build's reference test program, never from a student's)."""
    if lab.solution.tests not in _points_cache:
        declared = exercise_points(lab.solution.tests) if lab.hidden_tests else {}
        points = {k: v for k, v in declared.items() if k not in lab.points}
        points.update(lab.points)
        _points_cache[lab.solution.tests] = points
    return _points_cache[lab.solution.tests]


def exercise_points(tests_program: str) -> Dict[str, float]:
    try:
        p = subprocess.run([tests_program, "--course_points"], capture_output=True, text=True,
                           timeout=60)
        doc = json.loads(p.stdout.strip() or "{}") if p.returncode == 0 else {}
        return {str(k): float(v) for k, v in doc.items()}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


MESSAGE_LIMIT = 4000  # characters of one failure kept in the reports (the whole of nearly all)


def whole(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message as the student must read it: every line, trimmed only when very long."""
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + " [...]"


def _failure_words(case: R.Case) -> str:
    label = {R.FAILED: "failed", R.CRASHED: "crashed", R.TIMED_OUT: "timed out",
             R.NOT_RUN: "not run"}.get(case.outcome, case.outcome)
    lines = [l.rstrip() for l in case.message.strip().splitlines() if l.strip()]
    # GoogleTest's "file:line: Failure" / "Failed" header lines say nothing: the words follow.
    words = [l for l in lines if not re.match(r"^(\S+:\d+: )?(Failure|Failed)$", l.strip())]
    return f"{case.name} {label}: " + (whole("\n".join(words)) if words else "(no message)")


def _all_passed(cases: List[R.Case]) -> bool:
    t = R.tally(cases)
    return bool(cases) and t.passed == len(cases)


def grade_day(lab: Lab, status: str, cases: List[R.Case], points: Dict[str, float],
              build_message: str = "", misplaced: Optional[List[str]] = None) -> dict:
    """A day's correctness grade from its cases (tests, SASS checks, sanitizer runs). A case
    that did not run (no GPU, a program that was not built) earns nothing; the entry says why."""
    day = {"day": lab.day, "title": lab.title, "status": status, "message": build_message,
           "exercises": [], "points": 0.0, "max_points": 0.0, "not_run_points": 0.0,
           "checks": [], "failures": []}
    if misplaced:
        day["message"] = "\n".join(misplaced)
    exercises = list(lab.exercises)
    extra = sorted({c.exercise or "(other tests)" for c in cases if c.kind in ("gpu", "host")}
                   - set(exercises))
    for name in exercises + extra:
        max_points = points.get(name, DEFAULT_EXERCISE_POINTS if name in exercises else 0.0)
        mine = [c for c in cases if c.kind in ("gpu", "host")
                and (c.exercise or "(other tests)") == name]
        t = R.tally(mine)
        entry = {"exercise": name, "max_points": max_points, "not_run_points": 0.0,
                 "tests": {o: t.counts[o] for o in R.OUTCOMES},
                 "failures": [_failure_words(c) for c in mine if R.is_failure(c.outcome)][:5]}
        if status != "graded":
            entry.update(points=0.0, status=status)
        elif not mine:
            entry.update(points=0.0, status="not_run", reason="no test of this exercise ran",
                         not_run_points=max_points)
        else:
            entry["points"] = round(max_points * t.passed / len(mine), 2)
            not_run = t.skipped + t.counts[R.NOT_RUN]
            entry["not_run_points"] = round(max_points * not_run / len(mine), 2)
            if t.passed == len(mine):
                entry["status"] = "graded"
            elif t.passed == 0 and t.failed == t.counts[R.NOT_RUN] and not_run == len(mine):
                entry["status"] = "not_run"
            else:
                entry["status"] = "partial"
            if t.skipped:
                entry["reason"] = (f"{t.skipped} of {len(mine)} tests did not run (no points): "
                                   f"{next(iter(t.skip_reasons))}")
        day["exercises"].append(entry)
        day["failures"] += entry["failures"]
    for tool in lab.sanitizers:  # every student's day has the same parts, run or not
        c = next((c for c in cases if c.kind == "sanitizer" and c.name == tool), None)
        check = {"check": tool, "outcome": c.outcome if c else R.NOT_RUN,
                 "max_points": SANITIZER_POINTS, "points": 0.0, "not_run_points": 0.0,
                 "message": whole(c.message) if c else "not run"}
        if status != "graded":
            pass
        elif c is not None and c.outcome == R.PASSED:
            check["points"] = SANITIZER_POINTS
        elif c is None or c.outcome == R.SKIPPED:
            check["not_run_points"] = SANITIZER_POINTS
        else:
            day["failures"].append(f"{tool}: {whole(c.message)}")
        day["checks"].append(check)
    for part in day["exercises"] + day["checks"]:
        day["max_points"] += part["max_points"]
        day["points"] += part["points"]
        day["not_run_points"] += part.get("not_run_points", 0.0)
    day["points"] = round(day["points"], 2)
    day["not_run_points"] = round(day["not_run_points"], 2)
    return day


def judge_rows(bench_rows: List[B.Row], ref_rows: List[B.Row]) -> List[dict]:
    """The graded rows, judged here (not in the student's program): the reference's rows are
    the list, their floor_us (bytes and flops over the card's ceilings, measured by the
    reference program) the physical bound. A row the student's program did not report, reported
    with an error, without its timed output re-checked, or faster than the floor earns 0 and is
    not ranked."""
    mine = {}
    for r in bench_rows:
        mine.setdefault(r.name, r)  # the first report of a row is the row
    out = []
    for ref in ref_rows:
        r = mine.get(ref.name)
        row = {"name": ref.name, "median_us": None, "GB/s": None, "%copy": None,
               "TFLOP/s": None, "solution_median_us": ref.median_us, "error": "",
               "fraction": 0.0, "ranked": False, "why_not_ranked": ""}
        floor = ref.counters.get("floor_us")
        if r is None:
            row["why_not_ranked"] = "the benchmark program did not report this row"
        elif r.error:
            row["error"] = r.error
            row["why_not_ranked"] = f"the row reported an error: {first_line(r.error)}"
        elif not r.median_us or r.median_us <= 0 or not math.isfinite(r.median_us):
            row["why_not_ranked"] = "no valid time"
        elif r.counters.get("recheck") != 1.0 and ref.counters.get("recheck") == 1.0:
            row["why_not_ranked"] = "the timed outputs were not re-checked"
        elif floor and r.median_us < floor:
            row["median_us"] = r.median_us
            row["why_not_ranked"] = (f"impossible time: {r.median_us:.1f} us is below the "
                                     f"physical floor of this row ({floor:.1f} us: its bytes and "
                                     "flops at the card's ceilings)")
        elif not ref.median_us:
            row["median_us"] = r.median_us
            row["why_not_ranked"] = "the solution's row did not run"
        else:
            row["median_us"] = r.median_us
            # Rates from the reference's own counters (bytes, flops), never the student's.
            for key, name in (("GB/s", "GB/s"), ("TFLOP/s", "TFLOP/s"), ("%copy", "%copy")):
                v = ref.counters.get(name)
                if v:
                    row[key] = round(v * ref.median_us / r.median_us, 2)
            row["ratio"] = round(ref.median_us / r.median_us, 3)
            row["fraction"] = round(speed_fraction(ref.median_us / r.median_us), 3)
            row["ranked"] = True
        out.append(row)
    return out


def performance(lab: Lab, day: dict, cases: List[R.Case], judged: Optional[List[dict]],
                bench_note: str) -> dict:
    """Performance points: the benchmarks against the solution (judge_rows), and the SASS
    checks, both only for a day whose tests all passed. `judged` None: not timed (bench_note
    says why): those points are 0."""
    max_points = round(PERFORMANCE_SHARE * day["max_points"], 2)
    sass_cases = [c for c in cases if c.kind == "sass"]
    sass_share = (1.0 - BENCH_SHARE) if sass_cases else 0.0
    bench_max = round(max_points * (1.0 - sass_share), 2)
    sass_max = round(max_points - bench_max, 2)
    perf = {"max_points": max_points, "points": 0.0, "not_run_points": 0.0, "benchmarks": [],
            "sass": [], "bench_max_points": bench_max, "sass_max_points": sass_max,
            "bench_points": 0.0, "sass_points": 0.0, "note": bench_note}
    if day["status"] != "graded":
        return perf
    tests = [c for c in cases if c.kind in ("gpu", "host")]
    passed_all = _all_passed(tests)
    for c in sass_cases:
        perf["sass"].append({"check": c.name, "outcome": c.outcome,
                             "message": whole(c.message) if c.outcome != R.PASSED else ""})
    if sass_cases and passed_all:
        perf["sass_points"] = round(sass_max * sum(c.outcome == R.PASSED for c in sass_cases)
                                    / len(sass_cases), 2)
    elif sass_cases:
        perf["sass_note"] = "no SASS points: they count only for a day whose tests all passed"
    if judged is not None and passed_all:
        perf["benchmarks"] = judged
        if judged:
            perf["bench_points"] = round(bench_max * sum(r["fraction"] for r in judged)
                                         / len(judged), 2)
    perf["points"] = round(perf["bench_points"] + perf["sass_points"], 2)
    return perf


class GpuLock:
    """The GPU shared between students graded at once, across threads and processes (file
    locks in the gradebook's folder). Tests share the GPU (`GpuLock(out, "tests")`: any number
    at once); a benchmark has it alone (`GpuLock(out, "bench")`): it waits until the tests
    running now are done, and no test starts until it is, so no timing is taken beside another
    student's kernels. A waiting benchmark goes first: a test takes the turnstile before its
    shared lock, and the benchmark holds the turnstile while it waits and runs, so a stream of
    tests cannot keep it waiting for ever."""

    _held = threading.local()  # this thread's hold on the GPU alone: a nested lock is a no-op

    def __init__(self, out: str, use: str):
        assert use in ("tests", "bench")
        self.out, self.use = out, use
        self.nested = False

    def __enter__(self):
        if getattr(GpuLock._held, "alone", False):
            self.nested = True  # the GPU is this thread's already
            return self
        os.makedirs(self.out, exist_ok=True)
        # One GPU per machine as far as the locks know: grading tasks on other nodes of a
        # cluster (the same folder on a shared filesystem) have GPUs of their own.
        host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "localhost"
        self.turnstile = open(os.path.join(self.out, f"gpu.{host}.turnstile.lock"), "a")
        self.gpu = open(os.path.join(self.out, f"gpu.{host}.lock"), "a")
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        if self.use == "tests":
            try:
                fcntl.flock(self.gpu, fcntl.LOCK_SH)
            finally:
                fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(self.gpu, fcntl.LOCK_EX)
            GpuLock._held.alone = True
        return self

    def __exit__(self, *exc):
        if self.nested:
            return
        if self.use == "bench":
            GpuLock._held.alone = False
        fcntl.flock(self.gpu, fcntl.LOCK_UN)
        if self.use == "bench":
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.gpu.close()
        self.turnstile.close()


def reference_bench(m: Manifest, lab: Lab, opts: Options) -> Tuple[Optional[B.BenchRun], str]:
    """The solution's graded rows (lab.json), measured once per grading run (trusted: the
    solution's program, run by the grader), and why not when it could not run."""
    path = os.path.join(opts.out, "reference", f"bench-{lab.day}.json")
    if os.path.exists(path):
        try:
            run = B.load(path)
            if run.context.get("course_session") == opts.session:
                return run, ""
        except ValueError:
            pass
    context = f"course_student=reference,course_lab={lab.day},course_session={opts.session}"
    try:
        run = B.run_benchmark(lab.solution.bench, path, filter_=lab.grade_benchmarks,
                              extra=[f"--benchmark_context={context}"])
    except (B.BenchmarkFailed, RuntimeError, ValueError, OSError) as e:
        opts.say(f"  the solution's benchmarks of {lab.day} did not run: {e}")
        return None, f"the solution's benchmarks did not run: {first_line(str(e))}"
    if run.skipped:
        return None, f"the solution's benchmarks skipped: {run.skipped}"
    return run, ""


def write_judged(sdir: str, student: str, lab: Lab, judged: List[dict], ref: B.BenchRun,
                 gpu: str, opts: Options) -> None:
    """The grader's own benchmark file of a student's day (students/<dir>/bench-dNN.json, what
    `course leaderboard` reads): Google Benchmark's shape, every row as judged here (a row that
    may not be ranked carries the reason as its error), the context the grader's. The student's
    program never writes it: its sandbox cannot see the out folder."""
    rows = []
    for r in judged:
        row = {"name": r["name"], "run_type": "iteration", "iterations": 1,
               "time_unit": "us"}
        if r["ranked"]:
            row.update({"real_time": r["median_us"], "median_us": r["median_us"], "recheck": 1,
                        "solution_median_us": r["solution_median_us"]})
            for key in ("GB/s", "%copy", "TFLOP/s"):
                if r.get(key) is not None:
                    row[key] = r[key]
        else:
            row.update({"error_occurred": True, "error_message": r["why_not_ranked"]})
        ref_row = next((x for x in ref.rows if x.name == r["name"]), None)
        if ref_row is not None and ref_row.key:
            row["key"] = 1
        rows.append(row)
    doc = {"context": {
        "course_student": student, "course_lab": lab.day,
        "course_gpu": gpu_model(gpu), "device": ref.device, "course_tests": "passed"
        if any(r["ranked"] or "did not all pass" not in r["why_not_ranked"] for r in judged)
        else "failed", "course_judged": "grader", "course_grader_version": GRADER_VERSION,
        "course_run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "course_session": opts.session,
        "copy_ceiling_GBps": ref.context.get("copy_ceiling_GBps", "")},
        "benchmarks": rows}
    R.write_atomically(os.path.join(sdir, f"bench-{lab.day}.json"), B.dumps(doc))


def not_ranked(ref: B.BenchRun, why: str) -> List[dict]:
    return [{"name": r.name, "median_us": None, "solution_median_us": r.median_us, "error": "",
             "fraction": 0.0, "ranked": False, "why_not_ranked": why} for r in ref.rows]


def build_message(m: Manifest, lab: Lab, b: classbuild.DayBuild, display: str) -> str:
    """Why a day was not built, in words, naming the student's file."""
    try:
        with open(b.log, encoding="utf-8", errors="replace") as f:
            log = f.read()
    except OSError:
        log = ""
    if b.status == "refused":
        why = "\n".join(b.problems or []) or log
        return (f"{display} was refused before it ran (docs/grading.md, \"What a submission may "
                "do\"):\n" + whole(why.replace(b.source, display)))
    from . import build  # noqa: PLC0415
    text = build.explain_failure(log, m, lab, "lab", student_file=display)
    return whole(text)


def grade_student(m: Manifest, student: submission.Student, opts: Options,
                  commands: Dict[str, classbuild.Commands], labs: List[Lab]) -> dict:
    sub = submission.find(student.folder, labs, student.id)
    sdir = student_dir(opts, student.dirname)
    fingerprint = hashlib.sha1(f"{sub.fingerprint()}:{class_id(m)}:{opts.bench}:"
                               f"{opts.use_sandbox}:{opts.object_check}:{opts.replay}:"
                               f"{opts.stop_at_first_failure}:{opts.sanitize_only_if_passed}:"
                               f"{','.join(l.day for l in labs)}"
                               .encode()).hexdigest()[:16]
    done = os.path.join(sdir, "grade.json")
    if os.path.exists(done) and not opts.regrade:
        try:
            old = R.read_json(done)
            if old.get("fingerprint") == fingerprint:
                opts.say(f"{sub.student}: already graded with these files (grade.json); skipped")
                return old
        except ValueError:
            pass
    started = time.monotonic()
    handed = ", ".join(sorted(sub.kernels)) or "none"
    opts.say(f"{sub.student}: grading {len(sub.kernels)} days handed in ({handed})")
    for day, msgs in sorted(sub.misplaced.items()):
        for msg in msgs:
            opts.say(f"{sub.student}: {day} not graded: {msg}")
    for problem in sub.problems:
        opts.say(f"{sub.student}: {problem}")
    for name in ("test-results", "ctest", "build", "build-logs", "sandbox", "sass-cache"):
        shutil.rmtree(os.path.join(sdir, name), ignore_errors=True)
    os.makedirs(sdir, exist_ok=True)
    # The class build's CUDA toolkit (its compiler's, the one compute-sanitizer comes with).
    toolkit = next((classbuild.toolkit_root(c.compile) for c in commands.values()), "")
    jail = Jail(m, opts, sdir, toolkit)
    builds: Dict[str, classbuild.DayBuild] = {}
    build_start = time.monotonic()

    def display(lab: Lab) -> str:
        return os.path.relpath(sub.kernels[lab.day], sub.folder)

    def build(lab: Lab) -> classbuild.DayBuild:
        out_dir = os.path.join(sdir, "build", lab.day)
        with COMPILE_SLOTS:  # all students' compiles share the machine's cores
            b = classbuild.build_day(
                commands[lab.day], lab, sub.kernels[lab.day], out_dir,
                os.path.join(opts.out, "cache"),
                os.path.join(sdir, "build-logs", f"{lab.day}_lab.log"), folder=sub.folder,
                display=display(lab), sandbox=jail.prefix(out_dir, run=False),
                source_dir=m.source_dir,
                hidden=jail.hide,
                object_check=(lambda obj: check_object(m, lab, obj)) if opts.object_check
                else None)
        return b

    todo = [lab for lab in labs if lab.day in sub.kernels]

    def size(lab: Lab) -> int:
        try:
            return os.path.getsize(sub.kernels[lab.day])
        except OSError:
            return 0

    # Longest first (the larger file, the longer compile: Day 6's solution takes 18 s, Day 1's
    # 3 s on one core), so that the last slot is not left with the longest compile alone.
    order = sorted(todo, key=size, reverse=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
        for lab, b in zip(order, pool.map(build, order)):
            builds[lab.day] = b
    build_seconds = time.monotonic() - build_start
    for lab in todo:
        b = builds[lab.day]
        if b.status != "built":
            opts.say(f"{sub.student}: {lab.day} {b.status.replace('_', ' ')}: "
                     f"{first_line(build_message(m, lab, b, display(lab)))}")
    # Disassemble each compiled day once, for all its SASS checks (they run as ctest tests).
    for lab in todo:
        if builds[lab.day].status == "built" and lab.checks_for("lab"):
            try:
                sass.disassemble(builds[lab.day].object, m.cuobjdump,
                                 os.path.join(sdir, "sass-cache"))
            except (sass.ToolMissing, RuntimeError, OSError):
                pass  # the checks themselves will say so
    sm = student_manifest(m, sdir, labs, builds, opts.test_timeout,
                          {"sandbox": jail.prefix(os.path.join(sdir, "sandbox", "tests")),
                           "verify": True, "replay": opts.replay,
                           "sanitize_seconds": opts.sanitize_seconds,
                           "sanitize_only_if_passed": opts.sanitize_only_if_passed,
                           "stop_at_first_failure": opts.stop_at_first_failure})
    write_ctest_files(sm, sdir)

    # The tests, through ctest, with a seed nobody knows in advance.
    env = dict(os.environ, COURSE_SEED=str(secrets.randbits(62)))
    env.pop("COURSE_TEST_SHARDS", None)
    # Two passes: everything but the serial cases beside other students' tests (never beside a
    # benchmark), then the serial cases (timing, the largest allocations: lab.json's
    # serial_suites) with the GPU to themselves, like a benchmark: another student's kernels
    # running beside them would cost the honest student points (a slower event) or memory. The
    # GPU stays this student's from the serial pass through its benchmarks (below): one wait
    # for the GPU alone per student, as before the serial pass had one.
    test_start = time.monotonic()
    logs, junit = [], []  # type: List[str], List[R.CtestTest]
    alone = contextlib.ExitStack()
    for use, select, name in (("tests", ["-LE", "^serial$"], "junit.xml"),
                              ("bench", ["-L", "^serial$"], "junit-serial.xml")):
        if use == "bench":
            alone.enter_context(GpuLock(opts.out, "bench"))
        with GpuLock(opts.out, use):
            ctest = subprocess.run(["ctest", "--test-dir", sdir, "-j", str(opts.ctest_jobs)]
                                   + select + ["--output-junit", os.path.join(sdir, name)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace", env=env)
        logs.append(ctest.stdout)
        try:
            with open(os.path.join(sdir, name), encoding="utf-8", errors="replace") as f:
                junit += R.parse_ctest_junit(f.read())
        except FileNotFoundError:
            if "No tests were found" not in ctest.stdout:
                opts.say(f"{sub.student}: ctest wrote no {name}")
        except (OSError, ValueError) as e:
            opts.say(f"{sub.student}: ctest's JUnit file {name} could not be read ({e})")
    with open(os.path.join(sdir, "ctest.log"), "w", encoding="utf-8") as f:
        f.write("\n".join(logs))
    test_seconds = time.monotonic() - test_start
    with alone:  # the GPU alone since the serial pass, through the benchmarks
        days = []
        gpu = ""
        for lab in labs:
            if lab.day not in sub.kernels:
                day = grade_day(lab, "not_submitted", [], points_of(lab),
                                misplaced=sub.misplaced.get(lab.day))
                if not sub.misplaced.get(lab.day):
                    day["message"] = (f"not handed in: no labs/{lab.name}/kernel.cu or "
                                      f"{lab.name}/kernel.cu in the submission")
                day["performance"] = performance(lab, day, [], None, "")
                days.append(day)
                continue
            b = builds[lab.day]
            cases: List[R.Case] = []
            for group in testrun.GROUPS:
                path = testrun.results_path(sm, lab, "lab", group)
                if os.path.exists(path):
                    try:
                        run = R.load_run_results(path)
                        cases += run.cases
                        gpu = gpu or run.gpu
                    except ValueError as e:
                        opts.say(f"{sub.student}: {e}")
            for t in junit:
                parts = t.name.split(".")
                if len(parts) >= 3 and parts[0] == lab.day and parts[2] == "sass":
                    check = next((c for c in lab.sass_checks
                                  if c.name == ".".join(parts[3:])), None)
                    text = "\n".join(l for l in t.output.splitlines() if l.strip())
                    message = re.sub(r"^(FAILED|passed|skipped|SKIPPED|NOT RUN): ", "", text)
                    # A correctness check is one of its exercise's cases (course_add_sass_check).
                    kind = "host" if check is not None and check.correctness else "sass"
                    cases.append(R.Case(".".join(parts[2:]), t.status, message=whole(message),
                                        exercise=check.exercise if check else "", kind=kind))
                elif len(parts) == 3 and parts[0] == lab.day and parts[2] in lab.sanitizers:
                    cases.append(R.Case(parts[2], t.status, message=whole(t.output.strip()),
                                        kind="sanitizer"))
            if b.status != "built":
                day = grade_day(lab, b.status, cases, points_of(lab),
                                build_message=build_message(m, lab, b, display(lab)))
            else:
                if not any(c.kind in ("gpu", "host") for c in cases):
                    # The runner left nothing: every case is NOT RUN, in words, never absent.
                    for t in junit:
                        if t.name.startswith(f"{lab.day}.lab.") and ".sass." not in t.name:
                            cases.append(R.Case(t.name[len(lab.day) + 5:], R.NOT_RUN,
                                                message=first_line(t.output),
                                                exercise=lab.exercise_of(
                                                    t.name[len(lab.day) + 5:])))
                day = grade_day(lab, "graded", cases, points_of(lab))
            # Benchmarks only where every test ran and passed; judged here (judge_rows).
            judged: Optional[List[dict]] = None
            note = ""
            tests = [c for c in cases if c.kind in ("gpu", "host")]
            t = R.tally(tests)
            if day["status"] != "graded":
                note = "not timed: the day " + {"refused": "was refused",
                                                "compile_failed": "did not compile",
                                                "link_failed": "did not link"}.get(
                    day["status"], day["status"].replace("_", " "))
            elif not opts.bench:
                note = "not timed: benchmarks were not asked for (--no-bench)"
            elif t.failed:
                note = (f"not timed: {t.failed} tests failed (an incorrect kernel is never timed: "
                        "no benchmark points)")
                if gpu:  # on the board, as not ranked, with the reason
                    with GpuLock(opts.out, "bench"):
                        ref, _ = reference_bench(m, lab, opts)
                    if ref is not None:
                        write_judged(sdir, sub.student, lab, not_ranked(
                            ref, "the day's tests did not all pass"), ref, gpu, opts)
            elif t.skipped or not t.passed or t.passed != len(tests):
                note = "not timed: the tests could not all run here (no GPU?): no benchmark points"
            else:
                with GpuLock(opts.out, "bench"):  # the GPU alone: no test of anyone beside it
                    ref, why = reference_bench(m, lab, opts)
                    if ref is None:
                        note = f"not timed: {why}"
                    else:
                        context = ",".join([f"course_lab={lab.day}",
                                            f"course_session={opts.session}"])
                        try:
                            run = B.run_benchmark(
                                b.bench, os.path.join(sdir, "raw", f"bench-{lab.day}.json"),
                                filter_=lab.grade_benchmarks, timeout=BENCH_SECONDS,
                                extra=[f"--benchmark_context={context}"],
                                prefix=jail.prefix(os.path.join(sdir, "sandbox", "bench")))
                            if run.skipped:
                                judged = not_ranked(ref, "the benchmark program skipped its rows: "
                                                         + run.skipped)
                            else:
                                judged = judge_rows(run.rows, ref.rows)
                        except B.BenchmarkFailed as e:
                            judged = not_ranked(ref, whole(str(e), 500))
                            note = str(e).splitlines()[0]
                        write_judged(sdir, sub.student, lab, judged, ref, gpu, opts)
            day["performance"] = performance(lab, day, cases, judged, note)
            days.append(day)

    grade = {
        "format": 2, "student": sub.student, "folder": student.dirname,
        "fingerprint": fingerprint,
        "graded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session": opts.session, "gpu": gpu, "submission": sub.to_json(),
        "sandbox": opts.use_sandbox, "replay": opts.replay,
        "stop_at_first_failure": opts.stop_at_first_failure,
        "seconds": {"build": round(build_seconds, 1), "tests": round(test_seconds, 1),
                    "total": round(time.monotonic() - started, 1)},
        "days": days,
    }
    total(grade)
    R.write_atomically(os.path.join(sdir, "report.md"), render_report(grade))
    R.write_atomically(done, json.dumps(grade, indent=1, ensure_ascii=False) + "\n")
    opts.say(f"{sub.student}: {grade['points']:g} of {grade['max_points']:g} points"
             + (f" ({grade['not_run_points']:g} could not run here)"
                if grade["not_run_points"] else "")
             + f" in {grade['seconds']['total']:.0f} s")
    return grade


BENCH_SECONDS = 600  # a student's benchmark program, all its graded rows


def check_object(m: Manifest, lab: Lab, obj: str) -> List[str]:
    """objcheck's problems of a student's compiled kernel.cu, against what the day's own
    solution and starter define and call (objcheck.baseline reads them once per class build)."""
    try:
        base = objcheck.baseline(lab.solution.kernel_lib, lab.lab.kernel_lib, lab.solution.tests)
        return objcheck.check_object(obj, base)
    except (objcheck.ToolMissing, RuntimeError, OSError) as e:
        return [f"the object could not be checked: {e}"]


def total(grade: dict) -> None:
    pts = mx = not_run = 0.0
    for d in grade["days"]:
        perf = d.get("performance", {})
        pts += d["points"] + (perf.get("points") or 0.0)
        mx += d["max_points"] + perf.get("max_points", 0.0)
        not_run += d["not_run_points"] + perf.get("not_run_points", 0.0)
    grade["points"], grade["max_points"] = round(pts, 2), round(mx, 2)
    grade["not_run_points"] = round(not_run, 2)


# ------------------------------------------------------------------------------- reports


def fmt_points(p: Optional[float], mx: float) -> str:
    return f"{(p or 0.0):g} / {mx:g}"


def _md_text(text: str) -> str:
    """A message as a fenced block of report.md (a fence inside it cannot close the block)."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text.rstrip()}\n{fence}"


def render_report(g: dict) -> str:
    out = [f"# Grade report: {g['student']}", ""]
    out.append(f"Graded {g['graded']}" + (f" on {gpu_model(g['gpu'])}" if g.get("gpu") else
                                          " on a machine without a GPU"))
    if not g.get("sandbox", True):
        out.append("\n(Graded without the sandbox: the instructor trusted the submissions.)")
    out.append("")
    out.append(f"**Total: {g['points']:g} of {g['max_points']:g} points**"
               + (f" ({g['not_run_points']:g} of them could not be earned here: those tests did "
                  "not run, so they earn nothing)" if g["not_run_points"] else ""))
    sub = g["submission"]
    out += ["", "## What was handed in", ""]
    for day, rel in sorted(sub["kernels"].items()):
        out.append(f"- {day}: `{rel}`")
    for day, msgs in sorted(sub["misplaced"].items()):
        for msg in msgs:
            out.append(f"- {day}: **{msg}**")
    if sub["unused"]:
        out.append("- not used: " + ", ".join(f"`{u}`" for u in sub["unused"][:30])
                   + (f" and {len(sub['unused']) - 30} more" if len(sub["unused"]) > 30 else ""))
    for p in sub["problems"]:
        out.append(f"- {p}")
    out += ["", "## Days", "", "| day | status | correctness | performance |", "|---|---|---|---|"]
    for d in g["days"]:
        perf = d.get("performance", {})
        not_run = f" ({d['not_run_points']:g} not run)" if d["not_run_points"] else ""
        flag = " (flagged: similar)" if d.get("similar") else ""
        out.append(f"| {d['day']} | {d['status'].replace('_', ' ')}{flag} | "
                   f"{fmt_points(d['points'], d['max_points'])}{not_run} | "
                   f"{fmt_points(perf.get('points'), perf.get('max_points', 0))} |")
    for d in g["days"]:
        out += ["", f"### {d['day']}: {d['title']}", ""]
        for sim in d.get("similar", []):
            out.append(f"**Flagged for review: {sim}**\n")
        if d["message"]:
            out += [_md_text(d["message"]), ""]
        if d["status"] == "not_submitted":
            continue
        for e in d["exercises"]:
            t = e["tests"]
            line = (f"- {e['exercise']}: {fmt_points(e['points'], e['max_points'])} "
                    f"({t['passed']} passed, {sum(t[o] for o in R.FAILURES)} failed, "
                    f"{t['skipped']} did not run)")
            if e.get("reason"):
                line += f"; {e['reason']}"
            out.append(line)
            for f in e["failures"][:3]:
                out += ["", _md_text(f), ""]
        for c in d["checks"]:
            out.append(f"- {c['check']}: {fmt_points(c['points'], c['max_points'])}"
                       + (f" ({c['outcome'].replace('_', ' ')})" if c["outcome"] != R.PASSED
                          else ""))
            if c["outcome"] != R.PASSED and c["message"]:
                out += ["", _md_text(c["message"]), ""]
        perf = d.get("performance", {})
        if perf.get("benchmarks"):
            out += ["", "| benchmark | yours (µs) | solution (µs) | speed | points |",
                    "|---|---:|---:|---:|---:|"]
            for r in perf["benchmarks"]:
                speed = f"{r['ratio']:.2f}x" if r.get("ratio") else "not ranked"
                out.append(f"| {r['name']} | {B.fmt(r.get('median_us'), 1)} | "
                           f"{B.fmt(r.get('solution_median_us'), 1)} | {speed} | "
                           f"{r['fraction']:.0%} |")
            for r in perf["benchmarks"]:
                if not r["ranked"]:
                    out.append(f"- {r['name']}: not ranked: {r['why_not_ranked']}")
        if perf.get("note"):
            out.append(f"\nBenchmarks: {perf['note']}.")
        if perf.get("sass_note"):
            out.append(f"\nSASS checks: {perf['sass_note']}.")
        for s_ in perf.get("sass", []):
            if s_["outcome"] != R.PASSED:
                out += [f"- SASS check {s_['check']}: {s_['outcome'].replace('_', ' ')}", "",
                        _md_text(s_["message"]), ""]
    return "\n".join(out) + "\n"


def _csv_text(text: str) -> str:
    """A whole message in one CSV cell: its lines joined with ' / '."""
    return " / ".join(l.strip() for l in (text or "").splitlines() if l.strip())


def write_class_files(opts: Options, grades: List[dict],
                      skipped: Optional[List[Tuple[str, str]]] = None) -> None:
    grades = sorted(grades, key=lambda g: g["student"])
    skipped = skipped or []
    book = {"format": 2, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "policy": {"performance_share": PERFORMANCE_SHARE, "bench_share": BENCH_SHARE,
                       "sanitizer_points": SANITIZER_POINTS, "full_speed": FULL_SPEED,
                       "zero_speed": ZERO_SPEED},
            "students": [{k: g.get(k) for k in ("student", "folder", "points", "max_points",
                                                "not_run_points", "graded", "gpu", "days",
                                                "submission", "sandbox", "status", "message")
                          if k != "message" or g.get(k)}
                         for g in grades],
            "not_graded": [{"folder": n, "reason": r} for n, r in skipped]}
    R.write_atomically(os.path.join(opts.out, "gradebook.json"),
                       json.dumps(book, indent=1, ensure_ascii=False) + "\n")
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student", "day", "part", "status", "points", "max_points", "not_run_points",
                "passed", "failed", "not_run", "failures"])
    for g in grades:
        w.writerow([g["student"], "(total)", "", g.get("status", "graded"), g["points"],
                    g["max_points"], g["not_run_points"], "", "", "",
                    _csv_text(g.get("message", ""))])
        for d in g["days"]:
            w.writerow([g["student"], d["day"], "(correctness)", d["status"], d["points"],
                        d["max_points"], d["not_run_points"], "", "", "",
                        _csv_text("\n".join(d.get("similar", []) + [d["message"]]))])
            for e in d["exercises"]:
                t = e["tests"]
                w.writerow([g["student"], d["day"], e["exercise"], e.get("status", ""),
                            e["points"], e["max_points"], e.get("not_run_points", 0),
                            t["passed"], sum(t[o] for o in R.FAILURES) - t[R.NOT_RUN],
                            t["skipped"] + t[R.NOT_RUN],
                            " | ".join(_csv_text(f) for f in e["failures"][:3])])
            for c in d["checks"]:
                w.writerow([g["student"], d["day"], c["check"], c["outcome"], c["points"],
                            c["max_points"], c.get("not_run_points", 0), "", "", "",
                            _csv_text(c["message"]) if c["outcome"] != R.PASSED else ""])
            perf = d.get("performance", {})
            w.writerow([g["student"], d["day"], "(performance)", "", perf.get("points", 0),
                        perf.get("max_points", 0), perf.get("not_run_points", 0), "", "", "",
                        _csv_text(perf.get("note", ""))])
    for name, reason in skipped:
        w.writerow([name, "(total)", "", "not graded", 0, "", "", "", "", "", reason])
    R.write_atomically(os.path.join(opts.out, "gradebook.csv"), buf.getvalue())
    write_class_junit(opts, grades, skipped)


def write_class_junit(opts: Options, grades: List[dict],
                      skipped: Optional[List[Tuple[str, str]]] = None) -> None:
    """Every student's ctest JUnit in one file, one testsuite per student, plus a failing case
    for every day not handed in or not built (a day is never absent, and its message is the
    reason), and one per folder that was not graded."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    root = ET.Element("testsuites", name="course grade")
    for g in grades:
        suite = ET.SubElement(root, "testsuite", name=g["student"])
        folder = student_dir(opts, g.get("folder") or g["student"])
        count = failures = skipped_n = 0
        built_fail = {d["day"]: d for d in g["days"]
                      if d["status"] not in ("graded", "not_submitted")}
        for path in (os.path.join(folder, "junit.xml"), os.path.join(folder, "junit-serial.xml")):
            if not os.path.exists(path):
                continue
            try:
                for tc in ET.parse(path).getroot().iter("testcase"):
                    name = tc.get("name", "")
                    day = name.split(".")[0]
                    tc.set("classname", f"{g['student']}.{day}")
                    if tc.get("status") == "fail":
                        fail = tc.find("failure")
                        if fail is None:
                            fail = ET.SubElement(tc, "failure")
                        if not fail.get("message"):
                            why = built_fail[day]["message"] if day in built_fail else ""
                            out = tc.findtext("system-out") or ""
                            fail.set("message", first_line(why or out) or "failed")
                    suite.append(tc)
                    count += 1
                    failures += tc.get("status") == "fail"
                    skipped_n += tc.get("status") in ("notrun", "disabled")
            except ET.ParseError:
                pass
        for d in g["days"]:
            if d["status"] == "not_submitted":
                tc = ET.SubElement(suite, "testcase", name=f"{d['day']}.handed_in",
                                   classname=f"{g['student']}.{d['day']}", status="fail")
                ET.SubElement(tc, "failure", message=d["message"][:500])
                count += 1
                failures += 1
        suite.set("tests", str(count))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped_n))
    for name, reason in skipped or []:
        suite = ET.SubElement(root, "testsuite", name=name, tests="1", failures="1", skipped="0")
        tc = ET.SubElement(suite, "testcase", name="graded", classname=f"{name}.submission",
                           status="fail")
        ET.SubElement(tc, "failure", message=f"not graded: {reason}")
    R.write_atomically(os.path.join(opts.out, "junit.xml"),
                       ET.tostring(root, encoding="unicode") + "\n")


def class_table(grades: List[dict], skipped: Optional[List[Tuple[str, str]]] = None) -> str:
    """student | each day's correctness + performance (or its status) | total."""
    days = sorted({d["day"] for g in grades for d in g["days"]})
    rows = []
    for g in sorted(grades, key=lambda g: g["student"]):
        row = [g["student"]]
        for day in days:
            d = next((x for x in g["days"] if x["day"] == day), None)
            if d is None:
                row.append("-")
            elif d["status"] != "graded":
                row.append(d["status"].replace("_", " "))
            else:
                perf = d.get("performance", {})
                cell = f"{d['points']:g}"
                if d["not_run_points"]:
                    cell += f" ({d['not_run_points']:g} not run)"
                cell += f" / perf {perf.get('points', 0):g}"
                if d.get("similar"):
                    cell += " FLAGGED"
                row.append(cell)
        row.append(g.get("status", "") if g.get("status", "graded") != "graded"
                   else f"{g['points']:g} of {g['max_points']:g}")
        rows.append(row)
    for name, reason in skipped or []:
        rows.append([name] + ["-"] * len(days) + [f"not graded: {reason}"])
    header = ["student"] + days + ["total"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: " | ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] + [line(r) for r in rows])


ROSTER = "roster.json"


def write_roster(opts: Options, students: List[submission.Student],
                 skipped: List[Tuple[str, str]]) -> None:
    """<out>/roster.json: the class as graded (every folder, and the ones skipped with why), so
    that the merge step (--merge) has one row per submission folder whatever happened."""
    path = os.path.join(opts.out, ROSTER)
    old = {}
    if os.path.exists(path):
        try:
            old = R.read_json(path)
        except ValueError:
            old = {}
    known = {s["id"]: s for s in old.get("students", []) if isinstance(s, dict) and "id" in s}
    for st in students:
        known[st.id] = {"id": st.id, "dirname": st.dirname}
    doc = {"format": 1, "submissions": opts.submissions, "students": sorted(
        known.values(), key=lambda s: s["id"]),
        "not_graded": [{"folder": n, "reason": r} for n, r in skipped]}
    R.write_atomically(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def load_grades(out: str) -> Tuple[List[dict], List[Tuple[str, str]]]:
    """The grades of the roster's students (one per submission folder: a student whose grading
    did not finish gets a row saying so), and the folders that were not graded. Without a
    roster (a folder graded before there was one), every students/*/grade.json."""
    grades: List[dict] = []
    skipped: List[Tuple[str, str]] = []
    path = os.path.join(out, ROSTER)
    if os.path.exists(path):
        try:
            roster = R.read_json(path)
        except ValueError as e:
            print(f"course grade: {e}", file=sys.stderr)
            roster = {}
        entries = [s for s in roster.get("students", []) if isinstance(s, dict)]
        skipped = [(str(x.get("folder", "")), str(x.get("reason", "")))
                   for x in roster.get("not_graded", []) if isinstance(x, dict)]
    else:
        base = os.path.join(out, "students")
        names = sorted(os.listdir(base)) if os.path.isdir(base) else []
        entries = [{"id": n, "dirname": n} for n in names
                   if os.path.exists(os.path.join(base, n, "grade.json"))]
    for st in entries:
        gpath = os.path.join(out, "students", str(st.get("dirname", st["id"])), "grade.json")
        reason = ""
        try:
            if not os.path.exists(gpath):
                raise FileNotFoundError(gpath)
            g = R.read_json(gpath)
            if g.get("student") != st["id"]:
                reason = f"its grade.json is another student's ({g.get('student')!r})"
            else:
                grades.append(g)
                continue
        except FileNotFoundError:
            reason = "not graded: the grader did not finish this student (grade again)"
        except (OSError, ValueError) as e:
            reason = f"its grade.json cannot be read ({e}): grade this student again"
        grades.append({"student": st["id"], "folder": st.get("dirname", st["id"]),
                       "status": "not graded", "message": reason, "points": 0.0,
                       "max_points": 0.0, "not_run_points": 0.0, "graded": "", "gpu": "",
                       "days": [], "submission": {}})
    return grades, skipped


# ------------------------------------------------------------------------------- the class


def students_in(submissions: str) -> List[str]:
    """The student folders of a submissions folder, in the grader's order (Slurm array tasks
    index into it)."""
    return [s.folder for s in submission.roster(submissions)[0]]


def grade_class(m: Manifest, submissions: str, opts: Options,
                only: Optional[List[int]] = None, merge: bool = True) -> int:
    submissions = os.path.abspath(submissions)
    opts.submissions = submissions
    labs = [l for l in m.labs if not opts.days or l.day in opts.days]
    missing = classbuild.programs_missing(m, labs)
    if missing:
        raise classbuild.ClassBuildError(
            "the class build is not built (missing " + ", ".join(missing[:3]) + "...): "
            f"cmake --build {m.binary_dir}")
    if opts.use_sandbox:
        why = sandbox.check()
        if why:
            raise classbuild.ClassBuildError(
                f"the sandbox that student programs run in cannot start here: {why}. Grading "
                "without it (--no-sandbox) trusts every submission.")
    commands = {lab.day: classbuild.commands_for(m, lab) for lab in labs}
    everyone, skipped = submission.roster(submissions)
    for name, reason in skipped:
        opts.say(f"{name}: not graded: {reason}")
    students = everyone if only is None else [everyone[i] for i in only
                                              if 0 <= i < len(everyone)]
    if not students:
        opts.say(f"no student folders in {submissions}")
        return 2
    os.makedirs(opts.out, exist_ok=True)
    # The whole class, also when this run grades a few of it (--only-index: one Slurm task of
    # many, all writing this file at about the same time). Each task then writes the same
    # roster, and none can drop another's student from it: the merge gives every folder a row,
    # "not graded" for one whose task has not written its grade.
    write_roster(opts, everyone, skipped)
    opts.say(f"grading {len(students)} students in {submissions} into {opts.out} "
             f"(class build {m.binary_dir}; {opts.jobs} at a time"
             + ("" if opts.use_sandbox else "; WITHOUT the sandbox: submissions are trusted")
             + ("" if opts.replay else "; WITHOUT the replay: the students' programs decide "
                "their own verdicts")
             + ("; each day's tests stop at their first failure (scoring planted bugs)"
                if opts.stop_at_first_failure else "")
             + ")")
    errors = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = {pool.submit(grade_student, m, st, opts, commands, labs): st for st in students}
        for fut in concurrent.futures.as_completed(futures):
            try:
                fut.result()
            except Exception as e:  # noqa: BLE001 (one student's failure never stops the class)
                errors += 1
                opts.say(f"{futures[fut].id}: the grader failed on this student: "
                         f"{type(e).__name__}: {e}")
    if merge:
        merge_class(opts, m)
    return 1 if errors else 0


def merge_class(opts: Options, m: Optional[Manifest] = None) -> List[dict]:
    """The class files from the students graded in opts.out: the gradebook, the JUnit file,
    similarity flags (similarity.py), and the table on the console."""
    grades, skipped = load_grades(opts.out)
    similarity.flag_class(opts.out, grades, m)
    for g in grades:
        if g.get("status", "graded") == "graded" and g.get("days"):
            sdir = student_dir(opts, g.get("folder") or g["student"])
            R.write_atomically(os.path.join(sdir, "report.md"), render_report(g))
    write_class_files(opts, grades, skipped)
    opts.say("\n" + class_table(grades, skipped))
    opts.say(f"gradebook: {os.path.join(opts.out, 'gradebook.csv')} and .json; reports: "
             f"{os.path.join(opts.out, 'students', '<student>', 'report.md')}; "
             f"JUnit: {os.path.join(opts.out, 'junit.xml')}")
    return grades
