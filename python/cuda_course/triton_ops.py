"""Day 2's add-bias + GeLU, Day 5's row softmax and Day 6's RMSNorm in Triton, as functions of
torch tensors, beside the CUDA solutions of cuda_course.add_bias_gelu, softmax and rmsnorm
(lesson 14 §9). The kernels are in triton_kernels.py; this module checks the arguments, sizes
the grid and launches them on PyTorch's current stream (Triton's launcher reads it).

    import torch
    from cuda_course import triton_ops
    y = triton_ops.softmax(x)           # x: float32, float16 or bfloat16 [rows, cols] on a GPU

Importing this module needs neither PyTorch nor Triton: a call without them raises RuntimeError
saying what to install. With TRITON_INTERPRET=1 set before Triton is first imported, the kernels
run in Triton's interpreter, on the CPU, and the functions take CPU tensors too (slow: for
checking a kernel on a machine without a GPU).

Each function checks its arguments first, with the messages of cuda_course's functions:
TypeError for a non-tensor or a wrong dtype, ValueError for a wrong shape, layout or device,
naming the argument.

Each kernel is @triton.autotune'd: the first call with a new shape times every configuration of
its list and keeps the fastest for that shape. `config=i` runs configuration i of the list
instead (configs(name) lists them), without timing anything: the tests check every one, since a
tuned call only ever runs the one that won. Triton's interpreter cannot time anything either, so
there a call without `config` runs the list's first.
"""

import os

FLOATS = ("float32", "float16", "bfloat16")
MAX_HIDDEN = 16384  # Day 6's kMaxHidden: the row is held in registers by one program

_kernels = None


def missing():
    """Why the Triton functions cannot run here (what to install), or None when they can."""
    try:
        import torch
    except ImportError:
        return ("cuda_course.triton_ops needs PyTorch, which is not installed: python3 -m pip "
                "install torch (its Linux wheels bring Triton with them)")
    try:
        import triton  # noqa: F401
    except ImportError:
        return ("cuda_course.triton_ops needs Triton, which is not installed: python3 -m pip "
                "install triton (or a PyTorch wheel that brings it)")
    if not interpreted() and not torch.cuda.is_available():
        return ("cuda_course.triton_ops needs a CUDA GPU (torch.cuda.is_available() is False), "
                "or TRITON_INTERPRET=1 to run the kernels on the CPU in Triton's interpreter")
    return None


def interpreted():
    """Whether Triton runs its kernels in its interpreter, on the CPU (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernels():
    """The module of the @triton.jit kernels (imported once). RuntimeError saying what to
    install when PyTorch, Triton or a GPU is missing."""
    global _kernels
    if _kernels is None:
        reason = missing()
        if reason:
            raise RuntimeError(reason)
        from . import triton_kernels

        _kernels = triton_kernels
    return _kernels


KERNELS = ("add_bias_gelu", "softmax", "softmax_streamed", "rmsnorm")


def configs(name):
    """The autotuning configurations of kernel `name` (one of KERNELS), as triton.Config."""
    if name not in KERNELS:
        raise ValueError(f"no Triton kernel {name!r}: expected one of {', '.join(KERNELS)}")
    return list(getattr(kernels(), name + "_kernel").configs)


def _launch(name, grid, args, config, **constexprs):
    """kernel[grid](*args) through its autotuner, or with configuration `config` of its list
    (the first in the interpreter, which cannot time the others)."""
    tuned = getattr(kernels(), name + "_kernel")
    if config is None and not interpreted():
        return tuned[grid](*args, **constexprs)
    index = 0 if config is None else config
    if not 0 <= index < len(tuned.configs):
        raise ValueError(f"config: {name} has configurations 0 to {len(tuned.configs) - 1}, "
                         f"got {config}")
    chosen = tuned.configs[index]
    return tuned.fn[grid](*args, **constexprs, **chosen.kwargs, num_warps=chosen.num_warps)


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _tensor(t, name, ndim, dtype=None, shape=None):
    """Checks one argument the way cuda_course's functions do, all but its device (_devices,
    last: so that every other check can be tested without a GPU); returns its dtype's name."""
    if not (hasattr(t, "dtype") and hasattr(t, "shape") and hasattr(t, "is_contiguous")):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    got = _dtype(t)
    if dtype is None and got not in FLOATS:
        raise TypeError(f"{name}: expected dtype float32, float16 or bfloat16, got {got}")
    if dtype is not None and got != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {got}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got {t.dim()} (shape "
                         f"{tuple(t.shape)})")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous (row-major, no gaps), got shape "
                         f"{tuple(t.shape)} with strides {tuple(t.stride())}: call .contiguous() "
                         f"first")
    return got


