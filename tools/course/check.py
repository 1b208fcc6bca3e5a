"""`course check <day>`: build the student's code for a day, run its tests (one process, crash
and hang isolation by the runner) and the SASS checks of the compiled code, and say what to do
next. Everything is recorded in <build>/course-results/dNN.check.json for `course status`."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional

from . import build, objcheck, report
from . import results as R
from . import sass, testrun
from .manifest import Lab, Manifest

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3


def fingerprint(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()[:16]
    except OSError:
        return ""


def results_dir(m: Manifest) -> str:
    return os.path.join(m.binary_dir, "course-results")


@dataclass
class CheckOutcome:
    verdict: str  # passed | failed | skipped | partial | build_failed
    cases: List[R.Case] = field(default_factory=list)
    build_message: str = ""
    gpu: str = ""
    no_gpu_reason: str = ""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return {"passed": EXIT_PASSED, "failed": EXIT_FAILED, "build_failed": EXIT_USAGE,
                "skipped": EXIT_PARTIAL, "partial": EXIT_PARTIAL}.get(self.verdict, EXIT_FAILED)


def decide(cases: List[R.Case]) -> str:
    t = R.tally(cases)
    if t.failed:
        return "failed"
    if t.skipped and t.passed:
        return "partial"
    if t.skipped or not t.total:
        return "skipped"
    return "passed"


OBJECT_CHECK = "ObjectCheck.KernelCuDefinesCallsAndIncludesOnlyWhatItMay"


def object_case(m: Manifest, lab: Lab, variant: str) -> R.Case:
    """The early check of a kernel.cu and its compiled object (objcheck.py), as a case: what it
    includes, defines and calls, against what the day's own solution and starter do. The grader
    refuses a day that fails it; `course check` says so first."""
    p = lab.programs(variant)
    try:
        with open(p.source, encoding="utf-8", errors="replace") as f:
            problems = objcheck.include_problems(f.read(), testrun.display(m, p.source))
        base = objcheck.baseline(lab.solution.kernel_lib, lab.lab.kernel_lib, lab.solution.tests)
        problems += objcheck.check_object(p.kernel_lib, base)
    except objcheck.ToolMissing as e:
        return R.Case(OBJECT_CHECK, R.SKIPPED, message=f"{e}; nothing was checked", kind="host")
    except (OSError, RuntimeError) as e:
        return R.Case(OBJECT_CHECK, R.NOT_RUN, message=f"not run: {e}", kind="host")
    if problems:
        return R.Case(OBJECT_CHECK, R.FAILED, kind="host", message=(
            "kernel.cu reaches for something a submission may not (docs/grading.md, \"What a "
            "submission may do\"); the grader refuses the day until it is gone:\n"
            + "\n".join(problems)))
    return R.Case(OBJECT_CHECK, R.PASSED, kind="host")


def run_check(m: Manifest, lab: Lab, *, variant: str = "lab", build_first: bool = True,
              verbose: bool = False, say=print, object_check: bool = True) -> CheckOutcome:
    start = time.monotonic()
    if build_first:
        say(f"building {lab.day}_{variant}_tests (your code: "
            f"{testrun.display(m, lab.programs(variant).source)}) ...")
        proc = build.cmake_build(m, [f"{lab.day}_{variant}_tests"], verbose=verbose)
        log_path = testrun.build_log_path(m, lab, variant)
        if proc.returncode != 0:
            R.write_atomically(log_path, proc.stdout)
            return CheckOutcome("build_failed",
                                build_message=build.explain_failure(proc.stdout, m, lab, variant),
                                seconds=time.monotonic() - start)
        if os.path.exists(log_path):
            os.remove(log_path)
    say(f"running the tests of {lab.day} ...")
    # The SASS checks need the disassembly of the kernel library (cuobjdump, ~1 s): it runs on
    # the CPU while the tests run on the GPU.
    checks = lab.checks_for(variant)
    disassembly: dict = {}

    def disassemble() -> None:
        if object_check:
            disassembly["object"] = object_case(m, lab, variant)
        if not checks:
            return
        try:
            disassembly["ok"] = sass.disassemble(lab.programs(variant).kernel_lib, m.cuobjdump,
                                                 os.path.join(m.binary_dir, "sass-cache"))
        except (sass.ToolMissing, OSError, RuntimeError) as e:
            disassembly["error"] = e

    worker = threading.Thread(target=disassemble)
    worker.start()
    cases: List[R.Case] = []
    gpu = reason = ""
    for group in testrun.GROUPS:
        run = testrun.run_group(m, lab, variant, group)
        cases += run.cases
        gpu, reason = gpu or run.gpu, reason or run.no_gpu_reason
    worker.join()
    if object_check:
        cases.append(disassembly["object"])
    if checks:
        error = disassembly.get("error")
        if isinstance(error, sass.ToolMissing):
            cases += [R.Case(f"sass.{c.name}", R.SKIPPED, message=str(error), exercise=c.exercise,
                             kind="sass") for c in checks]
        elif error is not None:
            cases += [R.Case(f"sass.{c.name}", R.NOT_RUN, message=f"not run: {error}",
                             exercise=c.exercise, kind="sass") for c in checks]
        else:
            cases += [sass.check_case(m, lab, variant, c, disassembly["ok"]) for c in checks]
    return CheckOutcome(decide(cases), cases, gpu=gpu, no_gpu_reason=reason,
                        seconds=time.monotonic() - start)


def render(m: Manifest, lab: Lab, out: CheckOutcome, tool: str, variant: str = "lab") -> str:
    source = testrun.display(m, lab.programs(variant).source)
    lesson = lesson_path(m, lab)
    lines = ["", report.bold(f"Day {lab.number} — {lab.title}")]
    if out.verdict == "build_failed":
        lines += [report.red("✗ ") + out.build_message, "",
                  f"The whole build log: {testrun.display(m, testrun.build_log_path(m, lab, variant))}",
                  f"Nothing ran: fix the build, then `{tool} check {lab.day}` again."]
        return "\n".join(lines)
    lines.append(f"your code: {source} (it compiles)")
    if out.gpu:
        lines.append(f"GPU: {out.gpu}")
    lines += ["", report.exercise_table(lab, out.cases), ""]
    failure = report.first_failure(lab, out.cases)
    if failure is not None:
        full = failure.name if failure.kind == "sass" else f"{lab.day}.{variant}.{failure.name}"
        lines.append(report.red(f"First failure: {full} ({R.LABELS[failure.outcome]})"))
        lines.append(report.indent(failure.message or "(no message)"))
        if failure.output.strip() and failure.outcome in (R.CRASHED, R.TIMED_OUT):
            lines.append("  what it printed last:")
            lines.append(report.indent("\n".join(failure.output.rstrip().splitlines()[-8:])))
        lines.append("")
        if failure.exercise in lab.exercises:
            k = lab.exercises.index(failure.exercise) + 1
            lines.append(f"Next: exercise {k} ({failure.exercise}) in {source}, the "
                         f"TODO({lab.day}.{k}...) blocks; the lesson: {lesson}.")
            lines.append(f"Stuck? `{tool} hint {lab.day} {failure.exercise}` reveals a hint.")
        if failure.kind != "sass":
            lines.append("Rerun that test alone, with its whole output:")
            lines.append(f"    {lab.programs(variant).tests} "
                         f"--gtest_filter='{failure.name}'")
    skipped = report.skip_summary(out.cases)
    t = R.tally(out.cases)
    if out.verdict == "passed":
        nxt = m.next_after(lab)
        lines.append(report.green(f"Every test and check of Day {lab.number} passes "
                                  f"({t.passed})."))
        lines.append(f"Next: `{tool} bench {lab.day}` to see how fast your kernels are"
                     + (f", then Day {nxt.number}: {lesson_path(m, nxt)}." if nxt else "."))
    elif out.verdict in ("partial", "skipped"):
        lines.append(f"Everything that could run here passed ({t.passed}), but not everything "
                     f"could run: {t.skipped} SKIPPED, which is not passed.")
    if skipped:
        lines.append(f"Not checked here: {skipped}.")
        if out.no_gpu_reason:
            lines.append("Your code compiles and its compiled kernels were checked; to run the "
                         f"GPU tests, run `{tool} check {lab.day}` on a machine with an NVIDIA "
                         "GPU.")
    lines.append(f"({out.seconds:.1f} s; results: "
                 f"{testrun.display(m, os.path.join(results_dir(m), lab.day + '.check.json'))})")
    return "\n".join(lines)


def lesson_path(m: Manifest, lab: Lab) -> str:
    expected = os.path.join(m.source_dir, "lessons", lab.name + ".md")
    if os.path.exists(expected):
        return testrun.display(m, expected)
    lessons = os.path.join(m.source_dir, "lessons")
    if os.path.isdir(lessons):
        for name in sorted(os.listdir(lessons)):
            if name.startswith(lab.day + "_") and name.endswith(".md"):
                return testrun.display(m, os.path.join(lessons, name))
    return testrun.display(m, expected) + " (not written yet)"


def record(m: Manifest, lab: Lab, out: CheckOutcome, variant: str = "lab") -> str:
    t = R.tally(out.cases)
    doc = {
        "command": "check",
        "day": lab.day,
        "variant": variant,
        "kernel": {"path": lab.programs(variant).source,
                   "fingerprint": fingerprint(lab.programs(variant).source)},
        "finished": testrun.now_utc(),
        "verdict": out.verdict,
        "seconds": round(out.seconds, 2),
        "gpu": out.gpu,
        "no_gpu_reason": out.no_gpu_reason,
        "totals": {"passed": t.passed, "failed": t.failed - t.counts[R.NOT_RUN],
                   "not_run": t.counts[R.NOT_RUN], "skipped": t.skipped},
        "build_message": out.build_message,
        "cases": [c.to_json() for c in out.cases],
    }
    path = os.path.join(results_dir(m), f"{lab.day}.check.json")
    R.write_atomically(path, json.dumps(doc, indent=1) + "\n")
    return path


def load_record(m: Manifest, lab: Lab, command: str = "check") -> Optional[dict]:
    path = os.path.join(results_dir(m), f"{lab.day}.{command}.json")
    if not os.path.exists(path):
        return None
    return R.read_json(path)
