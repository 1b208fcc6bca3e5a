"""Tests of the grader (tools/course/grade.py, submission.py, classbuild.py), without a GPU.

The end-to-end test grades a small synthetic class (tests/grading/synthetic_class.py) against
the build in COURSE_BUILD_DIR (set by ctest); it skips without one.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "grading"))

from course import bench as B  # noqa: E402
from course import grade, manifest, submission  # noqa: E402
from course import results as R  # noqa: E402

BUILD = os.environ.get("COURSE_BUILD_DIR", "")


def lab(day="d05", name="d05_warp_programming", exercises=("WarpSoftmax", "BlockSoftmax")):
    progs = manifest.Programs("k.cu", "t", "b", "l.a")
    return manifest.Lab(day, name, "T", list(exercises), [], [], 60.0, progs, progs, [],
                        sanitizers=["memcheck"])


def touch(root, rel, text="x"):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class SubmissionTest(unittest.TestCase):
    def test_expected_places_are_graded_and_near_misses_are_reported(self):
        labs = [lab("d01", "d01_first_kernels"), lab("d02", "d02_coalescing"),
                lab("d03", "d03_ptx_shuffles"), lab("d05"), lab("d06", "d06_reduction_norms")]
        with tempfile.TemporaryDirectory() as d:
            touch(d, "labs/d01_first_kernels/kernel.cu")
            touch(d, "d02_coalescing/kernel.cu")
            touch(d, "d03/kernel.cu")
            touch(d, "d05_warp_programming/Kernel.cu")
            touch(d, "d06.cu")
            touch(d, "README.txt")
            touch(d, ".git/config")
            sub = submission.find(d, labs)
        self.assertEqual(sorted(sub.kernels), ["d01", "d02"])
        self.assertIn("found d03/kernel.cu — expected labs/d03_ptx_shuffles/kernel.cu",
                      sub.misplaced["d03"][0])
        self.assertIn("found d05_warp_programming/Kernel.cu", sub.misplaced["d05"][0])
        self.assertIn("found d06.cu", sub.misplaced["d06"][0])
        self.assertEqual(sub.unused, ["README.txt"])

    def test_a_student_id_is_the_folder_name_itself(self):
        for name in ("Ana María <x>", "张伟", "x", "x_", "..a", "a,b=c"):
            self.assertEqual(submission.student_id(name), name)


class DependencyTest(unittest.TestCase):
    """What a kernel.cu may include, wherever the course and the toolkit are checked out."""

    def test_the_course_and_the_toolkit_may_live_under_private_places(self):
        from course import objcheck
        for tree in ("/tmp/ci", "/home/ana/course", "/srv/course"):
            with self.subTest(tree=tree):
                deps = [f"{tree}/labs/d01_first_kernels/lab.h", f"{tree}/common/course/check.h",
                        "/home/ana/cuda/include/cuda_runtime.h", "/usr/include/c++/12/vector"]
                self.assertEqual(objcheck.dependency_problems(
                    deps, tree, [f"{tree}/build", "/tmp/grades"], f"/tmp/grades/s/kernel.cu",
                    toolkit="/home/ana/cuda"), [])
                bad = objcheck.dependency_problems(
                    [f"{tree}/solutions/d01_first_kernels/kernel.cu", "/tmp/grades/bob/kernel.cu",
                     "/home/ana/notes.h", f"{tree}/tests/mutants/d01.json"],
                    tree, [f"{tree}/build", "/tmp/grades"], "/tmp/grades/s/kernel.cu",
                    toolkit="/home/ana/cuda")
                self.assertEqual(len(bad), 4, bad)
                self.assertIn("solutions are not yours", bad[0])


class ForbiddenCallTest(unittest.TestCase):
    """A stream that does not wait for the default stream would take a kernel's work out of the
    benchmark's events (they are recorded on the default stream): the object check names it, and
    the driver entry point that would reach cuStreamCreate by name; a plain cudaStreamCreate,
    which waits, passes."""

    def test_a_non_blocking_stream_is_named(self):
        import shutil as sh
        from course import objcheck
        cxx = sh.which("c++") or sh.which("g++")
        include = next((d for d in ("/usr/local/cuda/include", "/usr/local/cuda/targets/"
                                    "x86_64-linux/include") if os.path.isdir(d)), "")
        if not cxx or not include or not sh.which("nm"):
            self.skipTest("needs a C++ compiler, nm and the CUDA headers")
        base = objcheck.Baseline(set(), set(), frozenset(), frozenset())
        with tempfile.TemporaryDirectory() as t:
            entry = ("void* fn = nullptr; cudaDriverEntryPointQueryResult found; "
                     "cudaGetDriverEntryPointByVersion(\"cuStreamCreate\", &fn, 12000, "
                     "cudaEnableDefault, &found)")
            for call, flagged in (("cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)", True),
                                  ("cudaStreamCreate(&s)", False), (entry, True)):
                src, obj = os.path.join(t, "k.cpp"), os.path.join(t, "k.o")
                with open(src, "w") as f:
                    f.write("#include <cuda_runtime_api.h>\n"
                            f"cudaStream_t make() {{ cudaStream_t s; {call}; return s; }}\n")
                subprocess.run([cxx, "-c", "-I", include, src, "-o", obj], check=True)
                problems = objcheck.symbol_problems(obj, base)
                with self.subTest(call=call):
                    named = [p for p in problems if "cudaStreamCreateWithFlags" in p
                             or "cudaGetDriverEntryPoint" in p]
                    self.assertEqual(bool(named), flagged, problems)
                    if flagged:
                        self.assertRegex(named[0], "the benchmark's timed events would miss|"
                                                   "outside the benchmark's timed events")
            # The last object (the entry point's) on a day whose own kernels call what it calls
            # (Day 13's JIT, the TMA descriptors): allowed.
            allowed = objcheck.Baseline(set(), set(objcheck.read_symbols(obj).undefined),
                                        frozenset(), frozenset())
            self.assertEqual(objcheck.symbol_problems(obj, allowed), [])


class BaselineCacheTest(unittest.TestCase):
    """The day's object-check baseline is read from the programs once per version, then from the
    file beside the reference program: a new process (every `course check`) reads the file."""

    def test_read_once_per_version_then_from_the_file(self):
        from unittest import mock
        from course import objcheck
        reads = []

        def fake_read(sol, start, ref):
            reads.append(ref)
            return objcheck.Baseline({"api"}, {"call"}, frozenset({"p"}), frozenset({"l"}))

        with tempfile.TemporaryDirectory() as t, \
                mock.patch.object(objcheck, "_read_baseline", side_effect=fake_read):
            ref = os.path.join(t, "d01_solution_tests")
            with open(ref, "w") as f:
                f.write("v1")
            for _ in range(2):  # two processes: the in-memory cache emptied between them
                objcheck._baselines.clear()
                base = objcheck.baseline("", "", ref)
            self.assertEqual(len(reads), 1)
            self.assertEqual(base.api, {"api"})
            self.assertEqual(base.program_defined, frozenset({"p"}))
            with open(ref, "w") as f:  # rebuilt: another version, read again
                f.write("version two")
            objcheck._baselines.clear()
            objcheck.baseline("", "", ref)
            self.assertEqual(len(reads), 2)
            files = [n for n in os.listdir(t) if n.startswith(".objcheck-baseline-")]
            self.assertEqual(len(files), 1, files)  # the older version's file is gone
            with open(os.path.join(t, files[0]), "w") as f:
                f.write("{not json")
            objcheck._baselines.clear()
            objcheck.baseline("", "", ref)
            self.assertEqual(len(reads), 3)  # a broken file is read again, not trusted


class CtestFilesTest(unittest.TestCase):
    """The student's CTestTestfile.cmake is the course build's registration (testrun.discover)
    plus the graded sanitizer runs, which carry the time limit the instructor gave (`course grade
    --sanitize-timeout`), in the command and in ctest's TIMEOUT."""

    def files(self, seconds=None, only_if_passed=False) -> str:
        with tempfile.TemporaryDirectory() as t:
            tests = os.path.join(t, "d05_lab_tests")
            with open(tests, "w") as f:  # a program that lists two cases
                f.write("#!/bin/sh\necho 'WarpSoftmax.'\necho '  a'\necho '  b'\n")
            os.chmod(tests, 0o755)
            progs = manifest.Programs("k.cu", tests, "b", os.path.join(t, "missing.o"))
            lab_ = manifest.Lab("d05", "d05_warp_programming", "T", ["WarpSoftmax"], [], [],
                                60.0, progs, progs, [], sanitizers=["memcheck"])
            grading = {"verify": True}
            if seconds:
                grading["sanitize_seconds"] = seconds
            if only_if_passed:
                grading["sanitize_only_if_passed"] = True
            m = manifest.Manifest(os.path.join(t, "course_manifest.json"), ROOT, t, sys.executable,
                                  "cuobjdump", "90a", t, 1200.0, [lab_], grading=grading)
            grade.write_ctest_files(m, t)
            with open(os.path.join(t, "ctest", "d05.cmake")) as f:
                return f.read()

    def test_the_sanitizer_runs_take_the_instructors_time_limit(self):
        text = self.files(seconds=120)
        line = next(l for l in text.splitlines() if l.startswith("add_test([==[d05.lab.memcheck"))
        self.assertIn("[==[--seconds]==] [==[120]==]", line)
        self.assertIn("TIMEOUT 180 RUN_SERIAL TRUE", text)
        self.assertIn("add_test([==[d05.lab.WarpSoftmax.a]==]", text)

    def test_sanitizing_only_passing_days_waits_for_the_days_run(self):
        # `--sanitize-only-if-passed` (planted bugs): the checker reads the day's results, so
        # it must come after the day's run; a class's grading keeps the runs independent.
        self.assertNotIn("FIXTURES_REQUIRED [==[d05.lab.run]==])", self.files())
        text = self.files(only_if_passed=True)
        line = next(l for l in text.splitlines()
                    if l.startswith("set_tests_properties([==[d05.lab.memcheck"))
        self.assertIn("RUN_SERIAL TRUE FIXTURES_REQUIRED [==[d05.lab.run]==])", line)

    def test_a_day_with_a_failed_case_is_not_sanitized_in_that_mode(self):
        from course import results as R, testrun  # noqa: PLC0415
        with tempfile.TemporaryDirectory() as t:
            progs = manifest.Programs("k.cu", "t", "b", "o")
            lab_ = manifest.Lab("d05", "d05_warp_programming", "T", ["S"], [], [], 60.0,
                                progs, progs, [], sanitizers=["memcheck"])
            m = manifest.Manifest(os.path.join(t, "m.json"), ROOT, t, sys.executable,
                                  "cuobjdump", "90a", t, 1200.0, [lab_])
            folder = testrun.case_dir(m, lab_, "lab")
            os.makedirs(folder)
            for name, outcome in (("S.a", R.PASSED), ("S.b", "failed")):
                with open(testrun.case_path(m, lab_, "lab", name), "w") as f:
                    f.write(outcome + "\nreport\n")
            self.assertEqual(testrun.cases_not_passed(m, lab_, "lab", ["S.a", "S.b", "S.c"]),
                             ["S.b", "S.c"])  # S.c: never recorded
            self.assertEqual(testrun.cases_not_passed(m, lab_, "lab", ["S.a"]), [])
        self.assertTrue(grade.Options(out="x", sanitize_only_if_passed=True)
                        .sanitize_only_if_passed)
        self.assertFalse(grade.Options(out="x").sanitize_only_if_passed)

    def test_the_replay_is_on_unless_switched_off_to_measure_it(self):
        from course import cli  # noqa: PLC0415
        self.assertTrue(grade.Options(out="x").replay)
        self.assertFalse(grade.Options(out="x", replay=False).replay)
        grade_parser = cli.build_parser()._subparsers._group_actions[0].choices["grade"]
        self.assertFalse(grade_parser.parse_args(["c"]).no_replay)
        self.assertTrue(grade_parser.parse_args(["c", "--no-replay"]).no_replay)
        self.assertIn("forge its verdicts", " ".join(grade_parser.format_help().split()))

    def test_the_default_is_the_graders(self):
        self.assertEqual(grade.Options(out="x").sanitize_seconds, grade.SANITIZE_SECONDS)
        self.assertEqual(grade.Options(out="x", sanitize_seconds=90).sanitize_seconds, 90)

    def test_the_help_names_the_same_default(self):
        from course import cli  # noqa: PLC0415
        grade_parser = cli.build_parser()._subparsers._group_actions[0].choices["grade"]
        help_text = grade_parser.format_help()
        self.assertIn(f"(default: {grade.SANITIZE_SECONDS})", " ".join(help_text.split()))


