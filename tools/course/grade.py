"""`course grade <submissions>`: a class's gradebook, through ctest, missing nothing.

For every student (every subfolder of the submissions folder):
  1. find each day's kernel.cu (submission.py): misplaced files are reported, never guessed;
  2. compile it and link the day's programs against the class build (classbuild.py): only the
     student's kernel.cu is compiled; a day that does not compile or link is a failed day with
     the compiler's message, and never hides another day;
  3. run the day's tests through ctest in the student's folder (<out>/students/<id>/): the
     course's runner isolates crashes and hangs per test, the SASS checks read the student's
     compiled code, and compute-sanitizer's memcheck/racecheck run where the lab asks;
  4. for each day whose tests all passed, time the GRADE_BENCHMARKS rows with a secret seed
     and score them against the reference solution measured in the same grading run;
  5. write grade.json, report.md (for the student) and junit.xml.
Then the class files: gradebook.json, gradebook.csv, junit.xml. A student already graded with
the same files and the same class build is not graded again (resumable). Students are graded in
parallel; benchmarks take the GPU one at a time.

Points (docs/grading.md): each exercise's points are declared next to its tests
(COURSE_POINTS) and earned in proportion to its test cases that passed; each sanitizer run
graded on a day is worth SANITIZER_POINTS; performance points, PERFORMANCE_SHARE of the day's
correctness points, come from the benchmarks (speed against the solution's) and the SASS
checks. A part that could not run here (no GPU) is "not run": no points, none lost, never 0.
"""

from __future__ import annotations

import concurrent.futures
import csv
import fcntl
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

from . import bench as B
from . import classbuild, manifest as M
from . import results as R
from . import runner, sass, submission, testrun
from .manifest import Lab, Manifest

GRADER_VERSION = "1"
PERFORMANCE_SHARE = 0.25  # performance points of a day, as a share of its correctness points
BENCH_SHARE = 0.6  # of the performance points: the benchmarks (the rest: the SASS checks)
SANITIZER_POINTS = 5.0  # each compute-sanitizer tool a lab grades
DEFAULT_EXERCISE_POINTS = 10.0  # an exercise whose tests declare no COURSE_POINTS
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
                 sanitize_seconds: int = 0):
        # Absolute: the compile and link commands and ctest run in other folders.
        self.out, self.jobs, self.bench, self.days = os.path.abspath(out), jobs, bench, days
        self.test_timeout, self.regrade, self.ctest_jobs = test_timeout, regrade, ctest_jobs
        self.sanitize_seconds = sanitize_seconds or SANITIZE_SECONDS
        self.session = session or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.say = say


def student_dir(opts: Options, student: str) -> str:
    return os.path.join(opts.out, "students", student)


def student_manifest(m: Manifest, sdir: str, labs: List[Lab], builds: Dict[str, classbuild.DayBuild],
                     timeout: Optional[float]) -> Manifest:
    doc = M.to_json(m)
    doc["binary_dir"] = sdir
    doc["results_dir"] = os.path.join(sdir, "test-results")
    kept = []
    for d in doc["labs"]:
        b = builds.get(d["day"])
        if b is None:
            continue
        d["lab"] = {"source": b.source,
                    "tests": b.tests or os.path.join(sdir, "build", d["day"], d["day"] + "_lab_tests"),
                    "bench": b.bench or os.path.join(sdir, "build", d["day"], d["day"] + "_lab_bench"),
                    "kernel_lib": b.object}
        if timeout:
            d["timeout"] = timeout
        kept.append(d)
    doc["labs"] = kept
    path = os.path.join(sdir, "course_manifest.json")
    R.write_atomically(path, json.dumps(doc, indent=1) + "\n")
    return M.load(path)


def _q(s: str) -> str:
    return "[==[" + s + "]==]"


