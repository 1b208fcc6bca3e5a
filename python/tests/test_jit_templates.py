"""The JIT's templates stay copies of the course's tested code: the device code of Day 11's
decode attention, line for line, and the helpers of common/course/, block for block. A change to
the solution or a helper that is not carried over to the template fails here (and says where).
Needs the course's checkout (skipped in a pip-installed package without it)."""

import os
import re
import unittest

from jit_support import REPO

from cuda_course.jit import TEMPLATES

SOLUTION_D11 = os.path.join(REPO, "solutions", "d11_decode_attention", "kernel.cu")
COMMON = os.path.join(REPO, "common", "course")


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def solution_device_code(path):
    """The solution's device code as the template holds it: from the first `using course::` to
    the host side, without the starter's blocks and markers."""
    lines = read(path).split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("using course::"))
    end = next(i for i, line in enumerate(lines) if line.startswith("// Host side."))
    out, skip = [], False
    for line in lines[start:end - 1]:
        s = line.strip()
        if s.startswith("// >>> STARTER"):
            skip = True
        elif s.startswith("// === SOLUTION"):
            skip = False
        elif s.startswith("// <<<") or skip:
            continue
        else:
            out.append(line)
    return "\n".join(out).rstrip("\n")


def code_blocks(text):
    """Blank-line-separated blocks of code, comments and preprocessor lines dropped."""
    blocks, current = [], []
    for line in text.split("\n") + [""]:
        s = line.strip()
        if s.startswith("//") or s.startswith("#"):
            continue
        if not s:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line.rstrip())
    return blocks


@unittest.skipUnless(os.path.isfile(SOLUTION_D11) and os.path.isdir(COMMON),
                     "the course's checkout (solutions/, common/) is not beside this package")
class TemplatesFollowTheSolutions(unittest.TestCase):
    def test_decode_device_code_is_day_11s(self):
        template = read(TEMPLATES, "decode_attention.cu.jinja")
        begin = "// --- copy of solutions/d11_decode_attention/kernel.cu (device code) ---\n"
        end = "\n// --- end of copy ---"
        copy = template[template.index(begin) + len(begin):template.index(end)].rstrip("\n")
        want = solution_device_code(SOLUTION_D11)
        if copy != want:
            a, b = copy.split("\n"), want.split("\n")
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            self.fail(f"decode_attention.cu.jinja's copy differs from {SOLUTION_D11} at copied "
                      f"line {first + 1}:\n  template: {a[first] if first < len(a) else '(end)'}"
                      f"\n  solution: {b[first] if first < len(b) else '(end)'}")

    def test_device_helpers_are_common_courses(self):
        ours = read(TEMPLATES, "course_device.cuh")
        theirs = "\n".join(read(COMMON, name)
                           for name in ("vec.cuh", "warp.cuh", "cp_async.cuh", "smem.cuh"))
        blocks = [b for b in code_blocks(ours)
                  if not re.match(r"^(namespace|}  // namespace|\s*}\s*$)", b)]
        self.assertGreater(len(blocks), 8)
        theirs_code = "\n".join(code_blocks(theirs))
        for block in blocks:
            block = block.replace("namespace course {\n", "")
            self.assertTrue(block in theirs_code, "course_device.cuh has a block common/course/ "
                            "does not (update the copy):\n" + block)

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
