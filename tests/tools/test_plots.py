"""Tests of the plots (tools/plots/course_plots.py and its package tools/plots/courseplots/).

Each command runs on small synthetic inputs written here and on the real measurements in
results/h100/; bad input must give exit 2 and a message, never a traceback; and the
committed lessons/figures/ must be what `course_plots.py lessons` draws today.

That last check is exact (the SVG bytes) when the installed matplotlib is the version that drew
the committed files (their SVG metadata names it). Another version lays a figure out a little
differently, so then it compares what does not depend on the version: the file names, every
<text> of every SVG (titles, axis labels, tick labels, the numbers written on the bars) and the
PNGs' pixel sizes (within a pixel); the byte comparison is reported as skipped, with the two
versions.

Every test is skipped when matplotlib is not installed
(python3 -m pip install -r tools/plots/requirements.txt).
"""

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOTS = os.path.join(ROOT, "tools", "plots")
SCRIPT = os.path.join(PLOTS, "course_plots.py")
MEASUREMENTS = os.path.join(ROOT, "results", "h100")
FIGURES = os.path.join(ROOT, "lessons", "figures")
DIAGRAMS = os.path.join(ROOT, "lessons", "diagrams")
LESSONS = os.path.join(ROOT, "lessons")
sys.path.insert(0, PLOTS)

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
NO_MATPLOTLIB = ("matplotlib is not installed: python3 -m pip install -r "
                 "tools/plots/requirements.txt")
needs_matplotlib = unittest.skipUnless(HAVE_MATPLOTLIB, NO_MATPLOTLIB)

if HAVE_MATPLOTLIB:
    import matplotlib

    from courseplots import data as D
    from courseplots import figures as F
    from courseplots import lessons as L

SVG_NS = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DAYS = ["d01", "d02", "d03", "d04", "d05", "d06"]


def run_cli(*args):
    p = subprocess.run([sys.executable, SCRIPT] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def svg_texts(path):
    """Every <text> of an SVG (one per line of a text), whitespace collapsed, in order."""
    root = ET.parse(path).getroot()
    return [" ".join("".join(t.itertext()).split()) for t in root.iter(SVG_NS + "text")]


def svg_titles(path):
    """The texts of the titles (the <g id="course-title-N"> that courseplots marks)."""
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(SVG_NS + "g"):
        if g.get("id", "").startswith("course-title-"):
            out += [" ".join("".join(t.itertext()).split()) for t in g.iter(SVG_NS + "text")]
    return out


def svg_creator(path):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"<dc:title>Matplotlib v([^,<]+)", f.read())
    return m.group(1) if m else ""


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])


# ------------------------------------------------------------------------------- synthetic inputs


def bench_row(name, gbs, pct=None, tflops=None, key=False, **extra):
    b = {"name": name + "/min_time:0.050/manual_time", "run_name": name, "run_type": "iteration",
         "repetitions": 1, "iterations": 10, "real_time": 1.0, "time_unit": "us",
         "median_us": 100.0, "GB/s": gbs}
    if pct is not None:
        b["%copy"] = pct
    if tflops is not None:
        b["TFLOP/s"] = tflops
    if key:
        b["key"] = 1
    b.update(extra)
    return b


def synthetic_bench(device="NVIDIA H100 80GB HBM3 (sm_90): 132 SMs", ceiling="3000.0",
                    lab_context=None):
    context = {"date": "2026-11-23T00:00:00+00:00", "device": device}
    if ceiling is not None:
        context["copy_ceiling_GBps"] = ceiling
    if lab_context:
        context["course_lab"] = lab_context
    rows = [
        bench_row("BM_vector_add/1048576", 1500.0, 50.0, tflops=0.125),
        bench_row("BM_vector_add/67108864", 2700.0, 90.0, tflops=0.225, key=True),
        bench_row("BM_copy<float>/n:1048576", 1200.0, 40.0),
        bench_row("BM_copy<float>/n:67108864", 2800.0, 93.3),
        bench_row("BM_copy<course::half>/n:1048576", 900.0, 30.0),
        bench_row("BM_copy<course::half>/n:67108864", 2600.0, 86.7),
        bench_row("BM_softmax/rows:8192/cols:8192/threads:0", 2900.0, 96.7),
        bench_row("BM_softmax/rows:4096/cols:16384/threads:0", 2850.0, 95.0),
        bench_row("BM_softmax/rows:8192/cols:8192/threads:128", 1450.0, 48.3),
        bench_row("BM_math/ptx_exp2/n:16777216/terms:64", 380.0, 12.7),
        bench_row("BM_math/library_exp2/n:16777216/terms:64", 381.0, 12.7),
        bench_row("BM_blocks/blocks:0", 2700.0, 90.0),
        bench_row("BM_blocks/blocks:1", 7.0, 0.2),
        bench_row("BM_blocks/blocks:132", 830.0, 27.7),
        {"name": "BM_broken/1024/manual_time", "run_type": "iteration", "error_occurred": True,
         "error_message": "output mismatch"},
        dict(bench_row("BM_vector_add/67108864", 9999.0), run_type="aggregate",
             aggregate_name="mean"),
    ]
    return {"context": context, "benchmarks": rows}


