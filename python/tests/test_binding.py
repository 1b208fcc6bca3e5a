"""The two bindings of libcourse_py: the hand-written C ABI (ctypes) and the same functions
exported with TVM-FFI. Which one cuda_course chooses; that both libraries load on a machine
without a GPU and export the same functions; that a host-only function gives the same answers
through both; that the TVM-FFI library's own checks raise TypeError / ValueError naming the
argument; and, on a GPU, that every operation gives the same bits through both."""

import os
import unittest

from jit_support import REPO  # noqa: F401  (puts python/ on sys.path)

import cuda_course
from cuda_course import _lib

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

try:
    import tvm_ffi  # noqa: F401
except ImportError:
    tvm_ffi = None

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def _both_missing():
    if tvm_ffi is None:
        return "apache-tvm-ffi is not installed (pip install -r python/requirements-jit.txt)"
    if not _lib.library_path().is_file():
        return f"{_lib.library_path()} does not exist: build course_py, set CUDA_COURSE_LIB"
    if not _lib.tvm_ffi_library_path().is_file():
        return (f"{_lib.tvm_ffi_library_path()} does not exist: build course_py_tvm_ffi (CMake "
                "builds it when apache-tvm-ffi is installed at configure time)")
    return None


BOTH_SKIP = _both_missing()
# The entry points of the C ABI, and their TVM-FFI names.
FUNCTIONS = {"course_rmsnorm": "rmsnorm", "course_fused_add_rmsnorm": "fused_add_rmsnorm",
             "course_add_bias_gelu": "add_bias_gelu", "course_softmax": "softmax",
             "course_gemm_bf16": "gemm_bf16", "course_prefill_attention": "prefill_attention",
             "course_prefill_attention_hopper": "prefill_attention_hopper",
             "course_check_mbarrier_timeouts": "check_mbarrier_timeouts",
             "course_rope_qkv": "rope_qkv", "course_silu_and_mul": "silu_and_mul",
             "course_layer_workspace_bytes": "layer_workspace_bytes",
             "course_decoder_layer": "decoder_layer", "course_abi_version": "abi_version"}


class Environment:
    """Sets environment variables for a block and forgets the binding decision around it."""

    def __init__(self, **values):
        self.values = values

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.values}
        for k, v in self.values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _lib.reset_binding()

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _lib.reset_binding()


class Choice(unittest.TestCase):
    def test_ctypes_when_asked(self):
        with Environment(CUDA_COURSE_BINDING="ctypes"):
            self.assertEqual(cuda_course.binding(), "ctypes")

    def test_auto_without_the_tvm_ffi_library_is_ctypes(self):
        with Environment(CUDA_COURSE_BINDING=None, CUDA_COURSE_TVM_FFI_LIB="/nonexistent/x.so"):
            self.assertEqual(cuda_course.binding(), "ctypes")

    def test_a_forced_tvm_ffi_binding_says_what_is_missing(self):
        with Environment(CUDA_COURSE_BINDING="tvm_ffi",
                         CUDA_COURSE_TVM_FFI_LIB="/nonexistent/x.so"):
            self.assertEqual(cuda_course.binding(), "tvm_ffi")
            want = ("/nonexistent/x.so does not exist" if tvm_ffi is not None
                    else "needs apache-tvm-ffi")
            with self.assertRaisesRegex(RuntimeError, want):
                cuda_course.layer_workspace_bytes(256, 2, 1, 128, 256, 1, 16)

    def test_an_unknown_binding_is_an_error(self):
        with Environment(CUDA_COURSE_BINDING="cffi"):
            with self.assertRaisesRegex(RuntimeError, "CUDA_COURSE_BINDING='cffi'"):
                cuda_course.binding()

    def test_the_tvm_ffi_library_is_looked_for_beside_the_c_abi(self):
        with Environment(CUDA_COURSE_LIB="/build/labs/d14_capstone/libcourse_py.so",
                         CUDA_COURSE_TVM_FFI_LIB=None):
            self.assertEqual(str(cuda_course.tvm_ffi_library_path()),
                             "/build/labs/d14_capstone/libcourse_py_tvm_ffi.so")

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_both_bindings_check_arguments_alike_before_loading_anything(self):
        x = np.ones((4, 64), np.float32)
        for name in ("ctypes", "tvm_ffi"):
            with Environment(CUDA_COURSE_BINDING=name, CUDA_COURSE_LIB="/nonexistent/a.so",
                             CUDA_COURSE_TVM_FFI_LIB="/nonexistent/b.so"):
                with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device .*kDLCPU"):
                    cuda_course.rmsnorm(x, x[0])
                with self.assertRaisesRegex(TypeError, r"^gate_up: .*got list"):
                    cuda_course.silu_and_mul([1.0, 2.0])

    @unittest.skipIf(BOTH_SKIP, BOTH_SKIP or "")
    def test_auto_with_both_is_tvm_ffi(self):
        with Environment(CUDA_COURSE_BINDING="auto"):
            self.assertEqual(cuda_course.binding(), "tvm_ffi")


