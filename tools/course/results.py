"""What a test's result means: the one place that classifies test outcomes.

Every tool of the course reads test results through this module: the test runner that ctest
calls, `course check`, `course grade`, the summary printed after ctest, and the GPU report of
scripts/gpu-check.sh. An outcome is one of:

  passed     the test ran and every assertion held
  failed     an assertion failed: the test said what is wrong
  crashed    the process died during the test (a signal, an abort, or a CUDA error that broke
             the context, such as an illegal address): the test could not say what is wrong
  timed_out  the test did not finish within its time limit (a kernel that never ends)
  skipped    the test skipped itself, with a reason (no GPU, not enough memory): NOT passed
  not_run    the test could not run at all (its program was not built, or is older than the
             code it should test, or the run ran out of time before reaching it)

passed is good; failed, crashed, timed_out and not_run are failures; skipped is neither, and a
summary always says so and why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

PASSED = "passed"
FAILED = "failed"
CRASHED = "crashed"
TIMED_OUT = "timed_out"
SKIPPED = "skipped"
NOT_RUN = "not_run"

OUTCOMES = (PASSED, FAILED, CRASHED, TIMED_OUT, SKIPPED, NOT_RUN)
FAILURES = (FAILED, CRASHED, TIMED_OUT, NOT_RUN)

# How an outcome is written for people (tables, the case reports ctest shows).
LABELS = {
    PASSED: "passed",
    FAILED: "FAILED",
    CRASHED: "CRASHED",
    TIMED_OUT: "TIMED OUT",
    SKIPPED: "skipped",
    NOT_RUN: "NOT RUN",
}

RESULTS_FORMAT = 1  # the version of the runner's results files


def is_failure(outcome: str) -> bool:
    return outcome in FAILURES


@dataclass
class Case:
    """One test case's result."""

    name: str  # Suite.Case as GoogleTest names it ("Sizes/VectorAdd.Matches/n31")
    outcome: str
    seconds: float = 0.0
    message: str = ""  # why it failed or skipped, in words (empty when it passed)
    output: str = ""  # what the test printed
    properties: Dict[str, str] = field(default_factory=dict)  # RecordProperty (points, ...)
    exercise: str = ""  # the exercise it belongs to ("" = none of the lab's exercises)
    kind: str = "gpu"  # gpu | host | sass

    @property
    def suite(self) -> str:
        return suite_of(self.name)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "exercise": self.exercise,
            "kind": self.kind,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 4),
            "message": self.message,
            "output": self.output,
            "properties": self.properties,
        }

    @staticmethod
    def from_json(d: dict) -> "Case":
        outcome = d.get("outcome")
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r} for test {d.get('name')!r}")
        return Case(
            name=str(d["name"]),
            outcome=outcome,
            seconds=float(d.get("seconds", 0.0)),
            message=str(d.get("message", "")),
            output=str(d.get("output", "")),
            properties={str(k): str(v) for k, v in (d.get("properties") or {}).items()},
            exercise=str(d.get("exercise", "")),
            kind=str(d.get("kind", "gpu")),
        )


# ------------------------------------------------------------------------------- grouping


def suite_of(test_name: str) -> str:
    """The GoogleTest suite of `Suite.Case` (parameterised: `Prefix/Suite.Case/param`)."""
    return test_name.split(".", 1)[0]


def exercise_of(suite: str, exercises: Iterable[str]) -> str:
    """The exercise a suite belongs to: the longest exercise name that one of the suite's
    '/'-separated parts starts with (`Sizes/VectorAdd` and `VectorAddBounds` are both
    VectorAdd's). "" when none does (an instructor's extra tests, say)."""
    best = ""
    for part in suite.split("/"):
        for exercise in exercises:
            if part.startswith(exercise) and len(exercise) > len(best):
                best = exercise
    return best


def suite_in(suite: str, suites: Iterable[str]) -> bool:
    """Whether `suite` is one of `suites`, ignoring a parameterised instantiation prefix."""
    names = set(suites)
    return suite in names or suite.split("/")[-1] in names


# ------------------------------------------------------------------------------- counting


