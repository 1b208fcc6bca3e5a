"""A gradebook that loses no one and gives points only for what ran (docs/grading.md).

Runs without a GPU (CI runs it): a class of awkward folders graded end to end on Day 1 against
the build in COURSE_BUILD_DIR, and the grader's rules one by one on made-up results.

    cd tests/grading && COURSE_BUILD_DIR=../../build/default python3 -m unittest test_gradebook
"""

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from course import bench as B  # noqa: E402
from course import grade, leaderboard, manifest, sandbox, submission  # noqa: E402
from course import results as R  # noqa: E402

BUILD = os.environ.get("COURSE_BUILD_DIR", "")
D01 = "d01_first_kernels"
SOLUTION = os.path.join(ROOT, "solutions", D01, "kernel.cu")
STARTER = os.path.join(ROOT, "labs", D01, "kernel.cu")


def put(root, rel, source):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copyfile(source, path)


@unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR (a configured and built course)")
@unittest.skipUnless(sandbox.check() == "", f"no sandbox here: {sandbox.check()}")
class AwkwardClassTest(unittest.TestCase):
    """Names that a sanitizer of ids would merge, links, hidden folders and a file: one row per
    folder, graded or said why not."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        subs = os.path.join(cls.tmp.name, "class")
        for name in ("张伟", "李娜", "x", "x_", "Ana", "ana", "a,b=c]==]"):
            put(subs, f"{name}/labs/{D01}/kernel.cu", SOLUTION)
        put(subs, f"starter/labs/{D01}/kernel.cu", STARTER)
        # A kernel.cu that is a link to a classmate's file, and one to a system file.
        os.makedirs(os.path.join(subs, "linker", "labs", D01))
        os.symlink(os.path.join(subs, "x", "labs", D01, "kernel.cu"),
                   os.path.join(subs, "linker", "labs", D01, "kernel.cu"))
        os.makedirs(os.path.join(subs, "passwd", D01))
        os.symlink("/etc/passwd", os.path.join(subs, "passwd", D01, "kernel.cu"))
        os.symlink(os.path.join(subs, "x"), os.path.join(subs, "alias"))  # a linked folder
        put(subs, f".hidden/labs/{D01}/kernel.cu", SOLUTION)
        with open(os.path.join(subs, "README.txt"), "w") as f:
            f.write("not a student\n")
        cls.out = os.path.join(cls.tmp.name, "grades")
        cls.graded = subprocess.run(
            [sys.executable, os.path.join(ROOT, "tools", "bin", "course"), "--build-dir", BUILD,
             "grade", subs, "--out", cls.out, "--days", "d01", "--no-bench", "--jobs", "2"],
            capture_output=True, text=True)
        with open(os.path.join(cls.out, "gradebook.json"), encoding="utf-8") as f:
            cls.book = json.load(f)
        cls.students = {s["student"]: s for s in cls.book["students"]}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_row_per_folder_names_kept_exactly(self):
        self.assertEqual(self.graded.returncode, 0, self.graded.stdout + self.graded.stderr)
        self.assertEqual(sorted(self.students), sorted(
            ["张伟", "李娜", "x", "x_", "Ana", "ana", "a,b=c]==]", "starter", "linker", "passwd"]))
        not_graded = {e["folder"]: e["reason"] for e in self.book["not_graded"]}
        self.assertEqual(sorted(not_graded), [".hidden", "README.txt", "alias"])
        self.assertIn("symbolic link", not_graded["alias"])
        self.assertIn("hidden", not_graded[".hidden"])
        for name, reason in not_graded.items():
            self.assertIn(f"{name}: not graded: {reason}", self.graded.stdout)

    def test_each_student_is_graded_from_their_own_file(self):
        for name in ("张伟", "李娜", "x", "x_", "Ana", "ana", "a,b=c]==]"):
            g = self.students[name]
            self.assertEqual(g["days"][0]["status"], "graded", name)
            self.assertEqual(g["submission"]["kernels"], {"d01": f"labs/{D01}/kernel.cu"})
        # Names a case-insensitive file system would store as one keep two folders.
        self.assertNotEqual(self.students["Ana"]["folder"], self.students["ana"]["folder"])

    def test_the_csv_and_junit_carry_every_name(self):
        with open(os.path.join(self.out, "gradebook.csv"), encoding="utf-8") as f:
            rows = list(csv.reader(f))
        names = {r[0] for r in rows[1:]}
        for name in ("张伟", "a,b=c]==]", ".hidden", "alias", "README.txt"):
            self.assertIn(name, names)
        suites = {s.get("name") for s in ET.parse(os.path.join(self.out, "junit.xml")).getroot()}
        self.assertIn("张伟", suites)
        self.assertIn(".hidden", suites)

    def test_links_are_refused_and_never_read(self):
        for name in ("linker", "passwd"):
            d = self.students[name]["days"][0]
            self.assertEqual(d["status"], "not_submitted", name)
            self.assertIn("symbolic link: refused", d["message"])
        with open(os.path.join(self.out, "students", self.students["passwd"]["folder"], "report.md"),
                  encoding="utf-8") as f:
            report = f.read()
        self.assertIn("symbolic link: refused", report)
        self.assertNotIn("root:", report)  # nothing of /etc/passwd

    def test_the_untouched_starter_earns_nothing(self):
        g = self.students["starter"]
        self.assertEqual(g["points"], 0.0)
        perf = g["days"][0]["performance"]
        self.assertEqual(perf["points"], 0.0)

    def test_without_a_gpu_the_gpu_parts_earn_nothing_and_say_why(self):
        d = self.students["x"]["days"][0]
        self.assertGreater(d["not_run_points"], 0)
        skipped = [e for e in d["exercises"] if e["tests"]["skipped"]]
        self.assertTrue(skipped)
        for e in skipped:
            self.assertEqual(e["points"], 0.0)
            self.assertIn("did not run", e["reason"])
        self.assertEqual(d["performance"]["points"], 0.0)


@unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR (a configured and built course)")
@unittest.skipUnless(sandbox.check() == "", f"no sandbox here: {sandbox.check()}")
class ArrayTaskTest(unittest.TestCase):
    """One task of a Slurm array (--only-index N --no-merge) writes the WHOLE class into the
    roster, not only its student: tasks that start together each read and rewrite roster.json,
    and one that wrote only its own student could drop another's from the merge."""

    def test_one_task_writes_the_whole_roster_and_the_merge_loses_no_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            subs, out = os.path.join(tmp, "class"), os.path.join(tmp, "grades")
            for name in ("a", "b", "c"):
                put(subs, f"{name}/labs/{D01}/kernel.cu", STARTER)
            course = [sys.executable, os.path.join(ROOT, "tools", "bin", "course"), "--build-dir",
                      BUILD, "grade", subs, "--out", out]
            task = subprocess.run(course + ["--only-index", "1", "--no-merge", "--days", "d01",
                                            "--no-bench", "--jobs", "1"],
                                  capture_output=True, text=True)
            self.assertEqual(task.returncode, 0, task.stdout + task.stderr)
            with open(os.path.join(out, grade.ROSTER), encoding="utf-8") as f:
                roster = json.load(f)
            self.assertEqual([s["id"] for s in roster["students"]], ["a", "b", "c"])
            merged = subprocess.run(course[:-4] + ["grade", "--merge", out],
                                    capture_output=True, text=True)
            self.assertEqual(merged.returncode, 0, merged.stdout + merged.stderr)
            with open(os.path.join(out, "gradebook.json"), encoding="utf-8") as f:
                rows = {s["student"]: s for s in json.load(f)["students"]}
            self.assertEqual(sorted(rows), ["a", "b", "c"])
            self.assertNotEqual(rows["b"].get("status"), "not graded")
            for name in ("a", "c"):  # their tasks have not run: a row that says so
                self.assertEqual(rows[name]["status"], "not graded")
                self.assertIn("did not finish", rows[name]["message"])


