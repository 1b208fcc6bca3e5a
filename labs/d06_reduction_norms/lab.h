// Day 6 — multi-level reduction, RMSNorm and friends.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every
// function checks its arguments and throws course::InvalidArgument (a message, never an
// illegal address) or course::CudaError. Work is queued on the default stream; the functions
// return before it finishes. Matrices are row-major [rows, hidden] (or [rows, cols]), one row
// after the other with no padding. Exercises are numbered as in README.md.
//
// Data types: every normalisation comes in float32, float16 (course::half) and bfloat16
// (course::bfloat16), always computed in float32 and rounded once when stored. Any pointer may
// be misaligned (offset by one element): the kernels use 16-byte loads when every pointer is
// 16-byte aligned and the row length is a multiple of the vector width, one element at a
// time otherwise.
#pragma once

#include <cstdint>

#include "course/dtype.h"

namespace d06 {

using course::bfloat16;
using course::half;

// Exercise 1 — block reduction. sums[r] = x[r, 0] + ... + x[r, cols - 1], one block of
// `block_threads` threads per row (a multiple of 32 in [32, 1024]; the tests try several).
void row_sums(const float* x, float* sums, std::int64_t rows, std::int64_t cols,
              int block_threads = 256);

// Exercise 2 — the deterministic array sum: *out = x[0] + ... + x[n - 1] in two passes, and
// bitwise the same result on every run. `partials` is scratch space of kSumMaxPartials floats
// for the first pass (one partial sum per block); its contents before the call do not matter.
constexpr int kSumMaxPartials = 1024;
void sum_two_pass(const float* x, std::int64_t n, float* partials, float* out);

// Exercise 3 — the same sum with one float atomicAdd per block into *out: as fast, but the
// result depends on the order in which the blocks arrive, so it may differ from run to run in
// its last bits. For contrast; only its accuracy is graded.
void sum_atomic(const float* x, std::int64_t n, float* out);

// Exercise 4 — RMSNorm (Llama): y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * w[c].
// Reads x and w, writes y. 1 <= hidden <= kMaxHidden.
constexpr std::int64_t kMaxHidden = 16384;
void rmsnorm(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t hidden,
             float eps);
void rmsnorm(const half* x, const half* w, half* y, std::int64_t rows, std::int64_t hidden,
             float eps);
void rmsnorm(const bfloat16* x, const bfloat16* w, bfloat16* y, std::int64_t rows,
             std::int64_t hidden, float eps);

// Exercise 5 — fused residual add + RMSNorm, as vLLM's fused_add_rms_norm and FlashInfer's
// fused_add_rmsnorm do it between the layers of a transformer:
//   reads  x, residual, w
//   writes residual[r, c] = x[r, c] + residual[r, c]            (in place: the new residual stream)
//          y[r, c]        = rmsnorm(residual[r, :])[c] * w[c]   (from the float32 sum, before
//                                                               it is rounded to the dtype)
// y may be x itself (vLLM and FlashInfer write the output over the input); it must not overlap
// residual or w.
void fused_add_rmsnorm(const float* x, float* residual, const float* w, float* y, std::int64_t rows,
                       std::int64_t hidden, float eps);
void fused_add_rmsnorm(const half* x, half* residual, const half* w, half* y, std::int64_t rows,
                       std::int64_t hidden, float eps);
void fused_add_rmsnorm(const bfloat16* x, bfloat16* residual, const bfloat16* w, bfloat16* y,
                       std::int64_t rows, std::int64_t hidden, float eps);

// Exercise 6 — LayerNorm with the mean and the variance from ONE pass over the row (Welford):
//   y[r, c] = (x[r, c] - mean[r]) * rstd[r] * gamma[c] + beta[c],
//   rstd[r] = 1 / sqrt(var[r] + eps), var the biased variance (divided by hidden), as PyTorch.
// mean and rstd (float32, `rows` values each) are written when not null, as PyTorch keeps them
// for the backward pass.
void layernorm(const float* x, const float* gamma, const float* beta, float* y, float* mean,
               float* rstd, std::int64_t rows, std::int64_t hidden, float eps);
void layernorm(const half* x, const half* gamma, const half* beta, half* y, float* mean,
               float* rstd, std::int64_t rows, std::int64_t hidden, float eps);
void layernorm(const bfloat16* x, const bfloat16* gamma, const bfloat16* beta, bfloat16* y,
               float* mean, float* rstd, std::int64_t rows, std::int64_t hidden, float eps);

// Exercise 7 — online softmax for rows too long to keep on chip: one read of the row computes
// the running maximum and the running sum of exponentials together, a second read writes
//   y[r, c] = exp(x[r, c] - max_r) / sum_k exp(x[r, k] - max_r).
// Non-finite inputs behave as in PyTorch (reference/softmax.h): -inf entries give 0, a row of
// only -inf, or holding a NaN or +inf, is all NaN. Any cols >= 1.
void softmax_online(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void softmax_online(const half* x, half* y, std::int64_t rows, std::int64_t cols);
void softmax_online(const bfloat16* x, bfloat16* y, std::int64_t rows, std::int64_t cols);

}  // namespace d06