@dataclass
class Tally:
    counts: Dict[str, int] = field(default_factory=lambda: {o: 0 for o in OUTCOMES})
    skip_reasons: Dict[str, int] = field(default_factory=dict)

    def add(self, case: Case) -> None:
        self.counts[case.outcome] += 1
        if case.outcome == SKIPPED:
            reason = skip_reason(case.message)
            self.skip_reasons[reason] = self.skip_reasons.get(reason, 0) + 1

    @property
    def passed(self) -> int:
        return self.counts[PASSED]

    @property
    def failed(self) -> int:
        return sum(self.counts[o] for o in FAILURES)

    @property
    def skipped(self) -> int:
        return self.counts[SKIPPED]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """'196 passed, 2 failed (1 crashed), 3 not run, 769 skipped: no GPU here (...)'. A test
        that could not run is counted apart from one that failed (both are not passed)."""
        parts = [f"{self.passed} passed"]
        failed = self.failed - self.counts[NOT_RUN]
        detail = [f"{self.counts[o]} {LABELS[o].lower()}" for o in (CRASHED, TIMED_OUT)
                  if self.counts[o]]
        parts.append(f"{failed} failed" + (f" ({', '.join(detail)})" if detail else ""))
        if self.counts[NOT_RUN]:
            parts.append(f"{self.counts[NOT_RUN]} not run")
        if self.skipped:
            reasons = "; ".join(f"{n} {r}" if len(self.skip_reasons) > 1 else r
                                for r, n in sorted(self.skip_reasons.items(), key=lambda x: -x[1]))
            parts.append(f"{self.skipped} skipped: {reasons}")
        return ", ".join(parts)


def tally(cases: Iterable[Case]) -> Tally:
    t = Tally()
    for c in cases:
        t.add(c)
    return t


def skip_reason(message: str) -> str:
    """The reason part of a skip message, without the per-test tail ('... : this test needs a
    CUDA GPU'), so that 769 skips for one reason count as one reason."""
    text = " ".join(message.split())
    text = re.sub(r":\s*this test needs a CUDA GPU\.?$", "", text)
    return text or "(no reason given)"


def verdict(cases: List[Case]) -> str:
    """passed | failed | skipped | no_tests: failed if anything failed; passed if something
    passed and nothing failed; skipped if everything skipped."""
    t = tally(cases)
    if t.total == 0:
        return "no_tests"
    if t.failed:
        return "failed"
    if t.passed:
        return "passed"
    return "skipped"


# ------------------------------------------------------------------------------- files


def case_file_name(test_name: str) -> str:
    """A file name for a test's result: test names hold '/', which a file name cannot."""
    return re.sub(r"[^A-Za-z0-9_.:=+,-]", lambda m: "%%%02X" % ord(m.group(0)), test_name)


_BY_LABEL = {label: outcome for outcome, label in LABELS.items()}


def outcome_in_report(text: str) -> str:
    """The outcome a report states on its first line ("d02.lab.X.Y: FAILED", "skipped: ..."),
    or ""."""
    first = text.lstrip().split("\n", 1)[0].strip()
    m = re.match(r"^(?:\S+: )?(passed|FAILED|CRASHED|TIMED OUT|skipped|NOT RUN)(?::|$)", first)
    return _BY_LABEL[m.group(1)] if m else ""


def case_report(case: Case, full_name: str) -> str:
    """The text a per-case ctest test prints: its outcome first (what the reporter exits by),
    then what went wrong in words, then what the test printed."""
    lines = [case.outcome, f"{full_name}: {LABELS[case.outcome]}"]
    if case.message:
        lines.append(case.message.rstrip())
    if case.output.strip() and case.outcome != SKIPPED:
        lines.append("--- what the test printed ---")
        lines.append(case.output.rstrip())
    return "\n".join(lines) + "\n"