@unittest.skipIf(BOTH_SKIP, BOTH_SKIP or "")
class BothLibraries(unittest.TestCase):
    def test_both_load_without_a_gpu_and_export_the_same_functions(self):
        c_abi = _lib.lib()
        module = _lib.tvm_module()
        for c_name, tvm_name in FUNCTIONS.items():
            self.assertTrue(hasattr(c_abi, c_name), c_name)
            self.assertTrue(module.implements_function(tvm_name), tvm_name)
        self.assertEqual(set(FUNCTIONS) | {"course_last_error"}, set(_lib._SIGNATURES),
                         "a function added to one binding must be added to the other")
        self.assertEqual(module.abi_version(), c_abi.course_abi_version())

    def test_a_host_function_answers_the_same_through_both(self):
        for shape in [(4096, 32, 8, 128, 14336, 1, 512), (4096, 32, 8, 128, 14336, 4, 2048),
                      (256, 2, 1, 64, 512, 3, 17)]:
            self.assertEqual(_lib.lib().course_layer_workspace_bytes(*shape),
                             _lib.tvm_module().layer_workspace_bytes(*shape), shape)

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_the_tvm_ffi_library_checks_its_arguments(self):
        m = _lib.tvm_module()
        f32 = np.ones((4, 64), np.float32)
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype bfloat16, got float32"):
            m.rmsnorm(f32, f32[0], f32, 1e-5)
        with self.assertRaisesRegex(TypeError, r"^a: expected dtype bfloat16"):
            m.gemm_bf16(f32, f32, f32)
        with self.assertRaisesRegex(TypeError, r"^gate_up: expected dtype bfloat16"):
            m.silu_and_mul(f32, f32)
        with self.assertRaisesRegex(TypeError, r"^q: expected dtype bfloat16"):
            m.prefill_attention(f32, f32, f32, f32, f32, f32, 4, True, 0.1)
        with self.assertRaisesRegex(TypeError, r"^q: expected dtype bfloat16"):
            m.prefill_attention_hopper(f32, f32, f32, f32, f32, f32, 4, True, 0.1)
        with self.assertRaisesRegex(TypeError, r"^qkv: expected dtype bfloat16"):
            m.rope_qkv(f32, f32, f32, f32, f32, 1e4)
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype bfloat16"):
            m.decoder_layer(*[f32] * 10, 1, 4, 2, 1, 1e-5, 1e4, None)
        with self.assertRaisesRegex(TypeError, "Expected 4 but got 1"):
            m.rmsnorm(f32)

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_days_2_and_5_take_three_dtypes_alike_through_both(self):
        f32, i32 = np.ones((4, 64), np.float32), np.ones((4, 64), np.int32)
        m = _lib.tvm_module()
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype float32, float16 or bfloat16, "
                                               r"got int32"):
            m.add_bias_gelu(i32, i32[0], i32)
        with self.assertRaisesRegex(TypeError, r"^bias: expected dtype float32"):
            m.add_bias_gelu(f32, i32[0], f32)
        with self.assertRaisesRegex(ValueError, r"^bias: dimension 0 must be x.shape\[1\]"):
            m.add_bias_gelu(f32, f32[0, :63], f32.copy())
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype float32, float16 or bfloat16"):
            m.softmax(i32, i32.copy())
        with self.assertRaisesRegex(ValueError, r"^out: must not overlap x"):
            m.softmax(f32, f32)
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            m.softmax(f32, f32.copy())
        # The C ABI's checks, called directly (cuda_course checks in Python before either).
        from cuda_course import _dlpack

        c_abi = _lib.lib()
        x = _dlpack.borrow(i32, "x", require_cuda=False)
        self.assertEqual(c_abi.course_softmax(x.pointer, x.pointer, None), 1)
        self.assertIn(b"x: wrong dtype", c_abi.course_last_error())
        x = _dlpack.borrow(f32, "x", require_cuda=False)
        self.assertEqual(c_abi.course_add_bias_gelu(x.pointer, x.pointer, x.pointer, None), 1)
        self.assertIn(b"x: must be on a CUDA device", c_abi.course_last_error())


def _gpu_missing():
    if BOTH_SKIP:
        return BOTH_SKIP
    if torch is None:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    return None


@unittest.skipIf(_gpu_missing(), _gpu_missing() or "")
class SameBitsThroughBoth(unittest.TestCase):
    def run_both(self, fn):
        outs = {}
        for name in ("ctypes", "tvm_ffi"):
            with Environment(CUDA_COURSE_BINDING=name):
                self.assertEqual(cuda_course.binding(), name)
                result = fn()
                torch.cuda.synchronize()
                outs[name] = result if isinstance(result, tuple) else (result,)
        for a, b in zip(outs["ctypes"], outs["tvm_ffi"]):
            self.assertTrue(torch.equal(a, b), "the same kernel through both bindings")

    def test_every_operation(self):
        g = torch.Generator(device="cuda").manual_seed(0)

        def rnd(*shape):
            return (torch.rand(*shape, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)

        x, w = rnd(33, 512), rnd(512)
        self.run_both(lambda: cuda_course.rmsnorm(x, w))
        r = rnd(33, 512)
        self.run_both(lambda: (cuda_course.fused_add_rmsnorm(x, r.clone(), w),))
        a, b = rnd(128, 256), rnd(64, 256)
        self.run_both(lambda: cuda_course.gemm(a, b))
        gu = rnd(17, 512)
        self.run_both(lambda: cuda_course.silu_and_mul(gu))
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            xf, bf = rnd(9, 264).to(dtype), rnd(264).to(dtype)
            self.run_both(lambda: cuda_course.add_bias_gelu(xf, bf))
            self.run_both(lambda: cuda_course.softmax(xf))
        qkv = rnd(40, (4 + 2 * 2) * 64)
        pos = torch.arange(40, dtype=torch.int32, device="cuda")
        self.run_both(lambda: cuda_course.rope_qkv(qkv, pos, 4, 2))
        q, k, v = rnd(40, 4, 64), rnd(40, 2, 64), rnd(40, 2, 64)
        cu = torch.tensor([0, 15, 40], dtype=torch.int32, device="cuda")
        self.run_both(lambda: cuda_course.prefill_attention(q, k, v, cu, 25))


if __name__ == "__main__":
    unittest.main()
