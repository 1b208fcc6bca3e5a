"""Day 2's fused add-bias + GeLU in Triton (cuda_course.triton_ops.add_bias_gelu) on the GPU,
against the float64 reference with the course's tolerances: autotuned on every shape and dtype
of triton_checks.SHAPES, then every configuration of its autotuner on its own. The shared
inputs, references and check are triton_checks.py; test_triton.py says what runs where."""

import unittest

from triton_checks import TRITON_SKIP, Checks, triton_ops


@unittest.skipIf(TRITON_SKIP, TRITON_SKIP or "")
class TritonAddBiasGelu(Checks, unittest.TestCase):
    def test_add_bias_gelu(self):
        self.assert_right(triton_ops.add_bias_gelu, "add_bias_gelu")

    def test_every_configuration(self):
        self.assert_every_configuration("add_bias_gelu")


if __name__ == "__main__":
    unittest.main()
