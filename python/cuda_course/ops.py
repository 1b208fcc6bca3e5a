"""The course's kernels as functions of DLPack tensors (torch tensors on a CUDA device).

Every function checks its arguments in Python first (TypeError for a wrong dtype or a
non-tensor, ValueError for a wrong shape, device or layout, each naming the argument and what
was expected), then calls the library on the current CUDA stream of PyTorch (or `stream=`, a
cudaStream_t as an int), through the binding _lib.binding() chose: the TVM-FFI module (given
the tensors themselves) or the C ABI through ctypes (given their DLPack capsules' pointers).
Outputs are allocated with PyTorch unless `out=` is given.
"""

import math

from . import _dlpack, _lib
from ._lib import call, tvm_call

_BF16 = "bfloat16"


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("cuda_course: allocating outputs needs PyTorch (or pass out=)") from e
    return torch


def current_stream():
    """The cudaStream_t of PyTorch's current stream (0 without PyTorch: the legacy stream)."""
    try:
        import torch
    except ImportError:
        return 0
    if not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream().cuda_stream)


def _tvm():
    return _lib.binding() == "tvm_ffi"


def _stream(stream):
    """The stream handle to pass: None (TVM-FFI reads PyTorch's current stream itself) or an
    int cudaStream_t."""
    if stream is None:
        return None if _tvm() else current_stream()
    return int(stream)


def _view(obj, name, stream):
    """What the checks read of one tensor: its attributes (TVM-FFI is given the tensor itself)
    or its borrowed DLPack capsule (ctypes is given the capsule's pointer)."""
    if _tvm():
        return _dlpack.describe(obj, name)
    return _dlpack.borrow(obj, name, stream)


def _empty(like, shape, dtype=None):
    torch = _torch()
    return torch.empty(shape, dtype=dtype or like.dtype, device=like.device)


def _args(stream, **tensors):
    """Borrows every tensor (the capsules are asked for on `stream`) and checks they share one
    device. Returns {name: Arg}."""
    got = {name: _view(t, name, stream) for name, t in tensors.items()}
    _dlpack.same_device(*got.values())
    return got


def rmsnorm(x, weight, eps=1e-5, out=None, stream=None):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last dimension (Day 6). x [rows, hidden]."""
    s = _stream(stream)
    if out is None and hasattr(x, "shape"):
        _view(x, "x", s)  # device/type errors before allocating
        out = _empty(x, tuple(x.shape))
    a = _args(s, x=x, weight=weight, out=out)
    rows, hidden = _dlpack.check(a["x"], _BF16, 2).shape
    _dlpack.check(a["weight"], _BF16, 1, (hidden,))
    _dlpack.check(a["out"], _BF16, 2, (rows, hidden))
    if _tvm():
        tvm_call("rmsnorm", s, x, weight, out, float(eps))
    else:
        call("course_rmsnorm", a["x"].pointer, a["weight"].pointer, a["out"].pointer, eps, s)
    return out


def fused_add_rmsnorm(x, residual, weight, eps=1e-5, out=None, stream=None):
    """residual += x (in place); returns rmsnorm(residual) * weight (Day 6)."""
    s = _stream(stream)
    if out is None and hasattr(x, "shape"):
        _view(x, "x", s)
        out = _empty(x, tuple(x.shape))
    a = _args(s, x=x, residual=residual, weight=weight, out=out)
    rows, hidden = _dlpack.check(a["x"], _BF16, 2).shape
    _dlpack.check(a["residual"], _BF16, 2, (rows, hidden))
    _dlpack.check(a["weight"], _BF16, 1, (hidden,))
    _dlpack.check(a["out"], _BF16, 2, (rows, hidden))
    if _tvm():
        tvm_call("fused_add_rmsnorm", s, x, residual, weight, out, float(eps))
    else:
        call("course_fused_add_rmsnorm", a["x"].pointer, a["residual"].pointer,
             a["weight"].pointer, a["out"].pointer, eps, s)
    return out


_FLOATS = ("float32", "float16", "bfloat16")  # the element types Days 2 and 5 compile for
_SOFTMAX_MAX_COLS = 1 << 30  # d05::kMaxCols
_SOFTMAX_MAX_ROWS = (1 << 31) - 1  # one block per row, in one grid


def _float_dtype(arg):
    """The dtype of x for Days 2 and 5, which take float32, float16 or bfloat16 (TypeError
    otherwise); every other argument must then have the same."""
    if arg.dtype not in _FLOATS:
        raise TypeError(f"{arg.name}: expected dtype float32, float16 or bfloat16, got "
                        f"{arg.dtype}")
    return arg.dtype


def _overlap(a, b):
    """Whether two checked tensors' bytes overlap (both are contiguous)."""
    size_a = math.prod(a.shape) * _dlpack.DTYPES[a.dtype][1] // 8
    size_b = math.prod(b.shape) * _dlpack.DTYPES[b.dtype][1] // 8
    return size_a > 0 and size_b > 0 and a.data < b.data + size_b and b.data < a.data + size_a


