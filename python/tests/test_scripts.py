"""Every script of python/ without what it needs: it must say what to install or build and exit
with status 3 (needs.MISSING), never with a traceback; and --help must work without any of it.
Each script runs in a subprocess where the packages are made missing by an import blocker
(whatever this machine has installed), or replaced by a stand-in PyTorch that reports a GPU or
none, to reach the later checks (the GPU, the course's library)."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MISSING = 3

RUNNER = textwrap.dedent("""
    import importlib.abc, runpy, sys
    blocked = set(sys.argv[1].split(",")) - {""}
    stubs = sys.argv[2]
    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Blocker())
    if stubs:
        sys.path.insert(0, stubs)
    script = sys.argv[3]
    sys.argv = [script] + sys.argv[4:]
    runpy.run_path(script, run_name="__main__")
""")

STUB_TORCH = {
    "torch/__init__.py": """
        import os
        __version__ = "0.0-stand-in"
        class cuda:
            @staticmethod
            def is_available():
                return os.environ.get("STUB_TORCH_GPU") == "1"
        """,
    "torch/nn/__init__.py": "",
    "torch/nn/functional.py": "",
    "torch/nn/attention.py": """
        class SDPBackend:
            FLASH_ATTENTION = CUDNN_ATTENTION = EFFICIENT_ATTENTION = None
        def sdpa_kernel(backend):
            raise RuntimeError("stand-in")
        """,
}

SCRIPTS = ["bench_layer.py", "bench_gemm.py", "bench_attention.py", "bench_timing.py",
           "bench_jit.py", "bench_triton.py", "plot_layer.py", "plot_trace.py", "plot_triton.py"]
TORCH_SCRIPTS = ["bench_layer.py", "bench_gemm.py", "bench_attention.py", "bench_timing.py",
                 "bench_triton.py"]
LIBRARY_SCRIPTS = ["bench_layer.py", "bench_gemm.py", "bench_attention.py", "bench_triton.py"]
PLOT_SCRIPTS = ["plot_layer.py", "plot_trace.py", "plot_triton.py"]


class ScriptsSayWhatIsMissing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cuda_course_scripts_")
        cls.stubs = os.path.join(cls.tmp.name, "stubs")
        for rel, text in STUB_TORCH.items():
            path = os.path.join(cls.stubs, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_script(self, script, *args, blocked=(), stub_torch=False, gpu=False, env=None):
        environ = dict(os.environ, STUB_TORCH_GPU="1" if gpu else "0", **(env or {}))
        cmd = [sys.executable, "-c", RUNNER, ",".join(blocked),
               self.stubs if stub_torch else "", os.path.join(PYTHON_DIR, script), *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=environ,
                              cwd=self.tmp.name, timeout=300)

    def assert_missing(self, done, *phrases):
        self.assertEqual(done.returncode, MISSING, done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        for phrase in phrases:
            self.assertIn(phrase, done.stderr)

    def test_help_needs_nothing(self):
        for script in SCRIPTS:
            with self.subTest(script=script):
                done = self.run_script(script, "--help", blocked=(
                    "torch", "matplotlib", "tvm_ffi", "jinja2", "ninja", "numpy"))
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn("usage:", done.stdout)

    def test_without_torch(self):
        for script in TORCH_SCRIPTS:
            with self.subTest(script=script):
                done = self.run_script(script, blocked=("torch",))
                self.assert_missing(done, f"{script}: needs PyTorch",
                                    "python3 -m pip install torch")

    def test_with_torch_but_no_gpu(self):
        for script in TORCH_SCRIPTS:
            with self.subTest(script=script):
                done = self.run_script(script, stub_torch=True, gpu=False, blocked=("tvm_ffi",))
                self.assert_missing(done, f"{script}: needs a CUDA GPU")

    def test_with_a_gpu_but_without_the_library(self):
        for script in LIBRARY_SCRIPTS:
            with self.subTest(script=script):
                done = self.run_script(
                    script, stub_torch=True, gpu=True, blocked=("tvm_ffi",),
                    env={"CUDA_COURSE_LIB": "/nonexistent/libcourse_py.so",
                         "CUDA_COURSE_BINDING": "ctypes"})
                self.assert_missing(done, "/nonexistent/libcourse_py.so, which does not exist",
                                    "cmake --build --preset default --target course_py")

    def test_plots_without_matplotlib(self):
        for script in PLOT_SCRIPTS:
            with self.subTest(script=script):
                done = self.run_script(script, "whatever.json", blocked=("matplotlib",))
                self.assert_missing(done, "needs matplotlib",
                                    "python3 -m pip install -r tools/plots/requirements.txt")

    def test_the_jit_benchmark_without_its_packages(self):
        for package in ("jinja2", "tvm_ffi"):
            with self.subTest(package=package):
                done = self.run_script("bench_jit.py", "--arch", "sm_90a", blocked=(package,))
                self.assert_missing(done, "python/requirements-jit.txt")

    def test_the_triton_benchmark_without_triton(self):
        library = os.path.join(self.tmp.name, "libcourse_py.so")  # only its existence is checked
        open(library, "w").close()
        done = self.run_script("bench_triton.py", stub_torch=True, gpu=True,
                               blocked=("tvm_ffi", "triton"),
                               env={"CUDA_COURSE_LIB": library, "CUDA_COURSE_BINDING": "ctypes"})
        self.assert_missing(done, "bench_triton.py: needs Triton", "python3 -m pip install triton")

    def test_an_unknown_operation_is_a_usage_error(self):
        done = self.run_script("bench_triton.py", "--ops", "softmax,gemm", blocked=("torch",))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("unknown operation gemm", done.stderr)

    def test_an_unknown_binding_is_a_message(self):
        done = self.run_script("bench_layer.py", stub_torch=True, gpu=True, blocked=("tvm_ffi",),
                               env={"CUDA_COURSE_BINDING": "nope"})
        self.assert_missing(done, "CUDA_COURSE_BINDING='nope'")


if __name__ == "__main__":
    unittest.main()
