"""Runs a lab's GoogleTest program once for many tests, and keeps each test's failure its own.

Starting a CUDA process costs ~0.4 s (most of it creating the context), far more than most
tests, so a day's tests run in ONE process. Isolation is kept by running that process under
watch and starting it again when it dies:

  - the test program reports every test's start and end on a pipe (common/src/test_main.cpp);
  - a test that is still running when the process dies (a signal, an abort) is CRASHED;
  - a test after which the CUDA context is lost (an illegal address, a trap: every later CUDA
    call would fail) ends the process on purpose, and is CRASHED;
  - a test that runs longer than its time limit is killed, and is TIMED_OUT;
  - then the tests that had not run yet run in a fresh process, without the one that failed.

So a kernel that faults or hangs fails its own test and no other, and a day whose tests all
pass costs one process start.

For the grader (common/course/observe.h, docs/grading.md "The trust boundary"): `record=<dir>`
runs the program with --course_record and keeps what each test observed in <dir>, one tape file
per test; `replay=<dir>` runs another program (the reference, which holds no student code) with
--course_replay=<dir>, and a test whose observations did not replay fails with the reason.
`prefix` (the sandbox, tools/course/sandbox.py) goes before the program on the command line.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import results as R

CONTEXT_LOST_EXIT = 86  # test_main.cpp's exit status after a test broke the CUDA context
STARTUP_SECONDS = 60.0  # a program that has not started its first test by then is stuck
TEARDOWN_SECONDS = 30.0  # after its last test, a program must exit within this
OUTPUT_LIMIT = 64 * 1024  # bytes of one test's output kept (head and tail)


def list_tests(binary: str, timeout: float = 60.0) -> List[str]:
    """The tests a GoogleTest program holds, as Suite.Case, in its own order. (The grader lists
    the reference program's tests, never the student's: the class build decides what runs.)"""
    out = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True,
                         errors="replace", timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} --gtest_list_tests exited with {out.returncode}:\n"
                           f"{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return parse_test_list(out.stdout)


def parse_test_list(text: str) -> List[str]:
    tests, suite = [], ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        name = line.split("  #", 1)[0].rstrip()
        if not line.startswith(" "):
            suite = name.strip()  # "Suite." (with its dot)
        elif suite:
            tests.append(suite + name.strip())
    return tests


def gtest_filter(tests: List[str]) -> str:
    """A --gtest_filter that selects exactly `tests`. ':' separates patterns and the first '-'
    starts the negative ones, so a '-' inside a name is matched by '?' (any one character)."""
    return ":".join(t.replace("-", "?") for t in tests)


# ------------------------------------------------------------------------------- words

SIGNAL_WORDS = {
    signal.SIGSEGV: "a segmentation fault (host code used a bad pointer: a device pointer "
                    "dereferenced on the host, or an index past the end of a host array)",
    signal.SIGABRT: "abort() (a failed assert, or an exception thrown where nothing catches it)",
    signal.SIGFPE: "an arithmetic fault on the host (an integer division by zero?)",
    signal.SIGBUS: "a bus error (a misaligned or unmapped host address)",
    signal.SIGILL: "an illegal host instruction",
    signal.SIGKILL: "SIGKILL from outside (out of memory?)",
}

CUDA_ERROR_WORDS = {
    "cudaErrorIllegalAddress": "a kernel read or wrote memory outside its buffers: check the "
                               "bounds test (i < n) and the index arithmetic; "
                               "`compute-sanitizer --tool memcheck` names the line",
    "cudaErrorMisalignedAddress": "a kernel accessed an address not aligned to the access "
                                  "size (a 16-byte vector access through a pointer that is not "
                                  "16-byte aligned?)",
    "cudaErrorLaunchFailure": "a kernel faulted (an unspecified launch failure)",
    "cudaErrorIllegalInstruction": "a kernel executed an illegal instruction",
    "cudaErrorAssert": "a device-side assert() failed in a kernel",
    "cudaErrorHardwareStackError": "a kernel overflowed its stack (deep recursion, or large "
                                   "local arrays)",
    "cudaErrorLaunchTimeout": "a kernel ran too long and the driver stopped it",
}


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}: " + SIGNAL_WORDS.get(sig, "a signal")
    return f"exited with status {returncode} in the middle of the test (exit() called?)"


def describe_lost_context(error: str) -> str:
    code = error.split(" ", 1)[0]
    words = CUDA_ERROR_WORDS.get(code, "a CUDA error that breaks the context")
    return (f"the CUDA context was lost during this test: {error}.\n{words}.\n"
            "(The tests after it ran in a fresh process.)")


# ------------------------------------------------------------------------------- the run


# ------------------------------------------------------------------------------- the channel

MAX_OBSERVATION_BYTES = 1 << 30  # one test's observations, all together


def tape_file_name(test: str) -> str:
    """A test's tape file: FNV-1a (64 bits) of its full name, as observe.cpp computes it."""
    h = 0xcbf29ce484222325
    for b in test.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}.tape"


