"""Tests of `course leaderboard` (tools/course/leaderboard.py), without a GPU: synthetic Google
Benchmark files as `course grade` writes them, and, when a Chromium is installed, the HTML page
as a browser builds it.

    cd tests/tools && python3 -m unittest test_leaderboard
"""

import contextlib
import html.parser
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from course import leaderboard as L  # noqa: E402

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
EVIL = "<script>document.title='pwned'</script>&amp;co"  # a student id from a folder name


def row(name="BM_vector_add/67108864/manual_time", median=100.0, gbs=2000.0, pct=80.0,
        key=1, recheck=1, floor=None, tflops=None, error="", run_type="iteration"):
    b = {"name": name, "run_name": name, "run_type": run_type, "iterations": 50,
         "real_time": median, "cpu_time": 3.0, "time_unit": "us"}
    if error:
        b.update({"error_occurred": True, "error_message": error})
        return b
    if median is not None:
        b["median_us"] = median
    b.update({"GB/s": gbs, "%copy": pct, "spread_%": 1.5})
    if key:
        b["key"] = key
    if recheck is not None:
        b["recheck"] = recheck
    if floor is not None:
        b["floor_us"] = floor
    if tflops is not None:
        b["TFLOP/s"] = tflops
    return b


def doc(student, rows, lab="d02", gpu=H100, tests="passed", seed="fresh",
        run="2024-05-01T10:00:00Z", judged="grader", **extra_context):
    context = {"date": "2024-05-01T10:00:00+00:00", "host_name": "gpu1",
               "executable": f"/grades/students/{student}/build/{lab}/{lab}_lab_bench",
               "num_cpus": 16, "mhz_per_cpu": 3000, "library_build_type": "release",
               "device": f"{gpu} (sm_90): 132 SMs, 80 GB", "copy_ceiling_GBps": "2500",
               "course_student": student, "course_lab": lab, "course_gpu": gpu,
               "course_tests": tests, "course_seed": seed, "course_run": run,
               "course_session": "s1"}
    if judged:
        context["course_judged"] = judged
    context.update(extra_context)
    return {"context": context, "benchmarks": rows}


def write(root, rel, content):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))
    return path


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = L.main(argv)
    return code, out.getvalue(), err.getvalue()


def board(boards, lab="d02", gpu=H100, headline=True, benchmark=None):
    found = [b for b in boards if b.lab == lab and b.gpu == gpu and b.headline == headline
             and (benchmark is None or b.benchmark == benchmark)]
    assert len(found) == 1, f"{len(found)} boards for {lab} {gpu} {headline} {benchmark}"
    return found[0]


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="leaderboard-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.students = os.path.join(self.tmp, "grades", "students")

    def student(self, name, rows, day="d02", file=None, **kw):
        return write(self.students, os.path.join(name, file or f"bench-{day}.json"),
                     doc(name, rows, lab=day, **kw))


