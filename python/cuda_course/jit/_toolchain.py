"""The compiler side of the JIT: which nvcc, which architecture, which flags, and the build.ninja
that turns a rendered source into a TVM-FFI module (a shared library).

Two rules, compile then link, as FlashInfer writes them (flashinfer/jit/cpp_ext.py):

    kernel.cu --nvcc -c--> kernel.o --nvcc -shared--> module.so   (links libtvm_ffi)

ninja runs them; for one source it adds little over calling nvcc twice, but it is what a
multi-source module (FlashInfer's are) needs, and `ninja -C <entry> -t commands` shows exactly
what was run.
"""

import functools
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

DEFAULT_TEST_ARCH = "sm_90a"  # what the tests compile for when there is no GPU to ask

_ARCH = re.compile(r"^(?:sm_|compute_)?(\d{2,3})([af]?)$")


def normalize_arch(arch):
    """'sm_90a', '90a', 'compute_90a', (9, 0) or '9.0' -> 'sm_90a' (and 'sm_80' for 8.0).
    Compute capability 9.0 gets the 'a' variant, as the course's CMake does (sm_90a: wgmma and
    setmaxnreg allowed). ValueError for anything else."""
    if isinstance(arch, (tuple, list)) and len(arch) == 2:
        major, minor = int(arch[0]), int(arch[1])
        return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
    text = str(arch).strip()
    if re.match(r"^\d+\.\d+$", text):
        return normalize_arch(tuple(text.split(".")))
    m = _ARCH.match(text)
    if not m:
        raise ValueError(f"arch: expected e.g. 'sm_90a', 'sm_80', '90a' or (9, 0), got {arch!r}")
    return f"sm_{m.group(1)}{m.group(2)}"


def device_arch(device=None):
    """The architecture of a CUDA device (the current one by default), asked of PyTorch, else of
    nvidia-smi. RuntimeError saying to pass arch= when neither can tell (no GPU)."""
    try:
        import torch

        if torch.cuda.is_available():
            index = torch.cuda.current_device() if device is None else device
            return normalize_arch(torch.cuda.get_device_capability(index))
    except ImportError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            caps = [line.strip() for line in out.stdout.splitlines() if line.strip()]
            if out.returncode == 0 and caps:
                return normalize_arch(caps[0 if device is None else int(device)])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            pass
    raise RuntimeError(
        "cuda_course.jit: no CUDA GPU found to compile for (neither PyTorch nor nvidia-smi "
        "sees one): pass arch='sm_90a' (or the architecture you want) explicitly"
    )