class RulesTest(unittest.TestCase):
    def lab(self):
        progs = manifest.Programs("k.cu", "t", "b", "l.a")
        return manifest.Lab("d05", "d05_warp_programming", "T", ["WarpSoftmax"], [], [], 60.0,
                            progs, progs, [], sanitizers=["memcheck", "racecheck"])

    def test_a_sanitizer_run_that_hit_its_limit_fails(self):
        cases = [R.Case("WarpSoftmax.a", R.PASSED, exercise="WarpSoftmax"),
                 R.Case("memcheck", R.FAILED, kind="sanitizer",
                        message="FAILED: memcheck did not finish 30 tests within 300 s"),
                 R.Case("racecheck", R.SKIPPED, kind="sanitizer", message="no GPU here")]
        day = grade.grade_day(self.lab(), "graded", cases, {"WarpSoftmax": 10})
        memcheck, racecheck = day["checks"]
        self.assertEqual((memcheck["points"], memcheck["not_run_points"]), (0.0, 0.0))
        self.assertEqual((racecheck["points"], racecheck["not_run_points"]), (0.0, 5.0))

    def test_skipped_cases_count_in_the_share(self):
        cases = [R.Case(f"WarpSoftmax.p{i}", R.PASSED, exercise="WarpSoftmax") for i in range(3)]
        cases += [R.Case(f"WarpSoftmax.s{i}", R.SKIPPED, message="no GPU here",
                         exercise="WarpSoftmax") for i in range(3)]
        day = grade.grade_day(self.lab(), "graded", cases, {"WarpSoftmax": 5})
        self.assertEqual(day["exercises"][0]["points"], 2.5)

    def test_the_report_keeps_a_whole_failure(self):
        message = textwrap.dedent("""\
            test_d05.cu:40: Failure
            Expected equality of these values:
              course::observed(count)
                Which is: 7
              want
                Which is: 8
            the last block's count is missing: check the bounds of the last block""")
        cases = [R.Case("WarpSoftmax.a", R.FAILED, message=message, exercise="WarpSoftmax")]
        day = grade.grade_day(self.lab(), "graded", cases, {"WarpSoftmax": 10})
        day["performance"] = grade.performance(self.lab(), day, cases, None, "not timed")
        g = {"student": "s", "graded": "now", "gpu": "", "points": 0.0, "max_points": 1.0,
             "not_run_points": 0.0, "submission": {"kernels": {}, "misplaced": {}, "unused": [],
                                                   "problems": []}, "days": [day]}
        report = grade.render_report(g)
        self.assertIn("check the bounds of the last block", report)
        self.assertIn("Which is: 8", report)
        opts = grade.Options(out=tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, opts.out)
        grade.write_class_files(opts, [g])
        with open(os.path.join(opts.out, "gradebook.csv"), encoding="utf-8") as f:
            self.assertIn("check the bounds of the last block", f.read())


