"""Tests of tools/mutants.py: applying mutants, writing the synthetic class, scoring a gradebook,
and the shape of tests/mutants/*.json themselves. Standard library only; nothing is compiled.

Run from tests/tools:
    python3 -m unittest test_mutants
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools"))
import mutants  # noqa: E402  (the tool lives in tools/, which is not a package)

SOLUTION = """\
__global__ void add(const float* a, float* c, std::int64_t n) {
  const std::int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + 1.0f;
}
"""


def mutant(**kw) -> dict:
    m = {"id": "d09-int-index", "day": "d09", "file": "solutions/d09_demo/kernel.cu",
         "find": "  const std::int64_t i =", "replace": "  const int i =",
         "kind": "correctness", "class": "index-overflow", "description": "an int index"}
    m.update(kw)
    return m


def tree(tmp: Path) -> Path:
    """A repository root with two solutions, d09 and d10."""
    for lab in ("d09_demo", "d10_other"):
        (tmp / "solutions" / lab).mkdir(parents=True)
        (tmp / "solutions" / lab / "kernel.cu").write_text(SOLUTION.replace("add", lab))
    return tmp


def day(name: str, points: float, perf=None, status: str = "graded") -> dict:
    d = {"day": name, "status": status, "points": points, "max_points": 70}
    if perf is not None:
        d["performance"] = {"points": perf, "max_points": 20}
    return d


class ApplyTest(unittest.TestCase):
    def test_replaces_the_one_occurrence(self):
        out = mutants.apply_mutant(SOLUTION, mutant())
        self.assertIn("  const int i = blockIdx.x", out)
        self.assertNotIn("std::int64_t i =", out)
        self.assertEqual(out.count("\n"), SOLUTION.count("\n"))

    def test_refuses_text_that_is_missing_or_repeated(self):
        with self.assertRaisesRegex(mutants.MutantError, "occurs 0 times"):
            mutants.apply_mutant(SOLUTION, mutant(find="not in the file"))
        with self.assertRaisesRegex(mutants.MutantError, "occurs 2 times"):
            mutants.apply_mutant(SOLUTION, mutant(find="std::int64_t"))

    def test_an_empty_replacement_deletes(self):
        out = mutants.apply_mutant(SOLUTION, mutant(find="  if (i < n) ", replace="  "))
        self.assertIn("  c[i] = a[i] + 1.0f;", out)

    def test_lab_comes_from_the_solution_path(self):
        self.assertEqual(mutants.lab_of(mutant()), "d09_demo")
        with self.assertRaises(mutants.MutantError):
            mutants.lab_of(mutant(file="labs/d09_demo/kernel.cu"))


class LoadTest(unittest.TestCase):
    def write(self, tmp: Path, items) -> Path:
        path = tmp / "mutants.json"
        path.write_text(json.dumps(items))
        return path

    def test_accepts_a_well_formed_file(self):
        with tempfile.TemporaryDirectory() as t:
            root = tree(Path(t))
            loaded = mutants.load_mutants(self.write(root, [mutant()]), root)
            self.assertEqual([m["id"] for m in loaded], ["d09-int-index"])

    def test_rejects_bad_fields(self):
        with tempfile.TemporaryDirectory() as t:
            root = tree(Path(t))
            for bad, message in [
                ([mutant(), mutant()], "used twice"),
                ([mutant(kind="speed")], "kind must be"),
                ([mutant(**{"class": "typo"})], "class must be"),
                ([mutant(day="d10")], "not a file of day d10"),
                ([mutant(file="solutions/d09_gone/kernel.cu", day="d09")], "does not exist"),
                ([{k: v for k, v in mutant().items() if k != "find"}], "missing find"),
                ([mutant(equivalent="")], "equivalent must say why"),
            ]:
                with self.subTest(message=message):
                    with self.assertRaisesRegex(mutants.MutantError, message):
                        mutants.load_mutants(self.write(root, bad), root)

    def test_select_by_id(self):
        ms = [mutant(), mutant(id="d09-other")]
        self.assertEqual([m["id"] for m in mutants.select(ms, ["d09-other"])], ["d09-other"])
        self.assertEqual(len(mutants.select(ms, None)), 2)
        with self.assertRaisesRegex(mutants.MutantError, "no mutant with id nope"):
            mutants.select(ms, ["nope"])


class RetargetTest(unittest.TestCase):
    COMMAND = ("/usr/local/cuda/bin/nvcc -I/src/labs/d09_demo -O3 -MD -MT x.o -MF "
               "labs/d09/kernel.cu.o.d -x cu -c /src/solutions/d09_demo/kernel.cu -o "
               "labs/d09/kernel.cu.o").split()

    def test_compiles_the_copy_into_temporary_files(self):
        cmd = mutants.retarget(self.COMMAND, "/tmp/m/kernel.cu", "/tmp/m/k.o", "/tmp/m/k.d")
        self.assertIn("/tmp/m/kernel.cu", cmd)
        self.assertNotIn("/src/solutions/d09_demo/kernel.cu", cmd)
        self.assertEqual(cmd[cmd.index("-o") + 1], "/tmp/m/k.o")
        self.assertEqual(cmd[cmd.index("-MF") + 1], "/tmp/m/k.d")
        self.assertIn("-I/src/labs/d09_demo", cmd)  # lab.h is still found

    def test_needs_the_solution_in_the_command(self):
        with self.assertRaises(mutants.MutantError):
            mutants.retarget(["nvcc", "-c", "other.cu"], "a", "b", "c")


class MakeClassTest(unittest.TestCase):
    def test_writes_the_reference_and_one_student_per_mutant(self):
        with tempfile.TemporaryDirectory() as t:
            root = tree(Path(t) / "repo")
            out = Path(t) / "class"
            written = mutants.make_class(out, [mutant()], root)
            self.assertEqual(len(written), 2)
            # The reference of the mutant's day only: d10 has no mutant here.
            ref = out / "reference-d09" / "labs" / "d09_demo" / "kernel.cu"
            solution = root / "solutions" / "d09_demo" / "kernel.cu"
            self.assertEqual(ref.read_text(), solution.read_text())
            self.assertEqual([p.name for p in (out / "reference-d09" / "labs").iterdir()],
                             ["d09_demo"])
            self.assertFalse((out / "reference-d10").exists())
            self.assertFalse((out / "reference").exists())
            student = out / "d09-int-index"
            self.assertEqual([p.name for p in (student / "labs").iterdir()], ["d09_demo"])
            mutated = (student / "labs" / "d09_demo" / "kernel.cu").read_text()
            self.assertIn("const int i =", mutated)

    def test_stops_at_a_mutant_that_does_not_apply(self):
        with tempfile.TemporaryDirectory() as t:
            root = tree(Path(t) / "repo")
            with self.assertRaisesRegex(mutants.MutantError, "d09-int-index"):
                mutants.make_class(Path(t) / "class", [mutant(find="absent")], root)


class ScoreTest(unittest.TestCase):
    MUTANTS = [
        mutant(id="lost-points"),
        mutant(id="same-points"),
        mutant(id="slower", kind="performance", **{"class": "uncoalesced"}),
        mutant(id="as-fast", kind="performance", **{"class": "uncoalesced"}),
        mutant(id="broken-build"),
        mutant(id="absent"),
    ]

    def gradebook(self) -> dict:
        return {"students": [
            {"student": "reference", "days": [day("d09", 70, 20.0), day("d10", 60, 18.0)]},
            {"student": "lost-points", "days": [day("d09", 61.5, 20.0)]},
            {"student": "same-points", "days": [day("d09", 70, 20.0)], "extra": "ignored"},
            {"student": "slower", "days": [day("d09", 70, 12.0)]},
            {"student": "as-fast", "days": [day("d09", 70, 20.0)]},
            {"student": "broken-build", "days": [day("d09", 0, status="build_failed")]},
        ]}

    def test_compares_each_mutant_with_the_reference(self):
        verdicts = {v["id"]: v for v in mutants.score(self.gradebook(), self.MUTANTS)}
        self.assertEqual(verdicts["lost-points"]["verdict"], "caught")
        self.assertEqual(verdicts["same-points"]["verdict"], "missed")
        self.assertEqual(verdicts["slower"]["verdict"], "caught")
        self.assertEqual(verdicts["as-fast"]["verdict"], "missed")
        self.assertEqual(verdicts["broken-build"]["verdict"], "unknown")
        self.assertIn("build_failed", verdicts["broken-build"]["detail"])
        self.assertEqual(verdicts["absent"]["verdict"], "unknown")

    def test_tests_that_did_not_run_judge_nothing_unless_points_were_lost(self):
        book = self.gradebook()
        for student in book["students"]:
            for d in student["days"]:
                d["not_run_points"] = 30.0  # graded without a GPU
        verdicts = {v["id"]: v for v in mutants.score(book, self.MUTANTS)}
        self.assertEqual(verdicts["same-points"]["verdict"], "unknown")
        self.assertIn("did not all run here", verdicts["same-points"]["detail"])
        self.assertEqual(verdicts["lost-points"]["verdict"], "caught")  # a host test caught it

    def test_performance_needs_figures_on_both_sides(self):
        book = self.gradebook()
        del book["students"][0]["days"][0]["performance"]
        verdicts = {v["id"]: v for v in mutants.score(book, self.MUTANTS)}
        self.assertEqual(verdicts["slower"]["verdict"], "unknown")
        self.assertEqual(verdicts["lost-points"]["verdict"], "caught")

    def test_totals_per_kind_and_class(self):
        verdicts = mutants.score(self.gradebook(), self.MUTANTS)
        by_kind = mutants.totals(verdicts, "kind")
        self.assertEqual(by_kind["correctness"],
                         {"caught": 1, "missed": 1, "unknown": 2, "equivalent": 0})
        self.assertEqual(by_kind["performance"],
                         {"caught": 1, "missed": 1, "unknown": 0, "equivalent": 0})
        by_class = mutants.totals(verdicts, "class")
        self.assertEqual(by_class["uncoalesced"]["caught"], 1)
        text = mutants.render(verdicts)
        self.assertIn("1 of 2 caught (50%), 2 not judged", text)
        self.assertIn("caught     lost-points", text)

    def test_an_equivalent_mutant_is_neither_caught_nor_missed(self):
        ms = [dict(m) for m in self.MUTANTS]
        same = next(m for m in ms if m["id"] == "same-points")
        same["equivalent"] = "the compiler sinks the discarded load under the bounds check"
        verdicts = {v["id"]: v for v in mutants.score(self.gradebook(), ms)}
        self.assertEqual(verdicts["same-points"]["verdict"], "equivalent")
        self.assertIn("sinks the discarded load", verdicts["same-points"]["detail"])
        t = mutants.totals(list(verdicts.values()), "kind")["correctness"]
        self.assertEqual((t["caught"], t["missed"], t["equivalent"]), (1, 0, 1))
        self.assertIn("1 of 1 caught (100%)", mutants.rate(t))
        self.assertIn("1 equivalent (not counted)", mutants.rate(t))

    def test_a_reference_per_day_is_compared_with_that_days_mutants(self):
        book = self.gradebook()
        ref = book["students"][0]
        book["students"][0] = {"student": "reference-d09", "days": ref["days"][:1]}
        verdicts = {v["id"]: v for v in mutants.score(book, self.MUTANTS)}
        self.assertEqual(verdicts["lost-points"]["verdict"], "caught")
        self.assertEqual(verdicts["same-points"]["verdict"], "missed")
        self.assertIn("reference 70", verdicts["lost-points"]["detail"])
        # A mutant of another day has no reference here.
        other = mutant(id="lost-points", day="d10")
        v = mutants.score(book, [other])[0]
        self.assertEqual(v["verdict"], "unknown")
        self.assertIn("reference-d10", v["detail"])

    def test_without_the_reference_nothing_is_judged(self):
        book = self.gradebook()
        book["students"] = book["students"][1:]
        verdicts = mutants.score(book, self.MUTANTS)
        self.assertTrue(all(v["verdict"] == "unknown" for v in verdicts))

    def test_the_command_prints_and_exits(self):
        with tempfile.TemporaryDirectory() as t:
            root = tree(Path(t))
            mfile = root / "mutants.json"
            mfile.write_text(json.dumps(self.MUTANTS))
            book = root / "gradebook.json"
            book.write_text(json.dumps(self.gradebook()))
            saved_root = mutants.ROOT
            mutants.ROOT = root
            try:
                out = io.StringIO()
                with redirect_stdout(out):
                    code = mutants.main(["--mutants", str(mfile), "score", str(book), "--json"])
            finally:
                mutants.ROOT = saved_root
            self.assertEqual(code, 0)
            data = json.loads(out.getvalue())
            self.assertEqual(data["by_kind"]["performance"]["caught"], 1)
            # And a gradebook without the reference student is an error.
            book.write_text(json.dumps({"students": []}))
            mutants.ROOT = root
            try:
                with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                    self.assertEqual(mutants.main(["--mutants", str(mfile), "score", str(book)]), 1)
            finally:
                mutants.ROOT = saved_root


class TheMutantsFileTest(unittest.TestCase):
    """tests/mutants/*.json themselves: well formed, and every mutant applies to its solution
    (compiling them is `tools/mutants.py check`, which needs the build)."""

    def test_is_well_formed_and_applies(self):
        ms = mutants.load_mutants()
        self.assertGreaterEqual(len(ms), 40)
        for m in ms:
            with self.subTest(mutant=m["id"]):
                text = (REPO_ROOT / m["file"]).read_text(encoding="utf-8")
                self.assertNotEqual(mutants.apply_mutant(text, m), text)

    def test_covers_the_classes_that_got_through_before(self):
        classes = {m["class"] for m in mutants.load_mutants()}
        for c in ("index-overflow", "timing", "rounding", "bounds-read", "race",
                  "fused-precision"):
            self.assertIn(c, classes)
        days = {m["day"] for m in mutants.load_mutants()}
        # Every day with a solution has planted bugs.
        solved = {d.name[:3] for d in (REPO_ROOT / "solutions").iterdir() if d.is_dir()}
        self.assertEqual(days, solved)


if __name__ == "__main__":
    unittest.main()
