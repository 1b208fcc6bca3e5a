"""The course's command-line tool: `course <command>` (docs/course-tool.md).

Student commands: list, check, watch, hint, reset, bench, status, sass. Internal commands
(leading underscore) are what ctest and the build call: _run, _discover, _sass,
_ctest-summary."""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import time
from typing import List, Optional

from . import bench as B
from . import check as C
from . import hints as H
from . import report
from . import results as R
from . import sass, starter, testrun
from .manifest import Lab, Manifest, ManifestError, load

TOOLS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIR = os.path.dirname(TOOLS_DIR)
TOOL = os.path.join(TOOLS_DIR, "bin", "course")
EXIT_USAGE = 2


class UsageError(Exception):
    pass


def program_name() -> str:
    """How the student typed the tool: `course`, or `build/default/course`."""
    launched = os.environ.get("COURSE_LAUNCHER")
    return launched or "course"


# ------------------------------------------------------------------------------- the build


def find_build(explicit: Optional[str]) -> str:
    if explicit:
        return explicit
    if os.environ.get("COURSE_BUILD_DIR"):
        return os.environ["COURSE_BUILD_DIR"]
    default = os.path.join(SOURCE_DIR, "build", "default")
    if os.path.exists(os.path.join(default, "course_manifest.json")):
        return default
    others = sorted(glob.glob(os.path.join(SOURCE_DIR, "build", "*", "course_manifest.json")))
    if len(others) == 1:
        return os.path.dirname(others[0])
    return default


def open_build(args) -> Manifest:
    path = find_build(args.build_dir)
    try:
        return load(path)
    except ManifestError as e:
        raise UsageError(
            f"{e}\nConfigure and build first (from {SOURCE_DIR}):\n"
            "    scripts/setup.sh          (installs what is missing, configures, builds)\n"
            "or  cmake --preset default && cmake --build --preset default\n"
            "or point the tool at another build: --build-dir DIR (or COURSE_BUILD_DIR)") from e


def day_arg(m: Manifest, text: Optional[str]) -> Lab:
    if not text:
        raise UsageError("which day? (e.g. d02)")
    lab = m.find(text)
    if lab is None:
        days = ", ".join(l.day for l in m.labs)
        raise UsageError(f"'{text}' is not a day of this course. The days are: {days}\n"
                         f"(write a day as d02, 02 or 2; `{program_name()} list` shows them)")
    return lab


# ------------------------------------------------------------------------------- commands


def cmd_list(args) -> int:
    m = open_build(args)
    print(f"The course: {len(m.labs)} days (build: {m.binary_dir})\n")
    for lab in m.labs:
        print(report.bold(f"{lab.day}  {lab.title}"))
        print(f"     lesson:    {C.lesson_path(m, lab)}")
        print(f"     lab:       labs/{lab.name}/  (README.md: the exercises; kernel.cu: your code)")
        print("     exercises: " + ", ".join(f"{i + 1} {e}" for i, e in enumerate(lab.exercises)))
        print()
    first = m.labs[0].day if m.labs else "d01"
    print(f"Check a day with `{program_name()} check {first}`; time it with "
          f"`{program_name()} bench {first}`.")
    return 0


def cmd_check(args) -> int:
    m = open_build(args)
    lab = day_arg(m, args.day)
    out = C.run_check(m, lab, verbose=args.verbose,
                      object_check=not getattr(args, "no_object_check", False))
    print(C.render(m, lab, out, program_name()))
    C.record(m, lab, out)
    return out.exit_code


def first_unfinished(m: Manifest) -> Lab:
    for lab in m.labs:
        rec = _safe_record(m, lab)
        if not rec or rec.get("verdict") != "passed":
            return lab
    return m.labs[-1]


def _safe_record(m: Manifest, lab: Lab, command: str = "check") -> Optional[dict]:
    try:
        return C.load_record(m, lab, command)
    except ValueError:
        return None


