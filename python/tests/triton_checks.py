"""What the Triton tests share (test_triton.py and test_triton_{gelu,softmax,rmsnorm}.py): the
inputs, the float64 references, one check (`problem`) and the reasons a class cannot run here.
Not a test file itself. The GPU tests of the Triton kernels are one file per operation so that
ctest runs them side by side: each first call of a Triton kernel with a new shape compiles every
configuration of its autotuner, and those compiles, not the GPU, are what the tests spend their
time on."""

import os
import sys

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, PYTHON_DIR)
# The autotuner times each configuration 2 ms instead of 100 on every new shape: these tests
# check the answer of whichever wins (and of every configuration, assert_every_configuration).
os.environ.setdefault("CUDA_COURSE_TRITON_TUNE_MS", "2")

import cuda_course  # noqa: E402
from cuda_course import triton_ops  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

try:
    import triton
except ImportError:  # pragma: no cover
    triton = None

if np is not None:
    from cuda_course import reference
else:  # pragma: no cover
    reference = None

DTYPES = ("float32", "float16", "bfloat16")
EPS = 1e-5
# (rows, cols): one row, one column, a warp's worth and one past it, primes, 4096 and 8192 (16-byte
# rows), a width past the registers of the Triton softmax (streamed three times).
SHAPES = [(1, 1), (1, 8192), (3, 31), (2, 33), (7, 7919), (33, 1000), (257, 4096), (3, 20011)]
MAX_HIDDEN = triton_ops.MAX_HIDDEN
FEW_ELEMENTS = 16  # test_d02.cu's kFewElements


def needs(*what):
    """Why a test class cannot run here, or None. what: 'numpy', 'torch', 'triton', 'gpu',
    'library'."""
    if "numpy" in what and np is None:
        return "numpy is not installed"
    if "torch" in what and torch is None:
        return "PyTorch is not installed (python3 -m pip install torch)"
    if "triton" in what and triton is None:
        return "Triton is not installed (it comes with PyTorch's Linux wheels; pip install triton)"
    if "gpu" in what and not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    if "library" in what and not cuda_course.library_path().is_file():
        return (f"{cuda_course.library_path()} does not exist: build the course_py target and set "
                "CUDA_COURSE_LIB")
    return None


# ---------------------------------------------------------------------------------------------
# One check, shared by the GPU tests and the interpreter's subprocess.


def make_inputs(op, dtype, rows, cols, seed, device):
    """Seeded inputs of `op`, rounded to `dtype`, on `device` (drawn on the CPU, so that a seed
    gives the same values on every device)."""
    g = torch.Generator().manual_seed(seed)
    t = getattr(torch, dtype)

    def uniform(shape, lo, hi):
        return torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo

    if op == "add_bias_gelu":
        # As test_d02.cu: x in [-3, 3) and a bias in [-1, 1), GeLU's curved part and both tails;
        # an output of fewer than 16 elements has no rms to measure the cancellation of
        # 0.5 v (1 + tanh(u)) for v << 0 against (lesson 2 §6.4): sums in [-1, 3) there.
        few = rows * cols < FEW_ELEMENTS
        x = uniform((rows, cols), -0.5 if few else -3.0, 2.0 if few else 3.0)
        bias = uniform((cols,), -0.5 if few else -1.0, 1.0)
        return [x.to(t).to(device), bias.to(t).to(device)]
    if op == "softmax":
        return [(torch.randn(rows, cols, generator=g, dtype=torch.float64) * 4).to(t).to(device)]
    x = torch.randn(rows, cols, generator=g, dtype=torch.float64)
    w = torch.rand(cols, generator=g, dtype=torch.float64) + 0.5
    return [x.to(t).to(device), w.to(t).to(device)]


def reference_of(op, inputs):
    values = [t.double().cpu().numpy() for t in inputs]
    if op == "add_bias_gelu":
        return reference.add_bias_gelu(*values)
    if op == "softmax":
        return reference.softmax_rows(*values)
    return reference.rmsnorm(*values, EPS)


def call(fn, op, inputs, out, **kwargs):
    if op == "rmsnorm":
        return fn(*inputs, EPS, out=out, **kwargs)
    return fn(*inputs, out=out, **kwargs)


def problem(fn, op, dtype, rows, cols, seed, device, inputs=None, **kwargs):
    """None when fn (a cuda_course or triton_ops function) computes `op` right on seeded inputs,
    else what is wrong. The output is poisoned with NaN first."""
    if inputs is None:
        inputs = make_inputs(op, dtype, rows, cols, seed, device)
    out = torch.full((rows, cols), float("nan"), dtype=inputs[0].dtype, device=device)
    got = call(fn, op, inputs, out, **kwargs)
    if got is not out:
        return "the function did not return the out= tensor it was given"
    what = f"{op} {dtype} {rows}x{cols}" + (f" {kwargs}" if kwargs else "")
    return reference.compare(out.double().cpu().numpy(), reference_of(op, inputs), dtype, what)


def masked_softmax_inputs(dtype, device):
    """Rows with masked (-inf) entries, a fully masked row, a NaN and a +inf: the answers of
    course/reference/softmax.h (0, a row of NaN, a row of NaN, a row of NaN)."""
    x = make_inputs("softmax", dtype, 5, 300, 7, "cpu")[0]
    x[0, ::3] = -float("inf")
    x[1, :] = -float("inf")
    x[2, 17] = float("nan")
    x[3, 299] = float("inf")
    return [x.to(device)]


# ---------------------------------------------------------------------------------------------
# The GPU checks.


class Checks:
    """Runs `problem` over dtypes and shapes; subclasses say which functions."""

    device = "cuda"

    def assert_right(self, fn, op, dtypes=DTYPES, shapes=SHAPES, seed=1234, **kwargs):
        for dtype in dtypes:
            for i, (rows, cols) in enumerate(shapes):
                if op == "rmsnorm" and cols > MAX_HIDDEN:
                    continue
                with self.subTest(op=op, dtype=dtype, shape=(rows, cols), **kwargs):
                    message = problem(fn, op, dtype, rows, cols, seed + i, self.device, **kwargs)
                    self.assertIsNone(message, message)

    def assert_masked_softmax(self, fn):
        for dtype in DTYPES:
            with self.subTest(dtype=dtype):
                inputs = masked_softmax_inputs(dtype, self.device)
                message = problem(fn, "softmax", dtype, 5, 300, 0, self.device, inputs=inputs)
                self.assertIsNone(message, message)

    def assert_every_configuration(self, op, shapes=((1, 1), (7, 7919), (33, 1000)),
                                   dtypes=("float32", "bfloat16")):
        """Every configuration of `op`'s autotuner on its own (not only the one that wins)."""
        fn = getattr(triton_ops, "softmax" if op == "softmax_streamed" else op)
        checked = "softmax" if op == "softmax_streamed" else op
        for config in range(len(triton_ops.configs(op))):
            self.assert_right(fn, checked, dtypes=dtypes, shapes=list(shapes), config=config)


CUDA_SKIP = needs("numpy", "torch", "gpu", "library")
TRITON_SKIP = needs("numpy", "torch", "triton", "gpu")
