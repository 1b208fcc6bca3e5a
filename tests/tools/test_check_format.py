"""Tests of tools/check_format.py, run on temporary git repositories.

Each test copies the script into <tmp>/tools/ (it finds the repository from its own location),
writes a few files, `git add`s them and runs it. Most tests use a stand-in clang-format (a small
Python script that calls trailing spaces "unformatted"), so that they run everywhere; the ones
marked "real" need clang-format 14 and are skipped without it.

Run from the repository root:
    python3 -m unittest discover -s tests/tools -p 'test_check_format.py'
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from typing import List, Optional, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tools" / "check_format.py"
FIX_HINT = "run `python3 tools/check_format.py --fix`"


def real_clang_format_14() -> Optional[str]:
    for name in ("clang-format-14", "clang-format"):
        path = shutil.which(name)
        if path is None:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
        except OSError:
            continue
        if "version 14." in out:
            return path
    return None


CLANG_FORMAT_14 = real_clang_format_14()

# A stand-in for clang-format with its command line: --version, --dry-run --Werror, -i, and
# plain (formatted text to stdout). "Formatting" here removes trailing spaces.
FAKE_CLANG_FORMAT = """\
#!{python}
import sys
args = sys.argv[1:]
if args == ["--version"]:
    print("{version_line}")
    sys.exit(0)
files = args[args.index("--") + 1:]
def formatted(path):
    with open(path) as f:
        return "".join(line.rstrip() + "\\n" for line in f)
status = 0
for path in files:
    with open(path) as f:
        text = f.read()
    if "--dry-run" in args:
        for n, line in enumerate(text.splitlines(), start=1):
            if line != line.rstrip():
                kind = "error" if "--Werror" in args else "warning"
                print(f"{{path}}:{{n}}:{{len(line.rstrip()) + 1}}: {{kind}}: code should be "
                      "clang-formatted [-Wclang-format-violations]", file=sys.stderr)
                status = 1 if "--Werror" in args else 0
    elif "-i" in args:
        with open(path, "w") as f:
            f.write("".join(line.rstrip() + "\\n" for line in text.splitlines()))
    else:
        sys.stdout.write(formatted(path))
