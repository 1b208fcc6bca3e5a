"""One day's tests of one variant, run once, recorded for ctest, the course tool and the grader.

`run_group` runs the test program of (lab, variant) through the runner, for the cases of one
group ("main": everything that may share the GPU; "serial": the lab's serial_suites (lab.json)), writes
  <results_dir>/<day>.<variant>.<group>.json     every case's result (results.RunResults)
  <results_dir>/<day>.<variant>/<case file>       one file per case, what its ctest test reports
and returns the results. `discover` writes the ctest script that registers those tests.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from typing import Dict, List, Optional

from . import results as R
from . import runner
from .manifest import Lab, Manifest

GROUPS = ("main", "serial")
# The ctest resource the serial runs without a timing suite take, one at a time: 2^31-element
# tests hold 9 GB or more of GPU memory each.
SERIAL_LOCK = "course_gpu_memory"
NOT_BUILT = "_not_built"  # the case file every exercise's placeholder test reports


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def case_dir(m: Manifest, lab: Lab, variant: str) -> str:
    return os.path.join(m.results_dir, f"{lab.day}.{variant}")


def case_path(m: Manifest, lab: Lab, variant: str, test: str) -> str:
    """Where the day's run records one case's result (report_case.sh reads it)."""
    return os.path.join(case_dir(m, lab, variant), R.case_file_name(test))


def run_fixture(lab: Lab, variant: str, group: str = "main") -> str:
    """The ctest fixture that runs (lab, variant)'s `group` of cases: dNN.<variant>.run(_serial)."""
    return f"{lab.day}.{variant}.run" + ("" if group == "main" else "_serial")


def cases_not_passed(m: Manifest, lab: Lab, variant: str, tests: List[str]) -> List[str]:
    """The tests among `tests` whose recorded result (the day's run, case_dir) is not a pass:
    failed, crashed, timed out, skipped, or never recorded."""
    out = []
    for t in tests:
        try:
            with open(case_path(m, lab, variant, t), encoding="utf-8", errors="replace") as f:
                outcome = f.readline().strip()
        except OSError:
            outcome = ""
        if outcome != R.PASSED:
            out.append(t)
    return out


def results_path(m: Manifest, lab: Lab, variant: str, group: str) -> str:
    return os.path.join(m.results_dir, f"{lab.day}.{variant}.{group}.json")


def group_of(lab: Lab, test: str) -> str:
    return "serial" if lab.is_serial(test) else "main"


def stale_reason(lab: Lab, variant: str) -> str:
    """Why the test program cannot stand for the code it should test, or ""."""
    p = lab.programs(variant)
    if not os.path.exists(p.tests):
        return ""
    try:
        src, exe = os.path.getmtime(p.source), os.path.getmtime(p.tests)
    except OSError:
        return ""
    now = _dt.datetime.now().timestamp()
    if exe < src <= now:  # a source from the future (a clock, an archive) proves nothing
        return (f"{os.path.basename(p.source)} changed after its test program was built (the "
                "last build failed or did not run), so these results would be about older code: "
                f"build first (`course check {lab.day}` builds for you)")
    return ""


def not_built_text(m: Manifest, lab: Lab, variant: str, why: str = "") -> str:
    p = lab.programs(variant)
    lines = [why or (f"{os.path.relpath(p.tests, m.binary_dir)} was not built: "
                     f"{display(m, p.source)} did not compile or link, or the build did not run.")]
    log = build_log_path(m, lab, variant)
    if os.path.exists(log):
        from . import build  # noqa: PLC0415 (only needed here)
        with open(log, encoding="utf-8", errors="replace") as f:
            lines.append(build.explain_failure(f.read(), m, lab, variant))
    else:
        lines.append(f"Build it to see the compiler's message: cmake --build {m.binary_dir} "
                     f"--target {lab.day}_{variant}_tests")
    return "\n".join(lines)


def build_log_path(m: Manifest, lab: Lab, variant: str) -> str:
    return os.path.join(m.binary_dir, "build-logs", f"{lab.day}_{variant}.log")


