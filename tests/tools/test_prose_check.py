"""tools/prose_check.py: the words of the course's history are found, its content's are not."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))

import prose_check  # noqa: E402


def check(text):
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(text)
    try:
        return [line.split(": ", 2)[1] for line in prose_check.findings(f.name)]
    finally:
        os.unlink(f.name)


class ProseCheckTest(unittest.TestCase):
    def test_history_is_found(self):
        self.assertEqual(check("Measured at commit 2114685 on the H100.\n"), ["a commit hash ('commit 2114685')"])
        self.assertTrue(check("the kernels of ef02fd8 ran\n"))
        self.assertTrue(check("in the fourth session's run\n"))
        self.assertTrue(check("| row | not measured in this run |\n"))
        self.assertTrue(check("see step6/final2 for the rest\n"))
        self.assertTrue(check("3315 us before the fix\n"))

    def test_content_is_not(self):
        for text in ["the second run tunes nothing (the cache holds the winner)\n",
                     "1048579 inputs, 0xdeadbeef, `a1b2c3d4` in code\n",
                     "```\ncommit 2114685 in a code block\n```\n",
                     "[log](../results/h100/d10/ncu-ab12cd3.txt)\n",
                     "a grading run measures the reference in the same grading run\n",
                     "the words are quoted here <!-- prose-check: allow --> session\n"]:
            with self.subTest(text=text):
                self.assertEqual(check(text), [])

    def test_the_covered_files_exist_and_a_missing_file_is_an_error(self):
        self.assertTrue(prose_check.covered_files())
        self.assertEqual(prose_check.main(["/nonexistent/lesson.md"]), 2)


class LessonsTest(unittest.TestCase):
    """What docs/style.md's Prose section asks of every lesson beyond its words."""

    LESSONS = os.path.join(prose_check.ROOT, "lessons")

    def lessons(self):
        import glob
        return sorted(glob.glob(os.path.join(self.LESSONS, "d[0-9][0-9]_*.md")))

    def test_every_think_question_has_its_answer(self):
        import re
        self.assertEqual(len(self.lessons()), 14)
        for path in self.lessons():
            with open(path, encoding="utf-8") as f:
                text = f.read()
            sections = re.findall(r"^## [^\n]*[Tt]hink questions[^\n]*\n(.*?)(?=^## |\Z)", text,
                                  re.M | re.S)
            with self.subTest(lesson=os.path.basename(path)):
                self.assertTrue(sections, "no Think questions section")
                for sec in sections:
                    # Each numbered question, up to the next one: it holds one answer block.
                    parts = re.split(r"^(?=\d+\. )", sec, flags=re.M)[1:]
                    self.assertTrue(parts, "a Think questions section without questions")
                    for part in parts:
                        self.assertEqual(part.count("<summary>Answer</summary>"), 1,
                                         f"question {part.split('.')[0]} needs one "
                                         "<details markdown><summary>Answer</summary> block")
                        self.assertIn("<details markdown>", part)

    def test_every_lesson_has_concept_diagrams_and_flashinfer(self):
        for path in self.lessons():
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with self.subTest(lesson=os.path.basename(path)):
                self.assertGreaterEqual(text.count("](diagrams/"), 2,
                                        "at least two concept diagrams (docs/style.md)")
                self.assertRegex(text, r"(?m)^##+ .*[Tt]he same thing in FlashInfer")


if __name__ == "__main__":
    unittest.main()