sys.exit(status)
"""

CLANG_FORMAT_CONFIG = (REPO_ROOT / ".clang-format").read_text(encoding="utf-8")

FORMATTED_CU = textwrap.dedent("""\
    // A formatted kernel.
    #include <cstdint>

    __global__ void twice(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
      const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
      if (i < n) y[i] = 2.0f * x[i];
    }
    """)

# Unformatted for both: trailing spaces (the stand-in) and a badly indented line (clang-format).
UNFORMATTED_H = "#pragma once\n\ninline int three() {\nreturn 3;" + " " * 4 + "\n}\n"


class CheckFormatTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name) / "course"
        (self.root / "tools").mkdir(parents=True)
        shutil.copy(SCRIPT, self.root / "tools" / "check_format.py")
        (self.root / ".clang-format").write_text(CLANG_FORMAT_CONFIG, encoding="utf-8")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.root, check=True, capture_output=True)

    def make_repo(self, files: dict) -> None:
        """Writes files {relative path: text}, then `git init` and `git add` them."""
        for rel, text in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        self.git("init", "-q")
        self.git("add", "--", *files)

    def fake(self, version_line: str = "Debian clang-format version 14.0.6") -> str:
        path = Path(self._tmp.name) / "fake-clang-format"
        path.write_text(FAKE_CLANG_FORMAT.format(python=sys.executable,
                                                 version_line=version_line), encoding="utf-8")
        path.chmod(0o755)
        return str(path)

    def run_check(self, *args: str) -> Tuple[int, List[str]]:
        done = subprocess.run([sys.executable, str(self.root / "tools" / "check_format.py"),
                               *args], cwd=self._tmp.name, capture_output=True, text=True,
                              timeout=120)
        return done.returncode, (done.stdout + done.stderr).splitlines()

    # ----------------------------------------------------------------- skipped, not failed

    def test_a_tree_that_is_not_a_git_checkout_is_skipped(self) -> None:
        (self.root / "a.cu").write_text(FORMATTED_CU, encoding="utf-8")
        code, out = self.run_check("--clang-format", self.fake())
        self.assertEqual(code, 77, "\n".join(out))
        self.assertTrue(out[0].startswith("SKIPPED: "), out)
        self.assertIn("not a git checkout", out[0])

    def test_another_major_version_is_skipped_with_how_to_install_14(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        code, out = self.run_check("--clang-format", self.fake("clang-format version 15.0.7"))
        self.assertEqual(code, 77, "\n".join(out))
        self.assertTrue(out[0].startswith("SKIPPED: "), out)
        for needed in ("15.0.7", "pinned to clang-format 14", "apt-get install clang-format-14",
                       "clang-format==14.*"):
            self.assertIn(needed, out[0])

    def test_a_missing_clang_format_is_skipped(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        code, out = self.run_check("--clang-format", str(self.root / "no-such-clang-format"))
        self.assertEqual(code, 77, "\n".join(out))
        self.assertIn("apt-get install clang-format-14", out[0])

    def test_no_clang_format_on_the_path_is_skipped(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        only_git = Path(self._tmp.name) / "bin"  # a PATH with git on it and nothing else
        only_git.mkdir()
        (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
        env = dict(os.environ, PATH=str(only_git))
        done = subprocess.run([sys.executable, str(self.root / "tools" / "check_format.py")],
                              capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 77, done.stdout + done.stderr)
        self.assertIn("clang-format is not installed", done.stdout)

    def test_a_version_it_cannot_read_is_skipped(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        code, out = self.run_check("--clang-format", self.fake("some formatter"))
        self.assertEqual(code, 77, "\n".join(out))
        self.assertIn("cannot tell which version", out[0])

    # ----------------------------------------------------------------- the check (stand-in)

    def test_formatted_files_pass(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU, "b/c.cpp": "int c() { return 0; }\n"})
        code, out = self.run_check("--clang-format", self.fake())
        self.assertEqual(code, 0, "\n".join(out))
        self.assertEqual(out[-1], "all 2 files are formatted (clang-format 14.0.6)")

    def test_an_unformatted_file_is_named_with_its_first_differing_line(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU, "inc/three.h": UNFORMATTED_H})
        code, out = self.run_check("--clang-format", self.fake())
        self.assertEqual(code, 1, "\n".join(out))
        self.assertEqual(out, ["inc/three.h:4: not formatted", "  - return 3;", "  + return 3;",
                               f"1 of 2 files are not formatted: {FIX_HINT}"])

    def test_only_tracked_cpp_and_cuda_files_are_checked(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU, "notes.txt": "trailing   \n",
                        "tool.py": "x = 1   \n"})
        (self.root / "untracked.cu").write_text(UNFORMATTED_H, encoding="utf-8")
        code, out = self.run_check("--clang-format", self.fake())
        self.assertEqual(code, 0, "\n".join(out))
        self.assertEqual(out[-1], "all 1 files are formatted (clang-format 14.0.6)")

    def test_every_extension_is_checked_in_many_batches(self) -> None:
        files = {f"dir{k % 3}/file{k}.{ext}": UNFORMATTED_H
                 for k, ext in enumerate(["h", "cuh", "cpp", "cu"] * 10)}
        self.make_repo(files)
        code, out = self.run_check("--clang-format", self.fake(), "--jobs", "3")
        self.assertEqual(code, 1, "\n".join(out))
        self.assertEqual(out[-1], f"40 of 40 files are not formatted: {FIX_HINT}")
        named = sorted(line.split(":")[0] for line in out if line.endswith("not formatted"))
        self.assertEqual(named, sorted(files))

    def test_fix_formats_in_place_and_then_the_check_passes(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU, "inc/three.h": UNFORMATTED_H})
        (self.root / "untracked.h").write_text(UNFORMATTED_H, encoding="utf-8")
        fake = self.fake()
        code, out = self.run_check("--clang-format", fake, "--fix")
        self.assertEqual(code, 0, "\n".join(out))
        self.assertEqual(out[-1], "formatted 1 of 2 files with clang-format 14.0.6")
        self.assertNotIn("    \n", (self.root / "inc/three.h").read_text(encoding="utf-8"))
        self.assertEqual((self.root / "untracked.h").read_text(encoding="utf-8"), UNFORMATTED_H)
        self.assertEqual(self.run_check("--clang-format", fake)[0], 0)

    def test_usage_errors_exit_with_2(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        for args in (["--frobnicate"], ["--jobs", "0"], ["--jobs", "many"]):
            with self.subTest(args=args):
                self.assertEqual(self.run_check(*args)[0], 2)

    # ----------------------------------------------------------------- the real clang-format 14

    @unittest.skipUnless(CLANG_FORMAT_14, "clang-format 14 is not installed")
    def test_real_clang_format_passes_formatted_code(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU})
        code, out = self.run_check("--clang-format", str(CLANG_FORMAT_14))
        self.assertEqual(code, 0, "\n".join(out))

    @unittest.skipUnless(CLANG_FORMAT_14, "clang-format 14 is not installed")
    def test_real_clang_format_finds_the_first_line_it_would_change(self) -> None:
        self.make_repo({"a.cu": FORMATTED_CU, "three.h": UNFORMATTED_H})
        code, out = self.run_check("--clang-format", str(CLANG_FORMAT_14))
        self.assertEqual(code, 1, "\n".join(out))
        self.assertEqual(out, ["three.h:3: not formatted", "  - inline int three() {",
                               "  + inline int three() { return 3; }",
                               f"1 of 2 files are not formatted: {FIX_HINT}"])

    @unittest.skipUnless(CLANG_FORMAT_14, "clang-format 14 is not installed")
    def test_real_clang_format_fix_uses_the_project_style(self) -> None:
        long_call = ("void f() { call_with_a_long_name(argument_number_one, argument_number_two, "
                     "argument_number_three, four); }\n")
        self.make_repo({"long.cpp": long_call})
        code, out = self.run_check("--clang-format", str(CLANG_FORMAT_14), "--fix")
        self.assertEqual(code, 0, "\n".join(out))
        lines = (self.root / "long.cpp").read_text(encoding="utf-8").splitlines()
        self.assertGreater(len(lines), 1)
        self.assertLessEqual(max(len(line) for line in lines), 100)
        self.assertTrue(lines[1].startswith("  "), lines)  # Google style: 2-space indent
        self.assertEqual(self.run_check("--clang-format", str(CLANG_FORMAT_14))[0], 0)


if __name__ == "__main__":
    unittest.main()
