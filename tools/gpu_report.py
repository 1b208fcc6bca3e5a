#!/usr/bin/env python3
"""Summarise a scripts/gpu-check.sh run: one row per lab, printed last.

Reads, from the run's folder:
  test-results/dNN.<variant>.<group>.json   every case of every day (the test runner's files)
  tests.xml                                 ctest's JUnit of the same run (SASS checks, harness)
  bench-dNN-solution.json                   Google Benchmark, the solution's benchmarks
  sanitize-summary.txt, timings.txt         the sanitizers' verdicts, the steps' wall times
and prints
  lab | starter tests (fail/crash/pass/skip) | solution tests (pass/fail/skip) | SASS |
  key benchmark | figure | % of ceiling
A starter is healthy when its tests all fail cleanly (a message, no crash, no timeout); a
solution when all its tests and SASS checks pass. Problems are listed above the table.
Outcomes are classified by tools/course/results.py, the same code the course tool uses.
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from course import bench as B  # noqa: E402
from course import results as R  # noqa: E402


def load_cases(folder):
    """{(day, variant): [Case]} from the runner's results files."""
    cases = {}
    for path in sorted(glob.glob(os.path.join(folder, "test-results", "d*.*.*.json"))):
        try:
            run = R.load_run_results(path)
        except ValueError as e:
            print(f"warning: {e}", file=sys.stderr)
            continue
        cases.setdefault((run.day, run.variant), []).extend(run.cases)
    return cases


def load_junit(folder):
    path = os.path.join(folder, "tests.xml")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        try:
            return R.parse_ctest_junit(f.read())
        except ValueError as e:
            print(f"warning: {path}: {e}", file=sys.stderr)
            return []


def first_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return (lines[0] if lines else "(no message)")[:200]


# FLOPs per byte above which a row is reported in TFLOP/s rather than GB/s: an H100 moves ~3.3 TB/s
# and multiplies ~990 TFLOP/s (dense bf16), so below ~100 FLOP/B the memory decides the time.
COMPUTE_BOUND_FLOP_PER_BYTE = 100


def key_benchmark(path):
    if not os.path.exists(path):
        return None
    try:
        run = B.load(path)
    except ValueError as e:
        return {"name": f"(unreadable: {e})", "error": str(e)}
    rows = [r for r in run.rows if r.key] or run.rows[:1]
    if not rows:
        return None
    r = rows[0]
    if r.error:
        return {"name": r.name, "error": r.error}
    vendor = r.counters.get("%vendor")
    if vendor is not None:  # compute-bound (a GEMM): TFLOP/s against the vendor library
        return {"name": r.name, "tflops": r.tflops, "median_us": r.median_us,
                "pct": vendor, "of": " of vendor"}
    if r.tflops and r.gbs and r.tflops * 1e3 / r.gbs > COMPUTE_BOUND_FLOP_PER_BYTE:
        # Attention, a decoder layer: bytes are counted (for the floor check) but the work is
        # arithmetic; the copy ceiling says nothing about it.
        return {"name": r.name, "tflops": r.tflops, "median_us": r.median_us, "pct": None}
    return {"name": r.name, "gbs": r.gbs, "pct": r.pct_copy, "tflops": r.tflops,
            "median_us": r.median_us}


