"""Tests of the course tool (tools/course/), without a GPU.

Run by ctest (tests/CMakeLists.txt: tools.*), which sets COURSE_BUILD_DIR to the build and
COURSE_RUNNER_FIXTURE to tests/tools/runner_fixture.cu's program; tests that need them skip
without. By hand: COURSE_BUILD_DIR=build/default python3 -m unittest discover -s tests/tools
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from course import build, cli, hints, manifest, runner, sandbox, sass, starter  # noqa: E402
from course import results as R  # noqa: E402

BUILD = os.environ.get("COURSE_BUILD_DIR", "")
FIXTURE = os.environ.get("COURSE_RUNNER_FIXTURE", "")
TOOL = os.path.join(ROOT, "tools", "bin", "course")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_tool(*args, env=None):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          env=env)


class ResultsTest(unittest.TestCase):
    def test_exercise_of_takes_the_longest_name_a_suite_part_starts_with(self):
        exercises = ["VectorAdd", "Saxpy", "Transpose1Naive", "Transpose3Padded"]
        self.assertEqual(R.exercise_of("VectorAdd", exercises), "VectorAdd")
        self.assertEqual(R.exercise_of("Sizes/VectorAdd", exercises), "VectorAdd")
        self.assertEqual(R.exercise_of("VectorAddBounds", exercises), "VectorAdd")
        self.assertEqual(R.exercise_of("DTypes/Transpose3PaddedLayout", exercises),
                         "Transpose3Padded")
        self.assertEqual(R.exercise_of("InstructorExtra", exercises), "")

    def test_a_tally_says_what_skipped_and_why(self):
        cases = [R.Case("A.a", R.PASSED), R.Case("A.b", R.CRASHED),
                 R.Case("A.c", R.SKIPPED, message="no GPU here: this test needs a CUDA GPU"),
                 R.Case("A.d", R.SKIPPED, message="no GPU here: this test needs a CUDA GPU")]
        t = R.tally(cases)
        self.assertEqual((t.passed, t.failed, t.skipped), (1, 1, 2))
        self.assertEqual(t.summary(), "1 passed, 1 failed (1 crashed), 2 skipped: no GPU here")
        self.assertEqual(R.verdict(cases), "failed")
        self.assertEqual(R.verdict(cases[2:]), "skipped")
        self.assertEqual(R.verdict([]), "no_tests")

    def test_case_files_have_safe_names_and_state_their_outcome_first(self):
        name = "Sizes/VectorAdd.Matches/n31"
        self.assertNotIn("/", R.case_file_name(name))
        self.assertNotEqual(R.case_file_name("a/b"), R.case_file_name("a_b"))
        text = R.case_report(R.Case(name, R.TIMED_OUT, message="did not finish"), "d01.lab." + name)
        self.assertEqual(text.splitlines()[0], R.TIMED_OUT)
        self.assertEqual(R.outcome_in_report("\n".join(text.splitlines()[1:])), R.TIMED_OUT)
        self.assertEqual(R.outcome_in_report("skipped: no cuobjdump"), R.SKIPPED)
        self.assertEqual(R.outcome_in_report("element 3 is wrong"), "")

    def test_results_round_trip_through_json(self):
        run = R.RunResults("d01", "lab", "main", [R.Case("A.a", R.FAILED, 0.5, "why", "out",
                                                         {"points": "2"}, "A", "gpu")], gpu="H100")
        again = R.RunResults.from_json(json.loads(json.dumps(run.to_json())))
        self.assertEqual(again.cases[0], run.cases[0])
        with self.assertRaises(ValueError):
            R.Case.from_json({"name": "x", "outcome": "sort of"})

    def test_malformed_json_is_reported_with_line_and_column(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w") as f:
                f.write('{"a": 1,\n  "b": }')
            with self.assertRaisesRegex(ValueError, "line 2, column"):
                R.read_json(path)

    def test_the_ctest_log_tells_skips_from_passes(self):
        log = textwrap.dedent("""\
            1/3 Testing: d01.lab.A.a
            Output:
            ----------------------------------------------------------
            d01.lab.A.a: skipped
            no GPU here: this machine has no NVIDIA driver
            <end of output>
            Test time =   0.01 sec
            ----------------------------------------------------------
            Test Passed.
            2/3 Testing: harness.gpu.T.t
            Output:
            ----------------------------------------------------------
            [ RUN      ] T.t
            [  SKIPPED ] T.t (0 ms)
            <end of output>
            Test time =   0.02 sec
            ----------------------------------------------------------
            Test Pass Reason:
            Skip regular expression found in output. Regex=[\\[  SKIPPED \\]]
            3/3 Testing: d01.lab.A.b
            Output:
            ----------------------------------------------------------
            d01.lab.A.b: CRASHED
            the test program died during this test
            <end of output>
            Test time =   0.01 sec
            ----------------------------------------------------------
            Test Failed.
            4/5 Testing: tools.test_site
            Output:
            ----------------------------------------------------------
            test_x (test_site.T.test_x) ... skipped 'mkdocs is not installed'
            4 passed, 1 skipped (not passed): 1 because mkdocs is not installed
            <end of output>
            Test time =   0.30 sec
            ----------------------------------------------------------
            Test Passed.
            5/5 Testing: tools.format
            Output:
            ----------------------------------------------------------
            SKIPPED: clang-format 14 is not installed
            <end of output>
            Test time =   0.10 sec
            ----------------------------------------------------------
            Test Passed.
            """)
        tests = R.parse_ctest_log(log)
        self.assertEqual([(t.name, t.status) for t in tests],
                         [("d01.lab.A.a", R.SKIPPED), ("harness.gpu.T.t", R.SKIPPED),
                          ("d01.lab.A.b", R.CRASHED), ("tools.test_site", R.SKIPPED),
                          ("tools.format", R.SKIPPED)])

    def test_the_ctest_junit_file_tells_skips_from_fixture_failures(self):
        xml = textwrap.dedent("""\
            <testsuite>
              <testcase name="a" status="run"><system-out>d01.lab.a: passed</system-out></testcase>
              <testcase name="b" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/></testcase>
              <testcase name="c" status="notrun"><skipped message="Fixture dependency failed"/></testcase>
              <testcase name="d" status="fail"><failure message="Timeout"/></testcase>
              <testcase name="e" status="fail"><failure message="Failed"/>
                <system-out>d01.lab.e: CRASHED\nkilled by SIGSEGV</system-out></testcase>
            </testsuite>""")
        self.assertEqual([t.status for t in R.parse_ctest_junit(xml)],
                         [R.PASSED, R.SKIPPED, R.NOT_RUN, R.TIMED_OUT, R.CRASHED])
        with self.assertRaises(ValueError):
            R.parse_ctest_junit("<testsuite>")


@unittest.skipUnless(FIXTURE and os.path.exists(FIXTURE), "needs COURSE_RUNNER_FIXTURE")
class RunnerTest(unittest.TestCase):
    """The runner blames exactly the test that misbehaved and runs all the others."""

    @classmethod
    def setUpClass(cls):
        cls.tests = runner.list_tests(FIXTURE)
        seen = []
        cls.cases, cls.info = runner.run_tests(FIXTURE, cls.tests, timeout=3, budget=120,
                                               on_case=lambda c: seen.append(c.name))
        cls.seen = seen

    def outcome(self, name):
        return self.cases[name].outcome

    def test_every_test_gets_exactly_one_result(self):
        self.assertEqual(sorted(self.cases), sorted(self.tests))
        self.assertEqual(sorted(set(self.seen)), sorted(self.tests))

    def test_ordinary_outcomes(self):
        self.assertEqual(self.outcome("Fixture.Passes"), R.PASSED)
        self.assertIn("output of a passing test", self.cases["Fixture.Passes"].output)
        self.assertEqual(self.outcome("Fixture.Fails"), R.FAILED)
        self.assertIn("expected 1.5, got 0", self.cases["Fixture.Fails"].message)
        self.assertIn("runner_fixture.cu:", self.cases["Fixture.Fails"].message)
        self.assertEqual(self.outcome("Fixture.Skips"), R.SKIPPED)
        self.assertIn("no GPU here", self.cases["Fixture.Skips"].message)
        self.assertEqual(self.cases["Fixture.RecordsProperties"].properties, {"points": "3"})
        self.assertEqual(self.outcome("Fixture.ThrowsCudaError"), R.FAILED)

    def test_a_crash_is_the_crashing_tests_alone(self):
        self.assertEqual(self.outcome("Fixture.Segfaults"), R.CRASHED)
        self.assertIn("SIGSEGV", self.cases["Fixture.Segfaults"].message)
        self.assertIn("about to crash", self.cases["Fixture.Segfaults"].output)
        self.assertEqual(self.outcome("Fixture.Aborts"), R.CRASHED)
        self.assertIn("SIGABRT", self.cases["Fixture.Aborts"].message)
        self.assertEqual(self.outcome("Fixture.Exits"), R.CRASHED)
        # ... and the tests after each crash still ran, in fresh processes.
        self.assertEqual(self.outcome("Fixture.PrintsALot"), R.PASSED)
        self.assertGreaterEqual(self.info.processes, 5)

    def test_a_hang_is_stopped_at_its_time_limit(self):
        self.assertEqual(self.outcome("Fixture.Hangs"), R.TIMED_OUT)
        self.assertIn("time limit of 3 s", self.cases["Fixture.Hangs"].message)

    def test_huge_output_is_clipped(self):
        out = self.cases["Fixture.PrintsALot"].output
        self.assertLess(len(out), runner.OUTPUT_LIMIT + 200)
        self.assertIn("characters left out", out)

    def test_a_lost_cuda_context_fails_only_its_test(self):
        if self.outcome("FixtureGpu.LosesTheContext") == R.SKIPPED:
            self.skipTest("no GPU here: the context cannot be lost")
        self.assertEqual(self.outcome("FixtureGpu.LosesTheContext"), R.CRASHED)
        self.assertIn("cudaErrorIllegalAddress", self.cases["FixtureGpu.LosesTheContext"].message)
        self.assertEqual(self.outcome("FixtureGpu.RunsAfterTheLostContext"), R.PASSED)

    def test_stop_at_first_failure_ends_the_run_there(self):
        # `course grade --stop-at-first-failure`: the first failed case ends the run, also in
        # another shard's process; everything after it is NOT RUN, never passed.
        tests = ["Fixture.Passes", "Fixture.Fails", "Fixture.Hangs", "Fixture.PrintsALot"]
        stop = runner.Stop()
        start = time.monotonic()
        cases, _ = runner.run_tests(FIXTURE, tests, timeout=30, budget=120, stop=stop)
        self.assertLess(time.monotonic() - start, 20)  # the hang was never waited for
        self.assertEqual(stop.first, "Fixture.Fails")
        self.assertEqual(cases["Fixture.Passes"].outcome, R.PASSED)
        self.assertEqual(cases["Fixture.Fails"].outcome, R.FAILED)
        for t in ("Fixture.Hangs", "Fixture.PrintsALot"):
            self.assertEqual(cases[t].outcome, R.NOT_RUN)
            self.assertIn("--stop-at-first-failure", cases[t].message)
        # Two shards, one Stop: a failure in one ends the other's hang.
        stop = runner.Stop()
        start = time.monotonic()
        parts = {}

        def shard(names):
            parts.update(runner.run_tests(FIXTURE, names, timeout=60, budget=120, stop=stop)[0])

        import threading  # noqa: PLC0415
        threads = [threading.Thread(target=shard, args=(n,)) for n in
                   (["Fixture.Hangs", "Fixture.PrintsALot"], ["Fixture.Fails"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(parts["Fixture.Fails"].outcome, R.FAILED)
        self.assertEqual(parts["Fixture.Hangs"].outcome, R.NOT_RUN)
        self.assertEqual(parts["Fixture.PrintsALot"].outcome, R.NOT_RUN)

    def test_a_missing_program_is_not_run_not_passed(self):
        cases, _ = runner.run_tests("/nonexistent/program", ["A.b"], timeout=1, budget=5)
        self.assertEqual(cases["A.b"].outcome, R.NOT_RUN)
        self.assertIn("could not start", cases["A.b"].message)

    def test_the_budget_stops_a_run_of_hanging_tests(self):
        cases, _ = runner.run_tests(FIXTURE, ["Fixture.Hangs", "Fixture.Passes"], timeout=30,
                                    budget=2)
        self.assertEqual(cases["Fixture.Hangs"].outcome, R.TIMED_OUT)
        self.assertEqual(cases["Fixture.Passes"].outcome, R.PASSED)  # it ran first

    def test_filters_never_split_on_a_dash(self):
        self.assertEqual(runner.gtest_filter(["A.b-c", "D.e"]), "A.b?c:D.e")


class ObserveTest(unittest.TestCase):
    """The grader's trusted verdicts (course/observe.h): what a program under test observed is
    recorded, and the same test run again in another program replays it; the replay's verdict
    is about the recorded values, whatever the recording program reported."""

    def run_pair(self, tests, record_env, replay_env=None):
        with tempfile.TemporaryDirectory() as tapes:
            env = dict(os.environ, **record_env)
            recorded, _ = runner.run_tests(FIXTURE, tests, timeout=30, budget=120, env=env,
                                           record=tapes)
            replayed, _ = runner.run_tests(FIXTURE, tests, timeout=30, budget=120,
                                           env=dict(os.environ, **(replay_env or {})),
                                           replay=tapes)
            files = os.listdir(tapes)
        return recorded, replayed, files

    def test_an_honest_program_passes_its_replay(self):
        tests = ["Observe.Value", "Observe.Strings", "Observe.Throws", "Observe.Keyed"]
        recorded, replayed, files = self.run_pair(tests, {})
        self.assertEqual({t: c.outcome for t, c in recorded.items()}, dict.fromkeys(tests, "passed"))
        self.assertEqual({t: c.outcome for t, c in replayed.items()}, dict.fromkeys(tests, "passed"))
        self.assertEqual(sorted(files), sorted(runner.tape_file_name(t) for t in tests))

    def test_a_forged_pass_fails_its_replay(self):
        tests = ["Observe.Value", "Observe.Strings", "Observe.Throws"]
        recorded, replayed, _ = self.run_pair(tests, {"FIXTURE_VALUE": "41", "FIXTURE_FORGE": "1"})
        self.assertEqual(recorded["Observe.Value"].outcome, "passed")  # forged
        self.assertEqual(recorded["Observe.Strings"].outcome, "passed")
        for t in tests:
            self.assertEqual(replayed[t].outcome, "failed", t)
        self.assertIn("41", replayed["Observe.Value"].message)
        self.assertIn("threw nothing", replayed["Observe.Throws"].message)

    def test_keyed_observations_replay_in_their_own_order(self):
        recorded, replayed, _ = self.run_pair(["Observe.Keyed"], {"FIXTURE_VALUE": "43"})
        self.assertEqual(recorded["Observe.Keyed"].outcome, "passed")
        self.assertEqual(replayed["Observe.Keyed"].outcome, "passed",
                         replayed["Observe.Keyed"].message)

    def test_missing_or_extra_observations_fail_with_the_reason(self):
        with tempfile.TemporaryDirectory() as tapes:
            runner.run_tests(FIXTURE, ["Observe.Value"], timeout=30, budget=60, record=tapes)
            path = os.path.join(tapes, runner.tape_file_name("Observe.Value"))
            with open(path, "ab") as f:  # one observation more than the test takes
                f.write(b"- " + b"x".hex().encode() + b" 4\n\x2a\x00\x00\x00")
            replayed, _ = runner.run_tests(FIXTURE, ["Observe.Value", "Observe.Strings"],
                                           timeout=30, budget=60, replay=tapes)
        self.assertEqual(replayed["Observe.Value"].outcome, "failed")
        self.assertIn("more steps than the test takes", replayed["Observe.Value"].message)
        self.assertEqual(replayed["Observe.Strings"].outcome, "failed")
        self.assertIn("recorded nothing", replayed["Observe.Strings"].message)

    def test_forged_events_do_not_replace_the_harness_verdict(self):
        # A program may write anything on the events descriptor; an end event for a test that is
        # not running, or a second start of a finished test, is not the harness's.
        parser = runner.EventParser()
        frames = parser.feed(b'{"event":"observe","key":"","what":"v","n":3}\nabc{"event":"start",'
                             b'"test":"A.b"}\nnoise\n')
        self.assertEqual([(e["event"], p) for e, p in frames], [("observe", b"abc"), ("start", None)])
        self.assertEqual(parser.feed(b'{"event":"observe","n":-1}\n'), [])
        self.assertTrue(parser.bad)


@unittest.skipUnless(sandbox.check() == "", f"no sandbox here: {sandbox.check()}")
class SandboxTest(unittest.TestCase):
    """A student's program runs in bubblewrap (tools/course/sandbox.py): the runner's events
    still arrive, the hidden folders are empty, and nothing outside the private folder can be
    written."""

    def test_the_runner_works_through_the_sandbox(self):
        with tempfile.TemporaryDirectory() as private, tempfile.TemporaryDirectory() as hidden:
            with open(os.path.join(hidden, "secret"), "w") as f:
                f.write("x")
            # The program's folder is shown again, as the grader shows a student's build: the
            # course's tree may live under /tmp or /home, which the sandbox hides.
            prefix = sandbox.prefix(private=private, hide=[hidden],
                                    readable=[os.path.dirname(os.path.realpath(FIXTURE))])
            cases, _ = runner.run_tests(FIXTURE, ["Fixture.Passes", "Fixture.Fails",
                                                  "Observe.Value"], timeout=30, budget=60,
                                        prefix=prefix)
            self.assertEqual(cases["Fixture.Passes"].outcome, "passed")
            self.assertEqual(cases["Fixture.Fails"].outcome, "failed")
            p = subprocess.run(prefix + ["/bin/sh", "-c", f"ls -A {hidden}; touch {hidden}/x; "
                                         f"touch {private}/ok; echo $HOME"],
                               capture_output=True, text=True)
            self.assertNotIn("secret", p.stdout)
            self.assertFalse(os.path.exists(os.path.join(hidden, "x")))
            self.assertTrue(os.path.exists(os.path.join(private, "ok")))
            self.assertIn(os.path.realpath(private), p.stdout)


class BuildMessagesTest(unittest.TestCase):
    def test_a_compile_error_names_the_file_and_line(self):
        log = ("[1/3] Building CUDA object labs/x/kernel.cu.o\nFAILED: labs/x/kernel.cu.o\n"
               "/src/labs/d01_first_kernels/kernel.cu(24): error: expected a \";\"\n"
               "      if (i < n) c[i] = a[i] + b[i]\n      ^\n\n1 error detected\n"
               "ninja: build stopped: subcommand failed.\n")
        f = build.parse_failure(log)
        self.assertEqual((f.kind, f.file, f.line), ("compile", "/src/labs/d01_first_kernels/kernel.cu", 24))
        self.assertTrue(any("expected a" in l for l in f.excerpt))
        gcc = build.parse_failure("/src/x.cpp:12:5: error: 'foo' was not declared\n")
        self.assertEqual((gcc.file, gcc.line), ("/src/x.cpp", 12))

    def test_a_link_error_says_which_function_lab_h_declares(self):
        log = ("/usr/bin/ld: test_d01.cu.o: in function `X':\n"
               "test_d01.cu:(.text+0x1): undefined reference to `d01::spin(long, float*)'\n"
               "collect2: error: ld returned 1 exit status\n")
        f = build.parse_failure(log)
        self.assertEqual((f.kind, f.undefined), ("link", ["d01::spin(long, float*)"]))
        with tempfile.TemporaryDirectory() as d:
            header = os.path.join(d, "lab.h")
            with open(header, "w") as h:
                h.write("namespace d01 {\n// Spins.\nvoid spin(std::int64_t n,\n          float* out);\n}\n")
            self.assertEqual(build.declaration_in(header, "d01::spin(long, float*)"),
                             "lab.h:3: void spin(std::int64_t n, float* out);")


class SassTest(unittest.TestCase):
    SASS = textwrap.dedent("""\
        Fatbin elf code:
        ================
        arch = sm_90
            Function : _Z4copyPKfPfl
            /*0000*/  LDG.E.128 R4, desc[UR4][R2.64] ;
            /*0010*/  STG.E.128 desc[UR4][R6.64], R4 ;
            Function : _Z6scalarPKfPfl
            /*0000*/  LDG.E R4, desc[UR4][R2.64] ;
            /*0010*/  STL [R1], R4 ;
        """)

    def dis(self):
        kernels = sass.split_kernels(self.SASS)
        return sass.Disassembly(kernels, {"_Z4copyPKfPfl": "void copy(float const*, float*, long)",
                                          "_Z6scalarPKfPfl": "void scalar(float const*, float*, long)"})

    def check(self, **kw):
        base = dict(name="c", what="move 16 bytes per load", lesson="lesson 2 §4.4",
                    exercise="VectorizedCopy")
        base.update(kw)
        return manifest.SassCheck(**base)

    def test_names_are_shown_as_a_student_writes_them(self):
        self.assertEqual(sass.short_name("void d02::k<float, 4>(float const*, float*, long)"),
                         "d02::k<float, 4>")
        self.assertEqual(sass.normalise("k<float, (int)4, (bool)1>"), "k<float, 4, true>")

    def test_a_required_instruction_that_is_missing_is_a_sentence(self):
        r = sass.run_check(self.check(kernel="scalar", require=["LDG\\.E\\.128"]), self.dis(), "lab")
        self.assertFalse(r.ok)
        self.assertIn("your scalar must move 16 bytes per load, but it has no instruction "
                      "matching LDG.E.128 (on sm_90)", r.problems[0])
        ok = sass.run_check(self.check(kernel="copy", require=["LDG\\.E\\.128"]), self.dis(), "lab")
        self.assertTrue(ok.ok)

    def test_a_forbidden_instruction_is_quoted(self):
        r = sass.run_check(self.check(kernel=".*", forbid=["LDL|STL"], what="keep values in "
                                      "registers"), self.dis(), "lab")
        self.assertFalse(r.ok)
        self.assertIn("scalar must keep values in registers, but it has 1 instruction(s) "
                      "matching LDL|STL, e.g. `STL [R1], R4`", r.problems[0])

    def test_a_count_above_its_limit_is_a_sentence(self):
        dis = sass.Disassembly({("sm_90", "k1"): ["LDG.E.128 R0, [R2]", "LDG.E.128 R4, [R6]",
                                                  "LDG.E.128 R8, [R2]", "STG.E.128 [R4], R0"]},
                               {"k1": "void d06::rmsnorm_kernel<float, 4>(float const*)"})
        r = sass.run_check(self.check(kernel="rmsnorm", at_most={"LDG": 2},
                                      what="read each vector once"), dis, "lab")
        self.assertFalse(r.ok)
        self.assertIn("your d06::rmsnorm_kernel<float, 4> must read each vector once, but it has "
                      "3 instructions matching LDG where 2 do it (on sm_90)", r.problems[0])
        ok = sass.run_check(self.check(kernel="rmsnorm", at_most={"LDG": 3}), dis, "lab")
        self.assertTrue(ok.ok)

    def test_a_renamed_kernel_is_named(self):
        r = sass.run_check(self.check(kernel="vectorized"), self.dis(), "lab")
        self.assertIn("no compiled kernel whose name matches /vectorized/", r.problems[0])

    def test_a_template_instance_never_launched_names_the_ones_compiled(self):
        dis = sass.Disassembly({("sm_90", "k1"): ["LDG.E R0, [R2]"]},
                               {"k1": "void d02::gelu_kernel<float, 1>(float const*, float*, long)"})
        r = sass.run_check(self.check(kernel="d02::gelu_kernel<float, 4>",
                                      what="load whole 16-byte vectors"), dis, "lab")
        self.assertFalse(r.ok)
        self.assertIn("your code has no compiled kernel whose name matches "
                      "/d02::gelu_kernel<float, 4>/, the kernel that must load whole 16-byte "
                      "vectors", r.problems[0])
        self.assertIn("(compiled instead: d02::gelu_kernel<float, 1>)", r.problems[0])


class SassArchTest(unittest.TestCase):
    """ARCHS: a Hopper kernel's sm_80 build is only a trap, so its checks read sm_90a alone."""

    def dis(self):
        return sass.Disassembly({("sm_80", "k"): ["BPT.TRAP 0x1 ;"],
                                 ("sm_90a", "k"): ["HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4] ;"]},
                                {"k": "void d10::gemm_7_wgmma_kernel(float*)"})

    def check(self, **kw):
        base = dict(name="wgmma", what="multiply with wgmma.mma_async (HGMMA)",
                    lesson="lesson 10 §8.3", kernel="gemm_7_wgmma_kernel", require=["HGMMA"])
        base.update(kw)
        return manifest.SassCheck(**base)

    def test_every_architecture_without_archs(self):
        r = sass.run_check(self.check(), self.dis(), "lab")
        self.assertFalse(r.ok)
        self.assertIn("no instruction matching HGMMA (on sm_80)", r.problems[0])

    def test_only_the_named_architectures_with_archs(self):
        r = sass.run_check(self.check(archs=["sm_90a"]), self.dis(), "lab")
        self.assertTrue(r.ok, r.problems)
        self.assertIn("1 architecture (sm_90a)", r.detail)

    def test_the_named_architecture_is_still_checked(self):
        dis = sass.Disassembly({("sm_90a", "k"): ["BPT.TRAP 0x1 ;"]},
                               {"k": "void d10::gemm_7_wgmma_kernel(float*)"})
        r = sass.run_check(self.check(archs=["sm_90a"]), dis, "lab")
        self.assertFalse(r.ok)
        self.assertIn("no instruction matching HGMMA (on sm_90a)", r.problems[0])

    def test_a_build_without_them_skips_and_says_why(self):
        dis = sass.Disassembly({("sm_80", "k"): ["BPT.TRAP 0x1 ;"]},
                               {"k": "void d10::gemm_7_wgmma_kernel(float*)"})
        r = sass.run_check(self.check(archs=["sm_90a"]), dis, "lab")
        self.assertFalse(r.ok)
        self.assertEqual(r.problems, [])
        self.assertIn("checked only on sm_90a, and this build compiled sm_80: nothing was "
                      "checked", r.skipped)
        case = sass.check_case(None, None, "lab", self.check(archs=["sm_90a"]), dis)
        self.assertEqual(case.outcome, R.SKIPPED)  # reported as skipped, never as passed
        self.assertIn("build for sm_90a to run it", case.message)