class SerialRunTest(unittest.TestCase):
    """A day's serial cases (lab.json's serial_suites, the largest allocations) run one such run
    at a time beside the rest of the suite; a run that holds a timing suite has the GPU alone."""

    def serial_props(self, timing):
        from course import testrun  # noqa: PLC0415
        with tempfile.TemporaryDirectory() as t:
            tests = os.path.join(t, "d01_lab_tests")
            with open(tests, "w") as f:  # a program that lists a normal and a serial case
                f.write("#!/bin/sh\necho 'Add.'\necho '  a'\necho 'Timing.'\necho '  b'\n")
            os.chmod(tests, 0o755)
            progs = manifest.Programs("k.cu", tests, "b", os.path.join(t, "missing.o"))
            lab_ = manifest.Lab("d01", "d01_first_kernels", "T", ["Add", "Timing"], [],
                                ["Timing"], 60.0, progs, progs, [], timing_suites=timing)
            m = manifest.Manifest(os.path.join(t, "course_manifest.json"), ROOT, t, sys.executable,
                                  "cuobjdump", "90a", t, 1200.0, [lab_])
            text = testrun.discover(m, lab_, "lab", "course")
        lines = {name: l for l in text.splitlines() if l.startswith("set_tests_properties(")
                 for name in ("run]", "run_serial]") if f"d01.lab.{name}" in l.split()[0]}
        return lines["run]"], lines["run_serial]"]

    def test_a_large_input_run_takes_the_memory_lock_not_the_whole_gpu(self):
        main, serial = self.serial_props(timing=[])
        self.assertIn("RESOURCE_LOCK course_gpu_memory", serial)
        self.assertNotIn("RUN_SERIAL", serial)
        self.assertNotIn("RESOURCE_LOCK", main)

    def test_a_run_with_a_timing_suite_has_the_gpu_alone(self):
        _, serial = self.serial_props(timing=["Timing"])
        self.assertIn("RUN_SERIAL TRUE", serial)