class EventParser:
    """The test program's descriptor: JSON lines, and after an {"event":"observe",...,"n":N}
    line exactly N bytes of data. feed() returns (event, payload) pairs; payload is None for the
    other events. A line that is not JSON is the program's own noise and is dropped."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pending: Optional[dict] = None  # an observe header waiting for its bytes
        self.bad = ""  # why the stream cannot be trusted, "" while it can

    def feed(self, data: bytes) -> List[Tuple[dict, Optional[bytes]]]:
        self.buf.extend(data)
        out: List[Tuple[dict, Optional[bytes]]] = []
        while True:
            if self.pending is not None:
                n = self.pending["n"]
                if len(self.buf) < n:
                    break
                payload = bytes(self.buf[:n])
                del self.buf[:n]
                out.append((self.pending, payload))
                self.pending = None
                continue
            nl = self.buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(self.buf[:nl])
            del self.buf[:nl + 1]
            try:
                ev = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("event") == "observe":
                n = ev.get("n")
                if not isinstance(n, int) or n < 0 or n > MAX_OBSERVATION_BYTES:
                    self.bad = f"an observation of {n!r} bytes"
                    continue
                self.pending = ev
                continue
            out.append((ev, None))
        return out


class TapeWriter:
    """Recording: each test's observations into <dir>/<tape_file_name(test)> (observe.cpp reads
    it back): the test's name on the first line, then per observation "<key hex> <what hex> <n>"
    and n bytes. Observations outside a test are dropped (the replay then misses them)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.file = None
        self.test = ""
        self.bytes = 0

    def start(self, test: str) -> None:
        self.end()
        path = os.path.join(self.folder, tape_file_name(test))
        self.file = open(path, "wb")
        self.file.write(test.encode("utf-8") + b"\n")
        self.test, self.bytes = test, 0

    def observe(self, header: dict, payload: bytes) -> None:
        if self.file is None:
            return
        self.bytes += len(payload)
        if self.bytes > MAX_OBSERVATION_BYTES:
            return

        def hex_(v) -> str:
            return str(v).encode("utf-8").hex() or "-"
        self.file.write(f"{hex_(header.get('key', ''))} {hex_(header.get('what', ''))} "
                        f"{len(payload)}\n".encode() + payload)

    def end(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file = None


@dataclass
class RunInfo:
    gpu: str = ""
    no_gpu_reason: str = ""
    seed: str = ""
    processes: int = 0
    notes: List[str] = field(default_factory=list)


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) <= OUTPUT_LIMIT:
        return text
    half = OUTPUT_LIMIT // 2
    return text[:half] + f"\n... [{len(text) - OUTPUT_LIMIT} characters left out] ...\n" + text[-half:]


def _split_after_marker(data: bytearray, markers: List[bytes]) -> Tuple[bytes, bytes]:
    """Splits `data` after the line that starts with one of `markers` (GoogleTest's own
    "[ RUN      ] name" or "[       OK ] name" lines); all of it is the head when none is there."""
    for marker in markers:
        at = data.find(marker)
        if at >= 0:
            nl = data.find(b"\n", at)
            cut = len(data) if nl < 0 else nl + 1
            return bytes(data[:cut]), bytes(data[cut:])
    return bytes(data), b""


