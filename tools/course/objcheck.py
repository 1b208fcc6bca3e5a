"""The early check of a kernel.cu and its compiled object, before anything of it runs.

A kernel.cu is linked into the programs that test and time it, so whatever it defines or calls
is in those processes. This check says plainly, with the name of the symbol or the file, when a
submission reaches for something a day's kernels have no use for:

  includes   only the day's lab folder (and the other labs' headers), the course's harness
             (common/), the CUDA toolkit's and the system's headers; no absolute path, no
             `..` out of those, no solutions/, no file named by a macro, no `.incbin`;
  defines    the functions lab.h declares (what the day's solution or starter defines) and
             names of the student's own; never a function, variable or class of the harness,
             the test or benchmark libraries, CUDA, the C or C++ library (a definition would
             replace theirs when the program is linked);
  calls      no file, process, signal, socket, environment-changing or dynamic-loading
             function of the C library and no vendor library (cuBLAS, cuDNN, ...), unless the
             day's own solution needs it (Day 13's disk cache uses files);
  code       no raw system call instruction in the host code.

It is leaky by nature (a constructor can still patch memory, nvcc's own registration code
imports atexit and getenv): the grade does not rest on it (docs/grading.md, "The trust
boundary"). It makes the easy attacks fail early, with a message a student can act on.
`course check` runs it on the student's object; the grader refuses a day that fails it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

# --------------------------------------------------------------------------- includes

_DIRECTIVE = re.compile(r"^\s*#\s*(include|include_next|import|embed)\b\s*(.*)$")


def _strip_comments(text: str) -> str:
    """The source with comments blanked (strings kept), line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def include_problems(source_text: str, display: str = "kernel.cu") -> List[str]:
    """What the #include lines of a kernel.cu ask for that a submission may not."""
    problems = []
    text = _strip_comments(source_text.replace("\\\n", " "))
    for number, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        where = f"{display}:{number}"
        if m:
            kind, operand = m.group(1), m.group(2).strip()
            if kind != "include":
                problems.append(f"{where}: #{kind} is not allowed in a submission (use #include)")
                continue
            q = re.match(r'^"([^"]*)"|^<([^>]*)>', operand)
            if not q:
                problems.append(f"{where}: #include {operand[:60]} names its file through a macro: "
                                "write the file's name in quotes or angle brackets")
                continue
            name = q.group(1) if q.group(1) is not None else q.group(2)
            problem = _include_name_problem(name)
            if problem:
                problems.append(f"{where}: #include \"{name}\": {problem}")
        if re.search(r"\.incbin\b|\bincbin\b", line):
            problems.append(f"{where}: `.incbin` puts another file's bytes into the program: not "
                            "allowed in a submission")
    return problems


def _include_name_problem(name: str) -> str:
    if name.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", name):
        return ("an absolute path: a submission includes only its lab's headers, the course's "
                "harness, the CUDA toolkit's and the standard library's")
    parts = re.split(r"[\\/]+", name)
    # Another lab's header, as Day 14 includes Days 6, 10 and 12's (found through the lab's
    # include folder): "../dNN_topic/header.h" and nothing else with `..` in it.
    sibling = re.fullmatch(r"\.\./d\d\d_[A-Za-z0-9_]+/[A-Za-z0-9_.-]+\.(h|hpp|cuh)", name)
    if ".." in parts and not sibling:
        return ("`..` leaves the folders a submission may include from (its lab's headers, the "
                "other labs' headers as ../dNN_topic/lab.h, the course's harness, the CUDA "
                "toolkit's and the standard library's)")
    if "solutions" in parts:
        return "the course's solutions are not yours to include"
    return ""


# Where a header a kernel.cu includes may never come from, whatever the folders: the system's
# private places (a compile error would quote their lines into a report).
PRIVATE_PLACES = ("/etc", "/proc", "/sys", "/dev", "/root", "/home", "/tmp", "/var", "/run",
                  "/boot", "/srv", "/mnt", "/media")


