"""What the JIT's tests need, and why a test is skipped when it is missing (a skip is never a
pass: tools/unittest_run.py reports the run as skipped); the cache folders they build in; the
comparison the GPU tests make."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cuda_course.jit import JitCache, JitSpec  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def missing_for_render():
    if not _importable("jinja2"):
        return "jinja2 is not installed (pip install -r python/requirements-jit.txt)"
    return None


def missing_for_build(nvcc=False):
    """None when a module can be built and loaded here; else why not."""
    why = missing_for_render()
    if why:
        return why
    if not _importable("tvm_ffi"):
        return "apache-tvm-ffi is not installed (pip install -r python/requirements-jit.txt)"
    from cuda_course.jit import _toolchain

    try:
        _toolchain.find_ninja()
    except RuntimeError:
        return "ninja is not installed (pip install ninja)"
    if nvcc:
        try:
            _toolchain.find_nvcc()
        except RuntimeError:
            return "nvcc is not installed (the CUDA toolkit)"
    elif not (os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")):
        return "no host C++ compiler (c++)"
    return None


def selftest_spec(addend=1):
    """A host-only module (add_constant(x) = x + addend) that builds in seconds."""
    return JitSpec(f"selftest_a{addend}", "selftest.cc.jinja", {"addend": addend},
                   exports=("add_constant", "spec"))


def gpu_missing():
    """None when torch sees a CUDA GPU; else why the GPU tests skip."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    return missing_for_build(nvcc=True)


# ---------------------------------------------------------------------------------------------
# What the GPU tests share (test_jit_gpu_rmsnorm.py, test_jit_gpu_decode.py).


def torch_dtypes():
    """The JIT's dtype names -> torch dtypes (None values without PyTorch)."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return {"float32": None, "float16": None, "bfloat16": None}
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def assert_close(test, got, ref, dtype, what, tolerance=None):
    """The course's comparison (cuda_course.reference.compare, course/compare.h's rules) of a
    `dtype` output with its float64 reference, on the host (numpy: there with PyTorch): a bound
    on the relative L2 error and one per element, |got - ref| <= elem * (|ref| + rms(ref))."""
    from cuda_course import reference  # noqa: PLC0415

    problem = reference.compare(got.double().flatten().cpu().numpy(),
                                ref.double().flatten().cpu().numpy(), dtype, what, tolerance)
    if problem:
        test.fail(problem)


class FreshCacheTest(unittest.TestCase):
    """A test class whose modules go into a cache folder of its own, made before its first test
    (`cls.cache`) and removed after its last."""

    CACHE_PREFIX = "cuda_course_jit_"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix=cls.CACHE_PREFIX)
        cls.cache = JitCache(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class HostCacheTest(unittest.TestCase):
    """A test whose cache (`self.cache()`, host-only modules built by the host C++ compiler for
    sm_90a's key) is a folder of its own, made before each test and removed after it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cuda_course_jit_test_")
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def cache(self):
        from cuda_course import jit

        return jit.JitCache(self.root, arch="sm_90a", toolchain=jit.HostCxxToolchain())

    def entries(self):
        return sorted(p for p in os.listdir(self.root)
                      if os.path.isdir(os.path.join(self.root, p)))