def _failure_message(event: dict, source_dir: str) -> str:
    parts = []
    for f in event.get("failures", []):
        where = f.get("file", "")
        if source_dir and where.startswith(source_dir.rstrip("/") + "/"):
            where = where[len(source_dir.rstrip("/")) + 1:]
        line = f.get("line", -1)
        prefix = f"{where}:{line}: " if where and line and line > 0 else ""
        parts.append(prefix + str(f.get("message", "")).strip())
    return "\n".join(parts)


def _read_preamble(text: str, info: RunInfo) -> None:
    for line in text.splitlines():
        if not line.startswith("[ course   ] "):
            continue
        body = line[len("[ course   ] "):]
        if body.startswith("random seed "):
            info.seed = body.split()[2]
        elif ": GPU tests will be reported as SKIPPED" in body:
            info.no_gpu_reason = body.split(": GPU tests will be reported as SKIPPED")[0]
        elif not info.gpu and "(sm_" in body:
            info.gpu = body


class Stop:
    """Set by the first failed case of a run given `stop=` (`course grade
    --stop-at-first-failure`): every process of the run (each shard's) ends, and the tests not
    yet reported are NOT RUN. Shared by the shards of one run, across threads."""

    def __init__(self):
        self.event = threading.Event()
        self.first = ""

    def fail(self, name: str) -> None:
        if not self.event.is_set():
            self.first = name
            self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


FAILURES = (R.FAILED, R.CRASHED, R.TIMED_OUT)


def run_tests(binary: str, tests: List[str], *, timeout: float, budget: float,
              source_dir: str = "", env: Optional[Dict[str, str]] = None,
              on_case: Optional[Callable[[R.Case], None]] = None,
              cwd: Optional[str] = None, prefix: Optional[List[str]] = None,
              record: str = "", replay: str = "",
              stop: Optional[Stop] = None) -> Tuple[Dict[str, R.Case], RunInfo]:
    """Runs `tests` of `binary`, restarting after crashes and hangs. Returns every test's Case
    (keyed by name; each test of `tests` gets one) and what the program said about the GPU.
    `on_case` sees each result as soon as it is known. `prefix`, `record`, `replay`: see the
    module's docstring. `stop`: the first failed case ends the run (Stop)."""
    done: Dict[str, R.Case] = {}
    info = RunInfo()
    started_all = time.monotonic()

    def record_case(case: R.Case) -> None:
        done[case.name] = case
        if stop is not None and case.outcome in FAILURES:
            stop.fail(case.name)
        if on_case:
            on_case(case)

    remaining = list(tests)
    while remaining:
        if stop is not None and stop.is_set():
            for name in remaining:
                if name not in done:
                    record_case(R.Case(name, R.NOT_RUN, message=(
                        f"not run: graded with --stop-at-first-failure, and {stop.first} "
                        "failed before it")))
            break
        left = budget - (time.monotonic() - started_all)
        if left <= 0:
            for name in remaining:
                record_case(R.Case(name, R.NOT_RUN, message=(
                    f"not run: the tests before it used up the run's time budget of {budget:.0f} "
                    "s (tests that hang cost their whole time limit each)")))
            break
        progress = _run_once(binary, remaining, timeout=timeout, budget_left=left,
                             source_dir=source_dir, env=env, cwd=cwd, info=info, done=done,
                             record=record_case, prefix=prefix or [], tapes=record,
                             replay=replay, stop=stop)
        info.processes += 1
        still = [t for t in remaining if t not in done]
        if stop is not None and stop.is_set():
            remaining = still
            continue  # the loop's head reports them NOT RUN
        if len(still) == len(remaining) and not progress.started_any:
            why = progress.reason or "the test program ended before running any test"
            for name in still:
                record_case(R.Case(name, R.NOT_RUN, message=f"not run: {why}",
                                   output=progress.output))
            break
        if progress.clean_exit and still:
            # The program ran to its end and did not run these: they do not exist in it.
            for name in still:
                record_case(R.Case(name, R.NOT_RUN, message="not run: the test program did not "
                                   "run this test (it is not in the program any more?)"))
            break
        remaining = still
    return {t: done[t] for t in tests if t in done}, info


@dataclass
class _Progress:
    started_any: bool = False
    clean_exit: bool = False
    reason: str = ""
    output: str = ""


