"""The JIT's templates take the course's tested code, never a copy of it: the rendered decode
attention holds Day 11's device code exactly as solutions/d11_decode_attention/kernel.cu has it,
and every rendered source holds common/course/'s headers as they are. A template that pasted its
own copy, or a render that lost the solution's code, fails here (and says where). Needs the
course's checkout (skipped in a pip-installed package without it)."""

import os
import unittest

from jit_support import REPO

from cuda_course.jit import TEMPLATES
from cuda_course.jit import _render
from cuda_course.jit._ops import decode_spec, rmsnorm_spec

SOLUTION_D11 = os.path.join(REPO, "solutions", "d11_decode_attention", "kernel.cu")
COMMON = os.path.join(REPO, "common", "course")


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


@unittest.skipUnless(os.path.isfile(SOLUTION_D11) and os.path.isdir(COMMON),
                     "the course's checkout (solutions/, common/) is not beside this package")
class TemplatesFollowTheSolutions(unittest.TestCase):
    def test_decode_device_code_is_day_11s(self):
        want = _render.solution_device_code("d11_decode_attention")
        self.assertIn("__global__", want)
        self.assertIn("split_range_of", want)
        self.assertNotIn("STARTER", want)
        self.assertIn(want, decode_spec("bfloat16", 128, 4).render())
        # ... and the template itself holds none of it: one source for Day 11's kernels.
        template = read(TEMPLATES, "decode_attention.cu.jinja")
        self.assertNotIn("split_range_of", template)

    def test_device_helpers_are_common_courses(self):
        for spec in (decode_spec("float16", 64, 1), rmsnorm_spec("bfloat16", 4096, 8)):
            source = spec.render()
            for name in ("vec.cuh", "warp.cuh"):
                body = read(COMMON, name).replace("#pragma once\n", "")
                self.assertIn(body.rstrip("\n"), source, f"{spec.name} lost common/course/{name}")
            self.assertNotIn('#include "course/', source, "every course header is pasted in")
        self.assertEqual([n for n in os.listdir(TEMPLATES) if n.endswith((".cuh", ".h"))
                          and n != "tvm_ffi_args.h"], [], "no copy of a course header")

    def test_rmsnorm_template_keeps_day_6s_arithmetic(self):
        template = read(TEMPLATES, "rmsnorm.cu.jinja")
        solution = read(REPO, "solutions", "d06_reduction_norms", "kernel.cu")
        # The lines that compute: the same expressions in both (sizes became constants).
        for line in ("sum_sq += f * f;",
                     "out[j] = from_float<T>(to_float(cached[k][j]) * rstd * "
                     "to_float(weight[k][j]));",
                     "sums[k][j] = to_float(xv[k][j]) + to_float(rv[k][j]);",
                     "out[j] = from_float<T>(sums[k][j] * rstd * to_float(weight[k][j]));",
                     "__global__ void __maxnreg__(kMaxRegisters)"):
            self.assertIn(line, template)
            self.assertIn(line, solution)


if __name__ == "__main__":
    unittest.main()