class RankingTest(Fixture):
    def test_ranked_by_median_each_student_once_with_best_run_and_run_count(self):
        self.student("alice", [row(median=120.0)], run="2024-05-01T10:00:00Z")
        self.student("alice", [row(median=90.0, gbs=2600, pct=104.0)], file="again/bench-d02.json",
                     run="2024-05-02T10:00:00Z")
        self.student("bob", [row(median=100.0)])
        self.student("carol", [row(median=150.0)])
        entries, problems = L.collect([self.students])
        self.assertEqual(problems, [])
        b = board(L.build_boards(entries))
        self.assertEqual([(e.rank, e.student) for e in b.entries],
                         [(1, "alice"), (2, "bob"), (3, "carol")])
        alice = b.entries[0]
        self.assertEqual((alice.median_us, alice.runs, alice.run, alice.gbs, alice.pct_copy),
                         (90.0, 2, "2024-05-02T10:00:00Z", 2600, 104.0))  # 104%: read-only ok
        self.assertEqual(b.entries[1].runs, 1)
        self.assertEqual(b.benchmark, "BM_vector_add/67108864")
        self.assertEqual(b.rejected, [])

    def test_a_tie_goes_to_the_earlier_run(self):
        self.student("late", [row(median=100.0)], run="2024-05-03T08:00:00Z")
        self.student("early", [row(median=100.0)], run="2024-05-01T08:00:00Z")
        b = board(L.build_boards(L.collect([self.students])[0]))
        self.assertEqual([e.student for e in b.entries], ["early", "late"])
        # Best-of-runs: a student's own tie keeps their earlier run.
        self.student("late", [row(median=100.0)], file="b/bench-d02.json",
                     run="2024-05-02T08:00:00Z")
        b = board(L.build_boards(L.collect([self.students])[0]))
        self.assertEqual(b.entries[1].run, "2024-05-02T08:00:00Z")

    def test_the_same_run_read_twice_counts_once(self):
        path = self.student("alice", [row(median=80.0)])
        copy = os.path.join(self.tmp, "copy.json")
        shutil.copy(path, copy)
        entries, problems = L.collect([self.students, copy, path])
        self.assertEqual(problems, [])
        b = board(L.build_boards(entries))
        self.assertEqual(b.entries[0].runs, 1)

    def test_headline_is_the_key_row_and_other_rows_get_their_own_boards(self):
        rows = [row("BM_copy/1048576/manual_time", median=10.0, key=0),
                row("BM_vector_add/67108864/manual_time", median=100.0, key=1),
                row("BM_saxpy/67108864/manual_time", median=110.0, key=0, tflops=0.4),
                row("BM_saxpy/67108864/manual_time", run_type="aggregate", median=1.0, key=0)]
        self.student("alice", rows)
        self.student("bob", [dict(r) for r in rows[:3]])
        boards = L.build_boards(L.collect([self.students])[0])
        self.assertEqual([(b.benchmark, b.headline) for b in boards],
                         [("BM_vector_add/67108864", True), ("BM_copy/1048576", False),
                          ("BM_saxpy/67108864", False)])
        saxpy = board(boards, headline=False, benchmark="BM_saxpy/67108864")
        self.assertEqual([e.median_us for e in saxpy.entries], [110.0, 110.0])  # no aggregate
        self.assertTrue(saxpy.has_tflops)

    def test_without_a_key_row_the_first_row_is_the_headline(self):
        self.student("alice", [row("BM_a/1/manual_time", key=0), row("BM_b/1", key=0)])
        boards = L.build_boards(L.collect([self.students])[0])
        self.assertEqual([(b.benchmark, b.headline) for b in boards],
                         [("BM_a/1", True), ("BM_b/1", False)])

    def test_one_board_per_lab_and_gpu_model(self):
        self.student("alice", [row(median=100.0)], gpu=H100)
        self.student("bob", [row(median=50.0)], gpu=H200)
        self.student("carol", [row("BM_transpose/8192/manual_time", median=70.0)], day="d03")
        boards = L.build_boards(L.collect([self.students])[0])
        self.assertEqual([(b.lab, b.gpu, [e.student for e in b.entries]) for b in boards],
                         [("d02", H100, ["alice"]), ("d02", H200, ["bob"]),
                          ("d03", H100, ["carol"])])
        self.assertEqual([b.gpu for b in L.build_boards(L.collect([self.students])[0],
                                                        gpu="h200")], [H200])
        self.assertEqual([b.lab for b in L.build_boards(L.collect([self.students])[0],
                                                        lab="d03")], ["d03"])

    def test_lab_and_gpu_fall_back_to_the_file_name_and_the_device(self):
        d = doc("alice", [row()])
        del d["context"]["course_lab"], d["context"]["course_gpu"]
        write(self.students, "alice/bench-d04.json", d)
        b = L.build_boards(L.collect([self.students])[0])[0]
        self.assertEqual((b.lab, b.gpu), ("d04", H100))