def dependency_problems(deps: Iterable[str], source_dir: str, hidden: Iterable[str],
                        source: str, toolkit: str = "") -> List[str]:
    """Files the compiler read (its -MD list) that a submission may not include: in the course's
    tree anything but labs/ and common/ (solutions/ above all), the grader's hidden folders,
    and the system's private places. The course's labs/ and common/ and the CUDA toolkit
    (`toolkit`, its root folder) are allowed wherever they are installed, /home or /tmp
    included."""
    tree = os.path.realpath(source_dir).rstrip("/") + "/" if source_dir else ""
    allowed_in_tree = [tree + "labs/", tree + "common/"] if tree else []
    allowed = allowed_in_tree + ([os.path.realpath(toolkit).rstrip("/") + "/"] if toolkit else [])
    hidden = [os.path.realpath(h).rstrip("/") + "/" for h in hidden if h]
    source = os.path.realpath(source)
    bad = []
    for d in deps:
        real = os.path.realpath(d)
        if real == source:
            continue
        if any(real.startswith(a) for a in allowed) and not any(real.startswith(h) for h in hidden):
            continue
        if tree and real.startswith(tree) and not any(real.startswith(a) for a in allowed_in_tree):
            why = ("the course's solutions are not yours to include"
                   if real.startswith(tree + "solutions/") else
                   "a submission includes only the labs' headers and the harness (common/) "
                   "from the course's tree")
            bad.append(f"kernel.cu includes {os.path.relpath(real, tree)}: {why}")
        elif any(real.startswith(h) for h in hidden):
            bad.append(f"kernel.cu includes {d}, which a submission may not read")
        elif any(real == p or real.startswith(p + "/") for p in PRIVATE_PLACES):
            bad.append(f"kernel.cu includes {d}: not a header a submission may include")
    return bad