def synthetic_leaderboard():
    def entry(rank, student, us):
        gbs = 536.870912e6 / us / 1e3
        return {"rank": rank, "student": student, "median_us": us, "GB/s": gbs,
                "%copy": gbs / 2928.0 * 100.0, "TFLOP/s": None, "runs": 2,
                "run": "2026-11-24T09:00:00Z"}

    return {"generated": "2026-11-24T10:00:00Z", "problems": [], "boards": [
        {"lab": "d02", "gpu": "NVIDIA H100 80GB HBM3",
         "benchmark": "BM_add_bias_gelu_fused<float>/rows:8192/cols:8192", "headline": True,
         "entries": [entry(1, "alice", 196.0), entry(2, "bob", 201.5), entry(3, "carol", 384.0)],
         "rejected": [{"student": "eve", "reason": "output was wrong, not timed"}]},
        {"lab": "d02", "gpu": "NVIDIA H100 80GB HBM3", "benchmark": "BM_gelu<half>/n:67108864",
         "headline": False, "entries": [entry(1, "alice", 102.0)], "rejected": []},
        {"lab": "d06", "gpu": "NVIDIA H100 80GB HBM3",
         "benchmark": "BM_rmsnorm_bf16/rows:16384/hidden:4096", "headline": True,
         "entries": [], "rejected": [{"student": "bob", "reason": "no valid time"}]},
    ]}


def synthetic_gradebook():
    def day(name, status, points, perf):
        exercises = [{"exercise": f"Ex{i + 1}", "points": p, "max_points": 10.0,
                      "status": "graded"} for i, p in enumerate(points)]
        # As the grader writes it: the day's points and max_points count the exercises and
        # the checks; the performance has its own.
        earned = sum(p or 0.0 for p in points) + 5.0
        return {"day": name, "status": status, "points": earned if status == "graded" else 0.0,
                "max_points": 10.0 * len(points) + 5.0, "exercises": exercises,
                "checks": [{"check": "memcheck", "points": 5.0 if status == "graded" else 0.0,
                            "max_points": 5.0}],
                "performance": {"points": perf, "max_points": 20.0}}

    return {"format": 1, "students": [
        {"student": "alice", "days": [day("d02", "graded", [10.0, 8.0, 6.0], 18.0),
                                      day("d04", "graded", [10.0, 10.0], 20.0)]},
        {"student": "bob", "days": [day("d02", "graded", [5.0, None, 2.0], 4.0),
                                    day("d04", "build_failed", [0.0, 0.0], 0.0)]},
        {"student": "carol", "days": [day("d02", "not_submitted", [0.0, 0.0, 0.0], 0.0),
                                      day("d04", "graded", [7.5, 2.5], 11.0)]},
        {"student": "dave", "days": [day("d02", "link_failed", [0.0, 0.0, 0.0], 0.0),
                                     day("d04", "not_submitted", [0.0, 0.0], 0.0)]},
    ]}


def write_json(folder, name, obj):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    return path


class PlotTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        self._tmp.cleanup()

    def assertFigure(self, stem_path):
        """stem.png is a PNG and stem.svg a parseable SVG."""
        with open(stem_path + ".png", "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE, stem_path + ".png")
        with open(stem_path + ".svg", encoding="utf-8") as f:
            text = f.read()
        self.assertIn("<svg", text)
        root = ET.fromstring(text.encode("utf-8"))
        self.assertEqual(root.tag, SVG_NS + "svg")

    def assertWrote(self, stdout, expected_stems):
        """The command printed exactly the PNG and SVG of each stem, and wrote them."""
        printed = sorted(os.path.basename(p) for p in stdout.split())
        expected = sorted(f"{s}.{e}" for s in expected_stems for e in ("png", "svg"))
        self.assertEqual(printed, expected)
        for s in expected_stems:
            self.assertFigure(os.path.join(self.out, s))

    def assertBadInput(self, args, *words):
        rc, out, err = run_cli(*args)
        self.assertEqual(rc, 2, f"{args}: {err}")
        self.assertNotIn("Traceback", err)
        self.assertEqual(out, "")
        for w in words:
            self.assertIn(w, err)
        return err


# ------------------------------------------------------------------------------- reading


@needs_matplotlib
class NamesTest(unittest.TestCase):
    def test_a_name_is_taken_apart(self):
        n = D.parse_name("BM_copy_2_vectorized<float>/n:67108864/offset:1/min_time:0.050/"
                         "manual_time")
        self.assertEqual((n.family, n.dtype), ("BM_copy_2_vectorized", "float"))
        self.assertEqual(n.args, (("n", 67108864), ("offset", 1)))
        self.assertEqual(n.full, "BM_copy_2_vectorized<float>/n:67108864/offset:1")
        self.assertEqual(D.parse_name("BM_vector_add/67108864/manual_time").args,
                         (("#1", 67108864),))
        n = D.parse_name("BM_math/ptx_exp2/n:16777216/terms:64/iterations:3")
        self.assertEqual((n.family, n.labels), ("BM_math", ("ptx_exp2",)))
        self.assertEqual(D.parse_name("BM_gelu_fast<course::bfloat16>/67108864").dtype,
                         "bfloat16")

    def test_the_lab_comes_from_the_file_name_or_the_context(self):
        self.assertEqual(D.lab_of_path("x/bench-d04-solution.json"), "d04")
        self.assertEqual(D.lab_of_path("results.json"), "")
        with tempfile.TemporaryDirectory() as d:
            path = write_json(d, "results.json", synthetic_bench(lab_context="day5"))
            f = D.load_bench(path)
            self.assertEqual(f.lab, "d05")
            self.assertEqual(f.gpu, "NVIDIA H100 80GB HBM3")
            self.assertEqual(f.ceiling_gbs, 3000.0)
            # The aggregate row is not read and the row with an error is set aside.
            self.assertEqual(len(f.rows), 14)
            self.assertEqual(len(f.errors), 1)
            self.assertEqual(D.load_bench(path, lab="d03").lab, "d03")


@needs_matplotlib
class SweepPlanTest(unittest.TestCase):
    def rows(self, names):
        return [D.BenchRow(D.parse_name(n), "d01", {"GB/s": 1000.0 + i})
                for i, n in enumerate(names)]

    def test_x_is_the_argument_that_makes_lines(self):
        rows = self.rows(["BM_copy<float>/n:1024", "BM_copy<float>/n:4096",
                          "BM_copy<half>/n:1024", "BM_copy<half>/n:4096"])
        s = F.plan_sweep("BM_copy", rows)
        self.assertEqual(s.x_key, "n")
        self.assertEqual(list(s.series), ["float", "half"])
        self.assertEqual([x for x, _ in s.series["half"]], [1024, 4096])

    def test_other_arguments_make_the_lines(self):
        rows = self.rows([f"BM_s/n:64/stride:{s}/offset:{o}" for o in (0, 1)
                          for s in (1, 2, 4)])
        s = F.plan_sweep("BM_s", rows)
        self.assertEqual(s.x_key, "stride")
        self.assertEqual(list(s.series), ["offset=0", "offset=1"])
        self.assertEqual(s.fixed, ["n = 64"])

    def test_arguments_that_change_together_are_categories(self):
        rows = self.rows(["BM_t<float>/rows:8192/cols:8192", "BM_t<float>/rows:4096/cols:16384",
                          "BM_t<half>/rows:8192/cols:8192"])
        s = F.plan_sweep("BM_t", rows)
        self.assertEqual(s.x_key, "")
        self.assertEqual(s.categories, ["rows:8192 cols:8192", "rows:4096 cols:16384"])
        self.assertEqual(list(s.series), ["float", "half"])

    def test_x_can_be_chosen(self):
        rows = self.rows(["BM_t/rows:8192/cols:8192", "BM_t/rows:4096/cols:16384"])
        self.assertEqual(F.plan_sweep("BM_t", rows, x_key="cols").x_key, "cols")
        with self.assertRaises(D.InputError):
            F.plan_sweep("BM_t", rows, x_key="depth")


@needs_matplotlib
class RooflinePointsTest(unittest.TestCase):
    def test_intensity_is_flops_over_bytes_and_rows_without_flops_are_nominal(self):
        with tempfile.TemporaryDirectory() as d:
            f = D.load_bench(write_json(d, "bench-d01-x.json", synthetic_bench()))
        points = F.roofline_points([f], nominal=0.05)
        by_name = {p.row.name.full: p for p in points}
        p = by_name["BM_vector_add/67108864"]
        self.assertTrue(p.flops_measured)
        self.assertAlmostEqual(p.intensity, 0.225e12 / 2700e9)
        self.assertAlmostEqual(p.tflops, 0.225)
        q = by_name["BM_copy<float>/n:67108864"]
        self.assertFalse(q.flops_measured)
        self.assertAlmostEqual(q.intensity, 0.05)  # one lab: no spread around the nominal
        self.assertAlmostEqual(q.tflops, 2800e9 * 0.05 / 1e12)
        self.assertEqual(len(points), 14)


# ------------------------------------------------------------------------------- the commands


@needs_matplotlib
class HelpTest(unittest.TestCase):
    def test_help_exits_0(self):
        for args in ([], ["roofline"], ["sweep"], ["leaderboard"], ["distribution"],
                     ["lessons"]):
            rc, out, err = run_cli(*(args + ["--help"]))
            self.assertEqual(rc, 0, err)
            self.assertIn("usage: course_plots.py", out)

    def test_no_command_is_a_usage_error(self):
        rc, _, err = run_cli()
        self.assertEqual(rc, 2)
        self.assertIn("usage", err)


@needs_matplotlib
class RooflineTest(PlotTestCase):
    def test_synthetic(self):
        path = write_json(self.tmp, "bench-d01-synthetic.json", synthetic_bench())
        rc, out, err = run_cli("roofline", "--bench", path, "--out", self.out)
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["roofline"])
        texts = svg_texts(os.path.join(self.out, "roofline.svg"))
        self.assertIn("Roofline, NVIDIA H100 80GB HBM3: every benchmark row of d01",
                      svg_titles(os.path.join(self.out, "roofline.svg")))
        joined = "\n".join(texts)
        self.assertIn("memory roof: measured copy ceiling, 3000 GB/s", joined)
        self.assertIn("compute roof: 67 TFLOP/s (H100 SXM datasheet", joined)
        self.assertIn("nominal 0.05 FLOP/byte", joined)

    def test_one_roofline_per_gpu_unless_named(self):
        a = write_json(self.tmp, "bench-d01-a.json", synthetic_bench())
        b = write_json(self.tmp, "bench-d02-b.json", synthetic_bench(
            device="NVIDIA H200 (sm_90): 132 SMs", ceiling="4300"))
        rc, out, err = run_cli("roofline", "--bench", a, b, "--out", self.out,
                               "--peak-tflops", "60")
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["roofline_NVIDIA_H100_80GB_HBM3", "roofline_NVIDIA_H200"])
        rc, out, err = run_cli("roofline", "--bench", a, b, "--out", self.out, "--gpu-name",
                               "Hopper")
        self.assertEqual(rc, 0, err)
        self.assertIn("compute roof: 67 TFLOP/s", "\n".join(
            svg_texts(os.path.join(self.out, "roofline.svg"))))
        self.assertIn("Roofline, Hopper: every benchmark row of d01, d02",
                      svg_titles(os.path.join(self.out, "roofline.svg")))

    def test_real_measurements(self):
        paths = [os.path.join(MEASUREMENTS, d, f"bench-{d}-solution.json") for d in DAYS]
        rc, out, err = run_cli("roofline", "--bench", *paths, "--out", self.out)
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["roofline"])
        joined = "\n".join(svg_texts(os.path.join(self.out, "roofline.svg")))
        for d in DAYS:
            self.assertIn(f"{d}: ", joined)
        self.assertIn("memory roof: measured copy ceiling, 2949 GB/s (2921–2949 GB/s in 6 "
                      "processes; the highest)", joined)

    def test_without_a_copy_ceiling(self):
        path = write_json(self.tmp, "bench-d01-x.json", synthetic_bench(ceiling=None))
        self.assertBadInput(["roofline", "--bench", path, "--out", self.out],
                            "copy_ceiling_GBps", "--ceiling-gbps")
        rc, out, err = run_cli("roofline", "--bench", path, "--out", self.out,
                               "--ceiling-gbps", "2000")
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["roofline"])


