"""The labs' manifests (labs/<lab>/lab.json, tools/course/labspec.py) and their checker
(tools/labs.py): a manifest that is wrong says where, what disagrees with it is found, and the
build reads the same exercises, points and graded rows as the course tool."""

import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import labs  # noqa: E402
from course import labspec  # noqa: E402

GOOD = {
    "title": "A lab",
    "exercises": [
        {"id": "d42.1", "title": "First", "lesson": "§1",
         "suites": [{"name": "First", "points": 10}], "benchmarks": ["first/n:1024"]},
        {"id": "d42.2", "title": "Second", "lesson": "§2, §3",
         "suites": [{"name": "SecondA", "points": 5}, {"name": "SecondB", "points": 5}],
         "benchmarks": ["second_(a|b)/n:1024"]},
    ],
    "host_suites": ["First"],
}


def parse(doc):
    return labspec.parse(doc, "labs/d42_test/lab.json", "d42")


class LabSpecTest(unittest.TestCase):
    def test_a_good_manifest(self):
        spec = parse(GOOD)
        self.assertEqual(spec.suites, ["First", "SecondA", "SecondB"])
        self.assertEqual(spec.points, {"First": 10.0, "SecondA": 5.0, "SecondB": 5.0})
        self.assertEqual(spec.grade_benchmarks, "^BM_(first/n:1024|second_(a|b)/n:1024)/")
        self.assertEqual(spec.exercise(2).title, "Second")

    def test_mistakes_say_where_and_what(self):
        def broken(path, value):
            doc = json.loads(json.dumps(GOOD))
            target = doc
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            return doc

        cases = [
            (broken(["exercises", 1, "id"], "d42.3"), 'exercise 2: "id" must be "d42.2"'),
            (broken(["exercises", 0, "suites"], []), "non-empty list"),
            (broken(["exercises", 0, "suites", 0, "points"], 0), "positive"),
            (broken(["exercises", 1, "suites", 0, "name"], "First"), "graded twice"),
            (broken(["exercises", 0, "lesson"], "4"), "names sections"),
            (broken(["exercises", 0, "benchmarks"], ["^BM_first/"]), "without ^BM_"),
            (broken(["exercises", 0, "benchmarks"], ["first(/n"]), "not a regular expression"),
            (broken(["sanitizers"], ["leakcheck"]), "not one of"),
            (broken(["timeout"], -1), "positive number"),
            (broken(["host_suites"], ["first"]), "CamelCase"),
            (broken(["extra"], 1), "unknown keys"),
            (broken(["timing_suites"], ["First"]), "First is not in serial_suites"),
        ]
        for doc, words in cases:
            with self.subTest(words=words):
                with self.assertRaisesRegex(labspec.SpecError, words.replace("^", r"\^")
                                            .replace("(", r"\(")):
                    parse(doc)

    def test_a_semicolon_or_bad_json_is_refused_with_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            lab = os.path.join(d, "d42_test")
            os.mkdir(lab)
            path = os.path.join(lab, "lab.json")
            with open(path, "w") as f:
                f.write('{\n"title": "a; b"}')
            with self.assertRaisesRegex(labspec.SpecError, "line 2: no ';'"):
                labspec.load(path)
            with open(path, "w") as f:
                f.write("{broken")
            with self.assertRaisesRegex(labspec.SpecError, "not JSON"):
                labspec.load(path)

    def test_every_lab_of_the_course_has_a_valid_manifest(self):
        names = labs.labs()
        self.assertEqual(len(names), 14)
        for lab in names:
            with self.subTest(lab=lab):
                spec = labspec.load_lab(ROOT, lab)
                self.assertTrue(spec.exercises)
                self.assertTrue(spec.grade_benchmarks, "every lab grades some benchmark rows")

    def test_the_build_reads_what_the_course_tool_reads(self):
        """CMake's reading (course_read_lab_spec) against labspec's, where a build exists."""
        build = os.environ.get("COURSE_BUILD_DIR", os.path.join(ROOT, "build", "default"))
        path = os.path.join(build, "course_manifest.json")
        if not os.path.exists(path):
            self.skipTest(f"no configured build at {build}")
        with open(path) as f:
            manifest = json.load(f)
        self.assertEqual(len(manifest["labs"]), 14)
        for entry in manifest["labs"]:
            with self.subTest(lab=entry["name"]):
                spec = labspec.load_lab(manifest["source_dir"], entry["name"])
                self.assertEqual(entry["exercises"], spec.suites)
                self.assertEqual(entry["points"], spec.points)
                self.assertEqual(entry["grade_benchmarks"], spec.grade_benchmarks)
                self.assertEqual(entry["host_suites"], spec.host_suites)
                self.assertEqual(entry["serial_suites"], spec.serial_suites)
                self.assertEqual(entry.get("timing_suites", []), spec.timing_suites)
                self.assertEqual(entry["sanitizers"], spec.sanitizers)
                self.assertEqual(entry["title"], spec.title)


class LabsCheckTest(unittest.TestCase):
    """tools/labs.py on the course (clean) and on a copy with each kind of disagreement."""

    def test_the_course_agrees_with_its_manifests(self):
        problems = [p for lab in labs.labs() for p in labs.check(lab)]
        self.assertEqual(problems, [], "\n".join(problems))

    def test_disagreements_are_found(self):
        lab = "d01_first_kernels"
        with tempfile.TemporaryDirectory() as d:
            for sub in ("labs", "solutions"):
                shutil.copytree(os.path.join(ROOT, sub, lab), os.path.join(d, sub, lab))
            os.makedirs(os.path.join(d, "lessons"))
            old_root = labs.ROOT
            labs.ROOT = d
            try:
                self.assertEqual(labs.check(lab), [])

                def edit(rel, old, new):
                    p = os.path.join(d, rel)
                    with open(p, encoding="utf-8") as f:
                        text = f.read()
                    self.assertIn(old, text)
                    with open(p, "w", encoding="utf-8") as f:
                        f.write(text.replace(old, new, 1))

                edit(f"labs/{lab}/README.md", "### Exercise 2 — SAXPY", "### Exercise 2 — saxpy")
                edit(f"labs/{lab}/hints.md", "## Saxpy", "## Saxpi")
                edit(f"solutions/{lab}/kernel.cu", "TODO(d01.1)", "TODO(d01.7)")
                edit(f"labs/{lab}/lab.json",
                     '"note": "host code (the device\'s properties): no kernel to time",', "")
                with open(os.path.join(d, "labs", lab, "test_d01.cu"), "a") as f:
                    f.write("\nCOURSE_POINTS(VectorAdd, 99);\n")
                text = "\n".join(labs.check(lab))
                self.assertIn("missing '### Exercise 2 — SAXPY with a grid-stride loop", text)
                self.assertIn("hints.md: sections", text)
                self.assertIn("TODO(d01.7) names no exercise", text)
                self.assertIn("no TODO(d01.1) for Exercise 1", text)
                self.assertIn("COURSE_POINTS(VectorAdd, ...): the points are in lab.json", text)
                self.assertIn("Exercise 3 (d01.3) has no graded benchmark rows and no note", text)
            finally:
                labs.ROOT = old_root

    def test_the_command_line(self):
        self.assertEqual(labs.main(["--check", "d01"]), 0)
        self.assertEqual(labs.main(["d99"]), 2)


if __name__ == "__main__":
    unittest.main()
