"""The on-disk cache of compiled modules, with Day 13's rules (lesson 13 §3-§5):

* the key is the SHA-256 of length-prefixed fields: a format tag, the rendered source, the
  compiler's exact version, the options that change code, the architecture and TVM-FFI's version.
  Change any of them and the entry is another one; the old one stays until it is cleared;
* an entry is a folder, <root>/<spec name>-<key[:16]>/, holding kernel.cu (the rendered source),
  build.ninja, module.so and entry.json (the key, its ingredients, module.so's size and
  SHA-256). Before an entry is used, entry.json must parse, name this key, and match module.so's
  size and hash; anything else (a truncated module, a flipped byte, a missing file, an older
  format) makes it a broken entry, which is rebuilt, never loaded;
* writes are atomic: a build happens in a fresh temporary folder in the same root, every file
  is fsynced, and one os.rename makes the finished folder the entry (the root is fsynced after).
  A reader sees no entry, or a whole one;
* concurrent first use compiles once: a builder holds an exclusive fcntl lock on
  <root>/<entry>.lock, and checks the entry again once it has it, so the processes that waited
  find the entry the first one built. The kernel releases the lock of a process that dies, so a
  crash never leaves the cache locked. (Lock files are left in place on purpose: deleting one
  that another process holds would let a third lock a new file of the same name.)

The root is `root=`, else $CUDA_COURSE_JIT_CACHE, else $XDG_CACHE_HOME/cuda-course/jit, else
~/.cache/cuda-course/jit. Deleting it by hand is safe while no process is building.
"""

import errno
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ._toolchain import NvccToolchain, normalize_arch

KEY_FORMAT = "cuda-course-jit-key-v1"
ENTRY_FORMAT = "cuda-course-jit-entry-v1"
MANIFEST = "entry.json"


class CompileError(RuntimeError):
    """nvcc (through ninja) failed; the message holds its output and the entry's folder name."""


