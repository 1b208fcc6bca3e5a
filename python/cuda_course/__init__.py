"""cuda_course: the CUDA course's kernels (Days 2, 5, 6, 10, 12, 14) for PyTorch, through DLPack.

    import torch, cuda_course
    y = cuda_course.rmsnorm(x, w)          # x, w: bfloat16 CUDA tensors; no copy
    c = cuda_course.gemm(a, b)             # a @ b.T

Pure Python over one of two bindings of the same library (cuda_course.binding() says which):
TVM-FFI's (libcourse_py_tvm_ffi.so, when apache-tvm-ffi is installed) or the hand-written C ABI
through ctypes (libcourse_py.so); CUDA_COURSE_BINDING=ctypes|tvm_ffi|auto chooses. The JIT of
the course's kernels (Jinja2 templates, nvcc, TVM-FFI) is cuda_course.jit.
"""

from ._lib import binding, library_path, tvm_ffi_library_path
from .ops import (
    LAYER_WEIGHTS,
    PREFILL_KERNELS,
    STAGES,
    add_bias_gelu,
    check_mbarrier_timeouts,
    current_stream,
    decoder_layer,
    fused_add_rmsnorm,
    gemm,
    layer_workspace_bytes,
    prefill_attention,
    rmsnorm,
    rope_inv_freq,
    rope_qkv,
    silu_and_mul,
    softmax,
)

__all__ = [
    "LAYER_WEIGHTS", "PREFILL_KERNELS", "STAGES", "add_bias_gelu", "binding",
    "check_mbarrier_timeouts", "current_stream", "decoder_layer",
    "fused_add_rmsnorm", "gemm", "layer_workspace_bytes", "library_path", "prefill_attention",
    "rmsnorm", "rope_inv_freq", "rope_qkv", "silu_and_mul", "softmax", "tvm_ffi_library_path",
]
__version__ = "0.14.0"
