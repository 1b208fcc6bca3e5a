"""What the scripts of python/ need, checked before they start: each check that fails prints
what is missing and the command that installs or builds it, and exits with status MISSING (3),
never with a traceback.

    from needs import MISSING, torch_with_gpu, triton, course_library, courseplots
    torch = torch_with_gpu("bench_layer.py")     # the module, or exit 3 saying what to do
"""

import os
import sys

MISSING = 3  # exit status of a script whose requirement (package, GPU, library) is missing

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def fail(script, what, how):
    print(f"{script}: {what}.\n  {how}", file=sys.stderr)
    sys.exit(MISSING)


def torch_with_gpu(script):
    """PyTorch with a CUDA GPU visible, or exit MISSING."""
    try:
        import torch
    except ImportError:
        fail(script, "needs PyTorch, which is not installed",
             "Install it: python3 -m pip install torch (a CUDA build; see pytorch.org for the "
             "one that matches your driver)")
    if not torch.cuda.is_available():
        fail(script, "needs a CUDA GPU, and PyTorch sees none (torch.cuda.is_available() is "
             "False)", "Run it on a machine with an NVIDIA GPU and a CUDA build of PyTorch")
    return torch


def triton(script):
    """Triton, the compiler of cuda_course.triton_ops's kernels (and torch.compile's), or exit
    MISSING."""
    try:
        import triton
    except ImportError:
        fail(script, "needs Triton, which is not installed",
             "Install it: python3 -m pip install triton (PyTorch's Linux wheels bring it with "
             "them)")
    return triton


def numpy(script):
    """numpy (the float64 references of cuda_course.reference), or exit MISSING."""
    try:
        import numpy
    except ImportError:
        fail(script, "needs numpy, which is not installed",
             "Install it: python3 -m pip install numpy")
    return numpy


def course_library(script):
    """The library of the binding cuda_course will use (python/README.md), or exit MISSING."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cuda_course
    from cuda_course import _lib

    try:
        which = cuda_course.binding()
    except RuntimeError as e:
        fail(script, str(e), "Set CUDA_COURSE_BINDING to auto, ctypes or tvm_ffi")
    path = _lib.tvm_ffi_library_path() if which == "tvm_ffi" else _lib.library_path()
    target = "course_py_tvm_ffi" if which == "tvm_ffi" else "course_py"
    if not path.is_file():
        fail(script, f"needs the course's library {path}, which does not exist",
             f"Build it: cmake --preset default && cmake --build --preset default --target "
             f"{target}, then export CUDA_COURSE_LIB=$PWD/build/default/labs/d14_capstone/"
             f"libcourse_py.so (python/README.md)")
    return cuda_course


def courseplots(script):
    """The course's plotting package (tools/plots/courseplots, on matplotlib), or exit
    MISSING."""
    plots = os.path.join(REPO, "tools", "plots")
    if not os.path.isdir(os.path.join(plots, "courseplots")):
        fail(script, f"needs the course's plotting package, expected in {plots}",
             "Run it from the course's checkout (python/ beside tools/)")
    sys.path.insert(0, plots)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        fail(script, "needs matplotlib, which is not installed",
             "Install it: python3 -m pip install -r tools/plots/requirements.txt")
    from courseplots import figures
    from courseplots.data import InputError

    return figures, InputError


def plot_json(doc, script, wrote_by, what, default_out, plot):
    """The command line of a plot_*.py script: one JSON file that `wrote_by` wrote, drawn by
    courseplots.figures' function named `plot` into --out (PNG and SVG); a file that is not
    what it should be exits with the reason, not a traceback."""
    import argparse  # noqa: PLC0415

    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("json", help=f"the file {wrote_by} wrote")
    p.add_argument("--out", default=default_out, help="output path without extension")
    args = p.parse_args()
    figures, InputError = courseplots(script)
    try:
        data = figures.load_json(args.json, what)
        paths = getattr(figures, plot)(data, os.path.dirname(args.out) or ".",
                                       os.path.basename(args.out))
    except InputError as e:
        sys.exit(f"{script}: {e}")
    for path in paths:
        print(f"wrote {path}")