def add_bias_gelu(x, bias, out=None, stream=None):
    """y = gelu(x + bias), GeLU's tanh approximation, x [rows, cols], bias [cols]: Day 2's fused
    kernel (add_bias_gelu_fused). float32, float16 or bfloat16, computed in float32."""
    s = _stream(stream)
    if out is None and hasattr(x, "shape"):
        _view(x, "x", s)
        out = _empty(x, tuple(x.shape))
    a = _args(s, x=x, bias=bias, out=out)
    dtype = _float_dtype(a["x"])
    rows, cols = _dlpack.check(a["x"], dtype, 2).shape
    _dlpack.check(a["bias"], dtype, 1, (cols,))
    _dlpack.check(a["out"], dtype, 2, (rows, cols))
    if _tvm():
        tvm_call("add_bias_gelu", s, x, bias, out)
    else:
        call("course_add_bias_gelu", a["x"].pointer, a["bias"].pointer, a["out"].pointer, s)
    return out


def softmax(x, out=None, stream=None):
    """y[r, :] = softmax(x[r, :]) for x [rows, cols]: Day 5's one-block-per-row kernel
    (softmax_2_block_per_row). float32, float16 or bfloat16, computed in float32; out must not
    overlap x."""
    s = _stream(stream)
    if out is None and hasattr(x, "shape"):
        _view(x, "x", s)
        out = _empty(x, tuple(x.shape))
    a = _args(s, x=x, out=out)
    dtype = _float_dtype(a["x"])
    rows, cols = _dlpack.check(a["x"], dtype, 2).shape
    _dlpack.check(a["out"], dtype, 2, (rows, cols))
    if cols > _SOFTMAX_MAX_COLS:
        raise ValueError(f"x: at most 2^30 columns, got {cols}")
    if rows > _SOFTMAX_MAX_ROWS:
        raise ValueError(f"x: at most 2^31 - 1 rows (one block per row), got {rows}")
    if _overlap(a["x"], a["out"]):
        raise ValueError("out: must not overlap x (the softmax reads x while it writes out)")
    if _tvm():
        tvm_call("softmax", s, x, out)
    else:
        call("course_softmax", a["x"].pointer, a["out"].pointer, s)
    return out


def gemm(a, b, out=None, stream=None):
    """a [M, K] @ b[N, K].T -> [M, N], bfloat16 (Day 10: step 7 on compute capability 9.0, step 6
    elsewhere). K must be a multiple of 8 (16-byte rows)."""
    s = _stream(stream)
    if out is None and hasattr(a, "shape") and hasattr(b, "shape"):
        _view(a, "a", s)
        out = _empty(a, (a.shape[0], b.shape[0]))
    t = _args(s, a=a, b=b, out=out)
    m, k = _dlpack.check(t["a"], _BF16, 2).shape
    n = _dlpack.check(t["b"], _BF16, 2, (None, k)).shape[0]
    _dlpack.check(t["out"], _BF16, 2, (m, n))
    if k % 8:
        raise ValueError(f"a: K = {k} must be a multiple of 8 (16-byte rows for the GEMM's copies)")
    if _tvm():
        tvm_call("gemm_bf16", s, a, b, out)
    else:
        call("course_gemm_bf16", t["a"].pointer, t["b"].pointer, t["out"].pointer, s)
    return out