def vendor_rows(path):
    """Every benchmark row measured against a vendor library in the same run (the counter
    %vendor: cuBLAS's median over the row's, same shape and data), for the per-step lines."""
    if not os.path.exists(path):
        return []
    try:
        run = B.load(path)
    except ValueError:
        return []
    return [r for r in run.rows if not r.error and "%vendor" in r.counters]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--days", nargs="*", default=[])
    a = p.parse_args()
    cases = load_cases(a.dir)
    junit = load_junit(a.dir)
    days = a.days or sorted({d for d, _ in cases})
    problems = []

    def tally(day, variant):
        return R.tally(cases.get((day, variant), []))

    sass = {}
    for t in junit:
        parts = t.name.split(".")
        if len(parts) >= 3 and parts[2] == "sass":
            sass.setdefault((parts[0], parts[1]), []).append(t)
            if parts[1] == "solution" and t.status != R.PASSED:
                problems.append(f"{t.name}: {t.status}: {first_line(t.output)}")
        elif len(parts) == 3 and parts[2] == "objcheck" and t.status != R.PASSED:
            # The starter and the solution both include, define and call only what they may.
            problems.append(f"{t.name}: {t.status}: {first_line(t.output)}")
    harness = [t for t in junit if t.name.startswith("harness.")]
    for t in harness:
        if R.is_failure(t.status):
            problems.append(f"{t.name}: {t.status}: {first_line(t.output)}")
    # Day 14's Python tests (the bindings, the JIT, Triton): a failure is a problem; a skipped
    # file is named under the table, since on the GPU machine it means something was missing
    # there (a wheel, PyTorch), not that there is no GPU.
    python = [t for t in junit if t.name.startswith("d14.python.")]
    for t in python:
        if R.is_failure(t.status):
            problems.append(f"{t.name}: {t.status}: {first_line(t.output)}")
    grouped = {}  # one line per (day, variant, outcome, message), with a count
    for (day, variant), cs in sorted(cases.items()):
        if day not in days:
            continue
        for c in cs:
            if variant == "solution" and c.outcome != R.PASSED and c.outcome != R.SKIPPED:
                key = (f"solution {day}", c.outcome, first_line(c.message))
            elif variant == "lab" and c.outcome == R.PASSED:
                key = (f"starter {day}", "PASSED (a starter test must fail until the exercise "
                       "is done)", "")
            elif variant == "lab" and c.outcome in (R.CRASHED, R.TIMED_OUT, R.NOT_RUN):
                key = (f"starter {day}", f"{c.outcome} instead of failing cleanly",
                       first_line(c.message))
            else:
                continue
            grouped.setdefault(key, []).append(c.name)
    for (who, what, message), names in grouped.items():
        more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
        problems.append(f"{who}.{names[0]}{more}: {what}" + (f": {message}" if message else ""))
    for day in days:
        if tally(day, "solution").total == 0:
            problems.append(f"{day}: no solution test ran (see tests.log)")
    skipped = sum(tally(d, v).skipped for d in days for v in ("lab", "solution"))
    if skipped:
        problems.append(f"{skipped} tests were SKIPPED (no GPU visible?): skipped is not passed")

    sanitizers = []
    summary = os.path.join(a.dir, "sanitize-summary.txt")
    if os.path.exists(summary):
        with open(summary) as f:
            for line in f:
                parts = line.split()  # "<tool> <day> exit <code>"
                if len(parts) == 4 and parts[1] in days:
                    clean = parts[3] == "0"
                    sanitizers.append(f"{parts[0]} {parts[1]}: "
                                      f"{'clean' if clean else 'exit ' + parts[3]}")
                    if not clean:
                        problems.append(f"compute-sanitizer --tool {parts[0]} on {parts[1]}: exit "
                                        f"{parts[3]} (see sanitize-{parts[1]}-{parts[0]}.log)")
    attacks = []
    for mode in ("check", "nocheck"):
        path = os.path.join(a.dir, f"attacks-{mode}.log")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        caught = sum(l.startswith("CAUGHT") for l in lines)
        through = [l for l in lines if l.startswith(("GOT THROUGH", "HONEST"))]
        total = caught + sum(l.startswith("GOT THROUGH") for l in lines)
        attacks.append(f"attacks on the grader ({'with' if mode == 'check' else 'without'} the "
                       f"object check): {caught} of {total} caught"
                       + ("" if not through else f"; {len(through)} problems"))
        problems += [f"attack ({mode}): {l}" for l in through]
    if problems:
        print(f"{len(problems)} problems:")
        for line in problems[:60]:
            print("  " + line)
        if len(problems) > 60:
            print(f"  ... and {len(problems) - 60} more")
        print()

    header = ("lab", "starter tests (fail/crash/pass/skip)", "solution tests (pass/fail/skip)",
              "SASS (solution/starter)", "key benchmark", "figure", "% ceiling")
    rows = []
    for day in days:
        s, l = tally(day, "solution"), tally(day, "lab")
        crashes = l.counts[R.CRASHED] + l.counts[R.TIMED_OUT] + l.counts[R.NOT_RUN]
        ss = R.tally(R.Case(t.name, t.status) for t in sass.get((day, "solution"), []))
        ls = R.tally(R.Case(t.name, t.status) for t in sass.get((day, "lab"), []))
        k = key_benchmark(os.path.join(a.dir, f"bench-{day}-solution.json"))
        if k is None:
            name, fig, pct = "-", "-", "-"
        elif "error" in k:
            name, fig, pct = k["name"], "ERROR", k["error"][:40]
        else:
            name = k["name"]
            # Bytes or FLOPs per second where the row has them; else the time (a host-timed
            # row, such as Day 8's allocator: microseconds per call).
            fig = f"{k['gbs']:.0f} GB/s" if k.get("gbs") else (
                f"{k['tflops']:.1f} TFLOP/s" if k.get("tflops") else (
                    f"{k['median_us']:.3g} us" if k.get("median_us") else "-"))
            pct = f"{k['pct']:.1f}%{k.get('of', '')}" if k.get("pct") is not None else "-"
        rows.append((day, f"{l.counts[R.FAILED]}/{crashes}/{l.passed}/{l.skipped}",
                     f"{s.passed}/{s.failed}/{s.skipped}",
                     f"{ss.passed}/{ss.total} ok, {ls.failed} fail on starter",
                     name, fig, pct))
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = " | ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*header))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(fmt.format(*r))
    steps = [(day, r) for day in days
             for r in vendor_rows(os.path.join(a.dir, f"bench-{day}-solution.json"))]
    if steps:
        print("\nagainst the vendor library, same run (TFLOP/s, % of vendor):")
        width = max(len(r.name) for _, r in steps)
        for day, r in steps:
            tflops = f"{r.tflops:7.1f} TFLOP/s" if r.tflops else f"{r.median_us:9.1f} us"
            print(f"  {day} {r.name:<{width}} {tflops}  {r.counters['%vendor']:5.1f}%")
    gpu_harness = [t for t in harness if t.name.startswith("harness.gpu.")]
    if gpu_harness:
        h = R.tally(R.Case(t.name, t.status) for t in gpu_harness)
        print(f"\nharness GPU tests (the benchmark timer): {h.passed} passed, {h.failed} failed, "
              f"{h.skipped} skipped")
    if python:
        h = R.tally(R.Case(t.name, t.status) for t in python)
        skipped = [t.name.split(".")[-1] for t in python if t.status == R.SKIPPED]
        print(f"Python tests (d14.python: bindings, JIT, Triton): {h.passed} passed, "
              f"{h.failed} failed, {h.skipped} skipped" +
              (f" ({', '.join(skipped)}: see tests.xml for why)" if skipped else ""))
    host = [t for t in junit if not t.name.startswith(("harness.gpu.",))
            and (t.name.startswith(("harness.", "tools.")))]
    if host:
        h = R.tally(R.Case(t.name, t.status) for t in host)
        print(f"host tests (harness, tools): {h.passed} passed, {h.failed} failed, "
              f"{h.skipped} skipped")
    if sanitizers:
        print("\ncompute-sanitizer: " + ", ".join(sanitizers))
    timings = os.path.join(a.dir, "timings.txt")
    if os.path.exists(timings):
        with open(timings) as f:
            print("\nwall times: " + "; ".join(l.strip() for l in f if l.strip()))
    ok = not problems
    for line in attacks:
        print(line)
    print("\nverdict:", "OK — solutions pass, starters fail cleanly" if ok else "PROBLEMS above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