def write_ctest_files(sm: Manifest, sdir: str, built: Dict[str, bool],
                      sanitize_seconds: int = SANITIZE_SECONDS) -> None:
    """The student's CTestTestfile.cmake: the same tests as a course build's lab variant (the
    runner fixtures and one test per case, or the not-built placeholders), the SASS checks of
    the student's code and the graded sanitizer runs."""
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin",
                        "course")
    lines = ["# The tests of one graded student (tools/course/grade.py)."]
    for lab in sm.labs:
        script = os.path.join(sdir, "ctest", f"{lab.day}.cmake")
        R.write_atomically(script, testrun.discover(sm, lab, "lab", tool))
        lines.append(f"include({_q(script)})")
        if not built.get(lab.day):
            continue
        for check in lab.checks_for("lab"):
            name = f"{lab.day}.lab.sass.{check.name}"
            cmd = [sm.python, tool, "_sass", "--manifest", sm.path, "--day", lab.day,
                   "--variant", "lab", "--check", check.name]
            lines.append(f"add_test({_q(name)} " + " ".join(_q(c) for c in cmd) + ")")
            lines.append(f"set_tests_properties({_q(name)} PROPERTIES LABELS "
                         f"\"{lab.day};lab;host;sass\" SKIP_RETURN_CODE 77 TIMEOUT 300)")
        for tool_name in lab.sanitizers:
            name = f"{lab.day}.lab.{tool_name}"
            cmd = [sm.python, tool, "_sanitize", "--manifest", sm.path, "--day", lab.day,
                   "--variant", "lab", "--tool", tool_name, "--seconds", str(sanitize_seconds)]
            lines.append(f"add_test({_q(name)} " + " ".join(_q(c) for c in cmd) + ")")
            lines.append(f"set_tests_properties({_q(name)} PROPERTIES LABELS "
                         f"\"{lab.day};lab;gpu;sanitizer\" SKIP_RETURN_CODE 77 "
                         f"TIMEOUT {sanitize_seconds + 60} RUN_SERIAL TRUE)")
    R.write_atomically(os.path.join(sdir, "CTestTestfile.cmake"), "\n".join(lines) + "\n")
    summary = (f"\\\"{sm.python}\\\" \\\"{tool}\\\" _ctest-summary --build-dir \\\"{sdir}\\\"")
    R.write_atomically(os.path.join(sdir, "CTestCustom.cmake"),
                       f"set(CTEST_CUSTOM_PRE_TEST \"{summary} --start\")\n"
                       f"set(CTEST_CUSTOM_POST_TEST \"{summary}\")\n")


_points_cache: Dict[str, Dict[str, float]] = {}


def points_of(lab: Lab) -> Dict[str, float]:
    """The points of the lab's exercises, from the class build's test program (the same test
    code, hidden tests included, that every student's program is linked from)."""
    if lab.solution.tests not in _points_cache:
        _points_cache[lab.solution.tests] = exercise_points(lab.solution.tests)
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


def _failure_words(case: R.Case) -> str:
    label = {R.FAILED: "failed", R.CRASHED: "crashed", R.TIMED_OUT: "timed out",
             R.NOT_RUN: "not run"}.get(case.outcome, case.outcome)
    message = case.message.strip()
    lines = [l.strip() for l in message.splitlines() if l.strip()]
    # Skip GoogleTest's "file:line: Failure" / "Failed" header lines: the words come after.
    words = [l for l in lines if not re.match(r"^(\S+:\d+: )?(Failure|Failed)$", l)]
    return f"{case.name} {label}: " + (words[0][:300] if words else "(no message)")


