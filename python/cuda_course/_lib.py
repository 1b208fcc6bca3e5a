"""Finds and loads libcourse_py.so (ctypes), and declares the signatures of its entry points.

Where the library is: the environment variable CUDA_COURSE_LIB (a path to the .so), else a copy
next to this package (cuda_course/libcourse_py.so). Loaded on first use, so that importing the
package (and checking arguments) works on a machine without the library or a GPU.
"""

import ctypes
import os
from pathlib import Path

ENV_VAR = "CUDA_COURSE_LIB"
ABI_VERSION = 1

_lib = None

_P = ctypes.c_void_p  # a DLManagedTensor* or a cudaStream_t
_SIGNATURES = {
    "course_last_error": (ctypes.c_char_p, []),
    "course_abi_version": (ctypes.c_int, []),
    "course_rmsnorm": (ctypes.c_int, [_P, _P, _P, ctypes.c_float, _P]),
    "course_fused_add_rmsnorm": (ctypes.c_int, [_P, _P, _P, _P, ctypes.c_float, _P]),
    "course_gemm_bf16": (ctypes.c_int, [_P, _P, _P, _P]),
    "course_prefill_attention": (
        ctypes.c_int,
        [_P, _P, _P, _P, _P, _P, ctypes.c_int, ctypes.c_int, ctypes.c_float, _P],
    ),
    "course_rope_qkv": (ctypes.c_int, [_P, _P, _P, _P, _P, ctypes.c_float, _P]),
    "course_silu_and_mul": (ctypes.c_int, [_P, _P, _P]),
    "course_layer_workspace_bytes": (ctypes.c_int64, [ctypes.c_int] * 7),
    "course_decoder_layer": (
        ctypes.c_int,
        [_P] * 10
        + [ctypes.c_int] * 4
        + [ctypes.c_float, ctypes.c_float, ctypes.c_char_p, _P],
    ),
}


def library_path():
    """Where the library is looked for (the first that exists), as a Path."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / "libcourse_py.so"


def lib():
    """The loaded library (loaded once). RuntimeError saying how to build it if it is missing."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not path.is_file():
        raise RuntimeError(
            f"cuda_course: {path} does not exist. Build it (cmake --build <build> --target "
            f"course_py) and set {ENV_VAR} to <build>/labs/d14_capstone/libcourse_py.so, or copy "
            f"it next to the package."
        )
    loaded = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(loaded, name)
        fn.restype = restype
        fn.argtypes = argtypes
    version = loaded.course_abi_version()
    if version != ABI_VERSION:
        raise RuntimeError(
            f"cuda_course: {path} has ABI version {version}, this package expects {ABI_VERSION}: "
            "rebuild the library from the same checkout"
        )
    _lib = loaded
    return _lib


def call(name, *args):
    """Calls entry point `name`; a nonzero return becomes RuntimeError with the library's message."""
    library = lib()
    rc = getattr(library, name)(*args)
    if rc != 0:
        message = library.course_last_error().decode("utf-8", "replace")
        raise RuntimeError(f"{name}: {message}")
