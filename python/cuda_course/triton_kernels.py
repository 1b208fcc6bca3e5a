"""Three of the course's kernels written in Triton (lesson 14 §9): Day 2's fused add-bias + GeLU,
Day 5's row softmax and Day 6's RMSNorm. This module imports Triton at the top, so it needs it;
cuda_course.triton_ops holds the functions to call (argument checks, the grid, the launch) and
imports this module only when one of them is called, so that the package imports without
Triton.

How to read a Triton kernel after the CUDA ones of Days 2 to 6. A CUDA kernel says what ONE
THREAD does; a Triton kernel says what one PROGRAM does to whole blocks of values at once:
`tl.arange(0, BLOCK)` is a block of BLOCK indices, `tl.load` of a block of pointers is a block of
values, `+`, `tl.exp`, `tl.sum` act on the whole block. A program is one CUDA thread block.

What Triton decides for you (and the CUDA of Days 2 to 6 wrote by hand):
  - which thread holds which elements of a block (its "layout"): consecutive elements go to
    consecutive lanes, so a load of a contiguous block is coalesced by construction (Day 2 §2);
  - the width of each access: 16-byte loads and stores (LDG.E.128) where it can prove the
    addresses contiguous and 16-byte aligned. It proves it from `tl.arange` and from how each
    argument was specialised: a pointer argument is compiled separately for 16-byte aligned
    values, an integer argument for multiples of 16. So cols = 8192 gets the vector path and
    cols = 8191 the scalar one, the choice Day 2's launcher makes at run time (Day 2 §4);
  - how a reduction over a block (`tl.max`, `tl.sum`) is done: warp shuffles, then shared memory
    between the warps, with the barriers (Day 5 §7, Day 6 §3), including the shared memory
    itself: how much, its layout, when it is reused;
  - how many warps run a program: `num_warps`, chosen here by @triton.autotune from a short list
    of configurations, which times each one on the first call with a new `key` and keeps the
    fastest;
  - registers, unrolling, instruction scheduling (ptxas's job in CUDA too).

What the kernel must still say:
  - how the work is cut into programs (the grid) and how big each block is (`tl.constexpr`,
    a power of two);
  - masks for the tail of every block that may run past the data (there is no implicit bounds
    test);
  - 64-bit offsets where rows * cols may pass 2^31 (`.to(tl.int64)`), as in CUDA;
  - the precision of the arithmetic: loads give the element type, so 16-bit values are
    converted to float32 explicitly, and converted back when stored;
  - the algorithm: the max subtracted before exp, the passes over a row too long for
    registers, which values are read once and kept.
"""

import os

import triton
import triton.language as tl

# GeLU's constants, Day 2's kSqrt2OverPi and kGeluCubic (rounded to float32 where they are used).
# A global a kernel reads must be a tl.constexpr: its value is compiled into the kernel.
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
GELU_CUBIC = tl.constexpr(0.044715)


def tuning_bench(kernel_call, quantiles):
    """How @triton.autotune times each configuration on a new key: triton.testing.do_bench (L2
    flushed between runs, as the course's benchmarks do) for $CUDA_COURSE_TRITON_TUNE_MS
    milliseconds of runs per configuration (default 100, Triton's own). The tests set 2: they
    check the answer of whichever configuration wins, and every configuration on its own."""
    rep = float(os.environ.get("CUDA_COURSE_TRITON_TUNE_MS") or 100)
    return triton.testing.do_bench(kernel_call, warmup=max(1.0, rep / 4), rep=rep,
                                   quantiles=quantiles)


# Rows of up to this many columns are held in registers by one program (one read of x); longer
# rows are streamed three times (Day 5, Exercises 2 and 3 make the same split).
SOFTMAX_REGISTER_COLS = 16384