def grade_day(lab: Lab, status: str, cases: List[R.Case], points: Dict[str, float],
              build_message: str = "", misplaced: Optional[List[str]] = None) -> dict:
    """A day's correctness grade from its cases (tests, SASS checks, sanitizer runs)."""
    day = {"day": lab.day, "title": lab.title, "status": status, "message": build_message,
           "exercises": [], "points": 0.0, "max_points": 0.0, "not_run_points": 0.0,
           "checks": [], "failures": []}
    if misplaced:
        day["message"] = "; ".join(misplaced)
    exercises = list(lab.exercises)
    extra = sorted({c.exercise or "(other tests)" for c in cases if c.kind in ("gpu", "host")}
                   - set(exercises))
    for name in exercises + extra:
        max_points = points.get(name, DEFAULT_EXERCISE_POINTS if name in exercises else 0.0)
        mine = [c for c in cases if c.kind in ("gpu", "host")
                and (c.exercise or "(other tests)") == name]
        t = R.tally(mine)
        ran = t.passed + t.failed
        entry = {"exercise": name, "max_points": max_points,
                 "tests": {o: t.counts[o] for o in R.OUTCOMES},
                 "failures": [_failure_words(c) for c in mine if R.is_failure(c.outcome)][:5]}
        if status != "graded":
            entry.update(points=0.0, status=status)
        elif ran == 0:
            entry.update(points=None, status="not_run",
                         reason=(next(iter(t.skip_reasons), "no test ran")
                                 if t.skipped else "no test of this exercise ran"))
        else:
            entry.update(points=round(max_points * t.passed / ran, 2),
                         status="partial" if t.skipped else "graded")
            if t.skipped:
                entry["reason"] = f"{t.skipped} tests skipped: {next(iter(t.skip_reasons))}"
        day["exercises"].append(entry)
        day["failures"] += entry["failures"]
    for tool in lab.sanitizers:  # every student's day has the same parts, run or not
        c = next((c for c in cases if c.kind == "sanitizer" and c.name == tool), None)
        check = {"check": tool, "outcome": c.outcome if c else R.NOT_RUN,
                 "max_points": SANITIZER_POINTS,
                 "message": first_line(c.message) if c else "not run"}
        if status != "graded":
            check["points"] = 0.0
        elif c is None or c.outcome == R.SKIPPED or (c.outcome == R.NOT_RUN
                                                     and "time" in c.message):
            check["points"] = None
        else:
            check["points"] = SANITIZER_POINTS if c.outcome == R.PASSED else 0.0
            if c.outcome != R.PASSED:
                day["failures"].append(f"{tool}: {first_line(c.message)}")
        day["checks"].append(check)
    for part in day["exercises"] + day["checks"]:
        day["max_points"] += part["max_points"]
        if part["points"] is None:
            day["not_run_points"] += part["max_points"]
        else:
            day["points"] += part["points"]
    day["points"] = round(day["points"], 2)
    return day


def performance(lab: Lab, day: dict, cases: List[R.Case], bench_rows: Optional[List[B.Row]],
                ref_rows: Optional[List[B.Row]], bench_note: str, forfeit: bool = False) -> dict:
    """Performance points: the benchmarks against the solution, and the SASS checks. forfeit:
    the benchmarks were not run because a test failed, so their points are lost (0), where
    bench_rows None without forfeit means they could not run here (not run: null)."""
    max_points = round(PERFORMANCE_SHARE * day["max_points"], 2)
    sass = [c for c in cases if c.kind == "sass"]
    sass_share = (1.0 - BENCH_SHARE) if sass else 0.0
    bench_max = round(max_points * (1.0 - sass_share), 2)
    sass_max = round(max_points - bench_max, 2)
    perf = {"max_points": max_points, "points": 0.0, "benchmarks": [], "sass": [],
            "bench_max_points": bench_max, "sass_max_points": sass_max, "note": bench_note}
    if day["status"] != "graded":
        perf["points"] = 0.0
        return perf
    ran_sass = [c for c in sass if c.outcome in (R.PASSED, R.FAILED)]
    for c in sass:
        perf["sass"].append({"check": c.name, "outcome": c.outcome,
                             "message": first_line(c.message) if c.outcome != R.PASSED else ""})
    sass_points = None
    if ran_sass:
        sass_points = sass_max * sum(c.outcome == R.PASSED for c in ran_sass) / len(ran_sass)
    bench_points = 0.0 if forfeit else None
    if bench_rows is not None and not forfeit:
        refs = {r.name: r for r in (ref_rows or [])}
        fractions = []
        for r in bench_rows:
            ref = refs.get(r.name)
            row = {"name": r.name, "median_us": r.median_us, "GB/s": r.gbs, "%copy": r.pct_copy,
                   "solution_median_us": ref.median_us if ref else None, "error": r.error}
            if r.error or not r.median_us:
                row["fraction"] = 0.0
            elif ref and ref.median_us:
                row["ratio"] = round(ref.median_us / r.median_us, 3)
                row["fraction"] = round(speed_fraction(ref.median_us / r.median_us), 3)
            else:
                row["fraction"] = None  # the solution's row is missing: not scored
            if row["fraction"] is not None:
                fractions.append(row["fraction"])
            perf["benchmarks"].append(row)
        if fractions:
            bench_points = bench_max * sum(fractions) / len(fractions)
    parts = [p for p in (bench_points, sass_points) if p is not None]
    perf["points"] = round(sum(parts), 2) if parts else None
    perf["not_run_points"] = round((bench_max if bench_points is None else 0.0)
                                   + (sass_max if sass_points is None else 0.0), 2)
    return perf


