"""Finds and loads the course's kernels, through one of two bindings of the same functions:

* "ctypes": libcourse_py.so, the hand-written C ABI (python/csrc/course_py.cpp), its entry points
  declared below and called with DLPack capsules' pointers and the stream as arguments;
* "tvm_ffi": libcourse_py_tvm_ffi.so (python/csrc/course_py_tvm_ffi.cpp), the same functions
  exported with TVM-FFI, loaded with tvm_ffi.load_module and called on the tensors themselves
  (TVM-FFI converts them through DLPack and reads PyTorch's current stream).

Which: $CUDA_COURSE_BINDING = ctypes, tvm_ffi or auto (the default: tvm_ffi when apache-tvm-ffi
is installed and its library exists, else ctypes). Where: $CUDA_COURSE_LIB (the .so of the C ABI)
and $CUDA_COURSE_TVM_FFI_LIB, else libcourse_py_tvm_ffi.so beside libcourse_py.so, else copies
next to this package. Loaded on first use, so that importing the package (and checking
arguments) works on a machine without the libraries or a GPU.
"""

import ctypes
import os
from pathlib import Path

ENV_VAR = "CUDA_COURSE_LIB"
TVM_FFI_ENV_VAR = "CUDA_COURSE_TVM_FFI_LIB"
BINDING_ENV_VAR = "CUDA_COURSE_BINDING"
BINDINGS = ("auto", "ctypes", "tvm_ffi")
ABI_VERSION = 1

_lib = None
_tvm_module = None
_tvm_functions = {}
_binding = None

_P = ctypes.c_void_p  # a DLManagedTensor* or a cudaStream_t
_SIGNATURES = {
    "course_last_error": (ctypes.c_char_p, []),
    "course_abi_version": (ctypes.c_int, []),
    "course_rmsnorm": (ctypes.c_int, [_P, _P, _P, ctypes.c_float, _P]),
    "course_fused_add_rmsnorm": (ctypes.c_int, [_P, _P, _P, _P, ctypes.c_float, _P]),
    "course_add_bias_gelu": (ctypes.c_int, [_P, _P, _P, _P]),
    "course_softmax": (ctypes.c_int, [_P, _P, _P]),
    "course_gemm_bf16": (ctypes.c_int, [_P, _P, _P, _P]),
    "course_prefill_attention": (
        ctypes.c_int,
        [_P, _P, _P, _P, _P, _P, ctypes.c_int, ctypes.c_int, ctypes.c_float, _P],
    ),
    "course_prefill_attention_hopper": (
        ctypes.c_int,
        [_P, _P, _P, _P, _P, _P, ctypes.c_int, ctypes.c_int, ctypes.c_float, _P],
    ),
    "course_check_mbarrier_timeouts": (ctypes.c_int, []),
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
    """Calls entry point `name`; a nonzero return becomes RuntimeError with the library's
    message."""
    library = lib()
    rc = getattr(library, name)(*args)
    if rc != 0:
        message = library.course_last_error().decode("utf-8", "replace")
        raise RuntimeError(f"{name}: {message}")


# ---------------------------------------------------------------------------------------------
# The TVM-FFI binding


def tvm_ffi_library_path():
    """Where libcourse_py_tvm_ffi.so is looked for: $CUDA_COURSE_TVM_FFI_LIB, else beside the C
    ABI library (the build puts both in <build>/labs/d14_capstone/), as a Path."""
    env = os.environ.get(TVM_FFI_ENV_VAR)
    if env:
        return Path(env)
    return library_path().parent / "libcourse_py_tvm_ffi.so"


def _tvm_ffi_importable():
    try:
        import tvm_ffi  # noqa: F401
    except ImportError:
        return False
    return True


def binding():
    """The binding in use: "tvm_ffi" or "ctypes" (decided once, from $CUDA_COURSE_BINDING)."""
    global _binding
    if _binding is not None:
        return _binding
    wanted = os.environ.get(BINDING_ENV_VAR, "auto").strip().lower() or "auto"
    if wanted not in BINDINGS:
        raise RuntimeError(f"cuda_course: {BINDING_ENV_VAR}={wanted!r}: expected one of "
                           f"{', '.join(BINDINGS)}")
    if wanted == "auto":
        wanted = ("tvm_ffi" if _tvm_ffi_importable() and tvm_ffi_library_path().is_file()
                  else "ctypes")
    _binding = wanted
    return _binding


def reset_binding():
    """Forget the decision (and the loaded TVM-FFI module): the next call decides again. For
    tests that change the environment."""
    global _binding, _tvm_module
    _binding = None
    _tvm_module = None
    _tvm_functions.clear()


def tvm_module():
    """The loaded TVM-FFI module (loaded once). RuntimeError saying what is missing."""
    global _tvm_module
    if _tvm_module is not None:
        return _tvm_module
    if not _tvm_ffi_importable():
        raise RuntimeError("cuda_course: the tvm_ffi binding needs apache-tvm-ffi: pip install "
                           "apache-tvm-ffi (or set CUDA_COURSE_BINDING=ctypes)")
    import tvm_ffi

    path = tvm_ffi_library_path()
    if not path.is_file():
        raise RuntimeError(
            f"cuda_course: {path} does not exist. Build it (cmake --build --preset default "
            f"--target course_py_tvm_ffi, with apache-tvm-ffi installed when CMake configures) "
            f"and set {TVM_FFI_ENV_VAR}, or set CUDA_COURSE_BINDING=ctypes"
        )
    module = tvm_ffi.load_module(str(path))
    version = module.abi_version()
    if version != ABI_VERSION:
        raise RuntimeError(f"cuda_course: {path} has ABI version {version}, this package expects "
                           f"{ABI_VERSION}: rebuild the library from the same checkout")
    _tvm_module = module
    return module


def tvm_call(name, stream, *args):
    """Calls `name` of the TVM-FFI module. stream None: the caller's current stream, which
    TVM-FFI reads from PyTorch at the call; a cudaStream_t (int): that stream, made PyTorch's
    current one for the call (TVM-FFI takes PyTorch's over any other setting)."""
    fn = _tvm_functions.get(name)
    if fn is None:
        fn = _tvm_functions[name] = tvm_module().get_function(name)
    if stream is None:
        return fn(*args)
    import torch

    current = torch.cuda.current_stream()
    if int(current.cuda_stream) == int(stream):
        return fn(*args)
    chosen = (torch.cuda.default_stream() if int(stream) == 0
              else torch.cuda.ExternalStream(int(stream)))
    with torch.cuda.stream(chosen):
        return fn(*args)
