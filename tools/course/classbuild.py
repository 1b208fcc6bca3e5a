"""Building one student's days against a class build: only their kernel.cu is compiled.

The class build (a configured and built course, `cmake --build build/default`) already holds
the compiled tests, benchmarks and harness. For a student, each kernel.cu is compiled with
exactly the command the class build uses for the starter (from compile_commands.json) and the
test and benchmark programs are linked with exactly the class build's link commands (from
ninja), with the starter's kernel library swapped for the student's object. Identical files
(a day handed in unchanged, two students with the same file) are compiled once: objects are
cached by the hash of the source and the command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Tuple

from . import submission
from .manifest import Lab, Manifest

COMPILE_SECONDS = 600  # a template explosion must not hold the grader forever
LINK_SECONDS = 300


class ClassBuildError(Exception):
    pass


@dataclass
class Commands:
    compile: List[str]  # argv, with SOURCE and OBJECT placeholders
    compile_dir: str
    link_tests: List[str]  # argv with KERNEL_LIB and OUTPUT placeholders
    link_bench: List[str]
    link_dir: str


SOURCE, OBJECT, KERNEL_LIB, OUTPUT = "@SOURCE@", "@OBJECT@", "@KERNEL_LIB@", "@OUTPUT@"


def _ninja_link_command(m: Manifest, target: str, output: str, kernel_lib: str) -> List[str]:
    # Every command that builds the target, in order: the last one links it.
    proc = subprocess.run(["ninja", "-C", m.binary_dir, "-t", "commands", target],
                          capture_output=True, text=True)
    rel = os.path.relpath(output, m.binary_dir)
    lines = [l for l in proc.stdout.splitlines() if f"-o {rel} " in l or f"-o {output} " in l]
    if proc.returncode != 0 or not lines:
        raise ClassBuildError(f"cannot read the link command of {target} from the class build "
                              f"({m.binary_dir}); is it a Ninja build? {proc.stderr.strip()}")
    line = lines[-1].strip()
    if line.startswith(": &&"):
        line = line[4:]
    if line.endswith("&& :"):
        line = line[:-4]
    argv = shlex.split(line)
    rel_out = os.path.relpath(output, m.binary_dir)
    rel_lib = os.path.relpath(kernel_lib, m.binary_dir)
    replaced = []
    seen_lib = seen_out = False
    for i, a in enumerate(argv):
        if a in (rel_lib, kernel_lib):
            replaced.append(KERNEL_LIB)
            seen_lib = True
        elif i > 0 and argv[i - 1] == "-o" and a in (rel_out, output):
            replaced.append(OUTPUT)
            seen_out = True
        else:
            replaced.append(a)
    if not (seen_lib and seen_out):
        raise ClassBuildError(f"the link command of {target} does not name {rel_lib} and "
                              f"{rel_out} as expected: {line[:300]}")
    return replaced


def commands_for(m: Manifest, lab: Lab) -> Commands:
    """The class build's commands for (lab, student's variant), with placeholders."""
    db_path = os.path.join(m.binary_dir, "compile_commands.json")
    try:
        with open(db_path, encoding="utf-8") as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        raise ClassBuildError(f"{db_path}: {e} (configure the class build with "
                              "CMAKE_EXPORT_COMPILE_COMMANDS, as the course's CMakeLists does)")
    starter = os.path.join(m.source_dir, "labs", lab.name, "kernel.cu")
    if os.path.abspath(lab.lab.source) != os.path.abspath(starter):
        raise ClassBuildError(f"the class build compiles {lab.lab.source} for {lab.day}, not the "
                              f"starter {starter}: grade against a build of the course itself")
    entry = next((e for e in db if os.path.abspath(os.path.join(e["directory"], e["file"]))
                  == os.path.abspath(starter)), None)
    if entry is None:
        raise ClassBuildError(f"{db_path} has no command for {starter}")
    argv = entry.get("arguments") or shlex.split(entry["command"])
    out: List[str] = []
    skip = 0
    for i, a in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        if a in ("-MT", "-MF"):
            skip = 1
            continue
        if a == "-o":
            out += ["-o", OBJECT]
            skip = 1
            continue
        if os.path.abspath(os.path.join(entry["directory"], a)) == os.path.abspath(starter):
            out.append(SOURCE)
            continue
        out.append(a)
    if SOURCE not in out or OBJECT not in out:
        raise ClassBuildError(f"unexpected compile command for {starter}: {' '.join(argv)[:300]}")
    return Commands(
        compile=out, compile_dir=entry["directory"],
        link_tests=_ninja_link_command(m, f"{lab.day}_lab_tests", lab.lab.tests,
                                       lab.lab.kernel_lib),
        link_bench=_ninja_link_command(m, f"{lab.day}_lab_bench", lab.lab.bench,
                                       lab.lab.kernel_lib),
        link_dir=m.binary_dir)


def toolkit_root(compile_argv: List[str]) -> str:
    """The CUDA toolkit's root folder, from the compile command's compiler (<root>/bin/nvcc)."""
    if not compile_argv:
        return ""
    compiler = shutil.which(compile_argv[0])
    if not compiler:
        return ""  # no such compiler: nothing to show (never a folder next to the working one)
    return os.path.dirname(os.path.dirname(os.path.realpath(compiler)))


def _fill(argv: List[str], **values: str) -> List[str]:
    table = {SOURCE: values.get("source"), OBJECT: values.get("object"),
             KERNEL_LIB: values.get("kernel_lib"), OUTPUT: values.get("output")}
    return [table[a] if a in table and table[a] is not None else a for a in argv]


@dataclass
class DayBuild:
    day: str
    status: str  # built | refused | compile_failed | link_failed
    source: str = ""  # the copy that was compiled
    object: str = ""
    tests: str = ""
    bench: str = ""
    log: str = ""  # the log file (compiler and linker output)
    seconds: float = 0.0
    cached: bool = False
    problems: Optional[List[str]] = None  # why it was refused, in words (status refused)


def _run(argv: List[str], cwd: str, timeout: float) -> Tuple[int, str]:
    try:
        p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode("utf-8", "replace")
        return 124, out + f"\n(stopped after {timeout:.0f} s)\n"
    except OSError as e:
        return 127, f"could not run {argv[0]}: {e}\n"


def build_day(cmds: Commands, lab: Lab, kernel: str, out_dir: str, cache_dir: str,
              log_path: str, *, folder: str = "", display: str = "",
              sandbox: Optional[List[str]] = None, source_dir: str = "",
              hidden: Iterable[str] = (),
              object_check: Optional[Callable[[str], List[str]]] = None) -> DayBuild:
    """Compiles `kernel` and links the day's test and benchmark programs.

    The student's file is read once (a link or a path outside the student's `folder` is
    refused), its #include lines are checked (objcheck.include_problems), and it is copied alone
    into out_dir, so that no file of the student's folder shadows lab.h or a harness header. The
    compiler runs behind `sandbox` (sandbox.py: the solutions, the class build, the other
    students and the grader's output are not there); the files it read (-MD) are checked too.
    `object_check(object)` (objcheck.py) runs on the compiled object before anything is linked:
    a problem refuses the day. Messages name the student's file (`display`), never the grader's
    copy."""
    import time  # noqa: PLC0415

    from . import objcheck  # noqa: PLC0415

    start = time.monotonic()
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    source = os.path.join(out_dir, "kernel.cu")
    obj = os.path.join(out_dir, "kernel.o")
    display = display or kernel
    log: List[str] = []
    result = DayBuild(lab.day, "built", source=source, object=obj, log=log_path)

    def finish(status: str) -> DayBuild:
        result.status = status
        text = "\n".join(log).replace(source, display).replace(out_dir + "/", "")
        with open(log_path, "w", encoding="utf-8") as f:
            f.write(text)
        result.seconds = time.monotonic() - start
        return result

    try:
        data = submission.read_kernel(kernel, folder or os.path.dirname(kernel))
    except OSError as e:
        result.problems = [f"{display}: {e}"]
        log.append(result.problems[0])
        return finish("refused")
    problems = objcheck.include_problems(data.decode("utf-8", "replace"), display)
    if problems:
        result.problems = problems
        log.append("\n".join(problems))
        return finish("refused")
    with open(source, "wb") as f:
        f.write(data)
    key = hashlib.sha1(data + "\0".join(cmds.compile).encode()).hexdigest()[:20]
    cached = os.path.join(cache_dir, f"{lab.day}-{key}.o")
    if os.path.exists(cached):
        shutil.copyfile(cached, obj)
        result.cached = True
        log.append("(compiled object reused: the same file was compiled before)")
    else:
        depfile = os.path.join(out_dir, "kernel.d")
        argv = _fill(cmds.compile, source=source, object=obj) + ["-MD", "-MF", depfile]
        log.append("$ " + shlex.join(argv).replace(source, display))
        rc, text = _run(list(sandbox or []) + argv, out_dir if sandbox else cmds.compile_dir,
                        COMPILE_SECONDS)
        log.append(text)
        if rc != 0:
            return finish("compile_failed")
        try:
            with open(depfile, encoding="utf-8", errors="replace") as f:
                deps = objcheck.parse_depfile(f.read())
        except OSError:
            deps = []
        bad = objcheck.dependency_problems(deps, source_dir, hidden, source,
                                           toolkit_root(cmds.compile))
        if bad:
            result.problems = bad
            log.append("\n".join(bad))
            return finish("refused")
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{cached}.tmp.{os.getpid()}"
        shutil.copyfile(obj, tmp)
        os.replace(tmp, cached)
    if object_check is not None:
        problems = object_check(obj)
        if problems:
            result.problems = problems
            log.append("\n".join(problems))
            return finish("refused")
    for kind, template in (("tests", cmds.link_tests), ("bench", cmds.link_bench)):
        output = os.path.join(out_dir, f"{lab.day}_lab_{kind}")
        argv = _fill(template, kernel_lib=obj, output=output)
        log.append("$ " + shlex.join(argv))
        rc, text = _run(argv, cmds.link_dir, LINK_SECONDS)
        log.append(text)
        if rc != 0:
            return finish("link_failed")
        setattr(result, kind, output)
    return finish("built")


def programs_missing(m: Manifest, labs: Optional[List[Lab]] = None) -> List[str]:
    """Class build programs a student's build of `labs` (default: every lab) needs (the
    compiled tests and harness)."""
    missing = []
    for lab in labs if labs is not None else m.labs:
        for p in (lab.solution.tests, lab.solution.bench):
            if not os.path.exists(p):
                missing.append(p)
    return missing

