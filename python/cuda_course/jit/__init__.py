"""cuda_course.jit: the course's kernels compiled just in time, the way FlashInfer ships its own.

    import torch, cuda_course.jit as jit
    y = jit.rmsnorm(x, w)                      # Day 6's RMSNorm, specialised for x's dtype and
                                               # hidden size
    o, lse = jit.decode_attention(q, k_cache, v_cache, indptr, page_indices, last_page_len)

A kernel is a Jinja2 template (templates/*.cu.jinja); the arguments of a call pick its
parameters (dtype, hidden size and vector width; dtype, head dimension and group size); the
rendered source is compiled by nvcc through ninja for the GPU's architecture into a shared
library that exports its functions with TVM-FFI; tvm_ffi.load_module loads it, and calling it
on torch tensors passes them through DLPack, on PyTorch's current stream. The library is kept
in an on-disk cache keyed by the source, the compiler, its options, the architecture and
TVM-FFI's version (Day 13's rules: _cache.py), so only the first use of a specialisation, on a
machine, compiles. Needs jinja2, ninja and apache-tvm-ffi (python/requirements-jit.txt), and
nvcc; PyTorch only to allocate outputs and to find the GPU's architecture.
"""

from ._cache import CompileError, JitCache, cache_key, default_root
from ._ops import (
    compile_all,
    decode_attention,
    decode_spec,
    default_cache,
    fused_add_rmsnorm,
    rmsnorm,
    rmsnorm_plan,
    rmsnorm_spec,
    validate_page_table,
)
from ._render import TEMPLATES, JitSpec
from ._toolchain import (
    DEFAULT_TEST_ARCH,
    HostCxxToolchain,
    NvccToolchain,
    device_arch,
    normalize_arch,
)

__all__ = [
    "DEFAULT_TEST_ARCH", "TEMPLATES", "CompileError", "HostCxxToolchain", "JitCache", "JitSpec",
    "NvccToolchain", "cache_key", "compile_all", "decode_attention", "decode_spec",
    "default_cache", "default_root", "device_arch", "fused_add_rmsnorm", "normalize_arch",
    "rmsnorm", "rmsnorm_plan", "rmsnorm_spec", "validate_page_table",
]