class EligibilityTest(Fixture):
    def reasons(self, **kw):
        rows = kw.pop("rows", None) or [row(**kw.pop("row", {}))]
        self.student("x", rows, **kw)
        entries, problems = L.collect([self.students])
        self.assertEqual(problems, [])
        b = L.build_boards(entries)[0]
        self.assertEqual(b.entries, [])
        self.assertEqual([s for s, _ in b.rejected], ["x"])
        return b.rejected[0][1]

    def test_the_graders_reason_verbatim(self):
        # course grade judged the row: its reason is the board's, word for word.
        r = self.reasons(row={"error": "the benchmark program was killed by SIGSEGV"})
        self.assertEqual(r, "the benchmark program was killed by SIGSEGV")

    def test_a_file_the_grader_did_not_judge_is_never_ranked(self):
        # A benchmark file written by a student's own program (or graded by an older grader):
        # its times are the program's word only.
        self.assertEqual(self.reasons(judged=""), L.REASON_NOT_JUDGED)
        shutil.rmtree(self.students)
        self.assertEqual(self.reasons(judged="student"), L.REASON_NOT_JUDGED)

    def test_tests_not_passed_in_the_same_run(self):
        self.assertIn(L.REASON_TESTS, self.reasons(tests="failed"))

    def test_tests_missing(self):
        d = doc("x", [row()])
        del d["context"]["course_tests"]
        write(self.students, "x/bench-d02.json", d)
        b = L.build_boards(L.collect([self.students])[0])[0]
        self.assertIn("course_tests: missing", b.rejected[0][1])

    def test_not_rechecked(self):
        self.assertEqual(self.reasons(row={"recheck": 0}), L.REASON_RECHECK)

    def test_recheck_missing(self):
        self.assertEqual(self.reasons(row={"recheck": None}), L.REASON_RECHECK)

    def test_faster_than_the_floor(self):
        r = self.reasons(row={"median": 5.0, "floor": 20.0, "pct": 50.0})
        self.assertTrue(r.startswith("impossible: faster than the physical floor"), r)

    def test_above_125_percent_of_the_copy_rate(self):
        r = self.reasons(row={"pct": 300.0})
        self.assertTrue(r.startswith("impossible: faster than the physical floor"), r)

    def test_percent_of_copy_computed_when_missing(self):
        r = self.reasons(row={"pct": None, "gbs": 5000.0})  # ceiling 2500: 200%
        self.assertIn("impossible", r)

    def test_missing_or_non_positive_median(self):
        self.assertEqual(self.reasons(row={"median": None}), L.REASON_NO_TIME)
        shutil.rmtree(self.students)
        self.assertEqual(self.reasons(row={"median": 0.0}), L.REASON_NO_TIME)
        shutil.rmtree(self.students)
        self.assertEqual(self.reasons(row={"median": -3.0}), L.REASON_NO_TIME)

    def test_at_the_limits_is_ranked(self):
        self.student("x", [row(median=20.0, floor=20.0, pct=125.0)])
        b = L.build_boards(L.collect([self.students])[0])[0]
        self.assertEqual([e.student for e in b.entries], ["x"])

    def test_every_reason_is_given(self):
        r = self.reasons(tests="failed", row={"recheck": 0})
        for reason in (L.REASON_TESTS, L.REASON_RECHECK):
            self.assertIn(reason, r)

    def test_a_rejected_run_does_not_hide_an_eligible_one(self):
        self.student("x", [row(median=50.0, recheck=0)], run="2024-05-01T10:00:00Z")
        self.student("x", [row(median=80.0)], file="b/bench-d02.json", run="2024-05-02T10:00:00Z")
        b = L.build_boards(L.collect([self.students])[0])[0]
        self.assertEqual([(e.student, e.median_us, e.runs) for e in b.entries], [("x", 80.0, 1)])
        self.assertEqual(b.rejected, [])
        self.assertEqual(b.not_counted, [("x", L.REASON_RECHECK)])


