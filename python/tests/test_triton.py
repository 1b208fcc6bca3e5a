"""Triton beside CUDA (lesson 14 §9): Day 2's add-bias + GeLU, Day 5's row softmax and Day 6's
RMSNorm, each written in Triton (cuda_course.triton_ops) and each of the CUDA solutions the
package calls (cuda_course.add_bias_gelu, softmax, rmsnorm), checked against the same float64
references with the course's tolerances (cuda_course.reference: course/compare.h's rules).

Inputs are seeded, outputs poisoned with NaN before every call (an element never written fails
as NaN), shapes odd: one row, one column, prime widths, widths that are no multiple of any block
or vector width, rows longer than the softmax keeps in registers. Every configuration a Triton
kernel is autotuned over is checked, not only the one that wins the tuning.

What runs where:
  - the comparison itself, the references and the argument checks: anywhere numpy is (the
    checks that need tensors: where PyTorch is);
  - the Triton kernels in Triton's interpreter (TRITON_INTERPRET=1, on the CPU, in a
    subprocess): where PyTorch and Triton are, GPU or not;
  - on the GPU: where PyTorch, Triton (for the Triton kernels) and the course's library (for
    the CUDA ones) are. Each skips saying which is missing, never passes without running.

This file holds the comparison, the argument checks, the CUDA solutions and the interpreter's
run; the Triton kernels on the GPU are test_triton_gelu.py, test_triton_softmax.py and
test_triton_rmsnorm.py (one file per operation, so that ctest compiles them side by side), and
what all of them share is triton_checks.py.
"""

import os
import subprocess
import sys
import textwrap
import unittest

from triton_checks import (  # noqa: E402 (it puts the package on sys.path)
    CUDA_SKIP,
    PYTHON_DIR,
    TRITON_SKIP,
    Checks,
    cuda_course,
    needs,
    np,
    reference,
    torch,
    triton,
    triton_ops,
)

# ---------------------------------------------------------------------------------------------
# The comparison and the references: what every other test relies on.


@unittest.skipIf(needs("numpy"), needs("numpy") or "")
class TheComparison(unittest.TestCase):
    def test_nan_never_passes(self):
        ref = np.linspace(-1, 1, 64).reshape(4, 16)
        got = ref.copy()
        self.assertIsNone(reference.compare(got, ref, "float32"))
        got[2, 5] = np.nan
        message = reference.compare(got, ref, "float32", "y")
        self.assertIsNotNone(message, "a NaN where the reference is finite must fail")
        self.assertIn("NaN or Inf where the reference is finite", message)
        self.assertIn("(2, 5)", message)
        self.assertIsNotNone(reference.compare(np.full_like(ref, np.nan), ref, "bfloat16"),
                             "an output never written (all NaN) must fail in every dtype")

    def test_a_nan_reference_needs_a_nan(self):
        ref = np.array([[np.nan, 1.0], [0.5, 0.25]])
        self.assertIsNone(reference.compare(ref.copy(), ref, "float32"))
        self.assertIsNotNone(reference.compare(np.array([[0.0, 1.0], [0.5, 0.25]]), ref,
                                               "float32"))

    def test_the_bounds_are_the_course_tolerances(self):
        ref = np.ones((8, 8))
        for dtype, (norm, elem) in reference.TOLERANCES.items():
            inside = ref * (1 + 0.5 * min(norm, elem))
            self.assertIsNone(reference.compare(inside, ref, dtype), dtype)
            outside = ref.copy()
            outside[3, 3] += 3 * elem  # |ref| + rms = 2: allowed 2 elem
            message = reference.compare(outside, ref, dtype)
            self.assertIsNotNone(message, dtype)
            self.assertIn("the worst at (3, 3)", message)

    def test_the_softmax_reference_answers_like_pytorch(self):
        x = np.array([[0.0, -np.inf, 1.0], [-np.inf] * 3, [0.0, np.nan, 1.0], [0.0, np.inf, 1.0],
                      [1e4, 1e4, -1e4]])
        y = reference.softmax_rows(x)
        e = np.exp([-1.0, 0.0])
        np.testing.assert_allclose(y[0], [e[0] / e.sum(), 0.0, e[1] / e.sum()])
        for row in (1, 2, 3):
            self.assertTrue(np.isnan(y[row]).all(), row)
        np.testing.assert_allclose(y[4], [0.5, 0.5, 0.0])

    def test_the_gelu_and_rmsnorm_references(self):
        # gelu(1) with the tanh approximation, and rmsnorm of a row of one value.
        self.assertAlmostEqual(float(reference.gelu_tanh(np.float64(1.0))), 0.8411919906082768,
                               places=15)
        y = reference.rmsnorm(np.full((1, 4), 3.0), np.array([1.0, 2.0, 0.5, 0.0]), 0.0)
        np.testing.assert_allclose(y[0], [1.0, 2.0, 0.5, 0.0])


# ---------------------------------------------------------------------------------------------
# The argument checks of the Triton functions.