def _devices(**tensors):
    """Every tensor on a CUDA device (or the CPU, in the interpreter), all on the same one. An
    argument that is None (an out= not given) is left out."""
    tensors = {name: t for name, t in tensors.items() if t is not None}
    for name, t in tensors.items():
        if t.device.type != "cuda" and not (interpreted() and t.device.type == "cpu"):
            raise ValueError(f"{name}: must be on a CUDA device, got {t.device}: move it with "
                             f".cuda() / .to('cuda')")
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        listed = ", ".join(f"{name} on {t.device}" for name, t in tensors.items())
        raise ValueError(f"all tensors must be on the same CUDA device: {listed}")


def _overlap(a, b):
    size_a, size_b = a.numel() * a.element_size(), b.numel() * b.element_size()
    return (size_a > 0 and size_b > 0 and a.data_ptr() < b.data_ptr() + size_b
            and b.data_ptr() < a.data_ptr() + size_a)


def _device(t):
    """The launch goes to the current device: make it the tensors' (nothing to do on the CPU)."""
    import contextlib

    import torch

    return torch.cuda.device(t.device) if t.device.type == "cuda" else contextlib.nullcontext()


def add_bias_gelu(x, bias, out=None, config=None):
    """y = gelu(x + bias), GeLU's tanh approximation: x [rows, cols], bias [cols], float32,
    float16 or bfloat16, computed in float32 (Day 2's add_bias_gelu_fused in Triton)."""
    dtype = _tensor(x, "x", 2)
    rows, cols = x.shape
    _tensor(bias, "bias", 1, dtype, (cols,))
    if out is not None:
        _tensor(out, "out", 2, dtype, (rows, cols))
    _devices(x=x, bias=bias, out=out)
    kernels()  # RuntimeError saying what to install, before anything is allocated
    if out is None:
        out = x.new_empty((rows, cols))
    if rows == 0 or cols == 0:
        return out
    import triton

    def grid(meta):
        return (triton.cdiv(rows, meta["BLOCK_M"]), triton.cdiv(cols, meta["BLOCK_N"]))

    with _device(x):
        _launch("add_bias_gelu", grid, (x, bias, out, rows, cols), config)
    return out


def softmax(x, out=None, config=None):
    """y[r, :] = softmax(x[r, :]) for x [rows, cols], float32, float16 or bfloat16, computed in
    float32; out must not overlap x (the contract of cuda_course.softmax, Day 5's)."""
    dtype = _tensor(x, "x", 2)
    rows, cols = x.shape
    if out is not None:
        _tensor(out, "out", 2, dtype, (rows, cols))
        if _overlap(x, out):
            raise ValueError("out: must not overlap x (the softmax reads x while it writes out)")
    _devices(x=x, out=out)
    k = kernels()  # RuntimeError saying what to install, before anything is allocated
    if out is None:
        out = x.new_empty((rows, cols))
    if rows == 0 or cols == 0:
        return out
    import triton

    with _device(x):
        if cols <= k.SOFTMAX_REGISTER_COLS:
            _launch("softmax", (rows,), (x, out, cols), config,
                    BLOCK_N=triton.next_power_of_2(cols))
        else:
            _launch("softmax_streamed", (rows,), (x, out, cols), config)
    return out


def rmsnorm(x, weight, eps=1e-5, out=None, config=None):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last dimension: x [rows, hidden], weight
    [hidden], float32, float16 or bfloat16 (bfloat16 is cuda_course.rmsnorm's), computed in
    float32, 1 <= hidden <= 16384 (Day 6's RMSNorm in Triton)."""
    dtype = _tensor(x, "x", 2)
    rows, hidden = x.shape
    _tensor(weight, "weight", 1, dtype, (hidden,))
    if not 1 <= hidden <= MAX_HIDDEN:
        raise ValueError(f"x: hidden = {hidden} must be in [1, {MAX_HIDDEN}] (the row is held in "
                         f"registers, as in Day 6)")
    eps = float(eps)
    if not eps >= 0.0 or eps == float("inf"):
        raise ValueError(f"eps: must be finite and >= 0, got {eps}")
    if out is not None:
        _tensor(out, "out", 2, dtype, (rows, hidden))
    _devices(x=x, weight=weight, out=out)
    kernels()
    if out is None:
        out = x.new_empty((rows, hidden))
    if rows == 0:
        return out
    import triton

    with _device(x):
        _launch("rmsnorm", (rows,), (x, weight, out, hidden, eps), config,
                BLOCK_N=triton.next_power_of_2(hidden))
    return out