class FilesTest(Fixture):
    def test_malformed_foreign_and_unreadable_files_are_reported_and_the_good_ones_ranked(self):
        self.student("alice", [row(median=90.0)])
        self.student("bob", [row(median=95.0)])
        bad = write(self.students, "carol/bench-d02.json",
                    '{"context": {},\n "benchmarks": [\n  {x')
        foreign = write(self.students, "dave/notes.json", {"hello": "world"})
        no_course = write(self.students, "erin/bench-d02.json",
                          {"context": {"date": "x"}, "benchmarks": [row()]})
        not_object = write(self.students, "frank/list.json", [1, 2, 3])
        empty = write(self.students, "gina/bench-d02.json", "")
        unreadable = write(self.students, "hank/bench-d02.json", doc("hank", [row()]))
        os.chmod(unreadable, 0)
        deep = write(self.students, "ivan/bench-d02.json", "[" * 100000 + "]" * 100000)
        entries, problems = L.collect([self.students])
        text = "\n".join(problems)
        self.assertIn(f"{bad} is not valid JSON (line 3, column 4:", text)
        self.assertIn(f"{empty} is not valid JSON (line 1, column 1:", text)
        self.assertIn(f"{no_course} is not a graded benchmark run: no course_student in its "
                      "context", text)
        self.assertNotIn("notes.json", text)  # in a folder, only bench-dNN.json files are read
        self.assertIn(deep, text)
        if os.geteuid() != 0:  # root reads a file of mode 000
            self.assertIn(f"{unreadable}: cannot read it", text)
        b = L.build_boards(entries)[0]
        self.assertIn("alice", [e.student for e in b.entries])
        self.assertIn("bob", [e.student for e in b.entries])
        # Named on the command line, each foreign file has its own line.
        _, problems = L.collect([foreign, not_object])
        self.assertEqual(problems, [
            f"{foreign} is not a graded benchmark run: not Google Benchmark output (no "
            "\"benchmarks\" list)",
            f"{not_object} is not a graded benchmark run: not Google Benchmark output (not a "
            "JSON object)"])

    def test_a_grade_folder_has_no_problems_of_the_graders_own_files(self):
        for s in ("alice", "bob", "carol"):
            self.student(s, [row()])
            write(self.students, f"{s}/grade.json", {"format": 1, "student": s, "days": []})
            write(self.students, f"{s}/test-results/d02.lab.main.json", {"format": 1, "cases": []})
            # What a student's program wrote in its sandbox, or its raw output: never read.
            write(self.students, f"{s}/sandbox/bench/bench-d02.json", doc(s, [row(median=1e-3)]))
            write(self.students, f"{s}/raw/bench-d02.json", doc(s, [row(median=1e-3)]))
        entries, problems = L.collect([self.students])
        self.assertEqual(problems, [])
        self.assertEqual(len(L.build_boards(entries)[0].entries), 3)
        self.assertEqual({e.median_us for e in L.build_boards(entries)[0].entries}, {100.0})

    def test_nameless_entries_and_missing_paths(self):
        d = doc("alice", [row(), {"no": "name"}, 7])
        write(self.students, "alice/bench-d02.json", d)
        entries, problems = L.collect([self.students, os.path.join(self.tmp, "nowhere")])
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("nowhere: no such file or folder", problems[0])
        self.assertIn("benchmark entry 2 has no name", problems[1])
        self.assertIn("benchmark entry 3 has no name", problems[2])
        self.assertEqual(len(L.build_boards(entries)[0].entries), 1)

    def test_a_file_that_timed_nothing(self):
        self.student("alice", [])
        entries, problems = L.collect([self.students])
        self.assertEqual(entries, [])
        self.assertIn("no benchmark was timed", problems[0])