def parse_depfile(text: str) -> List[str]:
    """The prerequisites of a make-style dependency file (nvcc/gcc -MD -MF)."""
    body = text.replace("\\\n", " ")
    deps: List[str] = []
    for line in body.splitlines():
        if ":" not in line:
            continue
        _, rest = line.split(":", 1)
        deps += [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", rest.strip()) if p]
    return deps


# --------------------------------------------------------------------------- symbols

# Calls a kernel.cu has no use for, by family (the symbol as the linker sees it: a regex on the
# mangled name). A day whose solution or starter calls one (Day 13's cache writes files) may.
FORBIDDEN_CALLS: List[Tuple[str, str]] = [
    (r"(fork|vfork|clone3?|execl[ep]?|execv[pe]?|execvpe|fexecve|system|popen|pclose|"
     r"posix_spawnp?|kill|killpg|tgkill|ptrace|prctl|setsid|setpgid|daemon|wait|waitpid|"
     r"waitid|wait3|wait4)", "starts or controls processes"),
    (r"(open|open64|openat|openat64|creat|creat64|fopen|fopen64|freopen|freopen64|fdopen|"
     r"tmpfile|mkstemps?|mkostemps?|unlink|unlinkat|rename|renameat2?|remove|mkdir|mkdirat|"
     r"rmdir|opendir|fdopendir|readdir|readdir64|scandir|chdir|fchdir|chroot|symlink|symlinkat|"
     r"link|linkat|truncate|ftruncate|chmod|fchmod|chown|fchown|utime|utimes|futimens|"
     r"readlink|readlinkat|statx|inotify_\w+|fanotify_\w+|mount|umount2?)",
     "reads or writes files"),
    (r"_ZNSt\d*(basic_ifstream|basic_ofstream|basic_fstream|basic_filebuf)\w*|"
     r"_ZNSt7__cxx11\d*(basic_ifstream|basic_ofstream|basic_fstream)\w*|"
     r"_ZNSt10filesystem\w*|_ZNSt12__fs_filesystem\w*", "reads or writes files"),
    (r"(write|read|pread|pread64|pwrite|pwrite64|readv|writev|preadv|pwritev|sendfile|"
     r"sendfile64|splice|tee|vmsplice|dup|dup2|dup3|pipe|pipe2|fcntl|fcntl64|ioctl|dprintf|"
     r"vdprintf|close_range|memfd_create|eventfd|signalfd|timerfd_\w+|epoll_\w+|poll|ppoll|"
     r"select|pselect)", "uses file descriptors directly"),
    (r"(mmap|mmap64|munmap|mprotect|mremap|madvise|pkey_\w+|process_vm_readv|"
     r"process_vm_writev)", "maps or protects memory"),
    (r"(dlopen|dlmopen|dlsym|dlvsym|dladdr|dladdr1|dlinfo|dl_iterate_phdr|"
     r"_dl_\w+|__libc_dlopen_mode|__libc_dlsym)", "loads code at run time"),
    (r"(syscall|__syscall\w*|_syscall\w*)", "makes raw system calls"),
    (r"(setenv|putenv|unsetenv|clearenv|environ|__environ|_environ|program_invocation_name|"
     r"program_invocation_short_name|__progname\w*|__libc_argv|__libc_argc)",
     "reads the process's arguments or changes its environment"),
    (r"(socket|socketpair|connect|bind|listen|accept|accept4|send|sendto|sendmsg|recv|"
     r"recvfrom|recvmsg|getaddrinfo|gethostbyname\w*|shm_open|shmget|shmat|msgget|semget|"
     r"mq_\w+)", "talks to other processes or the network"),
    (r"(signal|sigaction|sigprocmask|pthread_sigmask|raise|alarm|setitimer|timer_create|"
     r"pthread_kill|sigqueue)", "handles or sends signals"),
    (r"(cublas\w*|cublasLt\w*|cudnn\w*|cufft\w*|curand\w*|cusolver\w*|cusparse\w*|nccl\w*|"
     r"cutlass\w*|_ZN3cub\w*DeviceRadixSort\w*|_ZN3cub\w*DeviceScan\w*)",
     "calls a vendor library: the exercise is to write the kernel yourself"),
    (r"(cudaStreamCreateWithFlags|cudaStreamCreateWithPriority|cuStreamCreate\w*)",
     "creates a stream that need not wait for the default stream: work queued on it runs "
     "outside the benchmark's timed events (cudaStreamCreate makes one that does wait)"),
    # The driver API by name: every driver function without importing it (cuStreamCreate with
    # CU_STREAM_NON_BLOCKING, a context of its own). The days that build TMA descriptors or
    # load JIT modules (7, 10, 12, 13) call it, so their submissions may.
    (r"(cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*)",
     "reaches any driver function by its name at run time (a stream that need not wait for "
     "the default stream, whose work the benchmark's timed events would miss, among others)"),
    (r"(cudaIpc\w*|cuIpc\w*|cuMemExport\w*|cuMemImport\w*|cudaProfilerStart|cudaProfilerStop|"
     r"cuProfiler\w*|cudaDeviceSetLimit|cudaSetDevice|cudaDeviceReset)",
     "changes the GPU's state for other programs (IPC, profiler, limits, device reset)"),
]
_FORBIDDEN = [(re.compile(rf"^(?:{pattern})(@.*)?$"), why) for pattern, why in FORBIDDEN_CALLS]

# Namespaces and prefixes a submission may never define a symbol in (mangled prefixes).
FOREIGN_DEFINITIONS = [
    (r"^_ZN6course", "the course's harness"),
    (r"^_ZN7testing|^_ZNK7testing", "GoogleTest"),
    (r"^_ZN9benchmark|^_ZNK9benchmark", "Google Benchmark"),
    (r"^_ZNSt|^_ZNKSt|^_ZSt|^_ZNSs|^_ZNSa|^_ZNSi|^_ZNSo", "the C++ standard library"),
    (r"^(cuda|cu[A-Z]|__cuda|nvrtc|cublas|cudnn|cufft|curand)", "CUDA"),
]


@dataclass
class Symbols:
    strong: Set[str] = field(default_factory=set)  # global definitions (T D B R)
    weak: Set[str] = field(default_factory=set)  # weak definitions (W V u): the first one wins
    undefined: Set[str] = field(default_factory=set)


class ToolMissing(Exception):
    pass


def _nm() -> str:
    tool = shutil.which("nm")
    if not tool:
        raise ToolMissing("nm (binutils) is not installed: the object check needs it")
    return tool


def read_symbols(path: str, dynamic: bool = False) -> Symbols:
    argv = [_nm(), "-g"] + (["-D"] if dynamic else []) + [path]
    p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=120)
    if p.returncode != 0 and not p.stdout:
        raise RuntimeError(f"nm {os.path.basename(path)}: {p.stderr.strip()[:300]}")
    s = Symbols()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            s.undefined.add(parts[1])
        elif len(parts) == 3:
            kind, name = parts[1], parts[2]
            if kind in ("U", "w", "v"):
                s.undefined.add(name)
            elif kind in ("W", "V", "u"):
                s.weak.add(name)
            elif kind.isupper():
                s.strong.add(name)
    return s


