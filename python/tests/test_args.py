"""Argument checks of cuda_course that need neither a GPU nor PyTorch: a numpy array exposes
__dlpack__ on the CPU, which is enough to see the structures read right and the errors said."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cuda_course  # noqa: E402
from cuda_course import _dlpack  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


class NotATensor:
    pass


class FakeCpuTensor:
    """Something with __dlpack__ that is not on a GPU (a numpy array behind it)."""

    def __init__(self, array):
        self.array = array
        self.shape = array.shape

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class NonDlpackArguments(unittest.TestCase):
    def test_a_non_tensor_is_a_type_error_naming_the_argument(self):
        with self.assertRaisesRegex(TypeError, r"^x: expected a tensor that supports DLPack"):
            cuda_course.rmsnorm(NotATensor(), NotATensor())
        with self.assertRaisesRegex(TypeError, r"^gate_up: .*got list"):
            cuda_course.silu_and_mul([1.0, 2.0])

    def test_the_stream_argument_follows_the_protocol(self):
        self.assertEqual(_dlpack.stream_argument(0), 1, "0 is not allowed: legacy stream is 1")
        self.assertEqual(_dlpack.stream_argument(None), 1)
        self.assertEqual(_dlpack.stream_argument(0x7F00), 0x7F00)


@unittest.skipIf(np is None or not hasattr(getattr(np, "ndarray", object), "__dlpack__"),
                 "numpy with __dlpack__ (1.22 or later) is not installed")
class CpuDlpackArguments(unittest.TestCase):
    def test_a_cpu_tensor_must_be_on_a_cuda_device(self):
        x = FakeCpuTensor(np.ones((4, 8), dtype=np.float32))
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device .*kDLCPU"):
            cuda_course.rmsnorm(x, x)
        with self.assertRaisesRegex(ValueError, r"^a: must be on a CUDA device"):
            cuda_course.gemm(x, x)
        with self.assertRaisesRegex(ValueError, r"^gate_up: must be on a CUDA device"):
            cuda_course.silu_and_mul(x)
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            cuda_course.add_bias_gelu(x, x)
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            cuda_course.softmax(x)
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            cuda_course.decoder_layer(x, x, {}, 1, 4, 2, 2)

    def test_the_dltensor_is_read_without_a_copy(self):
        a = np.arange(15, dtype=np.float32).reshape(3, 5)
        arg = _dlpack.borrow(a, "a", require_cuda=False)
        self.assertEqual(arg.device_type, _dlpack.KDL_CPU)
        self.assertEqual(arg.dtype, "float32")
        self.assertEqual(arg.shape, (3, 5))
        self.assertTrue(arg.is_contiguous())
        self.assertEqual(arg.data, a.ctypes.data, "the pointer must be the array's own memory")
        i = _dlpack.borrow(np.zeros(7, dtype=np.int32), "i", require_cuda=False)
        self.assertEqual((i.dtype, i.shape), ("int32", (7,)))

    def test_wrong_dtype_shape_and_layout_are_named(self):
        a = np.zeros((3, 6), dtype=np.float32)
        arg = _dlpack.borrow(a, "weight", require_cuda=False)
        with self.assertRaisesRegex(TypeError, r"^weight: expected dtype bfloat16, got float32"):
            _dlpack.check(arg, "bfloat16")
        with self.assertRaisesRegex(ValueError, r"^weight: expected 1 dimensions, got 2"):
            _dlpack.check(arg, "float32", 1)
        with self.assertRaisesRegex(ValueError, r"^weight: expected shape \(3, 5\), got \(3, 6\)"):
            _dlpack.check(arg, "float32", 2, (3, 5))
        strided = _dlpack.borrow(a[:, ::2], "w_o", require_cuda=False)
        with self.assertRaisesRegex(ValueError, r"^w_o: must be contiguous"):
            _dlpack.check(strided, "float32", 2)

    def test_days_2_and_5_take_float32_float16_and_bfloat16(self):
        from cuda_course import ops

        for dtype in (np.float32, np.float16):
            arg = _dlpack.borrow(np.zeros((2, 3), dtype), "x", require_cuda=False)
            self.assertEqual(ops._float_dtype(arg), np.dtype(dtype).name)
        for dtype in (np.float64, np.int32):
            arg = _dlpack.borrow(np.zeros((2, 3), dtype), "x", require_cuda=False)
            with self.assertRaisesRegex(TypeError, r"^x: expected dtype float32, float16 or "
                                                   r"bfloat16, got " + np.dtype(dtype).name):
                ops._float_dtype(arg)

    def test_softmax_refuses_an_out_that_overlaps_x(self):
        from cuda_course import ops

        a = np.zeros((4, 8), np.float32)

        def arg(view):
            return _dlpack.borrow(view, "t", require_cuda=False)

        self.assertTrue(ops._overlap(arg(a), arg(a)), "the same tensor")
        self.assertTrue(ops._overlap(arg(a[1:3]), arg(a[2:4])), "rows 2 of both")
        self.assertFalse(ops._overlap(arg(a[0:2]), arg(a[2:4])), "adjacent rows")
        self.assertFalse(ops._overlap(arg(a[0:0]), arg(a)), "an empty tensor overlaps nothing")


if __name__ == "__main__":
    unittest.main()