class OutputTest(Fixture):
    def make_class(self):
        self.student("alice", [row(median=90.0, tflops=1.25),
                               row("BM_other/1/manual_time", key=0, median=5.0)])
        self.student("alice", [row(median=95.0, tflops=1.2)], file="r2/bench-d02.json",
                     run="2024-05-02T09:00:00Z")
        self.student(EVIL, [row(median=100.0)])
        self.student("x & y | z", [row(median=110.0)])
        self.student("bob", [row(median=1.0, floor=10.0)])
        self.student("mallory", [row(median=1.0)], judged="")
        write(self.students, "zed/bench-d03.json", "{nope")

    def test_json_format(self):
        self.make_class()
        out = os.path.join(self.tmp, "site")
        code, stdout, _ = run_main([self.students, "--out", out])
        self.assertEqual(code, 0, stdout)
        with open(os.path.join(out, "leaderboard.json"), encoding="utf-8") as f:
            data = json.load(f)
        self.assertEqual(sorted(data), ["boards", "generated", "problems"])
        self.assertRegex(data["generated"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(len(data["problems"]), 1)
        self.assertIn("bench-d03.json is not valid JSON", data["problems"][0])
        head = data["boards"][0]
        self.assertEqual(sorted(head), ["benchmark", "entries", "gpu", "headline", "lab",
                                        "rejected"])
        self.assertEqual((head["lab"], head["gpu"], head["benchmark"], head["headline"]),
                         ("d02", H100, "BM_vector_add/67108864", True))
        self.assertEqual(head["entries"][0], {
            "rank": 1, "student": "alice", "median_us": 90.0, "GB/s": 2000.0, "%copy": 80.0,
            "TFLOP/s": 1.25, "runs": 2, "run": "2024-05-01T10:00:00Z"})
        self.assertEqual([e["student"] for e in head["entries"]], ["alice", EVIL, "x & y | z"])
        self.assertIsNone(head["entries"][1]["TFLOP/s"])
        for e in head["entries"]:
            self.assertEqual(sorted(e), sorted(["rank", "student", "median_us", "GB/s", "%copy",
                                                "TFLOP/s", "runs", "run"]))
        self.assertEqual([sorted(r) for r in head["rejected"]], [["reason", "student"]] * 2)
        self.assertEqual([r["student"] for r in head["rejected"]], ["bob", "mallory"])
        self.assertTrue(head["rejected"][0]["reason"].startswith("impossible"))
        other = data["boards"][1]
        self.assertEqual((other["benchmark"], other["headline"]), ("BM_other/1", False))
        self.assertEqual([e["student"] for e in other["entries"]], ["alice"])

    def test_html_is_self_contained_and_escapes_student_names(self):
        self.make_class()
        out = os.path.join(self.tmp, "site")
        self.assertEqual(run_main([self.students, "--out", out])[0], 0)
        with open(os.path.join(out, "leaderboard.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertNotIn("<script>document", page)
        self.assertIn("&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;&amp;amp;co",
                      page)
        self.assertIn("x &amp; y | z", page)
        self.assertEqual(page.count("<script"), 1)  # the sorting script, nothing else
        self.assertNotRegex(page, r"(?i)(src|href)\s*=\s*[\"']?(https?:|//)|@import|url\(")
        self.assertIn("Not ranked", page)
        self.assertIn("Problems", page)
        with open(os.path.join(out, "leaderboard.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn(r"\<script\>", md)
        self.assertIn(r"x \& y \| z", md)
        self.assertNotIn("<script>", md)
        self.assertIn("| 1 | alice | 90.00 | 2000 | 80.0 | 1.25 | 2 |", md)
        self.assertIn("### Not ranked", md)
        self.assertFalse([n for n in os.listdir(out) if ".tmp." in n])

    def test_main_prints_the_headline_boards_and_problems(self):
        self.make_class()
        code, stdout, _ = run_main([self.students, "--out", os.path.join(self.tmp, "o")])
        self.assertEqual(code, 0)
        self.assertIn("BM_vector_add/67108864 (headline)", stdout)
        self.assertNotIn("BM_other", stdout)
        self.assertIn("bench-d03.json is not valid JSON", stdout)
        self.assertIn("| 2 | \\<script\\>", stdout)

    def test_exit_codes(self):
        out = os.path.join(self.tmp, "o")
        code, _, err = run_main([])
        self.assertEqual(code, 2)
        self.assertIn("usage", err)
        self.assertEqual(run_main(["--help"])[0], 0)
        self.assertEqual(run_main([self.students, "--lab", "nonsense"])[0], 2)
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        code, _, err = run_main([empty, "--out", out])
        self.assertEqual(code, 2)
        self.assertIn("no graded benchmark runs", err)
        self.assertEqual(run_main([os.path.join(self.tmp, "missing"), "--out", out])[0], 2)
        # Only rejected runs: 1, and nothing written.
        self.student("bob", [row(recheck=0)])
        code, stdout, _ = run_main([self.students, "--out", out])
        self.assertEqual(code, 1)
        self.assertIn("bob", stdout)
        self.assertIn("nothing written", stdout)
        self.assertFalse(os.path.exists(out))
        # An eligible run: 0, the three files; a filter that leaves nothing: 1.
        self.student("alice", [row()])
        self.assertEqual(run_main([self.students, "--out", out])[0], 0)
        self.assertEqual(sorted(os.listdir(out)), sorted(L.OUTPUT_NAMES))
        self.assertEqual(run_main([self.students, "--out", out, "--gpu", "A100"])[0], 1)
        self.assertEqual(run_main([self.students, "--out", out, "--lab", "3"])[0], 1)
        code, _, _ = run_main([self.students, "--out", out, "--lab", "d02_coalescing"])
        self.assertEqual(code, 0)

    def test_its_own_output_is_not_read_back(self):
        self.student("alice", [row()])
        out = os.path.join(self.students, "site")  # inside the folder it reads
        self.assertEqual(run_main([self.students, "--out", out])[0], 0)
        code, stdout, _ = run_main([self.students, "--out", out])
        self.assertEqual(code, 0)
        self.assertNotIn("Problems", stdout)

    def test_the_course_cli_runs_it(self):
        cli = os.path.join(ROOT, "tools", "course", "cli.py")
        with open(cli, encoding="utf-8") as f:
            if "leaderboard" not in f.read():
                self.skipTest("tools/course/cli.py has no leaderboard command yet")
        self.student("alice", [row()])
        out = os.path.join(self.tmp, "o")
        p = subprocess.run([sys.executable, "-c",
                            "import sys; sys.path.insert(0, sys.argv[1]); "
                            "from course import cli; sys.exit(cli.main(sys.argv[2:]))",
                            os.path.join(ROOT, "tools"), "leaderboard", self.students,
                            "--out", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "leaderboard.html")))


# ------------------------------------------------------------------------------- browser


def find_browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _Dom(html.parser.HTMLParser):
    """The elements and text of a serialized DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.scripts, self._in_script = [], [], [], False
        self.root_attrs = {}

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "html":
            self.root_attrs = dict(attrs)
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


@unittest.skipUnless(find_browser(), "no Chromium or Chrome on PATH (Debian: apt-get install "
                     "chromium): the page is not rendered in a browser")
class BrowserTest(Fixture):
    def test_the_page_as_a_browser_builds_it(self):
        self.student("alice", [row(median=90.0)])
        self.student(EVIL, [row(median=100.0)])
        self.student("x & y", [row(median=110.0)])
        self.student("bob", [row(recheck=0)])
        out = os.path.join(self.tmp, "site")
        self.assertEqual(run_main([self.students, "--out", out])[0], 0)
        page = os.path.join(out, "leaderboard.html")
        browser = find_browser()
        profile = tempfile.mkdtemp(prefix="leaderboard-browser-")
        self.addCleanup(shutil.rmtree, profile, ignore_errors=True)
        try:
            p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                                f"--user-data-dir={profile}", "--dump-dom", "file://" + page],
                               capture_output=True, text=True, errors="replace", timeout=120)
        except subprocess.TimeoutExpired:
            self.skipTest(f"{browser} did not finish within 120 s here")
        except OSError as e:
            self.skipTest(f"{browser} could not start here: {e}")
        if p.returncode != 0 or "<html" not in p.stdout:
            self.skipTest(f"{browser} did not render the page here (exit {p.returncode}): "
                          f"{p.stderr.strip()[-500:]}")
        dom = _Dom()
        dom.feed(p.stdout)
        text = " ".join(dom.text)
        for name in ("alice", EVIL, "x & y", "bob"):
            self.assertIn(name, text)
        self.assertIn("Not ranked", text)
        self.assertIn(L.REASON_RECHECK, text)
        # The student's <script> is text; the page's only script element is its own, and it ran
        # (the Content-Security-Policy allowed it by its hash).
        self.assertEqual(len(dom.scripts), 1)
        self.assertNotIn("pwned", dom.scripts[0])
        self.assertEqual(dom.root_attrs.get("data-sortable"), "1")
        self.assertNotIn("<title>pwned", p.stdout)


if __name__ == "__main__":
    unittest.main()