@needs_matplotlib
class SweepTest(PlotTestCase):
    def test_synthetic(self):
        path = write_json(self.tmp, "bench-d02-synthetic.json", synthetic_bench())
        rc, out, err = run_cli("sweep", "--bench", path, "--out", self.out)
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["d02_vector_add_sweep", "d02_copy_sweep", "d02_softmax_sweep",
                               "d02_math_sweep", "d02_blocks_sweep"])
        copy = os.path.join(self.out, "d02_copy_sweep.svg")
        self.assertEqual(svg_titles(copy), ["d02: copy"])
        texts = svg_texts(copy)
        for t in ("float", "half", "2²⁰", "2²⁶", "n (log₂ scale)",
                  "copy ceiling: 3000 GB/s (same process)", "% of the copy ceiling"):
            self.assertIn(t, texts)

    def test_family_and_lab(self):
        path = write_json(self.tmp, "results.json", synthetic_bench())
        rc, out, err = run_cli("sweep", "--bench", path, "--out", self.out, "--lab", "d05",
                               "--family", "BM_softmax", "--x", "cols")
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["d05_softmax_sweep"])
        self.assertIn("cols (log₂ scale)", svg_texts(os.path.join(self.out,
                                                                  "d05_softmax_sweep.svg")))
        self.assertBadInput(["sweep", "--bench", path, "--out", self.out, "--family", "BM_x"],
                            "no family BM_x")
        self.assertBadInput(["sweep", "--bench", path, "--out", self.out, "--lab", "x"],
                            "not a lab")
        self.assertBadInput(["sweep", "--bench", path, "--out", self.out, "--x", "depth"],
                            "no benchmark has an argument 'depth'")

    def test_real_measurements(self):
        for d in DAYS:
            with self.subTest(day=d):
                out = os.path.join(self.out, d)
                rc, stdout, err = run_cli("sweep", "--bench", os.path.join(
                    MEASUREMENTS, d, f"bench-{d}-solution.json"), "--out", out)
                self.assertEqual(rc, 0, err)
                paths = stdout.split()
                self.assertTrue(paths)
                for p in paths:
                    self.assertTrue(os.path.basename(p).startswith(f"{d}_"), p)
                    self.assertFigure(os.path.splitext(p)[0])
        strided = os.path.join(self.out, "d02", "d02_copy_1_strided_sweep.svg")
        self.assertEqual(svg_titles(strided), ["d02: copy_1_strided (n = 2²⁶)"])