class GpuLock:
    """The GPU shared between students graded at once, across threads and processes (file
    locks in the gradebook's folder). Tests share the GPU (`GpuLock(out, "tests")`: any number
    at once); a benchmark has it alone (`GpuLock(out, "bench")`): it waits until the tests
    running now are done, and no test starts until it is, so no timing is taken beside another
    student's kernels. A waiting benchmark goes first: a test takes the turnstile before its
    shared lock, and the benchmark holds the turnstile while it waits and runs, so a stream of
    tests cannot keep it waiting for ever."""

    def __init__(self, out: str, use: str):
        assert use in ("tests", "bench")
        self.out, self.use = out, use

    def __enter__(self):
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
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.gpu, fcntl.LOCK_UN)
        if self.use == "bench":
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.gpu.close()
        self.turnstile.close()


def reference_bench(m: Manifest, lab: Lab, opts: Options) -> Optional[B.BenchRun]:
    """The solution's GRADE_BENCHMARKS rows, measured once per grading session."""
    path = os.path.join(opts.out, "reference", f"bench-{lab.day}.json")
    if os.path.exists(path):
        try:
            run = B.load(path)
            if run.context.get("course_session") == opts.session:
                return run
        except ValueError:
            pass
    context = f"course_student=reference,course_lab={lab.day},course_session={opts.session}"
    try:
        run = B.run_benchmark(lab.solution.bench, path, filter_=lab.grade_benchmarks,
                              extra=[f"--benchmark_context={context}"])
    except (RuntimeError, ValueError, OSError) as e:
        opts.say(f"  the solution's benchmarks of {lab.day} did not run: {e}")
        return None
    return run