def cmd_watch(args) -> int:
    m = open_build(args)
    lab = day_arg(m, args.day) if args.day else first_unfinished(m)
    source = lab.lab.source
    watched = [source, os.path.join(os.path.dirname(source), "lab.h")]
    print(f"Watching {testrun.display(m, source)}: every time you save it, Day {lab.number} is "
          "built and checked again. Ctrl-C stops.")

    def stamp() -> tuple:
        return tuple(os.path.getmtime(p) if os.path.exists(p) else 0 for p in watched)

    runs = 0
    try:
        while True:
            seen = stamp()
            out = C.run_check(m, lab, say=lambda *_: None)
            C.record(m, lab, out)
            if report.use_color():
                print("\033[2J\033[H", end="")
            print(C.render(m, lab, out, program_name()))
            runs += 1
            if out.verdict == "passed" and not args.stay:
                nxt = m.next_after(lab)
                print(f"\nDay {lab.number} is done." + (
                    f" Watching Day {nxt.number} next." if nxt else " That was the last day."))
                if nxt is None:
                    return 0
                lab = nxt
                watched[0] = source = lab.lab.source
                watched[1] = os.path.join(os.path.dirname(source), "lab.h")
            if args.max_runs and runs >= args.max_runs:
                return out.exit_code
            print(f"\n[watching {testrun.display(m, source)}; save it to check again]")
            while stamp() == seen:
                time.sleep(args.poll)
            time.sleep(0.2)  # let the editor finish writing
    except KeyboardInterrupt:
        print("\nstopped watching")
        return 0


def cmd_hint(args) -> int:
    m = open_build(args)
    lab = day_arg(m, args.day)
    path = os.path.join(m.source_dir, "labs", lab.name, "hints.md")
    try:
        hints = H.load(path)
    except H.HintsError as e:
        raise UsageError(str(e)) from e
    exercise = args.exercise
    if exercise:
        matches = [e for e in lab.exercises if e.lower() == exercise.lower()] or \
            [e for e in lab.exercises if exercise.isdigit() and
             lab.exercises.index(e) + 1 == int(exercise)]
        if not matches:
            raise UsageError(f"'{exercise}' is not an exercise of {lab.day}: "
                             + ", ".join(f"{i + 1} {e}" for i, e in enumerate(lab.exercises)))
        exercise = matches[0]
    else:
        rec = _safe_record(m, lab) or {}
        failing = [c.get("exercise") for c in rec.get("cases", [])
                   if R.is_failure(c.get("outcome", "")) and c.get("exercise")]
        exercise = failing[0] if failing else lab.exercises[0]
        print(f"(the exercise your last check stopped at: {exercise}; name another with "
              f"`{program_name()} hint {lab.day} <exercise>`)")
    available = hints.get(exercise, [])
    if not available:
        print(f"There are no hints for {exercise} yet: read {C.lesson_path(m, lab)} and "
              f"labs/{lab.name}/README.md.")
        return 0
    results = C.results_dir(m)
    before = H.revealed(results).get(lab.day, {}).get(exercise, 0)
    n = H.reveal_next(results, lab.day, exercise, len(available))
    print(report.bold(f"Day {lab.number}, exercise {lab.exercises.index(exercise) + 1} "
                      f"({exercise}): hint {n} of {len(available)}"))
    for i, text in enumerate(available[:n]):
        prefix = "new " if i == n - 1 and n > before else ""
        print(f"\n{prefix}hint {i + 1}: {text}")
    if n == len(available):
        print("\nThat was the last hint. The lesson and the lab's README.md have the rest; the "
              f"reference solution is in solutions/{lab.name}/ when you are done.")
    else:
        print(f"\n`{program_name()} hint {lab.day} {exercise}` again reveals the next one.")
    return 0


