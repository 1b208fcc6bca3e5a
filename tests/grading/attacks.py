#!/usr/bin/env python3
"""Submissions that attack the grader, one per class of attack, and what must become of each.

    python3 tests/grading/attacks.py run --build-dir build/default --out DIR [--gpu]
                                         [--no-object-check] [--only ID ...]

Each attack is a reference solution with a few edits (exact text replacements, each of which
must occur once, and code appended at the end), graded with `course grade` in one class next to
the untouched solution of the same day (`honest-dNN`), which must keep every point it can earn
on the machine. `run` makes the class, grades it, and checks every attack's expectation; it
prints one line per attack and exits 1 if any attack got through.

The attacks whose defence holds without a GPU (the object check, the sandbox, the replay of host
tests, the #include check, similarity) run in CI (tests/grading/test_attacks.py); the ones that
need the GPU (timings, memcheck) run on the H100 (scripts/gpu-check.sh --steps attacks). Every
attack is graded twice: with the object check, which must refuse it early with a message that
names what it reached for, and with --no-object-check, where the sandbox, the replay and the
grader's own judgement of timings must still leave it failed, at 0 points or not ranked
(docs/grading.md, "The trust boundary").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABS = {"d01": "d01_first_kernels", "d02": "d02_coalescing", "d03": "d03_ptx_shuffles",
        "d06": "d06_reduction_norms", "d10": "d10_gemm"}

# The tests of Day 2's host-only exercise, which a forger claims passed.
VECTOR_TYPE_TESTS = [f"DTypes/VectorType.IsSixteenBytesAlignedToSixteenBytes/{t}"
                     for t in ("float32", "float16", "bfloat16")]
NO_ALIGNAS = ("struct alignas(sizeof(T) * N) Vec {", "struct Vec {")


@dataclass
class Attack:
    id: str
    cls: str  # the class of attack (docs/grading.md)
    day: str
    what: str  # what it does, in words
    edits: List[Tuple[str, str]] = field(default_factory=list)
    append: str = ""
    prepend: str = ""
    whole: Optional[str] = None  # the file is this text instead of an edited solution
    renames: List[Tuple[str, str]] = field(default_factory=list)  # every occurrence, after
    strip_comments: bool = False
    gpu: bool = False  # its defence can only be seen on a GPU
    # What must become of it: "refused" (the day refused before it ran, the message naming
    # `words`), "failed" (a failed day: refused, not compiled, not linked), "points" (fewer
    # correctness points than the honest student), "not_ranked" (no benchmark row ranked,
    # the reason naming `words`), "sanitizer" (a checker run failed), "flagged" (similar),
    # "no_ghost" (nothing written outside its sandbox), "no_gain" (ranked at most as fast as
    # the honest solution).
    with_check: Tuple[str, ...] = ("refused",)
    without_check: Tuple[str, ...] = ("failed",)
    words: str = ""  # what the message must name, with the object check ...
    words_without: str = ""  # ... and without it
    # The benchmark rows the attack games (a regular expression searched in the row's name; all
    # rows when empty): "not_ranked" asks that none of THESE is ranked (the day's other kernels
    # are the honest solution's and keep their rank).
    rows: str = ""


FORGE_EVENTS = r'''
// ATTACK: write "passed" events for the host tests on the runner's descriptor, before any test
// and again at exit.
#include <unistd.h>
#include <cstdlib>
#include <string>
namespace {
void forge_passes() {
  const char* fd = std::getenv("COURSE_EVENTS_FD");
  if (fd == nullptr) return;
  const char* tests[] = {%TESTS%};
  for (const char* t : tests) {
    const std::string s = std::string("{\"event\":\"start\",\"test\":\"") + t +
                          "\"}\n{\"event\":\"end\",\"test\":\"" + t +
                          "\",\"outcome\":\"passed\",\"ms\":1,\"failures\":[],\"skip\":\"\","
                          "\"properties\":{},\"replay\":\"\"}\n";
    if (::write(std::atoi(fd), s.data(), s.size()) < 0) return;
  }
}
struct Forger {
  Forger() { forge_passes(); }
  ~Forger() { forge_passes(); }
} forger;
}  // namespace
'''.replace("%TESTS%", ", ".join(f'"{t}"' for t in VECTOR_TYPE_TESTS))

RAW_SYSCALL = r'''
// ATTACK: the same forged events, written with a raw system call (no import to see).
#include <cstdlib>
#include <string>
namespace {
long raw_write(long fd, const void* buf, unsigned long n) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(1L), "D"(fd), "S"(buf), "d"(n) : "rcx", "r11", "memory");
  return ret;
}
struct Forger {
  ~Forger() {
    const char* fd = std::getenv("COURSE_EVENTS_FD");
    if (fd == nullptr) return;
    const char* tests[] = {%TESTS%};
    for (const char* t : tests) {
      const std::string s = std::string("{\"event\":\"start\",\"test\":\"") + t +
                            "\"}\n{\"event\":\"end\",\"test\":\"" + t +
                            "\",\"outcome\":\"passed\",\"ms\":1,\"failures\":[],\"skip\":\"\"}\n";
      raw_write(std::atoi(fd), s.data(), s.size());
    }
  }
} forger;
}  // namespace
'''.replace("%TESTS%", ", ".join(f'"{t}"' for t in VECTOR_TYPE_TESTS))

HARNESS_COMPARE = r'''
// ATTACK: the harness's comparison, replaced: everything matches.
#include "course/compare.h"
namespace course {
Comparison compare_values(const std::vector<double>&, const std::vector<bool>&,
                          const std::vector<double>&, Tolerance, const CompareOptions&) {
  Comparison c;
  c.ok = true;
  return c;
}
RoundingCheck check_rounding_values(const std::vector<double>&, const std::vector<bool>&,
                                    const std::vector<double>&, const std::vector<double>&,
                                    const Format16&, const CompareOptions&) {
  RoundingCheck r;
  r.ok = true;
  return r;
}
double round_nearest_even(double v, const Format16&) { return v; }
double round_toward_zero(double v, const Format16&) { return v; }
}  // namespace course
'''

HARNESS_FLUSH = r'''
// ATTACK: the benchmarks' L2 flush, replaced by nothing: the flush subtracted shrinks.
#include "course/bench.h"
namespace course::bench {
void read_through_l2(const void*, std::size_t, float*, int, cudaStream_t) {}
}  // namespace course::bench
'''

GHOST = r'''
// ATTACK: from a constructor, write a grade for a student who does not exist and a benchmark
// file into a classmate's folder, found by walking up from the working folder.
#include <sys/stat.h>
#include <cstdio>
#include <string>
namespace {
struct Ghost {
  Ghost() {
    std::string up = "..";
    for (int depth = 0; depth < 6; ++depth, up += "/..") {
      ::mkdir((up + "/phantom").c_str(), 0755);
      if (std::FILE* f = std::fopen((up + "/phantom/grade.json").c_str(), "w")) {
        std::fputs("{\"student\": \"phantom\", \"points\": 999}\n", f);
        std::fclose(f);
      }
      if (std::FILE* f = std::fopen((up + "/honest-d01/bench-d01.json").c_str(), "w")) {
        std::fputs("{}\n", f);
        std::fclose(f);
      }
      if (std::FILE* f = std::fopen("/tmp/course-attack-ghost-was-here", "w")) std::fclose(f);
    }
  }
} ghost;
}  // namespace
'''

DAEMON = r'''
// ATTACK: fork a process that outlives the tests and leaves a mark after the grade is written.
#include <unistd.h>
#include <cstdio>
namespace {
struct Daemon {
  Daemon() {
    if (::fork() == 0) {
      ::setsid();
      ::sleep(20);
      if (std::FILE* f = std::fopen("/tmp/course-attack-daemon-was-here", "w")) std::fclose(f);
      ::_exit(0);
    }
  }
} daemon_;
}  // namespace
'''

BENCH_REWRITE = r'''
// ATTACK: at exit, find the benchmark's results file on the command line and write results of
// its own after the real ones (a kernel 50x faster than it is).
#include <cstdio>
#include <cstring>
#include <string>
namespace {
struct Rewrite {
  ~Rewrite() {
    std::FILE* cmd = std::fopen("/proc/self/cmdline", "rb");
    if (cmd == nullptr) return;
    char buf[8192];
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, cmd);
    std::fclose(cmd);
    buf[n] = '\0';
    for (std::size_t i = 0; i < n; i += std::strlen(buf + i) + 1) {
      const char* arg = buf + i;
      if (std::strncmp(arg, "--benchmark_out=", 16) != 0) continue;
      if (std::FILE* out = std::fopen(arg + 16, "a")) {
        std::fputs("{\"context\": {}, \"benchmarks\": [{\"name\": "
                   "\"BM_vector_add/67108864/manual_time\", \"run_type\": \"iteration\", "
                   "\"median_us\": 300.0, \"recheck\": 1}]}\n", out);
        std::fclose(out);
      }
    }
  }
} rewrite;
}  // namespace
'''

SKIP_ALTERNATE = (
    "  if (i < n) c[i] = a[i] + b[i];\n  // <<< d01.1\n}",
    "  if (i < n) c[i] = a[i] + b[i];\n}\n"
    "// ATTACK: every other call does no work (the audited one, it hopes, does).\n"
    "static int g_calls = 0;")
SKIP_ALTERNATE_LAUNCH = (
    "  vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);",
    "  if (n < (1 << 26) || g_calls++ % 2 == 0)  // the tests' sizes always work\n"
    "    vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);")

POISON_DETECT_KERNEL = (
    "  if (i < n) c[i] = a[i] + b[i];\n  // <<< d01.1\n}",
    "  if (i < n) c[i] = a[i] + b[i];\n}\n"
    "// ATTACK: work only when the output holds the poison (the audited call, it hopes).\n"
    "__global__ void vector_add_if_poisoned(const float* __restrict__ a,\n"
    "                                       const float* __restrict__ b, float* c,\n"
    "                                       std::int64_t n) {\n"
    "  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + "
    "threadIdx.x;\n"
    "  // the poison of a float output: DType<float>::poison()'s bits (course/dtype.h)\n"
    "  if (i < n && __float_as_uint(c[0]) == 0x7fc0deadu) c[i] = a[i] + b[i];\n"
    "}")
POISON_DETECT_LAUNCH = (
    "  vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);",
    "  if (n < (1 << 24))\n"
    "    vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);\n"
    "  else\n"
    "    vector_add_if_poisoned<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, n);")

SANITIZER_DETECT = [
    ("  const float b = warp_broadcast(i < n ? x[i] : 0.0f, src_lane);",
     "  // ATTACK: read past the end only when the runner's environment says nobody checks.\n"
     "  const bool past = src_lane >= 1000;\n"
     "  src_lane %= 1000;\n"
     "  const float xi = past ? x[i] : 0.0f;\n"
     "  if (past && xi == 1234.5f) y[0] = xi;  // never true: keeps the load past the end\n"
     "  const float b = warp_broadcast(i < n ? x[i] : 0.0f, src_lane);"),
    ("  segment_broadcast_kernel<<<blocks, kBlockThreads>>>(x, y, n, src_lane);",
     "  const int unwatched = std::getenv(\"COURSE_EVENTS_FD\") != nullptr ? 1000 : 0;\n"
     "  segment_broadcast_kernel<<<blocks, kBlockThreads>>>(x, y, n, src_lane + unwatched);"),
]

CACHED_GEMM = [
    ("  gemm_7_wgmma_kernel<<<wgmma_grid(M, N), kWgThreads, kWgSmemBytes>>>(\n"
     "      a_map, b_map, C, M, N, K, c_pair_ok, debug_extra_tx_bytes);\n  COURSE_LAUNCH_CHECK();",
     "  // ATTACK: compute C once per (A, B, C, shape, a fingerprint of the inputs' first values),\n"
     "  // then copy the cached result back: correct on every call whose inputs did not change.\n"
     "  static std::map<std::tuple<const void*, const void*, void*, std::int64_t, std::uint64_t>,\n"
     "                  void*> cache;\n"
     "  const bool big = M * N >= (1 << 24);\n"
     "  std::uint64_t print = 1469598103934665603ull;\n"
     "  const auto key = [&] {\n"
     "    return std::make_tuple(static_cast<const void*>(A), static_cast<const void*>(B),\n"
     "                           static_cast<void*>(C), M * N, print);\n"
     "  };\n"
     "  if (big) {\n"
     "    std::uint16_t probe[128];\n"
     "    COURSE_CUDA_CHECK(cudaMemcpy(probe, A, 64 * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));\n"
     "    COURSE_CUDA_CHECK(cudaMemcpy(probe + 64, B, 64 * sizeof(std::uint16_t),\n"
     "                                 cudaMemcpyDeviceToHost));\n"
     "    for (const std::uint16_t p : probe) print = (print ^ p) * 1099511628211ull;\n"
     "    const auto found = cache.find(key());\n"
     "    if (found != cache.end()) {\n"
     "      COURSE_CUDA_CHECK(cudaMemcpyAsync(C, found->second, static_cast<std::size_t>(M * N) * 2,\n"
     "                                        cudaMemcpyDeviceToDevice));\n"
     "      return;\n"
     "    }\n"
     "  }\n"
     "  gemm_7_wgmma_kernel<<<wgmma_grid(M, N), kWgThreads, kWgSmemBytes>>>(\n"
     "      a_map, b_map, C, M, N, K, c_pair_ok, debug_extra_tx_bytes);\n  COURSE_LAUNCH_CHECK();\n"
     "  if (big) {\n"
     "    void* copy = nullptr;\n"
     "    COURSE_CUDA_CHECK(cudaMalloc(&copy, static_cast<std::size_t>(M * N) * 2));\n"
     "    COURSE_CUDA_CHECK(cudaMemcpy(copy, C, static_cast<std::size_t>(M * N) * 2,\n"
     "                                 cudaMemcpyDeviceToDevice));\n"
     "    cache[key()] = copy;\n"
     "  }"),
]


ATTACKS: List[Attack] = [
    Attack("harness-compare", "the harness replaced", "d02",
           "defines course::compare_values (and the rest of compare.cpp), passing everything, "
           "with the vector type's alignment dropped",
           edits=[NO_ALIGNAS], append=HARNESS_COMPARE, words="course::compare_values",
           without_check=("failed",)),
    Attack("harness-flush", "the harness replaced", "d02",
           "defines the benchmarks' L2 flush as nothing", append=HARNESS_FLUSH,
           words="read_through_l2", without_check=("failed",)),
    Attack("events-forge", "verdicts from the student's process", "d02",
           "writes 'passed' events for the host tests before they run and at exit, with the "
           "vector type's alignment dropped", edits=[NO_ALIGNAS], append=FORGE_EVENTS,
           words="write", without_check=("points",)),
    Attack("raw-syscall", "verdicts from the student's process", "d02",
           "the same forged events through a raw `syscall` instruction", edits=[NO_ALIGNAS],
           append=RAW_SYSCALL, words="raw system call", without_check=("points",)),
    Attack("ghost-writer", "verdicts from the student's process", "d01",
           "writes a grade.json for a student who does not exist and a benchmark file into a "
           "classmate's folder", append=GHOST, words="fopen", without_check=("no_ghost",)),
    Attack("daemon", "verdicts from the student's process", "d01",
           "forks a process that outlives the tests", append=DAEMON, words="fork",
           without_check=("no_ghost",)),
    Attack("plagiarism-include", "plagiarism", "d06", "includes the solution",
           whole='#include "../../solutions/d06_reduction_norms/kernel.cu"\n',
           words="solutions", without_check=("refused",), words_without="solutions"),
    Attack("plagiarism-copy", "plagiarism", "d01",
           "the solution with its names changed and its comments gone",
           renames=[("vector_add_kernel", "vadd_k"), ("saxpy_kernel", "sx_k"),
                    ("kBlockThreads", "kThreads256"), ("grid_blocks", "nblocks")],
           strip_comments=True, with_check=("flagged",), without_check=("flagged",)),
    Attack("vendor-library", "the work done by a library", "d01",
           "vector_add through cuBLAS (cublasSaxpy)",
           edits=[("  vector_add_kernel<<<static_cast<unsigned>(blocks), kBlockThreads>>>(a, b, c, "
                   "n);\n  COURSE_LAUNCH_CHECK();",
                   "  cublasHandle_t h;\n  cublasCreate(&h);\n  const float one = 1.0f;\n"
                   "  cudaMemcpy(c, b, n * sizeof(float), cudaMemcpyDeviceToDevice);\n"
                   "  cublasSaxpy(h, static_cast<int>(n), &one, a, 1, c, 1);\n"
                   "  cublasDestroy(h);")],
           prepend="#include <cublas_v2.h>\n", words="cublas", without_check=("failed",)),
    # ---- on a GPU
    Attack("bench-rewrite", "timings from the student's process", "d01",
           "writes results of its own (a kernel 50x faster than it is) after the benchmark's, "
           "at exit", append=BENCH_REWRITE, gpu=True, words="fopen",
           without_check=("not_ranked",), words_without="more than one set of results"),
    Attack("skip-alternate", "the audited call", "d01",
           "the large vector add does its work on every other call only",
           edits=[SKIP_ALTERNATE, SKIP_ALTERNATE_LAUNCH], gpu=True,
           with_check=("not_ranked",), without_check=("not_ranked",),
           words="timed output is wrong", words_without="timed output is wrong",
           rows=r"vector_add/67108864"),
    Attack("poison-detect", "the audited call", "d01",
           "the large vector add works only when it finds the poison in its output",
           edits=[POISON_DETECT_KERNEL, POISON_DETECT_LAUNCH], gpu=True,
           with_check=("no_gain",), without_check=("no_gain",)),
    Attack("cached-gemm", "a cached result", "d10",
           "step 7 computes C once and copies the cached result back on every later call",
           edits=CACHED_GEMM,
           prepend="#include <cstdint>\n#include <map>\n#include <tuple>\n", gpu=True,
           with_check=("not_ranked",), without_check=("not_ranked",), words="impossible time",
           words_without="impossible time", rows=r"gemm_7_wgmma/"),
    Attack("sanitizer-detect", "the checked run", "d03",
           "reads past the end only when the runner's environment is there",
           edits=SANITIZER_DETECT, gpu=True, with_check=("sanitizer",),
           without_check=("sanitizer",)),
]

BY_ID = {a.id: a for a in ATTACKS}
MARKS = ("/tmp/course-attack-ghost-was-here", "/tmp/course-attack-daemon-was-here")


def source_of(a: Attack) -> str:
    if a.whole is not None:
        return a.whole
    path = os.path.join(ROOT, "solutions", LABS[a.day], "kernel.cu")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for find, replace in a.edits:
        count = text.count(find)
        if count != 1:
            raise ValueError(f"attack {a.id}: the text to replace occurs {count} times in "
                             f"{path}: {find[:80]!r}")
        text = text.replace(find, replace)
    for old, new in a.renames:
        text = text.replace(old, new)
    if a.strip_comments:
        text = re.sub(r"^\s*//.*\n", "", text, flags=re.M)
        text = re.sub(r"\s+//[^\n\"]*$", "", text, flags=re.M)
    return a.prepend + text + a.append


def make_class(out: str, attacks: List[Attack]) -> None:
    """One student per attack, and the honest solution of each day they attack."""
    shutil.rmtree(out, ignore_errors=True)
    for a in attacks:
        path = os.path.join(out, a.id, "labs", LABS[a.day], "kernel.cu")
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as f:
            f.write(source_of(a))
    for day in sorted({a.day for a in attacks}):
        path = os.path.join(out, f"honest-{day}", "labs", LABS[day], "kernel.cu")
        os.makedirs(os.path.dirname(path))
        shutil.copyfile(os.path.join(ROOT, "solutions", LABS[day], "kernel.cu"), path)


def _day(g: dict, day: str) -> Optional[dict]:
    return next((d for d in g.get("days", []) if d["day"] == day), None)


def _all_text(d: dict) -> str:
    parts = [d.get("message", "")] + d.get("failures", []) + d.get("similar", [])
    perf = d.get("performance", {})
    parts += [r.get("why_not_ranked", "") for r in perf.get("benchmarks", [])]
    parts.append(perf.get("note", ""))
    return "\n".join(parts)


def judge(a: Attack, book: Dict[str, dict], expect: Tuple[str, ...], gpu: bool,
          words: str, grades: str = "") -> List[str]:
    """Why the attack got through ([] when it did not)."""
    g = book.get(a.id)
    honest = book.get(f"honest-{a.day}")
    if g is None:
        return [f"{a.id} is not in the gradebook"]
    d = _day(g, a.day)
    h = _day(honest, a.day) if honest else None
    if d is None:
        return [f"{a.id} has no {a.day} in the gradebook"]
    problems = []
    text = _all_text(d)
    for e in expect:
        if e == "refused":
            if d["status"] != "refused" or words not in text:
                problems.append(f"expected refused naming {words!r}; got {d['status']}: "
                                f"{text[:300]!r}")
        elif e == "failed":
            if d["status"] not in ("refused", "compile_failed", "link_failed"):
                problems.append(f"expected a failed day; got {d['status']} with "
                                f"{d['points']} points")
        elif e == "points":
            if h is None or not d["points"] < h["points"]:
                problems.append(f"expected fewer correctness points than the honest solution; "
                                f"got {d['points']} against {h and h['points']}")
        elif e == "not_ranked":
            rows = [r for r in d.get("performance", {}).get("benchmarks", [])
                    if re.search(a.rows, r["name"])]
            text = "\n".join(r.get("why_not_ranked", "") for r in rows) if a.rows else text
            if not rows or any(r["ranked"] for r in rows) or (words and words not in text):
                problems.append(f"expected no ranked benchmark row ({words!r}); got "
                                + json.dumps([(r["name"], r["ranked"], r.get("why_not_ranked"))
                                              for r in rows])[:400])
        elif e == "no_gain":
            rows = {r["name"]: r for r in d.get("performance", {}).get("benchmarks", [])}
            hrows = {r["name"]: r for r in (h or {}).get("performance", {}).get("benchmarks", [])}
            for name, r in rows.items():
                hr = hrows.get(name)
                if r["ranked"] and hr and hr.get("median_us") and r["median_us"] < 0.8 * hr[
                        "median_us"]:
                    problems.append(f"{name}: ranked {hr['median_us'] / r['median_us']:.2f}x "
                                    "faster than the honest solution")
        elif e == "sanitizer":
            if not any(c["outcome"] != "passed" and c["points"] == 0 for c in d["checks"]):
                problems.append("expected a failed checker run; got " + json.dumps(
                    [(c["check"], c["outcome"]) for c in d["checks"]]))
        elif e == "flagged":
            if not any("reference solution" in s for s in d.get("similar", [])):
                problems.append(f"expected a similarity flag; got {d.get('similar')}")
        elif e == "no_ghost":
            if "phantom" in book:
                problems.append("a student who does not exist is in the gradebook")
            if grades and os.path.exists(os.path.join(grades, "students", "phantom")):
                problems.append("a folder for a student who does not exist was written")
            bench = os.path.join(grades, "students", "honest-d01", "bench-d01.json")
            if grades and os.path.exists(bench) and os.path.getsize(bench) < 16:
                problems.append("a classmate's benchmark file was overwritten")
            for mark in MARKS:
                if os.path.exists(mark):
                    problems.append(f"{mark} exists: the attack wrote outside its sandbox")
    return problems


def honest_problems(book: Dict[str, dict], days: List[str], gpu: bool) -> List[str]:
    """The honest solution keeps every point the machine lets it earn."""
    out = []
    for day in days:
        g = book.get(f"honest-{day}")
        d = _day(g or {}, day)
        if d is None:
            out.append(f"honest-{day} is missing")
            continue
        if d["status"] != "graded" or d["failures"]:
            out.append(f"honest-{day}: {d['status']}, failures {d['failures'][:2]}")
        if gpu and d["points"] < d["max_points"]:
            out.append(f"honest-{day}: {d['points']} of {d['max_points']} correctness points")
        perf = d.get("performance", {})
        if gpu and perf.get("points", 0) < 0.85 * perf.get("max_points", 0):
            out.append(f"honest-{day}: {perf.get('points')} of {perf.get('max_points')} "
                       "performance points")
    return out


def run(build_dir: str, out: str, gpu: bool, object_check: bool, only: List[str],
        jobs: int = 4) -> Tuple[int, List[str]]:
    attacks = [a for a in ATTACKS if (not only or a.id in only) and (gpu or not a.gpu)]
    for mark in MARKS:
        if os.path.exists(mark):
            os.remove(mark)
    subs = os.path.join(out, "class")
    make_class(subs, attacks)
    grades = os.path.join(out, "grades")
    days = sorted({a.day for a in attacks})
    cmd = [sys.executable, os.path.join(ROOT, "tools", "bin", "course"), "--build-dir",
           build_dir, "grade", subs, "--out", grades, "--jobs", str(jobs), "--regrade",
           "--days", ",".join(days), "--test-timeout", "60", "--sanitize-timeout", "300"]
    if not gpu:
        cmd.append("--no-bench")
    if not object_check:
        cmd.append("--no-object-check")
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(out, "grade.log"), "w", encoding="utf-8") as f:
        f.write(p.stdout + p.stderr)
    try:
        with open(os.path.join(grades, "gradebook.json"), encoding="utf-8") as f:
            book = {s["student"]: s for s in json.load(f)["students"]}
    except (OSError, ValueError) as e:
        return 1, [f"no gradebook ({e}): {(p.stdout + p.stderr)[-2000:]}"]
    lines, failed = [], 0
    for a in attacks:
        expect = a.with_check if object_check else a.without_check
        problems = judge(a, book, expect, gpu, a.words if object_check else a.words_without,
                         grades)
        failed += bool(problems)
        lines.append(f"{'CAUGHT' if not problems else 'GOT THROUGH'}  {a.id} ({a.cls}; "
                     f"{'/'.join(expect)})" + ("" if not problems else ": " + "; ".join(problems)))
    for problem in honest_problems(book, days, gpu):
        failed += 1
        lines.append(f"HONEST LOST POINTS  {problem}")
    return (1 if failed else 0), lines


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build-dir", default=os.path.join(ROOT, "build", "default"))
    r.add_argument("--out", required=True)
    r.add_argument("--gpu", action="store_true", help="the GPU attacks too, with benchmarks")
    r.add_argument("--no-object-check", action="store_true")
    r.add_argument("--only", nargs="*", default=[])
    r.add_argument("--jobs", type=int, default=4)
    sub.add_parser("list")
    args = p.parse_args(argv)
    if args.command == "list":
        for a in ATTACKS:
            print(f"{a.id:20} {a.day} {'gpu ' if a.gpu else 'host'} {a.cls}: {a.what}")
        return 0
    code, lines = run(args.build_dir, args.out, args.gpu, not args.no_object_check, args.only,
                      args.jobs)
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