def _run_once(binary, tests, *, timeout, budget_left, source_dir, env, cwd, info, done,
              record, prefix, tapes, replay, stop=None) -> _Progress:
    progress = _Progress()
    read_fd, write_fd = os.pipe()
    child_env = dict(os.environ if env is None else env)
    child_env["COURSE_EVENTS_FD"] = str(write_fd)
    sandboxed = list(prefix)
    if sandboxed and sandboxed[-1] == "--":  # bwrap clears the environment: the course's go in
        sandboxed[-1:] = [a for k in ("COURSE_EVENTS_FD", "COURSE_SEED") if k in child_env
                          for a in ("--setenv", k, child_env[k])] + ["--"]
    argv = sandboxed + [binary, f"--gtest_filter={gtest_filter(tests)}"]
    if tapes:
        argv.append("--course_record")
    if replay:
        argv.append(f"--course_replay={replay}")
    parser = EventParser()
    tape = TapeWriter(tapes) if tapes else None
    try:
        proc = subprocess.Popen(argv,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, pass_fds=(write_fd,), env=child_env,
                                cwd=cwd, start_new_session=True)
    except OSError as e:
        os.close(read_fd)
        os.close(write_fd)
        progress.reason = f"the test program could not start: {e}"
        return progress
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    out_fd = proc.stdout.fileno()
    os.set_blocking(out_fd, False)
    sel = selectors.DefaultSelector()
    sel.register(out_fd, selectors.EVENT_READ, "out")
    sel.register(read_fd, selectors.EVENT_READ, "events")

    t0 = time.monotonic()
    pending = bytearray()  # output not yet given to a test
    preamble = bytearray()
    current: Optional[str] = None
    current_started = t0
    last_end = None
    ended_by_us = None  # "timeout" | "budget" | "teardown" | "startup" | "stopped"
    lost_context: Optional[dict] = None
    open_fds = {out_fd, read_fd}
    wanted = set(tests)
    last_name = [""]

    def drain_out() -> None:
        while out_fd in open_fds:
            try:
                chunk = os.read(out_fd, 65536)
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                chunk = b""
            if not chunk:
                sel.unregister(out_fd)
                open_fds.discard(out_fd)
                return
            pending.extend(chunk)

    def handle_event(ev: dict, payload: Optional[bytes]) -> None:
        nonlocal current, current_started, last_end, lost_context
        kind = ev.get("event")
        name = str(ev.get("test", ""))
        if kind == "observe":
            if tape is not None and current is not None and payload is not None:
                tape.observe(ev, payload)
            return
        if kind == "start":
            if current is not None or name not in wanted or name in done:
                return  # not a test of this run, or one that already ended: not the harness's
            if tape is not None:
                tape.start(name)
            drain_out()
            # What came before this test's "[ RUN ]" line is not its output; what came after
            # it already is (the pipes are read in any order).
            head, tail = _split_after_marker(pending, [b"[ RUN      ] " + name.encode()])
            if not progress.started_any:
                preamble.extend(head)
                _read_preamble(preamble.decode("utf-8", "replace"), info)
            pending[:] = tail
            current, current_started = name, time.monotonic()
            progress.started_any = True
        elif kind == "end":
            if name != current:
                return  # an end for a test that is not running: not the harness's
            drain_out()
            if tape is not None:
                tape.end()
            outcome = {"passed": R.PASSED, "failed": R.FAILED, "skipped": R.SKIPPED}.get(
                ev.get("outcome"), R.FAILED)
            message = ""
            if outcome == R.FAILED:
                message = _failure_message(ev, source_dir)
            elif outcome == R.SKIPPED:
                message = str(ev.get("skip", "")).strip() or "skipped"
            replayed = str(ev.get("replay", "") or "")
            if replay and replayed and outcome != R.SKIPPED:
                outcome = R.FAILED
                message = (message + "\n" if message else "") + "checked by the grader: " + replayed
            props = {str(k): str(v) for k, v in (ev.get("properties") or {}).items()}
            ends = [tag + name.encode() for tag in
                    (b"[       OK ] ", b"[  FAILED  ] ", b"[  SKIPPED ] ")]
            head, tail = _split_after_marker(pending, ends)
            case = R.Case(name, outcome, seconds=float(ev.get("ms", 0)) / 1000.0,
                          message=message, output=_clip(bytes(head)), properties=props)
            pending[:] = tail
            current, last_end = None, time.monotonic()
            last_name[0] = name
            record(case)
        elif kind == "context_lost":
            if name == (current or last_name[0]):
                lost_context = ev

    while open_fds:
        now = time.monotonic()
        if current is not None:
            deadline = min(current_started + timeout, t0 + budget_left)
        elif not progress.started_any:
            deadline = min(t0 + STARTUP_SECONDS, t0 + budget_left)
        else:
            deadline = min((last_end or now) + TEARDOWN_SECONDS + timeout, t0 + budget_left)
        if stop is not None and stop.is_set() and proc.poll() is None:
            ended_by_us = "stopped"  # a failed case (here or in another shard) ended the run
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        if now >= deadline:
            if current is not None:
                ended_by_us = "budget" if now >= t0 + budget_left - 1e-3 else "timeout"
            else:
                ended_by_us = "startup" if not progress.started_any else "teardown"
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        for key, _ in sel.select(timeout=min(0.5, max(0.01, deadline - now))):
            if key.data == "out":
                drain_out()
            else:
                try:
                    chunk = os.read(read_fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(read_fd)
                    open_fds.discard(read_fd)
                    continue
                for ev, payload in parser.feed(chunk):
                    try:
                        handle_event(ev, payload)
                    except (ValueError, TypeError):
                        pass  # a garbled event: the test's own output, not the harness's
        if proc.poll() is not None and read_fd not in open_fds:
            drain_out()
            break

    # The process is over (or is being killed): collect what is left.
    try:
        returncode = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        returncode = proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # a grandchild holding the pipes open
    except (ProcessLookupError, PermissionError):
        pass
    os.set_blocking(out_fd, True)
    try:
        rest = proc.stdout.read()
        if rest:
            pending.extend(rest)
    except (OSError, ValueError):
        pass
    proc.stdout.close()
    os.close(read_fd)
    sel.close()
    if tape is not None:
        tape.end()

    if lost_context is not None:
        name = str(lost_context.get("test", ""))
        previous = done.get(name)
        message = describe_lost_context(str(lost_context.get("error", "")))
        if previous is not None and previous.message:
            message = previous.message.rstrip() + "\n" + message
        record(R.Case(name, R.CRASHED, seconds=previous.seconds if previous else 0.0,
                      message=message, output=previous.output if previous else "",
                      properties=previous.properties if previous else {}))
    elif current is not None and ended_by_us == "stopped":
        pass  # not reported: run_tests reports it NOT RUN with the others left
    elif current is not None:
        output = _clip(bytes(pending))
        if ended_by_us == "timeout":
            record(R.Case(current, R.TIMED_OUT, seconds=timeout, output=output, message=(
                f"did not finish within its time limit of {timeout:.0f} s, and was stopped: a "
                "kernel that never ends (a loop whose exit condition never holds, a "
                "__syncthreads() that not every thread of the block reaches, a spin-wait on a "
                "flag nobody sets) or far too much work.")))
        elif ended_by_us == "budget":
            record(R.Case(current, R.TIMED_OUT, seconds=time.monotonic() - current_started,
                          output=output, message=(
                              "stopped: the run's whole time budget ran out during this test")))
        else:
            record(R.Case(current, R.CRASHED, seconds=time.monotonic() - current_started,
                          output=output, message=(
                              f"the test program died during this test: "
                              f"{describe_exit(returncode)}.\n(The tests after it ran in a "
                              "fresh process.)")))
    elif not progress.started_any:
        text = (bytes(preamble) + bytes(pending)).decode("utf-8", "replace")
        progress.output = text[-4000:]
        if ended_by_us == "startup":
            progress.reason = (f"the test program did not start its first test within "
                               f"{STARTUP_SECONDS:.0f} s")
        else:
            progress.reason = (f"the test program ended before its first test "
                               f"({describe_exit(returncode) if returncode else 'status 0'})")
    progress.clean_exit = (ended_by_us is None and lost_context is None and current is None
                           and returncode in (0, 1))
    return progress