class TritonArguments(unittest.TestCase):
    def test_a_non_tensor_is_a_type_error_naming_the_argument(self):
        with self.assertRaisesRegex(TypeError, r"^x: expected a torch.Tensor, got list"):
            triton_ops.softmax([[1.0, 2.0]])
        with self.assertRaisesRegex(TypeError, r"^x: expected a torch.Tensor"):
            triton_ops.add_bias_gelu(object(), None)

    def test_missing_says_what_to_install(self):
        reason = triton_ops.missing()
        if torch is None:
            self.assertIn("pip install torch", reason)
        elif triton is None:
            self.assertIn("pip install triton", reason)
        elif not torch.cuda.is_available() and not triton_ops.interpreted():
            self.assertIn("TRITON_INTERPRET=1", reason)
        else:
            self.assertIsNone(reason)

    def test_importing_the_package_needs_no_triton_and_a_call_says_what_to_install(self):
        code = textwrap.dedent("""
            import importlib.abc, sys
            class Blocker(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] == "triton":
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            sys.meta_path.insert(0, Blocker())
            sys.path.insert(0, sys.argv[1])
            from cuda_course import triton_ops
            try:
                triton_ops.kernels()
            except RuntimeError as e:
                print(e)
        """)
        done = subprocess.run([sys.executable, "-c", code, PYTHON_DIR], capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"needs (PyTorch|Triton), which is not installed: "
                                      r"python3 -m pip install")

    @unittest.skipIf(needs("torch"), needs("torch") or "")
    def test_dtype_shape_layout_and_device_are_named(self):
        f32 = torch.zeros(4, 8)
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype float32, float16 or bfloat16, "
                                               r"got int32"):
            triton_ops.softmax(f32.int())
        with self.assertRaisesRegex(TypeError, r"^bias: expected dtype float32, got float16"):
            triton_ops.add_bias_gelu(f32, torch.zeros(8, dtype=torch.float16))
        with self.assertRaisesRegex(ValueError, r"^bias: expected shape \(8,\), got \(7,\)"):
            triton_ops.add_bias_gelu(f32, torch.zeros(7))
        with self.assertRaisesRegex(ValueError, r"^x: expected 2 dimensions, got 3"):
            triton_ops.rmsnorm(torch.zeros(2, 3, 4), torch.zeros(4))
        with self.assertRaisesRegex(ValueError, r"^x: must be contiguous"):
            triton_ops.softmax(f32.t())
        with self.assertRaisesRegex(ValueError, r"^x: hidden = 16385 must be in \[1, 16384\]"):
            triton_ops.rmsnorm(torch.zeros(1, 16385), torch.zeros(16385))
        with self.assertRaisesRegex(ValueError, r"^eps: must be finite and >= 0"):
            triton_ops.rmsnorm(f32, torch.zeros(8), eps=-1.0)
        if not triton_ops.interpreted():
            with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device, got cpu"):
                triton_ops.softmax(f32)


# ---------------------------------------------------------------------------------------------
# The CUDA solutions on the GPU, against the references the Triton kernels meet.


@unittest.skipIf(CUDA_SKIP, CUDA_SKIP or "")
class CudaSolutions(Checks, unittest.TestCase):
    """The CUDA solutions through cuda_course, on the references the Triton kernels meet."""

    def test_add_bias_gelu(self):
        self.assert_right(cuda_course.add_bias_gelu, "add_bias_gelu")

    def test_softmax(self):
        self.assert_right(cuda_course.softmax, "softmax")

    def test_softmax_of_masked_and_non_finite_rows(self):
        self.assert_masked_softmax(cuda_course.softmax)

    def test_rmsnorm(self):
        self.assert_right(cuda_course.rmsnorm, "rmsnorm", dtypes=("bfloat16",))  # Day 6's dtype

    def test_a_softmax_into_its_own_input_is_refused(self):
        x = torch.zeros(4, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, r"^out: must not overlap x"):
            cuda_course.softmax(x, out=x)


# ---------------------------------------------------------------------------------------------
# In Triton's interpreter, on the CPU: the kernels' logic without a GPU.

INTERPRETER_SCRIPT = textwrap.dedent("""
    import sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import triton_checks as t
    from cuda_course import triton_ops
    assert triton_ops.interpreted()
    shapes = [(1, 1), (3, 33), (5, 257), (2, 4099)]
    failures = []
    for op in ("add_bias_gelu", "softmax", "rmsnorm"):
        fn = getattr(triton_ops, op)
        for config in range(len(triton_ops.configs(op))):
            for dtype in t.DTYPES:
                for i, (rows, cols) in enumerate(shapes):
                    p = t.problem(fn, op, dtype, rows, cols, 100 + i, "cpu", config=config)
                    if p:
                        failures.append(p)
    for config in range(len(triton_ops.configs("softmax_streamed"))):
        p = t.problem(triton_ops.softmax, "softmax", "float32", 2, 16411, 5, "cpu", config=config)
        if p:
            failures.append(p)
    for dtype in t.DTYPES:
        inputs = t.masked_softmax_inputs(dtype, "cpu")
        p = t.problem(triton_ops.softmax, "softmax", dtype, 5, 300, 0, "cpu", inputs=inputs)
        if p:
            failures.append(p)
    print("\\n".join(failures) if failures else "all correct")
    sys.exit(1 if failures else 0)
""")

INTERPRETER_SKIP = needs("numpy", "torch", "triton") or (
    "" if TRITON_SKIP else
    "a CUDA GPU is here: test_triton_{gelu,softmax,rmsnorm}.py run these kernels compiled, on "
    "it (the interpreter's handling of runtime scalars differs between Triton versions; it "
    "stands in for a GPU only)")


@unittest.skipIf(INTERPRETER_SKIP, INTERPRETER_SKIP or "")
class TritonInterpreter(unittest.TestCase):
    def test_every_kernel_and_configuration_on_the_cpu(self):
        env = dict(os.environ, TRITON_INTERPRET="1")
        done = subprocess.run(
            [sys.executable, "-W", "ignore::RuntimeWarning", "-c", INTERPRETER_SCRIPT,
             PYTHON_DIR, os.path.dirname(os.path.abspath(__file__))],
            capture_output=True, text=True, env=env, timeout=900)
        self.assertEqual(done.returncode, 0, done.stdout[-4000:] + done.stderr[-4000:])
        self.assertIn("all correct", done.stdout)


if __name__ == "__main__":
    unittest.main()