class HintsTest(unittest.TestCase):
    def test_the_format(self):
        text = "# Hints\n\n## VectorAdd\n\n1. First,\n   continued.\n\n2. Second.\n\n## Saxpy\n1. Only.\n"
        self.assertEqual(hints.parse(text), {"VectorAdd": ["First, continued.", "Second."],
                                             "Saxpy": ["Only."]})
        with self.assertRaisesRegex(hints.HintsError, "numbered 2"):
            hints.parse("## A\n1. x\n\n3. y\n")
        with self.assertRaisesRegex(hints.HintsError, "before the first"):
            hints.parse("1. x\n")

    def test_every_lab_has_hints_for_every_exercise(self):
        from course import labspec
        for lab_dir in sorted(os.listdir(os.path.join(ROOT, "labs"))):
            if not os.path.exists(os.path.join(ROOT, "labs", lab_dir, "lab.json")):
                continue
            suites = labspec.load_lab(ROOT, lab_dir).suites
            parsed = hints.load(os.path.join(ROOT, "labs", lab_dir, "hints.md"))
            self.assertEqual(list(parsed), suites, lab_dir)
            for exercise, items in parsed.items():
                self.assertGreaterEqual(len(items), 2, f"{lab_dir} {exercise}")

    def test_hints_are_revealed_one_at_a_time(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(hints.reveal_next(d, "d01", "VectorAdd", 3), 1)
            self.assertEqual(hints.reveal_next(d, "d01", "VectorAdd", 3), 2)
            self.assertEqual(hints.reveal_next(d, "d01", "Saxpy", 3), 1)
            self.assertEqual(hints.reveal_next(d, "d01", "VectorAdd", 2), 2)  # no further
            with open(hints.state_path(d), "w") as f:
                f.write("{broken")
            self.assertEqual(hints.revealed(d), {})  # a broken file forgets, and no more


class ResetTest(unittest.TestCase):
    """`course reset` writes the starter the solution generates (tools/starters.py), whatever
    the student's file or git history holds."""

    SOLUTION = textwrap.dedent("""\
        // >>> STARTER
        //|// Day 1: your kernels.
        // === SOLUTION
        // Day 1: the solution.
        // <<<
        int add(int a, int b) {
          // >>> STARTER d01.1
          //|  // TODO(d01.1): add
          //|  return 0;
          // === SOLUTION
          return a + b;
          // <<< d01.1
        }
        """)
    STARTER = "// Day 1: your kernels.\nint add(int a, int b) {\n  // TODO(d01.1): add\n  return 0;\n}\n"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = self.tmp.name
        for rel in ("tools/starters.py", ".clang-format"):
            os.makedirs(os.path.dirname(os.path.join(self.repo, rel)), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, rel), os.path.join(self.repo, rel))
        os.makedirs(os.path.join(self.repo, "solutions", "d01_x"))
        with open(os.path.join(self.repo, "solutions", "d01_x", "kernel.cu"), "w") as f:
            f.write(self.SOLUTION)
        os.makedirs(os.path.join(self.repo, "labs", "d01_x"))
        self.path = os.path.join(self.repo, "labs", "d01_x", "kernel.cu")

    def tearDown(self):
        self.tmp.cleanup()

    def test_reset_writes_the_generated_starter_and_keeps_a_backup(self):
        with open(self.path, "w") as f:
            f.write("// my work\n")
        backup, origin = starter.reset(self.repo, "labs/d01_x/kernel.cu", "d01")
        self.assertEqual(read(self.path), self.STARTER)
        self.assertEqual(read(backup), "// my work\n")
        self.assertIn("generated from solutions/d01_x/kernel.cu", origin)
        self.assertEqual(starter.reset(self.repo, "labs/d01_x/kernel.cu", "d01")[0], "")

    def test_no_solution_is_a_clear_error(self):
        os.remove(os.path.join(self.repo, "solutions", "d01_x", "kernel.cu"))
        with self.assertRaisesRegex(starter.ResetError, "is missing from this checkout"):
            starter.find_starter(self.repo, "labs/d01_x/kernel.cu", "d01")