@needs_matplotlib
class LeaderboardTest(PlotTestCase):
    def test_headline_boards_unless_all(self):
        path = write_json(self.tmp, "leaderboard.json", synthetic_leaderboard())
        rc, out, err = run_cli("leaderboard", "--leaderboard-json", path, "--out", self.out)
        self.assertEqual(rc, 0, err)
        first = ("leaderboard_d02_add_bias_gelu_fused_float_rows_8192_cols_8192_"
                 "NVIDIA_H100_80GB_HBM3")
        empty = "leaderboard_d06_rmsnorm_bf16_rows_16384_hidden_4096_NVIDIA_H100_80GB_HBM3"
        self.assertWrote(out, [first, empty])
        texts = svg_texts(os.path.join(self.out, first + ".svg"))
        self.assertEqual(svg_titles(os.path.join(self.out, first + ".svg")), [  # two lines
            "d02 · BM_add_bias_gelu_fused<float>/rows:8192/cols:8192 (headline)",
            "NVIDIA H100 80GB HBM3: 3 ranked, 1 not ranked"])
        self.assertEqual([t for t in texts if re.match(r"^\d\. ", t)],
                         ["1. alice", "2. bob", "3. carol"])
        self.assertIn("196 µs · 2739 GB/s · 93.5% of copy", texts)
        self.assertIn("eve: output was wrong, not timed", " ".join(texts))
        self.assertIn("nobody ranked", svg_texts(os.path.join(self.out, empty + ".svg")))
        rc, out, err = run_cli("leaderboard", "--leaderboard-json", path, "--out", self.out,
                               "--all")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.split()), 6)

    def test_no_headline_board(self):
        doc = synthetic_leaderboard()
        doc["boards"] = [b for b in doc["boards"] if not b["headline"]]
        path = write_json(self.tmp, "leaderboard.json", doc)
        self.assertBadInput(["leaderboard", "--leaderboard-json", path, "--out", self.out],
                            "none of the 1 boards is a headline board", "--all")

    def test_a_malformed_entry(self):
        doc = synthetic_leaderboard()
        doc["boards"][0]["entries"][1]["median_us"] = "fast"
        path = write_json(self.tmp, "leaderboard.json", doc)
        self.assertBadInput(["leaderboard", "--leaderboard-json", path, "--out", self.out],
                            "board 1, entry 2", "median_us")


@needs_matplotlib
class DistributionTest(PlotTestCase):
    def test_synthetic_class(self):
        path = write_json(self.tmp, "gradebook.json", synthetic_gradebook())
        rc, out, err = run_cli("distribution", "--gradebook", path, "--out", self.out)
        self.assertEqual(rc, 0, err)
        self.assertWrote(out, ["distribution_d02", "distribution_d04", "distribution_days"])
        d02 = os.path.join(self.out, "distribution_d02.svg")
        self.assertEqual(svg_titles(d02), ["d02: 4 students, 2 graded; 1 did not link, "
                                           "1 not submitted"])
        texts = svg_texts(d02)
        for t in ("Ex1", "Ex2", "(1 not run)", "Ex3", "memcheck", "performance", "day total"):
            self.assertIn(t, texts)
        self.assertEqual(svg_titles(os.path.join(self.out, "distribution_d04.svg")),
                         ["d04: 4 students, 2 graded; 1 did not build, 1 not submitted"])
        self.assertEqual(svg_titles(os.path.join(self.out, "distribution_days.svg")),
                         ["Day totals: 4 students; student-days 2 not submitted, "
                          "1 did not build, 1 did not link"])

    def test_a_day_not_graded_counts_as_zero(self):
        path = write_json(self.tmp, "gradebook.json", synthetic_gradebook())
        days = {(d.student, d.day): d for d in D.load_gradebook(path)}
        carol = days[("carol", "d02")]
        self.assertFalse(carol.graded)
        self.assertEqual(carol.total.fraction, 0.0)
        self.assertEqual({p.points for p in carol.parts}, {0.0})
        alice = days[("alice", "d02")]
        self.assertAlmostEqual(alice.total.fraction, (24.0 + 5.0 + 18.0) / (30.0 + 5.0 + 20.0))
        bob = days[("bob", "d02")]
        self.assertIsNone(next(p for p in bob.parts if p.name == "Ex2").fraction)

    def test_a_malformed_gradebook(self):
        doc = synthetic_gradebook()
        del doc["students"][1]["days"][0]["status"]
        path = write_json(self.tmp, "gradebook.json", doc)
        self.assertBadInput(["distribution", "--gradebook", path, "--out", self.out],
                            "student bob, d02", "'status'")
        path = write_json(self.tmp, "empty.json", {"format": 1, "students": []})
        self.assertBadInput(["distribution", "--gradebook", path, "--out", self.out],
                            "no student")


