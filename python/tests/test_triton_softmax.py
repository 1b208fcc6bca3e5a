"""Day 5's row softmax in Triton (cuda_course.triton_ops.softmax) on the GPU, against the float64
reference with the course's tolerances: autotuned on every shape and dtype of
triton_checks.SHAPES (rows past the registers go to the streamed kernel), masked and non-finite
rows, then every configuration of both kernels on its own. The shared inputs, references and
check are triton_checks.py; test_triton.py says what runs where."""

import unittest

from triton_checks import TRITON_SKIP, Checks, torch, triton_ops


@unittest.skipIf(TRITON_SKIP, TRITON_SKIP or "")
class TritonSoftmax(Checks, unittest.TestCase):
    def test_softmax(self):
        self.assert_right(triton_ops.softmax, "softmax")

    def test_softmax_of_masked_and_non_finite_rows(self):
        self.assert_masked_softmax(triton_ops.softmax)

    def test_every_configuration(self):
        self.assert_every_configuration("softmax")
        self.assert_every_configuration("softmax_streamed", shapes=((3, 20011),),
                                        dtypes=("float32",))

    def test_a_configuration_out_of_range_is_named(self):
        x = torch.zeros(2, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, r"^config: softmax has configurations 0 to"):
            triton_ops.softmax(x, config=99)


if __name__ == "__main__":
    unittest.main()