class StartersTest(unittest.TestCase):
    """tools/starters.py: the markers, and the course's starters are what their solutions
    generate."""

    def test_markers_make_the_starter_and_say_where_they_are_wrong(self):
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        import starters  # noqa: PLC0415
        self.assertEqual(starters.generate(ResetTest.SOLUTION), ResetTest.STARTER)
        self.assertNotIn("//|", starters.strip(ResetTest.SOLUTION))
        for broken, words in (("// >>> STARTER\n//|x\n", "not closed"),
                              ("// >>> STARTER d01.1\n// === SOLUTION\n// <<< d01.2\n",
                               "closes 'd01.2'"),
                              ("//|x\n", "outside a STARTER region"),
                              ("// >>> STARTER\nint x;\n", "not `//|...`")):
            with self.assertRaisesRegex(starters.MarkerError, words):
                starters.generate(broken)
        made = starters.mark("a\nb\nc\n", "a\n// TODO(d09.2): b\nc\n", "d09")
        self.assertIn("// >>> STARTER d09.2", made)
        self.assertEqual(starters.generate(made), "a\n// TODO(d09.2): b\nc\n")
        self.assertEqual(starters.strip(made), "a\nb\nc\n")


class CommandLineTest(unittest.TestCase):
    def test_help_exits_zero(self):
        for args in (["--help"], [], ["check", "--help"]):
            p = run_tool(*args)
            self.assertEqual(p.returncode, 0, args)
            self.assertIn("usage", p.stdout.lower())
        self.assertNotIn("_run", run_tool("--help").stdout)

    def test_leaderboard_takes_its_own_options_after_global_ones(self):
        # The build's launcher puts --build-dir first; leaderboard's options must still reach it.
        with tempfile.TemporaryDirectory() as d:
            p = run_tool("--build-dir", d, "leaderboard", "--out", d, os.path.join(d, "none"))
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("no such file or folder", p.stderr)
            self.assertNotIn("unrecognized arguments", p.stderr)
            self.assertIn("--out DIR", run_tool("leaderboard", "--help").stdout)

    def test_no_build_says_what_to_do(self):
        with tempfile.TemporaryDirectory() as d:
            p = run_tool("--build-dir", d, "list")
        self.assertEqual(p.returncode, 2)
        self.assertIn("scripts/setup.sh", p.stderr)

    @unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR")
    def test_list_and_usage_errors_on_the_build(self):
        p = run_tool("--build-dir", BUILD, "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("d01", p.stdout)
        p = run_tool("--build-dir", BUILD, "check", "d99")
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not a day of this course", p.stderr)
        p = run_tool("--build-dir", BUILD, "frobnicate")
        self.assertEqual(p.returncode, 2)

    @unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR")
    def test_hint_reveals_one_more_each_time(self):
        with tempfile.TemporaryDirectory() as d:
            m = manifest.load(BUILD)
            doc = manifest.to_json(m)
            doc["binary_dir"] = d
            path = os.path.join(d, "course_manifest.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            first = run_tool("--build-dir", d, "hint", "d01", "VectorAdd")
            second = run_tool("--build-dir", d, "hint", "d01", "1")
            self.assertEqual(first.returncode, 0, first.stderr)
            self.assertIn("hint 1 of", first.stdout)
            self.assertIn("hint 2 of", second.stdout)
            self.assertIn("new hint 2:", second.stdout)
            bad = run_tool("--build-dir", d, "hint", "d01", "Nonsense")
            self.assertEqual(bad.returncode, 2)


class SummaryTest(unittest.TestCase):
    def test_the_line_after_ctest_counts_cases_and_says_why_they_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            folder = os.path.join(d, "Testing", "Temporary")
            os.makedirs(folder)
            with open(os.path.join(folder, "LastTest.log"), "w") as f:
                f.write("1/1 Testing: an.earlier.run\nOutput:\n---\nold\n<end of output>\n")
            os.utime(os.path.join(folder, "LastTest.log"), (1, 1))  # long before this run
            with redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["_ctest-summary", "--build-dir", d, "--start"]), 0)
            with open(os.path.join(folder, "LastTest.log.tmp"), "w") as f:
                f.write("1/2 Testing: d01.lab.run\nOutput:\n---\nok\n<end of output>\n"
                        "Test Passed.\n2/2 Testing: d01.lab.A.a\nOutput:\n---\n"
                        "d01.lab.A.a: skipped\nno GPU here: no driver\n<end of output>\n"
                        "Test Passed.\n")
            out = io.StringIO()
            with redirect_stdout(out):
                rc = cli.main(["_ctest-summary", "--build-dir", d])
        self.assertEqual(rc, 0)
        self.assertIn("0 passed, 0 failed, 1 skipped: 1 because no GPU here: no driver",
                      out.getvalue())
        self.assertIn("every test was SKIPPED", out.getvalue())


if __name__ == "__main__":
    unittest.main()