def grade_student(m: Manifest, folder: str, opts: Options, commands: Dict[str, classbuild.Commands],
                  labs: List[Lab]) -> dict:
    sub = submission.find(folder, labs)
    sdir = student_dir(opts, sub.student)
    fingerprint = hashlib.sha1(f"{sub.fingerprint()}:{class_id(m)}:{opts.bench}:"
                               f"{','.join(l.day for l in labs)}".encode()).hexdigest()[:16]
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
    opts.say(f"{sub.student}: grading {len(sub.kernels)} days handed in")
    for name in ("test-results", "ctest", "build", "build-logs"):
        shutil.rmtree(os.path.join(sdir, name), ignore_errors=True)
    os.makedirs(sdir, exist_ok=True)
    builds: Dict[str, classbuild.DayBuild] = {}
    build_start = time.monotonic()

    def build(lab: Lab) -> classbuild.DayBuild:
        with COMPILE_SLOTS:  # all students' compiles share the machine's cores
            return classbuild.build_day(
                commands[lab.day], lab, sub.kernels[lab.day],
                os.path.join(sdir, "build", lab.day), os.path.join(opts.out, "cache"),
                os.path.join(sdir, "build-logs", f"{lab.day}_lab.log"))

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
    # Disassemble each compiled day once, for all its SASS checks (they run as ctest tests).
    for lab in todo:
        if builds[lab.day].status == "built" and lab.checks_for("lab"):
            try:
                sass.disassemble(builds[lab.day].object, m.cuobjdump,
                                 os.path.join(sdir, "sass-cache"))
            except (sass.ToolMissing, RuntimeError, OSError):
                pass  # the checks themselves will say so
    sm = student_manifest(m, sdir, labs, builds, opts.test_timeout)
    write_ctest_files(sm, sdir, {d: b.status == "built" for d, b in builds.items()},
                      opts.sanitize_seconds)

    # The tests, through ctest, with a seed nobody knows in advance.
    env = dict(os.environ, COURSE_SEED=str(secrets.randbits(62)))
    env.pop("COURSE_TEST_SHARDS", None)
    test_start = time.monotonic()
    with GpuLock(opts.out, "tests"):  # never beside another student's benchmark
        ctest = subprocess.run(["ctest", "--test-dir", sdir, "-j", str(opts.ctest_jobs),
                                "--output-junit", os.path.join(sdir, "junit.xml")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", env=env)
    with open(os.path.join(sdir, "ctest.log"), "w", encoding="utf-8") as f:
        f.write(ctest.stdout)
    test_seconds = time.monotonic() - test_start
    junit: List[R.CtestTest] = []
    try:
        with open(os.path.join(sdir, "junit.xml"), encoding="utf-8", errors="replace") as f:
            junit = R.parse_ctest_junit(f.read())
    except (OSError, ValueError) as e:
        opts.say(f"{sub.student}: ctest's JUnit file could not be read ({e})")

    days = []
    gpu = ""
    for lab in labs:
        if lab.day not in sub.kernels:
            day = grade_day(lab, "not_submitted", [], points_of(lab),
                            misplaced=sub.misplaced.get(lab.day))
            if not sub.misplaced.get(lab.day):
                day["message"] = (f"not handed in: no labs/{lab.name}/kernel.cu or "
                                  f"{lab.name}/kernel.cu in the submission")
            day["performance"] = performance(lab, day, [], None, None, "")
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
                check = next((c for c in lab.sass_checks if c.name == ".".join(parts[3:])), None)
                cases.append(R.Case(".".join(parts[2:]), t.status,
                                    message="\n".join(t.output.splitlines()[0:1]).split(": ", 1)[-1],
                                    exercise=check.exercise if check else "", kind="sass"))
            elif len(parts) == 3 and parts[0] == lab.day and parts[2] in lab.sanitizers:
                cases.append(R.Case(parts[2], t.status, message=t.output.strip()[:2000],
                                    kind="sanitizer"))
        if b.status != "built":
            status = b.status
            message = testrun.not_built_text(sm, sm.find(lab.day), "lab")
            day = grade_day(lab, status, cases, points_of(lab), build_message=message)
        else:
            if not any(c.kind in ("gpu", "host") for c in cases):
                # The runner left nothing: every case is NOT RUN, in words, never absent.
                for t in junit:
                    if t.name.startswith(f"{lab.day}.lab.") and ".sass." not in t.name:
                        cases.append(R.Case(t.name[len(lab.day) + 5:], R.NOT_RUN,
                                            message=first_line(t.output),
                                            exercise=lab.exercise_of(t.name[len(lab.day) + 5:])))
            day = grade_day(lab, "graded", cases, points_of(lab))
        # Benchmarks only where every test ran and passed.
        bench_rows = ref_rows = None
        note = ""
        forfeit = False
        tests = [c for c in cases if c.kind in ("gpu", "host")]
        t = R.tally(tests)
        if day["status"] != "graded":
            note = "not timed: the day did not build"
        elif not opts.bench:
            note = "not timed: benchmarks were not asked for (--no-bench)"
        elif t.failed:
            note = (f"not timed: {t.failed} tests failed (an incorrect kernel is never timed: "
                    "no benchmark points)")
            forfeit = True
        elif t.skipped or not t.passed:
            note = "not timed: the tests could not all run here (no GPU?)"
        else:
            with GpuLock(opts.out, "bench"):  # the GPU alone: no test of anyone beside it
                ref = reference_bench(m, lab, opts)
                ref_rows = ref.rows if ref else None
                seed = str(secrets.randbits(62))
                context = ",".join([
                    f"course_student={sub.student}", f"course_lab={lab.day}",
                    f"course_gpu={gpu_model(gpu).replace(',', ' ')}", "course_tests=passed",
                    "course_seed=secret", f"course_run={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
                    f"course_session={opts.session}"])
                try:
                    run = B.run_benchmark(b.bench, os.path.join(sdir, f"bench-{lab.day}.json"),
                                          filter_=lab.grade_benchmarks,
                                          extra=[f"--benchmark_context={context}"],
                                          env=dict(os.environ, COURSE_SEED=seed))
                    if run.skipped:
                        note = f"not timed: {run.skipped}"
                    else:
                        bench_rows = run.rows
                except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
                    note = f"the benchmark program did not run to its end: {first_line(str(e))}"
                    bench_rows = []
        day["performance"] = performance(lab, day, cases, bench_rows, ref_rows, note, forfeit)
        days.append(day)

    grade = {
        "format": 1, "student": sub.student, "fingerprint": fingerprint,
        "graded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session": opts.session, "gpu": gpu, "submission": sub.to_json(),
        "seconds": {"build": round(build_seconds, 1), "tests": round(test_seconds, 1),
                    "total": round(time.monotonic() - started, 1)},
        "days": days,
    }
    total(grade)
    R.write_atomically(os.path.join(sdir, "report.md"), render_report(grade))
    R.write_atomically(done, json.dumps(grade, indent=1) + "\n")
    opts.say(f"{sub.student}: {grade['points']:g} of {grade['max_points']:g} points"
             + (f" ({grade['not_run_points']:g} not run here)" if grade["not_run_points"] else "")
             + f" in {grade['seconds']['total']:.0f} s")
    return grade


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
    return f"not run / {mx:g}" if p is None else f"{p:g} / {mx:g}"


def render_report(g: dict) -> str:
    out = [f"# Grade report: {g['student']}", ""]
    out.append(f"Graded {g['graded']}" + (f" on {gpu_model(g['gpu'])}" if g.get("gpu") else
                                          " on a machine without a GPU"))
    out.append("")
    out.append(f"**Total: {g['points']:g} of {g['max_points']:g} points**"
               + (f" ({g['not_run_points']:g} points could not be graded here: not run, "
                  "neither earned nor lost)" if g["not_run_points"] else ""))
    sub = g["submission"]
    out += ["", "## What was handed in", ""]
    for day, rel in sorted(sub["kernels"].items()):
        out.append(f"- {day}: `{rel}`")
    for day, msgs in sorted(sub["misplaced"].items()):
        for msg in msgs:
            out.append(f"- {day}: **{msg}**")
    if sub["unused"]:
        out.append(f"- not used: " + ", ".join(f"`{u}`" for u in sub["unused"][:30])
                   + (f" and {len(sub['unused']) - 30} more" if len(sub["unused"]) > 30 else ""))
    for p in sub["problems"]:
        out.append(f"- {p}")
    out += ["", "## Days", "", "| day | status | correctness | performance |", "|---|---|---|---|"]
    for d in g["days"]:
        perf = d.get("performance", {})
        not_run = f" ({d['not_run_points']:g} not run)" if d["not_run_points"] else ""
        out.append(f"| {d['day']} | {d['status'].replace('_', ' ')} | "
                   f"{fmt_points(d['points'], d['max_points'])}{not_run} | "
                   f"{fmt_points(perf.get('points'), perf.get('max_points', 0))} |")
    for d in g["days"]:
        out += ["", f"### {d['day']}: {d['title']}", ""]
        if d["message"]:
            out += ["```", d["message"].rstrip()[:4000], "```", ""]
        if d["status"] == "not_submitted":
            continue
        for e in d["exercises"]:
            t = e["tests"]
            line = (f"- {e['exercise']}: {fmt_points(e['points'], e['max_points'])} "
                    f"({t['passed']} passed, {sum(t[o] for o in R.FAILURES)} failed, "
                    f"{t['skipped']} skipped)")
            if e.get("reason"):
                line += f"; {e['reason']}"
            out.append(line)
            for f in e["failures"][:3]:
                out.append(f"  - {f}")
        for c in d["checks"]:
            out.append(f"- {c['check']}: {fmt_points(c['points'], c['max_points'])}"
                       + (f" — {c['message']}" if c["outcome"] != R.PASSED and c["message"] else ""))
        perf = d.get("performance", {})
        if perf.get("benchmarks"):
            out += ["", "| benchmark | yours (µs) | solution (µs) | speed | points |",
                    "|---|---:|---:|---:|---:|"]
            for r in perf["benchmarks"]:
                speed = f"{r['ratio']:.2f}x" if r.get("ratio") else (r.get("error") or "-")
                frac = "-" if r.get("fraction") is None else f"{r['fraction']:.0%}"
                out.append(f"| {r['name']} | {B.fmt(r.get('median_us'), 1)} | "
                           f"{B.fmt(r.get('solution_median_us'), 1)} | {speed} | {frac} |")
        if perf.get("note"):
            out.append(f"\nBenchmarks: {perf['note']}.")
        bad_sass = [s for s in perf.get("sass", []) if s["outcome"] != R.PASSED]
        for s in bad_sass:
            out.append(f"- SASS check {s['check']}: {s['outcome']}: {s['message']}")
    return "\n".join(out) + "\n"


def write_class_files(opts: Options, grades: List[dict]) -> None:
    grades = sorted(grades, key=lambda g: g["student"])
    book = {"format": 1, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "policy": {"performance_share": PERFORMANCE_SHARE, "bench_share": BENCH_SHARE,
                       "sanitizer_points": SANITIZER_POINTS, "full_speed": FULL_SPEED,
                       "zero_speed": ZERO_SPEED},
            "students": [{k: g[k] for k in ("student", "points", "max_points", "not_run_points",
                                            "graded", "gpu", "days", "submission")}
                         for g in grades]}
    R.write_atomically(os.path.join(opts.out, "gradebook.json"), json.dumps(book, indent=1) + "\n")
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student", "day", "part", "status", "points", "max_points", "not_run_points",
                "passed", "failed", "skipped", "failures"])

    def cell(points):
        return "not run" if points is None else points

    for g in grades:
        w.writerow([g["student"], "(total)", "", "", g["points"], g["max_points"],
                    g["not_run_points"], "", "", "", ""])
        for d in g["days"]:
            all_not_run = d["status"] == "graded" and d["not_run_points"] >= d["max_points"]
            w.writerow([g["student"], d["day"], "(correctness)", d["status"],
                        "not run" if all_not_run else d["points"], d["max_points"],
                        d["not_run_points"], "", "", "", first_line(d["message"])])
            for e in d["exercises"]:
                t = e["tests"]
                w.writerow([g["student"], d["day"], e["exercise"], e.get("status", ""),
                            cell(e["points"]), e["max_points"],
                            e["max_points"] if e["points"] is None else 0,
                            t["passed"], sum(t[o] for o in R.FAILURES), t["skipped"],
                            " | ".join(e["failures"][:3])])
            for c in d["checks"]:
                w.writerow([g["student"], d["day"], c["check"], c["outcome"], cell(c["points"]),
                            c["max_points"], c["max_points"] if c["points"] is None else 0,
                            "", "", "", c["message"] if c["outcome"] != R.PASSED else ""])
            perf = d.get("performance", {})
            w.writerow([g["student"], d["day"], "(performance)", "", cell(perf.get("points")),
                        perf.get("max_points", 0), perf.get("not_run_points", 0), "", "", "",
                        perf.get("note", "")])
    R.write_atomically(os.path.join(opts.out, "gradebook.csv"), buf.getvalue())
    write_class_junit(opts, grades)


