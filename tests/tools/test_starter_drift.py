"""Tests of tools/starter_drift.py on small starter/solution pairs written to a temporary tree.

Run from the repository root:
    python3 -m unittest discover -s tests/tools -p 'test_starter_drift.py'
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import List, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tools" / "starter_drift.py"
sys.path.insert(0, str(SCRIPT.parent))
import starter_drift  # noqa: E402  (the tool lives in tools/, which is not a package)

LAB = "d09_demo"
STARTER = f"labs/{LAB}/kernel.cu"
SOLUTION = f"solutions/{LAB}/kernel.cu"

# A small solution in the course's shape, and the starter cut from it.
SOLUTION_TEXT = """\
// Day 9 — reference solution.
#include "lab.h"

namespace d09 {

constexpr int kBlockThreads = 256;  // 8 warps

// Exercise 1 — twice. Thread i owns element i.
__global__ void twice_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

// Given: the number of blocks that cover n elements.
std::int64_t blocks_for(std::int64_t n) { return (n + kBlockThreads - 1) / kBlockThreads; }

// Launchers.
void twice(const float* x, float* y, std::int64_t n) {
  course::require(n >= 0, "twice: n must be >= 0");
  if (n == 0) return;
  twice_kernel<<<blocks_for(n), kBlockThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

}  // namespace d09
"""

STARTER_TEXT = """\
// Day 9 — your kernels. Replace each TODO block; keep the names and the launchers.
//
// Check with:  course check d09
#include "lab.h"

namespace d09 {

constexpr int kBlockThreads = 256;  // 8 warps

// Exercise 1 — twice. Thread i owns element i.
__global__ void twice_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  // TODO(d09.1): compute i as int64_t, and if i < n write y[i] = 2 x[i].
}

// Given: the number of blocks that cover n elements.
std::int64_t blocks_for(std::int64_t n) { return (n + kBlockThreads - 1) / kBlockThreads; }

// Launchers.
void twice(const float* x, float* y, std::int64_t n) {
  course::require(n >= 0, "twice: n must be >= 0");
  if (n == 0) return;
  twice_kernel<<<blocks_for(n), kBlockThreads>>>(x, y, n);
  COURSE_LAUNCH_CHECK();
}

}  // namespace d09
"""


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the fixture does not hold exactly one {old!r}"
    return text.replace(old, new)


class DriftTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def write(self, starter: str, solution: str, lab: str = LAB) -> None:
        for rel, text in ((f"labs/{lab}/kernel.cu", starter),
                          (f"solutions/{lab}/kernel.cu", solution)):
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def run_tool(self, *args: str) -> Tuple[int, List[str]]:
        done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), *args],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, (done.stdout + done.stderr).splitlines()

    def assert_agrees(self, starter: str, solution: str = SOLUTION_TEXT) -> None:
        self.write(starter, solution)
        code, out = self.run_tool()
        self.assertEqual(code, 0, "\n".join(out))
        self.assertEqual(out[-1], "starters and solutions agree outside TODO blocks (1 day)")

    def assert_drifts(self, starter: str, solution: str = SOLUTION_TEXT,
                      regions: int = 1) -> List[str]:
        self.write(starter, solution)
        code, out = self.run_tool()
        self.assertEqual(code, 1, "\n".join(out))
        self.assertEqual(out[-1], f"{regions} drifted region{'s' if regions > 1 else ''} in 1 day")
        headers = [line for line in out if line.endswith("outside a TODO block:")]
        self.assertEqual(len(headers), regions, "\n".join(out))
        return out

    # ----------------------------------------------------------------- what passes

    def test_a_todo_block_in_place_of_the_solution_code_passes(self) -> None:
        self.assert_agrees(STARTER_TEXT)

    def test_a_different_header_comment_passes(self) -> None:
        self.assert_agrees(edit(STARTER_TEXT, "// Check with:  course check d09\n",
                                "// Read the lesson first, then check with:  course check d09\n"))

    def test_a_placeholder_below_the_todo_comment_passes(self) -> None:
        self.assert_agrees(edit(STARTER_TEXT, "2 x[i].\n}", "2 x[i].\n  (void)x;\n  (void)y;\n}"))

    def test_a_placeholder_under_a_todo_comment_in_column_0_passes(self) -> None:
        solution = edit(SOLUTION_TEXT, "constexpr int kBlockThreads = 256;  // 8 warps\n",
                        "// The padding.\ntemplate <class T>\n"
                        "constexpr int kPad = 4 / sizeof(T);\n")
        starter = edit(STARTER_TEXT, "constexpr int kBlockThreads = 256;  // 8 warps\n",
                       "// The padding.\n// TODO(d09.2): one 4-byte bank.\ntemplate <class T>\n"
                       "constexpr int kPad = 0;\n")
        self.assert_agrees(starter, solution)

    def test_a_signature_the_solution_writes_on_one_line_passes(self) -> None:
        solution = edit(SOLUTION_TEXT, "// Launchers.\n",
                        "__device__ float half_of(float v) { return 0.5f * v; }\n\n"
                        "// Launchers.\n")
        starter = edit(STARTER_TEXT, "// Launchers.\n",
                       "__device__ float half_of(float v) {\n  // TODO(d09.3): v / 2.\n"
                       "  return v;\n}\n\n// Launchers.\n")
        self.assert_agrees(starter, solution)

    def test_solution_code_the_starter_lacks_inside_a_todo_block_passes(self) -> None:
        # The solution's helper sits right above the exercise, with its own blank line.
        solution = edit(SOLUTION_TEXT, "// Exercise 1 — twice.",
                        "__device__ float two() { return 2.0f; }\n\n// Exercise 1 — twice.")
        self.assert_agrees(STARTER_TEXT, solution)

    def test_comments_reworded_for_the_student_in_a_todo_block_pass(self) -> None:
        self.assert_agrees(edit(STARTER_TEXT, "// Exercise 1 — twice. Thread i owns element i.",
                                "// Exercise 1 — twice. Write the index arithmetic yourself."))

    def test_an_exercise_heading_worded_for_the_student_passes(self) -> None:
        heading = "// ------------------------------------------------\n// Part 1 — doubling.\n\n"
        solution = edit(SOLUTION_TEXT, "// Exercise 1 —", heading + "// Exercise 1 —")
        starter = edit(STARTER_TEXT, "// Exercise 1 —",
                       heading.replace("doubling.", "doubling. Read lesson 9 first.") +
                       "// Exercise 1 —")
        self.assert_agrees(starter, solution)

    def test_a_given_block_may_add_starter_code_and_reword_its_comment(self) -> None:
        starter = edit(STARTER_TEXT, "// Given: the number of blocks that cover n elements.\n",
                       "// Given: how many blocks cover n elements, and the tests' poison.\n"
                       "__device__ float not_written() { return __int_as_float(0x7fc0dead); }\n")
        self.assert_agrees(starter)

    def test_whitespace_and_maybe_unused_are_ignored(self) -> None:
        starter = edit(STARTER_TEXT, "constexpr int kBlockThreads = 256;  // 8 warps\n",
                       "// ([[maybe_unused]] until your code uses it.)\n"
                       "[[maybe_unused]] constexpr int   kBlockThreads = 256;      // 8 warps  \n")
        self.assert_agrees(starter)

    # ----------------------------------------------------------------- what is drift

    def test_a_changed_launcher_line_fails(self) -> None:
        starter = edit(STARTER_TEXT, '"twice: n must be >= 0"', '"twice: n must not be negative"')
        out = self.assert_drifts(starter)
        self.assertIn(f"{STARTER}:20 differs from {SOLUTION}:19 outside a TODO block:", out)
        self.assertIn('  -   course::require(n >= 0, "twice: n must not be negative");', out)
        self.assertIn('  +   course::require(n >= 0, "twice: n must be >= 0");', out)

    def test_a_starter_that_deletes_solution_lines_without_a_todo_fails(self) -> None:
        out = self.assert_drifts(edit(STARTER_TEXT, "  if (n == 0) return;\n", ""))
        self.assertIn(f"{STARTER}:after 20 differs from {SOLUTION}:20 outside a TODO block:", out)
        self.assertIn("  +   if (n == 0) return;", out)

    def test_a_starter_that_adds_code_outside_a_todo_block_fails(self) -> None:
        self.assert_drifts(edit(STARTER_TEXT, "  COURSE_LAUNCH_CHECK();\n",
                                "  COURSE_LAUNCH_CHECK();\n  cudaDeviceSynchronize();\n"))

    def test_a_changed_constant_fails(self) -> None:
        self.assert_drifts(edit(STARTER_TEXT, "kBlockThreads = 256;", "kBlockThreads = 128;"))

    def test_a_changed_signature_above_the_todo_fails(self) -> None:
        self.assert_drifts(edit(STARTER_TEXT,
                                "float* __restrict__ y, std::int64_t n) {\n  // TODO",
                                "float* y, std::int64_t n) {\n  // TODO"))

    def test_a_comment_changed_in_one_file_outside_todo_blocks_fails(self) -> None:
        self.assert_drifts(STARTER_TEXT, edit(SOLUTION_TEXT, "// Launchers.",
                                              "// Launchers: they check their arguments."))

    def test_a_heading_that_introduces_no_todo_block_is_compared(self) -> None:
        heading = "// ------------------------------------------------\n// Launchers.\n"
        solution = edit(SOLUTION_TEXT, "// Launchers.\n", heading)
        starter = edit(STARTER_TEXT, "// Launchers.\n",
                       heading.replace("Launchers.", "Launchers, written for you."))
        self.assert_drifts(starter, solution)

    def test_solution_code_added_to_a_given_block_fails(self) -> None:
        solution = edit(SOLUTION_TEXT, "kBlockThreads; }\n",
                        "kBlockThreads; }\nstd::int64_t waves(std::int64_t n) { return n; }\n")
        self.assert_drifts(STARTER_TEXT, solution)

    def test_a_todo_of_another_day_is_no_todo_block(self) -> None:
        self.assert_drifts(edit(STARTER_TEXT, "TODO(d09.1)", "TODO(d08.1)"))

    def test_every_drifted_region_is_reported(self) -> None:
        starter = edit(STARTER_TEXT, "kBlockThreads = 256;", "kBlockThreads = 128;")
        starter = edit(starter, "  COURSE_LAUNCH_CHECK();\n", "")
        self.assert_drifts(starter, regions=2)

    def test_a_long_region_is_shortened(self) -> None:
        extra = "".join(f"  int unused_{k} = {k};\n" for k in range(10))
        out = self.assert_drifts(edit(STARTER_TEXT, "  COURSE_LAUNCH_CHECK();\n",
                                      "  COURSE_LAUNCH_CHECK();\n" + extra))
        self.assertIn("  - ... (4 more lines)", out)

    # ----------------------------------------------------------------- days and usage

    def test_days_can_be_chosen_and_each_is_counted_once(self) -> None:
        self.write(STARTER_TEXT, SOLUTION_TEXT)
        self.write(STARTER_TEXT.replace("d09", "d07"), SOLUTION_TEXT.replace("d09", "d07"),
                   lab="d07_other")
        code, out = self.run_tool("--day", "d09", "--day", "d09", "d07")
        self.assertEqual((code, out[-1]), (0, "starters and solutions agree outside TODO blocks "
                                              "(2 days)"))

    def test_a_lab_without_a_solution_is_not_a_day(self) -> None:
        self.write(STARTER_TEXT, SOLUTION_TEXT)
        (self.root / "labs" / "d08_no_solution").mkdir()
        (self.root / "labs" / "d08_no_solution" / "kernel.cu").write_text("int x;\n")
        code, out = self.run_tool()
        self.assertEqual((code, out[-1]), (0, "starters and solutions agree outside TODO blocks "
                                              "(1 day)"))

    def test_usage_errors_exit_with_2(self) -> None:
        self.write(STARTER_TEXT, SOLUTION_TEXT)
        for args in (["--day", "9"], ["--day", "d08"], ["--frobnicate"]):
            with self.subTest(args=args):
                code, _ = self.run_tool(*args)
                self.assertEqual(code, 2)

    def test_a_tree_without_labs_is_a_usage_error(self) -> None:
        code, out = self.run_tool()
        self.assertEqual(code, 2)
        self.assertIn("no labs/dNN_*/kernel.cu", out[-1])


class AlignmentTest(unittest.TestCase):
    def regions(self, starter: str, solution: str) -> List[Tuple[int, int, int, int]]:
        check = starter_drift.DayCheck("d09", starter.splitlines(), solution.splitlines())
        return [(r.s_lo, r.s_hi, r.r_lo, r.r_hi) for r in check.regions()]

    def test_a_new_function_does_not_pull_its_neighbours_signature_into_the_region(self) -> None:
        # Both functions end in `}` and a blank line: a plain longest-match alignment may pair
        # the new function's end with the old one's and report the old signature as changed.
        starter = "int a() {\n  return 1;\n}\n\nint b() {\n  return 2;\n}\n"
        solution = ("int helper() {\n  return 0;\n}\n\nint a() {\n  return 1;\n}\n\n"
                    "int b() {\n  return 2;\n}\n")
        self.assertEqual(self.regions(starter, solution), [(0, 0, 0, 4)])

    def test_lines_only_the_solution_has_are_placed_after_the_line_they_follow(self) -> None:
        self.assertEqual(self.regions("int a;\nint c;\n", "int a;\nint b;\nint c;\n"),
                         [(1, 1, 1, 2)])

    def test_identical_files_have_no_region(self) -> None:
        self.assertEqual(self.regions(SOLUTION_TEXT, SOLUTION_TEXT), [])

    def test_longest_increasing_keeps_the_longest_run_in_order(self) -> None:
        pairs = [(0, 5), (1, 1), (2, 2), (3, 9), (4, 3), (5, 4)]
        self.assertEqual(starter_drift.longest_increasing(pairs),
                         [(1, 1), (2, 2), (4, 3), (5, 4)])


class RealTreeTest(unittest.TestCase):
    def test_the_course_itself_is_checked_without_a_usage_error(self) -> None:
        done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                              timeout=120)
        self.assertIn(done.returncode, (0, 1), done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