def demangle(names: Iterable[str]) -> Dict[str, str]:
    names = list(names)
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True,
                       errors="replace", timeout=60)
    out = p.stdout.splitlines()
    return {n: (out[i] if i < len(out) else n) for i, n in enumerate(names)}


@functools.lru_cache(maxsize=None)
def program_symbols(program: str) -> Tuple[frozenset, frozenset]:
    """(every symbol the program defines, every symbol its shared libraries define): what a
    kernel.cu must not define again. The reference test program of a day: the same objects a
    student's program is linked from, the solution's kernel in the student's place."""
    own = read_symbols(program)
    defined = set(own.strong) | set(own.weak)
    libs: Set[str] = set()
    try:
        p = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=60)
        for line in p.stdout.splitlines():
            m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
            if m and os.path.exists(m.group(1)):
                d = read_symbols(m.group(1), dynamic=True)
                libs |= d.strong | d.weak
    except (OSError, subprocess.TimeoutExpired, RuntimeError):
        pass
    return frozenset(defined), frozenset(libs)


@dataclass
class Baseline:
    """What the day's own kernels define and call: what a submission may too."""

    api: Set[str]  # global definitions of the solution's and the starter's kernel.cu
    calls: Set[str]  # their imports
    program_defined: frozenset  # the reference program's symbols (harness, libraries, kernel)
    library_defined: frozenset


_baselines: Dict[Tuple[str, str, str], Baseline] = {}  # by the files' path, mtime and size
_baselines_lock = threading.Lock()


def baseline(solution_lib: str, starter_lib: str, reference_program: str) -> Baseline:
    """The day's Baseline, read once per process and version of the files (a class's students
    share it; threads may ask at once; a file rebuilt since is read again)."""
    def stamp(path: str) -> str:
        try:
            st = os.stat(path)
            return f"{path}:{st.st_mtime_ns}:{st.st_size}"
        except OSError:
            return path

    key = (stamp(solution_lib), stamp(starter_lib), stamp(reference_program))
    with _baselines_lock:
        if key not in _baselines:
            _baselines[key] = _cached_baseline(key, solution_lib, starter_lib, reference_program)
        return _baselines[key]


