"""`course bench <day>`: your benchmarks and the solution's, side by side."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

from . import bench as B
from . import build, report, testrun
from . import check as C
from . import results as R
from .manifest import Lab, Manifest

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 3


def run(m: Manifest, lab: Lab, tool: str, verbose: bool = False, filter_: str = "") -> int:
    targets = [f"{lab.day}_lab_bench", f"{lab.day}_solution_bench"]
    print(f"building {' '.join(targets)} (your code: {testrun.display(m, lab.lab.source)}) ...")
    proc = build.cmake_build(m, targets, verbose=verbose)
    if proc.returncode != 0:
        log = os.path.join(m.binary_dir, "build-logs", f"{lab.day}_lab.log")
        R.write_atomically(log, proc.stdout)
        print("\n" + build.explain_failure(proc.stdout, m, lab, "lab"))
        print(f"\nThe whole build log: {testrun.display(m, log)}")
        return EXIT_USAGE
    results = C.results_dir(m)
    runs: Dict[str, B.BenchRun] = {}
    for variant in ("lab", "solution"):
        who = "your benchmarks" if variant == "lab" else "the solution's benchmarks"
        print(f"running {who} ({os.path.basename(lab.programs(variant).bench)}) ...")
        try:
            runs[variant] = B.run_benchmark(
                lab.programs(variant).bench,
                os.path.join(results, f"{lab.day}.{variant}.bench.json"), filter_=filter_)
        except (B.BenchmarkFailed, RuntimeError, ValueError, OSError) as e:
            print(f"\n{who} did not run to the end: {e}")
            _record(m, lab, "crashed" if variant == "lab" else "solution_crashed", runs, str(e))
            return EXIT_ERRORS if variant == "lab" else EXIT_USAGE
    mine, ref = runs["lab"], runs["solution"]
    print("\n" + report.bold(f"Day {lab.number} — {lab.title}: benchmarks"))
    if mine.skipped or ref.skipped:
        why = mine.skipped or ref.skipped
        print(f"No GPU here: the benchmarks were SKIPPED ({why})\nBoth programs compiled. Time "
              f"them on a machine with a CUDA GPU: `{tool} bench {lab.day}` there.")
        _record(m, lab, "skipped", runs, why)
        return EXIT_SKIPPED
    print(f"device: {mine.device}")
    if mine.ceiling_gbs:
        print(f"copy ceiling (measured): {mine.ceiling_gbs:.0f} GB/s; %copy is a share of it")
    theirs = {r.name: r for r in ref.rows}
    rows, notes = [], []
    flops = any(r.tflops for r in mine.rows + ref.rows)
    for r in mine.rows:
        s = theirs.get(r.name)
        name = r.name + (" *" if r.key else "")
        if r.error:
            notes.append(f"[{len(notes) + 1}] {r.name}: {r.error}")
            cells = [name, f"error [{len(notes)}]", "", ""]
        else:
            cells = [name, B.fmt(r.median_us, 1), B.fmt(r.gbs), B.fmt(r.pct_copy, 1)]
        cells += [B.fmt(s.gbs) if s and not s.error else "-",
                  B.fmt(s.pct_copy, 1) if s and not s.error else "-"]
        if flops:
            cells.insert(4, B.fmt(r.tflops, 1) if not r.error else "")
        ratio = ""
        if s and not s.error and not r.error and r.median_us and s.median_us:
            ratio = f"{s.median_us / r.median_us:.2f}x"
        rows.append(cells + [ratio])
    header = ["benchmark", "your median_us", "your GB/s", "%copy", "solution GB/s", "%copy",
              "yours/solution"]
    if flops:
        header.insert(4, "your TFLOP/s")
    print()
    print(report.table(header, rows, right=tuple(range(1, len(header)))))
    print("  * the day's headline benchmark; yours/solution = solution time / your time")
    for n in notes:
        print("  " + n)
    errors = sum(1 for r in mine.rows if r.error)
    _record(m, lab, "errors" if errors else "ran", runs)
    if errors:
        print(f"\n{errors} of your benchmarks report an error instead of a time: an incorrect "
              f"kernel is never timed. Fix it with `{tool} check {lab.day}` first.")
        return EXIT_ERRORS
    return EXIT_OK


def _record(m: Manifest, lab: Lab, verdict: str, runs: Dict[str, B.BenchRun],
            note: str = "") -> None:
    summary = verdict
    mine = runs.get("lab")
    if mine and verdict == "ran":
        key = next((r for r in mine.rows if r.key), None)
        ref = runs.get("solution")
        ref_key = next((r for r in ref.rows if r.key), None) if ref else None
        if key and key.median_us and ref_key and ref_key.median_us:
            summary = f"{ref_key.median_us / key.median_us:.2f}x the solution"
    doc = {"command": "bench", "day": lab.day, "finished": testrun.now_utc(),
           "verdict": verdict, "summary": summary, "note": note,
           "kernel": {"path": lab.lab.source, "fingerprint": C.fingerprint(lab.lab.source)},
           "runs": {v: B.to_json(r) for v, r in runs.items()}}
    R.write_atomically(os.path.join(C.results_dir(m), f"{lab.day}.bench.json"),
                       json.dumps(doc, indent=1) + "\n")