def default_root():
    env = os.environ.get("CUDA_COURSE_JIT_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cuda-course" / "jit"


def cache_key(fields):
    """SHA-256 (hex) of KEY_FORMAT and the (name, value) fields, each length-prefixed, so that
    no two different field lists serialise to the same bytes (lesson 13 §3)."""
    h = hashlib.sha256()

    def put(text):
        data = text.encode("utf-8")
        h.update(b"%d:" % len(data) + data + b"\n")

    put(KEY_FORMAT)
    put(str(len(fields)))
    for name, value in fields:
        put(name)
        put(value)
    return h.hexdigest()


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_file(path, data):
    """Writes and fsyncs a new file (in a private temporary folder: no reader sees it)."""
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _FileLock:
    """An exclusive fcntl.flock on a file, for `with`. Excludes other processes and other
    threads of this one (each acquisition opens the file anew: flock belongs to the open file)."""

    def __init__(self, path):
        self.path = path
        self.fd = None
        self.waited = False

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            self.waited = True  # another process is building this entry: wait for it
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


class Entry:
    """Where one key's entry lives and what it is made of."""

    def __init__(self, root, spec, key, fields, arch):
        self.root = Path(root)
        self.key = key
        self.fields = fields
        self.arch = arch
        self.name = f"{spec.name}-{key[:16]}"
        self.path = self.root / self.name
        self.lock_path = self.root / f"{self.name}.lock"

    def module_path(self, toolchain):
        return self.path / toolchain.module_name


class JitCache:
    """Compiled modules by key: in memory (a dict, per process), on disk (the entries), or built.

        cache = JitCache(root, arch="sm_90a")
        module = cache.load(spec)          # a tvm_ffi.Module

    `stats` counts what happened in this process: compiles, disk_hits (a whole entry loaded),
    memory_hits, broken (entries found broken, then rebuilt) and waited (builds that waited on
    another process's lock)."""

    def __init__(self, root=None, arch=None, toolchain=None):
        self.root = Path(root) if root is not None else default_root()
        self.arch = None if arch is None else normalize_arch(arch)
        self._toolchain = toolchain
        self._modules = {}
        self._mutex = threading.Lock()
        self.stats = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "broken": 0,
                      "waited": 0}

    @property
    def toolchain(self):
        if self._toolchain is None:
            self._toolchain = NvccToolchain()
        return self._toolchain

    def resolve_arch(self, arch=None):
        if arch is not None:
            return normalize_arch(arch)
        if self.arch is not None:
            return self.arch
        from ._toolchain import device_arch

        return device_arch()

    def entry(self, spec, arch=None, source=None):
        """The Entry of `spec` for `arch` (rendering it unless `source` is given)."""
        arch = self.resolve_arch(arch)
        source = spec.render() if source is None else source
        fields = [("source", source)] + self.toolchain.key_fields(arch)
        return Entry(self.root, spec, cache_key(fields), fields, arch)

    def check(self, entry):
        """None when the entry on disk is whole and is this key's, else why not (a string)."""
        manifest_path = entry.path / MANIFEST
        try:
            with open(manifest_path) as f:
                manifest = json.load(f)
        except FileNotFoundError:
            return "no entry"
        except (OSError, ValueError) as e:
            return f"{MANIFEST} unreadable: {e}"
        if not isinstance(manifest, dict) or manifest.get("format") != ENTRY_FORMAT:
            return f"{MANIFEST}: not format {ENTRY_FORMAT}"
        if manifest.get("key") != entry.key:
            return f"{MANIFEST}: another key"
        module = entry.module_path(self.toolchain)
        try:
            size = module.stat().st_size
        except FileNotFoundError:
            return f"{module.name} missing"
        if size != manifest.get("size"):
            return f"{module.name}: {size} bytes, the entry says {manifest.get('size')}"
        if _sha256_file(module) != manifest.get("sha256"):
            return f"{module.name}: SHA-256 differs from the entry's"
        return None

    def load(self, spec, arch=None):
        """The module of `spec` compiled for `arch` (default: the cache's, else the current
        GPU's): from memory, from a whole disk entry, or compiled now."""
        entry = self.entry(spec, arch)
        with self._mutex:
            module = self._modules.get(entry.key)
            if module is not None:
                self.stats["memory_hits"] += 1  # (the mutex is held)
                return module
        module = self._load_or_build(spec, entry)
        with self._mutex:
            self._modules.setdefault(entry.key, module)
            return self._modules[entry.key]

    def build_all(self, specs, arch=None, jobs=None):
        """Makes sure every spec of `specs` has a whole entry on disk for `arch`, compiling the
        missing ones side by side (`jobs` at once, default: one per CPU core; nvcc uses one
        core per compile). Loads nothing: a later load() finds the entry. Ahead of a benchmark
        or a test run, this turns N compiles of ~7 s one after the other into about N / jobs
        of them. Returns the number of compiles it did; the first failure is raised once all
        have finished."""
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        arch = self.resolve_arch(arch)
        entries = {}
        for spec in specs:  # each key once, in the order given
            entry = self.entry(spec, arch)
            entries.setdefault(entry.key, (spec, entry))
        todo = [(s, e) for s, e in entries.values() if self.check(e) is not None]
        if not todo:
            return 0
        before = self.stats["compiles"]
        workers = max(1, min(len(todo), jobs or os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._ensure_built, s, e) for s, e in todo]
        for f in futures:
            f.result()  # re-raises a CompileError
        return self.stats["compiles"] - before

    def _count(self, what):
        with self._mutex:
            self.stats[what] += 1

    def _ensure_built(self, spec, entry):
        """The entry whole on disk, built under its lock if it was not (another process or
        thread building it meanwhile: waited for, then found). True when this call built it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with _FileLock(entry.lock_path) as lock:
            if lock.waited:
                self._count("waited")
            problem = self.check(entry)  # the builder we waited for may have made it
            if problem is None:
                return False
            if problem != "no entry":
                self._count("broken")
            self._build(spec, entry)
            self._count("compiles")
            return True

    def _load_or_build(self, spec, entry):
        if self.check(entry) is None or not self._ensure_built(spec, entry):
            module = self._open(spec, entry)
            self._count("disk_hits")
            return module
        return self._open(spec, entry)

    def _open(self, spec, entry):
        try:
            import tvm_ffi
        except ImportError as e:
            raise ImportError("cuda_course.jit loads modules with TVM-FFI: pip install "
                              "apache-tvm-ffi") from e
        module = tvm_ffi.load_module(str(entry.module_path(self.toolchain)))
        for name in spec.exports:
            if not module.implements_function(name):
                raise RuntimeError(f"cuda_course.jit: {entry.path} does not export {name!r}")
        if module.implements_function("spec") and module.spec() != spec.spec_json():
            raise RuntimeError(f"cuda_course.jit: {entry.path} was built for {module.spec()}, "
                               f"not {spec.spec_json()}")
        return module

    def _build(self, spec, entry):
        """Builds the entry in a temporary folder of the root and renames it into place. Called
        with the entry's lock held."""
        toolchain = self.toolchain
        source = dict(entry.fields)["source"]
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{entry.name}.", dir=self.root))
        try:
            (tmp / toolchain.source_name).write_text(source)
            (tmp / "build.ninja").write_text(toolchain.ninja_file(entry.arch))
            start = time.perf_counter()
            done = subprocess.run([toolchain.ninja, "-C", str(tmp)], capture_output=True,
                                  text=True)
            seconds = time.perf_counter() - start
            if done.returncode != 0:
                output = (done.stdout + done.stderr)[-6000:]
                raise CompileError(f"cuda_course.jit: building {entry.name} ({spec.template}, "
                                   f"{entry.arch}) failed:\n{output}")
            module = tmp / toolchain.module_name
            _fsync_path(module)
            manifest = {
                "format": ENTRY_FORMAT,
                "key": entry.key,
                "spec": json.loads(spec.spec_json()),
                "arch": entry.arch,
                "fields": {name: value for name, value in entry.fields if name != "source"},
                "size": module.stat().st_size,
                "sha256": _sha256_file(module),
                "build_seconds": round(seconds, 3),
            }
            _write_file(tmp / MANIFEST, json.dumps(manifest, indent=2) + "\n")
            _fsync_path(tmp)
            if entry.path.exists():  # a broken entry: out of the way, then deleted
                trash = Path(tempfile.mkdtemp(prefix=f".broken-{entry.name}.", dir=self.root))
                os.rename(entry.path, trash / "entry")
                shutil.rmtree(trash, ignore_errors=True)
            os.rename(tmp, entry.path)
            _fsync_path(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def clear(self):
        """Deletes every entry and leftover temporary folder (not the lock files: see above)."""
        if not self.root.is_dir():
            return
        for child in self.root.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
        with self._mutex:
            self._modules.clear()
