#!/usr/bin/env python3
"""A synthetic class of submissions, made from the reference solutions, for testing the grader.

    python3 tests/grading/synthetic_class.py <out-dir> [--days d01,d02,...]

Eight students, each a way a real submission goes (or goes wrong):
  correct         every day: the reference solution
  partly_wrong    d01 correct; d02's vectorized copy drops the last element of its tail
  not_compiling   d01 has a syntax error; d02 correct (one broken day hides no other)
  not_linking     d03 renames a launcher lab.h declares; d04 correct
  crashing        d01's vector add writes far out of bounds on large inputs; d05 correct
  hanging         d01's SAXPY loops forever when n == 1
  slow_correct    d01's SAXPY runs on one block (correct, ~300x slower); d06 correct
  wrongly_named   d02 correct; d03 as Kernel.cu, d05 as d05/kernel.cu, d01 as a flat d01.cu,
                  and a notes.txt that is not used
Each planted change is an exact text replacement that must occur once in the solution.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LABS = {
    "d01": "d01_first_kernels", "d02": "d02_coalescing", "d03": "d03_ptx_shuffles",
    "d04": "d04_shared_memory", "d05": "d05_warp_programming", "d06": "d06_reduction_norms",
}

PLANTED = {
    "d02_tail": ("d02", "  if (i < n) y[i] = x[i];\n  // <<< d02.4\n}",
                 "  if (i + 1 < n) y[i] = x[i];\n  // <<< d02.4\n}"),
    "d01_syntax": ("d01", "  if (i < n) c[i] = a[i] + b[i];", "  if (i < n) c[i] = a[i] + b[i]"),
    "d03_rename": ("d03", "void segment_sum(const float* x, float* out, std::int64_t n) {",
                   "void segment_total(const float* x, float* out, std::int64_t n) {"),
    "d01_oob": ("d01", "  if (i < n) c[i] = a[i] + b[i];",
                "  if (i < n) c[n > 100000 ? i + (std::int64_t{1} << 36) : i] = a[i] + b[i];"),
    # A loop with no side effect may be assumed to end (C++ forward progress), so the hang
    # sleeps: __nanosleep is an instruction the compiler must keep.
    "d01_hang": ("d01", "  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * "
                        "blockDim.x;",
                 "  if (n == 1)\n    for (;;) __nanosleep(1000);\n"
                 "  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * "
                 "blockDim.x;"),
    "d01_one_block": ("d01", "    grid_blocks = static_cast<int>(std::min<std::int64_t>(needed, "
                             "std::int64_t{sms} * 8));",
                      "    grid_blocks = 1;"),
}

# student -> {day: (placement, planted change or None)}
STUDENTS = {
    "correct": {d: ("labs", None) for d in LABS},
    "partly_wrong": {"d01": ("labs", None), "d02": ("labs", "d02_tail")},
    "not_compiling": {"d01": ("labs", "d01_syntax"), "d02": ("labs", None)},
    "not_linking": {"d03": ("flat", "d03_rename"), "d04": ("labs", None)},
    "crashing": {"d01": ("labs", "d01_oob"), "d05": ("labs", None)},
    "hanging": {"d01": ("labs", "d01_hang")},
    "slow_correct": {"d01": ("labs", "d01_one_block"), "d06": ("labs", None)},
    "wrongly_named": {"d02": ("labs", None), "d03": ("Kernel.cu", None),
                      "d05": ("dNN", None), "d01": ("flat-file", None)},
}


def solution(day: str) -> str:
    with open(os.path.join(ROOT, "solutions", LABS[day], "kernel.cu"), encoding="utf-8") as f:
        return f.read()


def plant(text: str, change: str) -> str:
    day, find, replace = PLANTED[change]
    count = text.count(find)
    if count != 1:
        sys.exit(f"synthetic_class: the planted change {change} expects its text once in "
                 f"solutions/{LABS[day]}/kernel.cu, found {count}")
    return text.replace(find, replace)


def make(out: str, days=None) -> None:
    for student, handed in STUDENTS.items():
        for day, (placement, change) in handed.items():
            if days and day not in days:
                continue
            text = solution(day)
            if change:
                text = plant(text, change)
            lab = LABS[day]
            path = {
                "labs": f"labs/{lab}/kernel.cu",
                "flat": f"{lab}/kernel.cu",
                "Kernel.cu": f"{lab}/Kernel.cu",
                "dNN": f"{day}/kernel.cu",
                "flat-file": f"{day}.cu",
            }[placement]
            full = os.path.join(out, student, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        if student == "wrongly_named":
            with open(os.path.join(out, student, "notes.txt"), "w") as f:
                f.write("my notes\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--days", help="only these days, e.g. d01,d02")
    a = p.parse_args()
    make(a.out, a.days.split(",") if a.days else None)
    print(f"{len(STUDENTS)} submissions in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