def _cached_baseline(key: Tuple[str, str, str], solution_lib: str, starter_lib: str,
                     reference_program: str) -> Baseline:
    """The Baseline from a file beside the reference program, written the first time (reading
    the symbols of the reference program takes seconds; every `course check` would pay them).
    The file names the versions it was read from; any other version, or a file that does not
    parse, is read again. A folder that cannot be written costs only the time."""
    import hashlib  # noqa: PLC0415
    import json  # noqa: PLC0415

    digest = hashlib.sha256("\n".join(key).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    path = os.path.join(os.path.dirname(reference_program) or ".",
                        f".objcheck-baseline-{digest}.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("key") == list(key):
            return Baseline(set(doc["api"]), set(doc["calls"]), frozenset(doc["program"]),
                            frozenset(doc["libraries"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    base = _read_baseline(solution_lib, starter_lib, reference_program)
    doc = {"key": list(key), "api": sorted(base.api), "calls": sorted(base.calls),
           "program": sorted(base.program_defined), "libraries": sorted(base.library_defined)}
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
        folder = os.path.dirname(path)
        for name in os.listdir(folder):  # older versions' files
            if name.startswith(".objcheck-baseline-") and name.endswith(".json") and \
                    name != os.path.basename(path):
                os.remove(os.path.join(folder, name))
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass
    return base


def _read_baseline(solution_lib: str, starter_lib: str, reference_program: str) -> Baseline:
    api: Set[str] = set()
    calls: Set[str] = set()
    for lib in (solution_lib, starter_lib):
        if lib and os.path.exists(lib):
            s = read_symbols(lib)
            api |= s.strong | s.weak
            calls |= s.undefined
    defined, libs = program_symbols(reference_program) if os.path.exists(reference_program) \
        else (frozenset(), frozenset())
    return Baseline(api, calls, defined, libs)


def symbol_problems(obj: str, base: Baseline) -> List[str]:
    s = read_symbols(obj)
    problems: List[Tuple[str, str]] = []
    names = demangle(sorted(s.strong | s.weak | s.undefined))
    for name in sorted(s.strong):
        if name in base.api:
            continue
        foreign = next((who for pattern, who in FOREIGN_DEFINITIONS if re.match(pattern, name)),
                       "")
        if foreign:
            problems.append((name, f"kernel.cu defines `{names[name]}`, which belongs to "
                                   f"{foreign}: a submission defines only what lab.h declares "
                                   "(and helpers of its own)"))
        elif name in base.program_defined or name in base.library_defined:
            problems.append((name, f"kernel.cu defines `{names[name]}`, which the test programs "
                                   "already have (the harness's, a library's or the C "
                                   "library's): it would replace theirs. Rename it, or make it "
                                   "`static` / put it in an anonymous namespace"))
    for name in sorted(s.weak):
        if name in base.api:
            continue
        foreign = next((who for pattern, who in FOREIGN_DEFINITIONS[:3] if re.match(pattern, name)),
                       "")
        if foreign and name not in base.program_defined:
            problems.append((name, f"kernel.cu defines `{names[name]}` in the namespace of "
                                   f"{foreign}, which the course does not have: a submission "
                                   "defines only what lab.h declares (and helpers of its own)"))
    for name in sorted(s.undefined):
        if name in base.calls:
            continue
        plain = name.split("@", 1)[0]
        why = next((w for pattern, w in _FORBIDDEN if pattern.match(plain)), "")
        if why:
            problems.append((name, f"kernel.cu calls `{names[name]}`, which {why}: a kernel "
                                   "file of this day has no use for it"))
    return [p for _, p in problems]


_SYSCALL = re.compile(r"\s(syscall|sysenter|int\s+\$0x80)\s*$")


def syscall_problems(obj: str) -> List[str]:
    tool = shutil.which("objdump")
    if not tool:
        return []
    p = subprocess.run([tool, "-d", "--no-show-raw-insn", obj], capture_output=True, text=True,
                       errors="replace", timeout=120)
    function = ""
    found = []
    for line in p.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            function = m.group(1)
        elif _SYSCALL.search(line):
            found.append(function)
    if not found:
        return []
    names = demangle(sorted(set(found)))
    return [f"kernel.cu makes a raw system call (a `syscall` instruction) in `{names[f]}`: not "
            "allowed in a submission" for f in sorted(set(found))]


def check_object(obj: str, base: Baseline) -> List[str]:
    """Every problem of a compiled kernel.cu (an object or a static library), in words."""
    return symbol_problems(obj, base) + syscall_problems(obj)