def write_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file and a rename, so that a reader never
    sees half a file and an interrupted write leaves the old one."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", errors="replace") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> dict:
    """Reads a JSON object; raises ValueError naming the file, line and column when it is not
    one."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror})") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: "
                         f"{e.msg})") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a JSON object")
    return doc


@dataclass
class RunResults:
    """What one run of a test program recorded (the runner's results file)."""

    day: str
    variant: str
    group: str
    cases: List[Case]
    gpu: str = ""  # the GPU the tests saw, as the test program described it
    no_gpu_reason: str = ""
    seed: str = ""
    finished: str = ""
    note: str = ""  # how the run went when not plainly ("restarted after 1 crash")

    def to_json(self) -> dict:
        return {
            "format": RESULTS_FORMAT,
            "day": self.day,
            "variant": self.variant,
            "group": self.group,
            "gpu": self.gpu,
            "no_gpu_reason": self.no_gpu_reason,
            "seed": self.seed,
            "finished": self.finished,
            "note": self.note,
            "cases": [c.to_json() for c in self.cases],
        }

    @staticmethod
    def from_json(d: dict) -> "RunResults":
        if d.get("format") != RESULTS_FORMAT:
            raise ValueError(f"results format {d.get('format')!r}, expected {RESULTS_FORMAT}")
        return RunResults(
            day=str(d.get("day", "")),
            variant=str(d.get("variant", "")),
            group=str(d.get("group", "")),
            cases=[Case.from_json(c) for c in d.get("cases", [])],
            gpu=str(d.get("gpu", "")),
            no_gpu_reason=str(d.get("no_gpu_reason", "")),
            seed=str(d.get("seed", "")),
            finished=str(d.get("finished", "")),
            note=str(d.get("note", "")),
        )


def load_run_results(path: str) -> RunResults:
    return RunResults.from_json(read_json(path))


# ------------------------------------------------------------------------------- ctest's files


@dataclass
class CtestTest:
    name: str
    status: str  # passed | failed | skipped | not_run (ctest's own view)
    output: str
    seconds: float = 0.0


def parse_ctest_log(text: str) -> List[CtestTest]:
    """Tests of one ctest invocation from its Testing/Temporary/LastTest.log: the name, ctest's
    verdict and the output of every test that ran."""
    tests = []
    # Each test: '<n>/<m> Testing: <name>' ... 'Output:' / dashes / output / dashes /
    # 'Test Passed.' | 'Test Failed.' | '<end of output>' ... '"<name>" end time: ...'
    blocks = re.split(r"^\d+/\d+ Testing: ", text, flags=re.M)
    for block in blocks[1:]:
        name = block.split("\n", 1)[0].strip()
        out = ""
        m = re.search(r"^Output:\n-+\n(.*?)\n<end of output>", block, flags=re.M | re.S)
        if m:
            out = m.group(1)
        status = PASSED if re.search(r"^Test Pass(ed\.| Reason:)", block, flags=re.M) else FAILED
        if re.search(r"^Skip regular expression found", block, flags=re.M):
            status = SKIPPED
        seconds_m = re.search(r"^Test time =\s*([0-9.]+)", block, flags=re.M)
        seconds = float(seconds_m.group(1)) if seconds_m else 0.0
        # ctest's log says "Test Passed." for a test that exited with its SKIP_RETURN_CODE too;
        # what the test printed tells them apart: the per-case reports and the SASS checks
        # begin with their outcome, a GoogleTest program prints "[  SKIPPED ]".
        told = outcome_in_report(out)
        if status == PASSED:
            if told == SKIPPED or (not told and "[  SKIPPED ]" in out
                                   and "[  PASSED  ] 0 tests" in out):
                status = SKIPPED
            # tools/unittest_run.py ("3 passed, 2 skipped (not passed): ...") and the tools'
            # scripts ("SKIPPED: why") exit with the SKIP_RETURN_CODE.
            elif re.search(r"^\d+ passed, \d+ skipped \(not passed\)|^SKIPPED: ", out, re.M):
                status = SKIPPED
        elif told in FAILURES:
            status = told  # crashed, timed out, not run: finer than ctest's "failed"
        tests.append(CtestTest(name, status, out, seconds))
    return tests


def parse_ctest_junit(text: str) -> List[CtestTest]:
    """Tests of a ctest --output-junit file. ctest writes status="run" for a test that passed,
    "fail" for one that failed (or timed out, or could not start), "notrun" for one that skipped
    itself (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) or whose fixture failed, "disabled". The
    output tells a skip from a test that never ran, and the per-case reports say more."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"not a JUnit XML file ({e})") from e
    tests = []
    for tc in root.iter("testcase"):
        out = tc.findtext("system-out") or ""
        status = tc.get("status", "")
        told = outcome_in_report(out)
        if status == "run":
            outcome = PASSED
        elif status in ("notrun", "disabled"):
            skipped = tc.find("skipped")
            message = skipped.get("message", "") if skipped is not None else ""
            if "SKIP" in message or told == SKIPPED or status == "disabled":
                outcome = SKIPPED
            else:  # e.g. "Fixture dependency failed", "Unable to find executable"
                outcome = NOT_RUN
        else:
            outcome = told if told in FAILURES else FAILED
            failure = tc.find("failure")
            message = failure.get("message", "") if failure is not None else ""
            if not told and ("Timeout" in message or "Exception" in message):
                outcome = TIMED_OUT if "Timeout" in message else CRASHED
        tests.append(CtestTest(tc.get("name", ""), outcome, out,
                               float(tc.get("time", "0") or 0)))
    return tests