def write_class_junit(opts: Options, grades: List[dict]) -> None:
    """Every student's ctest JUnit in one file, one testsuite per student, plus a failing case
    for every day not handed in (a day is never absent)."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    root = ET.Element("testsuites", name="course grade")
    for g in grades:
        suite = ET.SubElement(root, "testsuite", name=g["student"])
        path = os.path.join(student_dir(opts, g["student"]), "junit.xml")
        count = failures = skipped = 0
        if os.path.exists(path):
            try:
                for tc in ET.parse(path).getroot().iter("testcase"):
                    tc.set("classname", f"{g['student']}.{tc.get('name', '').split('.')[0]}")
                    suite.append(tc)
                    count += 1
                    failures += tc.get("status") == "fail"
                    skipped += tc.get("status") in ("notrun", "disabled")
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
        suite.set("skipped", str(skipped))
    R.write_atomically(os.path.join(opts.out, "junit.xml"),
                       ET.tostring(root, encoding="unicode") + "\n")


def class_table(grades: List[dict]) -> str:
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
                    cell += f" (+{d['not_run_points']:g} not run)"
                p = perf.get("points")
                cell += " / perf " + ("not run" if p is None else f"{p:g}")
                row.append(cell)
        row.append(f"{g['points']:g} of {g['max_points']:g}")
        rows.append(row)
    header = ["student"] + days + ["total"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: " | ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] + [line(r) for r in rows])


def load_grades(out: str) -> List[dict]:
    grades = []
    for path in sorted(glob_grades(out)):
        try:
            grades.append(R.read_json(path))
        except ValueError as e:
            print(f"course grade: {e} (skipped; grade that student again)", file=sys.stderr)
    return grades


def glob_grades(out: str) -> List[str]:
    base = os.path.join(out, "students")
    if not os.path.isdir(base):
        return []
    return [os.path.join(base, s, "grade.json") for s in os.listdir(base)
            if os.path.exists(os.path.join(base, s, "grade.json"))]


# ------------------------------------------------------------------------------- the class


def students_in(submissions: str) -> List[str]:
    return sorted(os.path.join(submissions, d) for d in os.listdir(submissions)
                  if os.path.isdir(os.path.join(submissions, d)) and not d.startswith("."))


def grade_class(m: Manifest, submissions: str, opts: Options,
                only: Optional[List[int]] = None, merge: bool = True) -> int:
    submissions = os.path.abspath(submissions)
    missing = classbuild.programs_missing(m)
    if missing:
        raise classbuild.ClassBuildError(
            "the class build is not built (missing " + ", ".join(missing[:3]) + "...): "
            f"cmake --build {m.binary_dir}")
    labs = [l for l in m.labs if not opts.days or l.day in opts.days]
    commands = {lab.day: classbuild.commands_for(m, lab) for lab in labs}
    folders = students_in(submissions)
    if only is not None:
        folders = [folders[i] for i in only if 0 <= i < len(folders)]
    if not folders:
        opts.say(f"no student folders in {submissions}")
        return 2
    os.makedirs(opts.out, exist_ok=True)
    opts.say(f"grading {len(folders)} students in {submissions} into {opts.out} "
             f"(class build {m.binary_dir}; {opts.jobs} at a time)")
    errors = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = {pool.submit(grade_student, m, f, opts, commands, labs): f for f in folders}
        for fut in concurrent.futures.as_completed(futures):
            try:
                fut.result()
            except Exception as e:  # noqa: BLE001 (one student's failure never stops the class)
                errors += 1
                opts.say(f"{os.path.basename(futures[fut])}: the grader failed on this student: "
                         f"{type(e).__name__}: {e}")
    if merge:
        grades = load_grades(opts.out)
        write_class_files(opts, grades)
        opts.say("\n" + class_table(grades))
        opts.say(f"gradebook: {os.path.join(opts.out, 'gradebook.csv')} and .json; reports: "
                 f"{os.path.join(opts.out, 'students', '<student>', 'report.md')}; "
                 f"JUnit: {os.path.join(opts.out, 'junit.xml')}")
    return 1 if errors else 0