# ---------------------------------------------------------------------------------------------
# Day 2, Exercise 6b: y[r, c] = gelu(x[r, c] + bias[c]), one read of x, one write of y.
#
# A program takes a [BLOCK_M, BLOCK_N] tile: BLOCK_N consecutive columns of BLOCK_M consecutive
# rows. Its slice of the bias is loaded once and broadcast over the tile's rows (the CUDA kernel
# keeps it in registers across its grid-stride loop over rows for the same reason). Which lanes
# hold which of the tile's elements, and how wide each access is, is the compiler's choice.
#
# NOTE: GeLU as v / (1 + exp(-2 u)), not 0.5 v (1 + tanh(u)): the same function, since
# 1 + tanh(u) = 2 / (1 + exp(-2 u)), and Triton's language has exp but no tanh (libdevice's tanh
# exists on the GPU, not in the interpreter the host tests run). It is also the better float32
# formula: for v << 0, 1 + tanh(u) cancels to a few significant bits, exp(-2 u) does not.
@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 1, "BLOCK_N": 2048}, num_warps=4),
        triton.Config({"BLOCK_M": 4, "BLOCK_N": 1024}, num_warps=4),
        triton.Config({"BLOCK_M": 8, "BLOCK_N": 512}, num_warps=4),
        triton.Config({"BLOCK_M": 4, "BLOCK_N": 2048}, num_warps=8),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 256}, num_warps=4),
        triton.Config({"BLOCK_M": 2, "BLOCK_N": 128}, num_warps=1),  # narrow rows
    ],
    key=["rows", "cols"],  # tuned again for every new shape (and dtype: Triton adds it)
    do_bench=tuning_bench,
)
@triton.jit
def add_bias_gelu_kernel(x_ptr, bias_ptr, y_ptr, rows, cols, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # [BLOCK_M] rows of this tile
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)  # [BLOCK_N] columns
    col_ok = c < cols
    mask = (r[:, None] < rows) & col_ok[None, :]  # the tile's tail: past the last row or column
    offsets = r[:, None].to(tl.int64) * cols + c[None, :]  # [BLOCK_M, BLOCK_N], 64-bit
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + c, mask=col_ok).to(tl.float32)
    v = x + b[None, :]  # x + bias never leaves the registers
    u = SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)
    y = v / (1.0 + tl.exp(-2.0 * u))  # = 0.5 v (1 + tanh(u)); exp overflows to inf: y = -0
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------
# Day 5: y[r, :] = softmax(x[r, :]) = exp(x - max) / sum(exp(x - max)), in float32.
#
# One program per row, the whole row in registers (BLOCK_N = the next power of two >= cols, so
# a row of 8192 float32 values is 32 KiB spread over num_warps warps): one read of x, one write
# of y. tl.max and tl.sum are block reductions; Triton writes the shuffles, the shared memory
# between warps and the barriers of Day 5 §7-§8. Masked lanes load -inf, which the max ignores
# and exp turns into 0. Non-finite inputs come out as PyTorch's (course/reference/softmax.h):
# -inf is a masked entry, a NaN or +inf makes the whole row NaN.
@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)],
    key=["cols"],
    do_bench=tuning_bench,
)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_N)
    mask = c < cols
    x = tl.load(x_ptr + row * cols + c, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * cols + c, y.to(y_ptr.dtype.element_ty), mask=mask)


# Rows longer than SOFTMAX_REGISTER_COLS: the row does not fit in registers, so it is read
# three times, BLOCK_N columns at a time (Day 5, Exercise 2's three passes): the max, the sum of
# exp(x - max), then the output. Each pass keeps a [BLOCK_N] vector of partial results and
# reduces it once at the end.
@triton.autotune(
    configs=[triton.Config({"BLOCK_N": n}, num_warps=w) for n in (1024, 2048, 4096)
             for w in (4, 8)],
    key=["cols"],
    do_bench=tuning_bench,
)
@triton.jit
def softmax_streamed_kernel(x_ptr, y_ptr, cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    c = tl.arange(0, BLOCK_N)
    m_acc = tl.full([BLOCK_N], -float("inf"), tl.float32)
    for start in range(0, cols, BLOCK_N):
        x = tl.load(x_row + start + c, mask=start + c < cols, other=-float("inf"))
        m_acc = tl.maximum(m_acc, x.to(tl.float32))
    m = tl.max(m_acc, axis=0)
    s_acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, cols, BLOCK_N):
        x = tl.load(x_row + start + c, mask=start + c < cols, other=-float("inf"))
        s_acc += tl.exp(x.to(tl.float32) - m)
    inv = 1.0 / tl.sum(s_acc, axis=0)
    for start in range(0, cols, BLOCK_N):
        mask = start + c < cols
        x = tl.load(x_row + start + c, mask=mask, other=-float("inf"))
        y = tl.exp(x.to(tl.float32) - m) * inv
        tl.store(y_row + start + c, y.to(y_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------
# Day 6, Exercise 4: y = x / sqrt(mean(x^2) + eps) * w over each row, the statistic and the
# arithmetic in float32, y rounded once to its dtype (as Day 6's kernel: x * rstd * w in float).
#
# One program per row, the row in registers (BLOCK_N = the next power of two >= hidden, at most
# Day 6's kMaxHidden = 16384): one read of x and w, one write of y. The sum of squares is a
# block reduction, as softmax's.
@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)],
    key=["hidden"],
    do_bench=tuning_bench,
)
@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_N)
    mask = c < hidden
    x = tl.load(x_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)  # every row reads w: from L2
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)  # rsqrtf, as Day 6
    tl.store(y_ptr + row * hidden + c, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