PREFILL_KERNELS = ("mma", "hopper")


def prefill_attention(q, k, v, cu_seqlens, max_seqlen, causal=True, scale=None, stream=None,
                      kernel="mma"):
    """Day 12's FlashAttention-2-style prefill over a packed batch. q [T, H, D], k, v [T, Hkv, D]
    bfloat16, cu_seqlens int32 [B + 1] (the same for queries and keys). Returns (o [T, H, D],
    lse float32 [H, T]). kernel: "mma" (Exercise 2, mma.sync, head dim 64 or 128, any GPU from
    sm_80) or "hopper" (Exercise 6, TMA + wgmma, head dim 128, compute capability 9.0 only; a
    wait on an mbarrier that gave up is reported by check_mbarrier_timeouts(), which
    synchronises)."""
    if kernel not in PREFILL_KERNELS:
        raise ValueError(f"kernel: one of {', '.join(PREFILL_KERNELS)}, got {kernel!r}")
    s = _stream(stream)
    _view(q, "q", s)
    torch = _torch()
    total, heads, dim = tuple(q.shape) if len(q.shape) == 3 else (0, 0, 0)
    o = _empty(q, tuple(q.shape))
    lse = _empty(q, (heads, total), dtype=torch.float32)
    a = _args(s, q=q, k=k, v=v, cu_seqlens=cu_seqlens, out=o, lse=lse)
    total, heads, dim = _dlpack.check(a["q"], _BF16, 3).shape
    kv_heads = _dlpack.check(a["k"], _BF16, 3, (total, None, dim)).shape[1]
    _dlpack.check(a["v"], _BF16, 3, (total, kv_heads, dim))
    _dlpack.check(a["cu_seqlens"], "int32", 1)
    if dim not in ((64, 128) if kernel == "mma" else (128,)):
        raise ValueError(f"q: head_dim must be {'64 or 128' if kernel == 'mma' else '128'} for "
                         f"the {kernel} kernel, got {dim}")
    if heads % kv_heads:
        raise ValueError(f"k: num_heads {heads} must be a multiple of num_kv_heads {kv_heads}")
    if scale is None:
        scale = 1.0 / math.sqrt(dim)
    suffix = "" if kernel == "mma" else "_hopper"
    if _tvm():
        tvm_call("prefill_attention" + suffix, s, q, k, v, o, lse, cu_seqlens, int(max_seqlen),
                 bool(causal), float(scale))
    else:
        call("course_prefill_attention" + suffix, a["q"].pointer, a["k"].pointer,
             a["v"].pointer, a["out"].pointer, a["lse"].pointer, a["cu_seqlens"].pointer,
             int(max_seqlen), int(bool(causal)), float(scale), s)
    return o, lse


def check_mbarrier_timeouts():
    """Waits for the GPU; raises RuntimeError if a Hopper kernel (prefill_attention(...,
    kernel="hopper")) gave up a wait on an mbarrier since the last call: its output is then not
    to be trusted."""
    if _tvm():
        tvm_call("check_mbarrier_timeouts", None)
    else:
        call("course_check_mbarrier_timeouts")