@needs_matplotlib
class BadInputTest(PlotTestCase):
    def test_missing_and_malformed_files(self):
        missing = os.path.join(self.tmp, "nothing.json")
        broken = os.path.join(self.tmp, "broken.json")
        with open(broken, "w") as f:
            f.write('{"benchmarks": [')
        wrong = write_json(self.tmp, "wrong.json", {"benchmarks": {"name": "x"}})
        cases = [
            (["roofline", "--bench", missing, "--out", self.out], "cannot be read"),
            (["roofline", "--bench", broken, "--out", self.out], "not valid JSON"),
            (["roofline", "--bench", wrong, "--out", self.out], "not Google Benchmark JSON"),
            (["roofline", "--bench", self.tmp, "--out", self.out], "is a folder"),
            (["sweep", "--bench", missing, "--out", self.out], "cannot be read"),
            (["sweep", "--bench", broken, "--out", self.out], "not valid JSON"),
            (["leaderboard", "--leaderboard-json", missing, "--out", self.out],
             "cannot be read"),
            (["leaderboard", "--leaderboard-json", broken, "--out", self.out],
             "not valid JSON"),
            (["leaderboard", "--leaderboard-json", wrong, "--out", self.out],
             "no 'boards' list"),
            (["distribution", "--gradebook", missing, "--out", self.out], "cannot be read"),
            (["distribution", "--gradebook", broken, "--out", self.out], "not valid JSON"),
            (["distribution", "--gradebook", wrong, "--out", self.out], "no 'students' list"),
            (["lessons", "--measurements", self.tmp, "--out", self.out],
             "bench-d01-solution.json: cannot be read"),
            (["lessons", "--measurements", missing, "--out", self.out], "not a folder"),
        ]
        for args, words in cases:
            with self.subTest(args=args[0:2]):
                self.assertBadInput(args, words)
        self.assertFalse(os.path.exists(self.out))

    def test_bad_arguments(self):
        path = os.path.join(MEASUREMENTS, "d01", "bench-d01-solution.json")
        for value in ("-3", "0", "x", "inf"):
            rc, _, err = run_cli("roofline", "--bench", path, "--out", self.out,
                                 "--peak-tflops", value)
            self.assertEqual(rc, 2)
            self.assertIn("--peak-tflops", err)
            self.assertNotIn("Traceback", err)
        rc, _, err = run_cli("sweep", "--out", self.out)
        self.assertEqual(rc, 2)
        self.assertIn("--bench", err)

    def test_without_matplotlib(self):
        """Exit 3 and the line to install it; a bad input is still found first (exit 2)."""
        hide = ("import runpy, sys; sys.modules['matplotlib'] = None; "
                "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        good = os.path.join(MEASUREMENTS, "d01", "bench-d01-solution.json")
        for args, rc_expected, words in (
                (["roofline", "--bench", good, "--out", self.out], 3,
                 "pip install -r tools/plots/requirements.txt"),
                (["roofline", "--bench", self.tmp + "/no.json", "--out", self.out], 2,
                 "cannot be read")):
            p = subprocess.run([sys.executable, "-c", hide, SCRIPT] + args, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, rc_expected, p.stderr)
            self.assertIn(words, p.stderr)
            self.assertNotIn("Traceback", p.stderr)

    def test_rows_without_bandwidth(self):
        doc = synthetic_bench()
        for b in doc["benchmarks"]:
            b.pop("GB/s", None)
        path = write_json(self.tmp, "bench-d01-x.json", doc)
        self.assertBadInput(["roofline", "--bench", path, "--out", self.out],
                            "no timed row with a GB/s counter")

    def test_a_lesson_row_that_is_missing(self):
        measurements = os.path.join(self.tmp, "m")
        for d, source in L.SOURCES.items():  # Days 1-6, and Day 10 in its run's folder
            with open(os.path.join(MEASUREMENTS, source)) as f:
                doc = json.load(f)
            if d == "d04":
                doc["benchmarks"] = [b for b in doc["benchmarks"]
                                     if not b["name"].startswith("BM_transpose_3_padded<half>")]
            if d == "d10":
                doc["benchmarks"] = [b for b in doc["benchmarks"]
                                     if not b["name"].startswith("BM_gemm_5_warp_tile/")]
            folder = os.path.join(measurements, os.path.dirname(source))
            os.makedirs(folder, exist_ok=True)
            write_json(folder, os.path.basename(source), doc)
        self.assertBadInput(["lessons", "--measurements", measurements, "--out", self.out],
                            "bench-d04-solution.json: no timed row named "
                            "BM_transpose_3_padded<half>/rows:8192/cols:8192")
        shutil.copy(os.path.join(MEASUREMENTS, L.SOURCES["d04"]),
                    os.path.join(measurements, L.SOURCES["d04"]))
        self.assertBadInput(["lessons", "--measurements", measurements, "--out", self.out],
                            "bench-d10-solution.json: no timed row named "
                            "BM_gemm_5_warp_tile/M:4096/N:4096/K:4096")


# ------------------------------------------------------------------------------- the lessons


@needs_matplotlib
class LessonFiguresTest(unittest.TestCase):
    """Draws the lesson figures once into a temporary folder, then compares."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.fresh = os.path.join(cls._tmp.name, "figures")
        cls.rc, cls.stdout, cls.stderr = run_cli("lessons", "--measurements", MEASUREMENTS,
                                                 "--out", cls.fresh)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def expected_stems(self):
        return sorted(s for stems in L.LESSON_FIGURES.values() for s in stems)

    def committed_drawn(self):
        """lessons/figures/: every file in it is drawn by this command."""
        return sorted(os.listdir(FIGURES))

    def test_the_command_draws_every_lesson_figure(self):
        self.assertEqual(self.rc, 0, self.stderr)
        printed = sorted(os.path.basename(p) for p in self.stdout.split())
        self.assertEqual(printed, sorted(f"{s}.{e}" for s in self.expected_stems()
                                         for e in ("png", "svg")))
        for s in self.expected_stems():
            path = os.path.join(self.fresh, s)
            with open(path + ".png", "rb") as f:
                self.assertEqual(f.read(8), PNG_SIGNATURE)
            self.assertEqual(ET.parse(path + ".svg").getroot().tag, SVG_NS + "svg")
            self.assertTrue(svg_titles(path + ".svg"), f"{s}.svg has no marked title")

    def test_output_is_deterministic(self):
        with tempfile.TemporaryDirectory() as d:
            rc, _, err = run_cli("lessons", "--out", d)
            self.assertEqual(rc, 0, err)
            for name in sorted(os.listdir(self.fresh)):
                with open(os.path.join(self.fresh, name), "rb") as a, \
                        open(os.path.join(d, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{name} differs between two runs")

    def test_the_committed_figures_are_up_to_date(self):
        """Version-independent: the same files, the same texts, the same PNG sizes."""
        self.assertEqual(self.rc, 0, self.stderr)
        committed = self.committed_drawn()
        self.assertEqual(committed, sorted(os.listdir(self.fresh)),
                         "lessons/figures/ is not what `course_plots.py lessons` draws: run it "
                         "and commit lessons/figures/")
        for name in committed:
            a, b = os.path.join(FIGURES, name), os.path.join(self.fresh, name)
            with self.subTest(figure=name):
                if name.endswith(".svg"):
                    self.assertEqual(svg_texts(a), svg_texts(b),
                                     f"the text of {name} changed: run `python3 "
                                     "tools/plots/course_plots.py lessons` and commit "
                                     "lessons/figures/")
                else:  # versions round inches x dpi differently: 4.6 x 100 is 460 or 459
                    for x, y in zip(png_size(a), png_size(b)):
                        self.assertLessEqual(abs(x - y), 1, f"{name}: {png_size(a)} committed, "
                                             f"{png_size(b)} drawn now")

    def test_the_committed_svgs_are_byte_identical(self):
        """Exact, where the installed matplotlib is the one that drew the committed files."""
        self.assertEqual(self.rc, 0, self.stderr)
        versions = {svg_creator(os.path.join(FIGURES, n)) for n in self.committed_drawn()
                    if n.endswith(".svg")}
        if versions != {matplotlib.__version__}:
            self.skipTest(f"the committed SVGs were drawn by matplotlib "
                          f"{', '.join(sorted(versions))}, this is {matplotlib.__version__}: "
                          "their bytes differ between versions (the texts were compared)")
        for name in self.committed_drawn():
            if name.endswith(".svg"):
                with self.subTest(figure=name):
                    with open(os.path.join(FIGURES, name), encoding="utf-8") as a, \
                            open(os.path.join(self.fresh, name), encoding="utf-8") as b:
                        self.assertTrue(a.read() == b.read(),
                                        f"{name} is not what `course_plots.py lessons` draws "
                                        "today: run it and commit lessons/figures/")

    def test_each_lesson_cites_its_figures(self):
        cited = set()
        for day, stems in L.LESSON_FIGURES.items():
            lesson = next(f for f in os.listdir(LESSONS) if f.startswith(day + "_"))
            with open(os.path.join(LESSONS, lesson), encoding="utf-8") as f:
                text = f.read()
            for stem in stems:
                with self.subTest(figure=stem):
                    m = re.search(r"^!\[[^\]]+\]\(figures/" + re.escape(stem) + r"\.svg\)\n\n"
                                  r"((?:.+\n)+)", text, re.M)
                    self.assertIsNotNone(m, f"{lesson} has no image line for {stem}.svg")
                    caption = " ".join(m.group(1).split())  # the paragraph after the image
                    self.assertIn("`python3 tools/plots/course_plots.py lessons`", caption)
                    source = L.FIGURE_SOURCES.get(stem, L.source_path(day))
                    self.assertIn(f"`{source}`", caption)
                    cited.add(stem)
        on_disk = {os.path.splitext(n)[0] for n in os.listdir(FIGURES)}
        self.assertEqual(on_disk, cited, "a figure in lessons/figures/ that no lesson cites")


# ------------------------------------------------------------------------------ the diagrams


@needs_matplotlib
class DiagramsTest(unittest.TestCase):
    """The concept diagrams: drawn by code, cited by their lesson, committed as drawn."""

    @classmethod
    def setUpClass(cls):
        from courseplots import diagrams
        cls.stems = diagrams.stems()
        cls._tmp = tempfile.TemporaryDirectory()
        cls.fresh = os.path.join(cls._tmp.name, "diagrams")
        cls.rc, cls.stdout, cls.stderr = run_cli("diagrams", "--out", cls.fresh)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def committed(self):
        return sorted(os.listdir(DIAGRAMS)) if os.path.isdir(DIAGRAMS) else []

    def test_the_command_draws_every_registered_diagram(self):
        self.assertEqual(self.rc, 0, self.stderr)
        printed = sorted(os.path.basename(p) for p in self.stdout.split())
        self.assertEqual(printed, sorted(f"{s}.{e}" for s in self.stems for e in ("png", "svg")))
        for s in self.stems:
            path = os.path.join(self.fresh, s)
            with open(path + ".png", "rb") as f:
                self.assertEqual(f.read(8), PNG_SIGNATURE)
            self.assertEqual(ET.parse(path + ".svg").getroot().tag, SVG_NS + "svg")
            self.assertTrue(svg_titles(path + ".svg"), f"{s}.svg has no marked title")

    def test_the_committed_diagrams_are_up_to_date(self):
        self.assertEqual(self.rc, 0, self.stderr)
        drawn = sorted(os.listdir(self.fresh)) if os.path.isdir(self.fresh) else []
        self.assertEqual(self.committed(), drawn,
                         "lessons/diagrams/ is not what `course_plots.py diagrams` draws: run "
                         "it and commit lessons/diagrams/")
        for name in self.committed():
            a, b = os.path.join(DIAGRAMS, name), os.path.join(self.fresh, name)
            with self.subTest(diagram=name):
                if name.endswith(".svg"):
                    self.assertEqual(svg_texts(a), svg_texts(b),
                                     f"the text of {name} changed: run `python3 "
                                     "tools/plots/course_plots.py diagrams` and commit "
                                     "lessons/diagrams/")
                else:
                    for x, y in zip(png_size(a), png_size(b)):
                        self.assertLessEqual(abs(x - y), 1, f"{name}: {png_size(a)} committed, "
                                             f"{png_size(b)} drawn now")

    def test_each_diagram_is_cited_by_its_lesson_and_each_citation_exists(self):
        cited = {}
        for lesson in sorted(os.listdir(LESSONS)):
            if not re.match(r"^d\d\d_.*\.md$", lesson):
                continue
            with open(os.path.join(LESSONS, lesson), encoding="utf-8") as f:
                for stem in re.findall(r"\]\(diagrams/([a-z0-9_]+)\.svg\)", f.read()):
                    cited.setdefault(stem, set()).add(lesson[:3])
        for stem in self.stems:
            with self.subTest(diagram=stem):
                self.assertIn(stem[:3], cited.get(stem, set()),
                              f"{stem} is drawn but its day's lesson does not show it "
                              f"(![...](diagrams/{stem}.svg))")
        unknown = sorted(set(cited) - set(self.stems))
        self.assertEqual(unknown, [], "lessons cite diagrams that nothing draws")

    def test_a_bad_name_is_a_usage_error(self):
        rc, _, err = run_cli("diagrams", "--out", self._tmp.name, "--only", "d99_nothing")
        self.assertEqual(rc, 2)
        self.assertIn("no such diagram", err)


if __name__ == "__main__":
    unittest.main()
