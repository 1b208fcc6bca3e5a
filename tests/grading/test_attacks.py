"""Submissions that attack the grader (tests/grading/attacks.py), graded without a GPU: the
attacks whose defence is the object check, the sandbox, the replay of host tests, the #include
check or similarity. Each is graded with the object check (refused early, with a message that
names what it reached for) and without it (the other defences must hold alone); the honest
solution of each day keeps every point it can earn here. The GPU attacks run on the H100
(scripts/gpu-check.sh --steps attacks).

    cd tests/grading && COURSE_BUILD_DIR=../../build/default python3 -m unittest test_attacks
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import attacks  # noqa: E402
from course import sandbox  # noqa: E402

BUILD = os.environ.get("COURSE_BUILD_DIR", "")


@unittest.skipUnless(BUILD, "needs COURSE_BUILD_DIR (a configured and built course)")
@unittest.skipUnless(sandbox.check() == "", f"no sandbox here: {sandbox.check()}")
class AttacksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="course-attacks-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def grade(self, object_check: bool):
        code, lines = attacks.run(BUILD, self.out, gpu=False, object_check=object_check,
                                  only=[], jobs=2)
        report = "\n".join(lines)
        self.assertEqual(code, 0, report)
        self.assertNotIn("GOT THROUGH", report)
        self.assertNotIn("HONEST LOST POINTS", report)
        return lines

    def test_every_attack_is_refused_early_by_the_object_check(self):
        lines = self.grade(object_check=True)
        self.assertEqual(len([l for l in lines if l.startswith("CAUGHT")]),
                         len([a for a in attacks.ATTACKS if not a.gpu]))

    def test_every_attack_fails_without_the_object_check(self):
        self.grade(object_check=False)


if __name__ == "__main__":
    unittest.main()
