"""The JIT's operations: pick the specialisation from the arguments, check them, get the module
(memory, disk or compile) and call it on the caller's tensors.

Per call, after the first: the checks below, one dict lookup, and the TVM-FFI call, which
converts each torch.Tensor through DLPack (no copy) and makes PyTorch's current stream the
stream the module reads (TVMFFIEnvGetStream). A wrong dtype is a TypeError, a wrong shape,
layout or device a ValueError, each naming the argument; the module checks again in C++ (the
second line, for any other caller) and raises the same kinds of error.
"""

import math
import threading

from .. import _dlpack
from ._cache import JitCache
from ._render import JitSpec
from ._toolchain import normalize_arch

# Element types: (C++ type, course_ffi constant of the DLPack type, bytes).
DTYPES = {
    "float32": ("float", "kFloat32", 4),
    "float16": ("__half", "kFloat16", 2),
    "bfloat16": ("__nv_bfloat16", "kBFloat16", 2),
}
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}

MAX_HIDDEN = 16384  # Day 6's kMaxHidden
MAX_VECS_PER_THREAD = 4  # Day 6's row split: 4 x 16 bytes in flight per thread
MID_THREADS = 256
DECODE_HEAD_DIMS = (64, 128)
MAX_GROUP_SIZE = 8
MAX_SPLITS = 128

_default_cache = None
_functions = {}
_lock = threading.Lock()


def default_cache():
    """The process's JitCache (root: $CUDA_COURSE_JIT_CACHE or ~/.cache/cuda-course/jit)."""
    global _default_cache
    with _lock:
        if _default_cache is None:
            _default_cache = JitCache()
        return _default_cache


# ---------------------------------------------------------------------------------------------
# Specialisations