FAKE_BENCH = """#!/usr/bin/env python3
import json, os, signal, sys, time
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
mode = os.environ.get("FAKE", "ok")
doc = {"context": {"device": "fake"}, "benchmarks": [
    {"name": "BM_x/manual_time", "run_type": "iteration", "median_us": 100.0, "recheck": 1}]}
if mode == "skipped":
    print("SKIPPED: no GPU here"); sys.exit(0)
if mode == "hang":
    time.sleep(60)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
with open(out, "w") as f:
    f.write(json.dumps(doc))
    if mode == "twice":  # what code run at exit would add
        doc["benchmarks"][0]["median_us"] = 1.0
        f.write(json.dumps(doc))
sys.exit(3 if mode == "exit" else 0)
"""


class BenchmarkProgramTest(unittest.TestCase):
    """A benchmark program that exits early, crashes, hangs, skips or writes its results twice
    gives no times: the grader says which."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.exe = os.path.join(self.tmp, "bench")
        with open(self.exe, "w") as f:
            f.write(FAKE_BENCH)
        os.chmod(self.exe, stat.S_IRWXU)

    def run_fake(self, mode, timeout=30):
        env = dict(os.environ, FAKE=mode)
        return B.run_benchmark(self.exe, os.path.join(self.tmp, "out.json"), env=env,
                               timeout=timeout)

    def test_ok(self):
        run = self.run_fake("ok")
        self.assertEqual([r.median_us for r in run.rows], [100.0])

    def test_every_way_to_give_no_times(self):
        for mode, words in (("exit", "exited with status 3"), ("crash", "killed by SIGSEGV"),
                            ("twice", "more than one set of results")):
            with self.subTest(mode=mode):
                with self.assertRaises(B.BenchmarkFailed) as e:
                    self.run_fake(mode)
                self.assertIn(words, str(e.exception))
        with self.assertRaises(B.BenchmarkFailed) as e:
            self.run_fake("hang", timeout=2)
        self.assertIn("did not finish within 2 s", str(e.exception))
        self.assertEqual(self.run_fake("skipped").skipped, "no GPU here")

    def test_a_program_that_gave_no_times_is_not_ranked_with_the_reason(self):
        ref = B.BenchRun([B.Row("BM_x", key=True, median_us=100.0,
                                counters={"recheck": 1.0, "floor_us": 10.0})],
                         {"device": "NVIDIA H100 80GB HBM3 (sm_90): 132 SMs"})
        judged = grade.not_ranked(ref, "the benchmark program was killed by SIGSEGV")
        opts = grade.Options(out=self.tmp)
        lab = RulesTest().lab()
        grade.write_judged(os.path.join(self.tmp, "students", "s"), "s", lab, judged, ref,
                           "NVIDIA H100 80GB HBM3 (sm_90): 132 SMs", opts)
        entries, problems = leaderboard.collect([os.path.join(self.tmp, "students")])
        self.assertEqual(problems, [])
        boards = leaderboard.build_boards(entries)
        self.assertEqual(boards[0].entries, [])
        self.assertEqual(boards[0].rejected,
                         [("s", "the benchmark program was killed by SIGSEGV")])


if __name__ == "__main__":
    unittest.main()