def cmd_reset(args) -> int:
    m = open_build(args)
    lab = day_arg(m, args.day)
    rel = os.path.relpath(os.path.join(m.source_dir, "labs", lab.name, "kernel.cu"), m.source_dir)
    if not args.yes and sys.stdin.isatty():
        answer = input(f"Put the untouched starter back in {rel}? Your file is kept as a backup. "
                       "[y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing changed")
            return 0
    try:
        backup, origin = starter.reset(m.source_dir, rel, lab.day)
    except starter.ResetError as e:
        raise UsageError(str(e)) from e
    if not backup:
        print(f"{rel} already is the starter ({origin}); nothing changed.")
    else:
        print(f"{rel} is the starter again ({origin}).\n"
              f"Your version is kept in {os.path.relpath(backup, m.source_dir)}.")
    return 0


def cmd_status(args) -> int:
    from . import status  # noqa: PLC0415
    m = open_build(args)
    print(status.render(m, program_name()))
    return 0


def cmd_sass(args) -> int:
    m = open_build(args)
    lab = day_arg(m, args.day)
    variant = "solution" if args.solution else "lab"
    lib = lab.programs(variant).kernel_lib
    if not os.path.exists(lib):
        raise UsageError(f"{lib} is not built yet: `{program_name()} check {lab.day}` builds it")
    try:
        dis = sass.disassemble(lib, m.cuobjdump, os.path.join(m.binary_dir, "sass-cache"))
    except sass.ToolMissing as e:
        raise UsageError(str(e)) from e
    shown = 0
    for (arch, name), body in sorted(dis.kernels.items()):
        if args.arch and arch != args.arch:
            continue
        if args.kernel and not re.search(args.kernel, dis.names[name]):
            continue
        print(f"\n// {arch}  {dis.names[name]}")
        for line in body:  # without the instruction encodings, which only cuobjdump reads
            line = re.sub(r"\s*/\* 0x[0-9a-f]{16} \*/", "", line).rstrip()
            if line.strip():
                print(line)
        shown += 1
    if not shown:
        print("no kernel matches; the kernels are:\n  " + "\n  ".join(
            sorted({f"{a}  {dis.names[n]}" for a, n in dis.kernels})))
        return 1
    return 0


def cmd_bench(args) -> int:
    from . import benchcmd  # noqa: PLC0415
    m = open_build(args)
    lab = day_arg(m, args.day)
    return benchcmd.run(m, lab, program_name(), verbose=args.verbose, filter_=args.filter)


# ------------------------------------------------------------------------------- internal


def cmd_run(args) -> int:
    """ctest's dNN.<variant>.run: run the day's cases once, record each (testrun.py)."""
    m = load(args.manifest)
    lab = day_arg(m, args.day)
    run = testrun.run_group(m, lab, args.variant, args.group)
    t = R.tally(run.cases)
    for c in run.cases:
        if c.outcome != R.PASSED:
            first = (c.message.splitlines() or [""])[0]
            print(f"{R.LABELS[c.outcome]:>9}  {c.name}  {first[:150]}")
    if run.gpu:
        print(f"GPU: {run.gpu}")
    if run.note:
        print(f"note: {run.note}")
    print(f"[ course   ] {lab.day}.{args.variant} ({args.group}): {t.summary()}")
    return 0


def cmd_discover(args) -> int:
    m = load(args.manifest)
    lab = day_arg(m, args.day)
    text = testrun.discover(m, lab, args.variant, TOOL)
    R.write_atomically(args.output, text)
    return 0


def cmd_sass_check(args) -> int:
    m = load(args.manifest)
    lab = day_arg(m, args.day)
    checks = [c for c in lab.checks_for(args.variant) if c.name == args.check]
    if not checks:
        raise UsageError(f"{lab.day} has no SASS check '{args.check}' for {args.variant}")
    case = sass.check_case(m, lab, args.variant, checks[0])
    print(f"{R.LABELS[case.outcome]}: {case.message}")
    return {R.PASSED: 0, R.SKIPPED: sass.SKIP}.get(case.outcome, 1)


def cmd_ctest_custom(args) -> int:
    """CMake's configure step: <build>/CTestCustom.cmake (testrun.ctest_custom)."""
    R.write_atomically(args.output, testrun.ctest_custom(sys.executable, TOOL,
                                                         os.path.abspath(args.build_dir)))
    return 0