def rmsnorm_plan(hidden, vec):
    """Day 6's row split for a row of `hidden` elements in vectors of `vec`: (threads per row,
    vectors per thread). One warp when that leaves at most 4 vectors a thread, else 256
    threads on the same condition, else 1024. Day 6 rounds the vectors per thread up to a power
    of two (its kernels are compiled ahead of time for 1, 2, 4, 8, 16); here it is exact."""
    vecs = hidden // vec
    if vecs <= MAX_VECS_PER_THREAD * 32:
        threads = 32
    elif vecs <= MAX_VECS_PER_THREAD * MID_THREADS:
        threads = MID_THREADS
    else:
        threads = 1024
    return threads, -(-vecs // threads)


def rmsnorm_spec(dtype, hidden, vec=None, fused_add=False):
    """The JitSpec of Day 6's RMSNorm (or fused add + RMSNorm) for one dtype, hidden size and
    vector width (default: the one a call on 16-byte aligned tensors gets)."""
    if dtype not in DTYPES:
        raise TypeError(f"dtype: expected one of {', '.join(DTYPES)}, got {dtype}")
    ctype, dl_dtype, size = DTYPES[dtype]
    hidden = int(hidden)
    if vec is None:
        vec = _widest_vec(dtype, hidden)
    if not 1 <= hidden <= MAX_HIDDEN:
        raise ValueError(f"hidden: must be in [1, {MAX_HIDDEN}] (Day 6's limit), got {hidden}")
    if vec not in (1, 16 // size) or hidden % vec:
        raise ValueError(f"vec: must be 1 or {16 // size} (16 bytes of {dtype}) and divide "
                         f"hidden = {hidden}, got {vec}")
    threads, items = rmsnorm_plan(hidden, vec)
    op = "fused_add_rmsnorm" if fused_add else "rmsnorm"
    params = {"dtype": dtype, "ctype": ctype, "dl_dtype": dl_dtype, "hidden": hidden,
              "vec": vec, "threads": threads, "items": items, "fused_add": bool(fused_add)}
    name = f"{op}_{SHORT[dtype]}_h{hidden}_v{vec}_t{threads}_i{items}"
    return JitSpec(name, "rmsnorm.cu.jinja", params, exports=(op, "spec"))


def decode_spec(dtype, head_dim, group_size):
    """The JitSpec of Day 11's decode attention for one dtype, head dimension and group size
    (query heads per KV head)."""
    if dtype not in ("float16", "bfloat16"):
        raise TypeError(f"dtype: decode attention takes float16 or bfloat16, got {dtype}")
    if head_dim not in DECODE_HEAD_DIMS:
        raise ValueError(f"head_dim: must be 64 or 128 (Day 11's tiles), got {head_dim}")
    if not 1 <= group_size <= MAX_GROUP_SIZE:
        raise ValueError(f"group_size: query heads per KV head must be 1 .. {MAX_GROUP_SIZE}, "
                         f"got {group_size}")
    ctype, dl_dtype, _ = DTYPES[dtype]
    params = {"dtype": dtype, "ctype": ctype, "dl_dtype": dl_dtype, "head_dim": int(head_dim),
              "group_size": int(group_size)}
    name = f"decode_{SHORT[dtype]}_d{head_dim}_g{group_size}"
    return JitSpec(name, "decode_attention.cu.jinja", params, exports=("decode_attention", "spec"))


def _function(spec, export, arch, cache):
    """The module function `export` of `spec` for `arch`, memoised per (spec, arch, cache) so
    that a warm call renders nothing and hashes nothing."""
    cache = cache or default_cache()
    arch = cache.resolve_arch(arch)
    memo = (spec.name, arch, id(cache), str(cache.root))
    fn = _functions.get(memo)
    if fn is None:
        fn = cache.load(spec, arch).get_function(export)
        _functions[memo] = fn
    return fn


# ---------------------------------------------------------------------------------------------
# Arguments


def _check(meta, dtypes=None, ndim=None, shape=None):
    """TypeError / ValueError naming the argument when it is not what the kernel takes; `shape`
    may hold None for a free dimension. Returns meta."""
    if dtypes is not None and meta.dtype not in dtypes:
        raise TypeError(f"{meta.name}: expected dtype {' or '.join(dtypes)}, got {meta.dtype}")
    if ndim is not None and len(meta.shape) != ndim:
        raise ValueError(f"{meta.name}: expected {ndim} dimensions, got {len(meta.shape)} "
                         f"(shape {meta.shape})")
    if shape is not None and (len(shape) != len(meta.shape) or any(
            want is not None and want != got for want, got in zip(shape, meta.shape))):
        raise ValueError(f"{meta.name}: expected shape {_dlpack.shape_text(shape)}, got "
                         f"{meta.shape}")
    if not meta.is_contiguous():
        raise ValueError(f"{meta.name}: must be contiguous (row-major, no gaps), got shape "
                         f"{meta.shape}: call .contiguous() first")
    return meta


def _meta(obj, name, dtypes=None, ndim=None, shape=None):
    """The checked TensorMeta of one argument (its device is checked later, with the others')."""
    return _check(_dlpack.describe(obj, name, require_cuda=False), dtypes, ndim, shape)


def _on_one_cuda_device(*metas):
    for m in metas:
        _dlpack.require_cuda_device(m)
    devices = {m.device_id for m in metas}
    if len(devices) > 1:
        listed = ", ".join(f"{m.name} on cuda:{m.device_id}" for m in metas)
        raise ValueError(f"all tensors must be on the same CUDA device: {listed}")


def _torch():
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("cuda_course.jit: allocating outputs needs PyTorch (or pass out=)") \
            from e
    return torch


def _check_eps(eps):
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps: must be a finite number >= 0, got {eps!r}")


# ---------------------------------------------------------------------------------------------
# Operations


def rmsnorm(x, weight, eps=1e-5, out=None, arch=None, cache=None):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last dimension, by a module specialised
    for x's dtype (float32, float16, bfloat16), hidden size and the widest vector its pointers
    allow. x [rows, hidden] (hidden <= 16384), weight [hidden], on PyTorch's current stream.
    The first call for a specialisation compiles it (seconds), or loads it from the disk cache."""
    mx = _meta(x, "x", tuple(DTYPES), 2)
    hidden = mx.shape[1]
    mw = _meta(weight, "weight", (mx.dtype,), 1, (hidden,))
    _check_eps(eps)
    if not 1 <= hidden <= MAX_HIDDEN:
        raise ValueError(f"x: hidden = {hidden} must be in [1, {MAX_HIDDEN}]")
    if out is None:
        _on_one_cuda_device(mx, mw)
        out = _torch().empty_like(x)
    mo = _meta(out, "out", (mx.dtype,), 2, mx.shape)
    _on_one_cuda_device(mx, mw, mo)
    vec = _widest_vec(mx.dtype, hidden, mx, mw, mo)
    fn = _function(rmsnorm_spec(mx.dtype, hidden, vec), "rmsnorm", arch, cache)
    fn(x, weight, out, float(eps))
    return out


def fused_add_rmsnorm(x, residual, weight, eps=1e-5, out=None, arch=None, cache=None):
    """residual += x (in place); returns rmsnorm(residual) * weight, computed from the float32
    sums (Day 6's fused_add_rmsnorm). out may be x itself."""
    mx = _meta(x, "x", tuple(DTYPES), 2)
    hidden = mx.shape[1]
    mr = _meta(residual, "residual", (mx.dtype,), 2, mx.shape)
    mw = _meta(weight, "weight", (mx.dtype,), 1, (hidden,))
    _check_eps(eps)
    if not 1 <= hidden <= MAX_HIDDEN:
        raise ValueError(f"x: hidden = {hidden} must be in [1, {MAX_HIDDEN}]")
    if out is None:
        _on_one_cuda_device(mx, mr, mw)
        out = _torch().empty_like(x)
    mo = _meta(out, "out", (mx.dtype,), 2, mx.shape)
    _on_one_cuda_device(mx, mr, mw, mo)
    vec = _widest_vec(mx.dtype, hidden, mx, mr, mw, mo)
    fn = _function(rmsnorm_spec(mx.dtype, hidden, vec, fused_add=True), "fused_add_rmsnorm",
                   arch, cache)
    fn(x, residual, weight, out, float(eps))
    return out


def _widest_vec(dtype, hidden, *metas):
    """16 bytes' worth of elements when hidden is a multiple of it and every pointer is 16-byte
    aligned (Day 6's rule), else 1: a tensor at an odd offset gets its own specialisation."""
    vec = 16 // DTYPES[dtype][2]
    if hidden % vec == 0 and all(m.data % 16 == 0 for m in metas):
        return vec
    return 1


def validate_page_table(indptr, page_indices, last_page_len, num_pages, page_size,
                        num_qo_heads=None, num_kv_heads=None):
    """Day 11's validate_decode on host lists of ints: ValueError naming the first problem (so
    that an index out of range is a message, never an illegal address). Returns the sequence
    lengths."""
    f = "decode_attention: "
    batch = len(last_page_len)
    if page_size < 1:
        raise ValueError(f"{f}page_size = {page_size} must be at least 1 token")
    if not 1 <= num_pages <= 2**31 - 1:
        raise ValueError(f"{f}num_pages = {num_pages} must be in 1 .. 2^31 - 1")
    if num_pages * page_size > 2**32:
        raise ValueError(f"{f}num_pages * page_size = {num_pages * page_size} token slots: at "
                         f"most 2^32 (the kernel indexes cache rows in 32 bits)")
    if num_qo_heads is not None and num_kv_heads is not None:
        if num_kv_heads < 1 or num_qo_heads < 1 or num_qo_heads % num_kv_heads:
            raise ValueError(f"{f}num_qo_heads = {num_qo_heads} is not a positive multiple of "
                             f"num_kv_heads = {num_kv_heads}")
    if batch < 1:
        raise ValueError(f"{f}the batch is empty (last_page_len has no entry)")
    if len(indptr) != batch + 1:
        raise ValueError(f"{f}indptr has {len(indptr)} entries, expected batch + 1 = "
                         f"{batch + 1}")
    if indptr[0] != 0:
        raise ValueError(f"{f}indptr[0] = {indptr[0]}, expected 0")
    for b in range(batch):
        if indptr[b + 1] < indptr[b]:
            raise ValueError(f"{f}indptr decreases at sequence {b} (indptr[{b}] = {indptr[b]} "
                             f"> indptr[{b + 1}] = {indptr[b + 1]})")
        if indptr[b + 1] == indptr[b]:
            raise ValueError(f"{f}sequence {b} has no page (every sequence holds at least its "
                             f"new token)")
    if indptr[batch] != len(page_indices):
        raise ValueError(f"{f}indptr[batch] = {indptr[batch]} but page_indices has "
                         f"{len(page_indices)} entries")
    for i, p in enumerate(page_indices):
        if not 0 <= p < num_pages:
            raise ValueError(f"{f}page_indices[{i}] = {p} is out of range: the cache has pages "
                             f"0 .. {num_pages - 1}")
    lengths = []
    for b in range(batch):
        last = last_page_len[b]
        if not 1 <= last <= page_size:
            raise ValueError(f"{f}last_page_len[{b}] = {last} does not fit a page: expected "
                             f"1 .. page_size = {page_size}")
        n = (indptr[b + 1] - indptr[b] - 1) * page_size + last
        if n > 2**31 - 1:
            raise ValueError(f"{f}sequence {b} is longer than 2^31 - 1 tokens")
        lengths.append(n)
    return lengths


def _host_ints(obj):
    """A 1-D int32 tensor's values as a list (copied to the host: a synchronisation)."""
    if hasattr(obj, "tolist") and type(obj).__module__.startswith("torch"):
        return [int(v) for v in obj.tolist()]
    torch = _torch()
    return [int(v) for v in torch.from_dlpack(obj).cpu().tolist()]


def decode_attention(q, k_cache, v_cache, kv_indptr, kv_page_indices, kv_last_page_len,
                     scale=None, num_splits=1, out=None, lse=None, check_table=True, arch=None,
                     cache=None):
    """Day 11's decode attention over a paged KV cache, by a module specialised for the dtype
    (float16, bfloat16), the head dimension (64, 128) and the group size (num_qo_heads /
    num_kv_heads, 1 to 8). q [B, Hq, D]; k_cache, v_cache [pages, page_size, Hkv, D] (NHD);
    kv_indptr int32 [B + 1], kv_page_indices int32 [kv_indptr[B]], kv_last_page_len int32 [B]
    (Day 11's CSR page table, on the GPU). Returns (out [B, Hq, D], lse float32 [B, Hq]; lse in
    natural log). num_splits > 1: split-KV with a float32 workspace allocated here.
    check_table=True copies the page table to the host and validates it first (a
    synchronisation: in a decode loop, validate once and pass check_table=False after)."""
    mq = _meta(q, "q", ("float16", "bfloat16"), 3)
    batch, heads, dim = mq.shape
    mk = _meta(k_cache, "k_cache", (mq.dtype,), 4, (None, None, None, dim))
    pages, page_size, kv_heads, _ = mk.shape
    mv = _meta(v_cache, "v_cache", (mq.dtype,), 4, mk.shape)
    mi = _meta(kv_indptr, "kv_indptr", ("int32",), 1, (batch + 1,))
    mp = _meta(kv_page_indices, "kv_page_indices", ("int32",), 1)
    ml = _meta(kv_last_page_len, "kv_last_page_len", ("int32",), 1, (batch,))
    if dim not in DECODE_HEAD_DIMS:
        raise ValueError(f"q: head_dim must be 64 or 128 (Day 11's tiles), got {dim}")
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"q: num_qo_heads = {heads} must be a multiple of k_cache's "
                         f"num_kv_heads = {kv_heads}")
    group = heads // kv_heads
    if not 1 <= group <= MAX_GROUP_SIZE:
        raise ValueError(f"q: {group} query heads per KV head; the kernel holds 1 .. "
                         f"{MAX_GROUP_SIZE}")
    if not isinstance(num_splits, int) or not 1 <= num_splits <= MAX_SPLITS:
        raise ValueError(f"num_splits: must be an int in 1 .. {MAX_SPLITS}, got {num_splits!r}")
    if scale is None:
        scale = 1.0 / math.sqrt(dim)
    if not math.isfinite(scale):
        raise ValueError(f"scale: must be finite, got {scale!r}")
    metas = [mq, mk, mv, mi, mp, ml]
    _on_one_cuda_device(*metas)
    if any(m.data % 16 for m in (mq, mk, mv)):
        raise ValueError("q, k_cache, v_cache: must be 16-byte aligned (rows move in 16-byte "
                         "chunks)")
    if check_table:
        validate_page_table(_host_ints(kv_indptr), _host_ints(kv_page_indices),
                            _host_ints(kv_last_page_len), pages, page_size, heads, kv_heads)
    torch = None
    if out is None or lse is None or num_splits > 1:
        torch = _torch()
    if out is None:
        out = torch.empty_like(q)
    if lse is None:
        lse = torch.empty((batch, heads), dtype=torch.float32, device=q.device)
    mo = _meta(out, "out", (mq.dtype,), 3, mq.shape)
    mlse = _meta(lse, "lse", ("float32",), 2, (batch, heads))
    _on_one_cuda_device(*metas, mo, mlse)
    if mo.data % 16:
        raise ValueError("out: must be 16-byte aligned")
    partial_o = partial_lse = None
    if num_splits > 1:
        partial_o = torch.empty((batch, heads, num_splits, dim), dtype=torch.float32,
                                device=q.device)
        partial_lse = torch.empty((batch, heads, num_splits), dtype=torch.float32,
                                  device=q.device)
    fn = _function(decode_spec(mq.dtype, dim, group), "decode_attention", arch, cache)
    fn(q, k_cache, v_cache, kv_indptr, kv_page_indices, kv_last_page_len, out, lse, partial_o,
       partial_lse, num_splits, float(scale))
    return out, lse


def compile_all(arch=None, cache=None, specs=None, jobs=None):
    """Builds (or finds) modules ahead of their first call, side by side (JitCache.build_all),
    e.g. before a benchmark: `specs`, by default the common specialisations (RMSNorm bfloat16 at
    hidden 4096 and 8192, decode attention bfloat16/float16 at head_dim 128, groups 1, 4, 8).
    Returns the number of compiles it did."""
    cache = cache or default_cache()
    if specs is None:
        specs = [rmsnorm_spec("bfloat16", h) for h in (4096, 8192)]
        specs += [decode_spec(d, 128, g) for d in ("bfloat16", "float16") for g in (1, 4, 8)]
    return cache.build_all(specs, None if arch is None else normalize_arch(arch), jobs=jobs)
