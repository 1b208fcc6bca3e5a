#!/usr/bin/env python3
"""Summarise a scripts/gpu-check.sh run: one row per lab.

Reads <dir>/tests-solution.xml, tests-lab.xml and tests-harness-gpu.xml (ctest JUnit) and
bench-<day>-solution.json (Google Benchmark), and prints, last, the table
  lab | starter tests | solution tests | key benchmark | figure | % of ceiling
where a starter is healthy when all its tests fail cleanly (a failure message, no crash, no
timeout) and a solution is healthy when all its tests pass. Problems are listed above the table.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def load_junit(path):
    """[(name, status, output)] with status in passed/failed/crashed/skipped."""
    if not os.path.exists(path):
        return []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        print(f"warning: {path} is not valid XML ({e})", file=sys.stderr)
        return []
    cases = []
    for tc in root.iter("testcase"):
        out = tc.findtext("system-out") or ""
        status = tc.get("status", "")
        if status == "run":
            s = "passed"
        elif status in ("notrun", "disabled") or tc.find("skipped") is not None:
            s = "skipped"
        else:
            # A clean failure went through GoogleTest's reporting (or, for a test that is not a
            # GoogleTest, ctest says only "Failed"); a timeout, a signal, or a GoogleTest process
            # that died before printing its verdict is a crash.
            failure = tc.find("failure")
            message = failure.get("message", "") if failure is not None else ""
            died = "[ RUN      ]" in out and "[  FAILED  ]" not in out
            s = "failed" if message == "Failed" and not died else "crashed"
        cases.append((tc.get("name", ""), s, out))
    return cases


def first_failure(output):
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"(Failure|error:)", line) and i + 1 < len(lines):
            return " ".join(l.strip() for l in lines[i + 1:i + 3])[:220]
    return (lines[-1] if lines else "(no output)")[:220]


def key_benchmark(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        return {"name": f"(unreadable: {e})"}
    rows = [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    keys = [b for b in rows if b.get("key") == 1] or rows[:1]
    if not keys:
        return None
    b = keys[0]
    if b.get("error_occurred"):
        return {"name": b["name"], "error": b.get("error_message", "error")}
    return {
        "name": re.sub(r"/min_time:[0-9.]+", "", b["name"].split("/manual_time")[0]),
        "gbs": b.get("GB/s"),
        "pct": b.get("%copy"),
        "tflops": b.get("TFLOP/s"),
        "ceiling": data.get("context", {}).get("copy_ceiling_GBps"),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--days", nargs="*", default=[])
    a = p.parse_args()
    sol = load_junit(os.path.join(a.dir, "tests-solution.xml"))
    lab = load_junit(os.path.join(a.dir, "tests-lab.xml"))
    harness = load_junit(os.path.join(a.dir, "tests-harness-gpu.xml"))
    days = a.days or sorted({n.split(".")[0] for n, _, _ in sol + lab})

    def counts(cases, day, variant):
        c = {"passed": 0, "failed": 0, "crashed": 0, "skipped": 0}
        for n, s, _ in cases:
            if n.startswith(f"{day}.{variant}."):
                c[s] += 1
        return c

    problems = []
    for n, s, out in sol:
        if s in ("failed", "crashed"):
            problems.append(f"solution {n}: {s}: {first_failure(out)}")
    skipped = sum(1 for _, s, _ in sol + lab + harness if s == "skipped")
    if skipped:
        problems.append(f"{skipped} tests were SKIPPED (no GPU visible?): skipped is not passed")
    for n, s, out in harness:
        if s in ("failed", "crashed"):
            problems.append(f"harness {n}: {s}: {first_failure(out)}")
    for n, s, out in lab:
        if s == "passed":
            problems.append(f"starter {n}: PASSED (a starter test must fail until the exercise is done)")
        elif s == "crashed":
            problems.append(f"starter {n}: crashed or timed out instead of failing: {first_failure(out)}")
    for day in days:
        if counts(sol, day, "solution")["passed"] == 0:
            problems.append(f"{day}: no solution test passed (did the tests run? see tests-solution.log)")
    sanitizers = []
    summary = os.path.join(a.dir, "sanitize-summary.txt")
    if os.path.exists(summary):
        with open(summary) as f:
            for line in f:
                parts = line.split()  # "<tool> <day> exit <code>"
                if len(parts) == 4 and parts[1] in days:
                    clean = parts[3] == "0"
                    sanitizers.append(f"{parts[0]} {parts[1]}: {'clean' if clean else 'exit ' + parts[3]}")
                    if not clean:
                        problems.append(f"compute-sanitizer --tool {parts[0]} on {parts[1]}: exit "
                                        f"{parts[3]} (see sanitize-{parts[1]}-{parts[0]}.log)")
    if problems:
        print(f"{len(problems)} problems:")
        for line in problems[:60]:
            print("  " + line)
        if len(problems) > 60:
            print(f"  ... and {len(problems) - 60} more")
        print()

    header = ("lab", "starter tests (fail/crash/pass/skip)", "solution tests (pass/fail/skip)",
              "key benchmark", "figure", "% ceiling")
    rows = []
    for day in days:
        s, l = counts(sol, day, "solution"), counts(lab, day, "lab")
        k = key_benchmark(os.path.join(a.dir, f"bench-{day}-solution.json"))
        if k is None:
            name, fig, pct = "-", "-", "-"
        elif "error" in k:
            name, fig, pct = k["name"], "ERROR", k["error"][:40]
        else:
            name = k["name"]
            fig = f"{k['gbs']:.0f} GB/s" if k.get("gbs") else (
                f"{k['tflops']:.1f} TFLOP/s" if k.get("tflops") else "-")
            pct = f"{k['pct']:.1f}%" if k.get("pct") is not None else "-"
        rows.append((day,
                     f"{l['failed']}/{l['crashed']}/{l['passed']}/{l['skipped']}",
                     f"{s['passed']}/{s['failed'] + s['crashed']}/{s['skipped']}",
                     name, fig, pct))
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = " | ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*header))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(fmt.format(*r))
    if harness:
        h = {k: sum(1 for _, s, _ in harness if s == k) for k in ("passed", "failed", "crashed", "skipped")}
        print(f"\nharness GPU tests (the benchmark timer): {h['passed']} passed, "
              f"{h['failed'] + h['crashed']} failed, {h['skipped']} skipped")
    if sanitizers:
        print("\ncompute-sanitizer: " + ", ".join(sanitizers))
    ok = not problems
    print("\nverdict:", "OK — solutions pass, starters fail cleanly" if ok else "PROBLEMS above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