def display(m: Manifest, path: str) -> str:
    """A path as a student reads it: relative to the course's source tree when inside it."""
    try:
        rel = os.path.relpath(path, m.source_dir)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def shards_for(group: str, tests: int) -> int:
    """How many processes share a group's tests: creating a CUDA context costs ~1.3 s on an
    H100 and a day's tests take a few seconds more, so two processes side by side bring a
    check closer to the cost of one start (more made it slower: contexts are created one after
    the other, and ctest runs twelve day programs at once already). Timing suites (serial) keep
    one process; a small machine one per 4 cores. COURSE_TEST_SHARDS overrides."""
    if group == "serial":
        return 1
    env = os.environ.get("COURSE_TEST_SHARDS", "")
    if env.isdigit() and int(env) > 0:
        wanted = int(env)
    else:
        wanted = min(2, max(1, (os.cpu_count() or 1) // 4))
    return max(1, min(wanted, tests // 8 or 1))


def run_sharded(binary: str, tests: List[str], *, shards: int, **kw):
    """runner.run_tests over `shards` processes at once, each with every shards-th test."""
    if shards <= 1:
        return runner.run_tests(binary, tests, **kw)
    import threading  # noqa: PLC0415

    parts = [tests[i::shards] for i in range(shards)]
    outputs: List = [None] * shards
    lock = threading.Lock()
    on_case = kw.pop("on_case", None)

    def safe(case: R.Case) -> None:
        if on_case:
            with lock:
                on_case(case)

    def work(i: int) -> None:
        outputs[i] = runner.run_tests(binary, parts[i], on_case=safe, **kw)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cases: Dict[str, R.Case] = {}
    info = runner.RunInfo()
    for part_cases, part_info in outputs:
        cases.update(part_cases)
        info.processes += part_info.processes
        info.gpu = info.gpu or part_info.gpu
        info.no_gpu_reason = info.no_gpu_reason or part_info.no_gpu_reason
        info.seed = info.seed or part_info.seed
    return {t: cases[t] for t in tests if t in cases}, info


def write_case(m: Manifest, lab: Lab, variant: str, case: R.Case) -> None:
    full = f"{lab.day}.{variant}.{case.name}"
    R.write_atomically(case_path(m, lab, variant, case.name), R.case_report(case, full))


def run_group(m: Manifest, lab: Lab, variant: str, group: str, *,
              tests: Optional[List[str]] = None, on_case=None) -> R.RunResults:
    """Runs the `group` cases of (lab, variant) and records them (see the module's docstring).

    Graded (m.grading, written by the grader for a student): the cases are the class build's
    (the reference program's list, never the student's); the student's program runs in the
    sandbox and records what each test observed; then every case it reports passed runs again
    in the reference program, replaying those observations (runner.py, course/observe.h), and
    only what passes there has passed."""
    p = lab.programs(variant)
    started = now_utc()
    grading = m.grading or {}
    verify = bool(grading.get("verify")) and variant == "lab"
    # `course grade --no-replay` (measuring what the replay costs): the reference program's case
    # list, the sandbox and the sanitizers as graded, the verdicts the student's program reports.
    replay = verify and grading.get("replay", True) is not False
    why_not = ""
    if not os.path.exists(p.tests):
        why_not = not_built_text(m, lab, variant)
        all_tests: List[str] = []
    else:
        why_not = stale_reason(lab, variant)
        all_tests = runner.list_tests(lab.solution.tests if verify else p.tests)
    wanted = [t for t in all_tests if group_of(lab, t) == group]
    if tests is not None:
        wanted = [t for t in wanted if t in set(tests)]

    def finish(case: R.Case) -> R.Case:
        case.exercise = lab.exercise_of(case.name)
        case.kind = lab.kind_of(case.name)
        return case

    def recorded(case: R.Case) -> None:
        if replay and case.outcome == R.PASSED:
            return  # written once the reference program has checked it
        write_case(m, lab, variant, finish(case))
        if on_case:
            on_case(case)

    info = runner.RunInfo()
    if why_not:
        cases = {t: R.Case(t, R.NOT_RUN, message=f"not run: {why_not}") for t in wanted}
        for c in cases.values():
            recorded(c)
    else:
        # Results of an earlier run must not be mistaken for this one's.
        for t in wanted:
            try:
                os.remove(case_path(m, lab, variant, t))
            except FileNotFoundError:
                pass
        shards = shards_for(group, len(wanted))
        tapes = ""
        if replay:
            tapes = os.path.join(m.results_dir, f"{lab.day}.{variant}.{group}.tapes")
            shutil.rmtree(tapes, ignore_errors=True)
        # `course grade --stop-at-first-failure` (scoring planted bugs): the first failed case
        # of the group ends it, in every shard.
        stop = runner.Stop() if verify and grading.get("stop_at_first_failure") else None
        cases, info = run_sharded(p.tests, wanted, shards=shards, timeout=lab.timeout,
                                  budget=m.test_budget, source_dir=m.source_dir,
                                  on_case=recorded, cwd=os.path.dirname(p.tests),
                                  prefix=grading.get("sandbox") or None, record=tapes,
                                  stop=stop)
        if replay:
            reported_passed = [t for t, c in cases.items() if c.outcome == R.PASSED]
            cases = verify_cases(m, lab, cases, tapes, shards)
            for t in reported_passed:
                write_case(m, lab, variant, finish(cases[t]))
                if on_case:
                    on_case(cases[t])
    run = R.RunResults(day=lab.day, variant=variant, group=group,
                       cases=[finish(cases[t]) for t in wanted if t in cases],
                       gpu=info.gpu, no_gpu_reason=info.no_gpu_reason, seed=info.seed,
                       finished=now_utc(),
                       note=f"{info.processes} test processes"
                       + ("; every passing case checked again in the reference program"
                          if replay else "; NOT checked again in the reference program"
                          if verify else ""))
    doc = run.to_json()
    doc["started"] = started
    import json  # noqa: PLC0415
    R.write_atomically(results_path(m, lab, variant, group), json.dumps(doc, indent=1) + "\n")
    return run


VERIFY_PREFIX = "checked by the grader"


def verify_cases(m: Manifest, lab: Lab, cases: Dict[str, R.Case], tapes: str,
                 shards: int) -> Dict[str, R.Case]:
    """The cases the student's program reported passed, run again in the reference program with
    the student's observations replayed: a case passes only if it passes there too."""
    passed = [t for t, c in cases.items() if c.outcome == R.PASSED]
    if not passed:
        return cases
    checked, _ = run_sharded(lab.solution.tests, passed, shards=shards, timeout=lab.timeout,
                             budget=m.test_budget, source_dir=m.source_dir,
                             cwd=os.path.dirname(lab.solution.tests), replay=tapes)
    out = dict(cases)
    for t in passed:
        v = checked.get(t)
        if v is not None and v.outcome == R.PASSED:
            continue
        student = cases[t]
        why = (v.message if v is not None else "the reference program did not run it").strip()
        outcome = R.SKIPPED if v is not None and v.outcome == R.SKIPPED else R.FAILED
        out[t] = R.Case(t, outcome, seconds=student.seconds, output=student.output,
                        properties=student.properties, message=(
                            f"{VERIFY_PREFIX} (the test's own checks, run again without your "
                            "code on the results your program reported) "
                            + ("skipped it: " if outcome == R.SKIPPED else "failed: ") + why))
    return out


# ------------------------------------------------------------------------------- ctest


def cmake_quote(s: str) -> str:
    """`s` as a CMake bracket argument, whatever it holds: [==[...]==] with as many '=' as it
    takes for the closing bracket not to occur in `s` (a student's folder may be named
    anything)."""
    n = 2
    while f"]{'=' * n}]" in s:
        n += 1
    return f"[{'=' * n}[{s}]{'=' * n}]"


_cmake_quote = cmake_quote


def check_lines(m: Manifest, lab: Lab, variant: str, tool: str) -> List[str]:
    """The checks of (lab, variant)'s compiled code and their ctest lines: the SASS checks
    (course_add_sass_check) when the kernel library exists, and for a graded student the
    sanitizer runs the lab grades (lab.json's sanitizers), with the grader's time limit
    (m.grading["sanitize_seconds"])."""
    q = _cmake_quote
    lines: List[str] = []
    if os.path.exists(lab.programs(variant).kernel_lib):
        for check in lab.checks_for(variant):
            name = f"{lab.day}.{variant}.sass.{check.name}"
            cmd = [m.python, tool, "_sass", "--manifest", m.path, "--day", lab.day,
                   "--variant", variant, "--check", check.name]
            lines.append(f"add_test({q(name)} " + " ".join(q(c) for c in cmd) + ")")
            lines.append(f"set_tests_properties({q(name)} PROPERTIES LABELS "
                         f"\"{lab.day};{variant};host;sass\" SKIP_RETURN_CODE 77 TIMEOUT 300)")
    grading = m.grading or {}
    if grading.get("verify") and variant == "lab" and os.path.exists(lab.programs(variant).tests):
        seconds = int(grading.get("sanitize_seconds", 300))
        for tool_name in lab.sanitizers:
            name = f"{lab.day}.{variant}.{tool_name}"
            cmd = [m.python, tool, "_sanitize", "--manifest", m.path, "--day", lab.day,
                   "--variant", variant, "--tool", tool_name, "--seconds", str(seconds)]
            lines.append(f"add_test({q(name)} " + " ".join(q(c) for c in cmd) + ")")
            # --sanitize-only-if-passed: after the day's run, whose results it reads.
            after = (f" FIXTURES_REQUIRED {q(run_fixture(lab, variant))}"
                     if grading.get("sanitize_only_if_passed") else "")
            lines.append(f"set_tests_properties({q(name)} PROPERTIES LABELS "
                         f"\"{lab.day};{variant};gpu;sanitizer\" SKIP_RETURN_CODE 77 "
                         f"TIMEOUT {seconds + 60} RUN_SERIAL TRUE{after})")
    return lines


def ctest_custom(python: str, tool: str, build_dir: str) -> str:
    """CTestCustom.cmake of a build (the course's, or a graded student's folder): after every
    ctest run, one line that says what passed, failed and was skipped, and why (ctest alone
    says "100% tests passed" when every GPU test was skipped)."""
    summary = f"\\\"{python}\\\" \\\"{tool}\\\" _ctest-summary --build-dir \\\"{build_dir}\\\""
    return (f"set(CTEST_CUSTOM_PRE_TEST \"{summary} --start\")\n"
            f"set(CTEST_CUSTOM_POST_TEST \"{summary}\")\n")


def discover(m: Manifest, lab: Lab, variant: str, tool: str) -> str:
    """The ctest script (add_test / set_tests_properties lines) of (lab, variant): the run
    fixtures and one test per case; one failing test per exercise when the program is not
    built; the checks of the compiled code (check_lines). The same for a course build and for
    a graded student (grade.py). `tool` is tools/bin/course."""
    p = lab.programs(variant)
    prefix = f"{lab.day}.{variant}"
    report = os.path.join(m.source_dir, "tools", "report_case.sh")
    lines = [f"# The tests of {os.path.basename(p.tests)}, listed by tools/course/testrun.py."]
    tests: List[str] = []
    why = ""
    # Graded: the class build's program lists the cases (a student's program never runs outside
    # its sandbox, and never decides which cases exist).
    listed = lab.solution.tests if (m.grading or {}).get("verify") and variant == "lab" \
        else p.tests
    if os.path.exists(p.tests):
        try:
            tests = runner.list_tests(listed)
        except Exception as e:  # noqa: BLE001 (any way listing fails is a failed day)
            why = f"the test program {p.tests} could not list its tests: {e}"
    if not os.path.exists(p.tests) or why:
        R.write_atomically(os.path.join(case_dir(m, lab, variant), NOT_BUILT),
                           R.NOT_RUN + "\nNOT RUN: " + not_built_text(m, lab, variant, why) + "\n")
        for exercise in lab.exercises:
            name = f"{prefix}.{exercise}"
            lines.append(f"add_test({_cmake_quote(name)} sh {_cmake_quote(report)} "
                         f"{_cmake_quote(os.path.join(case_dir(m, lab, variant), NOT_BUILT))})")
            lines.append(f"set_tests_properties({_cmake_quote(name)} PROPERTIES "
                         f"LABELS \"{lab.day};{variant};gpu\")")
        return "\n".join(lines + check_lines(m, lab, variant, tool)) + "\n"

    groups: Dict[str, List[str]] = {g: [] for g in GROUPS}
    for t in tests:
        groups[group_of(lab, t)].append(t)
    for group, members in groups.items():
        if not members:
            continue
        fixture = run_fixture(lab, variant, group)
        command = [m.python, tool, "_run", "--manifest", m.path, "--day", lab.day,
                   "--variant", variant, "--group", group]
        lines.append(f"add_test({_cmake_quote(fixture)} "
                     + " ".join(_cmake_quote(c) for c in command) + ")")
        # "serial": the cases with the largest allocations (lab.json's serial_suites): ctest runs
        # one such run at a time (RESOURCE_LOCK) beside the rest of the suite, or alone
        # (RUN_SERIAL) where one of them times the GPU (timing_suites); the grader runs them all
        # alone on the GPU (grade.py, GpuLock).
        serial = ";serial" if group == "serial" else ""
        props = [f"FIXTURES_SETUP {_cmake_quote(fixture)}",
                 f"LABELS \"{lab.day};{variant};runner{serial}\"",
                 f"TIMEOUT {int(m.test_budget + 120)}"]
        if group == "serial":
            timed = any(lab.is_timing(t) for t in members)
            props.append("RUN_SERIAL TRUE" if timed else f"RESOURCE_LOCK {SERIAL_LOCK}")
        lines.append(f"set_tests_properties({_cmake_quote(fixture)} PROPERTIES "
                     + " ".join(props) + ")")
        for t in members:
            name = f"{prefix}.{t}"
            lines.append(f"add_test({_cmake_quote(name)} sh {_cmake_quote(report)} "
                         f"{_cmake_quote(case_path(m, lab, variant, t))})")
            lines.append(f"set_tests_properties({_cmake_quote(name)} PROPERTIES "
                         f"FIXTURES_REQUIRED {_cmake_quote(fixture)} "
                         f"LABELS \"{lab.day};{variant};{lab.kind_of(t)}{serial}\" "
                         f"SKIP_RETURN_CODE 77 TIMEOUT 30)")
    return "\n".join(lines + check_lines(m, lab, variant, tool)) + "\n"