def rope_inv_freq(head_dim, theta):
    """The float32 values of theta^(-2 i / head_dim), as the kernel computes them."""
    import struct

    values = []
    for i in range(head_dim // 2):
        v = 2.0 ** (-2.0 * i / head_dim * math.log2(theta))
        values.append(struct.unpack("f", struct.pack("f", v))[0])
    return values


def rope_qkv(qkv, positions, num_heads, num_kv_heads, theta=10000.0, stream=None):
    """Day 14 Exercise 1: splits qkv [T, (H + 2 Hkv) D] into q [T, H, D], k, v [T, Hkv, D] and
    rotates q and k by their positions (int32 [T]), "rotate half" RoPE."""
    s = _stream(stream)
    _view(qkv, "qkv", s)
    if len(qkv.shape) != 2 or qkv.shape[1] % (num_heads + 2 * num_kv_heads):
        raise ValueError(
            f"qkv: expected [T, (num_heads + 2 num_kv_heads) * head_dim] = "
            f"[T, {num_heads + 2 * num_kv_heads} * head_dim], got {tuple(qkv.shape)}"
        )
    tokens = qkv.shape[0]
    dim = qkv.shape[1] // (num_heads + 2 * num_kv_heads)
    q = _empty(qkv, (tokens, num_heads, dim))
    k = _empty(qkv, (tokens, num_kv_heads, dim))
    v = _empty(qkv, (tokens, num_kv_heads, dim))
    a = _args(s, qkv=qkv, positions=positions, q=q, k=k, v=v)
    _dlpack.check(a["qkv"], _BF16, 2)
    _dlpack.check(a["positions"], "int32", 1, (tokens,))
    if dim % 2 or dim > 256:
        raise ValueError(f"qkv: head_dim {dim} must be even and at most 256")
    if _tvm():
        tvm_call("rope_qkv", s, qkv, positions, q, k, v, float(theta))
    else:
        call("course_rope_qkv", a["qkv"].pointer, a["positions"].pointer, a["q"].pointer,
             a["k"].pointer, a["v"].pointer, float(theta), s)
    return q, k, v


def silu_and_mul(gate_up, out=None, stream=None):
    """Day 14 Exercise 2: gate_up [T, 2 I] -> silu(gate) * up [T, I]."""
    s = _stream(stream)
    if out is None and hasattr(gate_up, "shape"):
        _view(gate_up, "gate_up", s)
        if len(gate_up.shape) != 2 or gate_up.shape[1] % 2:
            raise ValueError(f"gate_up: expected [T, 2 * I], got {tuple(gate_up.shape)}")
        out = _empty(gate_up, (gate_up.shape[0], gate_up.shape[1] // 2))
    a = _args(s, gate_up=gate_up, out=out)
    tokens, width = _dlpack.check(a["gate_up"], _BF16, 2).shape
    if width % 2:
        raise ValueError(f"gate_up: expected [T, 2 * I], got {(tokens, width)}")
    _dlpack.check(a["out"], _BF16, 2, (tokens, width // 2))
    if _tvm():
        tvm_call("silu_and_mul", s, gate_up, out)
    else:
        call("course_silu_and_mul", a["gate_up"].pointer, a["out"].pointer, s)
    return out


LAYER_WEIGHTS = ("attn_norm", "w_qkv", "w_o", "mlp_norm", "w_gate_up", "w_down")


def layer_workspace_bytes(hidden, num_heads, num_kv_heads, head_dim, intermediate, batch, seq_len):
    if _tvm():
        return int(tvm_call("layer_workspace_bytes", None, hidden, num_heads, num_kv_heads,
                            head_dim, intermediate, batch, seq_len))
    return int(_lib.lib().course_layer_workspace_bytes(hidden, num_heads, num_kv_heads, head_dim,
                                                       intermediate, batch, seq_len))


def decoder_layer(x, residual, weights, batch, seq_len, num_heads, num_kv_heads, eps=1e-5,
                  rope_theta=10000.0, out=None, workspace=None, trace_path=None, stream=None):
    """Day 14 Exercise 3: one Llama-style decoder layer (prefill, causal) from the course's
    kernels. x, residual [batch * seq_len, hidden] bfloat16; residual is updated in place to
    x + residual + attention output; returns the MLP output. weights: a dict with the keys of
    LAYER_WEIGHTS, PyTorch Linear layouts ([out_features, in_features]). trace_path: also write
    the stages' GPU times as a Chrome trace (waits for the GPU)."""
    s = _stream(stream)
    _view(x, "x", s)
    missing = [k for k in LAYER_WEIGHTS if k not in weights]
    if missing:
        raise ValueError(f"weights: missing {', '.join(missing)} (expected {LAYER_WEIGHTS})")
    if len(x.shape) != 2:
        raise ValueError(f"x: expected [batch * seq_len, hidden], got {tuple(x.shape)}")
    tokens, hidden = x.shape
    if tokens != batch * seq_len:
        raise ValueError(f"x: expected batch * seq_len = {batch * seq_len} rows, got {tokens}")
    qkv_rows = weights["w_qkv"].shape[0]
    if qkv_rows % (num_heads + 2 * num_kv_heads):
        raise ValueError(
            f"w_qkv: expected (num_heads + 2 num_kv_heads) * head_dim rows, got {qkv_rows}"
        )
    head_dim = qkv_rows // (num_heads + 2 * num_kv_heads)
    inter = weights["w_gate_up"].shape[0] // 2
    expected = {
        "attn_norm": (hidden,), "mlp_norm": (hidden,), "w_qkv": (qkv_rows, hidden),
        "w_o": (hidden, num_heads * head_dim), "w_gate_up": (2 * inter, hidden),
        "w_down": (hidden, inter),
    }
    if head_dim not in (64, 128):
        raise ValueError(f"w_qkv: head_dim {head_dim} must be 64 or 128 (Day 12's attention)")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads {num_heads} must be a multiple of num_kv_heads {num_kv_heads}")
    if hidden % 8 or inter % 8:
        raise ValueError(f"hidden ({hidden}) and intermediate ({inter}) must be multiples of 8")
    torch = _torch()
    if out is None:
        out = _empty(x, (tokens, hidden))
    ws_bytes = layer_workspace_bytes(hidden, num_heads, num_kv_heads, head_dim, inter, batch,
                                     seq_len)
    if workspace is None:
        workspace = torch.empty((ws_bytes,), dtype=torch.uint8, device=x.device)
    a = _args(s, x=x, residual=residual, out=out, workspace=workspace,
              **{k: weights[k] for k in LAYER_WEIGHTS})
    _dlpack.check(a["x"], _BF16, 2)
    _dlpack.check(a["residual"], _BF16, 2, (tokens, hidden))
    _dlpack.check(a["out"], _BF16, 2, (tokens, hidden))
    for k in LAYER_WEIGHTS:
        _dlpack.check(a[k], _BF16, len(expected[k]), expected[k])
    _dlpack.check(a["workspace"], "uint8", 1)
    if a["workspace"].shape[0] < ws_bytes:
        raise ValueError(f"workspace: needs {ws_bytes} bytes, got {a['workspace'].shape[0]}")
    if a["workspace"].data % 256:
        raise ValueError("workspace: must be 256-byte aligned")
    if _tvm():
        tvm_call("decoder_layer", s, x, residual, out, *[weights[k] for k in LAYER_WEIGHTS],
                 workspace, int(batch), int(seq_len), int(num_heads), int(num_kv_heads),
                 float(eps), float(rope_theta), None if trace_path is None else str(trace_path))
    else:
        path = None if trace_path is None else str(trace_path).encode()
        call("course_decoder_layer", a["x"].pointer, a["residual"].pointer, a["out"].pointer,
             *[a[k].pointer for k in LAYER_WEIGHTS], a["workspace"].pointer, int(batch),
             int(seq_len), int(num_heads), int(num_kv_heads), float(eps), float(rope_theta),
             path, s)
    return out


STAGES = ("add_rmsnorm_attn", "qkv_gemm", "rope", "attention", "o_gemm", "add_rmsnorm_mlp",
          "gate_up_silu", "down_gemm")