class PointsTest(unittest.TestCase):
    def test_speed_earns_points_between_half_and_nine_tenths_of_the_solutions(self):
        self.assertEqual(grade.speed_fraction(1.2), 1.0)
        self.assertEqual(grade.speed_fraction(0.9), 1.0)
        self.assertAlmostEqual(grade.speed_fraction(0.7), 0.5)
        self.assertEqual(grade.speed_fraction(0.3), 0.0)

    def test_an_exercise_earns_the_share_of_its_cases_that_passed(self):
        cases = [R.Case("S/WarpSoftmax.a", R.PASSED, exercise="WarpSoftmax"),
                 R.Case("S/WarpSoftmax.b", R.CRASHED, message="killed by SIGSEGV",
                        exercise="WarpSoftmax"),
                 R.Case("BlockSoftmax.c", R.SKIPPED, message="no GPU here",
                        exercise="BlockSoftmax"),
                 R.Case("memcheck", R.FAILED, message="FAILED: 3 errors", kind="sanitizer")]
        day = grade.grade_day(lab(), "graded", cases, {"WarpSoftmax": 10, "BlockSoftmax": 20})
        warp, block = day["exercises"]
        self.assertEqual(warp["points"], 5.0)
        self.assertIn("S/WarpSoftmax.b crashed: killed by SIGSEGV", warp["failures"][0])
        self.assertEqual(block["points"], 0.0)  # did not run: earns nothing, says why
        self.assertEqual(block["status"], "not_run")
        self.assertIn("did not run (no points): no GPU here", block["reason"])
        self.assertEqual(day["checks"][0]["points"], 0.0)
        self.assertEqual(day["max_points"], 10 + 20 + grade.SANITIZER_POINTS)
        self.assertEqual(day["not_run_points"], 20)
        self.assertEqual(day["points"], 5.0)

    def test_skipped_cases_of_a_partly_run_exercise_earn_nothing(self):
        # Three passed and three skipped: half the points, never all of them.
        cases = [R.Case(f"S/WarpSoftmax.{i}", R.PASSED, exercise="WarpSoftmax") for i in range(3)]
        cases += [R.Case(f"S/WarpSoftmax.s{i}", R.SKIPPED, message="needs sm_90",
                         exercise="WarpSoftmax") for i in range(3)]
        day = grade.grade_day(lab(), "graded", cases, {"WarpSoftmax": 10, "BlockSoftmax": 20})
        warp = day["exercises"][0]
        self.assertEqual(warp["points"], 5.0)
        self.assertEqual(warp["status"], "partial")
        self.assertEqual(warp["not_run_points"], 5.0)

    def test_a_sanitizer_run_that_did_not_finish_fails(self):
        cases = [R.Case("S/WarpSoftmax.a", R.PASSED, exercise="WarpSoftmax"),
                 R.Case("memcheck", R.FAILED, kind="sanitizer",
                        message="FAILED: memcheck did not finish 12 tests within 300 s")]
        day = grade.grade_day(lab(), "graded", cases, {"WarpSoftmax": 10})
        check = day["checks"][0]
        self.assertEqual(check["points"], 0.0)
        self.assertEqual(check["not_run_points"], 0.0)
        self.assertIn("did not finish", check["message"])
        self.assertIn("memcheck: FAILED: memcheck did not finish", day["failures"][-1])

    def test_a_long_failure_message_reaches_the_report_whole(self):
        message = ("test_d05.cu:12: Failure\nExpected equality of these values:\n  got\n"
                   "    Which is: 3\n  want\n    Which is: 4\nthe tail: check the last block")
        cases = [R.Case("S/WarpSoftmax.a", R.FAILED, message=message, exercise="WarpSoftmax")]
        day = grade.grade_day(lab(), "graded", cases, {"WarpSoftmax": 10})
        self.assertIn("the tail: check the last block", day["exercises"][0]["failures"][0])
        self.assertIn("Which is: 4", day["exercises"][0]["failures"][0])

    def test_a_day_that_did_not_build_earns_nothing_but_keeps_its_message(self):
        day = grade.grade_day(lab(), "compile_failed", [], {"WarpSoftmax": 10},
                              build_message="Your code does not compile: fix kernel.cu, line 3")
        self.assertEqual(day["points"], 0.0)
        self.assertEqual(day["not_run_points"], 0.0)
        self.assertIn("line 3", day["message"])

    def test_performance_from_benchmarks_and_sass_checks(self):
        day = {"status": "graded", "max_points": 40.0}
        tests = [R.Case("WarpSoftmax.a", R.PASSED, exercise="WarpSoftmax")]
        cases = tests + [R.Case("sass.a", R.PASSED, kind="sass"),
                         R.Case("sass.b", R.FAILED, kind="sass")]
        mine = [B.Row("BM_x", median_us=100.0, counters={"recheck": 1.0}),
                B.Row("BM_y", median_us=200.0, counters={"recheck": 1.0}),
                B.Row("BM_z", error="output does not match")]
        ref = [B.Row("BM_x", median_us=100.0, counters={"recheck": 1.0, "floor_us": 50.0}),
               B.Row("BM_y", median_us=100.0, counters={"recheck": 1.0}),
               B.Row("BM_z", median_us=100.0, counters={"recheck": 1.0})]
        judged = grade.judge_rows(mine, ref)
        self.assertEqual([r["ranked"] for r in judged], [True, True, False])
        perf = grade.performance(lab(), day, cases, judged, "")
        self.assertEqual(perf["max_points"], 10.0)
        # benchmarks: (1 + 0 + 0) / 3 of 6 points; SASS: 1 of 2 checks of 4 points
        self.assertAlmostEqual(perf["points"], 6.0 / 3 + 2.0, places=2)
        not_timed = grade.performance(lab(), day, cases, None, "not timed: no GPU")
        self.assertAlmostEqual(not_timed["points"], 2.0)

    def test_no_performance_points_unless_every_test_passed(self):
        # An untouched starter's SASS checks may pass (a kernel that does nothing uses no local
        # memory): they earn nothing while its tests fail, or did not run.
        day = {"status": "graded", "max_points": 40.0}
        sass = [R.Case("sass.a", R.PASSED, kind="sass")]
        for tests in ([R.Case("WarpSoftmax.a", R.FAILED, exercise="WarpSoftmax")],
                      [R.Case("WarpSoftmax.a", R.SKIPPED, exercise="WarpSoftmax")], []):
            perf = grade.performance(lab(), day, tests + sass, None, "not timed")
            self.assertEqual(perf["points"], 0.0)
            self.assertIn("only for a day whose tests all passed", perf["sass_note"])

    def test_benchmark_rows_are_judged_against_the_references(self):
        ref = [B.Row("BM_x", median_us=100.0, counters={"recheck": 1.0, "floor_us": 60.0,
                                                        "GB/s": 2000.0})]
        # Faster than the reference's floor: impossible, whatever the student's file says.
        fast = grade.judge_rows([B.Row("BM_x", median_us=10.0, counters={"recheck": 1.0,
                                                                         "floor_us": 1.0})], ref)
        self.assertFalse(fast[0]["ranked"])
        self.assertIn("impossible time", fast[0]["why_not_ranked"])
        # A row the program did not report, or reported twice (the first counts).
        self.assertIn("did not report", grade.judge_rows([], ref)[0]["why_not_ranked"])
        twice = grade.judge_rows([B.Row("BM_x", median_us=200.0, counters={"recheck": 1.0}),
                                  B.Row("BM_x", median_us=90.0, counters={"recheck": 1.0})], ref)
        self.assertEqual(twice[0]["median_us"], 200.0)
        # Not re-checked; the rates are the reference's bytes over the student's time.
        self.assertIn("re-checked", grade.judge_rows([B.Row("BM_x", median_us=100.0)],
                                                     ref)[0]["why_not_ranked"])
        ok = grade.judge_rows([B.Row("BM_x", median_us=200.0, counters={"recheck": 1.0,
                                                                        "GB/s": 1e9})], ref)
        self.assertEqual(ok[0]["GB/s"], 1000.0)

    def test_a_benchmark_has_the_gpu_to_itself(self):
        """Tests share the GPU with each other; a benchmark waits for them, and no test starts
        while it waits or runs (other processes, like the grader's students in parallel)."""
        import threading  # noqa: PLC0415
        import time  # noqa: PLC0415
        with tempfile.TemporaryDirectory() as out:
            holder = subprocess.Popen(
                [sys.executable, "-c",
                 "import sys, time; sys.path.insert(0, sys.argv[1]); from course import grade\n"
                 "with grade.GpuLock(sys.argv[2], 'tests'):\n"
                 "    print('in', flush=True); time.sleep(1.5)",
                 os.path.join(ROOT, "tools"), out], stdout=subprocess.PIPE, text=True)
            self.assertEqual(holder.stdout.readline().strip(), "in")
            with grade.GpuLock(out, "tests"):  # a second test: shares the GPU at once
                pass
            events = []
            def bench():
                with grade.GpuLock(out, "bench"):
                    events.append(("bench", time.monotonic()))
                    time.sleep(0.5)
                    events.append(("bench done", time.monotonic()))
            b = threading.Thread(target=bench)
            b.start()
            time.sleep(0.3)  # the benchmark is waiting for the holder's tests
            with grade.GpuLock(out, "tests"):  # a test arriving now waits for the benchmark
                events.append(("test", time.monotonic()))
            b.join()
            holder.wait()
            names = [e[0] for e in events]
            self.assertEqual(names, ["bench", "bench done", "test"])

    def test_the_gpu_alone_holds_through_nested_locks(self):
        """A student's serial pass and benchmarks run under one hold of the GPU: the locks taken
        inside it by the same thread pass through; another thread's test waits for the whole."""
        import threading  # noqa: PLC0415
        import time  # noqa: PLC0415
        with tempfile.TemporaryDirectory() as out:
            events = []
            started = threading.Event()

            def other_test():
                started.wait()
                with grade.GpuLock(out, "tests"):
                    events.append("other test")
            t = threading.Thread(target=other_test)
            t.start()
            with grade.GpuLock(out, "bench"):
                started.set()
                time.sleep(0.2)
                with grade.GpuLock(out, "bench"):  # the benchmark of a day: no second wait
                    events.append("benchmark")
                with grade.GpuLock(out, "tests"):
                    events.append("own test")
                time.sleep(0.2)
                events.append("released")
            t.join()
            self.assertEqual(events, ["benchmark", "own test", "released", "other test"])
            with grade.GpuLock(out, "bench"):  # released for good: taken again at once
                pass


@unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR (a configured and built course)")
class GradeClassTest(unittest.TestCase):
    """Grades three students of the synthetic class on Day 1 (no benchmarks): one correct, one
    whose code does not compile, one whose files are misplaced."""

    @classmethod
    def setUpClass(cls):
        import synthetic_class  # noqa: PLC0415
        cls.tmp = tempfile.TemporaryDirectory()
        subs = os.path.join(cls.tmp.name, "subs")
        synthetic_class.make(subs, ["d01", "d02"])
        for name in os.listdir(subs):
            if name not in ("correct", "not_compiling", "wrongly_named"):
                import shutil  # noqa: PLC0415
                shutil.rmtree(os.path.join(subs, name))
        cls.out = os.path.join(cls.tmp.name, "grades")
        # Relative paths, as an instructor types them (`course grade subs --out grades`).
        cmd = [sys.executable, os.path.join(ROOT, "tools", "bin", "course"), "--build-dir", BUILD,
               "grade", "subs", "--out", "grades", "--days", "d01", "--no-bench", "--jobs", "2"]
        cls.first = subprocess.run(cmd, capture_output=True, text=True, cwd=cls.tmp.name)
        cls.second = subprocess.run(cmd, capture_output=True, text=True, cwd=cls.tmp.name)
        with open(os.path.join(cls.out, "gradebook.json")) as f:
            cls.book = {s["student"]: s for s in json.load(f)["students"]}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_student_is_in_the_gradebook(self):
        self.assertEqual(self.first.returncode, 0, self.first.stdout + self.first.stderr)
        self.assertEqual(sorted(self.book), ["correct", "not_compiling", "wrongly_named"])

    def test_a_day_that_does_not_compile_fails_with_the_compilers_message(self):
        d01 = self.book["not_compiling"]["days"][0]
        self.assertEqual(d01["status"], "compile_failed")
        self.assertEqual(d01["points"], 0.0)
        self.assertIn("Your code does not compile", d01["message"])
        self.assertIn("kernel.cu", d01["message"])

    def test_gpu_tests_without_a_gpu_are_not_run_earn_nothing_never_passed(self):
        d01 = self.book["correct"]["days"][0]
        self.assertEqual(d01["status"], "graded")
        for e in d01["exercises"]:
            if e["tests"]["skipped"] and not e["tests"]["passed"]:
                self.assertEqual(e["points"], 0.0, e)
                self.assertEqual(e["status"], "not_run")
                self.assertIn("no GPU", e["reason"])

    def test_a_misplaced_file_is_reported_not_graded(self):
        d01 = self.book["wrongly_named"]["days"][0]
        self.assertEqual(d01["status"], "not_submitted")
        self.assertIn("found d01.cu", d01["message"])
        with open(os.path.join(self.out, "students", "wrongly_named", "report.md")) as f:
            report = f.read()
        self.assertIn("found d01.cu", report)
        self.assertIn("`notes.txt`", report)

    def test_the_class_junit_has_every_students_days(self):
        root = ET.parse(os.path.join(self.out, "junit.xml")).getroot()
        suites = {s.get("name"): s for s in root}
        self.assertEqual(sorted(suites), ["correct", "not_compiling", "wrongly_named"])
        names = [tc.get("name") for tc in suites["wrongly_named"]]
        self.assertIn("d01.handed_in", names)
        failed = [tc.get("name") for tc in suites["not_compiling"] if tc.get("status") == "fail"]
        self.assertIn("d01.lab.VectorAdd", failed)  # the not-built placeholder, with its message

    def test_grading_again_skips_students_already_graded(self):
        self.assertEqual(self.second.returncode, 0)
        self.assertEqual(self.second.stdout.count("already graded"), 3, self.second.stdout)


if __name__ == "__main__":
    unittest.main()
