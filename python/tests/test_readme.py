"""python/README.md's commands, as written, on a fresh machine: the fenced block under "Build,
install, test" is parsed (and must be the commands below), and each is run or checked. What
runs where, honestly:

  pip install wheel -r requirements-jit.txt   RUN, in a fresh virtual environment (no system
                                              packages: a fresh machine's Python), in a copy of
                                              python/; skipped when no package index is reachable
  cmake --preset default                      CHECKED, not run: the preset must configure
                                              build/default. Running it would reconfigure the
                                              checkout's build folder, which the other tests use
  cmake --build --preset default --target ... RUN as a dry run (ninja -n): both targets must exist
                                              in build/default and be buildable; skipped when
                                              build/default is not configured
  pip install --no-build-isolation ./python   RUN in the same environment, then the installed
                                              package (templates included) renders a kernel
  export CUDA_COURSE_LIB=...                  CHECKED: the path is where CMake puts the library
  python3 -m unittest discover ...            RUN with -k test_args (all of it is this suite)
  bench_layer.py, bench_attention.py,         RUN in the fresh environment, which has no PyTorch:
  bench_triton.py                             they must say so and exit 3 (scripts' table)
  plot_layer.py layer.json,                   RUN on a layer.json in bench_layer.py's format (a
  plot_triton.py triton.json                  triton.json in bench_triton.py's) where matplotlib is
                                              installed (the plots are written), else it must say
                                              so and exit 3
  bench_jit.py --json jit.json                RUN where there is no GPU (it must ask for --arch);
                                              not run on a GPU machine (minutes of compiles)

$CUDA_COURSE_README_BUILD_DIR replaces build/default for the build checks (cmake --build <dir>
instead of --preset default): for a checkout whose build/default must not be touched."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

from jit_support import REPO

PYTHON_DIR = os.path.join(REPO, "python")
README = os.path.join(PYTHON_DIR, "README.md")
MISSING = 3

EXPECTED = [
    "python3 -m pip install wheel -r python/requirements-jit.txt",
    "cmake --preset default",
    "cmake --build --preset default --target course_py course_py_tvm_ffi",
    "python3 -m pip install --no-build-isolation ./python",
    "export CUDA_COURSE_LIB=$PWD/build/default/labs/d14_capstone/libcourse_py.so",
    "python3 -m unittest discover -s python/tests -v",
    "python3 python/bench_layer.py --json layer.json",
    "python3 python/plot_layer.py layer.json",
    "python3 python/bench_attention.py --json attention.json",
    "python3 python/bench_jit.py --json jit.json",
    "python3 python/bench_triton.py --json triton.json",
    "python3 python/plot_triton.py triton.json",
]

OFFLINE = ("No matching distribution found", "Could not find a version that satisfies",
           "NewConnectionError", "Network is unreachable", "Temporary failure in name resolution",
           "Max retries exceeded", "ConnectionError", "ProxyError")


def readme_commands():
    """The commands of the first ```sh block after '## Build, install, test', comments removed."""
    with open(README) as f:
        text = f.read()
    section = text[text.index("## Build, install, test"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(" ".join(words))
    return commands


def build_dir():
    return os.environ.get("CUDA_COURSE_README_BUILD_DIR") or os.path.join(REPO, "build",
                                                                          "default")


class ReadmeCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cuda_course_readme_")
        cls.work = os.path.join(cls.tmp.name, "work")  # a checkout's root: python/, tools/plots
        ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "*.so")
        shutil.copytree(PYTHON_DIR, os.path.join(cls.work, "python"), ignore=ignore)
        shutil.copytree(os.path.join(REPO, "tools", "plots"),
                        os.path.join(cls.work, "tools", "plots"), ignore=ignore)
        cls.venv = os.path.join(cls.tmp.name, "venv")
        cls.venv_python = os.path.join(cls.venv, "bin", "python")
        cls.offline = None
        cls.installed = False
        cls.env = dict(os.environ, PYTHONPATH="", CUDA_COURSE_BINDING="auto",
                       PIP_DISABLE_PIP_VERSION_CHECK="1")
        for var in ("CUDA_COURSE_LIB", "CUDA_COURSE_TVM_FFI_LIB", "VIRTUAL_ENV"):
            cls.env.pop(var, None)
        print(f"\n    (a fresh environment in {cls.venv}; the commands run in {cls.work})")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_cmd(self, args, cwd=None, timeout=900, env=None):
        return subprocess.run(args, cwd=cwd or self.work, env=env or self.env,
                              capture_output=True, text=True, timeout=timeout)

    def fresh_python(self):
        """The fresh environment's python (made on first use), standing for `python3`."""
        if not os.path.exists(self.venv_python):
            done = self.run_cmd([sys.executable, "-m", "venv", self.venv])
            if done.returncode != 0:
                self.skipTest(f"cannot make a virtual environment here: {done.stderr[-300:]}")
        return self.venv_python

    def readme(self, index):
        words = shlex.split(EXPECTED[index])
        if words[0] == "python3":
            words[0] = self.fresh_python()
        return words

    def test_0_the_block_is_what_this_test_runs(self):
        self.assertEqual(readme_commands(), EXPECTED,
                         "python/README.md's commands changed: update EXPECTED and how each runs")

    def test_1_install_the_jit_packages(self):
        done = self.run_cmd(self.readme(0))
        if done.returncode != 0 and any(m in done.stdout + done.stderr for m in OFFLINE):
            type(self).offline = "no package index is reachable (pip could not download)"
            self.skipTest(self.offline)
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        check = self.run_cmd([self.venv_python, "-c",
                              "import jinja2, ninja, tvm_ffi, wheel; print(tvm_ffi.__version__)"])
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_2_the_preset_configures_build_default(self):
        with open(os.path.join(REPO, "CMakePresets.json")) as f:
            presets = json.load(f)
        configure = {p["name"]: p for p in presets["configurePresets"]}
        self.assertEqual(configure["default"]["binaryDir"], "${sourceDir}/build/default")
        build = {p["name"]: p for p in presets["buildPresets"]}
        self.assertEqual(build["default"]["configurePreset"], "default")
        print("\n    cmake --preset default: checked (the preset's folder is build/default), "
              "not run")

    def test_3_the_targets_build(self):
        folder = build_dir()
        if not os.path.isfile(os.path.join(folder, "build.ninja")):
            self.skipTest(f"{folder} is not configured (cmake --preset default): nothing to "
                          "build the targets in")
        words = shlex.split(EXPECTED[2])
        if os.environ.get("CUDA_COURSE_README_BUILD_DIR"):
            words = ["cmake", "--build", folder] + words[4:]
        done = self.run_cmd(words + ["--", "-n"], cwd=REPO, timeout=300)
        output = done.stdout + done.stderr
        if done.returncode != 0 and "unknown target 'course_py_tvm_ffi'" in output:
            self.skipTest(f"{folder} was configured without apache-tvm-ffi, so it has no "
                          "course_py_tvm_ffi target: configure again after the README's first "
                          "line")
        self.assertEqual(done.returncode, 0, output[-3000:])
        print(f"\n    {' '.join(words)} -- -n: both targets known and buildable")

    def test_4_install_the_package(self):
        if self.offline:
            self.skipTest(self.offline + " (the README's first line installs wheel)")
        done = self.run_cmd(self.readme(3))
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        # The installed copy (run from elsewhere, so the copy in work/ is not on the path).
        probe = ("import os, cuda_course.jit as j; "
                 "print(j.TEMPLATES); print(sorted(os.listdir(j.TEMPLATES))); "
                 "print(len(j.rmsnorm_spec('bfloat16', 4096, 8).render()))")
        # The installed package renders the course's own headers and kernels: it finds the
        # checkout through CUDA_COURSE_ROOT (nothing of the course is copied into it).
        check = self.run_cmd([self.venv_python, "-c", probe], cwd=self.tmp.name,
                             env=dict(self.env, CUDA_COURSE_ROOT=REPO))
        self.assertEqual(check.returncode, 0, check.stderr)
        templates, listing, length = check.stdout.splitlines()
        self.assertIn(os.path.join(self.venv, "lib"), templates, "the installed package")
        for name in ("rmsnorm.cu.jinja", "decode_attention.cu.jinja", "tvm_ffi_args.h"):
            self.assertIn(name, listing)
        self.assertGreater(int(length), 1000)
        type(self).installed = True

    def test_5_the_library_path_is_cmakes(self):
        words = shlex.split(EXPECTED[4])
        name, value = words[1].split("=", 1)
        self.assertEqual(name, "CUDA_COURSE_LIB")
        value = value.replace("$PWD", REPO)
        self.assertEqual(value, os.path.join(REPO, "build", "default", "labs", "d14_capstone",
                                             "libcourse_py.so"))
        folder = build_dir()
        if os.path.isfile(os.path.join(folder, "build.ninja")):
            ninja = shutil.which("ninja") or "ninja"
            done = self.run_cmd([ninja, "-C", folder, "-t", "query",
                                 "labs/d14_capstone/libcourse_py.so"], cwd=REPO)
            self.assertEqual(done.returncode, 0, "CMake's build has that output: " + done.stdout)

    def test_6_the_unit_tests(self):
        if not self.installed:
            self.skipTest("the package was not installed in the fresh environment (test 4)")
        words = self.readme(5) + ["-k", "test_args"]
        env = dict(self.env, CUDA_COURSE_LIB=os.path.join(
            REPO, "build", "default", "labs", "d14_capstone", "libcourse_py.so"))
        done = self.run_cmd(words, env=env)
        self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
        self.assertRegex(done.stderr, r"\nOK")
        print(f"\n    {EXPECTED[5]} -k test_args: {done.stderr.strip().splitlines()[-1]}")

    def test_7_the_benchmarks_say_what_they_need(self):
        for index in (6, 8, 10):
            words = self.readme(index)
            done = self.run_cmd(words)
            self.assertEqual(done.returncode, MISSING, done.stdout + done.stderr)
            self.assertIn("needs PyTorch", done.stderr)
            self.assertNotIn("Traceback", done.stderr)

    def test_8_the_plot(self):
        sample = {"device": "a test", "torch": "none", "rows": [
            {"batch": 1, "len": 512, "speedup_vs_eager": 0.9, "compile_speedup_vs_eager": 1.2},
            {"batch": 4, "len": 512, "speedup_vs_eager": 1.1, "compile_speedup_vs_eager": None}]}
        self.plot(7, "layer", sample)

    def test_8b_the_triton_plot(self):
        impls = [{"impl": "cuda", "gbps": 2500.0}, {"impl": "triton", "gbps": 2400.0},
                 {"impl": "eager", "gbps": 900.0}, {"impl": "compile", "error": "skipped"}]
        sample = {"device": "a test", "copy": {"bytes": 1 << 30, "ms": 0.4, "gbps": 2700.0},
                  "operations": [{"op": "softmax", "label": "row softmax (Day 5)",
                                  "dtype": "float32", "rows": 8192, "cols": 8192,
                                  "impls": impls}]}
        self.plot(11, "triton", sample)

    def plot(self, index, stem, sample):
        """Runs the README's plot command `index` on `sample`, written as <stem>.json."""
        with open(os.path.join(self.work, f"{stem}.json"), "w") as f:
            json.dump(sample, f)
        words = shlex.split(EXPECTED[index])
        try:
            import matplotlib  # noqa: F401
            words[0] = sys.executable  # this Python has matplotlib: draw for real
        except ImportError:
            words[0] = self.fresh_python()
        done = self.run_cmd(words)
        if words[0] == sys.executable:
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            for out in (f"{stem}.png", f"{stem}.svg"):
                self.assertTrue(os.path.getsize(os.path.join(self.work, out)) > 0, out)
        else:
            self.assertEqual(done.returncode, MISSING, done.stdout + done.stderr)
            self.assertIn("needs matplotlib", done.stderr)

    def test_9_the_jit_benchmark(self):
        if shutil.which("nvidia-smi"):
            self.skipTest("a GPU machine: bench_jit.py compiles for minutes; run it by hand")
        done = self.run_cmd(self.readme(9))
        self.assertEqual(done.returncode, MISSING, done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        if self.installed:
            self.assertIn("Pass --arch sm_90a", done.stderr)


if __name__ == "__main__":
    unittest.main()
