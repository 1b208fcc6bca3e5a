"""Day 6's RMSNorm in Triton (cuda_course.triton_ops.rmsnorm) on the GPU, against the float64
reference with the course's tolerances: autotuned on every shape (up to Day 6's 16384 columns)
and dtype of triton_checks.SHAPES, then every configuration of its autotuner on its own. The
shared inputs, references and check are triton_checks.py; test_triton.py says what runs where."""

import unittest

from triton_checks import TRITON_SKIP, Checks, triton_ops


@unittest.skipIf(TRITON_SKIP, TRITON_SKIP or "")
class TritonRmsNorm(Checks, unittest.TestCase):
    def test_rmsnorm(self):
        self.assert_right(triton_ops.rmsnorm, "rmsnorm")

    def test_every_configuration(self):
        self.assert_every_configuration("rmsnorm")


if __name__ == "__main__":
    unittest.main()