def cmd_objcheck(args) -> int:
    """ctest's dNN.<variant>.objcheck: the early check of the variant's kernel.cu (objcheck.py)."""
    m = load(args.manifest)
    lab = day_arg(m, args.day)
    case = C.object_case(m, lab, args.variant)
    print(f"{R.LABELS[case.outcome]}: {case.message or 'kernel.cu includes, defines and calls only what a submission may'}")
    return {R.PASSED: 0, R.SKIPPED: sass.SKIP}.get(case.outcome, 1)


def cmd_sanitize(args) -> int:
    """A graded compute-sanitizer run (ctest's dNN.lab.memcheck / racecheck): every GPU case of
    the day's program under the tool, with a time limit, but the serial suites (2^31 elements
    under a ~10-100x slowdown). Every case, not a sample: a load past the end whose value is
    thrown away shows only where that test's shape puts it past the allocation (a 1 x 777
    transpose, the last row of a softmax), and the whole of Days 4-6 ran under racecheck in
    under 6 s on an H100.

    Graded (the student's manifest has a sandbox): the tool runs inside the student's sandbox
    (compute-sanitizer cannot reach a program in another one), and the program gets exactly the
    command line and environment of its graded test run (the events descriptor, the recording
    flag, the seed), so that it cannot tell the checked run from the others by them. The tool
    reports on standard output, between the program's own lines: a program can add error lines
    there (which fail it) but not remove the tool's, and a run that does not finish, a tool that
    is killed or that reports no summary fails."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import threading  # noqa: PLC0415

    m = load(args.manifest)
    lab = day_arg(m, args.day)
    program = lab.programs(args.variant).tests
    tool = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), "")
    if not tool:
        print("skipped: compute-sanitizer is not installed here (it comes with the CUDA "
              "toolkit); nothing was checked")
        return sass.SKIP
    from . import runner, sandbox  # noqa: PLC0415
    grading = m.grading or {}
    graded = bool(grading.get("verify")) and args.variant == "lab"
    listed = lab.solution.tests if graded else program
    tests = [t for t in runner.list_tests(listed)
             if not lab.is_serial(t) and lab.kind_of(t) != "host"]
    if graded and grading.get("sanitize_only_if_passed"):
        # `course grade --sanitize-only-if-passed` (scoring planted bugs: a day whose tests
        # failed is caught already). Its day's run came first (FIXTURES_REQUIRED).
        failed = testrun.cases_not_passed(m, lab, args.variant, tests)
        if failed:
            print(f"skipped: {len(failed)} of the day's {len(tests)} GPU tests did not pass "
                  f"(first: {failed[0]}); with --sanitize-only-if-passed the checker runs "
                  "only on a day whose tests all passed")
            return sass.SKIP
    events_r, events_w = os.pipe()
    env = dict(os.environ, COURSE_EVENTS_FD=str(events_w))
    # The checker sets its own variables; the graded runs' decoys of them go (sandbox.py).
    prefix = sandbox.without_decoys(list(grading.get("sandbox") or [])) if graded else []
    if prefix and prefix[-1] == "--":  # the sandbox clears the environment: as the runner does
        prefix[-1:] = [a for k in ("COURSE_EVENTS_FD", "COURSE_SEED") if k in env
                       for a in ("--setenv", k, env[k])] + ["--"]
    # API errors are the tests' business, not the checker's: every CUDA call is checked there,
    # and some tests provoke one on purpose (Day 8's pool runs the device out of memory and
    # must recover); memcheck reported those as "Program hit cudaErrorMemoryAllocation".
    argv = prefix + [tool, "--tool", args.tool, "--error-exitcode", "99", "--print-limit", "20",
                     "--report-api-errors", "no",
                     program, f"--gtest_filter={runner.gtest_filter(tests)}"]
    if graded:
        argv.append("--course_record")
    def drain(fd: int) -> None:  # the program's events and observations: not needed here
        while os.read(fd, 1 << 16):
            pass

    readers = [threading.Thread(target=drain, args=(events_r,), daemon=True)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, pass_fds=(events_w,),
                            start_new_session=True)
    os.close(events_w)
    for r in readers:
        r.start()
    try:
        out_bytes, _ = proc.communicate(timeout=args.seconds)
        timed_out = False
    except subprocess.TimeoutExpired:
        import signal  # noqa: PLC0415
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out_bytes, _ = proc.communicate()
        timed_out = True
    for r in readers:
        r.join(timeout=30)
    os.close(events_r)
    out = out_bytes.decode("utf-8", "replace")
    report = out
    if timed_out:
        print(f"FAILED: {args.tool} did not finish {len(tests)} tests within {args.seconds} s: "
              "a kernel that hangs or is far too slow under the checker (it runs every access "
              "through a shadow of memory, 10-100x slower)")
        return 1
    if "GPU tests will be reported as SKIPPED" in out and "[  PASSED  ]" not in out.replace(
            "[  PASSED  ] 0 tests", ""):
        reason = next((l.split("] ", 1)[1].split(": GPU tests")[0] for l in out.splitlines()
                       if "GPU tests will be reported as SKIPPED" in l), "no GPU")
        print(f"skipped: {reason}: {args.tool} needs a GPU")
        return sass.SKIP
    lines = report.splitlines()
    errors = [l for l in lines if re.match(r"^========= (Invalid|Race|Error|Program hit|"
                                           r"Uninitialized|Barrier)", l)]
    summaries = [l for l in lines if re.search(r"(ERROR|RACECHECK) SUMMARY: ", l)]
    if proc.returncode == 99 or errors:
        summary = next((l for l in summaries if re.search(r"SUMMARY: [1-9]", l)),
                       summaries[0] if summaries else "")
        print(f"FAILED: {args.tool} found problems in your kernels over {len(tests)} tests: "
              f"{summary.replace('=========', '').strip()}")
        print("\n".join(errors[:10]))
        where = [l for l in lines if re.search(r"kernel\.cu:\d+", l)][:5]
        if where:
            print("\n".join(where))
        return 1
    if proc.returncode < 0 or proc.returncode >= 128 or not summaries:
        print(f"FAILED: {args.tool} did not report on {len(tests)} tests (it ended with status "
              f"{proc.returncode} and no summary: the program stopped the checker, or crashed "
              f"under it):\n{out.strip()[-1500:]}")
        return 1
    print(f"passed: {args.tool} found no problem over {len(tests)} tests "
          f"({summaries[-1].replace('=========', '').strip()})")
    return 0


def cmd_grade(args) -> int:
    from . import classbuild, grade  # noqa: PLC0415
    m = open_build(args)
    if args.merge:
        opts = grade.Options(out=args.merge)
        grades, _ = grade.load_grades(args.merge)
        if not grades:
            raise UsageError(f"no graded student in {args.merge}/students/")
        grade.merge_class(opts, m)
        print(f"merged {len(grades)} students into {args.merge}/gradebook.csv, gradebook.json "
              "and junit.xml")
        return 0
    if not args.submissions or not os.path.isdir(args.submissions):
        raise UsageError(f"{args.submissions!r} is not a folder of submissions (one subfolder "
                         "per student)")
    days = None
    if args.days:
        days = [day_arg(m, d).day for d in args.days.split(",")]
    only = None
    if args.only_index is not None:
        only = [args.only_index]
    opts = grade.Options(out=args.out or os.path.join(os.getcwd(), "grades"), jobs=args.jobs,
                         bench=not args.no_bench, days=days, test_timeout=args.test_timeout,
                         regrade=args.regrade, ctest_jobs=args.ctest_jobs,
                         sanitize_seconds=args.sanitize_timeout,
                         sanitize_only_if_passed=args.sanitize_only_if_passed,
                         replay=not args.no_replay,
                         stop_at_first_failure=args.stop_at_first_failure,
                         use_sandbox=not args.no_sandbox,
                         submissions=args.submissions, object_check=not args.no_object_check)
    try:
        return grade.grade_class(m, args.submissions, opts, only=only, merge=not args.no_merge)
    except classbuild.ClassBuildError as e:
        raise UsageError(str(e)) from e


def cmd_leaderboard(args) -> int:
    from . import leaderboard  # noqa: PLC0415
    return leaderboard.main(args.rest or ["--help"])


def cmd_ctest_summary(args) -> int:
    """After every ctest run (CTEST_CUSTOM_POST_TEST): one line on what passed, failed and was
    skipped, and why. Never fails: it only reads."""
    temporary = os.path.join(args.build_dir, "Testing", "Temporary")
    marker = os.path.join(temporary, "course-ctest-started")
    if args.start:  # CTEST_CUSTOM_PRE_TEST: remember when this ctest run began
        os.makedirs(temporary, exist_ok=True)
        with open(marker, "w") as f:
            f.write("ctest started\n")
        return 0
    # This runs inside ctest, before ctest closes its log: depending on the CMake version the
    # log is LastTest.log.tmp (renamed when ctest ends) or LastTest.log itself. Only a log
    # written since this run began is this run's.
    try:
        started = os.path.getmtime(marker)
        logs = [os.path.join(temporary, f) for f in os.listdir(temporary)
                if re.fullmatch(r"LastTest(_[0-9-]+)?\.log(\.tmp)?", f)]
        logs = [p for p in logs if os.path.getmtime(p) >= started - 1]
        if not logs:
            return 0
        with open(max(logs, key=os.path.getmtime), encoding="utf-8", errors="replace") as f:
            tests = R.parse_ctest_log(f.read())
    except OSError:
        return 0
    if not tests:
        return 0  # ctest -N, or nothing selected
    cases = [t for t in tests if not re.search(r"\.run(_serial)?$", t.name)]
    runs = len(tests) - len(cases)
    counts = {o: 0 for o in R.OUTCOMES}
    reasons: dict = {}
    for t in cases:
        counts[t.status if t.status in counts else R.FAILED] += 1
        if t.status == R.SKIPPED:
            reason = _skip_reason_of(t.output)
            reasons[reason] = reasons.get(reason, 0) + 1
    failed = sum(counts[o] for o in R.FAILURES)
    line = f"course: {counts[R.PASSED]} passed, {failed} failed"
    extra = [f"{counts[o]} {R.LABELS[o].lower()}" for o in (R.CRASHED, R.TIMED_OUT, R.NOT_RUN)
             if counts[o]]
    if extra:
        line += f" ({', '.join(extra)})"
    line += f", {counts[R.SKIPPED]} skipped"
    if reasons:
        line += ": " + "; ".join(f"{n} because {r}" for r, n in
                                 sorted(reasons.items(), key=lambda x: -x[1])[:4])
    line += f"  [{len(cases)} tests" + (f"; {runs} day runs" if runs else "") + "]"
    if counts[R.SKIPPED] and not counts[R.PASSED] and not failed:
        line += "\ncourse: nothing was tested: every test was SKIPPED, which is not passed"
    print(line + "\n", flush=True)  # ctest prints what comes next on the same line otherwise
    return 0


def _skip_reason_of(output: str) -> str:
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    # A per-case report: "dNN.x.Y: skipped" then the reason; a SASS check: "skipped: reason".
    if lines and R.outcome_in_report(lines[0]) == R.SKIPPED:
        rest = lines[0].split("skipped", 1)[1].lstrip(": ").strip()
        return R.skip_reason(rest or (lines[1] if len(lines) > 1 else ""))
    for i, l in enumerate(lines):  # a GoogleTest program run by ctest directly
        if l.endswith(": Skipped") and i + 1 < len(lines):
            return R.skip_reason(lines[i + 1])
    for l in reversed(lines):  # tools/unittest_run.py: "3 passed, 11 skipped (not passed): ..."
        m = re.search(r"skipped \(not passed\): \d+ because (.*?)(;|$)", l)
        if m:
            return R.skip_reason(m.group(1))
    return "it skipped itself"


# ------------------------------------------------------------------------------- main

COMMANDS = [
    ("list", "the days, their exercises, lessons and lab folders", cmd_list),
    ("check", "build your code for a day, run its tests and checks, say what to fix next",
     cmd_check),
    ("watch", "check again every time you save kernel.cu, showing the next failing exercise",
     cmd_watch),
    ("hint", "reveal the next hint for an exercise (one at a time)", cmd_hint),
    ("reset", "put the untouched starter kernel.cu back (yours is kept as a backup)", cmd_reset),
    ("bench", "time your kernels against the solution, side by side", cmd_bench),
    ("status", "every day: not started / failing / passing / compiled (no GPU)", cmd_status),
    ("sass", "show the machine code (SASS) of your kernels", cmd_sass),
    ("grade", "instructors: grade a folder of submissions into a gradebook (docs/grading.md)",
     cmd_grade),
    ("leaderboard", "instructors: leaderboards from graded benchmark runs "
     "(docs/leaderboards.md)", cmd_leaderboard),
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=program_name(),
        description="The CUDA course's command-line tool. Results are kept in "
                    "<build>/course-results/; see docs/course-tool.md.",
        epilog="A <day> is written d02, 02 or 2. Exit codes: 0 everything ran and passed, "
               "1 something failed, 2 usage or build error, 3 not everything could run here "
               "(no GPU: skipped is not passed).")
    p.add_argument("--build-dir", "-B", help="the build to use (default: build/default, or "
                   "COURSE_BUILD_DIR)")
    p.add_argument("--verbose", "-v", action="store_true", help="show the build's output")
    sub = p.add_subparsers(dest="command", metavar="<command>")
    parsers = {}
    for name, help_text, func in COMMANDS:
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(func=func)
        parsers[name] = sp
    parsers["check"].add_argument("day")
    parsers["check"].add_argument(  # to measure what the object check costs (gpu-check.sh)
        "--no-object-check", action="store_true", help=argparse.SUPPRESS)
    parsers["watch"].add_argument("day", nargs="?", help="default: the first day not passed")
    parsers["watch"].add_argument("--stay", action="store_true",
                                  help="keep watching this day after it passes")
    parsers["watch"].add_argument("--poll", type=float, default=0.5, help=argparse.SUPPRESS)
    parsers["watch"].add_argument("--max-runs", type=int, default=0, help=argparse.SUPPRESS)
    parsers["hint"].add_argument("day")
    parsers["hint"].add_argument("exercise", nargs="?",
                                 help="name or number (default: where your last check failed)")
    parsers["reset"].add_argument("day")
    parsers["reset"].add_argument("--yes", "-y", action="store_true", help="do not ask")
    parsers["bench"].add_argument("day")
    parsers["bench"].add_argument("--filter", default="", help="a Google Benchmark filter")
    parsers["sass"].add_argument("day")
    parsers["sass"].add_argument("kernel", nargs="?", help="a regex of kernel names")
    parsers["sass"].add_argument("--arch", help="e.g. sm_90a")
    parsers["sass"].add_argument("--solution", action="store_true",
                                 help="the reference solution's code instead of yours")

    g = parsers["grade"]
    g.add_argument("submissions", nargs="?", help="a folder with one subfolder per student")
    g.add_argument("--out", help="where the gradebook goes (default: ./grades)")
    g.add_argument("--jobs", "-j", type=int, default=2, help="students graded at once")
    g.add_argument("--ctest-jobs", type=int, default=4, help="ctest -j for each student")
    g.add_argument("--days", help="only these days, e.g. d01,d02")
    g.add_argument("--no-bench", action="store_true", help="grade correctness and SASS only")
    g.add_argument("--test-timeout", type=float, help="seconds one test may run (default: "
                   "each lab's TIMEOUT)")
    g.add_argument("--sanitize-timeout", type=int, default=0, metavar="SECONDS",
                   help="seconds each graded compute-sanitizer run may take (default: "
                   "300); a run that takes longer fails as not finished")
    g.add_argument("--sanitize-only-if-passed", action="store_true",
                   help="run compute-sanitizer only on days whose tests all passed (a day "
                   "that failed a test forfeits its sanitizer points): for scoring planted "
                   "bugs (tools/mutants.py), never for a class")
    g.add_argument("--stop-at-first-failure", action="store_true",
                   help="end each group of a day's tests at its first failed case (the rest "
                   "are not run and earn nothing): for scoring planted bugs, where one failed "
                   "case is all the question asks (tools/mutants.py), never for a class")
    g.add_argument("--regrade", action="store_true", help="grade students already graded again")
    g.add_argument("--no-sandbox", action="store_true",
                   help="run the students' programs without the sandbox (trusting every "
                   "submission; the reports say so): only where bubblewrap cannot run")
    g.add_argument("--no-object-check", action="store_true",
                   help="skip the early check of each compiled kernel.cu (what it defines, "
                   "calls and includes): only to test that the grader's other defences hold "
                   "without it (tests/grading/attacks.py)")
    g.add_argument("--no-replay", action="store_true",
                   help="take each student's verdicts from the student's own program, without "
                   "running every passing case again in the reference program: only to measure "
                   "what the replay costs (scripts/gpu-check.sh GRADE_OVERHEAD) or to score "
                   "planted bugs (its mutants step); a program can forge its verdicts then")
    g.add_argument("--only-index", type=int, help="grade only the N-th student (0-based, in "
                   "name order): one Slurm array task")
    g.add_argument("--no-merge", action="store_true", help="do not write the class files "
                   "(another step merges: --merge)")
    g.add_argument("--merge", metavar="OUT", help="only (re)write OUT's gradebook and JUnit "
                   "from the students graded there")
    parsers["leaderboard"].add_argument("rest", nargs=argparse.REMAINDER,
                                        help="see `course leaderboard --help`")

    internal = [("_run", cmd_run), ("_discover", cmd_discover), ("_sass", cmd_sass_check),
                ("_sanitize", cmd_sanitize), ("_objcheck", cmd_objcheck),
                ("_ctest-summary", cmd_ctest_summary), ("_ctest-custom", cmd_ctest_custom)]
    for name, func in internal:
        sp = sub.add_parser(name)
        sp.set_defaults(func=func)
        if name not in ("_ctest-summary", "_ctest-custom"):
            sp.add_argument("--manifest", required=True)
            sp.add_argument("--day", required=True)
            sp.add_argument("--variant", choices=("lab", "solution"), required=True)
    sub.choices["_run"].add_argument("--group", choices=testrun.GROUPS, default="main")
    sub.choices["_discover"].add_argument("--output", required=True)
    sub.choices["_sass"].add_argument("--check", required=True)
    sub.choices["_sanitize"].add_argument("--tool", choices=("memcheck", "racecheck",
                                                             "synccheck", "initcheck"),
                                          required=True)
    sub.choices["_sanitize"].add_argument("--seconds", type=int, default=300)
    sub.choices["_ctest-summary"].add_argument("--build-dir", required=True)
    sub.choices["_ctest-custom"].add_argument("--build-dir", required=True)
    sub.choices["_ctest-custom"].add_argument("--output", required=True)
    sub.choices["_ctest-summary"].add_argument("--start", action="store_true")
    # Hide the internal commands from the help text.
    sub._choices_actions = [a for a in sub._choices_actions if not a.dest.startswith("_")]
    return p


def _first_command(argv: List[str]) -> Optional[int]:
    """Where the command word is in argv, past the global options (--build-dir DIR, -v)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--build-dir", "-B"):
            i += 2
        elif a.startswith("--build-dir=") or a in ("--verbose", "-v"):
            i += 1
        elif a.startswith("-"):
            return None
        else:
            return i
    return None


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `course leaderboard` has its own parser: argparse's REMAINDER does not pass options
    # (`--out`) through, so its arguments go to it untouched.
    command_at = _first_command(argv)
    if command_at is not None and argv[command_at] == "leaderboard":
        from . import leaderboard  # noqa: PLC0415
        return leaderboard.main(argv[command_at + 1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except UsageError as e:
        print(f"{program_name()}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