def find_nvcc():
    """$CUDA_COURSE_NVCC, $CUDA_HOME/bin/nvcc, nvcc on PATH, /usr/local/cuda/bin/nvcc."""
    candidates = [os.environ.get("CUDA_COURSE_NVCC")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(os.path.join(os.environ[var], "bin", "nvcc"))
    candidates += [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise RuntimeError(
        "cuda_course.jit: nvcc not found (tried $CUDA_COURSE_NVCC, $CUDA_HOME/bin, PATH and "
        "/usr/local/cuda/bin): install the CUDA toolkit or set CUDA_COURSE_NVCC"
    )


def find_ninja():
    """ninja on PATH, else the one the `ninja` pip package ships."""
    found = shutil.which("ninja")
    if found:
        return found
    try:
        import ninja  # the PyPI package

        path = Path(ninja.BIN_DIR) / "ninja"
        if path.is_file():
            return str(path)
    except ImportError:
        pass
    raise RuntimeError(
        "cuda_course.jit builds with ninja, which was not found: pip install ninja "
        "(or apt-get install ninja-build)"
    )


@functools.lru_cache(maxsize=None)
def _compiler_version(path, mtime):
    del mtime  # part of the cache key of this function only: a reinstalled compiler is re-asked
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"cuda_course.jit: {path} --version failed: {out.stderr.strip()}")
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    # nvcc: "... release 13.0, V13.0.88" and "Build cuda_13.0.r13.0/compiler.36424714_0". The
    # build line names the exact compiler; both go into the key.
    keep = [line for line in lines if "release" in line or line.startswith("Build")]
    return " | ".join(keep or lines[:2])


def compiler_version(path):
    return _compiler_version(path, os.stat(path).st_mtime_ns)


def tvm_ffi_info():
    """(version, include directories, library directory) of the installed apache-tvm-ffi."""
    try:
        import tvm_ffi
        import tvm_ffi.libinfo as libinfo
    except ImportError as e:
        raise ImportError(
            "cuda_course.jit loads its modules through TVM-FFI, which is not installed: "
            "pip install apache-tvm-ffi (or: pip install -r python/requirements-jit.txt)"
        ) from e
    includes = []
    for p in (libinfo.find_include_path(), libinfo.find_dlpack_include_path()):
        if p not in includes:
            includes.append(p)
    libdir = os.path.dirname(libinfo.find_libtvm_ffi())
    return tvm_ffi.__version__, includes, libdir


def _ninja_path(p):
    """A path as ninja reads it in a build line ($ escapes spaces, colons and itself)."""
    return str(p).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_var(args):
    """A list of arguments as the value of a ninja variable (a shell command line piece)."""
    return " ".join(shlex.quote(str(a)) for a in args).replace("$", "$$")


class NvccToolchain:
    """nvcc for one architecture. `key_fields(arch)` is what the compiled module depends on
    besides the source: the compiler's exact version, the options that change code (not the
    include directories or output paths, which only say where things are), the architecture and
    TVM-FFI's version (its headers are compiled into the module)."""

    source_name = "kernel.cu"
    module_name = "module.so"

    def __init__(self, nvcc=None, ninja=None, extra_flags=None):
        self.nvcc = nvcc or find_nvcc()
        self.ninja = ninja or find_ninja()
        env_flags = shlex.split(os.environ.get("CUDA_COURSE_JIT_NVCC_FLAGS", ""))
        self.extra_flags = list(extra_flags or []) + env_flags

    def code_flags(self, arch):
        arch = normalize_arch(arch)
        number = arch[len("sm_"):]
        return ["-std=c++17", "-O3", "-Xcompiler=-fPIC,-fvisibility=hidden",
                f"-gencode=arch=compute_{number},code={arch}"] + self.extra_flags

    def key_fields(self, arch):
        version, _, _ = tvm_ffi_info()
        return [
            ("compiler", compiler_version(self.nvcc)),
            ("options", "\n".join(self.code_flags(arch))),
            ("arch", normalize_arch(arch)),
            ("tvm_ffi", version),
        ]

    def ninja_file(self, arch):
        """The build.ninja of one entry (paths relative to the entry's folder)."""
        _, includes, libdir = tvm_ffi_info()
        return "\n".join([
            "# Written by cuda_course.jit. Rebuild by hand: ninja -C <this folder>",
            "ninja_required_version = 1.3",
            f"nvcc = {_ninja_var([self.nvcc])}",
            f"cuda_flags = {_ninja_var(self.code_flags(arch))}",
            f"includes = {_ninja_var(['-I' + p for p in includes])}",
            f"ldflags = {_ninja_var(['-shared', '-L' + libdir, '-ltvm_ffi'])}",
            "",
            "rule compile",
            "  command = $nvcc $cuda_flags $includes -c $in -o $out",
            f"  description = nvcc -c $in ({normalize_arch(arch)})",
            "rule link",
            "  command = $nvcc $in $ldflags -o $out",
            "  description = link $out",
            "",
            f"build kernel.o: compile {_ninja_path(self.source_name)}",
            f"build {_ninja_path(self.module_name)}: link kernel.o",
            f"default {_ninja_path(self.module_name)}",
            "",
        ])


class HostCxxToolchain(NvccToolchain):
    """The host C++ compiler instead of nvcc, for a template with no device code: the cache's
    tests build real TVM-FFI modules with it in a few seconds. The architecture is still part
    of the key (so the tests can see a new architecture make a new entry) but changes nothing."""

    source_name = "module.cc"

    def __init__(self, cxx=None, ninja=None):
        self.nvcc = cxx or os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
        if not self.nvcc:
            raise RuntimeError("cuda_course.jit: no host C++ compiler (c++ or $CXX) found")
        self.ninja = ninja or find_ninja()
        self.extra_flags = []

    def code_flags(self, arch):
        return ["-std=c++17", "-O1", "-fPIC", "-fvisibility=hidden"]

    def ninja_file(self, arch):
        _, includes, libdir = tvm_ffi_info()
        return "\n".join([
            "ninja_required_version = 1.3",
            f"cxx = {_ninja_var([self.nvcc])}",
            f"flags = {_ninja_var(self.code_flags(arch))}",
            f"includes = {_ninja_var(['-I' + p for p in includes])}",
            f"ldflags = {_ninja_var(['-shared', '-L' + libdir, '-ltvm_ffi'])}",
            "rule compile",
            "  command = $cxx $flags $includes -c $in -o $out",
            "rule link",
            "  command = $cxx $in $ldflags -o $out",
            f"build module.o: compile {_ninja_path(self.source_name)}",
            f"build {_ninja_path(self.module_name)}: link module.o",
            f"default {_ninja_path(self.module_name)}",
            "",
        ])
