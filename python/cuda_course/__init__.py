"""cuda_course: the CUDA course's kernels (Days 6, 10, 12, 14) for PyTorch, through DLPack.

    import torch, cuda_course
    y = cuda_course.rmsnorm(x, w)          # x, w: bfloat16 CUDA tensors; no copy
    c = cuda_course.gemm(a, b)             # a @ b.T

Pure Python: ctypes loads libcourse_py.so (CUDA_COURSE_LIB, or next to this package).
"""

from ._lib import library_path
from .ops import (
    LAYER_WEIGHTS,
    STAGES,
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
)

__all__ = [
    "LAYER_WEIGHTS", "STAGES", "current_stream", "decoder_layer", "fused_add_rmsnorm", "gemm",
    "layer_workspace_bytes", "library_path", "prefill_attention", "rmsnorm", "rope_inv_freq",
    "rope_qkv", "silu_and_mul",
]
__version__ = "0.14.0"
